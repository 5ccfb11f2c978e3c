"""Operations the CUDA Tile IR backend does not support (CUDA 13.1): they fail to compile or
make the kernel fall back to the PTX backend."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tileiropt.analysis.facts import ATOMICS, TL, CallFact
from tileiropt.analysis.names import call_name
from tileiropt.analysis.rules.base import Finding, KernelContext, Rule

# Functions of `triton.language.math` that are MLIR math ops; anything else there is a libdevice
# extern (the Triton 2.x spelling, e.g. `tl.math.tanh`).
MATH_BUILTINS = frozenset({"abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log",
                           "log2", "rsqrt", "sin", "sqrt", "sqrt_rn", "umulhi"})
DESCRIPTOR_UNSUPPORTED = frozenset({"gather", "scatter", "atomic_add", "atomic_and", "atomic_max", "atomic_min",
                                    "atomic_or", "atomic_xor"})


class _CallRule(Rule):
    """A rule that fires on every call to one of `names` (qualified Triton names)."""

    names: frozenset[str] = frozenset()

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        for call in ctx.calls_named(*self.names):
            yield self.finding(call.line)


class InlineAsm(_CallRule):
    code = "TIR001"
    name = "inline-asm"
    severity = "error"
    message = "tl.inline_asm_elementwise is not supported by TileIR (tt.elementwise_inline_asm)"
    hint = "express the operation with tl.* math, or keep this kernel on the PTX backend"
    names = frozenset({TL + "inline_asm_elementwise"})
    VALID = ["@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    tl.store(x_ptr, x * 2)\n"]
    INVALID = [
        "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n"
        "    y = tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', [x], dtype=tl.int32, is_pure=True, pack=1)\n"
        "    tl.store(x_ptr, y)\n",
    ]


class Gather(_CallRule):
    code = "TIR002"
    name = "gather"
    severity = "error"
    message = "tl.gather is not supported by TileIR (tt.gather)"
    hint = "load with computed offsets (tl.load(ptr + idx)) instead of gathering from a tile"
    names = frozenset({TL + "gather"})
    VALID = ["@triton.jit\ndef k(x_ptr, i_ptr):\n    i = tl.load(i_ptr + tl.arange(0, 16))\n"
             "    tl.store(x_ptr, tl.load(x_ptr + i))\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, i_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 16))\n"
               "    i = tl.load(i_ptr + tl.arange(0, 16))\n    tl.store(x_ptr, tl.gather(x, i, 0))\n"]


class DotScaled(_CallRule):
    code = "TIR003"
    name = "dot-scaled"
    severity = "error"
    message = "tl.dot_scaled is not supported by TileIR (tt.dot_scaled)"
    hint = "dequantise the operands and use tl.dot, or keep this kernel on the PTX backend"
    names = frozenset({TL + "dot_scaled"})
    VALID = ["@triton.jit\ndef k(a, b, c):\n    tl.store(c, tl.dot(tl.load(a), tl.load(b)))\n"]
    INVALID = ["@triton.jit\ndef k(a, sa, b, sb, c):\n"
               "    tl.store(c, tl.dot_scaled(tl.load(a), tl.load(sa), 'e4m3', tl.load(b), tl.load(sb), 'e4m3'))\n"]


class ExternElementwise(Rule):
    code = "TIR004"
    name = "extern-elementwise"
    severity = "error"
    message = "libdevice / extern function calls are not supported by TileIR (tt.extern_elementwise)"
    hint = "use the tl.* equivalent (tl.exp, tl.sqrt, tl.rsqrt, ...) or write the formula out"
    VALID = [
        "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    tl.store(x_ptr, tl.math.rsqrt(x) + tl.exp(x))\n",
        "from triton.language.math import rsqrt\n@triton.jit\ndef k(x_ptr):\n"
        "    tl.store(x_ptr, rsqrt(tl.load(x_ptr)))\n",
    ]
    INVALID = [
        "from triton.language.extra import libdevice\n@triton.jit\ndef k(x_ptr):\n"
        "    tl.store(x_ptr, libdevice.tanh(tl.load(x_ptr)))\n",
        "from triton.language.extra.cuda.libdevice import tanh\n@triton.jit\ndef k(x_ptr):\n"
        "    tl.store(x_ptr, tanh(tl.load(x_ptr)))\n",
        "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.math.tanh(tl.load(x_ptr)))\n",
        "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.extra.cuda.libdevice.pow(tl.load(x_ptr), 2.0))\n",
        "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n"
        "    y = tl.extern_elementwise('', '', [x], {(tl.float32,): ('__nv_tanhf', tl.float32)}, is_pure=True)\n"
        "    tl.store(x_ptr, y)\n",
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        for call in ctx.facts.calls:
            name = call.name
            if name is None:
                continue
            short = name.removeprefix("triton.language.")
            if name.startswith(TL + "extra."):
                yield self.finding(call.line, f"{short} is an extern (libdevice) call: not supported by TileIR")
            elif name.startswith(TL + "math.") and name[len(TL + "math."):] not in MATH_BUILTINS:
                yield self.finding(call.line, f"tl.{short} is a libdevice extern in this Triton spelling: "
                                              "not supported by TileIR")
            elif name == TL + "extern_elementwise":
                yield self.finding(call.line)


class MapElementwise(_CallRule):
    code = "TIR005"
    name = "map-elementwise"
    severity = "error"
    message = "tl.map_elementwise is not supported by TileIR (tt.map_elementwise)"
    hint = "write the scalar function as tile operations (tl.where, arithmetic)"
    names = frozenset({TL + "map_elementwise"})
    VALID = ["@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    tl.store(x_ptr, tl.where(x > 0, x, 0.0))\n"]
    INVALID = ["@triton.jit\ndef f(x):\n    return x\n\n@triton.jit\ndef k(x_ptr):\n"
               "    tl.store(x_ptr, tl.map_elementwise(f, tl.load(x_ptr)))\n"]


class Erf(_CallRule):
    code = "TIR006"
    name = "erf"
    severity = "error"
    message = "erf is not supported by TileIR (math.erf)"
    hint = "use the tanh form of GELU, 0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x))), or an erf polynomial"
    names = frozenset({TL + "erf", TL + "math.erf"})
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


class AtomicRmwBf16(Rule):
    code = "TIR007"
    name = "atomic-rmw-bf16"
    severity = "error"
    message = "atomic read-modify-write on bfloat16 is not supported by TileIR (atomic_rmw)"
    hint = "accumulate in a float32 buffer and cast afterwards"
    rmw = ATOMICS - {TL + "atomic_cas"}
    VALID = [
        "@triton.jit\ndef k(x_ptr, out_ptr):\n    tl.atomic_add(out_ptr, tl.load(x_ptr).to(tl.float32))\n",
        "@triton.jit\ndef k(x_ptr, out_ptr):\n    tl.store(out_ptr, tl.load(x_ptr))\n",
    ]
    INVALID = [
        "@triton.jit\ndef k(x_ptr, out_ptr):\n    tl.atomic_add(out_ptr, tl.load(x_ptr).to(tl.bfloat16))\n",
        "@triton.jit\ndef k(x_ptr, out_ptr):\n    tl.atomic_max(out_ptr, tl.load(x_ptr))\n",  # runtime dtype
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        for call in ctx.calls_named(*self.rmw):
            op = call.name.removeprefix(TL)
            dtype = _dtype_of(call, ctx, "val", 1)
            if dtype == "bfloat16":
                yield self.finding(call.line, f"tl.{op} on bfloat16 is not supported by TileIR (atomic_rmw)")
            elif dtype is None:
                yield self.finding(
                    call.line,
                    f"tl.{op}: element type depends on runtime dtype; TileIR rejects atomic_rmw on bfloat16",
                    hint="make sure the pointer never points to bfloat16 (accumulate in float32), or cast the "
                         "value explicitly so the dtype is visible",
                    severity="warning")


class AtomicCas16(Rule):
    code = "TIR008"
    name = "atomic-cas-16bit"
    severity = "error"
    message = "atomic compare-and-swap on float16/bfloat16 is not supported by TileIR (atomic_cas)"
    hint = "use a 32-bit lock word or value"
    VALID = ["@triton.jit\ndef k(lock_ptr):\n    tl.atomic_cas(lock_ptr.to(tl.pointer_type(tl.int32)), 0, 1)\n"]
    INVALID = [
        "@triton.jit\ndef k(p):\n    tl.atomic_cas(p, tl.zeros([1], tl.float16).to(tl.float16), 1.0)\n",
        "@triton.jit\ndef k(lock_ptr):\n    tl.atomic_cas(lock_ptr, 0, 1)\n",  # runtime dtype
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        for call in ctx.calls_named(TL + "atomic_cas"):
            dtype = _dtype_of(call, ctx, "cmp", 1)
            if dtype in ("float16", "bfloat16"):
                yield self.finding(call.line, f"tl.atomic_cas on {dtype} is not supported by TileIR")
            elif dtype is None:
                yield self.finding(
                    call.line, "tl.atomic_cas: element type depends on runtime dtype; TileIR rejects "
                               "atomic_cas on float16/bfloat16",
                    hint="make sure the lock/flag buffer is int32 (or cast the pointer with tl.pointer_type)",
                    severity="warning")


class RtzDowncast(Rule):
    code = "TIR009"
    name = "rtz-downcast"
    severity = "error"
    message = "round-toward-zero float downcast is not supported by TileIR (cuda_tile.ftof rtz)"
    hint = "drop fp_downcast_rounding='rtz' (round-to-nearest is the default)"
    VALID = ["@triton.jit\ndef k(x_ptr, y_ptr):\n    tl.store(y_ptr, tl.load(x_ptr).to(tl.float16))\n"]
    INVALID = [
        "@triton.jit\ndef k(x_ptr, y_ptr):\n"
        "    tl.store(y_ptr, tl.load(x_ptr).to(tl.float16, fp_downcast_rounding='rtz'))\n",
        "@triton.jit\ndef k(x_ptr, y_ptr):\n"
        "    tl.store(y_ptr, tl.cast(tl.load(x_ptr), tl.bfloat16, fp_downcast_rounding=\"rtz\"))\n",
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        for call in ctx.facts.calls:
            if call.method != "to" and call.name != TL + "cast":
                continue
            for keyword in call.node.keywords:
                if (keyword.arg == "fp_downcast_rounding" and isinstance(keyword.value, ast.Constant)
                        and keyword.value.value == "rtz"):
                    yield self.finding(call.line)


class TmaGatherScatterReduce(Rule):
    code = "TIR010"
    name = "tma-gather-scatter-reduce"
    severity = "error"
    message = "TMA gather/scatter/reduce on a tensor descriptor is not supported by TileIR"
    hint = "use desc.load / desc.store, or pointer loads for irregular access"
    VALID = ["@triton.jit\ndef k(a_desc, o_desc):\n    o_desc.store([0, 0], a_desc.load([0, 0]))\n"]
    INVALID = [
        "@triton.jit\ndef k(a_desc, idx_ptr):\n    rows = tl.load(idx_ptr + tl.arange(0, 8))\n"
        "    x = a_desc.gather(rows, 0)\n    a_desc.store([0, 0], x)\n",
        "@triton.jit\ndef k(x_ptr, M, N):\n    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16])\n"
        "    d.atomic_add([0, 0], tl.zeros([16, 16], tl.float32))\n",
    ]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        descriptors = _descriptor_names(ctx)
        for call in ctx.facts.calls:
            if (call.method in DESCRIPTOR_UNSUPPORTED and isinstance(call.receiver, ast.Name)
                    and call.receiver.id in descriptors):
                yield self.finding(call.line, f"{call.receiver.id}.{call.method}: TMA "
                                              f"{'reduce' if call.method.startswith('atomic') else call.method} "
                                              "is not supported by TileIR")


def _descriptor_names(ctx: KernelContext) -> set[str]:
    """Names that hold tensor descriptors: made in the kernel, or used with desc.load([...])."""
    names: set[str] = set()
    for call in ctx.facts.calls:
        if (call.method in ("load", "store") and isinstance(call.receiver, ast.Name) and call.node.args
                and isinstance(call.node.args[0], (ast.List, ast.Tuple))):
            names.add(call.receiver.id)
    for node in ast.walk(ctx.node):
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
    code = "TIR011"
    name = "tma-padding"
    severity = "error"
    message = "a non-default TMA padding value is not supported by TileIR"
    hint = "keep the default zero padding and apply the fill with tl.where after the load"
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
                    yield self.finding(sub.lineno, f"TMA padding {ctx.source(value)} is not supported by TileIR "
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
    code = "TIR012"
    name = "int64-offsets"
    severity = "error"
    message = ("a value cast to int64 reaches a memory index: i64 memref indices are not supported by TileIR "
               "(error for tensor-descriptor indices; warning for pointer offsets, which may still lower)")
    hint = "keep offsets in int32 when the tensor has fewer than 2**31 elements (gate the cast on the size)"
    VALID = ["@triton.jit\ndef k(x_ptr, stride):\n    row = tl.program_id(0)\n"
             "    tl.store(x_ptr + row * stride, 1.0)\n",
             "@triton.jit\ndef k(x_ptr, out_ptr):\n    n = tl.load(x_ptr).to(tl.int64)\n    tl.store(out_ptr, n)\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, stride):\n    row = tl.program_id(0).to(tl.int64)\n"
               "    tl.store(x_ptr + row * stride, 1.0)\n",
               "@triton.jit\ndef k(x_ptr, stride):\n    row = tl.program_id(0)\n"
               "    x_ptr += tl.cast(row, tl.int64) * stride\n    tl.store(x_ptr, 1.0)\n",
               "@triton.jit\ndef k(a_desc, M):\n    off = (tl.program_id(0) * 128).to(tl.int64)\n"
               "    a_desc.store([off, 0], a_desc.load([off, 0]))\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        reported: set[int] = set()
        for access in ctx.facts.accesses:
            descriptor = not access.name.startswith("tl.") or "descriptor" in access.name
            for line in access.pointer.i64_lines():
                if line in reported:
                    continue
                reported.add(line)
                if descriptor:
                    yield self.finding(line, f"cast to int64 reaches the index of {access.name} (line {access.line}): "
                                             "i64 memref indices are not supported by TileIR")
                else:
                    yield self.finding(
                        line, f"cast to int64 reaches the address of {access.name} (line {access.line}): TileIR "
                              "lists i64 indices as unsupported (CUDA 13.1); pointer offsets may still lower",
                        hint="check that this kernel compiles under ENABLE_TILE=1 without falling back to PTX; "
                             "keep offsets in int32 where the tensor is small enough",
                        severity="warning")


class BlockPointer(Rule):
    code = "TIR013"
    name = "block-pointer"
    severity = "error"
    message = "block pointers (tl.make_block_ptr / tl.advance) are not supported by TileIR"
    hint = "use a tensor descriptor (tl.make_tensor_descriptor) or pointer offsets"
    VALID = ["@triton.jit\ndef k(x_ptr, M, N):\n    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [16, 16])\n"
             "    d.store([0, 0], d.load([0, 0]))\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, M, N):\n"
               "    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))\n"
               "    tl.store(p, tl.load(p, boundary_check=(0, 1)))\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        for line, text in ctx.facts.block_pointers:
            yield self.finding(line, f"{text}: block pointers are not supported by TileIR")


RULES: list[Rule] = [InlineAsm(), Gather(), DotScaled(), ExternElementwise(), MapElementwise(), Erf(),
                     AtomicRmwBf16(), AtomicCas16(), RtzDowncast(), TmaGatherScatterReduce(), TmaPadding(),
                     Int64Offsets(), BlockPointer()]
