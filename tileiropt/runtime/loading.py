"""Import a kernel file the way its own code imports it, and build the call of its entry.

- A file inside a package is imported by its dotted name (``liger_kernel.ops.rms_norm``), with the folder
  above the top package first on ``sys.path``, so its relative imports and its package's ``__init__`` run as
  they do for the package's users.
- Its optimized file is imported *in the original's place*: an import redirect maps the original's module name
  to the optimized file, so every module of the package that imports the kernel module gets the optimized code.
  Switching between the two in one process (the reference "original" of an optimized case) forgets the whole
  package and imports it again.
- A standalone file whose wrapper lives in another module is imported by its stem the same way; any other
  standalone file is imported under a name unique to its path, so an original and its optimized file coexist.

`entry_call` turns the project's entry and call expression into one function of (inputs, args, dims).
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.util
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from tileiropt.entries import EntryRef
from tileiropt.runtime.harness import HarnessError, import_kernel_module

EntryCall = Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], Any]

_REDIRECTS: dict[str, str] = {}  # module name -> the file imported under that name instead of its own
_NEVER_FORGOTTEN = {"torch", "triton", "tileiropt", "numpy", "typer", "rich", "libcst"}


class _RedirectFinder(importlib.abc.MetaPathFinder):
    """Finds a redirected module name at the file it is redirected to."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        file = _REDIRECTS.get(fullname)
        if file is None:
            return None
        return importlib.util.spec_from_file_location(fullname, file)


_FINDER = _RedirectFinder()


def import_name(original: Path, module: str | None, entry: str) -> str | None:
    """The name to import the kernel file by: its dotted name in a package; its stem when a wrapper in
    another module imports it; None when nothing imports it by name (a private name is used)."""
    if module:
        return module
    ref = EntryRef.parse(entry)
    stem = original.stem
    if ref is None or ref.module is None or not stem.isidentifier():
        return None
    if stem in sys.stdlib_module_names or stem in _NEVER_FORGOTTEN:
        return None
    return stem


def _root_of(original: Path, name: str) -> Path:
    """The folder `name` is imported from: above the top package of the original file."""
    levels = name.count(".") + (1 if original.name == "__init__.py" else 0)
    return original.resolve().parents[levels]


def package_folder(original: Path, module: str | None) -> Path | None:
    """The folder of the top package holding `original` (None outside a package)."""
    if not module or "." not in module:
        return None
    return _root_of(original, module) / module.split(".")[0]


def forget(top_names: Iterable[str]) -> None:
    """Drop every module of these top-level packages from ``sys.modules`` (the next import re-runs them)."""
    tops = set(top_names)
    blocked = tops & (_NEVER_FORGOTTEN | set(sys.stdlib_module_names))
    if blocked:
        raise HarnessError(f"cannot re-import {sorted(blocked)[0]!r}: the tool itself depends on it")
    for name in [n for n in sys.modules if n.split(".")[0] in tops]:
        del sys.modules[name]
    importlib.invalidate_caches()


def load_kernel_module(path: Path | str, original: Path | str, module: str | None, entry: str,
                       search_paths: Iterable[Path | str] = ()) -> ModuleType:
    """Import the file at `path` (the original or its optimized file) as the code of `original`."""
    path, original = Path(path).resolve(), Path(original).resolve()
    name = import_name(original, module, entry)
    if name is None:
        return import_kernel_module(path, search_paths)
    for folder in reversed([_root_of(original, name), *map(Path, search_paths)]):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    wanted = None if path == original else str(path)
    loaded = sys.modules.get(name)
    if loaded is not None and _REDIRECTS.get(name) == wanted:
        return loaded
    ref = EntryRef.parse(entry)
    forget({name.split(".")[0]} | ({ref.module.split(".")[0]} if ref and ref.module else set()))
    if wanted is None:
        _REDIRECTS.pop(name, None)
    else:
        _REDIRECTS[name] = wanted
    return importlib.import_module(name)


def _resolve(owner: Any, attributes: Iterable[str], entry: str) -> Any:
    obj = owner
    for part in attributes:
        if not hasattr(obj, part):
            where = getattr(owner, "__name__", "the module")
            raise HarnessError(f"{where} has no {entry!r}")
        obj = getattr(obj, part)
    return obj


def entry_call(module: ModuleType, entry: str, call: str | None) -> EntryCall:
    """A function of (inputs, args, dims) calling the entry: ``entry(**inputs, **args)``, or the call
    expression evaluated with the module's names, ``torch``, ``F``, ``math``, the dims, args and inputs."""
    import torch
    import torch.nn.functional as F

    ref = EntryRef.parse(entry)
    if ref is None:
        raise HarnessError(f"entry {entry!r} is not a name, a dotted name or 'pkg.mod:name'")
    owner = importlib.import_module(ref.module) if ref.module else module
    target = _resolve(owner, ref.attributes, entry)
    if call is None:
        if not callable(target):
            raise HarnessError(f"{entry!r} is not callable")
        return lambda inputs, args, dims: target(**inputs, **args)
    code = compile(call, "<call>", "eval")
    scope = {**vars(module), "__builtins__": builtins, "torch": torch, "F": F, "math": math}
    if owner is not module:
        scope[ref.name] = getattr(owner, ref.name)

    def evaluate(inputs: Mapping[str, Any], args: Mapping[str, Any], dims: Mapping[str, Any]) -> Any:
        return eval(code, {**scope, **dims, **args, **inputs})  # noqa: S307 - the user's own call

    return evaluate
