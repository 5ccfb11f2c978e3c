"""The recorder `capture` installs in the program it runs (through a `sitecustomize` on PYTHONPATH).

It wraps `JITFunction.run` and, under TRITON_INTERPRET=1, `InterpretedFunction.run` -- the point every
launch reaches, through `kernel[grid](...)`, an autotuner, heuristics or a package's wrapper -- and
for each launch of a kernel *defined in a target file* writes one JSON line: the kernel, every
argument (tensors as shape, strides, dtype, storage extent and, for small integer tensors, their
values; scalars and constexprs as values; host tensor descriptors with their base tensor), the launch
options and the config values the autotuner chose (they arrive as keyword arguments), the grid as
launched, and the wrapper in the target file that made the launch. Launches are deduplicated by
signature and capped per kernel; when every kernel of the targets has its fill, or the time budget
is spent, the program is ended (os._exit) so a benchmark sweep never runs on for minutes.

Configured by environment variables (see `capture.py`); nothing happens without them.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading
import time
from typing import Any

OUT_ENV = "TILEIROPT_CAPTURE_OUT"
FILES_ENV = "TILEIROPT_CAPTURE_FILES"
CAP_ENV = "TILEIROPT_CAPTURE_CAP"
KERNELS_ENV = "TILEIROPT_CAPTURE_KERNELS"  # kernels expected (name@file), to know when the fill is complete
BUDGET_ENV = "TILEIROPT_CAPTURE_BUDGET"
STAND_INS_ENV = "TILEIROPT_CAPTURE_STAND_INS"
QUIET_ENV = "TILEIROPT_CAPTURE_QUIET"  # seconds without a new signature, once every kernel has one
SMALL_VALUES = 4096  # integer tensors up to this many elements keep their values
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "occupancy", "enable_fp_fusion",
           "launch_cooperative_grid", "launch_pdl", "debug")


class Recorder:
    def __init__(self, out: str, files: set[str], cap: int, expected: set[str], budget: float, quiet: float = 10.0):
        self.out = open(out, "a", encoding="utf-8")  # noqa: SIM115 - open for the life of the program
        self.files = files
        self.cap = cap
        self.expected = expected
        self.deadline = time.monotonic() + budget
        self.quiet = quiet
        self.last_new = time.monotonic()
        self.signatures: dict[str, set[str]] = {}
        self.launches: dict[str, int] = {}
        self.lock = threading.Lock()

    # which launches count --------------------------------------------------------------------
    def target(self, jit: Any) -> tuple[str, str] | None:
        fn = getattr(jit, "fn", None)
        code = getattr(fn, "__code__", None)
        if code is None:
            return None
        path = os.path.realpath(code.co_filename)
        return (fn.__name__, path) if path in self.files else None

    def record(self, jit: Any, args: tuple, kwargs: dict, grid: Any) -> dict[str, Any] | None:
        """The launch's line (taken before it runs: an in-place kernel changes its inputs), or None."""
        found = self.target(jit)
        if found is None:
            return None
        name, path = found
        key = f"{name}@{path}"
        names = _arg_names(jit)
        bound = dict(zip(names, args))
        options = {k: _plain(v) for k, v in kwargs.items() if k in OPTIONS}
        others = {k: v for k, v in kwargs.items() if k not in OPTIONS}
        try:
            launched_grid = grid({**bound, **kwargs}) if callable(grid) else grid
            launched_grid = [int(g) for g in (tuple(launched_grid) + (1, 1, 1))[:3]]
        except Exception as exc:  # noqa: BLE001 - a grid we cannot evaluate makes the launch unreplayable
            launched_grid = None
            options["_grid_error"] = f"{type(exc).__name__}: {exc}"
        # the signature reads metadata only: a sweep's repeated launches never pay for encoding tensor values
        signature = json.dumps([_signature(v) for v in args] + sorted((k, _signature(v)) for k, v in others.items())
                               + [sorted(options.items()), launched_grid], sort_keys=True, default=str)
        with self.lock:
            self.launches[key] = self.launches.get(key, 0) + 1
            seen = self.signatures.setdefault(key, set())
            if signature in seen or len(seen) >= self.cap:
                return {"skip": True}
            seen.add(signature)
            self.last_new = time.monotonic()
        aliases: dict[int, str] = {}
        arguments = [{"name": arg_name, **_encode(value, aliases, arg_name)} for arg_name, value in bound.items()]
        constexprs = {k: _encode(v, aliases, k) for k, v in others.items()}
        return {"kernel": name, "file": path, "module": getattr(jit.fn, "__module__", None), "args": arguments,
                "constexprs": constexprs, "options": options, "grid": launched_grid,
                "caller": _caller(path), "launch": self.launches[key]}

    def commit(self, line: dict[str, Any] | None) -> None:
        """Write a launch that ran; end the program when the fill is complete or the budget spent."""
        if line is None:
            return
        with self.lock:
            if not line.get("skip"):
                self.out.write(json.dumps(line, default=str) + "\n")
                self.out.flush()
            self._maybe_stop()

    def _maybe_stop(self) -> None:
        """Stop when every kernel of the targets has its fill; or has at least one launch and no launch has
        brought a new signature for `quiet` seconds (a sweep that only repeats itself); or at the budget."""
        now = time.monotonic()
        counts = [len(self.signatures.get(k, ())) for k in self.expected]
        full = bool(counts) and all(c >= self.cap for c in counts)
        settled = bool(counts) and all(counts) and now - self.last_new > self.quiet
        if full or settled or now > self.deadline:
            why = "every kernel captured" if full else (
                f"every kernel captured, no new launch signature for {self.quiet:g} s" if settled
                else "time budget spent")
            self.out.write(json.dumps({"stopped": why, "launches": self.launches,
                                        "sources": program_sources()}) + "\n")
            self.out.flush()
            os._exit(0)

    def finish(self) -> None:
        with self.lock:
            self.out.write(json.dumps({"finished": True, "launches": self.launches,
                                       "sources": program_sources()}) + "\n")
            self.out.flush()


