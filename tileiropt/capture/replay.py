"""Replay a captured launch: fresh seeded inputs with the captured shapes, strides and dtypes, and one launch of
what reached Triton's JIT launch, again, on the innermost JIT function (`launcher`), below every package wrapper.

Integer tensors keep the captured values when there were few of them, else take values in the captured range;
float tensors are seeded normal values (uniform in [0, 1) when every captured value was non-negative, say a
variance).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any

from tileiropt.errors import PINNING_ERROR
from tileiropt.harness.autotuners import (
    JIT_TYPES,
    autotuners,
    chain,
    function_name,
    innermost,
    kernel_objects,
    resets,
)
from tileiropt.harness.gate import twin_names
from tileiropt.harness.harness import HarnessError
from tileiropt.harness.launch_hints import launch_hints
from tileiropt.harness.tileir_surface import tileir_code_on
from tileiropt.project.launch import Argument, CapturedLaunch, TensorArg
from tileiropt.schema import Cause

LaunchCall = Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], Any]
OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _tensor_specs(launch: CapturedLaunch) -> list[tuple[str, TensorArg]]:
    """(input name, tensor) of every tensor the launch takes, aliases excluded, then the buffers its address
    tensors point into (`<name>@<i>`: what a grouped kernel reads and writes through them)."""
    found = [(name, tensor) for name, tensor in launch.tensors().items() if tensor.alias is None]
    for name, tensor in list(found):
        for i, buffer in enumerate(tensor.addresses.buffers if tensor.addresses else ()):
            elements = max(buffer.elements, 1)
            found.append((f"{name}@{i}", TensorArg(shape=(elements,), stride=(1,), extent=elements,
                                                   dtype=buffer.dtype, nonnegative=buffer.nonnegative)))
    return found


def point_addresses(launch: CapturedLaunch, inputs: Mapping[str, Any]) -> None:
    """Fill each address tensor with the addresses of this call's own buffers (`<name>@<i>`, at the captured
    byte offsets): inputs are cloned before every call, and each clone must point into its own buffers."""
    import torch

    for name, tensor in _tensor_specs(launch):
        addresses = tensor.addresses
        if not addresses or name not in inputs:
            continue
        values = [0 if target is None else inputs[f"{name}@{target[0]}"].data_ptr() + target[1]
                  for target in addresses.targets]
        target = inputs[name]
        target.copy_(torch.tensor(values, dtype=torch.int64).to(target.device).view(target.dtype)
                     .reshape(target.shape))


def build_inputs(launch: CapturedLaunch, seed: int, device: str) -> dict[str, Any]:
    """Seeded tensors for the launch, by argument name, laid out with the captured strides. The values are drawn on
    the CPU, so every device gets the same ones; a worker keeps the last launches' drawn storages
    (`DRAWN`), so the next case or row of the same launch and seed only copies them to its device. A launch over
    `ON_DEVICE_BYTES` is drawn on its device, by that device's generator, and not kept: drawing 6 GB on the CPU
    takes 25 s, on a GPU a few milliseconds (its values are then the same for every case and row on that kind of
    device, which is what a comparison needs: both sides of it run there)."""
    import torch

    inputs: dict[str, Any] = {}
    on_device = drawn_bytes(launch) > ON_DEVICE_BYTES
    drawn = draw(launch, seed, device) if on_device else DRAWN.storages(launch, seed)
    for name, spec, storage in drawn:
        dtype = storage.dtype
        placed = storage if on_device else storage.to(device=device, copy=True)  # its own: a kernel writes into it
        tensor = torch.as_strided(placed, spec.shape, spec.stride, 0)
        if spec.values is not None:
            tensor.copy_(torch.tensor(spec.values, dtype=dtype).reshape(spec.shape))
        inputs[name] = tensor
    point_addresses(launch, inputs)
    return inputs


ON_DEVICE_BYTES = 256 << 20


def drawn_bytes(launch: CapturedLaunch) -> int:
    """The bytes of the storages `draw` would make for the launch (its tensors' extents in their dtypes)."""
    import torch

    total = 0
    for _, spec in _tensor_specs(launch):
        dtype = getattr(torch, spec.dtype, None)
        size = dtype.itemsize if isinstance(dtype, torch.dtype) else 8
        total += max(spec.extent, 1) * size
    return total


class DrawnStorages:
    """The seeded storages of the last launches this worker built inputs for, on the CPU in their dtypes, up to
    `MAX_BYTES` (a launch of larger tensors is drawn again each time). Drawing a normal float32 value costs about
    5 ns on the CPU, so a layer norm's 1151x8192 launch takes 0.1-0.2 s to draw, and its rows and cases draw
    it again and again otherwise."""

    MAX_BYTES = 1 << 30
    KEPT = 2

    def __init__(self) -> None:
        self.kept: dict[str, list[tuple[str, TensorArg, Any]]] = {}

    def storages(self, launch: CapturedLaunch, seed: int) -> list[tuple[str, TensorArg, Any]]:
        key = json.dumps([launch.to_json(), seed], sort_keys=True, default=str)
        found = self.kept.pop(key, None)
        if found is None:
            found = draw(launch, seed)
            if sum(storage.nbytes for _, _, storage in found) > self.MAX_BYTES:
                return found
        self.kept[key] = found  # the newest last
        while len(self.kept) > self.KEPT:
            del self.kept[next(iter(self.kept))]
        return found


def draw(launch: CapturedLaunch, seed: int, device: str = "cpu") -> list[tuple[str, TensorArg, Any]]:
    """(input name, its description, its storage on `device` in its dtype), drawn from one generator of that
    device in order."""
    import torch

    generator = torch.Generator(device=device).manual_seed(seed)
    drawn = []
    for name, spec in _tensor_specs(launch):
        dtype = getattr(torch, spec.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise HarnessError(f"argument {name!r} has dtype {spec.dtype!r}, which this torch does not know",
                               Cause.TOOL)
        extent = max(spec.extent, 1)
        if dtype.is_floating_point:
            # on the CPU drawn as float32, then cast (the values every kept launch has had); on a device in the
            # dtype itself where torch draws it, so a launch of gigabytes needs no float32 copy beside it
            drawn_as = dtype if device != "cpu" and spec.dtype in NATIVE_DRAWS else torch.float32
            if spec.nonnegative:
                storage = torch.rand(extent, generator=generator, dtype=drawn_as, device=device)
            else:
                storage = torch.randn(extent, generator=generator, dtype=drawn_as, device=device)
        elif dtype == torch.bool:
            storage = torch.randint(0, 2, (extent,), generator=generator, device=device).bool()
        else:
            low, high = spec.range or (0, 1)
            storage = torch.randint(low, high + 1, (extent,), generator=generator, dtype=torch.int64,
                                    device=device)
        drawn.append((name, spec, storage.to(dtype=dtype)))
    return drawn


DRAWN = DrawnStorages()
NATIVE_DRAWS = {"float16", "bfloat16", "float32", "float64"}  # the float dtypes torch draws directly


def _value(arg: Argument, inputs: Mapping[str, Any]) -> Any:
    if arg.tensor is not None:
        return inputs[arg.tensor.alias or arg.name]
    if arg.descriptor is not None:
        from triton.tools.tensor_descriptor import TensorDescriptor

        spec = arg.descriptor
        base = inputs[spec.base.alias or arg.name]
        return TensorDescriptor(base, list(spec.shape), list(spec.strides), list(spec.block_shape), spec.padding)
    if arg.kind == "value":
        return arg.value
    if arg.kind == "tl_dtype":
        import triton.language as tl

        return tl.dtype(arg.value)  # by its own name: "fp32", "bf16", ...
    if arg.kind == "torch_dtype":
        import torch

        return getattr(torch, arg.value)
    raise HarnessError(f"argument {arg.name!r} cannot be replayed ({arg.value or 'unknown value'})", Cause.TOOL)


def unreplayable(launch: CapturedLaunch) -> str | None:
    """Why this launch cannot be replayed, or None."""
    if launch.grid is None:
        return "its grid could not be read as integers"
    for arg in launch.arguments:
        if arg.kind == "opaque":
            return f"argument {arg.name!r} is a {str(arg.value).split(':')[0]}, which a replay cannot rebuild"
    return None


def label(launch: CapturedLaunch) -> str:
    """`captured: grid (g0, g1, g2), BLOCK=128, num_warps=4`."""
    parts = [f"{a.name}={a.value if a.kind in ('value', 'tl_dtype') else '?'}"
             for a in sorted(launch.constexprs, key=lambda a: a.name) if a.storage is None]
    parts += [f"{k}={v}" for k, v in launch.options.items() if not k.startswith("_") and v is not None]
    grid = launch.grid or ["?"]
    return f"captured: grid ({', '.join(map(str, grid))})" + (f", {', '.join(parts)}" if parts else "")


@contextlib.contextmanager
def _pinned(tuners: list[Any], kwargs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Pin every autotuner the tool wrote to the captured config; yield the keyword arguments left for the call."""
    import triton

    saved = [(tuner, tuner.configs, dict(getattr(tuner, "cache", {}))) for tuner in tuners]
    left = dict(kwargs)
    try:
        for tuner in tuners:
            keys = {k for config in tuner.configs for k in config.kwargs}
            meta = {k: kwargs[k] for k in keys if k in kwargs}
            options = {k: kwargs.get(k) for k in OPTION_KEYS}
            own = next((c for c in tuner.configs if c.kwargs == meta and all(
                getattr(c, k, None) == v for k, v in options.items() if v is not None)), None)
            if own is None:  # the captured config is none of the list's as written: the pre_hook of the one it is
                found = _captured_config([tuner], kwargs)
                own = triton.Config(meta, **options, pre_hook=getattr(found[1], "pre_hook", None) if found else None)
            tuner.configs = [own]  # its pre_hook kept
            tuner.cache = {}
            for key in (*meta, *(k for k, v in options.items() if v is not None)):
                left.pop(key, None)
        yield left
    finally:
        for tuner, configs, cache in saved:
            tuner.configs, tuner.cache = configs, cache


class PinningError(HarnessError):
    """The tool's own replay failed before the kernel ran (not the user's kernel): said as the tool's error."""

    def __init__(self, message: str):
        super().__init__(message, Cause.TOOL)


def _captured_config(tuners: list[Any], kwargs: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """(autotuner, its config) equal to the captured launch's constexprs and options: the config the package's
    autotuner chose, whose pre_hook ran before the launch; None when no autotuner on the way holds it."""
    for tuner in tuners:
        for config in getattr(tuner, "configs", ()) or ():
            meta = getattr(config, "kwargs", None)
            if isinstance(meta, dict) and meta and all(kwargs.get(k, object()) == v for k, v in meta.items()):
                return tuner, config
    return None


def _before_launch(tuners: list[Any], positional: list[Any], kwargs: dict[str, Any], pre_hook: bool = True) -> None:
    """What an autotuner does between choosing a config and launching it: zero its `reset_to_zero` arguments
    (after tuning, it resets them before the real launch) and run the chosen config's own pre_hook (`pre_hook`:
    False where the launch goes through a pinned autotuner, which runs it itself). Both sides of a comparison get
    it: an output an autotuner zeroes holds drawn values before the launch, and atomics add to what is there."""
    found = _captured_config(tuners, kwargs)
    tuner, config = found if found is not None else (  # zeroing is the autotuner's, whatever config it chose
        next((t for t in tuners if resets(t)), None), None)
    if tuner is None:
        return
    named = {**dict(zip(getattr(tuner, "arg_names", ()) or (), positional)), **kwargs}
    for name in resets(tuner):
        if hasattr(named.get(name), "zero_"):
            named[name].zero_()
    if pre_hook and config is not None and getattr(config, "pre_hook", None) is not None:
        config.pre_hook({**named, **config.all_kwargs()})


def tool_link(kernel: object) -> Any:
    """The outermost object the tool wrote around a kernel (a TMA dispatch), or None: a replay of the optimized
    file goes through it (its choice is part of what is validated), never through a package's own."""
    return next((link for link in chain(kernel) if "last_path" in getattr(link, "__dict__", {})), None)


def jit_function(module: ModuleType, kernel: object, name: str) -> Any:
    """The JIT function named `name` under the module's object for it: through its wrappers' chain, else the one
    among the module's kernel objects whose innermost function has that name."""
    found = innermost(kernel)
    if isinstance(found, JIT_TYPES):
        return found
    for obj in kernel_objects(module).values():
        inner = innermost(obj)
        if isinstance(inner, JIT_TYPES) and function_name(inner) == name:
            return inner
    raise PinningError(f"{PINNING_ERROR} {name}: no JIT function named {name!r} is reachable under "
                       f"{type(kernel).__name__}")


def reached_a_kernel(exc: BaseException) -> bool:
    """Whether the exception went through Triton's launch of a JIT function (compiling or running a kernel), not
    only through the tool's and the autotuner's own code."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:  # the exception and the ones it was raised from
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_name == "run" and code.co_filename.replace("\\", "/").endswith(
                    ("triton/runtime/jit.py", "triton/runtime/interpreter.py")):
                return True
            tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return False


def backend_option_names() -> set[str] | None:
    """The launch options the compiler backend of this process takes (its options' fields); None under the
    interpreter (it drops what it does not use) or when no backend answers."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return None
    try:
        import triton
        from triton.compiler.compiler import make_backend

        return set(vars(make_backend(triton.runtime.driver.active.get_current_target()).parse_options({})))
    except Exception:  # no driver here: nothing to compile for
        return None


def taken_options(options: Mapping[str, Any], names: set[str] | None) -> dict[str, Any]:
    """The captured launch options this backend takes. A launch captured on another backend carries the options of
    the config chosen there (under TileIR, a config function testing `is_cuda()` takes another branch: its
    `matrix_instr_nonkdim` is no option of the PTX backend, which would refuse the launch); the replay runs at the
    rest, and the record's config label says what was captured."""
    return dict(options) if names is None else {k: v for k, v in options.items() if k in names}


def launcher(module: ModuleType, launch: CapturedLaunch) -> LaunchCall:
    """A function of (inputs, args, dims) launching the captured kernel once and returning every tensor argument by
    name (the kernel's outputs are among them).

    What reached Triton's JIT launch is launched again, as it was: the innermost JIT function of the module's
    name for the kernel, with the captured positional arguments, every constexpr as the package's wrappers,
    heuristics and autotuner finally bound it, the launch options and the grid, after the chosen config's
    pre_hook. No package wrapper, autotuner or cache is entered: they would bind again what is bound already, or
    choose again. Only the tool's own objects in an optimized file (a TMA dispatch) are launched through, their
    autotuners pinned to the captured config. Where the TileIR code is on, the hints the optimized file's launch
    sites pass under the gate are passed too (the TileIR surface drops them again on PTX)."""
    why = unreplayable(launch)
    if why:
        raise HarnessError(f"the captured launch cannot be replayed: {why}", Cause.TOOL)
    name = launch.kernel
    kernel = getattr(module, name, None)
    if kernel is None:
        raise HarnessError(f"{getattr(module, '__name__', 'the module')} has no kernel {name!r} at module level")
    from triton.runtime.autotuner import Autotuner

    jit = jit_function(module, kernel, name)
    through = tool_link(kernel)
    names = {name, *twin_names(name)}
    tuners: list[Any] = []  # under a tool's link: every autotuner of the kernel and its twins, to pin
    if through is not None:
        for tuner in autotuners(module).values():
            if function_name(tuner) in names and all(tuner is not t for t in tuners):
                tuners.append(tuner)
    chosen = [link for link in chain(kernel) if isinstance(link, Autotuner)]  # whose config's pre_hook runs
    grid = tuple(launch.grid or ())
    specs = _tensor_specs(launch)
    outputs = [output for output, spec in specs if spec.addresses is None]  # not where: what
    repoint = any(spec.addresses is not None for _, spec in specs)  # once: the call below is what the bench times

    bound = {arg.name for arg in launch.args}  # passed positionally: never again by keyword
    parameters = set(getattr(jit, "arg_names", ()) or ())
    option_names = backend_option_names()  # once: the call below is what the bench times
    hints = launch_hints(module, name) if tileir_code_on() else {}

    def call(inputs: Mapping[str, Any], args: Mapping[str, Any], dims: Mapping[str, Any]) -> dict[str, Any]:
        if repoint:
            point_addresses(launch, inputs)
        positional = [_value(arg, inputs) for arg in launch.args]
        constexprs = {a.name: _value(a, inputs) for a in launch.constexprs if a.name not in bound}
        kwargs = {k: v for k, v in constexprs.items() if k in parameters or not parameters}
        options = {k: v for k, v in launch.options.items() if not k.startswith("_") and k not in bound}
        options.update({k: v for k, v in constexprs.items() if k not in kwargs})  # a config's option by name
        kwargs.update(taken_options(options, option_names))
        kwargs.update({k: v for k, v in hints.items() if k not in kwargs and k not in parameters})
        try:
            if through is None:
                _before_launch(chosen, positional, kwargs)
                jit[grid](*positional, **kwargs)
            else:
                _before_launch(tuners, positional, kwargs, pre_hook=False)
                with _pinned(tuners, kwargs) as left:
                    through[grid](*positional, **left)
        except Exception as exc:
            if reached_a_kernel(exc):
                raise  # the kernel's own failure: the user's to see
            raise PinningError(f"{PINNING_ERROR} {name} at the captured config: "
                               f"{type(exc).__name__}: {exc}") from exc
        return {output: inputs[output] for output in outputs}

    return call
