"""Finding in libcst's tree the nodes the kernel model names.

The model reads Python's `ast` (`tileiropt.classify.model`); a rewrite parses the file with libcst once and
changes nodes the model found there: a call to replace, a block to insert into. Both trees hold the same
function, so a call is found by its rank among the calls of the function's body in source order (libcst visits
nodes in source order; the model sorts its calls by position, `analysis.syntax.calls_in_order`), and a block by
the path of statement indexes and attributes that leads to it (`analysis.tile_flow.BlockPath`). A twin keeps
both (a math rewrite replaces a call by an expression holding one call), so its nodes are found the same way.
A call found must call what the model's call calls: a node that does not match is not found, never guessed.
"""

from __future__ import annotations

import ast

import libcst as cst

from tileiropt.classify.names import callee
from tileiropt.classify.syntax import calls_in_order
from tileiropt.classify.tile_flow import BlockPath


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


class Locator:
    """The nodes of `function` (libcst) at the places of the nodes of `node` (the model's `def` of it)."""

    def __init__(self, node: ast.FunctionDef, function: cst.FunctionDef, aliases: dict[str, str]):
        self.function = function
        self.aliases = aliases
        self._tree_calls = calls_in_order(node.body)
        visitor = _Calls()
        function.body.visit(visitor)
        self._calls = visitor.calls
        self._aligned = len(self._tree_calls) == len(self._calls)
        self._tree_rank = {id(call): rank for rank, call in enumerate(self._tree_calls)}
        self._rank = {id(call): rank for rank, call in enumerate(self._calls)}

    def call(self, call: ast.Call) -> cst.Call | None:
        """The libcst call at the place of the model's `call`."""
        pair = self._pair(self._tree_rank.get(id(call)))
        return pair[1] if pair else None

    def tree_call(self, call: cst.Call) -> ast.Call | None:
        """The model's call at the place of the libcst `call`."""
        pair = self._pair(self._rank.get(id(call)))
        return pair[0] if pair else None

    def _pair(self, rank: int | None) -> tuple[ast.Call, cst.Call] | None:
        """The model's call and libcst's at one rank, when both call the same function."""
        if not self._aligned or rank is None:
            return None
        tree_call, call = self._tree_calls[rank], self._calls[rank]
        return (tree_call, call) if callee(call, self.aliases) == callee(tree_call, self.aliases) else None

    def block(self, path: BlockPath) -> cst.IndentedBlock | None:
        """The indented block at `path` (None where the path leads to a one-line body or nowhere)."""
        suite: cst.BaseSuite = self.function.body
        for index, attributes in path:
            if not isinstance(suite, cst.IndentedBlock) or index >= len(suite.body):
                return None
            node: object = suite.body[index]
            for attribute in attributes:
                node = getattr(node, attribute, None)
            if not isinstance(node, cst.BaseSuite):
                return None
            suite = node
        return suite if isinstance(suite, cst.IndentedBlock) else None
