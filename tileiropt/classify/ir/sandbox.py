"""Triton JIT functions built from a file's source without running the file.

Lowering a kernel to TTIR needs a `triton.JITFunction`, which Triton makes from a Python function.
Importing the user's module would run its code (device queries, benchmarks, anything), so each JIT
function is rebuilt on its own: its `def` alone is compiled -- decorators dropped, annotations kept
as strings, defaults replaced by values read from the syntax tree -- and executed in a namespace that
holds only what a kernel body may name:

- Triton's own modules and names, imported as the file imports them (`import triton.language as tl`,
  `from triton.language.extra import libdevice`; inside `if`/`try` at module level too, first
  success wins);
- the file's other JIT functions, and JIT functions or constants imported from the package's other
  modules (`from .utils import helper`), rebuilt the same way;
- module-level constants with literal values (`BLOCK = 128`, `FLAG = tl.constexpr(1)`).

Executing a `def` statement runs none of its body, so no code of the file runs. A name the namespace
cannot provide stays missing; Triton then reports it when it lowers the kernel, and the IR check for
that kernel is skipped with that reason.

Lowering is not a sandbox, though: Triton's front end calls any Python callable a kernel body reaches
at compile time. So a function is rebuilt only when its body cannot reach one (`screen`): no dunder
names or attributes (`().__class__`), no `getattr`/`eval`-like builtins, and attribute chains on Triton
modules that stay inside `triton.language` (not `triton.runtime.cache.os`). A function that fails the
screen is not lowered; its syntax findings stand.
"""

from __future__ import annotations
import __future__

import ast
import copy
import importlib
import linecache
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from tileiropt.classify.discovery import Scan, scan
from tileiropt.classify.modules import locate_module, package_name_for
from tileiropt.classify.names import JIT, call_name
from tileiropt.classify.reexports import module_level
from tileiropt.classify.source import read_source
from tileiropt.errors import UserError

_CONSTEXPR = ("triton.language.constexpr", "triton.language.core.constexpr")


class SandboxError(Exception):
    """A JIT function could not be rebuilt (the reason is the message)."""


