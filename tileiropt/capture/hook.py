"""The recorder `capture` installs in the program it runs (through a `sitecustomize` on PYTHONPATH).

It wraps `JITFunction.run` and, under TRITON_INTERPRET=1, `InterpretedFunction.run` -- the point every
launch reaches, through `kernel[grid](...)`, an autotuner, heuristics or a package's wrapper -- and
for each launch of a kernel *defined in a target file* writes one JSON line: the kernel, every
argument (tensors as shape, strides, dtype, storage extent and, for small integer tensors, their
values; scalars and constexprs as values; host tensor descriptors with their base tensor), the launch
options and the config values the autotuner chose (they arrive as keyword arguments), the grid Triton
launched, and the wrapper in the target file that made the launch. Launches of kernels defined elsewhere
(generated code, other packages) are counted, with where they were defined.

The program never notices it:
- nothing it does inside a launch calls user code or a torch operator (a library may implement `aten::min` or
  `aten::copy_` with its own Triton kernels, behind locks): tensor metadata is read from the tensor itself,
  values are copied from its memory (`ctypes` on the CPU, the CUDA driver's `cuMemcpyDtoH` on a GPU) and
  summarised with numpy; the grid is the one Triton itself computed (the recorder never calls the grid function);
- a launch made while the recorder works (on the same thread) is never recorded and never waits on it;
- once a kernel has its fill of distinct launches, a later launch costs a dictionary update.

Every process of the program that starts Python (pytest-xdist workers, subprocesses) records into a file of its
own (`launches-<pid>.jsonl` in the run's folder); the tool merges them. On SIGUSR1 a process writes every
thread's stack to `stacks-<pid>.txt` (faulthandler): how the tool shows where a stuck program was.

Configured by one settings file (JSON, its path in TILEIROPT_CAPTURE_SETTINGS): no size limit on the targets.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeGuard

from tileiropt.capture.tensor_memory import FLOATS, INTEGERS, device_addresses, nonnegative, tensor_array
from tileiropt.project.launch import Argument, CapturedLaunch, Descriptor, TensorArg

if TYPE_CHECKING:
    from types import FrameType

    import torch
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

SETTINGS_ENV = "TILEIROPT_CAPTURE_SETTINGS"
STACKS_SIGNAL = signal.SIGUSR1
SMALL_VALUES = 4096  # integer tensors up to this many elements keep their values
STATUS_EVERY_S = 0.5  # at most this often, a process writes its launch counts (the tool's progress line)
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "occupancy", "enable_fp_fusion",
           "launch_cooperative_grid", "launch_pdl", "debug")


def launches_file(folder: str, pid: int) -> str:
    return os.path.join(folder, f"launches-{pid}.jsonl")


def stacks_file(folder: str, pid: int) -> str:
    return os.path.join(folder, f"stacks-{pid}.txt")


class Recorder:
    """One per process. `before` a launch (its arguments, read before an in-place kernel changes them) and
    `after` it (the grid Triton computed, then the line is written)."""

    def __init__(self, folder: str, files: set[str], cap: int, expected: set[str], stop_when_captured: bool = False,
                 quiet: float = 10.0, long_quiet: float = 60.0):
        self.folder = folder
        self.out = open(launches_file(folder, os.getpid()), "a", encoding="utf-8")  # noqa: SIM115 - for the run
        self.files = files
        self.cap = cap
        self.expected = expected
        self.stop_when_captured = stop_when_captured  # a kernel file's own run: end once every kernel has its fill
        self.quiet = quiet
        self.long_quiet = long_quiet
        # id(JIT function) -> [key, a target's?, only counted (full, or defined elsewhere), launches, a weak reference
        # to the function (its entry goes when it does: its id may then be another's), the line it was defined at].
        # Counts are bumped without a lock: two threads launching one kernel at the same instant may count a launch
        # short (they are what the progress line shows)
        self.entries: dict[int, list[Any]] = {}
        self.signatures: dict[str, set[Any]] = {}
        self.full: set[str] = set()  # keys with their fill of distinct launches
        # launches of functions gone (kernels a test defined and dropped, generated modules freed): key -> count, and
        # for kernels defined elsewhere where they were defined
        self.retired: dict[str, int] = {}
        self.retired_lines: dict[str, int | None] = {}
        self.lock = threading.Lock()
        self.local = threading.local()
        self.last_new = time.monotonic()
        self.last_status = 0.0

    # which launches count --------------------------------------------------------------------
    def entry(self, jit: JITFunction | InterpretedFunction) -> list[Any]:
        """The JIT function's entry (see `entries`), made on its first launch."""
        known = self.entries.get(id(jit))
        if known is not None:
            return known
        fn = getattr(jit, "fn", None)
        code = getattr(fn, "__code__", None)
        name = getattr(fn, "__name__", "?")
        filename = code.co_filename if code is not None else "?"
        path = filename if filename.startswith("<") else os.path.realpath(filename)
        inside = path in self.files
        made = [f"{name}@{path}", inside, not inside, 0, None, code.co_firstlineno if code is not None else None]
        ident = id(jit)
        try:
            made[4] = weakref.ref(jit, lambda _ref: self._retire(ident))
        except TypeError:  # not weakly referable: kept alive, so its id stays its own
            made[4] = jit
        self.last_status = 0.0  # a kernel seen for the first time is in the next counts written (a cut keeps it)
        with self.lock:
            return self.entries.setdefault(id(jit), made)

    def _retire(self, ident: int) -> None:
        """A JIT function was freed: its launches stay counted under its key (no lock: this runs in the GC)."""
        entry = self.entries.pop(ident, None)
        if entry is not None:
            self.retired[entry[0]] = self.retired.get(entry[0], 0) + entry[3]
            if not entry[1]:
                self.retired_lines[entry[0]] = entry[5]

    def after_fork(self) -> None:
        """In a child forked from the program (multiprocessing): a launch file, a lock and counts of its own."""
        self.lock = threading.Lock()
        self.local = threading.local()
        self.out = open(launches_file(self.folder, os.getpid()), "a", encoding="utf-8")  # noqa: SIM115
        self.retired, self.retired_lines = {}, {}
        for entry in self.entries.values():
            entry[3] = 0
        _register_stacks(self.folder)

    def busy(self) -> bool:
        return getattr(self.local, "busy", False)

    def before(self, jit: JITFunction | InterpretedFunction, args: tuple, kwargs: dict) -> CapturedLaunch | None:
        """The launch's line when it is a new distinct launch of a target kernel (None otherwise): the counts
        first, cheaply; the arguments only for a launch not seen yet."""
        entry = self.entry(jit)
        entry[3] += 1
        if entry[2]:
            return None
        if entry[0] in self.full:  # another function object of the same kernel filled it
            entry[2] = True
            return None
        self.local.busy = True
        try:
            with _no_torch_function():
                return self._new_launch(jit, entry, args, kwargs)
        finally:
            self.local.busy = False

    def _new_launch(self, jit: JITFunction | InterpretedFunction, entry: list[Any], args: tuple,
                    kwargs: dict) -> CapturedLaunch | None:
        key = entry[0]
        name, path = key.rsplit("@", 1)
        names = _arg_names(jit)
        bound = dict(zip(names, args))
        options = {k: _plain(v) for k, v in kwargs.items() if k in OPTIONS}
        others = {k: v for k, v in kwargs.items() if k not in OPTIONS}
        # the signature reads metadata only: a sweep's repeated launches never pay for reading tensor values
        signature = (tuple(_signature(v) for v in args), tuple(sorted((k, _signature(v)) for k, v in others.items())),
                     tuple(sorted(options.items())))
        with self.lock:
            seen = self.signatures.setdefault(key, set())
            if signature in seen or len(seen) >= self.cap:
                return None
            seen.add(signature)
        try:
            aliases: dict[int, str] = {}
            arguments = tuple(_encode(value, aliases, arg_name) for arg_name, value in bound.items())
            constexprs = tuple(_encode(v, aliases, k) for k, v in others.items())
        except Exception:
            with self.lock:  # not recorded: a later launch of the same signature may be
                seen.discard(signature)
            raise
        with self.lock:
            if len(seen) >= self.cap:
                self.full.add(key)
                entry[2] = True
            self.last_new = time.monotonic()
        module = getattr(jit.fn, "__module__", None)
        return CapturedLaunch(kernel=name, file=path, module=module, args=arguments,
                              constexprs=constexprs, options=options, signature=repr(signature),
                              caller=_caller(path), ordinal=entry[3], bare_packages=bare_packages(module, path))

    def after(self, line: CapturedLaunch | None, grid: object) -> None:
        """Write a launch that ran, with the grid Triton launched; now and then the counts; in a kernel file's own
        run, end the program once every kernel has its fill."""
        now = time.monotonic()
        if line is None and now - self.last_status < STATUS_EVERY_S and not self.stop_when_captured:
            return
        self.local.busy = True
        try:
            with self.lock:
                if line is not None:
                    self.out.write(json.dumps(replace(line, grid=_grid(grid)).to_json(), default=str) + "\n")
                if now - self.last_status >= STATUS_EVERY_S:
                    self.last_status = now
                    self.out.write(json.dumps({"status": self._counts()}) + "\n")
                self.out.flush()
                if self.stop_when_captured:
                    self._maybe_stop(now)
        finally:
            self.local.busy = False

    def _counts(self) -> dict[str, Any]:
        """Launches of the targets' kernels by key; kernels defined elsewhere with where and their launches."""
        launches: dict[str, int] = {k: n for k, n in self.retired.items() if k not in self.retired_lines}
        outside: dict[str, dict[str, Any]] = {}
        for key, line in list(self.retired_lines.items()):
            name, path = key.rsplit("@", 1)
            outside[key] = {"kernel": name, "file": path, "line": line, "launches": self.retired.get(key, 0)}
        for key, inside, _, count, _, line in list(self.entries.values()):
            if inside:
                launches[key] = launches.get(key, 0) + count
            else:
                name, path = key.rsplit("@", 1)
                item = outside.setdefault(key, {"kernel": name, "file": path, "line": line, "launches": 0})
                item["launches"] += count
        return {"launches": launches, "outside": outside}

    def _maybe_stop(self, now: float) -> None:
        """Stop when every kernel of the targets has its fill; or has at least one launch and no launch has
        brought a new signature for `quiet` seconds (a sweep that only repeats itself); or something was launched
        and nothing new came for `long_quiet` seconds (a benchmark repeating what it launched)."""
        counts = [len(self.signatures.get(k, ())) for k in self.expected]
        full = bool(counts) and all(c >= self.cap for c in counts)
        settled = bool(counts) and all(counts) and now - self.last_new > self.quiet
        repeating = bool(self.signatures) and now - self.last_new > self.long_quiet
        if full or settled or repeating:
            why = "every kernel captured" if full else (
                f"every kernel captured, no new launch signature for {self.quiet:g} s" if settled
                else f"no new launch signature for {self.long_quiet:g} s")
            self.out.write(json.dumps({"stopped": why, **self._counts(), "sources": program_sources()}) + "\n")
            self.out.flush()
            os._exit(0)

    def finish(self) -> None:
        with self.lock:
            self.out.write(json.dumps({"finished": True, **self._counts(), "sources": program_sources()}) + "\n")
            self.out.flush()


