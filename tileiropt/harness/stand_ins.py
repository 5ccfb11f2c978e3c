"""What a kernel file's own code asks of the machine, answered inside a worker.

Real kernel files do more than define kernels. Triton's tutorials query the active driver at import
(`DEVICE = triton.runtime.driver.active.get_active_torch_device()`, `driver.active.utils.
get_device_properties(...)`), branch on `torch.cuda.get_device_capability()`, launch a kernel compiled with
`kernel.warmup(...)`, test themselves at module level through an autotuner, and run their benchmark sweeps
(`benchmark.run(show_plots=True)`) when imported. Two groups of stand-ins answer that:

- `skip_module_benchmarks()`, in every worker: a `triton.testing.perf_report` sweep (`Mark.run`) is not run;
  each skipped call is remembered (`REACHED`, with the user's file and line) for the records.
- `install_interpreter_device()`, under the interpreter when no real driver is active: a CPU stand-in for
  Triton's active driver that describes an emulated sm_90 device (`EMULATED_DEVICE`), the same capability
  from `torch.cuda.get_device_capability()` (CPU torch raises there), `warmup()` returning a stand-in compiled
  kernel that launches through the interpreter, and autotuners with several configs running their first one
  (the interpreter cannot benchmark). `REACHED` names the stand-ins the user's code really reached, so every
  record says which answers were emulated.

None of these changes a kernel's arithmetic: they answer questions about the device, which only shape grids
and choose code paths.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType, ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from tileiropt.harness.exception_sites import exception_location

if TYPE_CHECKING:
    import triton.language as tl
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.interpreter import InterpretedFunction
    from triton.testing import Mark

# The device the interpreter's stand-in driver describes: an H100 SXM (sm_90), the GPU the PTX path of this
# tool is proven on. Device properties shape a kernel file's grids and code paths, never its results.
EMULATED_CAPABILITY = (9, 0)
EMULATED_DEVICE = {
    "name": "interpreter stand-in (emulated sm_90)",
    "multiprocessor_count": 132,
    "max_shared_mem": 232448,
    "max_num_regs": 65536,
    "warpSize": 32,
    "sm_clock_rate": 1980000,
    "mem_clock_rate": 2619000,
    "mem_bus_width": 5120,
}
# What `warmup()` reports for a kernel it did not compile (the interpreter has no registers or shared memory).
STAND_IN_REGISTERS = 32
STAND_IN_SHARED_BYTES = 1024

# What the user's code reached, by the file and line that asked: a skipped `Mark.run` ("benchmark") or a
# stand-in ("driver", "capability", "warmup", "first config").
REACHED: dict[str, set[tuple[str, int]]] = {}
# Bare top-level calls of a script that raised when a worker imported it: (file, line) -> (what was raised,
# where in the user's code, or None).
FAILED_CALLS: dict[tuple[str, int], tuple[str, str | None]] = {}
GUARDED_IMPORTS: set[str] = set()  # the scripts imported with their top-level calls guarded, by real path


_SKIP = ("/triton/", "/torch/", str(Path(__file__).resolve().parents[1]))


# What was reached since `begin()`, whatever earlier work of the worker reached before it: a record's note names
# the stand-ins its own files reached (at import, kept for the module's life) and those reached during its case.
_SINCE: set[str] = set()


def begin() -> None:
    """A new case starts in this worker: stand-ins reached by earlier cases' code no longer count for its notes."""
    _SINCE.clear()


def _reached(what: str) -> None:
    """Remember that the first frame outside triton, torch and this package reached `what`."""
    _SINCE.add(what)
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<") and not any(part in name for part in _SKIP):
            REACHED.setdefault(what, set()).add((os.path.realpath(name), frame.f_lineno))
            return
        frame = frame.f_back
    REACHED.setdefault(what, set()).add(("?", 0))


def module_call_failed(file: str, line: int, error: BaseException) -> None:
    """A bare call at a script's top level raised while a worker imported it (see `harness._GuardedLoader`);
    ``sys.exit()`` with status 0 or None is a clean end, not a failure."""
    if isinstance(error, SystemExit) and error.code in (0, None):
        return
    first = (str(error).strip().splitlines() or [""])[0][:120]
    what = f"{type(error).__name__}: {first}" if first else type(error).__name__
    FAILED_CALLS[(os.path.realpath(file), line)] = (what, exception_location(error))


