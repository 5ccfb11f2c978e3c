"""LayerNorm forward: y = (x - mean) / sqrt(var + eps) * weight + bias over the last dimension.

One program normalises one row. Rows can be wider than a block, so the kernel walks the row
in BLOCK_SIZE chunks three times: once for the mean, once for the variance, once to write.
Statistics are accumulated in float32 whatever the input dtype.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(
    x_ptr, weight_ptr, bias_ptr, y_ptr,
    x_row_stride, y_row_stride,
    n_cols, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride

    # Pass 1: the mean. Lanes past the end load 0 and do not change the sum.
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols

    # Pass 2: the (biased) variance around that mean; padding lanes must contribute 0.
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        centred = tl.where(mask, x - mean, 0.0)
        acc += centred * centred
    variance = tl.sum(acc, axis=0) / n_cols
    rstd = tl.rsqrt(variance + eps)

    # Pass 3: normalise, scale, shift, store in the output dtype.
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(bias_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last dimension of an N-D tensor (weight and bias of that size)."""
    n_cols = x.shape[-1]
    if weight.shape != (n_cols,) or bias.shape != (n_cols,):
        raise ValueError(f"weight and bias must have shape ({n_cols},)")
    x2d = x.reshape(-1, n_cols)
    if x2d.stride(-1) != 1:
        x2d = x2d.contiguous()
    weight, bias = weight.contiguous(), bias.contiguous()
    y = torch.empty(x2d.shape, device=x.device, dtype=x.dtype)
    # A block covers the whole row when it is short, a 1024-wide chunk of it otherwise.
    BLOCK_SIZE = min(triton.next_power_of_2(n_cols), 1024)
    n_rows = x2d.shape[0]
    layer_norm_kernel[(n_rows,)](
        x2d, weight, bias, y,
        x2d.stride(0), y.stride(0),
        n_cols, eps,
        BLOCK_SIZE=BLOCK_SIZE,
    )
    return y.reshape(x.shape)
