"""Operations a CUDA Tile IR release does not support: they fail to compile (or, where the release
has runtime fallback and it is on, silently run on PTX). Each rule names the release `feature` it
checks; what a release supports is data (tileiropt/releases/*.toml)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tileiropt.classify.facts import ATOMICS, TL, CallFact
from tileiropt.classify.names import call_name
from tileiropt.classify.rules.base import Finding, KernelContext, Rule, compile_fails

# Functions of `triton.language.math` that are MLIR math ops; anything else there is a libdevice
# extern (the Triton 2.x spelling, e.g. `tl.math.tanh`).
MATH_BUILTINS = frozenset({"abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log",
                           "log2", "rsqrt", "sin", "sqrt", "sqrt_rn", "umulhi"})
DESCRIPTOR_UNSUPPORTED = frozenset({"gather", "scatter", "atomic_add", "atomic_and", "atomic_max", "atomic_min",
                                    "atomic_or", "atomic_xor"})


def on(ctx: KernelContext) -> str:
    """`not supported by CUDA Tile IR 13.4` and the like: every message names its release."""
    return f"not supported by {ctx.release.label()}"


class _CallRule(Rule):
    """A rule that fires on every call to one of `names` (qualified Triton names)."""

    names: frozenset[str] = frozenset()
    what: str = ""  # e.g. "tl.gather (tt.gather)"

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        note = ctx.release.feature(self.feature).note if self.feature else ""
        for call in ctx.calls_named(*self.names):
            yield self.finding(call.line, f"{self.what} is {on(ctx)}" + (f" ({note})" if note else ""))


class InlineAsm(_CallRule):
    feature = "inline_asm"
    what = "tl.inline_asm_elementwise (tt.elementwise_inline_asm)"
    code = "TIR001"
    name = "inline-asm"
    severity = "error"
    message = "tl.inline_asm_elementwise is not supported by TileIR (tt.elementwise_inline_asm)"
    hint = "express the operation with tl.* math, or keep this kernel on the PTX backend"
    names = frozenset({TL + "inline_asm_elementwise"})
    detects = "`tl.inline_asm_elementwise` (tt.elementwise_inline_asm)"
    why = compile_fails("Inline PTX has no meaning in Tile IR, whatever it computes.")
    VALID = ["@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    tl.store(x_ptr, x * 2)\n"]
    INVALID = [
        "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n"
        "    y = tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', [x], dtype=tl.int32, is_pure=True, pack=1)\n"
        "    tl.store(x_ptr, y)\n",
    ]


class Gather(_CallRule):
    feature = "gather"
    what = "tl.gather (tt.gather)"
    code = "TIR002"
    name = "gather"
    severity = "error"
    message = "tl.gather is not supported by TileIR (tt.gather)"
    hint = "load with computed offsets (tl.load(ptr + idx)) instead of gathering from a tile"
    names = frozenset({TL + "gather"})
    detects = "`tl.gather` (tt.gather)"
    why = compile_fails("13.4 lowers tl.gather, slowly on large tiles.")
    VALID = ["@triton.jit\ndef k(x_ptr, i_ptr):\n    i = tl.load(i_ptr + tl.arange(0, 16))\n"
             "    tl.store(x_ptr, tl.load(x_ptr + i))\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, i_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 16))\n"
               "    i = tl.load(i_ptr + tl.arange(0, 16))\n    tl.store(x_ptr, tl.gather(x, i, 0))\n"]


class DotScaled(_CallRule):
    feature = "dot_scaled"
    what = "tl.dot_scaled (tt.dot_scaled)"
    code = "TIR003"
    name = "dot-scaled"
    severity = "error"
    message = "tl.dot_scaled is not supported by TileIR (tt.dot_scaled)"
    hint = "dequantise the operands and use tl.dot, or keep this kernel on the PTX backend"
    names = frozenset({TL + "dot_scaled"})

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        feature = ctx.release.feature(self.feature)
        for call in ctx.calls_named(*self.names):
            formats = [a.value for a in call.node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            formats += [k.value.value for k in call.node.keywords if k.arg in ("lhs_format", "rhs_format")
                        and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)]
            if feature.status == "partial" and len(formats) == 2 and formats[0] == formats[1] \
                    and formats[0] in feature.items("formats"):
                continue
            yield self.finding(call.line, f"tl.dot_scaled {' x '.join(formats) or '(formats known at run time)'} "
                                          f"is {on(ctx)}" + (f" ({feature.note})" if feature.note else ""))
    detects = ("`tl.dot_scaled`; on a release that supports some forms (13.4: matching FP4/FP8 formats with scales "
        "on both operands), the others")
    why = compile_fails("Scaled dots map to Tile IR's scaled MMA only for the format pairs the release lists.")
    VALID = ["@triton.jit\ndef k(a, b, c):\n    tl.store(c, tl.dot(tl.load(a), tl.load(b)))\n"]
    INVALID = ["@triton.jit\ndef k(a, sa, b, sb, c):\n"
               "    tl.store(c, tl.dot_scaled(tl.load(a), tl.load(sa), 'e4m3', tl.load(b), tl.load(sb), 'e4m3'))\n"]


class ExternElementwise(Rule):
    feature = "extern_elementwise"
    code = "TIR004"
    name = "extern-elementwise"
    severity = "error"
    message = "libdevice / extern function calls are not supported by TileIR (tt.extern_elementwise)"
    hint = "use the tl.* equivalent (tl.exp, tl.sqrt, tl.rsqrt, ...) or write the formula out"
    detects = ("libdevice / extern calls outside the release's mapped symbols: `triton.language.extra.*` (any import "
        "spelling), `tl.math.<fn>` that is not a builtin math op (the Triton 2.x libdevice spelling), "
        "`tl.extern_elementwise`")
    why = compile_fails("The converter maps a fixed set of libdevice symbols to Tile IR math; any other extern "
        "symbol has no lowering.")
    VALID = [
        "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    tl.store(x_ptr, tl.math.rsqrt(x) + tl.exp(x))\n",
        "from triton.language.extra import libdevice\n@triton.jit\ndef k(x_ptr):\n"
        "    tl.store(x_ptr, libdevice.tanh(tl.load(x_ptr)))\n",  # a mapped symbol
        "from triton.language.math import rsqrt\n@triton.jit\ndef k(x_ptr):\n"
        "    tl.store(x_ptr, rsqrt(tl.load(x_ptr)))\n",
    ]
    INVALID = [
        "from triton.language.extra import libdevice\n@triton.jit\ndef k(x_ptr):\n"
        "    tl.store(x_ptr, libdevice.log1p(tl.load(x_ptr)))\n",
        "from triton.language.extra.cuda.libdevice import expm1\n@triton.jit\ndef k(x_ptr):\n"
        "    tl.store(x_ptr, expm1(tl.load(x_ptr)))\n",
        "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.math.erfc(tl.load(x_ptr)))\n",
        "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.extra.cuda.libdevice.cbrt(tl.load(x_ptr)))\n",
        "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n"
        "    y = tl.extern_elementwise('', '', [x], {(tl.float32,): ('__nv_log1pf', tl.float32)}, is_pure=True)\n"
        "    tl.store(x_ptr, y)\n",
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        mapped = set(ctx.release.feature(self.feature).items("mapped_symbols"))
        for call in ctx.facts.calls:
            name = call.name
            if name is None:
                continue
            short = name.removeprefix("triton.language.")
            function = short.rsplit(".", 1)[-1]
            if {f"__nv_{function}", f"__nv_{function}f"} & mapped:
                continue  # the release lowers this libdevice function
            if name.startswith(TL + "extra."):
                yield self.finding(call.line, f"{short} is an extern (libdevice) call {on(ctx)}"
                                              + (" (not among its mapped symbols)" if mapped else ""))
            elif name.startswith(TL + "math.") and name[len(TL + "math."):] not in MATH_BUILTINS:
                yield self.finding(call.line, f"tl.{short} is a libdevice extern in this Triton spelling, {on(ctx)}"
                                              + (" (not among its mapped symbols)" if mapped else ""))
            elif name == TL + "extern_elementwise":
                yield self.finding(call.line, f"tl.extern_elementwise is {on(ctx)} unless its symbol is one the "
                                              "release maps", severity="warning" if mapped else None)


class MapElementwise(_CallRule):
    feature = "map_elementwise"
    what = "tl.map_elementwise (tt.map_elementwise)"
    code = "TIR005"
    name = "map-elementwise"
    severity = "error"
    message = "tl.map_elementwise is not supported by TileIR (tt.map_elementwise)"
    hint = "write the scalar function as tile operations (tl.where, arithmetic)"
    names = frozenset({TL + "map_elementwise"})
    detects = "`tl.map_elementwise` (tt.map_elementwise)"
    why = compile_fails("13.4 lowers it.")
    VALID = ["@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    tl.store(x_ptr, tl.where(x > 0, x, 0.0))\n"]
    INVALID = ["@triton.jit\ndef f(x):\n    return x\n\n@triton.jit\ndef k(x_ptr):\n"
               "    tl.store(x_ptr, tl.map_elementwise(f, tl.load(x_ptr)))\n"]


class Erf(_CallRule):
    feature = "erf"
    what = "erf (math.erf)"
    code = "TIR006"
    name = "erf"
    severity = "error"
    message = "erf is not supported by TileIR (math.erf)"
    hint = "use the tanh form of GELU, 0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x))), or an erf polynomial"
    names = frozenset({TL + "erf", TL + "math.erf"})
    detects = "`tl.erf`, `tl.math.erf` (math.erf; a libdevice erf is TIR004)"
    why = compile_fails("No release so far lowers math.erf; GELU's erf form is the usual source.")
    AFTER = ("@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    inner = 0.7978845608 * (x + 0.044715 * x * x * "
        "x)\n    tl.store(x_ptr, 0.5 * x * (1 + (2 * tl.sigmoid(2 * inner) - 1)))  # tanh form of GELU\n")
    VALID = ["@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    tl.store(x_ptr, x * tl.sigmoid(1.702 * x))\n"]
    INVALID = [
        "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    tl.store(x_ptr, 0.5 * x * (1 + tl.erf(x * 0.7071)))\n",
        "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.math.erf(tl.load(x_ptr)))\n",
    ]


def _dtype_of(call: CallFact, ctx: KernelContext, keyword: str, index: int) -> str | None:
    """The Triton dtype named where an atomic's value is cast (`val.to(tl.bfloat16)`), or of the
    pointer when it is cast to a typed pointer; None when it is only known at run time."""
    node = call.node
    candidates: list[ast.expr] = []
    if len(node.args) > index:
        candidates.append(node.args[index])
    candidates += [k.value for k in node.keywords if k.arg == keyword]
    if node.args:
        candidates.append(node.args[0])
    for candidate in candidates:
        for sub in ast.walk(candidate):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "to" and sub.args:
                name = call_name(sub.args[0], ctx.aliases)
                if name and name.startswith(TL):
                    return name[len(TL):]
                if isinstance(sub.args[0], ast.Call) and call_name(sub.args[0], ctx.aliases) == TL + "pointer_type":
                    inner = sub.args[0].args[0] if sub.args[0].args else None
                    inner_name = call_name(inner, ctx.aliases) if inner is not None else None
                    if inner_name and inner_name.startswith(TL):
                        return inner_name[len(TL):]
    return None


SHORT_DTYPES = {"bfloat16": "bf16", "float16": "f16"}  # Triton dtype names -> the TTIR spelling releases use
FLOAT_KINDS = {"atomic_add": "fadd", "atomic_max": "max", "atomic_min": "min", "atomic_xchg": "exch"}


class AtomicRmw16(Rule):
    feature = "atomic_rmw_16bit"
    code = "TIR007"
    name = "atomic-rmw-16bit"
    severity = "error"
    message = "atomic read-modify-write on a 16-bit float is not supported by this release (atomic_rmw)"
    hint = "accumulate in a float32 buffer and cast afterwards"
    rmw = ATOMICS - {TL + "atomic_cas"}
    detects = ("`tl.atomic_max/min/xchg/...` (and on 13.1 `tl.atomic_add`) on a 16-bit float; a warning \"depends on "
        "runtime dtype\" when the dtype is not visible")
    why = compile_fails("Tile IR's atomic read-modify-write on bf16/f16 came with 13.4, for add only.")
    VALID = [
        "@triton.jit\ndef k(x_ptr, out_ptr):\n    tl.atomic_add(out_ptr, tl.load(x_ptr).to(tl.float32))\n",
        "@triton.jit\ndef k(x_ptr, out_ptr):\n    tl.store(out_ptr, tl.load(x_ptr))\n",
    ]
    INVALID = [
        "@triton.jit\ndef k(x_ptr, out_ptr):\n    tl.atomic_add(out_ptr, tl.load(x_ptr).to(tl.bfloat16))\n",
        "@triton.jit\ndef k(x_ptr, out_ptr):\n    tl.atomic_max(out_ptr, tl.load(x_ptr))\n",  # runtime dtype
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        feature = ctx.release.feature(self.feature)
        dtypes = set(feature.items("dtypes"))
        kinds = set(feature.items("supported_kinds")) if feature.status == "partial" else set()
        names = " / ".join(sorted(name for name, short in SHORT_DTYPES.items() if short in dtypes))
        for call in ctx.calls_named(*self.rmw):
            assert call.name is not None  # `calls_named` finds calls by their Triton name
            op = call.name.removeprefix(TL)
            if FLOAT_KINDS.get(op) in kinds:
                continue  # the release supports this kind on 16-bit floats
            dtype = _dtype_of(call, ctx, "val", 1)
            if SHORT_DTYPES.get(dtype or "") in dtypes:
                yield self.finding(call.line, f"tl.{op} on {dtype} is {on(ctx)} (atomic_rmw)")
            elif dtype is None:
                yield self.finding(
                    call.line,
                    f"tl.{op}: element type depends on runtime dtype; {ctx.release.label()} rejects atomic_rmw "
                    f"on {names}",
                    hint="make sure the pointer never points to a 16-bit float (accumulate in float32), or cast "
                         "the value explicitly so the dtype is visible",
                    severity="warning")


class AtomicCas16(Rule):
    feature = "atomic_cas_16bit"
    code = "TIR008"
    name = "atomic-cas-16bit"
    severity = "error"
    message = "atomic compare-and-swap on float16/bfloat16 is not supported by TileIR (atomic_cas)"
    hint = "use a 32-bit lock word or value"
    detects = "`tl.atomic_cas` on float16/bfloat16; a warning when the dtype is a run-time matter"
    why = compile_fails("Compare-and-swap works on 32- and 64-bit words only.")
    VALID = ["@triton.jit\ndef k(lock_ptr):\n    tl.atomic_cas(lock_ptr.to(tl.pointer_type(tl.int32)), 0, 1)\n"]
    INVALID = [
        "@triton.jit\ndef k(p):\n    tl.atomic_cas(p, tl.zeros([1], tl.float16).to(tl.float16), 1.0)\n",
        "@triton.jit\ndef k(lock_ptr):\n    tl.atomic_cas(lock_ptr, 0, 1)\n",  # runtime dtype
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        dtypes = set(ctx.release.feature(self.feature).items("dtypes"))
        for call in ctx.calls_named(TL + "atomic_cas"):
            dtype = _dtype_of(call, ctx, "cmp", 1)
            if SHORT_DTYPES.get(dtype or "") in dtypes:
                yield self.finding(call.line, f"tl.atomic_cas on {dtype} is {on(ctx)}")
            elif dtype is None:
                yield self.finding(
                    call.line, f"tl.atomic_cas: element type depends on runtime dtype; {ctx.release.label()} "
                               "rejects atomic_cas on float16/bfloat16",
                    hint="make sure the lock/flag buffer is int32 (or cast the pointer with tl.pointer_type)",
                    severity="warning")


class RtzDowncast(Rule):
    feature = "rtz_downcast"
    code = "TIR009"
    name = "rtz-downcast"
    severity = "error"
    message = "round-toward-zero float downcast is not supported by TileIR (cuda_tile.ftof rtz)"
    hint = "drop fp_downcast_rounding='rtz' (round-to-nearest is the default)"
    detects = ("`.to(..., fp_downcast_rounding=\"rtz\")`, `tl.cast(..., fp_downcast_rounding=\"rtz\")`; on 13.4 only "
        "to FP8 E5M2")
    why = compile_fails("The float conversion op takes round-to-nearest; 13.4 adds round-toward-zero except to FP8 "
        "E5M2.")
    VALID = ["@triton.jit\ndef k(x_ptr, y_ptr):\n    tl.store(y_ptr, tl.load(x_ptr).to(tl.float16))\n"]
    INVALID = [
        "@triton.jit\ndef k(x_ptr, y_ptr):\n"
        "    tl.store(y_ptr, tl.load(x_ptr).to(tl.float8e5, fp_downcast_rounding='rtz'))\n",
        "@triton.jit\ndef k(x_ptr, y_ptr):\n"
        "    tl.store(y_ptr, tl.load(x_ptr).to(tl.float16, fp_downcast_rounding='rtz'))\n",
        "@triton.jit\ndef k(x_ptr, y_ptr):\n"
        "    tl.store(y_ptr, tl.cast(tl.load(x_ptr), tl.bfloat16, fp_downcast_rounding=\"rtz\"))\n",
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        feature = ctx.release.feature(self.feature)
        for call in ctx.facts.calls:
            if call.method != "to" and call.name != TL + "cast":
                continue
            for keyword in call.node.keywords:
                if not (keyword.arg == "fp_downcast_rounding" and isinstance(keyword.value, ast.Constant)
                        and keyword.value.value == "rtz"):
                    continue
                target = call.node.args[-1] if call.node.args else None
                target_name = (call_name(target, ctx.aliases) or "").removeprefix(TL) if target is not None else ""
                if feature.status == "partial" and not _fp8_e5(target_name, feature.items("unsupported_targets")):
                    continue
                yield self.finding(call.line, f"round-toward-zero downcast{' to ' + target_name if target_name else ''}"
                                              f" is {on(ctx)}" + (f" ({feature.note})" if feature.note else ""))


def _fp8_e5(name: str, unsupported: list[str]) -> bool:
    """Is the Triton dtype `name` (float8e5, float8e5b16) one of the TTIR types a release lists (f8E5M2)?"""
    return name.startswith("float8e5") and any(t.lower().startswith("f8e5") for t in unsupported)


class TmaGatherScatterReduce(Rule):
    code = "TIR010"
    name = "tma-gather-scatter-reduce"
    severity = "error"
    message = "TMA gather/scatter/reduce on a tensor descriptor is not supported by TileIR"
    hint = "use desc.load / desc.store, or pointer loads for irregular access"
    detects = "`desc.gather`, `desc.scatter` (13.1), `desc.atomic_*` on a tensor descriptor (13.4: float min/max only)"
    why = compile_fails("TMA gather/scatter came with 13.4; a TMA reduce with floating-point min/max is still missing.")
    VALID = ["@triton.jit\ndef k(a_desc, o_desc):\n    o_desc.store([0, 0], a_desc.load([0, 0]))\n"]
    INVALID = [
        "@triton.jit\ndef k(a_desc, idx_ptr):\n    rows = tl.load(idx_ptr + tl.arange(0, 8))\n"
        "    x = a_desc.gather(rows, 0)\n    a_desc.store([0, 0], x)\n",
        "@triton.jit\ndef k(x_ptr, M, N):\n    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16])\n"
        "    d.atomic_max([0, 0], tl.zeros([16, 16], tl.float32))\n",
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        candidates = [(c, c.receiver, c.method) for c in ctx.facts.calls
                      if c.method in DESCRIPTOR_UNSUPPORTED and isinstance(c.receiver, ast.Name)]
        if not candidates:
            return
        descriptors = _descriptor_names(ctx)
        moves, reduce = ctx.release.feature("tma_gather_scatter"), ctx.release.feature("tma_reduce")
        float_kinds = reduce.items("unsupported_float_kinds")
        for call, receiver, method in candidates:
            if receiver.id not in descriptors:
                continue
            where = f"{receiver.id}.{method}"
            if not method.startswith("atomic"):
                if moves.status != "supported":
                    yield self.finding(call.line, f"{where}: TMA {method} is {on(ctx)}")
            elif reduce.status == "unsupported":
                yield self.finding(call.line, f"{where}: TMA reduce is {on(ctx)}")
            elif reduce.status == "partial" and method.removeprefix("atomic_") in float_kinds:
                yield self.finding(call.line, f"{where}: TMA reduce {method.removeprefix('atomic_')} on a "
                                              f"floating-point tensor is {on(ctx)} (integers are fine)",
                                   severity="warning")


def _descriptor_names(ctx: KernelContext) -> set[str]:
    """Names that hold tensor descriptors: made in the kernel, or used with desc.load([...])."""
    names: set[str] = set()
    for call in ctx.facts.calls:
        if (call.method in ("load", "store") and isinstance(call.receiver, ast.Name) and call.node.args
                and isinstance(call.node.args[0], (ast.List, ast.Tuple))):
            names.add(call.receiver.id)
    for node in ast.walk(ctx.node) if "make_tensor_descriptor" in ctx.scan.text.source else ():
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            name = call_name(node.value, ctx.aliases) or ""
            if name.endswith("make_tensor_descriptor"):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for param in ctx.kernel.params:
        annotation = (param.annotation or "").replace(" ", "")
        if "tensor_descriptor" in annotation or param.name.endswith("_desc"):
            names.add(param.name)
    return names


class TmaPadding(Rule):
    feature = "tma_padding"
    code = "TIR011"
    name = "tma-padding"
    severity = "error"
    message = "a non-default TMA padding value is not supported by TileIR"
    hint = "keep the default zero padding and apply the fill with tl.where after the load"
    detects = ("`padding_option=` other than `\"zero\"` on device descriptors; `TensorDescriptor(..., padding=...)` "
        "other than zero in the launching function")
    why = compile_fails("Tensor-descriptor loads fill out-of-bounds elements with zero only.")
    VALID = ["@triton.jit\ndef k(x_ptr, M, N):\n    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16])\n"
             "    d.store([0, 0], d.load([0, 0]))\n",
             "@triton.jit\ndef k(x_ptr, M, N):\n"
             "    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16], padding_option='zero')\n"
             "    d.store([0, 0], d.load([0, 0]))\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, M, N):\n"
               "    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16], padding_option='nan')\n"
               "    d.store([0, 0], d.load([0, 0]))\n",
               "from triton.tools.tensor_descriptor import TensorDescriptor\n"
               "@triton.jit\ndef k(x_desc):\n    x_desc.store([0, 0], x_desc.load([0, 0]))\n\n"
               "def run(x):\n    d = TensorDescriptor.from_tensor(x, [16, 16], padding='nan')\n    k[(1,)](d)\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        if "padding" not in ctx.scan.text.source:  # the keyword this rule looks for (speed only)
            return
        for node in _with_wrappers(ctx):
            for sub in ast.walk(node):
                if not isinstance(sub, ast.Call):
                    continue
                for keyword in sub.keywords:
                    if keyword.arg not in ("padding_option", "padding"):
                        continue
                    name = call_name(sub, ctx.aliases) or ""
                    func_text = ctx.source(sub.func)
                    if keyword.arg == "padding" and "TensorDescriptor" not in func_text:
                        continue
                    if keyword.arg == "padding_option" and not name.startswith(TL):
                        continue
                    value = keyword.value
                    if isinstance(value, ast.Constant) and value.value in ("zero", "", None):
                        continue
                    yield self.finding(sub.lineno, f"TMA padding {ctx.source(value)} is {on(ctx)} "
                                                   "(only the default zero padding)")


def _with_wrappers(ctx: KernelContext) -> list[ast.AST]:
    """The kernel and the functions that launch it (where host TensorDescriptors are built)."""
    nodes: list[ast.AST] = [ctx.node]
    for launch in ctx.kernel.launches:
        wrapper = ctx.scan.launch_functions.get((ctx.kernel.name, launch.line))
        if wrapper is not None and wrapper not in nodes:
            nodes.append(wrapper)
    return nodes


class Int64Offsets(Rule):
    feature = "i64_descriptor_coordinates"
    code = "TIR012"
    name = "int64-descriptor-coordinates"
    severity = "error"
    message = "a value cast to int64 is a tensor-descriptor coordinate: i64 coordinates are not supported"
    hint = "pass int32 coordinates (`.to(tl.int32)`); 64-bit pointer offsets are fine"
    detects = ("a value cast to int64 (`.to(tl.int64)`, `.cast`, `tl.cast`) used as a tensor-descriptor coordinate; "
        "64-bit pointer offsets are fine and not reported")
    why = compile_fails("Tile IR takes tensor-descriptor coordinates as 32-bit integers.")
    VALID = ["@triton.jit\ndef k(x_ptr, stride):\n    row = tl.program_id(0)\n"
             "    tl.store(x_ptr + row * stride, 1.0)\n",
             "@triton.jit\ndef k(x_ptr, stride):\n    row = tl.program_id(0).to(tl.int64)\n"
             "    tl.store(x_ptr + row * stride, 1.0)\n",  # i64 pointer offsets are fine
             "@triton.jit\ndef k(x_ptr, out_ptr):\n    n = tl.load(x_ptr).to(tl.int64)\n    tl.store(out_ptr, n)\n"]
    INVALID = ["@triton.jit\ndef k(a_desc, M):\n    off = (tl.program_id(0) * 128).to(tl.int64)\n"
               "    a_desc.store([off, 0], a_desc.load([off, 0]))\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        reported: set[int] = set()
        for access in ctx.facts.accesses:
            if access.name.startswith("tl.") and "descriptor" not in access.name:
                continue  # a pointer offset: 64-bit offsets lower fine
            for line in access.pointer.i64_lines():
                if line not in reported:
                    reported.add(line)
                    yield self.finding(line, f"cast to int64 reaches a coordinate of {access.name} (line "
                                             f"{access.line}): i64 descriptor coordinates are {on(ctx)}")


class BlockPointer(Rule):
    feature = "block_pointer"
    code = "TIR013"
    name = "block-pointer"
    severity = "error"
    message = "block pointers (tl.make_block_ptr / tl.advance) are not supported by TileIR"
    hint = ("rewrite to a tensor descriptor (TMA): tl.make_tensor_descriptor and desc.load([row, col]) in place of "
            "the block pointer, integer offsets in place of tl.advance (`tileiropt rule TIR013` shows the rewrite)")
    detects = ("`tl.make_block_ptr`, `tl.advance`: an error where the release does not lower them (13.1); a `perf` "
        "finding where it emulates them through plain pointers (13.4, 13.5)")
    why = ("13.1 cannot lower tt.make_tensor_ptr / tt.advance: the kernel fails to compile. 13.4 and 13.5 lower them "
        "by emulating the block pointer through plain (tensor-of-pointer) loads and stores: the results are right, "
        "but the loads do not use TMA, TileIR's fast path for tiles. Triton itself deprecated tl.make_block_ptr (3.7, "
        "3.8) and removed it in 3.9, so the rewrite to tensor descriptors is due anyway.")
    AFTER = ("@triton.jit\ndef k(x_ptr, M, N):\n    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16])  "
        "# shape, strides, block\n    d.store([0, 0], d.load([0, 0]))  # the block pointer's offsets; tl.advance: add "
        "to them\n")
    VALID = ["@triton.jit\ndef k(x_ptr, M, N):\n    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16])\n"
             "    d.store([0, 0], d.load([0, 0]))\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, M, N):\n"
               "    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))\n"
               "    tl.store(p, tl.load(p, boundary_check=(0, 1)))\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        feature = ctx.release.feature(self.feature)
        for line, text in ctx.facts.block_pointers:
            if feature.status == "partial":  # 13.4: lowered through plain pointers, slow
                yield self.finding(line, f"{text}: block pointers are {feature.note or 'emulated'} on "
                                         f"{ctx.release.label()}", severity=feature.severity or "warning")
            else:
                yield self.finding(line, f"{text}: block pointers are {on(ctx)}")


class UnstructuredControlFlow(Rule):
    feature = "unstructured_control_flow"
    code = "TIR014"
    name = "unstructured-control-flow"
    severity = "error"
    message = "a `return` before the end of a kernel becomes unstructured control flow (cf.cond_br)"
    hint = "wrap the rest of the kernel in `if not <condition>:` instead of returning early, or mask the work"
    detects = "an early `return` (cf.cond_br) where the release cannot structure it (13.1)"
    why = compile_fails("An early return becomes cf.cond_br, a branch between blocks; 13.4 turns the common forms "
        "back into structured control flow.")
    VALID = ["@triton.jit\ndef k(x_ptr, n):\n    pid = tl.program_id(0)\n    if pid < n:\n"
             "        tl.store(x_ptr + pid, 1.0)\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, n):\n    pid = tl.program_id(0)\n    if pid >= n:\n        return\n"
               "    tl.store(x_ptr + pid, 1.0)\n"]

    def applies(self, ctx: KernelContext) -> bool:  # "partial" (structurable) is the common early return: fine
        return ctx.release.status(self.feature) == "unsupported"

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        last = ctx.node.body[-1] if ctx.node.body else None
        for node in ast.walk(ctx.node):
            if isinstance(node, ast.Return) and node is not last and not _tail_return(ctx.node.body, node):
                yield self.finding(node.lineno, f"an early `return` becomes cf.cond_br: unstructured control flow "
                                                f"is {on(ctx)}")


def _tail_return(body: list[ast.stmt], node: ast.Return) -> bool:
    """A return that ends the function on every path it is on (the last statement, or the last of a branch
    of a final `if`)."""
    if not body:
        return False
    last = body[-1]
    if last is node:
        return True
    if isinstance(last, ast.If):
        return _tail_return(last.body, node) or _tail_return(last.orelse, node)
    return False


class Histogram(_CallRule):
    feature = "histogram"
    what = "tl.histogram (tt.histogram)"
    code = "TIR015"
    name = "histogram"
    severity = "error"
    message = "tl.histogram is not supported by TileIR (tt.histogram)"
    hint = "count with tl.sum over a comparison (tl.sum((x[:, None] == bins[None, :]).to(tl.int32), 0))"
    names = frozenset({TL + "histogram"})
    detects = "`tl.histogram` (tt.histogram)"
    why = compile_fails("")
    VALID = ["@triton.jit\ndef k(x_ptr, y_ptr):\n    offs = tl.arange(0, 16)\n"
             "    tl.store(y_ptr + offs, tl.load(x_ptr + offs))\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, y_ptr):\n    offs = tl.arange(0, 16)\n"
               "    tl.store(y_ptr + offs, tl.histogram(tl.load(x_ptr + offs), 16))\n"]


class NoInline(Rule):
    feature = "noinline"
    code = "TIR016"
    name = "noinline"
    severity = "error"
    message = "a noinline JIT function (@triton.jit(noinline=True)) is not supported by TileIR"
    hint = "drop noinline=True so the helper is inlined"
    detects = "`@triton.jit(noinline=True)` helpers"
    why = compile_fails("Tile IR has no calls between kernels' device functions: every helper is inlined.")
    VALID = ["@triton.jit\ndef helper(x):\n    return x * 2\n\n@triton.jit\ndef k(x_ptr):\n"
             "    tl.store(x_ptr, helper(tl.load(x_ptr)))\n"]
    INVALID = ["@triton.jit(noinline=True)\ndef helper(x):\n    return x * 2\n\n@triton.jit\ndef k(x_ptr):\n"
               "    tl.store(x_ptr, helper(tl.load(x_ptr)))\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        for decorator in ctx.node.decorator_list:
            if isinstance(decorator, ast.Call) and any(
                    k.arg == "noinline" and isinstance(k.value, ast.Constant) and k.value.value is True
                    for k in decorator.keywords):
                yield self.finding(decorator.lineno, f"{ctx.kernel.name} is a noinline JIT function: {on(ctx)}")


class Unsplat(Rule):
    feature = "unsplat"
    code = "TIR017"
    name = "unsplat"
    severity = "error"
    message = "a one-element tensor turned into a scalar (tt.unsplat: x.item(), tl.reshape(x, ())) is not supported"
    hint = "keep the value a one-element tensor (index with a mask, or reduce with tl.sum)"
    detects = "`x.item()`, `tl.reshape(x, ())` (tt.unsplat; the IR check also sees `tl.split` to scalars)"
    why = compile_fails("13.4 lowers tt.unsplat.")
    VALID = ["@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 1))\n"
             "    tl.store(x_ptr + tl.arange(0, 1), x * 2)\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 1))\n"
               "    tl.store(x_ptr, x.item() * 2)\n",
               "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 1))\n"
               "    tl.store(x_ptr, tl.reshape(x, ()) * 2)\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        for call in ctx.facts.calls:
            node = call.node
            scalar = (call.method == "item" and not node.args) or (
                (call.name == TL + "reshape" or call.method == "reshape") and node.args
                and isinstance(node.args[-1], (ast.Tuple, ast.List)) and not node.args[-1].elts)
            if scalar:
                yield self.finding(call.line, f"`{ctx.source(node)}` becomes tt.unsplat: {on(ctx)}")


RULES: list[Rule] = [InlineAsm(), Gather(), DotScaled(), ExternElementwise(), MapElementwise(), Erf(),
                     AtomicRmw16(), AtomicCas16(), RtzDowncast(), TmaGatherScatterReduce(), TmaPadding(),
                     Int64Offsets(), BlockPointer(), UnstructuredControlFlow(), Histogram(), NoInline(),
                     Unsplat()]
