"""Rewriting kernels that live inside module-level `if` / `try` / `with` blocks, in place.

The concrete-syntax side of `tileiropt.classify.blocks`: the same statements, walked in the same order, so
the n-th module-level `def` of a name here is the n-th one discovery saw. The TileIR block of a kernel goes
right after its `def`, inside the block that defines it, where the kernel's name is bound.

The gate goes before the first statement that defines a function or class (a kernel's block included), so
it exists when any kernel block runs; it needs only the standard library. When the module imports Triton only
inside a block (`try: import triton ... except ImportError:`), the TMA runtime after it is wrapped in
`try: import triton` itself: without Triton the module still imports, and no TileIR block runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence

import libcst as cst

from tileiropt.classify.blocks import flatten
from tileiropt.classify.discovery import KernelInfo, ModuleInfo
from tileiropt.classify.names import dotted_parts

_BLOCKS = (cst.If, cst.Try, cst.TryStar, cst.With)
_DEFINING = (cst.FunctionDef, cst.ClassDef)

# What a module body holds (`cst.Module.body`): a statement with its own leading lines.
Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


def _arms(block: cst.BaseStatement) -> Iterator[cst.BaseSuite]:
    """The suites of a block statement in source order (an `elif` is the `If` in its parent's orelse)."""
    if isinstance(block, cst.If):
        yield block.body
        if isinstance(block.orelse, cst.Else):
            yield block.orelse.body
    elif isinstance(block, (cst.Try, cst.TryStar)):
        yield block.body
        for handler in block.handlers:
            yield handler.body
        if block.orelse is not None:
            yield block.orelse.body
        if block.finalbody is not None:
            yield block.finalbody.body
    elif isinstance(block, cst.With):
        yield block.body


def _children(block: cst.BaseStatement) -> Iterator[cst.BaseStatement]:
    """The statements directly inside a block, an `elif` included as one."""
    for suite in _arms(block):
        if isinstance(suite, cst.IndentedBlock):
            yield from suite.body
    if isinstance(block, cst.If) and isinstance(block.orelse, cst.If):
        yield block.orelse


def module_statements(statements: Sequence[cst.BaseStatement]) -> Iterator[cst.BaseStatement]:
    """Every module-level statement, through blocks, in source order (as `analysis.blocks.flatten`)."""
    for statement in statements:
        yield statement
        if isinstance(statement, _BLOCKS):
            yield from module_statements(list(_children(statement)))


def kernel_nodes(module: cst.Module, info: ModuleInfo) -> dict[str, cst.FunctionDef]:
    """The `def` of each discovered kernel, by name: the one at the same place among the module-level defs of
    its name. A kernel inside a function, a class or a loop has none."""
    defs: dict[str, list[cst.FunctionDef]] = {}
    for statement in module_statements(module.body):
        if isinstance(statement, cst.FunctionDef):
            defs.setdefault(statement.name.value, []).append(statement)
    nodes: dict[str, cst.FunctionDef] = {}
    for kernel in info.kernels:
        lines = [d.line for d in info.definitions.get(kernel.name, []) if d.kind in ("kernel", "function")]
        found = defs.get(kernel.name, [])
        if kernel.line in lines and len(lines) == len(found):
            nodes[kernel.name] = found[lines.index(kernel.line)]
    return nodes


def placement_note(kernel: KernelInfo) -> str | None:
    """Where the TileIR code of a kernel inside a block goes (None at the top level)."""
    if kernel.condition is None:
        return None
    after = f"the assignment binding {kernel.binding}" if kernel.made_by == "assignment" else "the kernel"
    return f"TileIR code placed inside `{kernel.condition}`, right after {after}"


def binding_lines(statements: Iterable[cst.BaseStatement], name: str) -> list[cst.SimpleStatementLine]:
    """The lines among `statements` that assign `name` (`name = ...`, `name: T = ...`), in order, once per
    assignment (`a = f(a); a = g(a)` on one line is there twice): the n-th is the line of `assignment_index`'s n-th."""
    found = []
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            found += [statement for small in statement.body if name in _assigned_names(small)]
    return found


def _assigned_names(small: cst.BaseSmallStatement) -> set[str]:
    if isinstance(small, cst.Assign):
        return {t.target.value for t in small.targets if isinstance(t.target, cst.Name)}
    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
        return {small.target.value}
    return set()


def assignment_index(tree: ast.Module, name: str, statement: ast.stmt) -> int:
    """Which of the module-level assignments of `name` (through module-level blocks, in source order, as
    `binding_lines` counts them in libcst's tree) `statement` is."""
    found = [s for s, _ in flatten(tree) if name in _ast_assigned_names(s)]
    return next(index for index, s in enumerate(found) if s is statement)


def _ast_assigned_names(statement: ast.stmt) -> set[str]:
    if isinstance(statement, ast.Assign):
        return {t.id for t in statement.targets if isinstance(t, ast.Name)}
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
        return {statement.target.id}
    return set()


def insert_after(statements: Sequence[cst.BaseStatement], blocks: dict[int, cst.BaseStatement]
                 ) -> list[cst.BaseStatement]:
    """`statements` with `blocks[id(def)]` after each def it names, inside module-level blocks too; a statement
    that followed a block directly (a binding after a binding) is set apart from it by blank lines."""
    result: list[cst.BaseStatement] = []
    follows_block = False
    for statement in statements:
        block = blocks.get(id(statement))
        if isinstance(statement, _BLOCKS):
            statement = _rewrite_block(statement, blocks)
        if follows_block and isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) \
                and not statement.leading_lines:
            statement = statement.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
        result.append(statement)
        follows_block = block is not None
        if block is not None:
            result.append(block)
    return result


