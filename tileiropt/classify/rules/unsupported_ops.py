"""Triton operations a CUDA Tile IR release does not lower (TIR001-TIR006, TIR015-TIR017): inline PTX,
gather, scaled dots, libdevice calls, map_elementwise, erf, histograms, helpers kept out of line, scalar unsplats.
On a release without them the kernel fails to compile (or, with runtime fallback on, silently runs on PTX)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tileiropt.classify.facts import TL
from tileiropt.classify.rules.base import CallRule, Finding, KernelContext, Rule, compile_fails, on

# Functions of `triton.language.math` that are MLIR math ops; anything else there is a libdevice
# extern (the Triton 2.x spelling, e.g. `tl.math.tanh`).
MATH_BUILTINS = frozenset({"abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log",
                           "log2", "rsqrt", "sin", "sqrt", "sqrt_rn", "umulhi"})


class InlineAsm(CallRule):
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


class Gather(CallRule):
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


class DotScaled(CallRule):
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


NVIDIA_EXTRAS = ("cuda", "libdevice")  # `triton.language.extra.<these>`: NVIDIA's; any other is another backend's


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
        "from triton.language.extra.cann.extension import extract_slice\n@triton.jit\ndef k(x_ptr):\n"
        "    tl.store(x_ptr, extract_slice(tl.load(x_ptr), [0], [8], [1]))\n",  # another backend's
        "from triton.language.extra.hip import libdevice\n@triton.jit\ndef k(x_ptr):\n"
        "    tl.store(x_ptr, libdevice.tanh(tl.load(x_ptr)))\n",  # another backend's, though NVIDIA's maps tanh
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        mapped = set(ctx.release.feature(self.feature).items("mapped_symbols"))
        for call in ctx.facts.calls:
            name = call.name
            if name is None:
                continue
            short = name.removeprefix("triton.language.")
            function = short.rsplit(".", 1)[-1]
            vendor = name[len(TL + "extra."):].split(".", 1)[0] if name.startswith(TL + "extra.") else None
            if vendor is not None and vendor not in NVIDIA_EXTRAS:  # before the mapped names: not NVIDIA's at all
                yield self.finding(call.line, f"{short} is another backend's extension (`extra.{vendor}`): the "
                                              "kernel is written for that backend, not for NVIDIA GPUs, so TileIR "
                                              "does not apply to it",
                                   hint="leave it out of the TileIR port (a library run: --exclude its folder)")
                continue
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


class MapElementwise(CallRule):
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


class Erf(CallRule):
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


class Histogram(CallRule):
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
        for decorator in ctx.scan.layers(ctx.kernel.name, ctx.node):  # `k = triton.jit(k, noinline=True)` too
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


RULES: list[Rule] = [InlineAsm(), Gather(), DotScaled(), ExternElementwise(), MapElementwise(), Erf(), Histogram(),
                     NoInline(), Unsplat()]
