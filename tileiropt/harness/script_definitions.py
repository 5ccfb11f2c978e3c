"""A script's definitions without its script part: what a worker needs from a file whose program already ran.

A tutorial is a script: it defines its kernels and wrappers, then runs them at module level (``x = torch.rand(...)``,
``y = softmax(x)``, ``test_layer_norm(1151, 8192, torch.float16)``, ``print(...)``). Once the capture has run the
program and recorded its launches, a worker replaying them needs only the definitions, and under the interpreter
the script part costs seconds per import (tutorial 02's module-level softmax: about 3 s, in every worker).

`definitions_only` keeps, at module level and inside module-level `if` / `try` / `with` blocks:

- imports, function and class definitions (with their decorators);
- assignments of a name some kept code reads (a kernel's global, a wrapper's `NUM_SM`, the configs an autotune
  decorator takes), found by a fixpoint over the names each statement reads and binds;
- bare calls of something the script imports (``torch.manual_seed(0)``, ``triton.set_allocator(alloc)``), unless
  they read a name that is not kept.

It leaves out the rest: other assignments, bare calls of the script's own functions or of builtins
(``print``), asserts, loops, `del`. The caller falls back to the whole script when the result does not import.

An optimized file's own code is never left out: every statement that reads or binds a name of the tool's
(``_tileiropt_*``, the gate ``is_tileir``) stays whole -- the gate, ``if is_tileir():`` blocks adding TileIR configs,
twins and dispatch to a kernel -- with what it reads. A kernel launched only by the script part keeps its TileIR
code too, so a replay of it runs what the TileIR backend would.
"""

from __future__ import annotations

import ast
import builtins
import copy

from tileiropt.harness.gate import GATE_NAME, OTHER_NAME

BLOCKS = (ast.If, ast.Try, ast.With)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign)
BUILTIN_NAMES = frozenset(dir(builtins))
TOOL_PREFIXES = ("_tileiropt",)  # the names of the code `apply` inserts (the TMA runtime), and its gate's:
TOOL_NAMES = frozenset({GATE_NAME, OTHER_NAME})  # `if is_tileir():` (harness/gate.py)


