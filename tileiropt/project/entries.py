"""Where a kernel's code lives and how it is called, read from the source (nothing is imported or run).

A kernel file is imported the way its own code imports it: by its dotted name when it sits in a package
(`package_name_for` walks up the ``__init__.py`` files), so relative imports and the package's own code paths
work. The entry is a name in the kernel module (``layer_norm``, ``LayerNorm.apply``) or in another module
(``pkg.mod:fn``); an optional call expression (``layer_norm(x, (N,), w, b, 1e-5)``) says how to call it.
`signature_problem` checks a call against the called function's parameters, so a call that cannot bind is
bad input when the project is loaded, not an error at run time. Module-level names include those defined
inside module-level `if` / `try` / `with` blocks (`if HAS_TRITON: def layer_norm(...)`).
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from pathlib import Path

from tileiropt.classify.blocks import BLOCKS, flatten
from tileiropt.classify.syntax import TryStar


def _module_tree(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError, RecursionError):
        return None


def module_names(tree: ast.Module) -> set[str] | None:
    """Module-level names of a parsed file (defs, classes, assignments, imports), inside module-level blocks
    too; None with ``import *``."""
    names: set[str] = set()
    for node, _ in flatten(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                return None
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, BLOCKS):  # its statements come one by one; its header may bind names too
            names.update(_header_names(node))
        else:
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def _header_names(block: ast.stmt) -> set[str]:
    """Names a block statement's own header binds: `with x as name`, `except E as name`, a walrus in a test."""
    parts: list[ast.AST] = []
    if isinstance(block, ast.If):
        parts.append(block.test)
    elif isinstance(block, (ast.With, ast.AsyncWith)):
        parts.extend(item.optional_vars for item in block.items if item.optional_vars is not None)
    names = {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if isinstance(block, (ast.Try, TryStar)):
        names.update(handler.name for handler in block.handlers if handler.name)
    return names


def file_names(path: Path) -> set[str] | None:
    """Module-level names of the file at `path`; None when unreadable or it uses ``import *``."""
    tree = _module_tree(path)
    return module_names(tree) if tree is not None else None


def name_missing(path: Path, name: str) -> str | None:
    """Why `name` is surely not a module-level name of `path` (None when it is, or may be)."""
    names = file_names(path)
    if names is None or name in names:
        return None
    return f"{name!r} is not defined at module level in {path.name}"


# --------------------------------------------------------------------------- signatures


def _signature(args: ast.arguments, drop_first: bool) -> inspect.Signature:
    """An inspect.Signature with the parameters' names, kinds and whether they have defaults."""
    params: list[inspect.Parameter] = []
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = inspect.Parameter.POSITIONAL_ONLY if i < len(args.posonlyargs) else \
            inspect.Parameter.POSITIONAL_OR_KEYWORD
        params.append(inspect.Parameter(arg.arg, kind, default=inspect.Parameter.empty if default is None else 0))
    if args.vararg:
        params.append(inspect.Parameter(args.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        params.append(inspect.Parameter(arg.arg, inspect.Parameter.KEYWORD_ONLY,
                                        default=inspect.Parameter.empty if default is None else 0))
    if args.kwarg:
        params.append(inspect.Parameter(args.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
    if drop_first and params and params[0].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                    inspect.Parameter.POSITIONAL_OR_KEYWORD):
        params = params[1:]
    return inspect.Signature(params)


def _find_callable(tree: ast.Module, attributes: tuple[str, ...]) -> tuple[str, inspect.Signature] | None:
    """(what is called, its signature) for ``fn``, ``Cls.apply`` / ``Cls.forward`` (an autograd Function:
    forward's parameters after ``ctx``), ``Cls.method``; None when the callee is not a plain def here."""
    top = _definitions(tree)
    aliases = _aliases(tree)
    for _ in range(8):  # `layer_norm = LayerNorm.apply`: follow module-level aliases to the def
        if attributes[0] in top or attributes[0] not in aliases:
            break
        attributes = aliases[attributes[0]] + attributes[1:]
    node = top.get(attributes[0])
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(attributes) == 1:
        return node.name, _signature(node.args, drop_first=False)
    if isinstance(node, ast.ClassDef) and len(attributes) == 2:
        methods = {m.name: m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        wanted = "forward" if attributes[1] == "apply" else attributes[1]
        method = methods.get(wanted)
        if method is None:
            return None
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list)
        # Function.apply(*args) calls forward(ctx, *args); a staticmethod called on the class takes all.
        drop = wanted == "forward" or not static
        return f"{node.name}.{wanted}", _signature(method.args, drop_first=drop)
    return None


def _definitions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """Module-level defs and classes by name; a name defined more than once with one inside a block (a fallback
    under `else:`) is left out: which signature applies depends on the branch taken at import."""
    found: dict[str, list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, int]]] = {}
    for node, depth in flatten(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.setdefault(node.name, []).append((node, depth))
    return {name: nodes[-1][0] for name, nodes in found.items()
            if len(nodes) == 1 or not any(depth for _, depth in nodes)}


def _chain(node: ast.AST) -> tuple[str, ...] | None:
    """("LayerNorm", "apply") for ``LayerNorm.apply``; None for anything but a name chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return (node.id, *parts) if isinstance(node, ast.Name) else None


def _aliases(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """Module-level names bound once to a name chain (``attention = _attention.apply``)."""
    found: dict[str, tuple[str, ...] | None] = {}
    for node, _ in flatten(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            found[name] = _chain(node.value) if name not in found else None
    return {name: chain for name, chain in found.items() if chain}


def signature_problem(path: Path, attributes: tuple[str, ...], positional: int, keywords: list[str],
                      starred: bool = False) -> str | None:
    """Why calling `attributes` (defined in `path`) with `positional` arguments and `keywords` cannot bind,
    naming the parameter; None when it binds or cannot be checked."""
    if starred:
        return None
    tree = _module_tree(path)
    found = _find_callable(tree, attributes) if tree is not None else None
    if found is None:
        return None
    name, signature = found
    try:
        signature.bind(*range(positional), **{k: 0 for k in keywords})
    except TypeError as exc:
        return f"the call does not fit {name}{signature}: {exc}"
    return None


@dataclass
class CallShape:
    """A parsed call expression: what it calls and how many arguments of which kind."""

    callee: tuple[str, ...]  # ("layer_norm",) or ("LayerNorm", "apply"); () when not a name chain
    positional: int
    keywords: list[str]
    starred: bool
    names: set[str]  # every name the expression reads


def parse_call(text: str) -> CallShape | str:
    """The call's shape, or why the text is not one call expression."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError) as exc:
        return f"not a Python expression: {getattr(exc, 'msg', exc)}"
    call = tree.body
    while isinstance(call, (ast.Subscript, ast.Attribute)):  # `Fn.apply(x)[0]`, `f(x).float()`: the call inside
        call = call.value
    if not isinstance(call, ast.Call):
        return "must be a call, like layer_norm(x, (N,), w, b, 1e-5)"
    chain: list[str] = []
    func = call.func
    while isinstance(func, ast.Attribute):
        chain.insert(0, func.attr)
        func = func.value
    callee: tuple[str, ...] = (func.id, *chain) if isinstance(func, ast.Name) else ()
    starred = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return CallShape(callee, len(call.args), [k.arg for k in call.keywords if k.arg], starred, names)
