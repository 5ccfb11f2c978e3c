"""What a JIT function does, from one ordered pass over its body: a small dataflow over names.

Every expression gets a `Value`: a set of flags saying where it comes from and the pointer
parameters it is based on.

- ``data``: derived from a memory load; ``tile``: has a block shape that indexes memory (from
  `tl.arange` or a tile-shaped load); ``acc``: a block-shaped constant (`tl.zeros`, `tl.full`),
  typically an accumulator; ``stat``: derived from a reduction (a row statistic; a reduction
  drops ``tile`` and keeps ``data``);
  ``pid`` / ``nprog``: derived from `tl.program_id` / `tl.num_programs`;
  ``("i64", line)``: contains a cast to a 64-bit integer made at `line`;
  ``eq``: an equality test (`offs == k`); ``onehot``: a block multiplied by one, or `tl.where` on one: its sum picks
  one element (Triton has no indexing into a block), which is a pick, not a reduction to a statistic.
- ``bases``: the pointer parameters an address expression starts from (`x_ptr + offs`
  is based on `x_ptr`; offsets such as `row * stride` are not).

From these the pass records dots, reductions, normalisation evidence (a reduced statistic
that shifts or scales a loaded tile), accumulations (a zero-initialised block summing loaded data
across loop iterations: a reduction over the loop's axis without a reduction op), loads, stores,
atomics, loops over a range (persistent ones among them) and every call (with its qualified Triton name) for
the lint rules and the rewrites.
Loops are walked twice so that values carried around a loop (online softmax) are seen.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

from tileiropt.classify.names import TL, call_name, callee, short_name

DOTS = frozenset({TL + "dot", TL + "dot_scaled"})
REDUCTIONS = frozenset(TL + n for n in ("sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum",
                                        "reduce_or", "prod"))
SCANS = frozenset(TL + n for n in ("cumsum", "cumprod", "associative_scan"))
REDUCTION_METHODS = frozenset({"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum"})
SCAN_METHODS = frozenset({"cumsum", "cumprod", "associative_scan"})
ATOMICS = frozenset(TL + n for n in ("atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas",
                                     "atomic_and", "atomic_or", "atomic_xor"))
LOADS = frozenset({TL + "load", TL + "load_tensor_descriptor", TL + "_experimental_descriptor_load"})
STORES = frozenset({TL + "store", TL + "store_tensor_descriptor", TL + "_experimental_descriptor_store"})
MAKE_DESCRIPTOR = frozenset({TL + "make_tensor_descriptor", TL + "_experimental_make_tensor_descriptor"})
BLOCK_POINTER = frozenset({TL + "make_block_ptr", TL + "advance"})
POINTER_PRESERVING = frozenset({TL + "multiple_of", TL + "max_contiguous", TL + "max_constancy", TL + "advance"})
TILE_MAKERS = frozenset(TL + n for n in ("arange", "rand", "randn", "randint"))
ACCUMULATOR_MAKERS = frozenset(TL + n for n in ("zeros", "full", "zeros_like", "full_like"))
RUNNING = frozenset({TL + "maximum", TL + "minimum"})  # `m = tl.maximum(m, x)` in a loop: a running reduction
RANGES = frozenset({"range", TL + "range", TL + "static_range"})
INT64 = frozenset({TL + "int64", TL + "uint64"})
_BUILTINS = frozenset(dir(builtins))
NARROW_INTS = frozenset(TL + name for name in ("int32", "uint32", "int16", "uint16", "int8", "uint8"))
_PERSISTENT_STEP_WORDS = ("NUM_SM", "NUM_PROGRAM", "NUM_CTAS_TOTAL", "GRID_SIZE", "N_PROGRAMS")

NORMALISING_OPS = (ast.Sub, ast.Div, ast.Mult)
_OP_TEXT = {ast.Sub: "shifts", ast.Div: "divides", ast.Mult: "scales"}


@dataclass(frozen=True)
class Value:
    flags: frozenset = frozenset()
    bases: frozenset = frozenset()

    def __or__(self, other: Value) -> Value:
        return Value(self.flags | other.flags, self.bases | other.bases)

    def has(self, flag: str) -> bool:
        return flag in self.flags

    def i64_lines(self) -> list[int]:
        return sorted(f[1] for f in self.flags if isinstance(f, tuple) and f[0] == "i64")

    def is_statistic(self) -> bool:
        return "stat" in self.flags and "tile" not in self.flags

    def is_data_tile(self) -> bool:
        return "data" in self.flags and "tile" in self.flags


EMPTY = Value()


@dataclass
class CallFact:
    node: ast.Call
    name: str | None  # qualified Triton name, e.g. "triton.language.load"; None for other calls
    method: str | None  # attribute name of a method call on a non-Triton object (`x.sum`, `desc.load`)
    receiver: ast.expr | None  # the object of a method call
    line: int
    args: list[Value]  # values of the positional arguments
    keywords: dict[str, Value]
    in_while: bool  # inside a `while` loop (test or body)
    result_used: bool  # the result is not thrown away by a bare expression statement


@dataclass
class Access:
    line: int
    bases: frozenset  # pointer parameters the address is based on
    tile: bool  # a tensor of pointers (block-shaped address)
    kind: str  # "load" | "store" | "atomic"
    name: str  # the call, e.g. "tl.load", "tl.atomic_add", "desc.load"
    pointer: Value = EMPTY


@dataclass
class FunctionFacts:
    name: str
    calls: list[CallFact] = field(default_factory=list)
    dots: list[tuple[int, str]] = field(default_factory=list)
    reductions: list[tuple[int, str]] = field(default_factory=list)
    scans: list[tuple[int, str]] = field(default_factory=list)
    normalisation: list[tuple[int, str]] = field(default_factory=list)
    accumulations: list[tuple[int, str]] = field(default_factory=list)  # zeroed accumulator += loaded data in a loop
    accesses: list[Access] = field(default_factory=list)
    persistent_loops: list[tuple[int, str]] = field(default_factory=list)
    range_loops: list[ast.For | ast.AsyncFor] = field(default_factory=list)  # `for ... in range(...)`, in order
    descriptors: list[tuple[int, str]] = field(default_factory=list)  # TMA use
    block_pointers: list[tuple[int, str]] = field(default_factory=list)
    returns: Value = EMPTY
    helper_calls: list[tuple[int, str]] = field(default_factory=list)
    stored: list[tuple[int, frozenset, Value]] = field(default_factory=list)  # each store or atomic: line, bases, value
    guides: list[Value] = field(default_factory=list)  # what picks the data: load addresses and masks, store masks
    wide_names: set[str] = field(default_factory=set)  # names some assignment binds to a 64-bit integer


class FactsBuilder:
    """Builds `FunctionFacts` for the JIT functions of one file (helpers first, memoised)."""

    def __init__(self, functions: dict[str, ast.FunctionDef], aliases: dict[str, str], text):
        self.functions = functions  # JIT functions of the module by name
        self.aliases = aliases
        self.text = text
        self._done: dict[int, FunctionFacts] = {}
        self._active: set[int] = set()

    def facts(self, node: ast.FunctionDef) -> FunctionFacts:
        key = id(node)
        if key in self._done:
            return self._done[key]
        self._active.add(key)
        result = _FunctionPass(self, node).run()
        self._active.discard(key)
        self._done[key] = result
        return result

    def helper_summary(self, name: str) -> Value:
        node = self.functions.get(name)
        if node is None or id(node) in self._active:
            return EMPTY
        returns = self.facts(node).returns
        return Value(frozenset(f for f in returns.flags if f in ("stat", "data", "tile")))


class _FunctionPass:
    def __init__(self, builder: FactsBuilder, node: ast.FunctionDef):
        self.builder = builder
        self.aliases = builder.aliases
        self.node = node
        self.facts = FunctionFacts(name=node.name)
        self.env: dict[str, Value] = {}
        self.params: dict[str, ast.arg] = {}
        self._calls: dict[int, CallFact] = {}
        self._seen: dict[str, set] = {}
        self._while_depth = 0
        self._loop_depth = 0
        self._unused_calls: set[int] = set()
        self._stored: dict[int, tuple[int, frozenset, Value]] = {}  # by store, as the last walk saw it (loops: twice)
        self._guides: dict[int, Value] = {}  # by access, likewise

    def run(self) -> FunctionFacts:
        args = self.node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            self.params[arg.arg] = arg
            if not _is_constexpr_annotation(arg.annotation):
                self.env[arg.arg] = Value(bases=frozenset({arg.arg}))
        self.block(self.node.body)
        self.facts.calls = sorted(self._calls.values(), key=lambda c: (c.line, c.node.col_offset))
        self.facts.stored = list(self._stored.values())
        self.facts.guides = list(self._guides.values())
        return self.facts

    # recording (loops are walked twice: keep one record per node) -------------
    def _record(self, kind: str, node: ast.AST, item) -> None:
        seen = self._seen.setdefault(kind, set())
        if id(node) in seen:
            return
        seen.add(id(node))
        getattr(self.facts, kind).append(item)

    def _running_accumulation(self, node: ast.Assign, value: Value) -> None:
        """`m = tl.maximum(m, x)` or `s = s + x` in a loop, `m` a zero-initialised block or a number and `x` loaded
        data (not a statistic): an accumulation written as an assignment (a loop that reduces its input to a running
        maximum is a reduction, whatever it calls). `value`: the right side's, evaluated once by the caller; `m`
        adds nothing to its flags but `acc`/`tile`, so its `data` and `stat` are `x`'s."""
        if not self._loop_depth or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return
        name, right = node.targets[0].id, node.value
        called = call_name(right, self.aliases) if isinstance(right, ast.Call) else None
        if isinstance(right, ast.BinOp) and isinstance(right.op, ast.Add):
            operands, what = [right.left, right.right], "sums"
        elif called in RUNNING and isinstance(right, ast.Call) and not right.keywords:
            operands, what = list(right.args), "keeps a running " + called.rsplit(".", 1)[-1]
        else:
            return
        own = sum(isinstance(o, ast.Name) and o.id == name for o in operands)
        current = self.env.get(name)  # before this assignment binds it
        if own != 1 or len(operands) != 2 or current is None or current.bases \
                or current.flags - {"acc", "tile"}:  # a zeroed block or a number, nothing loaded or indexed yet
            return
        if value.has("data") and not value.has("stat"):
            text = self.builder.text.segment(node)
            text = text if len(text) <= 60 else text[:57] + "..."
            self._record("accumulations", node, (node.lineno, f"`{text}` {what} of loaded data across the loop"))

    # statements ----------------------------------------------------------------
    def block(self, statements: list[ast.stmt]) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            value = self.expr(node.value)
            self._running_accumulation(node, value)
            for target in node.targets:
                self.assign(target, node.value, value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign(node.target, node.value, self.expr(node.value))
        elif isinstance(node, ast.AugAssign):
            current = self.expr(node.target)
            added = self.expr(node.value)
            if (isinstance(node.op, ast.Add) and self._loop_depth and current.has("acc")
                    and not current.has("data") and added.has("data") and not added.has("stat")):
                text = self.builder.text.segment(node)
                text = text if len(text) <= 60 else text[:57] + "..."
                self._record("accumulations", node, (node.lineno, f"`{text}` sums loaded data across the loop"))
            value = self.binop(node.op, current, added, node)
            self.assign(node.target, None, value)
        elif isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Call):
                self._unused_calls.add(id(node.value))
            self.expr(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            iterator = self.expr(node.iter)
            self.range_loop(node)
            # the index counts as the range does: from the program id, in 64 bits over a 64-bit bound
            self.assign(node.target, None, Value(frozenset(f for f in iterator.flags if f in ("pid", "nprog")
                                                           or isinstance(f, tuple) and f[0] == "i64")))
            self._loop_depth += 1
            self.block(node.body)
            self.block(node.body)  # values carried around the loop
            self._loop_depth -= 1
            self.block(node.orelse)
        elif isinstance(node, ast.While):
            self._while_depth += 1
            self._loop_depth += 1
            self.expr(node.test)
            self.block(node.body)
            self.expr(node.test)
            self.block(node.body)
            self._loop_depth -= 1
            self._while_depth -= 1
            self.block(node.orelse)
        elif isinstance(node, ast.If):
            self.expr(node.test)
            self.block(node.body)
            self.block(node.orelse)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.expr(item.context_expr)
            self.block(node.body)
        elif isinstance(node, ast.Try):
            self.block(node.body)
            for handler in node.handlers:
                self.block(handler.body)
            self.block(node.orelse)
            self.block(node.finalbody)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.facts.returns = self.facts.returns | self.expr(node.value)
        elif isinstance(node, ast.Assert):
            self.expr(node.test)

    def assign(self, target: ast.expr, value_node: ast.expr | None, value: Value) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
            if value.i64_lines():
                self.facts.wide_names.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = None
            if isinstance(value_node, (ast.Tuple, ast.List)) and len(value_node.elts) == len(target.elts):
                pairs = [self.expr(e) for e in value_node.elts]
            for index, element in enumerate(target.elts):
                self.assign(element, None, pairs[index] if pairs else value)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, None, value)

    def range_loop(self, node: ast.For | ast.AsyncFor) -> None:
        """A loop over `range` / `tl.range` / `tl.static_range`: recorded, and as evidence when it is persistent
        (it starts from the program id and steps by the number of programs)."""
        call = node.iter
        if not isinstance(call, ast.Call) or callee(call, self.aliases) not in RANGES:
            return
        self._record("range_loops", node, node)
        args = list(call.args)
        step = args[2] if len(args) >= 3 else next((k.value for k in call.keywords if k.arg == "step"), None)
        if step is None or not args:
            return
        start = self.expr(args[0])
        step_value = self.expr(step)
        named_step = any(word in n.id.upper() for n in ast.walk(step) if isinstance(n, ast.Name)
                         for word in _PERSISTENT_STEP_WORDS)
        if start.has("pid") and (step_value.has("nprog") or named_step):
            text = self.builder.text.segment(call)
            self._record("persistent_loops", node, (node.lineno, f"persistent loop `for ... in {text}`"))

    # expressions ---------------------------------------------------------------
    def expr(self, node: ast.expr | None) -> Value:
        if node is None:
            return EMPTY
        if isinstance(node, ast.Name):
            return self.env.get(node.id, EMPTY)
        if isinstance(node, ast.Constant):
            return EMPTY
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.expr(node.left), self.expr(node.right), node)
        if isinstance(node, ast.Subscript):
            value = self.expr(node.value)
            self.expr(node.slice)
            return value
        if isinstance(node, ast.Attribute):
            return Value(self.expr(node.value).flags)
        if isinstance(node, ast.UnaryOp):
            return self.expr(node.operand)
        if isinstance(node, (ast.Compare, ast.BoolOp)):
            parts = [node.left, *node.comparators] if isinstance(node, ast.Compare) else node.values
            flags: frozenset = frozenset()
            for part in parts:
                flags |= self.expr(part).flags
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
                flags |= {"eq"}  # `offs == k`: a one-hot mask where one side is a block of distinct indices
            return Value(flags - {"onehot"})
        if isinstance(node, ast.IfExp):
            self.expr(node.test)
            return self.expr(node.body) | self.expr(node.orelse)
        if isinstance(node, (ast.Tuple, ast.List)):
            result = EMPTY
            for element in node.elts:
                result = result | self.expr(element)
            return Value(result.flags)
        if isinstance(node, ast.Starred):
            return self.expr(node.value)
        if isinstance(node, ast.Slice):
            self.expr(node.lower)
            self.expr(node.upper)
            self.expr(node.step)
        return EMPTY

    def binop(self, op: ast.operator, left: Value, right: Value, node: ast.BinOp | ast.AugAssign) -> Value:
        if isinstance(op, NORMALISING_OPS):
            stat_side = None
            if left.is_data_tile() and right.is_statistic():
                stat_side = "right"
            elif right.is_data_tile() and left.is_statistic() and not isinstance(op, ast.Div):
                stat_side = "left"
            if stat_side:
                text = self.builder.text.segment(node)
                if len(text) > 60:
                    text = text[:57] + "..."
                self._record("normalisation", node, (
                    node.lineno, f"`{text}` {_OP_TEXT[type(op)]} loaded elements by a reduced statistic"))
        if isinstance(op, ast.Add):
            bases = left.bases or right.bases
        elif isinstance(op, ast.Sub):
            bases = left.bases
        else:
            bases = frozenset()
        flags = (left.flags | right.flags) - {"eq", "onehot"}
        if isinstance(op, ast.Mult) and any(side.has("eq") or side.has("onehot") for side in (left, right)):
            flags |= {"onehot"}  # a block times a one-hot mask: summed, it picks one element (a sum of it does not)
        return Value(flags, bases)

    def call(self, node: ast.Call) -> Value:
        func = node.func
        name = call_name(node, self.aliases)
        method = None
        receiver = None
        receiver_value = EMPTY
        if name is None and isinstance(func, ast.Attribute):
            method = func.attr
            receiver = func.value
            receiver_value = self.expr(receiver)
        args = [self.expr(a) for a in node.args]
        keywords = {k.arg or "**": self.expr(k.value) for k in node.keywords}
        fact = CallFact(node=node, name=name, method=method, receiver=receiver, line=node.lineno, args=args,
                        keywords=keywords, in_while=self._while_depth > 0,
                        result_used=id(node) not in self._unused_calls)
        self._calls[id(node)] = fact
        everything = receiver_value
        for value in (*args, *keywords.values()):
            everything = everything | value
        everything = Value(everything.flags - {"eq"}, everything.bases)  # a mask passed on is no longer one-hot
        line = node.lineno
        short = _short(name, method)

        if name is not None:
            if name == TL + "program_id":
                return Value(frozenset({"pid"}))
            if name == TL + "num_programs":
                return Value(frozenset({"nprog"}))
            if name in DOTS:
                self._record("dots", node, (line, short))
                return Value(frozenset({"data", "tile"}))
            if name in REDUCTIONS:
                if name == TL + "sum" and everything.has("onehot"):
                    return Value(everything.flags - {"onehot"})  # a pick (`tl.sum(w * (offs == k))`), not a statistic
                self._record("reductions", node, (line, short))
                return _reduced(everything)
            if name == TL + "where" and len(node.args) == 3 and args[0].has("eq") and _is_zero(node.args[2]):
                return Value((everything.flags - {"eq"}) | {"onehot"})  # one element kept, the others zero
            if name in SCANS:
                self._record("scans", node, (line, short))
                return Value(everything.flags)
            if name in LOADS:
                pointer = _argument(node, args, keywords, 0, "pointer")
                self._guides[id(node)] = pointer | _argument(node, args, keywords, 1, "mask")
                tile = _tensor_of_pointers(pointer)
                self._record("accesses", node, Access(line, pointer.bases, tile, "load", short, pointer))
                if name != TL + "load":
                    self._record("descriptors", node, (line, short))
                    tile = True
                return Value(frozenset({"data", "tile"} if tile else {"data"}))
            if name in STORES:
                pointer = _argument(node, args, keywords, 0, "pointer")
                self._stored[id(node)] = (line, pointer.bases, _argument(node, args, keywords, 1, "value"))
                self._guides[id(node)] = _argument(node, args, keywords, 2, "mask")
                self._record("accesses", node, Access(line, pointer.bases, _tensor_of_pointers(pointer), "store", short,
                                                      pointer))
                if name != TL + "store":
                    self._record("descriptors", node, (line, short))
                return EMPTY
            if name in ATOMICS:
                pointer = _argument(node, args, keywords, 0, "pointer")
                self._stored[id(node)] = (line, pointer.bases, _argument(node, args, keywords, 1, "val"))
                self._guides[id(node)] = _argument(node, args, keywords, 2, "mask")
                self._record("accesses", node, Access(line, pointer.bases, pointer.has("tile"), "atomic", short,
                                                      pointer))
                return Value(frozenset({"data"}))
            if name in MAKE_DESCRIPTOR:
                self._record("descriptors", node, (line, short))
                return Value(frozenset({"descriptor"}))
            if name in BLOCK_POINTER:
                self._record("block_pointers", node, (line, short))
                base = _argument(node, args, keywords, 0, "base")
                return Value(frozenset({"tile", "block_ptr"}), base.bases)
            if name in POINTER_PRESERVING:
                return args[0] if args else EMPTY
            if name in ACCUMULATOR_MAKERS:
                # block-shaped constants (accumulators): no data of their own
                like = args[0].flags & {"tile"} if name.endswith("_like") and args else frozenset()
                return Value(frozenset({"acc"}) | like)
            if name in TILE_MAKERS:
                return Value(everything.flags | {"tile"})
            if name == TL + "cast" and len(node.args) >= 2:
                return _cast(args[0], node.args[1], self.aliases, line)
            return Value(everything.flags)

        if method is not None:
            if method in REDUCTION_METHODS:
                if method == "sum" and everything.has("onehot"):
                    return Value(everything.flags - {"onehot"})
                self._record("reductions", node, (line, short))
                return _reduced(everything)
            if method in SCAN_METHODS:
                self._record("scans", node, (line, short))
                return Value(everything.flags)
            if method in ("to", "cast") and node.args:
                return _cast(receiver_value, node.args[0], self.aliases, line)
            if method in ("load", "store") and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
                # a tensor descriptor: desc.load([offsets]) / desc.store([offsets], value)
                self._record("descriptors", node, (line, short))
                bases = receiver_value.bases
                self._record("accesses", node, Access(line, bases, True, method, short, receiver_value | args[0]))
                if method == "store":
                    self._stored[id(node)] = (line, bases, _argument(node, args, keywords, 1, "value"))
                else:
                    self._guides[id(node)] = args[0]  # the tile's coordinates
                return Value(frozenset({"data", "tile"})) if method == "load" else EMPTY
            return Value(everything.flags)

        if isinstance(func, ast.Name):
            if func.id in self.builder.functions:
                self._record("helper_calls", node, (line, func.id))
                summary = self.builder.helper_summary(func.id)
                if summary.is_statistic():  # a helper returning a row statistic (mean, rstd): not a tile
                    return Value((everything.flags - {"tile"}) | summary.flags)
                return Value(everything.flags | summary.flags)
            if func.id in ("range", "min", "max", "abs", "int", "float"):
                return Value(everything.flags)
            if func.id not in _BUILTINS or func.id in self.aliases:  # perhaps a JIT helper another module defines
                self._record("helper_calls", node, (line, func.id))  # (`classify._transitive` looks it up)
        return Value(everything.flags)


