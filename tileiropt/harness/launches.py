"""Which kernels and autotuners a call launched, and which Triton backend compiled each kernel.

`LaunchRecorder` wraps the ``run`` method of every Triton kernel object bound in a module (an
instance attribute, removed afterwards), so a launch through ``kernel[grid](...)``, an
autotuner or a heuristics wrapper is seen. The backend comes from the compiled kernel that
``run`` returned (``metadata.target.backend``), else from the JIT function's caches
(``device_caches`` -> target); under TRITON_INTERPRET=1 it is "interpreter".
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from types import ModuleType
from typing import Any, Protocol

from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction

from tileiropt.harness.autotuners import JIT_TYPES, chain, function_name, kernel_objects

INTERPRETER = "interpreter"
_MISSING = object()


class _Runs(Protocol):
    """A kernel object or wrapper that launches through its `run` (JIT function, autotuner, heuristics, a
    package's wrapper): what `LaunchRecorder` wraps."""

    run: Callable[..., Any]


def _target_backend(target: object) -> str | None:
    """`GPUTarget.backend`, a dict's "backend", or a tuple's first item (older Triton)."""
    if target is None:
        return None
    backend = getattr(target, "backend", None)
    if backend is None and isinstance(target, dict):
        backend = target.get("backend")
    if backend is None and isinstance(target, (tuple, list)) and target and isinstance(target[0], str):
        backend = target[0]
    return str(backend) if backend else None


# Intermediate files by backend: TileIR's pipeline is ttir -> tileIR -> cubin; PTX's ttir -> ttgir -> llir -> ptx.
_STAGE_BACKENDS = {"tileIR": "tileir", "ttgir": "cuda", "ptx": "cuda", "llir": "cuda"}


def compiled_backend(compiled: object) -> str | None:
    """The backend that produced a compiled kernel: `CompiledKernel.metadata.target.backend`, else the stages it
    kept (`asm` keys), else the files of its cache folder (`<kernel>.tileIR` vs `.ttgir`/`.ptx`)."""
    metadata = getattr(compiled, "metadata", None)
    target = getattr(metadata, "target", None)
    if target is None and isinstance(metadata, dict):
        target = metadata.get("target")
    return _target_backend(target) or stage_backend(_stages(compiled))


def stage_backend(stages: set[str]) -> str | None:
    """"tileir" when a TileIR stage is among `stages` (asm keys or cache-file suffixes), "cuda" for PTX's."""
    found = {_STAGE_BACKENDS[s] for s in stages if s in _STAGE_BACKENDS}
    return "tileir" if "tileir" in found else ("cuda" if found else None)


def _stages(compiled: object) -> set[str]:
    asm = getattr(compiled, "asm", None)
    if isinstance(asm, dict) and asm:
        return set(asm)
    digest = getattr(compiled, "hash", None)
    if not isinstance(digest, str):
        return set()
    try:
        from triton.runtime.cache import get_cache_manager

        folder = getattr(get_cache_manager(digest), "cache_dir", None)
        return {name.rsplit(".", 1)[-1] for name in os.listdir(folder)} if folder else set()
    except Exception:  # no cache manager or folder in this Triton: the metadata is all there is
        return set()


def cached_backends(jit_function: JITFunction) -> set[str]:
    """Backends found in a JIT function's caches: the target of each device cache and the
    targets of the kernels compiled there. Empty when the Triton version keeps them elsewhere."""
    found: set[str] = set()
    caches = getattr(jit_function, "device_caches", None)
    if not isinstance(caches, dict):
        return found
    for entry in list(caches.values()):
        try:
            kernel_cache, target = entry[0], entry[2]
        except (TypeError, IndexError, KeyError):
            continue
        for kernel in list(getattr(kernel_cache, "values", lambda: [])()):
            backend = compiled_backend(kernel)
            if backend:
                found.add(backend)
        if not found:
            backend = _target_backend(target)
            if backend:
                found.add(backend)
    return found


_NOT_CONFIG = frozenset({"grid", "warmup"})
_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "occupancy")


def launch_config(kwargs: dict[str, Any], compiled: object) -> str:
    """The config a launch ran: its meta-parameters (keyword arguments: an autotuner's choice, a caller's constants)
    and the options the compiled kernel was built with (`BLOCK=128, num_warps=4, num_stages=3, num_ctas=1`)."""
    metadata = getattr(compiled, "metadata", None)
    options = {k: getattr(metadata, k) for k in _OPTIONS if getattr(metadata, k, None) is not None}
    meta = {k: v for k, v in kwargs.items() if k not in _NOT_CONFIG and k not in _OPTIONS
            and (v is None or isinstance(v, (bool, int, float, str)))}
    options.update({k: v for k, v in kwargs.items() if k in _OPTIONS and v is not None and k not in options})
    return ", ".join([f"{k}={v}" for k, v in sorted(meta.items())] + [f"{k}={options[k]}" for k in _OPTIONS
                                                                       if k in options])