def import_failed(file: str) -> None:
    """The import of `file` failed after all: its definitions were not used, so its failed calls are forgotten."""
    real = os.path.realpath(file)
    for key in [key for key in FAILED_CALLS if key[0] == real]:
        del FAILED_CALLS[key]


def raised_only_in(file: str, original: str) -> list[tuple[str, str | None]]:
    """(what, where) of `file`'s top-level calls that raised what `original`'s did not; empty unless the
    original was imported through the guarded loader in this worker too, so the two can be compared."""
    if os.path.realpath(original) not in GUARDED_IMPORTS:
        return []
    theirs = {what for what, _ in _failed(original)}
    return [(what, where) for what, where in _failed(file) if what not in theirs]


def _failed(file: str) -> list[tuple[str, str | None]]:
    real = os.path.realpath(file)
    return [failure for (f, _), failure in sorted(FAILED_CALLS.items()) if f == real]


def described(what: str, where: str | None) -> str:
    return f"{what} (at {where})" if where else what


def failed_calls(file: str) -> list[str]:
    """What `file`'s top-level calls raised, in line order."""
    return [described(what, where) for what, where in _failed(file)]


def note(scopes: list[str], own: list[str] | None = None) -> str:
    """One line for a record's reason: what code in `scopes` (files, or folders holding them) had skipped or
    emulated in this worker; "" when nothing. With `own` (the case's own files), a stand-in reached only elsewhere
    in `scopes` counts when it was reached since `begin()`: another kernel of the package reached it otherwise."""
    def inside(file: str, places: list[str]) -> bool:
        return any(file == place or file.startswith(place.rstrip("/") + "/") for place in places)

    def counts(what: str, where: set[tuple[str, int]]) -> bool:
        if own is not None and not any(inside(f, own) for f, _ in where) and what not in _SINCE:
            return False
        return any(inside(f, scopes) for f, _ in where)

    benchmarks = sorted(f"{Path(f).name}:{line}" for f, line in REACHED.get("benchmark", ()) if inside(f, scopes))
    used = sorted(what for what, where in REACHED.items() if what != "benchmark" and counts(what, where))
    parts = [f"the module's own call at {Path(f).name}:{line} raised {described(*failure)} (its definitions were "
             "used)" for (f, line), failure in sorted(FAILED_CALLS.items()) if inside(f, scopes)]
    if benchmarks:
        parts.append("module-level benchmark not run (" + ", ".join(benchmarks) + ")")
    if used:
        parts.append("interpreter stand-ins: " + ", ".join(used) + " (emulated sm_90 device)")
    return "; ".join(parts)


# --------------------------------------------------------------------------- benchmarks


def skip_module_benchmarks() -> None:
    """`triton.testing.Mark.run` (a `perf_report` sweep) returns None without running."""
    try:
        import triton.testing as testing
    except ImportError:  # pragma: no cover - triton is a dependency
        return
    mark = getattr(testing, "Mark", None)
    if mark is None or getattr(mark.run, "_tileiropt", False):
        return

    def run(self: Mark, *args: object, **kwargs: object) -> None:
        _reached("benchmark")
        return None

    run._tileiropt = True  # type: ignore[attr-defined]
    mark.run = run


# --------------------------------------------------------------------------- the interpreter's device


class _Utils:
    @staticmethod
    def get_device_properties(device: object = None) -> dict[str, Any]:
        _reached("driver")
        return dict(EMULATED_DEVICE)


class StandInDriver:
    """Answers the driver questions kernel files ask at import, for a CPU run under the interpreter."""

    utils = _Utils()

    @staticmethod
    def is_active() -> bool:
        return True

    def get_active_torch_device(self) -> Any:
        import torch

        _reached("driver")
        return torch.device("cpu")

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        _reached("driver")
        return GPUTarget("cuda", EMULATED_CAPABILITY[0] * 10 + EMULATED_CAPABILITY[1], 32)

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: object) -> None:
        return None

    def get_current_stream(self, device: object = None) -> int:
        return 0

    def get_device_interface(self) -> Any:
        raise RuntimeError("the interpreter has no device interface: this code needs a GPU")

    def get_benchmarker(self) -> Any:
        raise RuntimeError("the interpreter cannot benchmark: timing needs a GPU")

    def get_empty_cache_for_benchmark(self) -> Any:
        raise RuntimeError("the interpreter cannot benchmark: timing needs a GPU")


