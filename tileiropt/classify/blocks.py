"""Module-level blocks: the `if` / `try` / `with` statements a module runs once, at import.

Packages that keep Triton optional define their kernels inside them (`if HAS_TRITON:`, `try:` ...
`except ImportError:`, `with contextlib.suppress(...)`). A statement inside such a block, at any nesting
of them, is still a module-level statement: what it defines is a module attribute once the block runs.
A statement inside a function or a class is not (nor inside `for` / `while`, which may run it many times).

Each module-level statement has a `Branch`: the arms of the blocks it sits in, outermost first (empty at
the top level). The branch names the condition in messages (`if HAS_TRITON`, `else of if HAS_TRITON`,
`except ImportError`, `with contextlib.suppress(ImportError)`) and tells whether two definitions of one
name are alternatives (only one of them runs) rather than a redefinition.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tileiropt.classify.environment import decide
from tileiropt.classify.source import SourceText
from tileiropt.classify.syntax import TryStar

BLOCKS = (ast.If, ast.Try, TryStar, ast.With, ast.AsyncWith)


@dataclass(frozen=True)
class Arm:
    """One arm of one block: `node` the block statement, `arm` which part ("body", "orelse", "handler0",
    "finalbody"), `label` how messages name it (None: the `else` holding an `elif`, named by the `elif`)."""

    node: ast.stmt
    arm: str
    label: str | None


Branch = tuple[Arm, ...]


def arms(block: ast.stmt, text: SourceText) -> Iterator[tuple[Arm, list[ast.stmt]]]:
    """The arms of a block statement with their statements, in source order."""
    if isinstance(block, ast.If):
        test = _short(text, block.test)
        keyword = "elif" if _starts_elif(block, text) else "if"
        yield Arm(block, "body", f"{keyword} {test}"), block.body
        if block.orelse and not is_elif(block, text):
            yield Arm(block, "orelse", f"else of {keyword} {test}"), block.orelse
        elif block.orelse:
            yield Arm(block, "orelse", None), block.orelse  # an `elif`: its own arms name the condition
    elif isinstance(block, (ast.Try, TryStar)):
        yield Arm(block, "body", "try"), block.body
        for index, handler in enumerate(block.handlers):
            caught = f" {_short(text, handler.type)}" if handler.type is not None else ""
            yield Arm(block, f"handler{index}", f"except{caught}"), handler.body
        if block.orelse:
            yield Arm(block, "orelse", "else of try"), block.orelse
        if block.finalbody:
            yield Arm(block, "finalbody", "finally"), block.finalbody
    elif isinstance(block, (ast.With, ast.AsyncWith)):
        items = ", ".join(_short(text, item.context_expr) for item in block.items)
        yield Arm(block, "body", f"with {items}"), block.body


def is_elif(block: ast.If, text: SourceText) -> bool:
    """The `else` of `block` is an `elif`: its one statement, an `if`, written `elif`."""
    return len(block.orelse) == 1 and isinstance(block.orelse[0], ast.If) and _starts_elif(block.orelse[0], text)


def module_statements(tree: ast.Module, text: SourceText) -> Iterator[tuple[ast.stmt, Branch]]:
    """Every module-level statement with its branch, in source order; blocks themselves included."""

    def walk(statements: list[ast.stmt], branch: Branch) -> Iterator[tuple[ast.stmt, Branch]]:
        for statement in statements:
            yield statement, branch
            if isinstance(statement, BLOCKS):
                for arm, body in arms(statement, text):
                    yield from walk(body, branch + (arm,))

    yield from walk(tree.body, ())


@dataclass
class Definition:
    """One module-level binding of a name: a def, a class, an assignment or an import."""

    name: str
    line: int
    kind: str  # "kernel" (a Triton JIT function) | "function" | "class" | "value" | "import"
    condition: str | None  # the branch it is under (see `condition`); None at the top level
    branch: Branch = field(default=(), repr=False, compare=False)


def module_definitions(tree: ast.Module, text: SourceText,
                       is_kernel: Callable[[ast.FunctionDef | ast.AsyncFunctionDef], bool]
                       ) -> tuple[dict[str, list[Definition]], dict[int, Branch]]:
    """Every module-level binding by name (source order), and the branch of every module-level statement
    by its id."""
    found: dict[str, list[Definition]] = {}
    branches: dict[int, Branch] = {}
    for statement, branch in module_statements(tree, text):
        branches[id(statement)] = branch
        where = condition(branch)
        for name, kind in _bindings(statement, is_kernel):
            found.setdefault(name, []).append(Definition(name, statement.lineno, kind, where, branch))
    return found, branches


def alternatives_of(definitions: dict[str, list[Definition]], name: str, line: int) -> list[Definition]:
    """The bindings of `name` on branches alternative to the kernel defined at `line` (only one runs); where this
    environment takes the kernel's own arm, not those on an arm it does not take (`decided_against`)."""
    own = next((d for d in definitions.get(name, []) if d.line == line and d.kind == "kernel"), None)
    if own is None or not own.branch:
        return []
    taken = not decided_against(own.branch)
    return [d for d in definitions[name] if d is not own and alternatives(own.branch, d.branch)
            and not (taken and decided_against(d.branch))]