@dataclass
class FileSandbox:
    """The JIT functions of one file, rebuilt in a namespace of Triton names and literal constants."""

    path: str
    scanned: Scan
    registry: Registry
    namespace: dict[str, Any] = field(default_factory=dict)
    jit: dict[str, Any] = field(default_factory=dict)  # name -> triton.JITFunction
    notes: list[str] = field(default_factory=list)  # what could not be provided, for messages
    refused: dict[str, str] = field(default_factory=dict)  # functions the screen kept from lowering, and why
    _filled: bool = False

    def function(self, name: str) -> Any:
        self.fill()
        if name in self.refused:
            raise SandboxError(f"not lowered: {self.refused[name]} (lowering would run it)")
        if name not in self.jit:
            raise SandboxError(f"{name} could not be rebuilt from the source: {'; '.join(self.notes) or 'unknown'}")
        return self.jit[name]

    def fill(self) -> None:
        if self._filled:
            return
        self._filled = True
        import triton

        tree = self.scanned.tree
        self.namespace.update({"__name__": _module_name(self.path), "__builtins__": {}})
        used = _names_used_in_kernels(self.scanned)
        self._triton_imports(tree)
        self.namespace.update(_constants(tree, self.scanned.module.aliases))
        _register_lines(self.path, self.scanned.text.source)
        for kernel, node in zip(self.scanned.module.kernels, self.scanned.kernel_nodes, strict=True):
            unsafe = screen(node, self.scanned.module.aliases)
            if unsafe:
                self.notes.append(f"{kernel.name} is not lowered: {unsafe}")
                self.refused[kernel.name] = unsafe
                continue
            try:
                function = _rebuild(node, self.path, self.namespace, self.scanned.module.aliases)
                options = _jit_options(self.scanned.layers(kernel.name, node), self.scanned.module.aliases)
                self.jit[kernel.name] = triton.JITFunction(function, **options)
            except Exception as exc:  # a def this Triton's JITFunction does not take: noted, not lowered
                self.notes.append(f"{kernel.name}: {type(exc).__name__}: {exc}")
        self.namespace.update(self.jit)
        for kernel in self.scanned.module.kernels:  # `helper = triton.jit(_helper_py)`: called as `helper`
            if kernel.name in self.jit:
                self.namespace.update(dict.fromkeys(kernel.bound_names, self.jit[kernel.name]))
        self._package_imports(tree, used)

    # imports -------------------------------------------------------------------------------------

    def _triton_imports(self, tree: ast.Module) -> None:
        for node in module_level(tree.body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if not _is_triton(alias.name):
                        continue
                    bound = alias.asname or alias.name.split(".")[0]
                    if bound in self.namespace:
                        continue
                    target = alias.name if alias.asname else alias.name.split(".")[0]
                    module = _import(alias.name) and _import(target)
                    if module is not None:
                        self.namespace[bound] = module
            elif isinstance(node, ast.ImportFrom) and not node.level and _is_triton(node.module or ""):
                module = _import(node.module or "")
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if alias.name == "*" or bound in self.namespace:
                        continue
                    value = getattr(module, alias.name, None) if module is not None else None
                    if value is None:
                        value = _import(f"{node.module}.{alias.name}")
                    if value is not None:
                        self.namespace[bound] = value

    def _package_imports(self, tree: ast.Module, used: set[str]) -> None:
        """JIT functions and constants the kernels name from the package's other modules."""
        for node in module_level(tree.body):
            if isinstance(node, ast.ImportFrom) and (node.level or not _is_triton(node.module or "")):
                wanted = [a for a in node.names if (a.asname or a.name) in used
                          and (a.asname or a.name) not in self.namespace]
                if not wanted:
                    continue
                source = self.registry.module_file(self.path, node.module, node.level)
                if source is None:
                    self.notes.append(f"module {'.' * node.level}{node.module or ''} not found")
                    continue
                other = self.registry.sandbox(source)
                if other is None:
                    continue
                other.fill()
                for alias in wanted:
                    value = other.jit.get(alias.name, other.namespace.get(alias.name))
                    if value is not None and alias.name != "__builtins__":
                        self.namespace[alias.asname or alias.name] = value


@dataclass
class Registry:
    """One sandbox per file, so a helper module shared by many kernel files is rebuilt once."""

    sandboxes: dict[str, FileSandbox | None] = field(default_factory=dict)

    def sandbox(self, path: Path | str, scanned: Scan | None = None) -> FileSandbox | None:
        key = str(Path(path).resolve())
        if key not in self.sandboxes:
            self.sandboxes[key] = None  # a cycle of imports ends here
            if scanned is None:
                try:
                    scanned = scan(read_source(Path(path)), str(path))
                except (UserError, RecursionError, MemoryError):
                    return None
            self.sandboxes[key] = FileSandbox(str(path), scanned, self)
        return self.sandboxes[key]

    def module_file(self, importer: str, module: str | None, level: int) -> Path | None:
        """The file `from <level dots><module> import ...` in `importer` names, found without importing."""
        dotted, root = package_name_for(Path(importer))
        if level:
            if dotted is None:
                return None
            package = dotted.split(".")
            is_init = Path(importer).name == "__init__.py"
            keep = len(package) - level + (1 if is_init else 0)
            if keep < 1:
                return None
            name = ".".join(package[:keep] + ([module] if module else []))
        elif module:
            name = module
        else:
            return None
        return locate_module(name, [root])


_UNSAFE_CALLS = frozenset({"getattr", "hasattr", "setattr", "delattr", "eval", "exec", "compile", "open", "globals",
                           "locals", "vars", "breakpoint", "input", "type", "object", "super", "memoryview"})
_LANGUAGE = "triton.language"
_TRITON_HELPERS = frozenset({"triton.cdiv", "triton.next_power_of_2", "triton.jit", "triton.language"})


def screen(node: ast.FunctionDef, aliases: dict[str, str]) -> str | None:
    """Why lowering `node` could run code that is not Triton's (None when it cannot): see the module doc."""
    parts: list[ast.AST] = [*node.body, node.args]  # decorators are not lowered (they are dropped)
    for sub in (inner for part in parts for inner in ast.walk(part)):
        if isinstance(sub, ast.Name) and sub.id.startswith("__"):
            return f"it names `{sub.id}` (line {sub.lineno})"
        if isinstance(sub, ast.Attribute) and sub.attr.startswith("__"):
            return f"it reads `.{sub.attr}` (line {sub.lineno})"
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in _UNSAFE_CALLS:
            return f"it calls `{sub.func.id}` (line {sub.lineno})"
        if isinstance(sub, ast.Attribute):
            qualified = call_name(sub, aliases)
            if qualified and _is_triton(qualified) and not _inside_language(qualified):
                return f"it reaches `{qualified}` (line {sub.lineno}), outside triton.language"
    return None


def _inside_language(qualified: str) -> bool:
    """Does `triton.language.x.y` stay on Triton-language modules and objects at every step?"""
    if qualified in _TRITON_HELPERS:
        return True
    if not qualified.startswith(_LANGUAGE + "."):
        return False
    value: Any = _import(_LANGUAGE)
    for part in qualified.split(".")[2:]:
        if isinstance(value, ModuleType) and not value.__name__.startswith(_LANGUAGE):
            return False
        value = getattr(value, part, None)
        if value is None:
            return True  # not there: Triton reports the name when it lowers; nothing runs
    if isinstance(value, ModuleType):
        return value.__name__.startswith(_LANGUAGE)
    module = getattr(value, "__module__", None)
    return not callable(value) or (isinstance(module, str) and module.startswith("triton"))


def _is_triton(name: str) -> bool:
    return name == "triton" or name.startswith("triton.")


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # a Triton version without this module: the next binding may have it
        return None


def _names_used_in_kernels(scanned: Scan) -> set[str]:
    return {sub.id for node in scanned.kernel_nodes for sub in ast.walk(node) if isinstance(sub, ast.Name)}


def _literal(node: ast.expr, aliases: dict[str, str]) -> tuple[bool, Any]:
    """(True, value) for a literal, a Triton name (`tl.float32`) or `tl.constexpr(<literal>)`."""
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        ok, value = _literal(node.operand, aliases)
        if ok and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True, -value
    name = call_name(node, aliases) if isinstance(node, (ast.Attribute, ast.Name)) else None
    if name and _is_triton(name):
        value = _triton_object(name)
        if value is not None:
            return True, value
    if isinstance(node, ast.Call) and call_name(node, aliases) in _CONSTEXPR and len(node.args) == 1:
        ok, value = _literal(node.args[0], aliases)
        if ok:
            import triton.language as tl

            return True, tl.constexpr(value)
    return False, None


def _triton_object(qualified: str) -> Any:
    module_name, _, attribute = qualified.rpartition(".")
    module = _import(module_name) if module_name else None
    return getattr(module, attribute, None) if module is not None else None


def _constants(tree: ast.Module, aliases: dict[str, str]) -> dict[str, Any]:
    constants: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        ok, result = _literal(value, aliases)
        if ok:
            constants[target] = result
    return constants


def _rebuild(node: ast.FunctionDef, path: str, namespace: dict[str, Any], aliases: dict[str, str]) -> Any:
    """The bare function of a JIT `def`: decorators dropped, defaults read from the tree (never evaluated)."""
    bare = copy.copy(node)  # the body is shared, never changed: only the def's own fields are replaced
    bare.decorator_list = []
    bare.args = copy.copy(node.args)
    positional = node.args.defaults
    keyword_only = node.args.kw_defaults
    values = []
    for default in positional:
        values.append(_default(default, aliases))
    kw_values = [None if d is None else _default(d, aliases) for d in keyword_only]
    bare.args.defaults = [ast.Constant(None) for _ in positional]
    bare.args.kw_defaults = [None if d is None else ast.Constant(None) for d in keyword_only]
    code = compile(ast.fix_missing_locations(ast.Module(body=[bare], type_ignores=[])), path, "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    scope: dict[str, Any] = {}
    exec(code, namespace, scope)  # defines the function; its body does not run
    function = scope[node.name]
    function.__defaults__ = tuple(values) or None
    kw_names = [a.arg for a in bare.args.kwonlyargs]
    function.__kwdefaults__ = {n: v for n, v, d in zip(kw_names, kw_values, keyword_only) if d is not None} or None
    return function


def _default(node: ast.expr, aliases: dict[str, str]) -> Any:
    ok, value = _literal(node, aliases)
    return value if ok else None


def _jit_options(layers: list[ast.expr], aliases: dict[str, str]) -> dict[str, Any]:
    """The keyword options of `@triton.jit(...)` (or of `triton.jit(fn, ...)` applied by assignment, `layers`: what
    is applied over the def) that change the IR (noinline)."""
    for decorator in layers:
        if isinstance(decorator, ast.Call) and call_name(decorator, aliases) in JIT:
            for keyword in decorator.keywords:
                if keyword.arg == "noinline" and isinstance(keyword.value, ast.Constant):
                    return {"noinline": bool(keyword.value.value)}
    return {}


def _module_name(path: str) -> str:
    dotted, _ = package_name_for(Path(path)) if Path(path).is_file() else (None, None)
    return dotted or Path(path).stem or "kernels"


def _register_lines(path: str, source: str) -> None:
    """Let Triton read the function's source from the text analysed (not from a file that may differ)."""
    lines = source.splitlines(keepends=True)
    linecache.cache[path] = (len(source), None, lines, path)
