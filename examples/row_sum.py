"""Row sum: out[i] = sum_j x[i, j] over the last dimension.

One program reduces one row, walking it in BLOCK_SIZE chunks. Partial sums live in a float32
vector and are folded with tl.sum at the end, so half-precision inputs do not lose bits; the
result is stored in the input dtype.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row * x_row_stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + row, total.to(out_ptr.dtype.element_ty))


def row_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum over the last dimension of an N-D tensor; the result has shape x.shape[:-1]."""
    n_cols = x.shape[-1]
    x2d = x.reshape(-1, n_cols)
    if x2d.stride(-1) != 1:
        x2d = x2d.contiguous()
    n_rows = x2d.shape[0]
    out = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
    BLOCK_SIZE = min(triton.next_power_of_2(max(n_cols, 1)), 1024)
    row_sum_kernel[(n_rows,)](x2d, out, x2d.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
    return out.reshape(x.shape[:-1])