def _tensor_of_pointers(pointer: Value) -> bool:
    """A block-shaped address made of pointers (`x_ptr + offs[:, None]`), not a block pointer."""
    return pointer.has("tile") and not pointer.has("block_ptr")


def _is_zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.value == 0


def _reduced(argument: Value) -> Value:
    """A reduction's result: a statistic (no block shape), still derived from loaded data."""
    return Value(frozenset({"stat"}) | (argument.flags & {"data"}))


def _argument(node: ast.Call, args: list[Value], keywords: dict[str, Value], index: int, keyword: str) -> Value:
    if len(args) > index and not any(isinstance(a, ast.Starred) for a in node.args[: index + 1]):
        return args[index]
    return keywords.get(keyword, EMPTY)


def _cast(value: Value, dtype: ast.expr, aliases: dict[str, str], line: int) -> Value:
    """A cast's result: 64-bit where cast to a 64-bit integer, no longer where cast to a narrower one."""
    name = call_name(dtype, aliases)
    if name in INT64:
        return Value(value.flags | {("i64", line)}, value.bases)
    if name in NARROW_INTS:
        return Value(frozenset(f for f in value.flags if not (isinstance(f, tuple) and f[0] == "i64")), value.bases)
    return value


def _short(name: str | None, method: str | None) -> str:
    if name is not None:
        return short_name(name)
    return f".{method}()" if method else "call"


def _is_constexpr_annotation(annotation: ast.expr | None) -> bool:
    """Constexpr parameters are compile-time values, not pointers (any spelling of constexpr)."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.split(".")[-1] == "constexpr"
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "constexpr"
    return isinstance(annotation, ast.Name) and annotation.id == "constexpr"
