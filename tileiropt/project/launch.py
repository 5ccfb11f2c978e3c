"""A captured launch, typed: what the recorder (`hook.py`) builds for each distinct launch of a target kernel,
and what replay, the validation cases and the bench items read.

Its JSON form is the wire format -- the recorder's `launches-<pid>.jsonl` lines, `capture.json`, the messages to
workers -- and stays as it was: `CapturedLaunch.from_json` reads it once, where it enters the tool, and refuses
a damaged one in a line naming the field; `to_json` writes it back unchanged (a key absent from the JSON is
None here, and absent again once written), so a saved capture, a reference cache key and a worker message
mean the same thing either way. Stdlib only: the recorder imports it inside the user's program.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ARGUMENT_KINDS = ("tensor", "descriptor", "value", "tl_dtype", "torch_dtype", "opaque")


class LaunchFormatError(ValueError):
    """A captured launch whose JSON is not what the recorder writes (a damaged or hand-edited capture)."""


def _ints(data: object, what: str) -> tuple[int, ...]:
    if not isinstance(data, (list, tuple)) or not all(isinstance(v, int) for v in data):
        raise LaunchFormatError(f"{what} must be a list of integers, got {data!r}")
    return tuple(int(v) for v in data)


def _object(data: object, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise LaunchFormatError(f"{what} must be an object, got {type(data).__name__}")
    return data


def _field(data: object, key: str, what: str) -> Any:
    data = _object(data, what)
    if key not in data:
        raise LaunchFormatError(f"{what} has no {key!r}")
    return data[key]


@dataclass(frozen=True)
class Buffer:
    """One buffer an address tensor points into (a grouped kernel's per-group tensors): drawn as a flat tensor."""

    dtype: str
    elements: int
    nonnegative: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "elements": self.elements, "nonnegative": self.nonnegative}

    @classmethod
    def from_json(cls, data: object) -> Buffer:
        data = _object(data, "a buffer")
        return cls(str(_field(data, "dtype", "a buffer")), int(_field(data, "elements", "a buffer")),
                   bool(data.get("nonnegative")))


@dataclass(frozen=True)
class Addresses:
    """An int64 tensor of device addresses: the buffers they point into and, per element, (buffer, byte offset);
    None for a null pointer."""

    buffers: tuple[Buffer, ...]
    targets: tuple[tuple[int, int] | None, ...]

    def to_json(self) -> dict[str, Any]:
        return {"buffers": [b.to_json() for b in self.buffers],
                "targets": [None if t is None else list(t) for t in self.targets]}

    @classmethod
    def from_json(cls, data: object) -> Addresses:
        data = _object(data, "addresses")
        buffers = tuple(Buffer.from_json(b) for b in _field(data, "buffers", "addresses"))
        targets = tuple(None if t is None else _pair(t) for t in _field(data, "targets", "addresses"))
        return cls(buffers, targets)


