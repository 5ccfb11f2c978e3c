"""What each lint rule looks for and why it matters: the prose of a rule's page.

A rule's page (`tileiropt rule TIR006`, docs/rules.md, SARIF rule metadata) is built from the rule
class (code, name, severity, message, hint, VALID / INVALID examples), the release files (how each
release rates the rule's feature) and the two tables here: `DETECTS` (what the rule matches, in
detail) and `WHY` (what goes wrong on TileIR). `AFTER` names a fixed example where a rule's first
VALID example is not the rewrite of its first INVALID one; every AFTER example is also checked as
VALID by the tests.
"""

from __future__ import annotations

DETECTS = {
    "TIR001": "`tl.inline_asm_elementwise` (tt.elementwise_inline_asm)",
    "TIR002": "`tl.gather` (tt.gather)",
    "TIR003": "`tl.dot_scaled`; on a release that supports some forms (13.4: matching FP4/FP8 formats with scales on "
              "both operands), the others",
    "TIR004": "libdevice / extern calls outside the release's mapped symbols: `triton.language.extra.*` (any import "
              "spelling), `tl.math.<fn>` that is not a builtin math op (the Triton 2.x libdevice spelling), "
              "`tl.extern_elementwise`",
    "TIR005": "`tl.map_elementwise` (tt.map_elementwise)",
    "TIR006": "`tl.erf`, `tl.math.erf` (math.erf; a libdevice erf is TIR004)",
    "TIR007": "`tl.atomic_max/min/xchg/...` (and on 13.1 `tl.atomic_add`) on a 16-bit float; a warning \"depends on "
              "runtime dtype\" when the dtype is not visible",
    "TIR008": "`tl.atomic_cas` on float16/bfloat16; a warning when the dtype is a run-time matter",
    "TIR009": "`.to(..., fp_downcast_rounding=\"rtz\")`, `tl.cast(..., fp_downcast_rounding=\"rtz\")`; on 13.4 only "
              "to FP8 E5M2",
    "TIR010": "`desc.gather`, `desc.scatter` (13.1), `desc.atomic_*` on a tensor descriptor (13.4: float min/max "
              "only)",
    "TIR011": "`padding_option=` other than `\"zero\"` on device descriptors; `TensorDescriptor(..., padding=...)` "
              "other than zero in the launching function",
    "TIR012": "a value cast to int64 (`.to(tl.int64)`, `.cast`, `tl.cast`) used as a tensor-descriptor coordinate; "
              "64-bit pointer offsets are fine and not reported",
    "TIR013": "`tl.make_block_ptr`, `tl.advance`: an error where the release does not lower them (13.1); a `perf` "
              "finding where it emulates them through plain pointers (13.4, 13.5)",
    "TIR014": "an early `return` (cf.cond_br) where the release cannot structure it (13.1)",
    "TIR015": "`tl.histogram` (tt.histogram)",
    "TIR016": "`@triton.jit(noinline=True)` helpers",
    "TIR017": "`x.item()`, `tl.reshape(x, ())` (tt.unsplat; the IR check also sees `tl.split` to scalars)",
    "TIR101": "a pointer argument both loaded and stored in one kernel (the message says when a load follows a store)",
    "TIR102": "the value returned by an atomic is used (a counter, a ticket, a flag)",
    "TIR103": "`tl.atomic_cas` / `tl.atomic_xchg` in a while loop",
    "TIR104": "atomic accumulation of a dot kernel's output (split-K / stream-K)",
    "TIR105": "a buffer updated with atomics and read with a plain load in the same kernel",
    "TIR106": "a launch that passes the same tensor to a loaded and to a stored pointer parameter",
    "TIR201": "tensor-of-pointer `tl.load` / `tl.store` in a dot kernel (block-pointer loads are not tensors of "
              "pointers)",
    "TIR202": "a norm kernel whose block constexpr can exceed 8192: a default, an autotune config or a launch value "
              "> 8192, or `triton.next_power_of_2(...)` of the row length without a cap <= 8192",
    "TIR203": "a kernel defined inside a module-level block (`if HAS_TRITON:`, `try:`, `with ...:`) whose name "
              "another branch binds too: a plain-Python fallback under `else:`, or a second Triton kernel",
}

_COMPILE = ("The TileIR compiler has no lowering for it on the releases that rate it unsupported: the kernel fails "
            "to compile (\"Some ttir ops cannot be converted to tileir\"), or, on a release with runtime fallback "
            "switched on (TRITON_TILEIR_RUNTIME_FALLBACK=1), silently runs on PTX instead.")
