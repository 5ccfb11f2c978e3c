"""A config whose shared memory cannot fit the GPU, refused before LLVM optimizes its code.

Triton knows a kernel's shared memory once its LLVM stage has lowered the TTGIR (the module's `ttg.shared`), but
refuses the kernel only when it loads it (`OutOfResources`), after LLVM's O3 pass and ptxas ran. For the large
tiles and deep pipelines written for TileIR, compiled through PTX on a GPU with less shared memory, that is
12-17 s of one config (nearly all of it LLVM's optimization) spent on code that can never run here. The guard
reads the same number at the same point and raises the same `OutOfResources` (a subclass saying it was found
early) before LLVM's optimization starts; the autotuner and the harness treat it as Triton's own refusal. A
kernel that fits compiles exactly as without the guard, and Triton's caches stay shared.

`install()` is called once in a tool worker that compiles through PTX on a GPU; never in the user's program.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_current = threading.local()  # .check: the lowering in progress on this thread (None: no guard)


def _error_class() -> type[Exception]:
    from triton.runtime.errors import OutOfResources

    class SharedMemoryExceeded(OutOfResources):
        """Triton's OutOfResources for shared memory, raised by the tool's guard before LLVM's optimization."""

        def __str__(self) -> str:
            return f"{super().__str__()} (found before LLVM optimized the code)"

    return SharedMemoryExceeded


def _guarded_optimize(optimize: Callable[..., Any]) -> Callable[..., Any]:
    """LLVM's `optimize_module`, after the check of the lowering in progress on this thread (if any)."""

    def optimize_module(*args: Any, **kwargs: Any) -> Any:
        check = getattr(_current, "check", None)
        if check is not None:
            check()
        return optimize(*args, **kwargs)

    optimize_module.guarded = True  # type: ignore[attr-defined]
    return optimize_module


def guarded_stages(limit: Callable[[], int], earlier: Callable[..., Any] | None) -> Callable[..., Any]:
    """A `knobs.runtime.add_stages_inspection_hook`: the LLVM stage of a compile through PTX checks the module's
    shared memory (`ttg.shared`, set by the lowering) against `limit()` (asked the first time it is needed) before
    LLVM optimizes it; the hook set before it runs first. Called without arguments (Triton 3.7 and later key their
    caches by the hook), it adds nothing to the key: the code it lets through is the code Triton makes without it."""
    error = _error_class()

    def hook(*args: Any) -> Any:
        if not args:
            return earlier() if earlier is not None else ("", "")
        backend, stages, options, language, capability = args
        if earlier is not None:
            earlier(backend, stages, options, language, capability)
        if "llir" not in stages or "ptx" not in stages:
            return  # not a compile through PTX (TileIR, AMD): its own rules hold
        make_llir = stages["llir"]

        def lowered(src: Any, metadata: dict[str, Any]) -> Any:
            def check() -> None:
                shared = src.get_int_attr("ttg.shared")
                available = limit()
                if shared and available and shared > available:
                    raise error(shared, available, "shared memory")

            _current.check = check
            try:
                return make_llir(src, metadata)
            finally:
                _current.check = None

        stages["llir"] = lowered

    return hook


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
    """Put the guard on this process's Triton (the current GPU's limit unless `limit` is given); False where this
    Triton lacks the stages hook or LLVM's `optimize_module` (every config then compiles in full, as before)."""
    from triton import knobs

    try:
        from triton._C.libtriton import llvm
    except ImportError:
        return False
    runtime = getattr(knobs, "runtime", None)
    if runtime is None or not hasattr(runtime, "add_stages_inspection_hook") or \
            not callable(getattr(llvm, "optimize_module", None)):
        return False
    if not getattr(llvm.optimize_module, "guarded", False):
        llvm.optimize_module = _guarded_optimize(llvm.optimize_module)
    runtime.add_stages_inspection_hook = guarded_stages(limit or device_limit(), runtime.add_stages_inspection_hook)
    return True
