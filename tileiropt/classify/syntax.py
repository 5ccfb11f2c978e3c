"""Small questions about Python's syntax tree that the tile analysis asks: which statements share a line,
whether a block is written on its header's line, which names a block assigns, which names an expression
reads, and where calls sit in source order.

Statements on one line (`a = 1; b = 2`) and a body on its header's line (`for i in r: x += i`) are one line of
libcst's tree too, so positions counted here are the ones a rewrite finds in that tree
(`tileiropt.apply.locate`).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from typing import TypeGuard

from tileiropt.classify.source import SourceText

if sys.version_info >= (3, 11):
    TryStar = ast.TryStar
else:  # Python 3.10 has no `try ... except*`: a class no node is an instance of, shaped as ast.Try
    class TryStar(ast.stmt):
        body: list[ast.stmt]
        handlers: list[ast.ExceptHandler]
        orelse: list[ast.stmt]
        finalbody: list[ast.stmt]

COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, TryStar,
            ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Match)


def statement_lines(statements: list[ast.stmt], text: SourceText) -> list[list[ast.stmt]]:
    """`statements` grouped as they are written: simple statements joined by `;` form one group."""
    lines: list[list[ast.stmt]] = []
    for statement in statements:
        previous = lines[-1][-1] if lines else None
        if previous is not None and not isinstance(previous, COMPOUND) and not isinstance(statement, COMPOUND) \
                and _joined_by_semicolon(previous, statement, text):
            lines[-1].append(statement)
        else:
            lines.append([statement])
    return lines


def _joined_by_semicolon(first: ast.stmt, second: ast.stmt, text: SourceText) -> bool:
    """Only a `;` (and line continuations) between the two statements: one logical line."""
    between = text.span(first.end_lineno or first.lineno, first.end_col_offset or 0, second.lineno, second.col_offset)
    between = between.replace("\\\r\n", "").replace("\\\n", "")
    return ";" in between and "\n" not in between and "#" not in between


def on_header_line(body: list[ast.stmt], text: SourceText) -> bool:
    """The block is written on its header's line (`for i in r: x += i`), not indented below it."""
    first = body[0]
    return bool(text.before(first.lineno, first.col_offset).strip())


def names_assigned(statements: Iterable[ast.stmt]) -> dict[str, int]:
    """How often each name is bound by an assignment (`=` and its tuples, `+=`, an annotated one, a `for` target,
    `:=`) anywhere inside `statements`, nested blocks and functions included."""
    counts: dict[str, int] = {}

    def add(target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            counts[target.id] = counts.get(target.id, 0) + 1
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                add(element)

    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    add(target)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor)):
                add(node.target)
    return counts


def names_read(node: ast.AST) -> set[str]:
    """The identifiers an expression mentions: its names, keyword arguments and lambda parameters (the attributes
    of `a.b` are not names)."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.keyword) and sub.arg is not None:
            found.add(sub.arg)
        elif isinstance(sub, ast.arg):
            found.add(sub.arg)
    return found


def identifiers(node: ast.AST) -> Iterator[str]:
    """Every identifier written inside `node`, one per occurrence: names, attributes, parameters, keyword
    arguments, and the names that `def`, `class`, `import`, `except ... as` and `global` bind."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            yield sub.id
        elif isinstance(sub, ast.Attribute):
            yield sub.attr
        elif isinstance(sub, ast.arg):
            yield sub.arg
        elif isinstance(sub, ast.keyword) and sub.arg is not None:
            yield sub.arg
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield sub.name
        elif isinstance(sub, ast.alias):
            yield from sub.name.split(".")
            if sub.asname:
                yield sub.asname
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            yield sub.name
        elif isinstance(sub, (ast.Global, ast.Nonlocal)):
            yield from sub.names


def calls_in_order(nodes: Iterable[ast.AST]) -> list[ast.Call]:
    """The calls inside `nodes` in source order, an outer call before the calls in it (`f(a)(b)`: `f(a)(b)`
    first): the order libcst visits them in."""
    calls = [sub for node in nodes for sub in ast.walk(node) if isinstance(sub, ast.Call)]
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset, -(c.end_lineno or 0), -(c.end_col_offset or 0)))


def positional(call: ast.Call) -> list[ast.expr]:
    """A call's positional arguments, `*args` left out."""
    return [arg for arg in call.args if not isinstance(arg, ast.Starred)]


def keywords(call: ast.Call) -> dict[str, ast.expr]:
    """A call's keyword arguments by name, `**kwargs` left out."""
    return {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg is not None}


def is_int(node: ast.AST | None) -> TypeGuard[ast.Constant]:
    """An integer literal (`True` is not one)."""
    return isinstance(node, ast.Constant) and type(node.value) is int


def is_number(node: ast.AST | None) -> TypeGuard[ast.Constant]:
    """An integer or float literal."""
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)