class StandInCompiledKernel:
    """What `kernel.warmup(...)` returns under the interpreter: metadata for the caller's grid arithmetic, and
    `kernel[grid](*args)` launching the interpreted kernel with the constexprs given to warmup."""

    def __init__(self, function: InterpretedFunction, options: dict[str, Any]):
        self.function = function
        self.options = options
        self.n_regs = STAND_IN_REGISTERS
        self.n_spills = 0
        self.n_max_threads = 1024
        self.metadata = SimpleNamespace(shared=STAND_IN_SHARED_BYTES, num_warps=options.get("num_warps", 4),
                                        num_stages=options.get("num_stages", 3), num_ctas=1,
                                        name=getattr(function, "__name__", "kernel"))
        self.name = self.metadata.name

    def _init_handles(self) -> None:
        return None

    def __getitem__(self, grid: object) -> Callable[..., Any]:
        def launch(*args: object, **kwargs: object) -> Any:
            names = list(getattr(self.function, "arg_names", []))
            given = set(names[:len(args)]) | set(kwargs)
            bound = {k: v for k, v in self.options.items() if k in names and k not in given}
            return self.function.run(*args, grid=grid, warmup=False, **bound, **kwargs)

        return launch


def _real_driver_active() -> bool:
    try:
        import triton

        triton.runtime.driver.active  # noqa: B018 - creating it is the test
        return True
    except Exception:
        return False


def install_interpreter_device() -> bool:
    """Install the interpreter's stand-ins (only under TRITON_INTERPRET=1). False when not needed."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    import torch
    import triton
    from triton.runtime.autotuner import Autotuner

    if not _real_driver_active():
        triton.runtime.driver.set_active(StandInDriver())
    if not torch.cuda.is_available() and not getattr(torch.cuda.get_device_capability, "_tileiropt", False):
        def get_device_capability(device: object = None) -> tuple[int, int]:
            _reached("capability")
            return EMULATED_CAPABILITY

        get_device_capability._tileiropt = True  # type: ignore[attr-defined]
        torch.cuda.get_device_capability = get_device_capability
    if not torch.cuda.is_available():
        _patch_cuda_queries(torch)
    _patch_warmup()
    _patch_autotuner(Autotuner)
    _patch_scalar_arguments()
    _patch_libdevice()
    return True


def _device_properties(device: object = None) -> SimpleNamespace:
    """`torch.cuda.get_device_properties(...)` of the emulated device (CPU torch raises there)."""
    from types import SimpleNamespace

    _reached("device properties")
    major, minor = EMULATED_CAPABILITY
    return SimpleNamespace(name=EMULATED_DEVICE["name"], major=major, minor=minor,
                           multi_processor_count=EMULATED_DEVICE["multiprocessor_count"],
                           total_memory=80 * 2**30, L2_cache_size=50 * 2**20, warp_size=EMULATED_DEVICE["warpSize"],
                           max_threads_per_multi_processor=2048,
                           regs_per_multiprocessor=EMULATED_DEVICE["max_num_regs"],
                           shared_memory_per_block_optin=EMULATED_DEVICE["max_shared_mem"])


def _patch_cuda_queries(torch: ModuleType) -> None:
    """Operator wrappers ask CUDA about the tensors' device before launching (`with torch.cuda.device(x.device.index)`,
    `get_device_properties(x.device).multi_processor_count`): with CPU tensors (index None) the device context is
    a no-op, as it is on a GPU for index None, and the properties are the emulated device's."""
    cuda = torch.cuda
    if getattr(cuda.get_device_properties, "_tileiropt", False):
        return
    _device_properties._tileiropt = True  # type: ignore[attr-defined]
    cuda.get_device_properties = _device_properties
    for name in ("_exchange_device", "_maybe_exchange_device"):
        original = getattr(cuda, name, None)
        if original is None:
            continue

        def exchange(device: int | None, _original: Callable[[int], int] = original) -> int:
            if device is None or (isinstance(device, int) and device < 0):
                _reached("device context")
                return -1
            return _original(device)

        setattr(cuda, name, exchange)


def _patch_scalar_arguments() -> None:
    """A Python float argument becomes an fp32 scalar tensor, as compiled Triton's launcher makes it (so
    `eps.to(tl.float32)` works); the interpreter would keep a Python float."""
    import triton.language as tl
    from triton.runtime import interpreter

    original = getattr(interpreter, "_implicit_cvt", None)
    if original is None or getattr(original, "_tileiropt", False):
        return

    def convert(arg: object) -> Any:
        if isinstance(arg, float):
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32)
        return original(arg)

    convert._tileiropt = True  # type: ignore[attr-defined]
    interpreter._implicit_cvt = convert


