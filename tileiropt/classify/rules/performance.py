"""Performance traps on TileIR: legal code that runs slowly."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable

from tileiropt.classify.rules.base import Finding, KernelContext, Rule

WIDE_REDUCTION = 8192  # elements per row held in one block before register spilling is likely
UNBOUNDED = -1


class TensorOfPointerDot(Rule):
    code = "TIR201"
    name = "tensor-of-pointer-dot"
    severity = "perf"
    message = "tensor-of-pointer loads and stores in a dot kernel: slow on TileIR, which prefers TMA"
    hint = "load the tiles through a tensor descriptor (tl.make_tensor_descriptor or a host TensorDescriptor)"
    detects = ("tensor-of-pointer `tl.load` / `tl.store` in a dot kernel (block-pointer loads are not tensors of "
        "pointers)")
    why = ("TileIR compiles tiles for a whole CTA cluster and is at its best with TMA descriptors; tensor-of-pointer "
        "loads in a matrix multiply are a known slow path (the fork's README lists them).")
    VALID = ["@triton.jit\ndef k(a_ptr, b_ptr, c_ptr, M, N, K):\n"
             "    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [64, 64])\n"
             "    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [64, 64])\n"
             "    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [64, 64])\n"
             "    c_desc.store([0, 0], tl.dot(a_desc.load([0, 0]), b_desc.load([0, 0])))\n",
             "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
             "    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)\n",
             "@triton.jit\ndef k(a_ptr, b_ptr, c_ptr, M, N, K):\n"  # block pointers are not tensors of pointers
             "    a = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (0, 0), (64, 64), (1, 0))\n"
             "    b = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, 0), (64, 64), (1, 0))\n"
             "    c = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (0, 0), (64, 64), (1, 0))\n"
             "    tl.store(c, tl.dot(tl.load(a), tl.load(b)))\n"]
    INVALID = ["@triton.jit\ndef k(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
               "    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])\n"
               "    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])\n"
               "    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, b))\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        if ctx.kernel_class != "dot":
            return
        for access in ctx.facts.accesses:
            if access.tile and access.name in ("tl.load", "tl.store"):
                yield self.finding(access.line, "tensor-of-pointer loads and stores in a dot kernel: slow on "
                                                 f"{ctx.release.label()}, which prefers TMA descriptors")


class WideReductionBlock(Rule):
    code = "TIR202"
    name = "wide-reduction-block"
    severity = "perf"
    message = f"a norm kernel holds a whole row of more than {WIDE_REDUCTION} elements in one block"
    hint = (f"cap the block at {WIDE_REDUCTION} and loop over the row (a wide row in one block spills registers "
            "on TileIR, which ignores num_warps or takes it only as a hint)")
    detects = ("a norm kernel whose block constexpr can exceed 8192: a default, an autotune config or a launch value "
        "> 8192, or `triton.next_power_of_2(...)` of the row length without a cap <= 8192")
    why = ("TileIR has no warp-count control for the reduction (num_warps is ignored or only a hint), so a norm "
        "kernel holding a very wide row in one block spills registers and runs slowly.")
    VALID = ["@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 1024):\n    offs = tl.arange(0, BLOCK)\n"
             "    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n"
             "    tl.store(y_ptr + offs, x / tl.sum(x, axis=0), mask=offs < n)\n\n"
             "def run(x, y):\n    BLOCK = min(triton.next_power_of_2(x.shape[1]), 4096)\n"
             "    k[(x.shape[0],)](x, y, x.shape[1], BLOCK=BLOCK)\n"]
    INVALID = ["@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr = 16384):\n    offs = tl.arange(0, BLOCK)\n"
               "    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n"
               "    tl.store(y_ptr + offs, x / tl.sum(x, axis=0), mask=offs < n)\n",
               "@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
               "    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n"
               "    tl.store(y_ptr + offs, x / tl.sum(x, axis=0), mask=offs < n)\n\n"
               "def run(x, y):\n    BLOCK = triton.next_power_of_2(x.shape[1])\n"
               "    k[(x.shape[0],)](x, y, x.shape[1], BLOCK)\n"]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        if ctx.kernel_class != "norm":
            return
        params = ctx.kernel.params
        constexprs = {p.name for p in params if p.is_constexpr}
        for param in params:
            if param.is_constexpr and param.default is not None:
                width = _literal(param.default)
                if width is not None and width > WIDE_REDUCTION:
                    yield self.finding(ctx.kernel.line, f"{param.name} defaults to {width} (> {WIDE_REDUCTION}) "
                                                        "in a norm kernel")
        if ctx.kernel.autotune is not None:
            for config in ctx.kernel.autotune.configs:
                for name, value in config.kwargs.items():
                    width = _literal(value)
                    if name in constexprs and width is not None and width > WIDE_REDUCTION:
                        yield self.finding(config.line, f"config sets {name}={width} (> {WIDE_REDUCTION}) "
                                                        "in a norm kernel")
        names = [p.name for p in params]
        for launch in ctx.kernel.launches:
            call = ctx.scan.launch_calls.get((ctx.kernel.name, launch.line))
            wrapper = ctx.scan.launch_functions.get((ctx.kernel.name, launch.line))
            if call is None:
                continue
            passed: list[tuple[str, ast.expr]] = [(names[i], a) for i, a in enumerate(call.args[: len(names)])
                                                  if not isinstance(a, ast.Starred)]
            passed += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
            for name, argument in passed:
                if name not in constexprs:
                    continue
                width = _width(argument, wrapper, ctx.scan.functions)
                if width == UNBOUNDED and isinstance(argument, ast.Name) and wrapper is not None:
                    cap = _guard(argument.id, wrapper, ctx.scan.constants)
                    width = cap if cap is not None else width
                if width == UNBOUNDED:
                    yield self.finding(launch.line, f"{name} = next_power_of_2 of a size, uncapped: where the size "
                                                    f"passes {WIDE_REDUCTION}, the reduced row lives in one block "
                                                    "that wide")
                elif width is not None and width > WIDE_REDUCTION:
                    yield self.finding(launch.line, f"{name} can be {width} (> {WIDE_REDUCTION}) in a norm kernel")


def _guard(name: str, wrapper: ast.FunctionDef, constants: dict[str, int]) -> int | None:
    """The bound a wrapper enforces on `name`: `if name > CAP: raise ...` or `assert name <= CAP`."""
    upper_ops: tuple[type[ast.cmpop], ...]  # the comparisons that state an upper bound on `name`
    for node in ast.walk(wrapper):
        test = None
        if isinstance(node, ast.If) and node.body and isinstance(node.body[0], ast.Raise):
            test, upper_ops = node.test, (ast.Gt, ast.GtE)
        elif isinstance(node, ast.Assert):
            test, upper_ops = node.test, (ast.Lt, ast.LtE)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], upper_ops)):
            continue
        left, right = test.left, test.comparators[0]
        if isinstance(left, ast.Name) and left.id == name:
            bound = right
        else:
            continue
        if isinstance(bound, ast.Name) and bound.id in constants:
            return constants[bound.id]
        width = _width(bound, None, {})  # `4096`, `4 * 1024`, `1 << 12`
        if width is not None and width != UNBOUNDED:
            return width
    return None


def _literal(text: str) -> int | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _width(node: ast.expr, wrapper: ast.FunctionDef | None, functions: dict[str, ast.FunctionDef],
           depth: int = 0) -> int | None:
    """Largest block width an expression can take: an int, UNBOUNDED, or None when unknown."""
    if depth > 4:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, int) and not isinstance(node.value, bool) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.LShift)):  # `64 * 1024`, `1 << 16`
        left, right = (_width(side, None, functions, depth + 1) for side in (node.left, node.right))
        if left is None or right is None or UNBOUNDED in (left, right):
            return None
        if isinstance(node.op, ast.Mult):
            return left * right
        return left << right if right <= 64 else None
    if isinstance(node, ast.Name) and wrapper is not None:
        widths = [_width(value, wrapper, functions, depth + 1) for value in _assigned(node.id, wrapper)]
        known = [w for w in widths if w is not None]
        if not known:
            return None
        return UNBOUNDED if UNBOUNDED in known else max(known)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "next_power_of_2":
            return UNBOUNDED
        if name == "min":
            bounds = [w for w in (_width(a, wrapper, functions, depth + 1) for a in node.args)
                      if w is not None and w != UNBOUNDED]
            return min(bounds) if bounds else _max_width(node.args, wrapper, functions, depth)
        if name == "max":
            return _max_width(node.args, wrapper, functions, depth)
        target = functions.get(name)
        if target is not None and depth == 0:  # a settings helper of this module: one level
            for sub in ast.walk(target):
                if isinstance(sub, ast.Call) and _call_tail(sub) == "next_power_of_2":
                    return UNBOUNDED
    return None


def _max_width(args: list[ast.expr], wrapper, functions, depth: int) -> int | None:
    widths = [w for w in (_width(a, wrapper, functions, depth + 1) for a in args) if w is not None]
    if not widths:
        return None
    return UNBOUNDED if UNBOUNDED in widths else max(widths)


def _call_tail(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _assigned(name: str, wrapper: ast.FunctionDef) -> list[ast.expr]:
    """Values assigned to `name` in the wrapper; a tuple target takes the matching element or the call."""
    return _assignments(wrapper).get(name, [])


@functools.lru_cache(maxsize=256)
def _assignments(wrapper: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    """Every name the wrapper assigns, with its values (one walk per wrapper, shared by its launches)."""
    values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(wrapper):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
                elif isinstance(target, ast.Tuple):
                    for index, element in enumerate(target.elts):
                        if not isinstance(element, ast.Name):
                            continue
                        if isinstance(node.value, ast.Tuple) and len(node.value.elts) == len(target.elts):
                            values.setdefault(element.id, []).append(node.value.elts[index])
                        elif index == 0:
                            values.setdefault(element.id, []).append(node.value)  # `BLOCK, num_warps = settings(n)`
    return values


RULES: list[Rule] = [TensorOfPointerDot(), WideReductionBlock()]
