"""The JIT helpers a kernel calls, followed without importing anything: those of its own file, and those it imports
from its package's other modules (`from .utils import safe_dot`), each read once a process."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from tileiropt.classify.facts import FunctionFacts
from tileiropt.classify.ir.sandbox import Registry
from tileiropt.classify.model import FileModel
from tileiropt.errors import UserError


def helper_facts(own: FunctionFacts, model: FileModel) -> list[tuple[FunctionFacts, str | None]]:
    """The kernel's facts and those of every JIT helper it calls (with the helper's name): helpers of its own file,
    and helpers it imports from the package's other modules (`from .utils import safe_dot`), found without
    importing anything, and the helpers those call in their own files."""
    result: list[tuple[FunctionFacts, str | None]] = [(own, None)]
    seen = {(str(Path(model.path).resolve()), own.name)}
    queue = [(own, model)]
    while queue:
        facts, where = queue.pop(0)
        functions = {node.name: node for node in where.scan.kernel_nodes}
        for _, callee in facts.helper_calls:
            found = (where, functions[callee]) if callee in functions else imported_helper(where, callee)
            if found is None:
                continue
            owner, node = found
            key = (str(Path(owner.path).resolve()), node.name)
            if key in seen:
                continue
            seen.add(key)
            helper = owner.facts.facts(node)
            result.append((helper, callee))
            queue.append((helper, owner))
    return result


def imported_helper(model: FileModel, name: str) -> tuple[FileModel, ast.FunctionDef] | None:
    """The JIT function `name` names in `model` through a module-level `from <module> import ...` of a module of
    the package's own tree, with that module's model; None when it is not one."""
    for node in model.scan.tree.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            if (alias.asname or alias.name) != name:
                continue
            path = Registry().module_file(model.path, node.module, node.level)
            other = _helper_model(str(path)) if path is not None else None
            if other is None:
                return None
            return next(((other, n) for n in other.scan.kernel_nodes if n.name == alias.name), None)
    return None


_HELPER_MODELS: dict[tuple[str, int, int], FileModel | None] = {}  # a package's helper modules, read once a process


def _helper_model(path: str) -> FileModel | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    key = (path, info.st_size, info.st_mtime_ns)
    if key not in _HELPER_MODELS:
        try:
            model = FileModel.read(path)
            model.scan  # noqa: B018 - parsed now: a module that does not parse is not followed
        except (UserError, SyntaxError, ValueError, RecursionError):
            model = None
        _HELPER_MODELS[key] = model
    return _HELPER_MODELS[key]
