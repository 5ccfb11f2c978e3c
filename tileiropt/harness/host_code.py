"""Whether an optimized file runs the author's host code with the gate off: everything tileiropt adds is either
skipped then (the gate's function, `if is_tileir():` blocks, the gate's value and constants, the helper module's
import) or reads as the author's code (an in-place rewrite `a if TILEIR else b` as `b`, a launch's hint splat
`**({...} if TILEIR else {})` as nothing: `harness.gate_off`).

The bench uses it to tell an entry's timing apart from its kernels': where the host code is the author's and each
kernel launched compiled to the same code at the same config, the two files do the same work on PTX, and a paired
timing could only measure noise (an identical copy timed in one process differed by more than 5% on an H200 whose
host was busy). A change the tool makes to host code that runs with the gate off (a backend test widened to
TileIR, a hint-only autotuner) makes the files differ here, and the pair is timed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst

from tileiropt.harness.gate import GATE_NAME, HELPER_MODULE, OTHER_NAME
from tileiropt.harness.gate_off import FLAGS, LEVER_NAMES, LOG2E_NAMES, gate_off

_CONSTANTS = {*FLAGS, *LOG2E_NAMES}  # `plan.file_names`' names for the gate's values
_GUARDED_TRITON = "_tileiropt_triton"


def same_host_code(optimized: str | Path, original: str | Path) -> bool:
    """Whether `optimized`, read with the gate off and without what only the gate runs, is `original`'s host code
    (statement for statement; layout and comments aside). False when either cannot be read or parsed."""
    try:
        texts = [Path(p).read_text(encoding="utf-8") for p in (optimized, original)]
        if texts[0] == texts[1]:
            return True
        trees = [ast.parse(gate_off(texts[0])), ast.parse(texts[1])]
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, cst.ParserSyntaxError):
        return False
    own = {node.id for node in ast.walk(trees[1]) if isinstance(node, ast.Name)} | {
        node.name for node in ast.walk(trees[1]) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    added = _Added(own).visit(trees[0])
    return ast.dump(added) == ast.dump(trees[1])


class _Added(ast.NodeTransformer):
    """Removes the statements tileiropt adds around the author's code (names the author's file uses are kept)."""

    def __init__(self, own: set[str]):
        self.own = own

    def _gate(self, node: ast.expr) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args
                and node.func.id in (GATE_NAME, OTHER_NAME) and node.func.id not in self.own)

    def visit_If(self, node: ast.If) -> ast.AST | None:
        if self._gate(node.test) and not node.orelse:
            return None
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST | None:
        if node.name in (GATE_NAME, OTHER_NAME) and node.name not in self.own:
            return None
        return node  # a function's body is the author's (in-place rewrites read with the gate off)

    def visit_Assign(self, node: ast.Assign) -> ast.AST | None:
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if names and all(_added_name(name) and name not in self.own for name in names):
            return None
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
        return None if node.module == HELPER_MODULE and node.level else node

    def visit_Import(self, node: ast.Import) -> ast.AST | None:
        if [(a.name, a.asname) for a in node.names] == [("triton", None)] and "triton" not in self.own:
            return None  # the gate's own import, in a file that had none
        if [(a.name, a.asname) for a in node.names] == [("triton", _GUARDED_TRITON)]:
            return None  # the gate's constexprs' own import, where the file imports Triton below them
        return node

    def visit_Try(self, node: ast.Try) -> ast.AST | None:
        first = node.body[0] if node.body else None
        if isinstance(first, ast.Import) and any(a.asname == _GUARDED_TRITON for a in first.names):
            return None  # the gate's constants or the TMA runtime, guarded where Triton is optional
        self.generic_visit(node)
        return node


def _added_name(name: str) -> bool:
    return name in _CONSTANTS or any(name == lever or name.startswith(lever + "_") for lever in LEVER_NAMES)
