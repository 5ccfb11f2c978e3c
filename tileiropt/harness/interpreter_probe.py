"""What Triton's interpreter computes wrongly in this process's Triton, found by running it once.

Triton's interpreter (TRITON_INTERPRET=1, 3.6 and 3.9 alike) multiplies bfloat16 blocks wrongly: a product of two
bf16 values comes out as numbers of any size (3e+20 for 0.75). A kernel computing in bf16 then gives the same wrong
values from the original and the optimized file, and their comparison passes while proving only that the two agree
on the interpreter's arithmetic. Workers ask `bf16_products_wrong()` once and say so on the records of cases with
bf16 inputs; a kernel that converts to float32 before its arithmetic is unaffected, which is why nothing is refused.

Imported only by workers of an interpreter backend (it imports torch and Triton).
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

from tileiropt.schema import BF16_WRONG

BF16_NOTE = (f"{BF16_WRONG} in this Triton (probed): where the kernel computes in bfloat16, this pass shows the two "
             "files agree, not that they are right")


@triton.jit
def _multiply(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) * tl.load(y_ptr + offsets))


@functools.cache
def bf16_products_wrong() -> bool:
    """Whether the interpreter's bf16 product of a few exact values differs from torch's (False when the probe
    cannot run at all: nothing is said then)."""
    import torch

    x = torch.tensor([0.5, -1.5, 2.0, 0.75], dtype=torch.bfloat16)
    y = torch.tensor([1.5, 2.0, -0.25, 1.0], dtype=torch.bfloat16)
    out = torch.empty_like(x)
    try:
        _multiply[(1,)](x, y, out, BLOCK=4)
    except Exception:  # no interpreter here, or it refuses: nothing to say about its arithmetic
        return False
    return not torch.equal(out, x * y)  # exact in bf16: any difference is the interpreter's
