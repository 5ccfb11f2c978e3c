"""Launch-time helpers copied into a transformed file that has TMA twins or reaches an autotuner under a wrapper
(`tma_runtime` writes this module's text, less this docstring and its imports, after the gate).

Like the gate, the code is standalone: the standard library and `triton`, `torch` only at a TMA launch that
needs global scratch for its device-side descriptors (so never at import, and never on a machine without a
GPU). Defining these names does nothing; they act only where the gated block calls them.

- `_tileiropt_tma_dispatch(tma, pointer, operands)`: the module-level kernel name under the gate.
  Per launch it checks TMA's rules on the launch's own arguments (16-byte aligned base pointer,
  unit stride on the contiguous dimension, 16-byte multiples for every other stride and batch
  offset, a storage small enough for 32-bit offsets) and launches the TMA twin when they hold,
  the pointer kernel otherwise. `.last_path` ("tma" / "pointer") and `.last_reason` say what
  ran and why; attribute reads go to the TMA kernel (`.configs`, `.best_config`, ...), writes to both
  kernels, so pinning it pins both.
- `_tileiropt_autotuner(kernel)`: the autotuner under a package's own wrappers (a launch wrapper, an entry object),
  reached as the tool's replay reaches it: through `.fn`, `__wrapped__`, or the one autotuner a wrapper holds.
"""

from math import prod as _tileiropt_prod

import triton as _tileiropt_triton


def _tileiropt_allocator(size, alignment, stream):
    """Global scratch for device-side tensor descriptors."""
    import torch

    return torch.empty(size, device="cuda", dtype=torch.int8)


def _tileiropt_tma_flags(operands, arguments):
    """(the TMA twin's layout flags, "") when every operand meets TMA's rules, else (None, why not)."""
    flags = {}
    for pointer, (rows, cols), offsets, orient, flag in operands:
        tensor = arguments.get(pointer)
        if not (hasattr(tensor, "data_ptr") and hasattr(tensor, "element_size")):
            return None, f"{pointer} is not a tensor"
        try:
            row, col, *shifts = (_tileiropt_prod(arguments[n] for n in names) for names in (rows, cols, *offsets))
        except KeyError as missing:
            return None, f"{pointer}: argument {missing} not passed"
        size = tensor.element_size()
        why = ("is not 16-byte aligned" if tensor.data_ptr() % 16
               else "may need 64-bit offsets" if tensor.untyped_storage().nbytes() // size >= 2**31
               else "has a stride that is not an integer" if not all(isinstance(v, int) for v in (row, col, *shifts))
               else "has a batch offset that is not a multiple of 16 bytes" if any(v * size % 16 for v in shifts)
               else "")
        transposed = (False if "n" in orient and col == 1 and row > 0 and row * size % 16 == 0
                      else True if "t" in orient and row == 1 and col > 0 and col * size % 16 == 0 else None)
        if why or transposed is None:
            return None, f"{pointer} {why or f'has strides ({row}, {col}) of {size}-byte elements, unsuited to TMA'}"
        if flag is not None and flags.setdefault(flag, transposed) != transposed:
            return None, f"{pointer}: tiles with different layouts"
    return flags, ""


class _tileiropt_tma_dispatch:  # noqa: N801 (called as a function where the kernel's name is bound)
    """Launches the TMA twin when the launch's tensors meet TMA's rules, the pointer kernel otherwise."""

    OWN = ("tma", "pointer", "operands", "last_path", "last_reason")

    def __init__(self, tma, pointer, operands):
        self.tma, self.pointer, self.operands, self.last_path, self.last_reason = tma, pointer, operands, None, ""

    def run(self, *args, **kwargs):
        flags, self.last_reason = _tileiropt_tma_flags(self.operands, {**dict(zip(self.tma.arg_names, args)), **kwargs})
        self.last_path = "pointer" if flags is None else "tma"
        if flags is None:
            return self.pointer.run(*args, **kwargs)
        from triton.runtime import _allocation

        if isinstance(_allocation._allocator.get(), _allocation.NullAllocator):  # unless the program set its own
            _tileiropt_triton.set_allocator(_tileiropt_allocator)
        return self.tma.run(*args, **kwargs, **flags)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def __getattr__(self, name):  # .configs, .best_config, ... of the TMA twin
        return getattr(vars(self).get("tma"), name)

    def __setattr__(self, name, value):  # its own fields here; anything else (pinning a config) on both kernels
        if name in self.OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.tma, name, value)
            setattr(self.pointer, name, value)


def _tileiropt_autotuner(kernel):
    """The autotuner under a kernel's wrappers: through `.fn`, `__wrapped__`, or the one autotuner a wrapper holds."""
    for _ in range(16):
        if isinstance(kernel, _tileiropt_triton.runtime.Autotuner):
            return kernel
        held = [v for v in getattr(kernel, "__dict__", {}).values()
                if isinstance(v, _tileiropt_triton.runtime.Autotuner)]
        kernel = held[0] if len(held) == 1 else getattr(kernel, "fn", None) or getattr(kernel, "__wrapped__", None)
    raise TypeError("no autotuner under the kernel's wrappers")
