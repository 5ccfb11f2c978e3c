"""Library mode: `tileiropt run DIR -- COMMAND` on a folder of kernel files without a project file.

Every Python file under DIR that defines a Triton kernel (at module level, or under a module-level `if`/`try`/
`with`) is a capture target: the command's launches of any of their kernels are captured, then validated,
benchmarked and reported as one run. Optimized files mirror the library's layout under the artifacts folder
(`<artifacts>/optimized/<DIR name>/<sub/folders>/<stem>_tileir.py`): nothing is written into the library unless
`--in-place` is asked and proven.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from tileiropt.classify.assigned import assigned_kernels
from tileiropt.classify.names import collect_import, dotted_parts, qualified
from tileiropt.classify.reexports import collect_reexports, module_level
from tileiropt.errors import UserError
from tileiropt.harness.gate import optimized_name, optimized_original
from tileiropt.schema import GATE_MARKER

SKIPPED_FOLDERS = {"__pycache__", "site-packages", "node_modules", "build", "dist"}  # besides hidden ones
# a decorator line naming what `is_triton_decorator` takes: a file without one defines no kernel, and is not parsed
_KERNEL_DECORATOR = re.compile(r"^[ \t]*@[^\n]*\b(?:jit|autotune|heuristics)\b"
                               r"|^[ \t]*\w+[ \t]*(?::[^=\n]*)?=[^\n]*\bjit\b", re.MULTILINE)  # or `k = triton.jit(k)`


@dataclass
class LibraryFiles:
    """What a library folder holds: the kernel files to capture, and the Python files set aside and why."""

    folder: Path
    kernel_files: list[Path] = field(default_factory=list)
    unreadable: dict[Path, str] = field(default_factory=dict)  # file -> why it could not be read or parsed
    without_kernels: int = 0  # Python files defining no Triton kernel
    written_by_tool: list[Path] = field(default_factory=list)  # optimized files tileiropt wrote: never the library's
    made_by_call: list[Path] = field(default_factory=list)  # files whose kernels are defined only inside functions


def written_by_tileiropt(path: Path, text: str) -> bool:
    """Whether `path` is an optimized file tileiropt wrote beside the user's (`<stem>_tileir.py` holding the gate's
    marker, with `<stem>.py` beside it): never part of the library, whatever it defines."""
    return path.suffix == ".py" and optimized_original(path) is not None and GATE_MARKER in text


def _matches(relative: str, patterns: list[str]) -> bool:
    """`relative` (a POSIX path under the library) matches a glob: the path itself, or its file name."""
    name = relative.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(relative, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


def python_files(folder: Path, include: list[str] | None = None, exclude: list[str] | None = None) -> list[Path]:
    """The .py files under `folder`, sorted, without hidden or build folders, filtered by the globs."""
    found: list[Path] = []
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder).as_posix()
        parts = path.relative_to(folder).parts
        if any(p.startswith(".") or p in SKIPPED_FOLDERS for p in parts[:-1]) or not path.is_file():
            continue
        if include and not _matches(relative, include):
            continue
        if exclude and _matches(relative, exclude):
            continue
        found.append(path)
    return found


def defines_kernel(tree: ast.Module, path: str = "<string>") -> bool:
    """Whether a module defines a Triton kernel at module level or under a module-level `if`/`try`/`with`
    (functions and classes are not looked into: a kernel made by a call is not the library's source). Triton may
    come through a module of the package (`from ._triton import triton as tr`: `@tr.jit`)."""
    statements = module_level(tree.body)
    decorators = [d for node in statements if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for d in node.decorator_list if _named_like_kernel(d)]
    if any(ast.unparse(_target(d)).startswith("triton.") for d in decorators):
        return True
    if made_by_assignment(statements):
        return True
    # only the imports binding a decorator's first name can make it Triton's: the package's other modules are read
    # for those alone (following every import of a file inside torch read 569 of torch's modules)
    needed = {parts[0] for parts in (dotted_parts(_target(d)) for d in decorators) if parts}
    if not needed:
        return False
    aliases: dict[str, str] = {}
    for node in statements:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            collect_import(node, aliases)
            if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) in needed for a in node.names):
                collect_reexports(node, path, aliases)
    return any(is_triton_decorator(d, aliases) for d in decorators)


def made_by_assignment(statements: list[ast.stmt]) -> bool:
    """Whether module-level assignments make a kernel of a module-level def (`k = triton.jit(k)`, then
    `k = triton.autotune(...)(k)`, ...: `classify.assigned`), with no decorator anywhere."""
    aliases: dict[str, str] = {}
    for node in statements:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            collect_import(node, aliases)
    return bool(assigned_kernels(statements, aliases))


def _target(decorator: ast.expr) -> ast.expr:
    return decorator.func if isinstance(decorator, ast.Call) else decorator


def _named_like_kernel(decorator: ast.expr) -> bool:
    return ast.unparse(_target(decorator)).rsplit(".", 1)[-1] in ("jit", "autotune", "heuristics")


def is_triton_decorator(decorator: ast.expr, aliases: dict[str, str]) -> bool:
    """`@triton.jit`, `@triton.autotune(...)`, `@triton.heuristics(...)` under any name the module's imports give
    Triton (`from triton import jit`, `import triton as tr`, a module of the package: `aliases`); never another
    library's `@jit` (`from numba import jit`)."""
    if not _named_like_kernel(decorator):
        return False
    target = _target(decorator)
    return ast.unparse(target).startswith("triton.") or qualified(dotted_parts(target), aliases) is not None


def library_files(folder: Path, include: list[str] | None = None,
                  exclude: list[str] | None = None) -> LibraryFiles:
    """Sort the Python files of a library folder into kernel files, files without kernels and unreadable ones."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError("not a folder", file=str(folder), hint="give the library's package folder")
    found = LibraryFiles(folder=folder.resolve())
    for path in python_files(folder, include, exclude):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            found.unreadable[path] = f"cannot read: {exc}"
            continue
        if not _KERNEL_DECORATOR.search(text):  # torch's _inductor: 10 of its 348 files have such a line
            found.without_kernels += 1
            continue
        if written_by_tileiropt(path, text):
            found.written_by_tool.append(path.resolve())
            continue
        try:
            tree = ast.parse(text, filename=str(path))
        except SyntaxError as exc:
            found.unreadable[path] = f"line {exc.lineno}: {exc.msg}"
            continue
        except (RecursionError, MemoryError, ValueError):
            found.unreadable[path] = "nested too deeply to parse"
            continue
        if defines_kernel(tree, str(path)):
            found.kernel_files.append(path.resolve())
        else:
            found.without_kernels += 1
            if defines_kernel_in_a_function(tree):
                found.made_by_call.append(path.resolve())
    return found


def defines_kernel_in_a_function(tree: ast.Module) -> bool:
    """Whether a function or class of the module defines a Triton kernel (`@triton.jit` under a factory that
    imports Triton when called, as torchao's `_build_triton_impls()` does): such kernels are made by a call, so a
    capture cannot replay them from the module; the report says which files hold them."""
    top = {id(node) for node in tree.body}
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in top
               and any(is_triton_decorator(d, {}) for d in node.decorator_list) for node in ast.walk(tree))


def mirrored_output(path: Path, library: Path, artifacts: Path) -> Path:
    """Where the optimized file of `path` (a file of the library) goes: the library's layout under the
    artifacts, `<artifacts>/optimized/<library name>/<sub/folders>/<stem>_tileir.py`."""
    relative = Path(path).resolve().relative_to(Path(library).resolve())
    return Path(artifacts) / "optimized" / Path(library).resolve().name / relative.parent / \
        optimized_name(relative.stem)


def check_library(found: LibraryFiles) -> None:
    """Before anything runs: at least one kernel file (a command is what makes a folder a library: see
    `project.resolve_target` and `tileiropt init DIR -- COMMAND`)."""
    if not found.kernel_files:
        why = "; ".join(f"{p.name}: {r}" for p, r in list(found.unreadable.items())[:3])
        raise UserError("no Python file under the folder defines a Triton kernel (@triton.jit)"
                        + (f" (unreadable: {why})" if why else ""), file=str(found.folder),
                        hint="give the folder of the kernel files, or widen --include")