def _bindings(statement: ast.stmt, is_kernel: Callable[[ast.FunctionDef | ast.AsyncFunctionDef], bool]
              ) -> Iterator[tuple[str, str]]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield statement.name, "kernel" if is_kernel(statement) else "function"
    elif isinstance(statement, ast.ClassDef):
        yield statement.name, "class"
    elif isinstance(statement, (ast.Import, ast.ImportFrom)):
        for alias in statement.names:
            if alias.name != "*":
                yield (alias.asname or alias.name).split(".")[0], "import"
    elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    yield node.id, "value"


def flatten(tree: ast.Module) -> list[tuple[ast.stmt, int]]:
    """Every module-level statement with its block depth (0 at the top), in source order; no labels."""
    found: list[tuple[ast.stmt, int]] = []

    def walk(statements: list[ast.stmt], depth: int) -> None:
        for statement in statements:
            found.append((statement, depth))
            if isinstance(statement, (ast.If, ast.With, ast.AsyncWith)):
                walk(statement.body, depth + 1)
                walk(getattr(statement, "orelse", []), depth + 1)
            elif isinstance(statement, (ast.Try, TryStar)):
                for body in (statement.body, *(h.body for h in statement.handlers), statement.orelse,
                             statement.finalbody):
                    walk(body, depth + 1)

    walk(tree.body, 0)
    return found


def condition(branch: Branch) -> str | None:
    """How messages name a branch: `if HAS_TRITON`, `if HAS_TRITON > with torch.no_grad()`; None at the top."""
    labels = [arm.label for arm in branch if arm.label is not None]
    return " > ".join(labels) if labels else None


def alternatives(first: Branch, second: Branch) -> bool:
    """Only one of two statements with these branches runs: they part at a block, in arms that exclude each
    other (`if` body and its `else`; a `try` body or its `else` and a handler; two handlers)."""
    for one, other in zip(first, second):
        if one.node is not other.node:
            return False
        if one.arm != other.arm:
            return _exclusive(one.arm, other.arm) if isinstance(one.node, (ast.Try, TryStar)) else (
                isinstance(one.node, ast.If))
    return False


def decided_against(branch: Branch) -> bool:
    """A statement on `branch` does not run here: an `if` it sits under reads only the environment, and this
    environment takes the other arm (`environment.decide`)."""
    for arm in branch:
        if isinstance(arm.node, ast.If):
            taken = decide(arm.node.test)
            if taken is not None and taken != (arm.arm == "body"):
                return True
    return False


def _exclusive(one: str, other: str) -> bool:
    """Arms of one `try` that do not both run: `finally` runs with every other arm."""
    if "finalbody" in (one, other):
        return False
    return {one, other} != {"body", "orelse"}


def _starts_elif(block: ast.stmt, text: SourceText) -> bool:
    return text.line(block.lineno).lstrip().startswith("elif")


def _short(text: SourceText, node: ast.AST) -> str:
    """The node's source on one line (a test spread over lines, as messages show it)."""
    return " ".join(text.segment(node).split())
