"""Fused row-wise softmax.

One program normalises one row that fits entirely in a single block (BLOCK_SIZE is the
next power of two of the row length), so the row is read from memory once and written
once: max, exponentials, sum and division all happen in registers.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    # Padding lanes read -inf so they neither win the max nor add to the sum (exp(-inf) = 0).
    x = tl.load(in_ptr + row * in_row_stride + col_offsets, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    # Subtracting the row maximum keeps exp() from overflowing; the result is unchanged.
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    denominator = tl.sum(numerator, axis=0)
    y = numerator / denominator
    tl.store(out_ptr + row * out_row_stride + col_offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor."""
    assert x.dim() == 2, "softmax expects a 2-D tensor"
    if x.stride(1) != 1:
        x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    # The whole row lives in one block.
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    # Wider rows get more warps so each thread keeps a modest number of elements.
    num_warps = 4
    if BLOCK_SIZE >= 2048:
        num_warps = 8
    if BLOCK_SIZE >= 4096:
        num_warps = 16
    softmax_kernel[(n_rows,)](
        out, x, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
    )
    return out
