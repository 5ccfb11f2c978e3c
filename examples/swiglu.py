"""SwiGLU forward: out = silu(a) * b, with silu(a) = a * sigmoid(a).

The gate `a` and the up-projection `b` are read once and the product written once, which
is the whole point of fusing: unfused, silu(a) would make a round trip through memory.
The math runs in float32 whatever the storage dtype, then is cast back on store.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 2048}, num_warps=8),
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=8),
    ],
    key=["n_elements"],
)
@triton.jit
def swiglu_kernel(a_ptr, b_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(a_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    # silu(a) = a * sigmoid(a); all the math runs in float32, rounded once on store.
    out = a * tl.sigmoid(a) * b
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


def swiglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """silu(a) * b elementwise; a and b have the same shape and dtype."""
    assert a.shape == b.shape, "a and b must have the same shape"
    a = a.contiguous()
    b = b.contiguous()
    out = torch.empty(a.shape, device=a.device, dtype=a.dtype)
    n_elements = a.numel()
    # BLOCK_SIZE comes from the autotune config, so the grid reads it from `meta`.
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    swiglu_kernel[grid](a, b, out, n_elements)
    return out