_VERSIONED = ("torch", "triton", "tileiropt")  # their versions (and the tool's source) are in the capture's key


def program_sources() -> list[str]:
    """Every Python file the program has imported, but the interpreter's own library and the packages whose
    versions the capture's key holds: its scripts, its tests and conftest, the user's packages, installed
    or not. A re-run reuses the capture only while none of them changed."""
    import sysconfig

    library = {os.path.realpath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib")}
    found = set()
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not path or name.split(".")[0] in _VERSIONED or name == "sitecustomize" or not path.endswith(".py"):
            continue  # (the recorder's own sitecustomize lives in a folder removed after the run)
        real = os.path.realpath(path)
        if any(real.startswith(root) and "site-packages" not in real[len(root):] for root in library):
            continue
        found.add(real)
    return sorted(found)


def _arg_names(jit: Any) -> list[str]:
    names = getattr(jit, "arg_names", None)
    if names:
        return list(names)
    return list(inspect.signature(jit.fn).parameters)


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _encode(value: Any, aliases: dict[int, str], name: str) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": _tensor(value, aliases, name)}
    if type(value).__name__ == "TensorDescriptor" and hasattr(value, "base") and hasattr(value, "block_shape"):
        return {"descriptor": {"base": _tensor(value.base, aliases, name), "shape": [int(s) for s in value.shape],
                               "strides": [int(s) for s in value.strides],
                               "block_shape": [int(s) for s in value.block_shape],
                               "padding": getattr(value, "padding", "zero")}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    if type(value).__module__.startswith("triton.language") and hasattr(value, "name"):
        return {"tl_dtype": str(value.name)}
    if isinstance(value, torch.dtype):
        return {"torch_dtype": str(value).removeprefix("torch.")}
    return {"opaque": f"{type(value).__name__}: {str(value)[:80]}"}


def _tensor(value: Any, aliases: dict[int, str], name: str) -> dict[str, Any]:
    import torch

    shape, stride = list(value.shape), list(value.stride())
    extent = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if value.numel() else 0
    data: dict[str, Any] = {"shape": shape, "stride": stride, "dtype": str(value.dtype).removeprefix("torch."),
                            "offset": 0, "extent": extent, "device": value.device.type}
    pointer = value.data_ptr()
    if pointer in aliases and value.numel():
        data["alias"] = aliases[pointer]
    elif value.numel():
        aliases[pointer] = name
    if not value.is_floating_point() and not value.is_complex() and value.numel():
        flat = value.detach()
        if flat.numel() <= SMALL_VALUES:
            values = flat.cpu().reshape(-1).tolist()  # read once: for the addresses test and as the values
            addresses = device_addresses(flat, values)
            if addresses is not None:
                data["addresses"] = addresses
            else:
                data["values"] = values
        else:
            data["range"] = [int(flat.min().item()), int(flat.max().item())]
    elif value.is_floating_point() and value.numel():
        finite = torch.isfinite(value.detach()).all().item()
        low = float(value.detach().float().min().item()) if finite else None
        data["nonnegative"] = bool(finite and low is not None and low >= 0)
    return data


ADDRESS_FLOOR = 1 << 32  # heap and device addresses lie above 4 GiB; indices and sizes below


def device_addresses(values: Any, listed: list[int] | None = None) -> dict[str, Any] | None:
    """For an int64 tensor holding the addresses of other tensors (`t.data_ptr()`: grouped GEMMs, MoE): the
    buffers they point into (dtype, elements) and, per value, (buffer, byte offset); a replay rebuilds the
    addresses into buffers of its own. None when the values are not all addresses (or zero) of live tensors.
    `listed`: the tensor's values, when the caller has read them already."""
    import torch

    if values.dtype not in (torch.int64, getattr(torch, "uint64", torch.int64)):
        return None
    flat = [int(v) for v in (listed if listed is not None else values.cpu().reshape(-1).tolist())]
    if not any(flat) or any(v and v < ADDRESS_FLOOR for v in flat):
        return None
    storages = _live_storages(values.device)
    buffers: list[dict[str, Any]] = []
    index: dict[int, int] = {}
    targets: list[list[int] | None] = []
    for value in flat:
        if value == 0:
            targets.append(None)
            continue
        found = next(((start, tensor) for start, end, tensor in storages if start <= value < end), None)
        if found is None:
            return None
        start, tensor = found
        if start not in index:
            index[start] = len(buffers)
            elements = tensor.untyped_storage().nbytes() // tensor.element_size()
            floating = tensor.is_floating_point()
            buffers.append({"dtype": str(tensor.dtype).removeprefix("torch."), "elements": elements,
                            "nonnegative": bool(floating and torch.isfinite(tensor).all().item()
                                                and tensor.detach().float().min().item() >= 0)})
        targets.append([index[start], value - start])
    return {"buffers": buffers, "targets": targets}


def _live_storages(device: Any) -> list[tuple[int, int, Any]]:
    """(start, end, a tensor viewing it) of the storage of every live tensor on `device`."""
    import gc
    import warnings

    import torch

    found: dict[int, tuple[int, int, Any]] = {}
    with warnings.catch_warnings():  # asking some objects their class warns (torch.distributed.reduce_op)
        warnings.simplefilter("ignore")
        tensors = [obj for obj in gc.get_objects() if isinstance(obj, torch.Tensor)]
    for obj in tensors:
        if obj.device == device and obj.numel():
            try:
                storage = obj.untyped_storage()
            except (RuntimeError, NotImplementedError):
                continue
            start = storage.data_ptr()
            found.setdefault(start, (start, start + storage.nbytes(), obj))
    return list(found.values())


def _signature(value: Any) -> Any:
    """What makes two launches different: a tensor's shape, strides and dtype (a descriptor's too, with its
    block shape), any other value itself."""
    base = getattr(value, "base", None) if type(value).__name__ == "TensorDescriptor" else None
    if base is not None:
        return [_signature(base), list(value.block_shape)]
    if hasattr(value, "shape") and hasattr(value, "stride") and hasattr(value, "dtype"):
        return [list(value.shape), list(value.stride()), str(value.dtype)]
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def _caller(path: str) -> dict[str, Any] | None:
    """The innermost function of the target file on the stack that is not a JIT function: the wrapper
    that launched the kernel, with its tensor arguments' shapes and dtypes and its other arguments."""
    import torch

    frame = sys._getframe(3)
    while frame is not None:
        code = frame.f_code
        if os.path.realpath(code.co_filename) == path and code.co_name != "<module>" and code.co_name != "<lambda>":
            count = code.co_argcount + code.co_kwonlyargcount
            params = code.co_varnames[:count]
            tensors, others = {}, {}
            for param in params:
                value = frame.f_locals.get(param)
                if isinstance(value, torch.Tensor):
                    tensors[param] = {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch.")}
                elif value is None or isinstance(value, (bool, int, float, str)):
                    others[param] = value
                elif isinstance(value, (tuple, list)) and len(value) <= 8 and all(
                        isinstance(v, (bool, int, float)) for v in value):
                    others[param] = {"sequence": list(value), "tuple": isinstance(value, tuple)}
            qualified = getattr(code, "co_qualname", code.co_name)
            method = "." in qualified and "<locals>" not in qualified and bool(params) and params[0] in (
                "self", "cls", "ctx")
            return {"function": qualified, "line": frame.f_lineno, "params": list(params), "tensors": tensors,
                    "others": others, "method": method}
        frame = frame.f_back
    return None


_RECORDER: Recorder | None = None


def _hook_compiled_kernels() -> None:
    """Launches of a precompiled kernel (`kernel = fn.warmup(...)`, then `kernel[grid](*args)`) bypass
    `JITFunction.run`: record them from `CompiledKernel.__getitem__` with the JIT function of its source."""
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:  # pragma: no cover - every supported Triton has it
        return
    original = CompiledKernel.__getitem__

    def getitem(self: Any, grid: Any) -> Any:
        runner = original(self, grid)
        jit = getattr(getattr(self, "src", None), "fn", None)
        if _RECORDER is None or jit is None or _RECORDER.target(jit) is None:
            return runner

        def recording(*args: Any, **kwargs: Any) -> Any:
            line = None
            try:
                names = _arg_names(jit)
                positional = list(args)
                if len(args) < len(names):  # constexprs were left out: take them from the source
                    constexprs = {}
                    for key, value in (getattr(self.src, "constexprs", None) or {}).items():
                        index = key[0] if isinstance(key, tuple) else names.index(key) if key in names else key
                        constexprs[index] = value
                    values = iter(args)
                    positional = [constexprs[i] if i in constexprs else next(values) for i in range(len(names))]
                metadata = self.metadata
                options = {k: getattr(metadata, k) for k in ("num_warps", "num_stages", "num_ctas")
                           if hasattr(metadata, k) and k not in names}  # a parameter of that name is the kernel's
                line = _RECORDER.record(jit, tuple(positional), options, tuple(grid))
            except Exception:  # noqa: BLE001 - the recorder must never break the user's program
                line = None
            result = runner(*args, **kwargs)
            _RECORDER.commit(line)
            return result

        return recording

    CompiledKernel.__getitem__ = getitem


def install() -> None:
    """Wrap Triton's launch path (called from the generated sitecustomize)."""
    global _RECORDER
    out = os.environ.get(OUT_ENV)
    if not out or _RECORDER is not None:
        return
    files = {os.path.realpath(p) for p in os.environ.get(FILES_ENV, "").split(os.pathsep) if p}
    expected = {k for k in os.environ.get(KERNELS_ENV, "").split(os.pathsep) if k}
    _RECORDER = Recorder(out, files, int(os.environ.get(CAP_ENV, "3")), expected,
                         float(os.environ.get(BUDGET_ENV, "120")), float(os.environ.get(QUIET_ENV, "10")))
    if os.environ.get(STAND_INS_ENV) == "1":
        # numpy, which the stand-ins import, costs the program's start-up 0.13 s: only interpreter runs need them
        from tileiropt.runtime import stand_ins

        stand_ins.skip_module_benchmarks()
        stand_ins.install_interpreter_device()
    from triton.runtime.jit import JITFunction

    classes = [JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:  # pragma: no cover - every supported Triton has it
        pass
    for cls in classes:
        original = cls.run

        def run(self: Any, *args: Any, grid: Any, warmup: Any, _original: Any = original, **kwargs: Any) -> Any:
            line = None
            if not warmup and _RECORDER is not None:
                try:
                    line = _RECORDER.record(self, args, kwargs, grid)
                except Exception:  # noqa: BLE001 - the recorder must never break the user's program
                    line = None
            result = _original(self, *args, grid=grid, warmup=warmup, **kwargs)
            if _RECORDER is not None:
                _RECORDER.commit(line)
            return result

        cls.run = run
    _hook_compiled_kernels()
    import atexit

    atexit.register(_RECORDER.finish)
