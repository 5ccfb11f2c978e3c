"""Reading a tensor's memory without torch operators, for the capture's recorder (`hook.py`): inside a launch the
recorder may not call a torch operator (an operator library registers its kernels as torch's own, and would run
again), so what a launch's tensors hold (their integer values, their range, whether floats are non-negative, whether
int64 values are the addresses of other live tensors) is read with `ctypes` from host or device memory."""

from __future__ import annotations

import ctypes
import sys
from typing import TYPE_CHECKING, Any

from tileiropt.project.launch import Addresses, Buffer

if TYPE_CHECKING:
    import torch

READ_LIMIT = 256 << 20  # bytes: larger tensors are not read (their range or sign is not known)
INTEGERS = {"bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
             "uint16": "uint16", "uint32": "uint32", "uint64": "uint64"}
# float dtype -> (bytes, exponent bits, mantissa bits, NaN/inf rule): "ieee" (exponent all ones), "fn" (e4m3fn:
# only exponent and mantissa all ones), "fnuz" (only the pattern of a negative zero)
FLOATS = {"float64": (8, 11, 52, "ieee"), "float32": (4, 8, 23, "ieee"), "float16": (2, 5, 10, "ieee"),
           "bfloat16": (2, 8, 7, "ieee"), "float8_e5m2": (1, 5, 2, "ieee"), "float8_e4m3fn": (1, 4, 3, "fn"),
           "float8_e4m3fnuz": (1, 4, 3, "fnuz"), "float8_e5m2fnuz": (1, 5, 2, "fnuz")}
UNSIGNED = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}
_LIBCUDA: Any = None


def read_memory(value: torch.Tensor, nbytes: int) -> bytes | None:
    """`nbytes` of the tensor's memory from its first element, copied without a torch operator; None when the
    device is neither the CPU nor a CUDA GPU, or the copy fails."""
    pointer = value.data_ptr()
    device = value.device
    if device.type == "cpu":
        return ctypes.string_at(pointer, nbytes)
    if device.type != "cuda":
        return None
    global _LIBCUDA
    try:
        torch = sys.modules["torch"]
        if torch.cuda.is_current_stream_capturing():
            return None  # inside a CUDA graph capture a copy would break the user's graph: not read
        if _LIBCUDA is None:
            _LIBCUDA = ctypes.CDLL("libcuda.so.1")
        torch.cuda.current_stream(device).synchronize()  # what the launch's stream queued has written the memory
        buffer = ctypes.create_string_buffer(nbytes)
        code = _LIBCUDA.cuMemcpyDtoH_v2(buffer, ctypes.c_uint64(pointer), ctypes.c_size_t(nbytes))
    except Exception:  # noqa: BLE001 - no driver library, no context: the values are not read
        return None
    return buffer.raw if code == 0 else None


def tensor_array(value: torch.Tensor, as_bits: bool = False) -> Any:
    """The tensor's elements as a numpy array of its shape (`as_bits`: a float tensor as unsigned integers of its
    width), read from its memory; None when it cannot be read or is over READ_LIMIT bytes."""
    import numpy as np

    dtype = str(value.dtype).removeprefix("torch.")
    width = FLOATS[dtype][0] if dtype in FLOATS else None
    numpy_dtype = UNSIGNED[width] if as_bits and width else INTEGERS.get(dtype)
    if numpy_dtype is None:
        return None
    itemsize = np.dtype(numpy_dtype).itemsize
    shape, stride = tuple(value.shape), tuple(value.stride())
    extent = 1 + sum((s - 1) * st for s, st in zip(shape, stride))
    if extent * itemsize > READ_LIMIT:
        return None
    raw = read_memory(value, extent * itemsize)
    if raw is None:
        return None
    flat = np.frombuffer(raw, dtype=numpy_dtype)
    return np.lib.stride_tricks.as_strided(flat, shape=shape, strides=[s * itemsize for s in stride],
                                           writeable=False)


def nonnegative(value: torch.Tensor) -> bool:
    """Every element finite and >= 0 (a negative zero counts as 0), read from the bits; False when unread."""
    dtype = str(value.dtype).removeprefix("torch.")
    if dtype not in FLOATS:
        return False
    bits = tensor_array(value, as_bits=True)
    if bits is None:
        return False
    width, exponent, mantissa, rule = FLOATS[dtype]
    bits = bits.reshape(-1)
    sign = bits >> (8 * width - 1)
    magnitude = bits & ((1 << (8 * width - 1)) - 1)
    if rule == "ieee":
        finite = ((magnitude >> mantissa) != (1 << exponent) - 1).all()
    elif rule == "fn":
        finite = (magnitude != (1 << (8 * width - 1)) - 1).all()
    else:  # fnuz: the one NaN is the negative zero pattern
        finite = not ((sign == 1) & (magnitude == 0)).any()
    return bool(finite and not ((sign == 1) & (magnitude != 0)).any())


ADDRESS_FLOOR = 1 << 32  # heap and device addresses lie above 4 GiB; indices and sizes below


def device_addresses(values: torch.Tensor, listed: list[int] | None = None) -> Addresses | None:
    """For an int64 tensor holding the addresses of other tensors (`t.data_ptr()`: grouped GEMMs, MoE): the
    buffers they point into (dtype, elements) and, per value, (buffer, byte offset); a replay rebuilds the
    addresses into buffers of its own. None when the values are not all addresses (or zero) of live tensors.
    `listed`: the tensor's values, when the caller has read them already."""
    if str(values.dtype).removeprefix("torch.") not in ("int64", "uint64"):
        return None
    if listed is None:
        array = tensor_array(values)
        if array is None:
            return None
        listed = array.reshape(-1).tolist()
    flat = [int(v) for v in listed]
    if not any(flat) or any(v and v < ADDRESS_FLOOR for v in flat):
        return None
    storages = _live_storages(values.device)
    buffers: list[Buffer] = []
    index: dict[int, int] = {}
    targets: list[tuple[int, int] | None] = []
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
            buffers.append(Buffer(str(tensor.dtype).removeprefix("torch."), elements,
                                  tensor.is_floating_point() and nonnegative(tensor)))
        targets.append((index[start], value - start))
    return Addresses(tuple(buffers), tuple(targets))


def _live_storages(device: torch.device) -> list[tuple[int, int, torch.Tensor]]:
    """(start, end, a tensor viewing it) of the storage of every live tensor on `device`."""
    import gc
    import warnings

    torch = sys.modules["torch"]
    found: dict[int, tuple[int, int, Any]] = {}
    with warnings.catch_warnings():  # asking some objects their class warns (torch.distributed.reduce_op)
        warnings.simplefilter("ignore")
        tensors = [obj for obj in gc.get_objects() if issubclass(type(obj), torch.Tensor)]  # never a proxy's code
    for obj in tensors:
        if obj.device == device and obj.numel():
            try:
                storage = obj.untyped_storage()
            except (RuntimeError, NotImplementedError):
                continue
            start = storage.data_ptr()
            found.setdefault(start, (start, start + storage.nbytes(), obj))
    return list(found.values())
