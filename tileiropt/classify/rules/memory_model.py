"""Memory-model hazards: TileIR orders global memory accesses only through data dependencies
(an unordered memory model), so aliasing and cross-program communication may give wrong results."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tileiropt.classify.facts import ATOMICS, TL
from tileiropt.classify.rules.base import Finding, KernelContext, Rule, unordered_memory

_RMW = ATOMICS - {TL + "atomic_cas", TL + "atomic_xchg"}


def _by_base(ctx: KernelContext, kind: str) -> dict[str, list[int]]:
    lines: dict[str, list[int]] = {}
    for access in ctx.facts.accesses:
        if access.kind == kind:
            for base in access.bases:
                lines.setdefault(base, []).append(access.line)
    return lines


def _lines(lines: list[int]) -> str:
    unique = sorted(set(lines))
    shown = ", ".join(str(n) for n in unique[:4])
    return shown + (", ..." if len(unique) > 4 else "")


class InPlaceAliasing(Rule):
    code = "TIR101"
    name = "in-place-aliasing"
    severity = "warning"
    message = "a pointer argument is both loaded and stored (in-place update)"
    hint = ("make sure every load that must see a store depends on it through data, or write to a separate "
            "output buffer")
    detects = "a pointer argument both loaded and stored in one kernel (the message says when a load follows a store)"
    why = unordered_memory("A load meant to see an earlier store to the same buffer may read the old value; 13.4 "
        "adds memory tokens for accesses it can prove alias, not for every case.")
    VALID = ["@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
             "    x = tl.load(x_ptr + offs, mask=offs < n)\n    tl.store(y_ptr + offs, x * 2, mask=offs < n)\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
               "    x = tl.load(x_ptr + offs, mask=offs < n)\n    tl.store(x_ptr + offs, x * 2, mask=offs < n)\n",
               "@triton.jit\ndef k(X, stride):\n    row = X + tl.program_id(0) * stride\n"
               "    tl.store(row, 0.0)\n    y = tl.load(row + 1)\n    tl.store(row + 2, y)\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        loads = _by_base(ctx, "load")
        stores = _by_base(ctx, "store")
        for base in sorted(set(loads) & set(stores), key=lambda b: min(stores[b])):
            first_store = min(stores[base])
            after = [line for line in loads[base] if line > first_store]
            order = (f"; the load at line {after[0]} comes after a store in the source, and TileIR orders them "
                     "only through data dependencies"
                     if after else "")
            yield self.finding(first_store, f"`{base}` is both loaded (line {_lines(loads[base])}) and stored "
                                            f"(line {_lines(stores[base])}): in-place update{order}")


class AtomicResultUsed(Rule):
    code = "TIR102"
    name = "atomic-result-used"
    severity = "warning"
    message = "the value returned by an atomic is used: cross-program communication (counter, ticket, flag)"
    hint = ("TileIR does not order this atomic with the surrounding loads and stores; "
            "split the communication into separate kernels or verify the result under ENABLE_TILE=1")
    detects = "the value returned by an atomic is used (a counter, a ticket, a flag)"
    why = unordered_memory("A program that reads an atomic's result to decide what to do (a ticket, a last-block "
        "flag) may see the loads and stores around it reordered.")
    VALID = ["@triton.jit\ndef k(x_ptr, out_ptr):\n"
             "    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, 8))))\n"]
    INVALID = ["@triton.jit\ndef k(counter_ptr, out_ptr):\n    ticket = tl.atomic_add(counter_ptr, 1)\n"
               "    tl.store(out_ptr + ticket, 1.0)\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        for call in ctx.calls_named(*ATOMICS):
            assert call.name is not None  # `calls_named` finds calls by their Triton name
            if call.result_used:
                yield self.finding(call.line, f"the result of tl.{call.name.removeprefix(TL)} is used: "
                                              "cross-program communication (counter, ticket or flag)")


class SpinLock(Rule):
    code = "TIR103"
    name = "spin-lock"
    severity = "warning"
    message = "an atomic compare-and-swap / exchange in a while loop: a lock or spin-wait in global memory"
    hint = ("TileIR's unordered memory model does not order the protected loads and stores with the lock; "
            "avoid global locks (write partial results and reduce in a second kernel)")
    detects = "`tl.atomic_cas` / `tl.atomic_xchg` in a while loop"
    why = unordered_memory("A lock does not protect the loads and stores after it: they are not ordered with the "
        "atomic that takes it.")
    VALID = ["@triton.jit\ndef k(lock_ptr):\n    tl.atomic_xchg(lock_ptr, 0)\n"]
    INVALID = ["@triton.jit\ndef k(lock_ptr, x_ptr):\n    while tl.atomic_cas(lock_ptr, 0, 1) == 1:\n        pass\n"
               "    tl.store(x_ptr, tl.load(x_ptr) + 1.0)\n    tl.atomic_xchg(lock_ptr, 0)\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        for call in ctx.calls_named(TL + "atomic_cas", TL + "atomic_xchg"):
            assert call.name is not None  # `calls_named` finds calls by their Triton name
            if call.in_while:
                yield self.finding(call.line, f"tl.{call.name.removeprefix(TL)} in a while loop: a lock or "
                                              "spin-wait on global memory")


class SplitK(Rule):
    code = "TIR104"
    name = "split-k"
    severity = "warning"
    message = "a dot kernel accumulates its output across programs with atomics (split-K / stream-K)"
    hint = ("TileIR does not order data exchanged between tile blocks; write per-split partial results and "
            "reduce them in a second kernel, or validate this kernel under ENABLE_TILE=1")
    detects = "atomic accumulation of a dot kernel's output (split-K / stream-K)"
    why = unordered_memory("Partial results that tile blocks exchange through global memory are not ordered with "
        "the reads of the final sum.")
    VALID = ["@triton.jit\ndef k(a, b, c):\n    tl.store(c, tl.dot(tl.load(a), tl.load(b)))\n"]
    INVALID = ["@triton.jit\ndef k(a, b, c, SPLIT_K: tl.constexpr):\n"
               "    tl.atomic_add(c, tl.dot(tl.load(a), tl.load(b)))\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        if ctx.kernel_class != "dot":
            return
        split_params = [p.name for p in ctx.kernel.params if "SPLIT" in p.name.upper() or "STREAM" in p.name.upper()]
        for call in ctx.calls_named(*_RMW):
            assert call.name is not None  # `calls_named` finds calls by their Triton name
            what = f"split-K parameter {split_params[0]}, " if split_params else ""
            yield self.finding(call.line, f"tl.{call.name.removeprefix(TL)} in a dot kernel ({what}"
                                          "cross-program accumulation, split-K / stream-K)")


class AtomicTargetLoaded(Rule):
    code = "TIR105"
    name = "atomic-target-loaded"
    severity = "warning"
    message = "a buffer updated with atomics is also read with a plain load in the same kernel"
    hint = "read the accumulated result in a later kernel; within one kernel the load is not ordered"
    detects = "a buffer updated with atomics and read with a plain load in the same kernel"
    why = unordered_memory("The plain load is not ordered after the atomics of other programs, nor after this one's.")
    VALID = ["@triton.jit\ndef k(x_ptr, out_ptr):\n    tl.atomic_add(out_ptr, tl.load(x_ptr))\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, acc_ptr, out_ptr):\n    tl.atomic_add(acc_ptr, tl.load(x_ptr))\n"
               "    tl.store(out_ptr, tl.load(acc_ptr))\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        loads = _by_base(ctx, "load")
        atomics = _by_base(ctx, "atomic")
        for base in sorted(set(loads) & set(atomics)):
            yield self.finding(min(loads[base]), f"`{base}` is updated with atomics (line {_lines(atomics[base])}) "
                                                 f"and read with tl.load (line {_lines(loads[base])})")


class AliasedLaunch(Rule):
    code = "TIR106"
    name = "aliased-launch-arguments"
    severity = "warning"
    message = "the same tensor is passed as a loaded and as a stored pointer argument"
    hint = "pass a separate output tensor, or check the in-place update under ENABLE_TILE=1"
    detects = "a launch that passes the same tensor to a loaded and to a stored pointer parameter"
    why = unordered_memory("Two pointer arguments to the same memory look independent to the compiler: it may "
        "reorder a store through one and a load through the other.")
    VALID = ["@triton.jit\ndef k(x_ptr, y_ptr):\n    tl.store(y_ptr, tl.load(x_ptr))\n\n"
             "def run(x, y):\n    k[(1,)](x, y)\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, y_ptr):\n    tl.store(y_ptr, tl.load(x_ptr))\n\n"
               "def run(x):\n    k[(1,)](x, x)\n",
               "@triton.jit\ndef k(x_ptr, y_ptr):\n    tl.store(y_ptr, tl.load(x_ptr))\n\n"
               "def run(x):\n    k[(1,)](x, y_ptr=x)\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        loaded = set(_by_base(ctx, "load"))
        stored = set(_by_base(ctx, "store"))
        names = [p.name for p in ctx.kernel.params]
        for launch in ctx.kernel.launches:
            call = ctx.scan.launch_calls.get((ctx.kernel.name, launch.line))
            if call is None or any(isinstance(a, ast.Starred) for a in call.args):
                continue
            bound: dict[str, str] = {}
            for index, arg in enumerate(call.args[: len(names)]):
                if isinstance(arg, ast.Name):
                    bound[names[index]] = arg.id
            for keyword in call.keywords:
                if keyword.arg in names and isinstance(keyword.value, ast.Name):
                    bound[keyword.arg] = keyword.value.id
            for read in sorted(loaded - stored):
                for write in sorted(stored - loaded):
                    if read in bound and bound.get(write) == bound[read]:
                        yield self.finding(launch.line, f"`{bound[read]}` is passed both as `{read}` (loaded) "
                                                        f"and as `{write}` (stored)")


RULES: list[Rule] = [InPlaceAliasing(), AtomicResultUsed(), SpinLock(), SplitK(), AtomicTargetLoaded(),
                     AliasedLaunch()]
