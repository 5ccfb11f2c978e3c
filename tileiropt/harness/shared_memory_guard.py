"""A config whose shared memory cannot fit the GPU, refused before LLVM optimizes its code.

Triton knows a kernel's shared memory once its LLVM stage has lowered the TTGIR (the module's `ttg.shared`), but
refuses the kernel only when it loads it (`OutOfResources`), after LLVM's O3 pass and ptxas ran. For the large
tiles and deep pipelines written for TileIR, compiled through PTX on a GPU with less shared memory, that is
12-17 s of one config (nearly all of it LLVM's optimization) spent on code that can never run here. The guard
reads the same number at the same point and raises the same `OutOfResources` (a subclass saying it was found
early) before LLVM's optimization starts; the autotuner and the harness treat it as Triton's own refusal.

A refusal is remembered by the compile's hash (the key of Triton's cache), in the process and in a marker file
in Triton's cache folder, which the run's workers share: the next compile of that very kernel is refused at its
first stage, as Triton's cache would have failed its load at once. A kernel that fits compiles exactly as
without the guard. The guard wraps the CUDA backend's own stages (`make_ttir`, `make_llir`) and LLVM's
`optimize_module`; it sets no `knobs.runtime.add_stages_inspection_hook`, which Triton 3.7 and later fold into
every kernel's cache key. One difference stays: `triton.compile(...)` or `kernel.warmup(...)` of a kernel that
cannot fit raises here, where Triton returns a kernel that fails when loaded.

`install()` is called once in a tool worker that compiles through PTX on a GPU; never in the user's program.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

_current = threading.local()  # .check: the lowering in progress on this thread (None: no guard)
_refused: dict[str, int] = {}  # compile hash -> the shared memory it requires
MARKERS = "tileiropt-refused"  # the folder of refusals in Triton's cache folder: one file per compile hash


def _error_class() -> type[Exception]:
    from triton.runtime.errors import OutOfResources

    class SharedMemoryExceeded(OutOfResources):
        """Triton's OutOfResources for shared memory, raised by the tool's guard before LLVM's optimization."""

        def __str__(self) -> str:
            return f"{super().__str__()} (found before LLVM optimized the code)"

    return SharedMemoryExceeded


def _marker(digest: str) -> Path | None:
    """The refusal's file in Triton's cache folder, or None where no folder is known."""
    try:
        from triton import knobs

        folder = knobs.cache.dir
    except (ImportError, AttributeError):
        return None
    return Path(folder) / MARKERS / digest if folder and digest else None


def _remember(digest: str, required: int) -> None:
    _refused[digest] = required
    marker = _marker(digest)
    if marker is None:
        return
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        temporary = marker.with_name(f"{marker.name}.{os.getpid()}")
        temporary.write_text(str(required), encoding="utf-8")
        temporary.replace(marker)
    except OSError:
        pass  # remembered in this process only


def _known(digest: str) -> int | None:
    """The shared memory an earlier compile of this hash was refused for needing, or None."""
    if digest in _refused:
        return _refused[digest]
    marker = _marker(digest)
    try:
        return int(marker.read_text(encoding="utf-8")) if marker is not None else None
    except (OSError, ValueError):
        return None


class Guard:
    """The checks, around the CUDA backend's stages of this process, against the shared memory `limit()` gives
    (asked the first time it is needed)."""

    def __init__(self, limit: Callable[[], int]):
        self.limit = limit
        self.error = _error_class()

    def refuse_known(self, metadata: dict[str, Any]) -> None:
        """At the first stage: a compile refused before (here, or by another worker) is refused again at once."""
        digest = str(metadata.get("hash") or "")
        required = _known(digest) if digest else None
        if required is not None:
            available = self.limit()
            if available and required > available:
                raise self.error(required, available, "shared memory")

    def checked(self, src: Any, metadata: dict[str, Any]) -> Callable[[], None]:
        """The check run just before LLVM optimizes the lowered module `src`."""
        def check() -> None:
            shared = src.get_int_attr("ttg.shared")
            available = self.limit()
            if shared and available and shared > available:
                _remember(str(metadata.get("hash") or ""), shared)
                raise self.error(shared, available, "shared memory")

        return check


def _guarded_optimize(optimize: Callable[..., Any]) -> Callable[..., Any]:
    """LLVM's `optimize_module`, after the check of the lowering in progress on this thread (if any)."""

    def optimize_module(*args: Any, **kwargs: Any) -> Any:
        check = getattr(_current, "check", None)
        if check is not None:
            check()
        return optimize(*args, **kwargs)

    optimize_module.guarded = True  # type: ignore[attr-defined]
    return optimize_module


def _wrap_backend(backend_class: Any, guard: Guard) -> None:
    make_ttir, make_llir = backend_class.make_ttir, backend_class.make_llir

    def guarded_ttir(mod: Any, metadata: dict[str, Any], *rest: Any) -> Any:
        guard.refuse_known(metadata)
        return make_ttir(mod, metadata, *rest)

    def guarded_llir(self: Any, src: Any, metadata: dict[str, Any], *rest: Any) -> Any:
        before = getattr(_current, "check", None)  # a compile inside a compile keeps the outer one's check
        _current.check = guard.checked(src, metadata)
        try:
            return make_llir(self, src, metadata, *rest)
        finally:
            _current.check = before

    guarded_llir.guarded = True  # type: ignore[attr-defined]
    backend_class.make_ttir = staticmethod(guarded_ttir)  # Triton declares it static
    backend_class.make_llir = guarded_llir


def device_limit() -> Callable[[], int]:
    """The current GPU's shared memory per block, as Triton's loader reads it, asked once and on first use."""
    known: list[int] = []

    def limit() -> int:
        if not known:
            import torch
            from triton.runtime import driver

            known.append(int(driver.active.utils.get_device_properties(torch.cuda.current_device())["max_shared_mem"]))
        return known[0]

    return limit


def install(limit: Callable[[], int] | None = None) -> bool:
    """Put the guard on this process's CUDA backend (the current GPU's limit unless `limit` is given), once; False
    where this Triton lacks the stages or LLVM's `optimize_module` it wraps (every config then compiles in full)."""
    try:
        from triton._C.libtriton import llvm
        from triton.backends.nvidia.compiler import CUDABackend
    except ImportError:
        return False
    if not all(callable(getattr(owner, name, None)) for owner, name in (
            (llvm, "optimize_module"), (CUDABackend, "make_ttir"), (CUDABackend, "make_llir"))):
        return False
    if getattr(CUDABackend.make_llir, "guarded", False):
        return True
    if not getattr(llvm.optimize_module, "guarded", False):
        llvm.optimize_module = _guarded_optimize(llvm.optimize_module)
    _wrap_backend(CUDABackend, Guard(limit or device_limit()))
    return True