# libdevice functions the interpreter leaves as stubs returning None (compiled Triton maps them to the
# backend's libdevice): the same functions in numpy, in the argument's dtype.
_LIBDEVICE: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "rsqrt": lambda d: 1.0 / np.sqrt(d), "tanh": np.tanh, "sqrt": np.sqrt, "exp": np.exp,
    "exp2": np.exp2, "log": np.log, "log2": np.log2}


def _patch_libdevice() -> None:
    try:
        import triton.language as tl
        import triton.language.extra.libdevice as libdevice
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - a Triton without libdevice
        return
    for name, numpy_function in _LIBDEVICE.items():
        current = getattr(libdevice, name, None)
        if current is None or getattr(current, "_tileiropt", False):
            continue

        def function(x: tl.tensor | float, *rest: object, _numpy: Callable[[np.ndarray], np.ndarray] = numpy_function,
                     _name: str = name) -> Any:
            _reached(f"libdevice.{_name}")
            if not isinstance(x, tl.tensor):
                x = interpreter._implicit_cvt(x)
            data = x.handle.data
            out = _numpy(data).astype(data.dtype, copy=False)
            return tl.tensor(interpreter.TensorHandle(out, x.handle.dtype.scalar), x.type)

        function._tileiropt = True  # type: ignore[attr-defined]
        function.__name__ = name
        setattr(libdevice, name, function)


def _patch_warmup() -> None:
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover - very old Triton
        return
    original = InterpretedFunction.run
    if getattr(original, "_tileiropt", False):
        return

    @functools.wraps(original)
    def run(self: InterpretedFunction, *args: object, grid: object, warmup: bool, **kwargs: object) -> Any:
        if warmup:
            _reached("warmup")
            return StandInCompiledKernel(self, kwargs)
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    run._tileiropt = True  # type: ignore[attr-defined]
    InterpretedFunction.run = run


def _tuning_key(tuner: Autotuner, named: dict[str, object]) -> tuple[object, ...]:
    """The key Triton's autotuner caches its choice under: its `key` arguments' values and the tensors' dtypes."""
    bound = {k: v for k, v in named.items() if k in tuner.arg_names}
    return (*(bound[k] for k in getattr(tuner, "keys", ()) if k in bound),
            *(str(v.dtype) for v in bound.values() if hasattr(v, "dtype")))


def _reset_as_after_tuning(tuner: Autotuner, named: dict[str, object]) -> None:
    """What Triton's autotuner does to its `reset_to_zero` arguments after tuning a key, before the launch (zero
    them), done where the stand-in takes the first config instead of tuning: once per key, as the real one tunes
    once per key. A program that leaves such a buffer unzeroed for the autotuner gets the same sums as on a GPU."""
    from tileiropt.harness.autotuners import resets  # imports Triton, as `_patch_autotuner` does

    names = resets(tuner)
    if not names:
        return
    tuned: set[object] = vars(tuner).setdefault("_tileiropt_tuned_keys", set())
    try:
        key: object = _tuning_key(tuner, named)
        hash(key)
    except TypeError:  # a key value Triton could not cache by either: tuned every call
        key = object()
    if key in tuned:
        return
    tuned.add(key)
    for name in names:
        if hasattr(named.get(name), "zero_"):
            named[name].zero_()  # type: ignore[attr-defined]


def _patch_autotuner(autotuner_class: type[Autotuner]) -> None:
    # autotuners imports Triton, which this module imports only once a stand-in is installed
    from tileiropt.harness.autotuners import pinned

    original = autotuner_class.run
    if getattr(original, "_tileiropt", False):
        return

    @functools.wraps(original)
    def run(self: Autotuner, *args: object, **kwargs: object) -> Any:
        if len(self.configs) > 1:  # not pinned by validation: the interpreter cannot benchmark the others
            _reached("first config")
            positional = dict(zip(self.arg_names, args))
            prune = getattr(self, "early_config_prune", None)
            kept = prune(list(self.configs), positional, **kwargs) if prune else self.configs
            _reset_as_after_tuning(self, {**positional, **kwargs})
            with pinned(self, (kept or self.configs)[0]):
                return original(self, *args, **kwargs)
        return original(self, *args, **kwargs)

    run._tileiropt = True  # type: ignore[attr-defined]
    autotuner_class.run = run