def _pair(data: Any) -> tuple[int, int]:
    values = _ints(data, "an address target")
    if len(values) != 2:
        raise LaunchFormatError(f"an address target must be [buffer, offset], got {list(data)!r}")
    return values[0], values[1]


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument as the recorder read it: its layout, and what a replay needs to draw values like its own."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str  # torch's name: "float16", "int32", ...
    extent: int  # elements of storage the strided view spans
    offset: int = 0
    device: str = ""
    alias: str | None = None  # the earlier argument sharing its storage (it is that tensor again)
    unread: bool = False  # an integer tensor too large (or on a device) to read: no range known
    values: tuple[int, ...] | None = None  # a small integer tensor's values, kept
    range: tuple[int, int] | None = None  # a larger integer tensor's [min, max]
    nonnegative: bool | None = None  # a float tensor whose values were all >= 0 (a variance, a scale)
    addresses: Addresses | None = None  # an integer tensor holding device addresses

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"shape": list(self.shape), "stride": list(self.stride), "dtype": self.dtype,
                                "offset": self.offset, "extent": self.extent, "device": self.device}
        if self.alias is not None:
            data["alias"] = self.alias
        if self.unread:
            data["unread"] = True
        if self.addresses is not None:
            data["addresses"] = self.addresses.to_json()
        if self.values is not None:
            data["values"] = list(self.values)
        if self.range is not None:
            data["range"] = list(self.range)
        if self.nonnegative is not None:
            data["nonnegative"] = self.nonnegative
        return data

    @classmethod
    def from_json(cls, data: object) -> TensorArg:
        data = _object(data, "a tensor")
        shape = _ints(_field(data, "shape", "a tensor"), "a tensor's shape")
        values = data.get("values")
        bounds = data.get("range")
        addresses = data.get("addresses")
        return cls(shape=shape, stride=_ints(data.get("stride", _contiguous(shape)), "a tensor's stride"),
                   dtype=str(_field(data, "dtype", "a tensor")), extent=int(data.get("extent", _numel(shape))),
                   offset=int(data.get("offset", 0)), device=str(data.get("device", "")),
                   alias=None if data.get("alias") is None else str(data["alias"]), unread=bool(data.get("unread")),
                   values=None if values is None else _ints(values, "a tensor's values"),
                   range=None if bounds is None else _pair(bounds),
                   nonnegative=None if data.get("nonnegative") is None else bool(data["nonnegative"]),
                   addresses=None if addresses is None else Addresses.from_json(addresses))


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def _contiguous(shape: tuple[int, ...]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return strides[::-1]


@dataclass(frozen=True)
class Descriptor:
    """A host tensor descriptor (`triton.tools.tensor_descriptor.TensorDescriptor`) over its base tensor."""

    base: TensorArg
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    block_shape: tuple[int, ...]
    padding: str = "zero"

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base.to_json(), "shape": list(self.shape), "strides": list(self.strides),
                "block_shape": list(self.block_shape), "padding": self.padding}

    @classmethod
    def from_json(cls, data: object) -> Descriptor:
        data = _object(data, "a descriptor")
        return cls(TensorArg.from_json(_field(data, "base", "a descriptor")),
                   _ints(_field(data, "shape", "a descriptor"), "a descriptor's shape"),
                   _ints(_field(data, "strides", "a descriptor"), "a descriptor's strides"),
                   _ints(_field(data, "block_shape", "a descriptor"), "a descriptor's block_shape"),
                   str(data.get("padding", "zero")))


@dataclass(frozen=True)
class Argument:
    """One argument of a launch, of one kind (`ARGUMENT_KINDS`): a tensor, a tensor descriptor, a plain value (None
    included), a `tl.dtype` or a `torch.dtype` by name, or something opaque a replay cannot rebuild (described)."""

    name: str
    kind: str
    tensor: TensorArg | None = None  # kind "tensor"
    descriptor: Descriptor | None = None  # kind "descriptor"
    value: Any = None  # "value": the value; "tl_dtype", "torch_dtype": the dtype's name; "opaque": what it was

    @property
    def storage(self) -> TensorArg | None:
        """The tensor whose memory the argument passes: the tensor, or the descriptor's base."""
        return self.tensor if self.descriptor is None else self.descriptor.base

    def to_json(self) -> dict[str, Any]:
        """The recorder's form, without the name (a constexpr's is its key)."""
        if self.kind == "tensor":
            return {"tensor": self.tensor.to_json() if self.tensor else {}}
        if self.kind == "descriptor":
            return {"descriptor": self.descriptor.to_json() if self.descriptor else {}}
        return {self.kind: self.value}

    @classmethod
    def from_json(cls, name: str, data: object) -> Argument:
        kinds = [k for k in ARGUMENT_KINDS if isinstance(data, dict) and k in data]
        if len(kinds) != 1 or not isinstance(data, dict):  # (kinds are found only in an object)
            raise LaunchFormatError(f"argument {name!r} must have one of {', '.join(ARGUMENT_KINDS)}, got {data!r}")
        kind = kinds[0]
        if kind == "tensor":
            return cls(name, kind, tensor=TensorArg.from_json(data[kind]))
        if kind == "descriptor":
            return cls(name, kind, descriptor=Descriptor.from_json(data[kind]))
        return cls(name, kind, value=data[kind])


