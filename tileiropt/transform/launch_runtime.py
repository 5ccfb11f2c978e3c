"""Launch-time helpers copied into a transformed file that has TMA twins or a 2-CTA guard (`tma_runtime`
writes this module's text, less this docstring and its imports, after the gate).

Like the gate, the code is standalone: the standard library and `triton` (imported by the gate as
`_tileiropt_triton`), `torch` only inside the allocator, which Triton calls at a launch that needs global
scratch (so never at import, and never on a machine without a GPU). Defining these names does nothing; they
act only where the gated block calls them.

- `_tileiropt_tma_dispatch(tma, pointer, operands)`: the module-level kernel name under the gate.
  Per launch it checks TMA's rules on the launch's own arguments (16-byte aligned base pointer,
  unit stride on the contiguous dimension, 16-byte multiples for every other stride and batch
  offset, a storage small enough for 32-bit offsets) and launches the TMA twin when they hold,
  the pointer kernel otherwise. `.last_path` ("tma" / "pointer") and `.last_reason` say what
  ran and why; attribute reads go to the TMA kernel (`.configs`, `.fn`, ...), attribute writes
  to both kernels, so pinning it pins both.
- `_tileiropt_guard_ctas(kernel, name)`: under a `num_ctas=2` config a persistent kernel gets
  `name // num_ctas` (the `NUM_SMS` argument) and a grid clamped to that many programs, so its
  CTA pairs fill the SMs once instead of oversubscribing them. A config `pre_hook` cannot do it:
  the autotuner hands it a copy of the arguments.
"""

import triton as _tileiropt_triton


def _tileiropt_allocator(size, alignment, stream):
    """Global scratch for device-side tensor descriptors."""
    import torch

    return torch.empty(size, device="cuda", dtype=torch.int8)


def _tileiropt_ensure_allocator():
    """Give Triton an allocator for device-side descriptors unless the program set its own."""
    try:
        from triton.runtime import _allocation

        unset = isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
    except (ImportError, AttributeError):
        unset = True
    if unset:
        _tileiropt_triton.set_allocator(_tileiropt_allocator)


def _tileiropt_product(arguments, names):
    value = 1
    for name in names:
        value *= arguments[name]
    return value


def _tileiropt_tma_flags(operands, arguments):
    """(the TMA kernel's layout flags, "") when every operand meets TMA's rules, else (None, why not)."""
    flags = {}
    for pointer, (rows, cols), offsets, orient, flag in operands:
        tensor = arguments.get(pointer)
        if not (hasattr(tensor, "data_ptr") and hasattr(tensor, "element_size")):
            return None, f"{pointer} is not a tensor"
        size = tensor.element_size()
        if tensor.data_ptr() % 16:
            return None, f"{pointer} is not 16-byte aligned"
        storage = getattr(tensor, "untyped_storage", None)
        if storage is None or storage().nbytes() // size >= 2**31:
            # the twin computes batch offsets in 32-bit integers, as TMA's coordinates are
            return None, f"{pointer}: its storage may need 64-bit offsets"
        try:
            row, col = _tileiropt_product(arguments, rows), _tileiropt_product(arguments, cols)
            shifts = [_tileiropt_product(arguments, names) for names in offsets]
        except KeyError as missing:
            return None, f"{pointer}: argument {missing} not passed"
        if not all(isinstance(v, int) for v in (row, col, *shifts)):
            return None, f"{pointer}: a stride is not an integer"
        if any(shift * size % 16 for shift in shifts):
            return None, f"{pointer}: a batch offset is not a multiple of 16 bytes"
        if "n" in orient and col == 1 and row > 0 and row * size % 16 == 0:
            transposed = False
        elif "t" in orient and row == 1 and col > 0 and col * size % 16 == 0:
            transposed = True
        else:
            return None, f"{pointer}: strides ({row}, {col}) of {size}-byte elements do not suit TMA"
        if flag is not None:
            if flags.get(flag, transposed) != transposed:
                return None, f"{pointer}: tiles with different layouts"
            flags[flag] = transposed
    return flags, ""


class _TileIROptTmaDispatch:
    """Launch the TMA twin when the launch's tensors meet TMA's rules, the pointer kernel otherwise."""

    def __init__(self, tma, pointer, operands):
        object.__setattr__(self, "_tileiropt", (tma, pointer, operands))
        object.__setattr__(self, "last_path", None)
        object.__setattr__(self, "last_reason", "")

    def run(self, *args, **kwargs):
        tma, pointer, operands = self._tileiropt
        arguments = dict(zip(tma.arg_names, args))
        arguments.update(kwargs)
        flags, reason = _tileiropt_tma_flags(operands, arguments)
        object.__setattr__(self, "last_reason", reason)
        if flags is None:
            object.__setattr__(self, "last_path", "pointer")
            return pointer.run(*args, **kwargs)
        object.__setattr__(self, "last_path", "tma")
        _tileiropt_ensure_allocator()
        return tma.run(*args, **kwargs, **flags)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def __getattr__(self, name):
        if name == "_tileiropt":
            raise AttributeError(name)
        return getattr(self._tileiropt[0], name)

    def __setattr__(self, name, value):
        tma, pointer, _ = self._tileiropt
        setattr(tma, name, value)
        if hasattr(pointer, name):
            setattr(pointer, name, value)

    def __repr__(self):
        return f"<TMA dispatch: {self._tileiropt[0]!r} / {self._tileiropt[1]!r}>"


def _tileiropt_tma_dispatch(tma, pointer, operands):
    return _TileIROptTmaDispatch(tma, pointer, operands)


class _TileIROptCtaGuard(_tileiropt_triton.runtime.autotuner.Heuristics):
    """A 2-CTA launch of a persistent kernel: `name // num_ctas` programs, and as the tile stride."""

    def __init__(self, fn, name):
        super().__init__(fn, fn.arg_names, {})
        self.name = name

    def run(self, *args, **kwargs):
        ctas = kwargs.get("num_ctas") or 1
        if ctas > 1:
            position = self.arg_names.index(self.name)
            if self.name in kwargs:
                programs = kwargs[self.name] = max(1, kwargs[self.name] // ctas)
            elif position < len(args):
                programs = max(1, args[position] // ctas)
                args = (*args[:position], programs, *args[position + 1:])
            else:
                return self.fn.run(*args, **kwargs)
            grid = kwargs["grid"]

            def clamped(meta):
                size = tuple(grid(meta) if callable(grid) else grid)
                return (min(size[0], programs), *size[1:])

            kwargs["grid"] = clamped
        return self.fn.run(*args, **kwargs)


def _tileiropt_guard_ctas(kernel, name):
    """Put the 2-CTA guard under the autotuner of `kernel` (found through a TMA dispatch or heuristics)."""
    tuner = kernel
    for _ in range(16):
        if isinstance(tuner, _tileiropt_triton.runtime.autotuner.Autotuner):
            tuner.fn = _TileIROptCtaGuard(tuner.fn, name)
            break
        tuner = tuner._tileiropt[0] if isinstance(tuner, _TileIROptTmaDispatch) else getattr(tuner, "fn", None)
    return kernel
