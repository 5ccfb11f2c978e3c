"""Tensor-descriptor and block-pointer forms a CUDA Tile IR release does not lower (TIR010-TIR013): TMA
gather/scatter/reduce, non-zero padding, 64-bit descriptor coordinates, block pointers."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tileiropt.classify.facts import TL
from tileiropt.classify.names import call_name
from tileiropt.classify.rules.base import Finding, KernelContext, Rule, compile_fails, on

DESCRIPTOR_UNSUPPORTED = frozenset({"gather", "scatter", "atomic_add", "atomic_and", "atomic_max", "atomic_min",
                                    "atomic_or", "atomic_xor"})


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


def _with_wrappers(ctx: KernelContext) -> list[ast.AST]:
    """The kernel and the functions that launch it (where host TensorDescriptors are built)."""
    nodes: list[ast.AST] = [ctx.node]
    for launch in ctx.kernel.launches:
        wrapper = ctx.scan.launch_functions.get((ctx.kernel.name, launch.line))
        if wrapper is not None and wrapper not in nodes:
            nodes.append(wrapper)
    return nodes


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


RULES: list[Rule] = [TmaGatherScatterReduce(), TmaPadding(), Int64Offsets(), BlockPointer()]
