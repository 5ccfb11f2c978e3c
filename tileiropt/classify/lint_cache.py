"""classify remembers what it found in a file, as linters do: a file read again with the same bytes, the same local
modules it imports, the same rules, release, dtypes, tool and Triton gets its results from the cache, and a re-run of
an unchanged library reads only what changed.

The key of a file (`LintCache.key`) is the SHA-256 of: the file's path and bytes; the path and bytes of each module
of the file's own tree that it imports, and those they import (the IR check rebuilds JIT helpers from them); the
rule codes selected; whether the IR check runs and with which dtypes; the release as resolved (inherited tables
too); the tool's own sources (`engine.resume.tool_digest`); Triton's and torch's versions; the values of the
environment variables the file and those modules read by name (an `if` on one picks the definition analysed), but
for those the tool sets per process (`environment.SET_PER_PROCESS`): an `if` on `TRITON_INTERPRET` is never decided,
and the IR check always lowers with it off (`ir.interpreter_off`), so no result depends on it and the shell's value
neither splits nor mixes entries.
Entries live in the tool's cache folder (`cache.cache_dir()/classify`), one JSON file each; an unreadable entry is
a miss.
`TILEIROPT_NO_LINT_CACHE=1` turns the cache off.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tileiropt.cache import cache_dir
from tileiropt.classify.environment import SET_PER_PROCESS, names_read
from tileiropt.classify.modules import package_name_for
from tileiropt.classify.rules.base import Finding
from tileiropt.classify.source import read_regular_file
from tileiropt.errors import UserError
from tileiropt.output import dataclass_from_dict, write_atomic

if TYPE_CHECKING:
    from tileiropt.classify.classify import FileResult

OFF_ENV = "TILEIROPT_NO_LINT_CACHE"
_IMPORT = re.compile(r"^\s*(?:from\s+(\.*)([\w.]*)\s+import|import\s+([\w.]+))", re.MULTILINE)


class LintCache:
    """The results of files classified before, by key (see the module docstring)."""

    def __init__(self, folder: Path | None = None, context: dict[str, Any] | None = None):
        self.folder = folder if folder is not None else cache_dir() / "classify"
        self.enabled = os.environ.get(OFF_ENV) != "1"
        self.context = json.dumps(context or {}, sort_keys=True, default=str)
        self.hits = 0
        self.misses = 0

    def key(self, path: Path, data: bytes, codes: list[str]) -> str:
        digest = hashlib.sha256(self.context.encode())
        digest.update(" ".join(sorted(codes)).encode() + b"\0" + str(path).encode() + b"\0" + data)
        names = set(names_read(data.decode("utf-8", errors="replace")))
        for dependency in local_imports(path, data):
            file_digest, read = _file_digest(dependency)
            digest.update(b"\0" + str(dependency).encode() + b"\0" + file_digest.encode())
            names.update(read)
        for name in sorted(names - SET_PER_PROCESS):  # an `if` on the environment picks the definition analysed
            digest.update(f"\0${name}={os.environ.get(name)!r}".encode())
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any:
        """The `FileResult` stored under `key`, or None."""
        if not self.enabled:
            return None
        try:
            result = file_result(json.loads(self._entry(key).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError, KeyError):
            self.misses += 1
            return None
        self.hits += 1
        return result

    def put(self, key: str, result: FileResult) -> None:
        """Remember `result` under `key`; a file not read, or a lowering cut by its time limit, is not remembered
        (the next run may do better)."""
        if not self.enabled or result.status == "error" or any(
                "took longer than" in str((k.ir or {}).get("reason") or "") for k in result.kernels):
            return
        try:
            entry = self._entry(key)
            entry.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(entry, json.dumps(result.to_json()), "utf-8")
        except OSError:  # a read-only or full cache folder costs only the next run's time
            pass


MAX_IMPORTED = 200  # local modules followed per file (a package's whole tree at most)


def local_imports(path: Path, data: bytes) -> list[Path]:
    """The modules of the file's own tree (its folder and the packages above it) that it imports, and those they
    import in turn (the IR check follows helpers from module to module), found by their import statements without
    importing anything; what is not a file there (torch, triton) is left out."""
    found = _direct_imports(path, data)
    seen = {*found, path}
    for module in found:  # grows as it goes: breadth first over the tree
        if len(found) >= MAX_IMPORTED:
            break
        try:
            info = module.stat()
            more = _imports_of(str(module), info.st_size, info.st_mtime_ns)
        except (OSError, UserError):
            continue
        for imported in more:
            if imported not in seen:
                seen.add(imported)
                found.append(imported)
    return found[:MAX_IMPORTED]


def _file_digest(path: Path) -> tuple[str, tuple[str, ...]]:
    """SHA-256 of a file's bytes and the environment variables it reads (`environment.names_read`), once per run
    while it is unchanged; what it is when it cannot be read."""
    try:
        info = path.stat()
    except OSError as exc:
        return f"unreadable: {exc.strerror}", ()
    return _digest_of(str(path), info.st_size, info.st_mtime_ns)


@functools.lru_cache(maxsize=8192)
def _digest_of(path: str, size: int, mtime_ns: int) -> tuple[str, tuple[str, ...]]:
    try:
        data = read_regular_file(Path(path))
    except UserError as exc:  # a pipe, too large: what it is now is part of the key
        return exc.message, ()
    return hashlib.sha256(data).hexdigest(), tuple(names_read(data.decode("utf-8", errors="replace")))


@functools.lru_cache(maxsize=8192)
def _imports_of(path: str, size: int, mtime_ns: int) -> list[Path]:
    """`_direct_imports` of a module followed from another, once per run while it is unchanged (size, mtime)."""
    return _direct_imports(Path(path), read_regular_file(Path(path)))


def _direct_imports(path: Path, data: bytes) -> list[Path]:
    text = data.decode("utf-8", errors="replace")
    if "import" not in text:
        return []
    dotted, root = package_name_for(path)
    package = dotted.split(".") if dotted else []
    here = _real(str(path))
    found: list[Path] = []
    for dots, module, plain in _IMPORT.findall(text):
        name = module or plain
        if dots:
            if not package:
                continue
            keep = len(package) - len(dots) + (1 if path.name == "__init__.py" else 0)
            if keep < 1:
                continue
            parts = package[:keep] + (name.split(".") if name else [])
        else:
            parts = name.split(".")
        for candidate in _module_files(Path(root), parts):
            if _real(str(candidate)) != here and candidate not in found:
                found.append(candidate)
    return found


_real = functools.lru_cache(maxsize=65536)(os.path.realpath)  # a module's real path, once per run


def _module_files(root: Path, parts: Iterable[str]) -> list[Path]:
    return [Path(p) for p in _module_paths(str(root), tuple(parts))]


@functools.lru_cache(maxsize=65536)
def _module_paths(root: str, parts: tuple[str, ...]) -> tuple[str, ...]:
    """The files a dotted module may be under `root` (its `.py`, its package's `__init__.py`), once per run."""
    base = os.path.join(root, *parts)
    return tuple(p for p in (base + ".py", os.path.join(base, "__init__.py")) if os.path.isfile(p))


def file_result(data: dict[str, Any]) -> Any:
    """A `FileResult` from its JSON (`FileResult.to_json`)."""
    from tileiropt.classify.classify import Evidence, FileResult, KernelRecord

    kernels = []
    for raw in data["kernels"]:
        values = dict(raw)
        values["kernel_class"] = values.pop("class")
        values["evidence"] = [dataclass_from_dict(Evidence, e) for e in values["evidence"]]
        values["findings"] = [dataclass_from_dict(Finding, f) for f in values["findings"]]
        kernels.append(KernelRecord(**values))
    return FileResult(file=data["file"], status=data["status"], kernels=kernels, message=data.get("message"))