def reads(node: ast.AST) -> set[str]:
    """Every name `node` reads anywhere inside (function bodies, decorators, defaults included)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def free_reads(definition: ast.stmt) -> set[str]:
    """The names a definition reads from its module: every name it reads, less its own locals (parameters and
    names it assigns, unless declared `global`). Its decorators, defaults and bases count as read."""
    loads = reads(definition)
    stores = {n.id for n in ast.walk(definition) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store,
                                                                                                 ast.Del))}
    parameters = {a.arg for n in ast.walk(definition) if isinstance(n, ast.arguments)
                  for a in [*n.posonlyargs, *n.args, *n.kwonlyargs, *([n.vararg] if n.vararg else []),
                            *([n.kwarg] if n.kwarg else [])]}
    declared = {name for n in ast.walk(definition) if isinstance(n, ast.Global) for name in n.names}
    outside = set()  # what the decorators, defaults and bases read is evaluated in the module
    if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        for node in definition.decorator_list:
            outside |= reads(node)
    if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for default in [*definition.args.defaults, *(d for d in definition.args.kw_defaults if d is not None)]:
            outside |= reads(default)
    if isinstance(definition, ast.ClassDef):
        for base in [*definition.bases, *(k.value for k in definition.keywords)]:
            outside |= reads(base)
    return (loads - ((stores | parameters) - declared)) | outside


def binds(statement: ast.stmt) -> set[str]:
    """The module-level names a statement binds."""
    if isinstance(statement, DEFINITIONS):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    return {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}


def tool_code(statement: ast.stmt) -> bool:
    """A statement the tool inserted: it reads or binds one of the tool's names (a user's block holding the tool's
    code is looked into instead). An `if` is the tool's by its test alone, and only as the tool writes it: the bare
    gate call (`if is_tileir():`) or a test reading a `_tileiropt` name. A condition of the author's that calls an
    `is_tileir()` of their own (`if TORCH_HAS_FP8 and (is_cuda() or is_tileir()):`, NVIDIA's tutorials) is not."""
    if isinstance(statement, ast.If):
        test = statement.test
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in TOOL_NAMES \
                and not test.args and not test.keywords:
            return True
        names = {name for name in reads(test) if name not in TOOL_NAMES}
    elif isinstance(statement, BLOCKS):
        return False
    else:
        names = reads(statement) | binds(statement)
    return any(name.startswith(TOOL_PREFIXES) or name in TOOL_NAMES for name in names)


def _flat(statements: list[ast.stmt]) -> list[ast.stmt]:
    """The statements, with those of module-level blocks in their place."""
    found: list[ast.stmt] = []
    for statement in statements:
        if isinstance(statement, BLOCKS):
            found.extend(_flat(_arms(statement)))
        else:
            found.append(statement)
    return found


def _arms(block: ast.stmt) -> list[ast.stmt]:
    if isinstance(block, ast.If):
        return [*block.body, *block.orelse]
    if isinstance(block, ast.Try):
        return [*block.body, *(s for handler in block.handlers for s in handler.body), *block.orelse,
                *block.finalbody]
    assert isinstance(block, ast.With)
    return list(block.body)


def _imported(statements: list[ast.stmt]) -> set[str]:
    return {name for s in _flat(statements) if isinstance(s, (ast.Import, ast.ImportFrom)) for name in binds(s)}


def needed_names(statements: list[ast.stmt]) -> set[str]:
    """The names the definitions need, directly or through the assignments that bind them, and what the tests of
    the blocks kept around those read (a fixpoint). A setup call adds nothing: it is kept only when what it reads
    is kept anyway."""
    flat = _flat(statements)
    needed: set[str] = set()
    for statement in flat:
        if isinstance(statement, DEFINITIONS):
            needed |= free_reads(statement)
    for statement in _tool_statements(statements):
        needed |= _module_reads(statement)
    blocks = [s for s in statements if isinstance(s, BLOCKS)]
    while True:
        more = set()
        for statement in flat:
            if isinstance(statement, ASSIGNMENTS) and binds(statement) & needed:
                more |= reads(statement)
        for block in blocks:  # a block holding an import, a definition or a needed assignment is kept: its test too
            inside = _flat([block])
            if any(isinstance(s, (ast.Import, ast.ImportFrom, *DEFINITIONS)) or binds(s) & needed for s in inside) \
                    or _tool_statements([block]):
                more |= _block_reads(block)
        if more <= needed:
            return needed
        needed |= more


def _module_reads(statement: ast.stmt) -> set[str]:
    """What a statement reads from its module: a definition its free names, a block its test and what its
    statements read so (not the locals of the functions it defines)."""
    if isinstance(statement, DEFINITIONS):
        return free_reads(statement)
    if isinstance(statement, BLOCKS):
        return _block_reads(statement) | set().union(*(_module_reads(s) for s in _arms(statement)))
    return reads(statement)


def _tool_statements(statements: list[ast.stmt]) -> list[ast.stmt]:
    """The tool's own statements (`tool_code`), inside module-level blocks too."""
    found: list[ast.stmt] = []
    for statement in statements:
        if tool_code(statement):
            found.append(statement)
        elif isinstance(statement, BLOCKS):
            found.extend(_tool_statements(_arms(statement)))
    return found


def _block_reads(block: ast.stmt) -> set[str]:
    """What a kept block itself reads: an `if` test, a `with` item, a `try`'s handler types."""
    if isinstance(block, ast.If):
        return reads(block.test) | set().union(*(_block_reads(s) for s in block.body + block.orelse
                                                 if isinstance(s, BLOCKS)))
    if isinstance(block, ast.With):
        return set().union(*(reads(item) for item in block.items))
    assert isinstance(block, ast.Try)
    return set().union(*(reads(h.type) for h in block.handlers if h.type is not None))


def _setup_call(statement: ast.stmt, imported: set[str]) -> bool:
    """A bare call of something the script imports (``torch.manual_seed(0)``), not of its own or a builtin."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    root = statement.value.func
    while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
        root = root.func if isinstance(root, ast.Call) else root.value
    return isinstance(root, ast.Name) and root.id in imported


def definitions_only(statements: list[ast.stmt]) -> list[ast.stmt]:
    """The script's statements, its script part left out (see the module docstring). A copy: the input is kept."""
    statements = copy.deepcopy(statements)
    needed = needed_names(statements)
    imported = _imported(statements)
    flat = _flat(statements)
    kept_names = imported | {s.name for s in flat if isinstance(s, DEFINITIONS)} | {
        name for s in flat if isinstance(s, ASSIGNMENTS) and binds(s) & needed for name in binds(s)} | {
        name for s in _tool_statements(statements) for name in _all_binds(s)}  # bound
    return _keep(statements, needed, imported, kept_names)


def _all_binds(statement: ast.stmt) -> set[str]:
    """The names a statement binds, inside a block it heads too."""
    if isinstance(statement, BLOCKS):
        return set().union(*(_all_binds(s) for s in _flat([statement])))
    return binds(statement)


def _keep(statements: list[ast.stmt], needed: set[str], imported: set[str], kept_names: set[str]) -> list[ast.stmt]:
    kept: list[ast.stmt] = []
    for statement in statements:
        if isinstance(statement, (ast.Import, ast.ImportFrom, *DEFINITIONS)) or tool_code(statement):
            kept.append(statement)  # the tool's own code whole, an `if is_tileir():` block with all it holds
        elif isinstance(statement, ASSIGNMENTS):
            if binds(statement) & needed:
                kept.append(statement)
        elif _setup_call(statement, imported):
            if reads(statement) <= kept_names | BUILTIN_NAMES:
                kept.append(statement)
        elif isinstance(statement, ast.If):
            statement.body = _keep(statement.body, needed, imported, kept_names)
            statement.orelse = _keep(statement.orelse, needed, imported, kept_names)
            if statement.body or statement.orelse:
                statement.body = statement.body or [ast.copy_location(ast.Pass(), statement)]
                kept.append(statement)
        elif isinstance(statement, ast.Try):
            statement.body = _keep(statement.body, needed, imported, kept_names)
            for handler in statement.handlers:
                handler.body = _keep(handler.body, needed, imported, kept_names) or \
                    [ast.copy_location(ast.Pass(), handler)]
            statement.orelse = _keep(statement.orelse, needed, imported, kept_names)
            statement.finalbody = _keep(statement.finalbody, needed, imported, kept_names)
            if statement.body:
                kept.append(statement)
        elif isinstance(statement, ast.With):
            statement.body = _keep(statement.body, needed, imported, kept_names)
            if statement.body:
                kept.append(statement)
    return kept
