"""Data types a CUDA Tile IR release does not take in an operation (TIR007-TIR009): 16-bit float atomics,
16-bit compare-and-swap, round-toward-zero downcasts."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tileiropt.classify.facts import ATOMICS, TL, CallFact
from tileiropt.classify.names import call_name
from tileiropt.classify.rules.base import Finding, KernelContext, Rule, compile_fails, on


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


def _fp8_e5(name: str, unsupported: list[str]) -> bool:
    """Is the Triton dtype `name` (float8e5, float8e5b16) one of the TTIR types a release lists (f8E5M2)?"""
    return name.startswith("float8e5") and any(t.lower().startswith("f8e5") for t in unsupported)


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


RULES: list[Rule] = [AtomicRmw16(), AtomicCas16(), RtzDowncast()]