_DEBUG = re.compile(r"^\s*(\.loc|\.file|//)")


def code_digest(compiled: object) -> str | None:
    """SHA-256 of a compiled kernel's PTX without what names its source file or lines (`.loc`, `.file`, comments,
    debug sections): the same kernel compiled from two files at other lines digests alike. None without PTX."""
    asm = getattr(compiled, "asm", None)
    ptx = asm.get("ptx") if isinstance(asm, dict) else None
    if not isinstance(ptx, str):
        return None
    ptx = ptx.split("\t.section\t.debug", 1)[0]
    lines = [line for line in ptx.splitlines() if line.strip() and not _DEBUG.match(line)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _chain(obj: object) -> list[object]:
    """The object and every wrapper below it (autotuner -> heuristics -> JIT function, package wrappers)."""
    return chain(obj)


class LaunchRecorder:
    """Context manager: records the autotuners (by module attribute name) and the kernels (by
    function name, with their compiling backend) that ran while it was active."""

    def __init__(self, module: ModuleType):
        self.module = module
        self.autotuners: set[str] = set()  # module attribute names of autotuners that ran
        self.kernels: dict[str, str] = {}  # kernel function name -> backend
        # (kernel name, its keyword arguments, the compiled kernel) of each launch that counts: of an autotuner's
        # run, only its last launch (the chosen config), not the ones it timed to choose
        self._ran: list[tuple[str, dict[str, Any], Any]] = []
        self._wrapped: list[tuple[Any, Any]] = []
        self.received: dict[str, set[str]] = {}  # kernel -> the launch options its JIT function was given

    @property
    def launched(self) -> dict[str, dict[str, Any]]:
        """Kernel function name -> what ran (Provenance.launched): every distinct config it ran at, and one digest
        over the PTX of every distinct compiled kernel (None when one has no PTX). Read once the call is over: the
        digests are never taken during a launch (an autotuner times its configs around them)."""
        by_name: dict[str, dict[int, tuple[dict[str, Any], Any]]] = {}
        for name, kwargs, kernel in self._ran:
            by_name.setdefault(name, {}).setdefault(id(kernel), (kwargs, kernel))
        found = {}
        for name, compiled in by_name.items():
            configs = sorted({launch_config(kwargs, kernel) for kwargs, kernel in compiled.values()})
            codes = sorted({str(code_digest(kernel)) for _, kernel in compiled.values()})
            code = None if "None" in codes else codes[0] if len(codes) == 1 else hashlib.sha256(
                "\n".join(codes).encode()).hexdigest()
            found[name] = {"config": " | ".join(configs), "code": code, "compiled": len(compiled)}
        return found

    def __enter__(self) -> LaunchRecorder:
        done: set[int] = set()
        for name, obj in kernel_objects(self.module).items():
            for item in _chain(obj):
                if id(item) in done or not hasattr(item, "run"):
                    continue
                done.add(id(item))
                self._wrap(item, name)
        return self

    def __exit__(self, *exc: object) -> None:
        for item, saved in reversed(self._wrapped):
            if saved is _MISSING:
                try:
                    del item.run
                except AttributeError:
                    pass
            else:
                item.run = saved
        self._wrapped.clear()

    def _wrap(self, item: _Runs, attribute: str) -> None:
        saved = vars(item).get("run", _MISSING) if hasattr(item, "__dict__") else _MISSING
        original: Callable[..., Any] = item.run
        is_autotuner = isinstance(item, Autotuner)

        def run(*args: object, **kwargs: object) -> Any:
            if is_autotuner:
                self.autotuners.add(attribute)
                first = len(self._ran)
                result = original(*args, **kwargs)
                del self._ran[first:-1]  # the configs it timed to choose: only its last launch ran for the caller
                return result
            if isinstance(item, JIT_TYPES):  # what reached the kernel, before any run drops a hint it rejects
                self.received.setdefault(function_name(item), set()).update(k for k in kwargs if k in _OPTIONS)
            result = original(*args, **kwargs)
            if isinstance(item, JIT_TYPES):  # wrappers' results are not compiled kernels
                name = function_name(item)
                self.kernels[name] = self._backend(item, result)
                if result is not None:  # what ran, kept as it is: described once the call is over
                    self._ran.append((name, dict(kwargs), result))
            return result

        try:
            item.run = run
        except (AttributeError, TypeError):
            return
        self._wrapped.append((item, saved))

    @staticmethod
    def _backend(jit_function: JITFunction, result: object) -> str:
        if os.environ.get("TRITON_INTERPRET") == "1" or type(jit_function).__name__ == "InterpretedFunction":
            return INTERPRETER
        backend = compiled_backend(result)
        if backend:
            return backend
        cached = cached_backends(jit_function)
        return ",".join(sorted(cached)) if cached else "unknown"

    def backend_summary(self) -> str | None:
        """The distinct backends that compiled the launched kernels, joined by ","."""
        backends = sorted({b for value in self.kernels.values() for b in value.split(",")})
        return ",".join(backends) if backends else None