@dataclass(frozen=True)
class CapturedLaunch:
    """One distinct launch of a kernel defined in a target file."""

    kernel: str
    file: str
    args: tuple[Argument, ...]  # positional, in the kernel's parameter order
    constexprs: tuple[Argument, ...] = ()  # by keyword: the autotuner's config values, constexprs passed by name
    options: dict[str, Any] = field(default_factory=dict)  # num_warps, num_stages, ... as launched
    grid: tuple[int, ...] | None = None  # the grid Triton launched (None: it could not be read)
    module: str | None = None  # the kernel's module name
    caller: dict[str, Any] | None = None  # the wrapper in the target file that launched it (see `project_text`)
    ordinal: int | None = None  # the how-manyth launch of the kernel this was in its process
    signature: str | None = None  # the recorder's distinctness key (dropped once the launches are merged)
    atomics: bool = False  # the kernel updates memory with atomics (classify's finding, added by the capture)
    # parent packages of `module` the program held without running their `__init__` (a bare module in sys.modules:
    # how users import a package whose `__init__` needs what they lack): a worker imports the module the same way
    bare_packages: tuple[str, ...] = ()

    @property
    def arguments(self) -> tuple[Argument, ...]:
        """Every argument: the positional ones, then the ones by keyword."""
        return self.args + self.constexprs

    def tensors(self) -> dict[str, TensorArg]:
        """The storage of every tensor and descriptor argument, by name."""
        return {a.name: a.storage for a in self.arguments if a.storage is not None}

    def with_atomics(self, atomics: bool) -> CapturedLaunch:
        return replace(self, atomics=atomics)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kernel": self.kernel, "file": self.file, "module": self.module,
            "args": [{"name": a.name, **a.to_json()} for a in self.args],
            "constexprs": {a.name: a.to_json() for a in self.constexprs}, "options": dict(self.options),
            "grid": None if self.grid is None else list(self.grid), "caller": self.caller, "launch": self.ordinal}
        if self.signature is not None:
            data["signature"] = self.signature
        if self.atomics:
            data["atomics"] = True
        if self.bare_packages:
            data["bare_packages"] = list(self.bare_packages)
        return data

    @classmethod
    def from_json(cls, data: object) -> CapturedLaunch:
        """The launch the JSON describes; `LaunchFormatError` naming what is wrong otherwise."""
        data = _object(data, "a captured launch")
        args = _field(data, "args", "a captured launch")
        if not isinstance(args, list):
            raise LaunchFormatError(f"a captured launch's args must be a list, got {type(args).__name__}")
        constexprs = {} if data.get("constexprs") is None else data["constexprs"]
        options = {} if data.get("options") is None else data["options"]
        if not isinstance(constexprs, dict) or not isinstance(options, dict):
            raise LaunchFormatError("a captured launch's constexprs and options must be objects")
        grid = data.get("grid")
        caller = data.get("caller")
        return cls(kernel=str(_field(data, "kernel", "a captured launch")),
                   file=str(data.get("file", "")),
                   args=tuple(Argument.from_json(str(_field(a, "name", "an argument")), a) for a in args),
                   constexprs=tuple(Argument.from_json(str(k), v) for k, v in constexprs.items()),
                   options=dict(options), grid=None if grid is None else _ints(grid, "a launch's grid"),
                   module=None if data.get("module") is None else str(data["module"]),
                   caller=caller if isinstance(caller, dict) else None,
                   ordinal=data.get("launch") if isinstance(data.get("launch"), int) else None,
                   signature=None if data.get("signature") is None else str(data["signature"]),
                   atomics=bool(data.get("atomics")),
                   bare_packages=tuple(str(p) for p in data.get("bare_packages") or () if isinstance(p, str)))


def kernel_labels(launches: list[CapturedLaunch]) -> list[str]:
    """Each launch's kernel as the run names it: the kernel's name, or `<file stem>.<kernel>` where several files
    define a kernel of that name."""
    files_of: dict[str, set[str]] = {}
    for launch in launches:
        files_of.setdefault(launch.kernel, set()).add(launch.file)
    return [launch.kernel if len(files_of[launch.kernel]) == 1 else f"{Path(launch.file).stem}.{launch.kernel}"
            for launch in launches]