@contextlib.contextmanager
def _no_torch_function() -> Any:
    """Tensor subclasses' `__torch_function__` off while the recorder reads tensors: reading a shape never runs
    user code."""
    torch = sys.modules.get("torch")
    disable = getattr(getattr(torch, "_C", None), "DisableTorchFunctionSubclass", None)
    if disable is None:
        yield
        return
    with disable():
        yield


_VERSIONED = ("torch", "triton", "tileiropt")  # their versions (and the tool's source) are in the capture's key


def program_sources() -> list[str]:
    """Every Python file the program has imported, but the interpreter's own library and the packages whose
    versions the capture's key holds: its scripts, its tests and conftest, the user's packages, installed
    or not. A re-run reuses the capture only while none of them changed. Read from each module's own
    dictionary: a module's `__getattr__` is never called."""
    import sysconfig

    library = {os.path.realpath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib")}
    found = set()
    for name, module in list(sys.modules.items()):
        try:
            path = vars(module).get("__file__")
        except TypeError:  # not a module (a package may put any object in sys.modules)
            continue
        if not isinstance(path, str) or name.split(".")[0] in _VERSIONED or name == "sitecustomize" \
                or not path.endswith(".py"):
            continue  # (the recorder's own sitecustomize lives in a folder removed after the run)
        real = os.path.realpath(path)
        if any(real.startswith(root) and "site-packages" not in real[len(root):] for root in library):
            continue
        found.add(real)
    return sorted(found)


def bare_packages(module: str | None, path: str) -> tuple[str, ...]:
    """The parent packages of `module` that this program holds bare: a module object in `sys.modules` whose
    `__init__.py` (there on disk) never ran, set there by the program to import a package's Triton ops without
    what its `__init__` imports."""
    if not module or "." not in module:
        return ()
    parts = module.split(".")
    root = os.path.realpath(path)
    for _ in parts:
        root = os.path.dirname(root)
    found = []
    for depth in range(1, len(parts)):
        name = ".".join(parts[:depth])
        held = sys.modules.get(name)
        if held is not None and getattr(held, "__file__", None) is None and \
                os.path.isfile(os.path.join(root, *parts[:depth], "__init__.py")):
            found.append(name)
    return tuple(found)


def _arg_names(jit: JITFunction | InterpretedFunction) -> list[str]:
    names = getattr(jit, "arg_names", None)
    if names:
        return list(names)
    return list(inspect.signature(jit.fn).parameters)


def _plain(value: object) -> bool | int | float | str | None:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return _opaque(value)


def _opaque(value: object) -> str:
    """A value's description without calling its `__str__`/`__repr__` (user code), but for Triton's own types."""
    kind = type(value)
    if kind.__module__.startswith("triton"):
        return str(value)
    return f"<{kind.__module__}.{kind.__qualname__}>"


def _grid(grid: Any) -> tuple[int, ...] | None:
    try:
        return tuple(int(g) for g in (tuple(grid) + (1, 1, 1))[:3])
    except Exception:  # noqa: BLE001 - a grid that is not a tuple of ints: the launch is not replayable
        return None


def _is_tensor(value: object) -> TypeGuard[torch.Tensor]:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _encode(value: Any, aliases: dict[int, str], name: str) -> Argument:
    if _is_tensor(value):
        return Argument(name, "tensor", tensor=_tensor(value, aliases, name))
    if type(value).__name__ == "TensorDescriptor" and hasattr(value, "base") and hasattr(value, "block_shape"):
        return Argument(name, "descriptor", descriptor=Descriptor(
            base=_tensor(value.base, aliases, name), shape=tuple(int(s) for s in value.shape),
            strides=tuple(int(s) for s in value.strides), block_shape=tuple(int(s) for s in value.block_shape),
            padding=getattr(value, "padding", "zero")))
    if value is None or isinstance(value, (bool, int, float, str)):
        return Argument(name, "value", value=value)
    if type(value).__module__.startswith("triton.language") and hasattr(value, "name"):
        return Argument(name, "tl_dtype", value=str(value.name))
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        return Argument(name, "torch_dtype", value=str(value).removeprefix("torch."))
    return Argument(name, "opaque", value=_opaque(value))


def _tensor(value: torch.Tensor, aliases: dict[int, str], name: str) -> TensorArg:
    shape, stride = tuple(int(s) for s in value.shape), tuple(int(s) for s in value.stride())
    numel = 1
    for size in shape:
        numel *= size
    extent = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if numel else 0
    dtype = str(value.dtype).removeprefix("torch.")
    data = TensorArg(shape=shape, stride=stride, dtype=dtype, extent=extent, device=value.device.type)
    pointer = value.data_ptr()
    if pointer in aliases and numel:
        data = replace(data, alias=aliases[pointer])
    elif numel:
        aliases[pointer] = name
    if not numel:
        return data
    if dtype in INTEGERS:
        array = tensor_array(value)
        if array is None:
            return replace(data, unread=True)  # too large, or on a device the recorder cannot read: no range known
        if array.size <= SMALL_VALUES:
            values = tuple(int(v) for v in array.reshape(-1).tolist())  # read once: the addresses test, the values
            addresses = device_addresses(value, list(values))
            return replace(data, addresses=addresses) if addresses is not None else replace(data, values=values)
        return replace(data, range=(int(array.min()), int(array.max())))
    if dtype in FLOATS:
        return replace(data, nonnegative=nonnegative(value))
    return data


def _signature(value: Any) -> Any:
    """What makes two launches different: a tensor's shape, strides and dtype (a descriptor's too, with its
    block shape), any other value itself (hashable)."""
    base = getattr(value, "base", None) if type(value).__name__ == "TensorDescriptor" else None
    if base is not None:
        return (_signature(base), tuple(value.block_shape))
    if _is_tensor(value):
        return (tuple(value.shape), tuple(value.stride()), str(value.dtype))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return tuple(_signature(v) for v in value)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        return str(value)
    return _opaque(value)


def _caller(path: str) -> dict[str, Any] | None:
    """The innermost function of the target file on the stack that is not a JIT function: the wrapper
    that launched the kernel, with its tensor arguments' shapes and dtypes and its other arguments."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if os.path.realpath(code.co_filename) == path and code.co_name != "<module>" and code.co_name != "<lambda>":
            count = code.co_argcount + code.co_kwonlyargcount
            params = code.co_varnames[:count]
            tensors: dict[str, dict[str, Any]] = {}
            others: dict[str, Any] = {}
            for param in params:
                value: Any = frame.f_locals.get(param)  # any local, None included
                if _is_tensor(value):
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


def _register_stacks(folder: str) -> None:
    """On STACKS_SIGNAL, every thread's stack goes to this process's stacks file (faulthandler)."""
    import faulthandler

    stacks = open(stacks_file(folder, os.getpid()), "w", encoding="utf-8")  # noqa: SIM115 - for the process
    faulthandler.register(STACKS_SIGNAL, file=stacks, all_threads=True, chain=False)


class _GridSpy:
    """The launch's grid function, called by Triton as always; keeps what it returned (the recorder never calls
    the user's grid function itself)."""

    __slots__ = ("grid", "seen")
    grid: Callable[[dict[str, Any]], object]
    seen: object

    def __init__(self, grid: Callable[[dict[str, Any]], object]):
        self.grid, self.seen = grid, None

    def __call__(self, meta: dict[str, Any]) -> object:
        self.seen = self.grid(meta)
        return self.seen


def _recorded(recorder: Recorder, jit: JITFunction | InterpretedFunction, args: tuple, kwargs: dict, grid: object,
              launch: Callable[[object], Any]) -> Any:
    """Run `launch(grid)` with the recorder around it: never raising from the recorder's own work."""
    try:
        line = recorder.before(jit, args, kwargs)
    except Exception:  # noqa: BLE001 - the recorder must never break the user's program
        recorder.local.busy = False
        line = None
    spy = _GridSpy(grid) if line is not None and callable(grid) else None
    result = launch(spy if spy is not None else grid)
    try:
        recorder.after(line, spy.seen if spy is not None else grid)
    except Exception:  # noqa: BLE001
        recorder.local.busy = False
    return result


def _hook_compiled_kernels() -> None:
    """Launches of a precompiled kernel (`kernel = fn.warmup(...)`, then `kernel[grid](*args)`) bypass
    `JITFunction.run`: record them from `CompiledKernel.__getitem__` with the JIT function of its source."""
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:  # pragma: no cover - every supported Triton has it
        return
    original = CompiledKernel.__getitem__

    def getitem(self: CompiledKernel, grid: Sequence[int]) -> Any:
        runner = original(self, grid)
        jit = getattr(getattr(self, "src", None), "fn", None)
        recorder = _RECORDER
        if recorder is None or jit is None or recorder.busy():
            return runner

        def recording(*args: object, **kwargs: object) -> Any:
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
                launched_grid = tuple(grid)
            except Exception:  # noqa: BLE001 - not recordable: the user's launch runs as it would
                return runner(*args, **kwargs)
            return _recorded(recorder, jit, tuple(positional), options, launched_grid,
                             lambda _grid: runner(*args, **kwargs))

        return recording

    CompiledKernel.__getitem__ = getitem


def install() -> None:
    """Wrap Triton's launch path (called from the generated sitecustomize)."""
    global _RECORDER
    path = os.environ.get(SETTINGS_ENV)
    if not path or _RECORDER is not None:
        return
    with open(path, encoding="utf-8") as handle:
        settings = json.load(handle)
    _RECORDER = Recorder(settings["folder"], set(settings["files"]), int(settings["cap"]), set(settings["expected"]),
                         bool(settings["stop_when_captured"]), float(settings["quiet"]),
                         float(settings["long_quiet"]))
    _register_stacks(settings["folder"])
    os.register_at_fork(after_in_child=_RECORDER.after_fork)
    if settings.get("stand_ins"):
        # numpy, which the stand-ins import, costs the program's start-up 0.13 s: only interpreter runs need them
        from tileiropt.harness import stand_ins

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

        def run(self: JITFunction | InterpretedFunction, *args: object, grid: object, warmup: bool,
                _original: Callable[..., Any] = original, **kwargs: object) -> Any:
            recorder = _RECORDER
            if warmup or recorder is None or recorder.busy():
                return _original(self, *args, grid=grid, warmup=warmup, **kwargs)
            entry = recorder.entries.get(id(self))
            if entry is not None and entry[2]:  # a kernel with its launches (or defined elsewhere): counted, no more
                entry[3] += 1
                if time.monotonic() - recorder.last_status >= STATUS_EVERY_S:
                    try:
                        recorder.after(None, None)
                    except Exception:  # noqa: BLE001 - the recorder must never break the user's program
                        recorder.local.busy = False
                return _original(self, *args, grid=grid, warmup=warmup, **kwargs)
            return _recorded(recorder, self, args, kwargs, grid,
                             lambda launched: _original(self, *args, grid=launched, warmup=warmup, **kwargs))

        cls.run = run
    _hook_compiled_kernels()
    import atexit

    atexit.register(_RECORDER.finish)