def _rewrite_block(block: cst.BaseStatement, blocks: dict[int, cst.BaseStatement]) -> cst.BaseStatement:
    if isinstance(block, cst.If):
        return _rewrite_if(block, blocks)
    if isinstance(block, (cst.Try, cst.TryStar)):
        return block.with_changes(
            body=_rewrite_suite(block.body, blocks),
            handlers=[h.with_changes(body=_rewrite_suite(h.body, blocks)) for h in block.handlers],
            orelse=(block.orelse.with_changes(body=_rewrite_suite(block.orelse.body, blocks))
                    if block.orelse else None),
            finalbody=(block.finalbody.with_changes(body=_rewrite_suite(block.finalbody.body, blocks))
                       if block.finalbody else None))
    if isinstance(block, cst.With):
        return block.with_changes(body=_rewrite_suite(block.body, blocks))
    return block


def _rewrite_if(block: cst.If, blocks: dict[int, cst.BaseStatement]) -> cst.If:
    orelse = block.orelse
    if isinstance(orelse, cst.Else):
        orelse = orelse.with_changes(body=_rewrite_suite(orelse.body, blocks))
    elif isinstance(orelse, cst.If):
        orelse = _rewrite_if(orelse, blocks)
    return block.with_changes(body=_rewrite_suite(block.body, blocks), orelse=orelse)


def _rewrite_suite(body: cst.BaseSuite, blocks: dict[int, cst.BaseStatement]) -> cst.BaseSuite:
    if not isinstance(body, cst.IndentedBlock):  # `if x: pass` on one line holds no def
        return body
    return body.with_changes(body=insert_after(list(body.body), blocks))


# ----------------------------------------------------------------------------- the gate


def _holds(statement: cst.BaseStatement, kinds: tuple[type, ...]) -> bool:
    """The statement is, or a module-level block holding, one of `kinds` (simple statements looked into)."""
    for inner in module_statements([statement]):
        if isinstance(inner, kinds):
            return True
        if isinstance(inner, cst.SimpleStatementLine) and any(isinstance(s, kinds) for s in inner.body):
            return True
    return False


def gate_insert_index(module: cst.Module) -> int:
    """After the last import (or block of imports: `try: import triton`) that precedes the first statement
    defining a function or class, at the top level or inside a block."""
    index = 0
    for i, statement in enumerate(module.body):
        if _holds(statement, _DEFINING):
            break
        if _holds(statement, (cst.Import, cst.ImportFrom)):
            index = i + 1
    return index


def triton_imported_before(module: cst.Module, before: int) -> bool:
    """A top-level import of Triton among the first `before` statements (the gate's constexprs can use it)."""
    return any(_imports_triton(statement) for statement in module.body[:before])


def triton_only_in_blocks(module: cst.Module, before: int) -> bool:
    """Triton is imported inside a block (`try: import triton`, possibly the block holding the kernels) and not
    by a top-level import among the first `before` statements: the gate must not import it unguarded."""
    top = triton_imported_before(module, before)
    inside = any(_imports_triton(inner) for statement in module.body if isinstance(statement, _BLOCKS)
                 for inner in module_statements([statement]))
    return inside and not top


def _imports_triton(statement: cst.BaseStatement) -> bool:
    """`import triton...` / `from triton... import ...` on this simple statement line."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Import) and any(_package(a.name) == "triton" for a in small.names):
            return True
        if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative and (
                _package(small.module) == "triton"):
            return True
    return False


def _package(name: cst.BaseExpression) -> str | None:
    """`triton` for `triton.language`: the top-level package a dotted module name is in."""
    parts = dotted_parts(name)
    return parts[0] if parts else None


GUARDED_TRITON = "_tileiropt_triton"  # Triton's name inside `guarded`


def guarded(statements: list[Statement]) -> list[Statement]:
    """The TMA runtime's statements inside `try: import triton` / `except ImportError: pass` / `else:`, its header
    comments kept above the `try` (the TileIR blocks using it exist only where Triton is imported)."""
    first, *rest = statements
    header = list(first.leading_lines)
    first = first.with_changes(leading_lines=[])
    template = cst.parse_statement(
        f"try:\n    import triton as {GUARDED_TRITON}\n"
        "except ImportError:  # Triton is optional in this module: no TileIR code without it\n"
        "    pass\nelse:\n    pass\n")
    assert isinstance(template, cst.Try) and template.orelse is not None
    own_import = cst.parse_statement(f"import triton as {GUARDED_TRITON}\n")  # the `try` binds it already
    body = [_unindented_blank_lines(statement) for statement in (first, *rest)
            if not statement.deep_equals(own_import.with_changes(leading_lines=statement.leading_lines))]
    orelse = template.orelse.with_changes(body=template.orelse.body.with_changes(body=body))
    return [template.with_changes(orelse=orelse, leading_lines=header)]


def _unindented_blank_lines(statement: Statement) -> Statement:
    """Blank lines above a statement moved into a block stay empty (no trailing indentation)."""
    lines = [line.with_changes(indent=False) if line.comment is None else line for line in statement.leading_lines]
    return statement.with_changes(leading_lines=lines)
