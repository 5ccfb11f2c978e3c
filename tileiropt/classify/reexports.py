"""Triton names a module takes from another module of its own package: `from pkg.ops._triton import triton, tl`
(or `from ._triton import triton as tr`), where `_triton.py` imports Triton itself (often under `try`, to keep it
optional). The other module is read statically -- never imported -- and the names it binds to Triton (through its
own imports, module-level `if`/`try` included, and re-exports of its own, a few levels deep) bind alike here.
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache
from pathlib import Path

from tileiropt.classify.names import collect_import, dotted_parts, qualified

_DEPTH = 4  # shims re-exporting shims: how far they are followed


def module_file(node: ast.ImportFrom, path: str) -> Path | None:
    """The source file of the module an import names, when it is part of the importing file's own package (or
    folder): `from ._triton import x` and `from pkg.ops._triton import x` from inside `pkg`. None otherwise."""
    if path.startswith("<"):
        return None
    here = Path(path).resolve().parent
    parts = node.module.split(".") if node.module else []
    if node.level:
        base = here
        for _ in range(node.level - 1):
            base = base.parent
    else:
        base = here  # the package root: the folder above the outermost package holding the file
        while (base / "__init__.py").is_file() and base.parent != base:
            base = base.parent
        if not parts:
            return None
        if base != here and here.relative_to(base).parts[0] != parts[0]:
            base = None  # another package installed beside the file's own (torch, packaging): never read
    candidate = base.joinpath(*parts) if base is not None else None
    for found in (candidate.with_suffix(".py"), candidate / "__init__.py") if candidate is not None else ():
        if found.is_file():
            return found
    if not node.level and (here.joinpath(*parts).with_suffix(".py")).is_file():  # a script's sibling module
        return here.joinpath(*parts).with_suffix(".py")
    return None


def module_triton_names(path: Path, depth: int = _DEPTH) -> dict[str, str]:
    """Name -> qualified Triton name of every Triton name the module binds at module level (see the module doc)."""
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return {}
    return dict(_names(str(path), stamp, depth))


@lru_cache(maxsize=4096)
def _bindings(path: str, stamp: int) -> tuple[ast.stmt, ...]:
    """The module's module-level imports and single-name assignments: what `_names` reads, parsed once per version
    of the file whatever the depth it is reached at (the rest of its tree is let go)."""
    try:
        tree = ast.parse(Path(path).read_bytes(), filename=path)
    except (OSError, SyntaxError, ValueError, RecursionError):
        return ()
    return tuple(node for node in module_level(tree.body) if isinstance(node, (ast.Import, ast.ImportFrom)) or (
        isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)))


@lru_cache(maxsize=4096)
def _names(path: str, stamp: int, depth: int) -> tuple[tuple[str, str], ...]:
    aliases: dict[str, str] = {}
    for node in _bindings(path, stamp):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            collect_import(node, aliases)
            if isinstance(node, ast.ImportFrom) and depth > 0:
                collect_reexports(node, path, aliases, depth - 1)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound = qualified(dotted_parts(node.value), aliases)  # `tl = triton.language`
            if bound is not None:
                aliases[node.targets[0].id] = bound
    return tuple(aliases.items())


def collect_reexports(node: ast.ImportFrom, path: str, aliases: dict[str, str], depth: int = _DEPTH) -> None:
    """Add to `aliases` the Triton names `node` imports from a module of the file's own package."""
    if node.module is not None and (node.module == "triton" or node.module.startswith("triton.")) and not node.level:
        return
    source = module_file(node, path)
    if source is None:
        return
    names = module_triton_names(source, depth)
    for alias in node.names:
        if alias.name in names:
            aliases[alias.asname or alias.name] = names[alias.name]


def module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements at module level, inside `if`/`for`/`while`/`try`/`with` blocks too (not inside defs or classes),
    in source order."""
    found: list[ast.stmt] = []
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        found.append(node)
        blocks: list[list[ast.stmt]] = []
        if isinstance(node, (ast.If, ast.For, ast.While)):
            blocks = [node.body, node.orelse]
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            blocks = [node.body, *(h.body for h in node.handlers), node.orelse,  # type: ignore[attr-defined]
                      node.finalbody]  # type: ignore[attr-defined]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            blocks = [node.body]
        for block in reversed(blocks):
            stack.extend(reversed(block))
    return found
