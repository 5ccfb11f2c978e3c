"""Import a kernel file the way its own code imports it, and build the call of its entry.

- A file inside a package is imported by its dotted name (``liger_kernel.ops.rms_norm``), with the folder
  above the top package first on ``sys.path``, so its relative imports and its package's ``__init__`` run as
  they do for the package's users.
- Its optimized file, when the entry is a name in the kernel module itself (a captured launch's kernel, a wrapper
  beside it), is imported *beside* the original as a sibling module of the same package
  (``liger_kernel.ops.rms_norm__tileiropt_optimized``): the package and its other modules are imported once per
  process, so what they do at import (registering torch custom ops, setting an allocator, patching torch)
  happens once, as it does for the package's users. The two modules coexist in one process.
- When the entry lives in another module (``pkg.mod:fn``), that module must see the optimized code: an import
  redirect maps the original's module name to the optimized file, and switching between the two in one process
  (the reference "original" of an optimized case) forgets the whole package and imports it again.
- A standalone file whose wrapper lives in another module is imported by its stem the same way; any other
  standalone file is imported under a name unique to its path, so an original and its optimized file coexist.

`entry_call` turns the project's entry and call expression into one function of (inputs, args, dims).
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.abc
import importlib.util
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tileiropt.harness.entry_ref import EntryRef
from tileiropt.harness.gate import HELPER_MODULE, helper_import_level
from tileiropt.harness.harness import HarnessError, import_kernel_module
from tileiropt.harness.package_paths import _root_of, package_folder  # noqa: F401 - the loader's own names

if TYPE_CHECKING:
    from torch.library import Library

EntryCall = Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], Any]

_REDIRECTS: dict[str, str] = {}  # module name -> the file imported under that name instead of its own
_NEVER_FORGOTTEN = {"torch", "triton", "tileiropt", "numpy", "typer", "rich", "libcst"}


class _RedirectFinder(importlib.abc.MetaPathFinder):
    """Finds a redirected module name at the file it is redirected to."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
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


def forget(top_names: Iterable[str]) -> None:
    """Drop every module of these top-level packages from ``sys.modules`` (the next import re-runs them)."""
    tops = set(top_names)
    blocked = tops & (_NEVER_FORGOTTEN | set(sys.stdlib_module_names))
    if blocked:
        raise HarnessError(f"cannot re-import {sorted(blocked)[0]!r}: the tool itself depends on it")
    for name in [n for n in sys.modules if n.split(".")[0] in tops]:
        del sys.modules[name]
    importlib.invalidate_caches()


def hold_bare(root: Path, packages: Iterable[str]) -> None:
    """Put each package in `sys.modules` bare, as the user's program held it: a module of that name whose
    `__path__` is its folder under `root` and whose `__init__` never runs (it imports what the program lacked)."""
    import importlib.machinery

    for name in packages:
        held = sys.modules.get(name)
        if held is not None and getattr(held, "__file__", None) is None:
            continue  # bare already
        folder = root.joinpath(*name.split("."))
        bare = ModuleType(name)
        bare.__path__ = [str(folder)]
        bare.__package__ = name
        bare.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        bare.__spec__.submodule_search_locations = [str(folder)]
        sys.modules[name] = bare


def load_kernel_module(path: Path | str, original: Path | str, module: str | None, entry: str,
                       search_paths: Iterable[Path | str] = (), bare: Iterable[str] = ()) -> ModuleType:
    """Import the file at `path` (the original or its optimized file) as the code of `original`; the packages in
    `bare` are held without running their `__init__`, as the program that launched the kernel held them."""
    path, original = Path(path).resolve(), Path(original).resolve()
    name = import_name(original, module, entry)
    if name is None:
        return import_kernel_module(path, search_paths)
    for folder in reversed([_root_of(original, name), *map(Path, search_paths)]):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    bare = [package for package in bare if name.startswith(package + ".")]
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    ref = EntryRef.parse(entry)
    if path != original:
        redirect_helper(path, name)
    if path != original and module and original.name != "__init__.py" and (ref is None or ref.module is None):
        hold_bare(_root_of(original, name), bare)
        return _load_sibling(path, name)
    wanted = None if path == original else str(path)
    loaded = sys.modules.get(name)
    if loaded is not None and _REDIRECTS.get(name) == wanted:
        return loaded
    forget({name.split(".")[0]} | ({ref.module.split(".")[0]} if ref and ref.module else set()))
    hold_bare(_root_of(original, name), bare)
    if wanted is None:
        _REDIRECTS.pop(name, None)
    else:
        _REDIRECTS[name] = wanted
    return importlib.import_module(name)


