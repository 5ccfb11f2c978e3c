"""RMSNorm forward: y = x / sqrt(mean(x^2) + eps) * weight over the last dimension.

One program normalises one row held entirely in a block. The wrapper picks BLOCK_SIZE from
the row length; the autotuner only chooses how many warps share the row.
"""

import torch
import triton
import triton.language as tl

MAX_BLOCK_SIZE = 65536


@triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in (2, 4, 8)],
    key=["n_cols"],
)
@triton.jit
def rms_norm_kernel(
    x_ptr, weight_ptr, y_ptr,
    x_row_stride, y_row_stride,
    n_cols, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    # Mean of squares over the real columns only (padding lanes are 0).
    mean_square = tl.sum(x * x, axis=0) / n_cols
    rstd = tl.rsqrt(mean_square + eps)
    w = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * rstd * w
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension of an N-D tensor (weight of that size)."""
    n_cols = x.shape[-1]
    if weight.shape != (n_cols,):
        raise ValueError(f"weight must have shape ({n_cols},)")
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    if BLOCK_SIZE > MAX_BLOCK_SIZE:
        raise ValueError(f"rows of {n_cols} elements do not fit in one block (max {MAX_BLOCK_SIZE})")
    x2d = x.reshape(-1, n_cols)
    if x2d.stride(-1) != 1:
        x2d = x2d.contiguous()
    weight = weight.contiguous()
    y = torch.empty(x2d.shape, device=x.device, dtype=x.dtype)
    n_rows = x2d.shape[0]
    rms_norm_kernel[(n_rows,)](
        x2d, weight, y,
        x2d.stride(0), y.stride(0),
        n_cols, eps,
        BLOCK_SIZE=BLOCK_SIZE,
    )
    return y.reshape(x.shape)
