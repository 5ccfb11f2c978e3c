"""Vector addition: the smallest useful Triton kernel.

Each program instance handles one contiguous block of BLOCK_SIZE elements. The last block
is usually partial, so loads and stores are masked against the element count.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # Which block of the flattened vectors this program owns.
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # Lanes past the end of the vectors neither read nor write memory.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Elementwise x + y for two tensors of the same shape and dtype."""
    assert x.shape == y.shape, "x and y must have the same shape"
    assert x.device == y.device, "x and y must live on the same device"
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    n_elements = x.numel()
    # One program per block; the grid is a function of the launch's meta-parameters.
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)
    return out