def redirect_helper(path: Path, name: str) -> None:
    """An optimized file of a library imports the library's helper module (`from .._tileir import is_tileir`),
    written beside the optimized files, not into the library: its name in the package is redirected there."""
    try:
        level = helper_import_level(path.read_bytes())
    except OSError:
        return
    if not level or name.count(".") < level:  # none, or a single file's beside it (its folder is importable)
        return
    helper = path.parents[level - 1] / f"{HELPER_MODULE}.py"
    if helper.is_file():
        helper_name = f"{name.rsplit('.', level)[0]}.{HELPER_MODULE}"
        _REDIRECTS[helper_name] = str(helper)
        sys.modules.pop(helper_name, None)


SIBLING_SUFFIX = "__tileiropt_optimized"


def _load_sibling(path: Path, name: str) -> ModuleType:
    """The optimized file `path` as the sibling module ``<name>__tileiropt_optimized`` of the original `name`, in
    the same package (its relative imports resolve there); the package itself is imported once, not again."""
    sibling = name + SIBLING_SUFFIX
    loaded = sys.modules.get(sibling)
    if loaded is not None and getattr(loaded, "__file__", None) == str(path):
        return loaded
    importlib.import_module(name.rpartition(".")[0])  # the package, as its users import it (once per process)
    spec = importlib.util.spec_from_file_location(sibling, path)
    if spec is None or spec.loader is None:
        raise HarnessError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[sibling] = module
    try:
        with registrations_once():
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(sibling, None)
        raise
    return module


_REGISTERED_TWICE = ("multiple times", "Only a single TORCH_LIBRARY")


@contextlib.contextmanager
def registrations_once() -> Iterator[None]:
    """While an optimized sibling runs its module-level code: a torch custom-op namespace or schema the original
    module registered already (`torch.library.define`, `Library(ns, "DEF")`, `Library.define`) is not an error;
    the original's registration stands, as it would in a process that imported the module once."""
    try:
        import torch.library as library
    except ImportError:  # pragma: no cover - torch is a dependency
        yield
        return
    real_define, real_init, real_method = library.define, library.Library.__init__, library.Library.define

    def again(exc: RuntimeError) -> bool:
        return any(text in str(exc) for text in _REGISTERED_TWICE)

    def define(qualname: str, schema: str, *args: object, **kwargs: object) -> Any:
        try:
            return real_define(qualname, schema, *args, **kwargs)
        except RuntimeError as exc:
            if not again(exc):
                raise
            return None

    def init(self: Library, ns: str, kind: str, *args: object, **kwargs: object) -> None:
        try:
            real_init(self, ns, kind, *args, **kwargs)
        except RuntimeError as exc:
            if kind != "DEF" or not again(exc):
                raise
            real_init(self, ns, "FRAGMENT", *args, **kwargs)  # the namespace exists: add to it

    def method(self: Library, schema: str, *args: object, **kwargs: object) -> Any:
        try:
            return real_method(self, schema, *args, **kwargs)
        except RuntimeError as exc:
            if not again(exc):
                raise
            return str(schema).split("(", 1)[0]  # the name `define` returns

    # torch's registration functions patched on purpose while the sibling runs (restored below)
    library.define = define  # type: ignore[assignment]
    library.Library.__init__ = init  # type: ignore[method-assign]
    library.Library.define = method  # type: ignore[method-assign]
    try:
        yield
    finally:
        library.define = real_define
        library.Library.__init__ = real_init  # type: ignore[method-assign]
        library.Library.define = real_method  # type: ignore[method-assign]


def _resolve(owner: ModuleType, attributes: Iterable[str], entry: str) -> Any:
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