_MEMORY = ("TileIR orders global-memory accesses only through data dependencies (an unordered memory model): two "
           "accesses that Triton's PTX path keeps in program order may be reordered.")

WHY = {
    "TIR001": f"{_COMPILE} Inline PTX has no meaning in Tile IR, whatever it computes.",
    "TIR002": f"{_COMPILE} 13.4 lowers tl.gather, slowly on large tiles.",
    "TIR003": f"{_COMPILE} Scaled dots map to Tile IR's scaled MMA only for the format pairs the release lists.",
    "TIR004": f"{_COMPILE} The converter maps a fixed set of libdevice symbols to Tile IR math; any other extern "
              "symbol has no lowering.",
    "TIR005": f"{_COMPILE} 13.4 lowers it.",
    "TIR006": f"{_COMPILE} No release so far lowers math.erf; GELU's erf form is the usual source.",
    "TIR007": f"{_COMPILE} Tile IR's atomic read-modify-write on bf16/f16 came with 13.4, for add only.",
    "TIR008": f"{_COMPILE} Compare-and-swap works on 32- and 64-bit words only.",
    "TIR009": f"{_COMPILE} The float conversion op takes round-to-nearest; 13.4 adds round-toward-zero except to FP8 "
              "E5M2.",
    "TIR010": f"{_COMPILE} TMA gather/scatter came with 13.4; a TMA reduce with floating-point min/max is still "
              "missing.",
    "TIR011": f"{_COMPILE} Tensor-descriptor loads fill out-of-bounds elements with zero only.",
    "TIR012": f"{_COMPILE} Tile IR takes tensor-descriptor coordinates as 32-bit integers.",
    "TIR013": "13.1 cannot lower tt.make_tensor_ptr / tt.advance: the kernel fails to compile. 13.4 and 13.5 lower "
              "them by emulating the block pointer through plain (tensor-of-pointer) loads and stores: the results "
              "are right, but the loads do not use TMA, TileIR's fast path for tiles. Triton itself deprecated "
              "tl.make_block_ptr (3.7, 3.8) and removed it in 3.9, so the rewrite to tensor descriptors is due "
              "anyway.",
    "TIR014": f"{_COMPILE} An early return becomes cf.cond_br, a branch between blocks; 13.4 turns the common forms "
              "back into structured control flow.",
    "TIR015": f"{_COMPILE}",
    "TIR016": f"{_COMPILE} Tile IR has no calls between kernels' device functions: every helper is inlined.",
    "TIR017": f"{_COMPILE} 13.4 lowers tt.unsplat.",
    "TIR101": f"{_MEMORY} A load meant to see an earlier store to the same buffer may read the old value; 13.4 adds "
              "memory tokens for accesses it can prove alias, not for every case.",
    "TIR102": f"{_MEMORY} A program that reads an atomic's result to decide what to do (a ticket, a last-block flag) "
              "may see the loads and stores around it reordered.",
    "TIR103": f"{_MEMORY} A lock does not protect the loads and stores after it: they are not ordered with the "
              "atomic that takes it.",
    "TIR104": f"{_MEMORY} Partial results that tile blocks exchange through global memory are not ordered with "
              "the reads of the final sum.",
    "TIR105": f"{_MEMORY} The plain load is not ordered after the atomics of other programs, nor after this one's.",
    "TIR106": f"{_MEMORY} Two pointer arguments to the same memory look independent to the compiler: it may reorder "
              "a store through one and a load through the other.",
    "TIR201": "TileIR compiles tiles for a whole CTA cluster and is at its best with TMA descriptors; tensor-of-"
              "pointer loads in a matrix multiply are a known slow path (the fork's README lists them).",
    "TIR202": "TileIR has no warp-count control for the reduction (num_warps is ignored or only a hint), so a norm "
              "kernel holding a very wide row in one block spills registers and runs slowly.",
    "TIR203": "Only one branch of the block runs at import, and which one is not known from the source: the analysis "
              "and `apply` take the (first) Triton kernel, so whatever the other branch binds runs without TileIR "
              "code, and a second Triton kernel of the same name is neither classified nor rewritten.",
}

AFTER = {
    "TIR006": "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n"
              "    inner = 0.7978845608 * (x + 0.044715 * x * x * x)\n"
              "    tl.store(x_ptr, 0.5 * x * (1 + (2 * tl.sigmoid(2 * inner) - 1)))  # tanh form of GELU\n",
    "TIR013": "@triton.jit\ndef k(x_ptr, M, N):\n"
              "    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16])  # shape, strides, block\n"
              "    d.store([0, 0], d.load([0, 0]))  # the block pointer's offsets; tl.advance: add to them\n",
}
