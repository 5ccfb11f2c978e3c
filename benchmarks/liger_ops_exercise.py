"""Calls liger-kernel's public ops (liger_kernel.transformers.functional), forward and backward, on small shapes.

The program `benchmarks/library.py` captures: each op launches its Triton kernels from the package's own
files, as a user's model would. An op this machine cannot run (a GPU-only path under the interpreter, a
missing optional dependency) is reported on stderr and skipped; the others go on.
"""

from __future__ import annotations

import sys
import traceback

import liger_kernel.transformers.functional as F
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = (torch.float32, torch.bfloat16)  # every op in both: distinct launches, as a mixed-precision model makes
DTYPE = torch.float32
SCALE = 1  # feature widths are multiplied by it: `--scales 1 2 4` runs every op at three widths
torch.manual_seed(0)


def w(width: int) -> int:
    return width * SCALE


def t(*shape: int, grad: bool = True) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE, dtype=DTYPE, requires_grad=grad)


def backward(out) -> None:
    out = out[0] if isinstance(out, (tuple, list)) else out
    if isinstance(out, torch.Tensor) and out.requires_grad:
        out.float().sum().backward()


def labels(n: int, vocab: int) -> torch.Tensor:
    return torch.randint(0, vocab, (n,), device=DEVICE)


def rope_inputs():
    q, k = t(1, 4, 8, w(16)), t(1, 2, 8, w(16))
    cos, sin = t(1, 8, w(16), grad=False), t(1, 8, w(16), grad=False)
    return q, k, cos, sin


OPS = {
    "rms_norm": lambda: F.liger_rms_norm(t(4, w(64)), t(w(64)), 1e-6),
    "rms_norm_gemma": lambda: F.liger_rms_norm(t(4, w(64)), t(w(64)), 1e-6, offset=1.0, casting_mode="gemma"),
    "fused_add_rms_norm": lambda: F.liger_fused_add_rms_norm(t(4, w(64)), t(4, w(64)), t(w(64)), 1e-6,
                                                             in_place=False),
    "layer_norm": lambda: F.liger_layer_norm(t(4, w(64)), t(w(64)), t(w(64)), 1e-6),
    "poly_norm": lambda: F.liger_poly_norm(t(4, w(64)), t(3), t(1), in_place=False),
    "group_norm": lambda: F.liger_group_norm(t(2, 4, 16), t(4), t(4), 4, 2, 1e-6),
    "dyt": lambda: F.liger_dyt(t(4, w(64)), t(1), t(w(64)), t(w(64))),
    "swiglu": lambda: F.liger_swiglu(t(4, w(64)), t(4, w(64))),
    "geglu": lambda: F.liger_geglu(t(4, w(64)), t(4, w(64))),
    "relu_squared": lambda: F.liger_relu_squared(t(4, w(64))),
    "softmax": lambda: F.liger_softmax(t(4, w(64))),
    "sparsemax": lambda: F.liger_sparsemax(t(4, w(64))),
    "cross_entropy": lambda: F.liger_cross_entropy(t(8, w(128)), labels(8, w(128))),
    "cross_entropy_z_loss": lambda: F.liger_cross_entropy(t(8, w(128)), labels(8, w(128)), lse_square_scale=1e-4,
                                                          return_z_loss=True),
    "fused_linear_cross_entropy": lambda: F.liger_fused_linear_cross_entropy(t(8, w(32)), t(w(128), w(32)),
                                                                             labels(8, w(128))),
    "jsd": lambda: F.liger_jsd(t(8, w(64)).log_softmax(-1), t(8, w(64), grad=False).log_softmax(-1)),
    "fused_linear_jsd": lambda: F.liger_fused_linear_jsd(t(8, w(32)), t(w(64), w(32)), t(8, w(32), grad=False),
                                                         t(w(64), w(32), grad=False)),
    "kl_div": lambda: F.liger_kl_div(t(8, w(64)).log_softmax(-1), t(8, w(64), grad=False).softmax(-1)),
    "tvd": lambda: F.liger_tvd(t(8, w(64)).softmax(-1), t(8, w(64), grad=False).softmax(-1)),
    "rope": lambda: F.liger_rope(*rope_inputs()),
    "multi_token_attention": lambda: F.liger_multi_token_attention(t(1, 2, 8, 8), t(2, 1, 3, 3), padding=1, groups=2),
}


def main(argv: list[str]) -> int:
    global DTYPE, SCALE
    scales = [1]
    if "--scales" in argv:  # `--scales 1 2 4 [--] op ...`
        at = argv.index("--scales")
        given = [a for a in argv[at + 1:] if a.isdigit()]
        scales = [int(a) for a in given] or scales
        argv = argv[:at] + argv[at + 1 + len(given):]
    names = [a for a in argv if a != "--"]
    ran, failed = [], []
    for SCALE, DTYPE in [(scale, dtype) for scale in scales for dtype in DTYPES]:
        for name, op in OPS.items():
            if names and name not in names:
                continue
            label = f"{name} ({str(DTYPE).removeprefix('torch.')}, width x{SCALE})"
            try:
                backward(op())
                ran.append(label)
                print(f"ran {label}", file=sys.stderr)
            except Exception as exc:  # one op this machine cannot run must not hide the others
                failed.append(label)
                first = str(exc).splitlines()[0][:200] if str(exc) else ""
                print(f"skipped {label}: {type(exc).__name__}: {first}", file=sys.stderr)
                traceback.print_exc(limit=1, file=sys.stderr)
    print(f"{len(ran)} ops ran, {len(failed)} skipped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
