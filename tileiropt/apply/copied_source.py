"""The text of a module that is copied into generated files, as the copy needs it.

The gate and the TMA runtime live in real modules (imported, linted and tested like any other) and are
written into every transformed file from their source: less the module docstring, `from __future__`
imports (only legal at the top of a file), and the imports the copy gets elsewhere (the package's own,
whose code is copied before it, or all of them when the code before it imports what it needs).
"""

from __future__ import annotations

import ast
import inspect
import re
from types import ModuleType

PACKAGE = "tileiropt"


def _is_docstring(node: ast.stmt, tree: ast.Module) -> bool:
    return (node is tree.body[0] and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def _is_dropped_import(node: ast.stmt, all_imports: bool) -> bool:
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return all_imports or module == "__future__" or node.level > 0 or module.split(".")[0] == PACKAGE
    if isinstance(node, ast.Import):
        return all_imports or any(alias.name.split(".")[0] == PACKAGE for alias in node.names)
    return False


def copied_source(module: ModuleType, *, all_imports: bool = False) -> str:
    """The module's source as copied: without its docstring, `from __future__` and package imports (every
    top-level import with `all_imports`); runs of blank lines left by them shortened to two; one final newline."""
    source = inspect.getsource(module)
    tree = ast.parse(source)
    dropped: set[int] = set()
    for node in tree.body:
        if _is_docstring(node, tree) or _is_dropped_import(node, all_imports):
            dropped.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    kept = "\n".join(line for number, line in enumerate(source.splitlines()) if number not in dropped)
    return re.sub(r"\n{4,}", "\n\n\n", kept).strip() + "\n"
