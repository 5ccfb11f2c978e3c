"""Evaluate a kernel's body, statement by statement, into symbolic values (`tile_values`).

Index vectors `start + tl.arange(0, B)`, pointer tiles `ptr + base + sum_d stride_d * index_d` and masks
`index_d < bound` are followed through assignments. Loops are handled the way kernels use them: a pointer
tile advanced by a loop-invariant step (`a_ptrs += BLOCK_K * stride_ak`) is, on iteration `k`, the entry value
plus `k` steps; any other value a loop changes is unknown inside it. Both branches of an `if` are evaluated; a
value they leave different is unknown after it.

Every assignment makes a new *version* of its name, and the state before each statement is kept (a
`Snapshot`), so a value can later be written out at any point of the kernel (`apply/tma.py`). A statement
is found by its `Position`: the path to its block from the function's body (each step: a statement's index and
the attributes that lead from it to the block, `(3, ("body",))`, `(5, ("orelse", "body"))` for an `else` or
an `elif`) and its index there, statements joined by `;` sharing one index, as in libcst's tree.

Each `tl.load` / `tl.store` met is handed to `on_access` with the statements around it evaluated up to it;
those in a loop or `if` header to `on_header_access` (`tile_accesses` decides what they are).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from tileiropt.classify.blocks import is_elif
from tileiropt.classify.facts import RANGES
from tileiropt.classify.names import TL, short_name
from tileiropt.classify.source import SourceText
from tileiropt.classify.syntax import (
    COMPOUND,
    calls_in_order,
    is_number,
    keywords,
    names_assigned,
    names_read,
    on_header_line,
    positional,
    statement_lines,
)
from tileiropt.classify.tile_values import (
    CONSTEXPR,
    GLOBAL,
    LOCAL,
    ONE,
    OPAQUE,
    PARAM,
    ZERO,
    Affine,
    Atom,
    Mask,
    Poly,
    Unknown,
    Value,
    add,
    broadcast,
    conjoin,
    index,
    less_than,
    multiply,
    negate,
    wrapped,
)

BlockPath = tuple[tuple[int, tuple[str, ...]], ...]
Position = tuple[BlockPath, int]  # (the block, the index of a statement line in it); index -1: a loop's entry
Chain = tuple[Position, ...]  # from the function's body inward, ending at the statement holding an access

PASS_THROUGH = frozenset({TL + "multiple_of", TL + "max_contiguous", TL + "max_constancy"})
SCALAR_CALLS = frozenset({TL + "program_id", TL + "num_programs", TL + "cdiv", "triton.cdiv", "cdiv", "min", "max",
                          "int", "abs", TL + "minimum", TL + "maximum"})
ACCESSES = {TL + "load": "load", TL + "store": "store"}
_AUGMENTED = {ast.FloorDiv: "//", ast.Mod: "%", ast.Div: "/", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
              ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.MatMult: "@"}
_BARE = (ast.Name, ast.Call, ast.Attribute, ast.Subscript)  # printed without parentheses inside an expression


@dataclass
class Snapshot:
    """The analysis state just before a statement."""

    versions: dict[str, int]
    env: dict[str, Value]


class TileFlow:
    """One pass over a kernel's body: `versions`, `env` and `snapshots` hold what it found."""

    def __init__(self, function: ast.FunctionDef, text: SourceText, resolve: Callable[[ast.Call], str | None],
                 constexprs: set[str], helpers: set[str], on_access: Callable[[ast.Call, str, Chain], None],
                 on_header_access: Callable[[ast.Call, str], None]):
        self.function = function
        self.text = text
        self.resolve = resolve  # what a call calls (`tileiropt.classify.names.callee`)
        self.constexprs = constexprs
        self.helpers = helpers  # module-level functions: their results unpack into scalars
        self.on_access = on_access
        self.on_header_access = on_header_access
        args = function.args
        self.params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        self.versions: dict[str, int] = {name: 0 for name in self.params}
        self.env: dict[str, Value] = {}
        self.defs: dict[tuple[str, int], Position] = {}  # where each version was made
        self.loop_versions: set[tuple[str, int]] = set()
        self.snapshots: dict[Position, Snapshot] = {}
        self._counter = 0

    # ------------------------------------------------------------------ driving

    def run(self) -> TileFlow:
        if not on_header_line(self.function.body, self.text):  # `def k(x): ...` on one line holds no tiles
            self._block(self.function.body, (), ())
        return self

    def _block(self, statements: list[ast.stmt], path: BlockPath, chain: Chain) -> None:
        for i, line in enumerate(statement_lines(statements, self.text)):
            position = (path, i)
            self.snapshots[position] = Snapshot(dict(self.versions), dict(self.env))
            self._statement(line, path, chain + (position,), position)

    def _statement(self, line: list[ast.stmt], path: BlockPath, chain: Chain, position: Position) -> None:
        statement = line[0]
        if not isinstance(statement, COMPOUND):
            for small in line:
                for call, kind in self.accesses_in(small):
                    self.on_access(call, kind, chain)
                self._small(small, position)
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            self._for(statement, path, chain, position)
        elif isinstance(statement, ast.If):
            self._if(statement, path, chain, position, ())
        elif isinstance(statement, ast.While):
            self._header(statement.test)
            body = path + ((position[1], ("body",)),)
            assigned = set(names_assigned(statement.body))
            self._kill(assigned, (body, -1), loop=True)
            self._block(statement.body, body, chain)
            self._kill(assigned, position, loop=False)
        elif isinstance(statement, (ast.With, ast.AsyncWith, ast.Try)):
            self._block(statement.body, path + ((position[1], ("body",)),), chain)
        # nested definitions, classes and the rest make no values the kernel's tiles use

    # ------------------------------------------------------------------ versions

    def _new_version(self, name: str, position: Position, loop: bool = False) -> int:
        self._counter += 1
        self.versions[name] = self._counter
        self.defs[(name, self._counter)] = position
        if loop:
            self.loop_versions.add((name, self._counter))
        return self._counter

    def _name_atom(self, name: str, version: int) -> Atom:
        if version == 0 and name in self.params:
            kind = CONSTEXPR if name in self.constexprs else PARAM
        else:
            kind = LOCAL
        return Atom(kind, name, f"{name}#{version}", frozenset({(name, version)}),
                    (name, version) in self.loop_versions)

    def _assign(self, name: str, value: Value, position: Position, loop: bool = False) -> None:
        version = self._new_version(name, position, loop)
        if isinstance(value, Poly) and any(a.kind == OPAQUE for a in value.atoms()):
            value = Poly.of(self._name_atom(name, version))  # print the name, not its expression
        self.env[name] = value

    def _kill(self, names: set[str], position: Position, loop: bool) -> None:
        """Names whose value is not known from here on (a loop or a branch changes them)."""
        for name in sorted(names):
            old = self.env.get(name)
            version = self._new_version(name, position, loop)
            if old is None or isinstance(old, Poly):
                self.env[name] = Poly.of(self._name_atom(name, version))
            else:
                self.env[name] = Unknown(f"`{name}` changes in a loop or a branch")

    # ------------------------------------------------------------------ statements

    def _small(self, small: ast.stmt, position: Position) -> None:
        if isinstance(small, ast.Assign):
            for target in small.targets:
                self._assign_target(target, small.value, position)
        elif isinstance(small, ast.AnnAssign) and small.value is not None:
            self._assign_target(small.target, small.value, position)
        elif isinstance(small, ast.AugAssign) and isinstance(small.target, ast.Name):
            name = small.target.id
            current = self.name_value(name)
            right = self.ev(small.value)
            if isinstance(small.op, ast.Add):
                value = add(current, right)
            elif isinstance(small.op, ast.Sub):
                value = add(current, negate(right))
            elif isinstance(small.op, ast.Mult):
                value = multiply(current, right)
            else:
                operand = self.text.segment(small.value)
                operand = operand if isinstance(small.value, (*_BARE, ast.Constant)) else f"({operand})"
                value = self._opaque(f"{name} {_AUGMENTED[type(small.op)]} {operand}", False,
                                     {name} | names_read(small.value), [current, right])
            self._assign(name, value, position)

    def _assign_target(self, target: ast.expr, value_node: ast.expr, position: Position) -> None:
        if isinstance(target, ast.Name):
            self._assign(target.id, self.ev(value_node), position)
        elif isinstance(target, (ast.Tuple, ast.List)):
            names = [e.id for e in target.elts if isinstance(e, ast.Name)]
            if isinstance(value_node, (ast.Tuple, ast.List)) and len(value_node.elts) == len(target.elts):
                values = [self.ev(e.value if isinstance(e, ast.Starred) else e) for e in value_node.elts]
                for element, value in zip(target.elts, values):
                    if isinstance(element, ast.Name):
                        self._assign(element.id, value, position)
                return
            scalar = (isinstance(value_node, ast.Call) and isinstance(value_node.func, ast.Name)
                      and value_node.func.id in self.helpers)
            for name in names:
                version = self._new_version(name, position)
                self.env[name] = (Poly.of(self._name_atom(name, version)) if scalar
                                  else Unknown(f"`{name}` unpacked from {self.text.segment(value_node)[:40]}"))

    def _for(self, statement: ast.For | ast.AsyncFor, path: BlockPath, chain: Chain, position: Position) -> None:
        self._header(statement.iter)
        assigned = set(names_assigned(statement.body))
        target = statement.target.id if isinstance(statement.target, ast.Name) else None
        bounds = self._range(statement.iter) if target else None
        steps = self._steps(statement.body, assigned) if bounds else {}
        before = {name: self.name_value(name) for name in steps}
        body = path + ((position[1], ("body",)),)
        entry = (body, -1)  # versions made by the loop itself count from its body's start
        loop_names = assigned | ({target} if target else set())
        self._kill(loop_names - set(steps), entry, loop=True)
        if target and bounds:
            start, step, start_node, step_node = bounds
            done = Poly.of(self._name_atom(target, self.versions[target])) - start
            for name, increment in steps.items():
                shift = self._iterations(done, step, increment, target, start_node, step_node)
                self._new_version(name, entry, loop=True)
                self.env[name] = add(before[name], shift)
        self._block(statement.body, body, chain)
        self._kill(loop_names, position, loop=False)

    def _iterations(self, done: Poly, step: Poly, increment: Poly, target: str, start_node: ast.expr | None,
                    step_node: ast.expr | None) -> Poly:
        """How far `increment` per iteration has moved a value on the iteration where the loop variable
        is `target`: `done` is `target - start`, the distance covered in steps of `step`."""
        if step == ONE:
            return done * increment
        per_unit = increment.divide(step)
        if per_unit is not None:
            return done * per_unit
        names = {target}
        for node in (start_node, step_node):
            if node is not None:
                names |= names_read(node)
        deps = frozenset((n, self.versions[n]) for n in names if n in self.versions)
        start_code = f"({self.text.segment(start_node)})" if start_node is not None else "0"
        step_code = f"({self.text.segment(step_node)})" if step_node is not None else "1"
        text = f"(({target} - {start_code}) // {step_code})"
        atom = Atom(OPAQUE, text, f"{text}#{sorted(deps)}", deps, True)
        return Poly.of(atom) * increment

    def _range(self, node: ast.expr) -> tuple[Poly, Poly, ast.expr | None, ast.expr | None] | None:
        """(start, step, their expressions) of `range(...)` / `tl.range(...)` with polynomial bounds."""
        if not isinstance(node, ast.Call) or self.resolve(node) not in RANGES:
            return None
        args = positional(node)
        if not args:
            return None
        start_node = args[0] if len(args) > 1 else None
        step_node = args[2] if len(args) > 2 else None
        start = self.ev(start_node) if start_node is not None else ZERO
        step = self.ev(step_node) if step_node is not None else ONE
        if not (isinstance(start, Poly) and isinstance(step, Poly)):
            return None
        return start, step, start_node, step_node

    def _steps(self, body: list[ast.stmt], assigned: set[str]) -> dict[str, Poly]:
        """Names the loop only advances by a loop-invariant amount, each with its step per iteration."""
        if on_header_line(body, self.text):
            return {}
        found: dict[str, Poly] = {}
        counts = names_assigned(body)
        for small in body:
            name, amount = _increment(small)
            if name is None or amount is None or counts.get(name) != 1:
                continue
            if not isinstance(self.env.get(name), (Affine, Poly)) and name not in self.params:
                continue
            if names_read(amount) & assigned:
                continue
            value = self.ev(amount)
            if isinstance(value, Poly) and not any(a.loop for a in value.atoms()):
                found[name] = value
        return found

    def _if(self, statement: ast.If, path: BlockPath, chain: Chain, position: Position,
            arm: tuple[str, ...]) -> None:
        """`arm`: the attributes leading from the statement at `position` to this `if` (an `elif` is the
        `orelse` of the one before it)."""
        self._header(statement.test)
        before_versions, before_env = dict(self.versions), dict(self.env)
        self._block(statement.body, path + ((position[1], (*arm, "body")),), chain)
        then_versions, then_env = self.versions, self.env
        self.versions, self.env = dict(before_versions), dict(before_env)
        if is_elif(statement, self.text):
            self._if(statement.orelse[0], path, chain, position, (*arm, "orelse"))  # type: ignore[arg-type]
        elif statement.orelse:
            self._block(statement.orelse, path + ((position[1], (*arm, "orelse", "body")),), chain)
        changed = {n for n in set(then_versions) | set(self.versions)
                   if then_versions.get(n) != before_versions.get(n) or self.versions.get(n) != before_versions.get(n)}
        for name in sorted(changed):
            a, b = then_env.get(name), self.env.get(name)
            version = self._new_version(name, position)
            if a is not None and a == b:
                self.env[name] = a
            elif isinstance(a, Poly) and isinstance(b, Poly):
                self.env[name] = Poly.of(self._name_atom(name, version))
            else:
                self.env[name] = Unknown(f"`{name}` differs between the branches of an `if`")

    # ------------------------------------------------------------------ expressions

    def name_value(self, name: str) -> Value:
        if name in self.env:
            return self.env[name]
        if name in self.versions:
            return Poly.of(self._name_atom(name, self.versions[name]))
        return Poly.of(Atom(GLOBAL, name, f"{name}#0"))

    def ev(self, node: ast.expr | None) -> Value:
        if node is None:
            return Unknown("missing")
        if isinstance(node, ast.Name):
            return self.name_value(node.id)
        if isinstance(node, ast.Constant):
            if node.value is None or isinstance(node.value, bool):
                return Unknown(str(node.value))
            if type(node.value) is int:  # an integer literal (`is_int`; True was answered above)
                return Poly.const(node.value)
        elif isinstance(node, ast.BinOp):
            left, right = self.ev(node.left), self.ev(node.right)
            if isinstance(node.op, ast.Add):
                return add(left, right)
            if isinstance(node.op, ast.Sub):
                return add(left, negate(right))
            if isinstance(node.op, ast.Mult):
                return multiply(left, right)
            if isinstance(node.op, ast.BitAnd):
                return conjoin(left, right)
            if isinstance(node.op, ast.Mod) and isinstance(left, Affine):
                return wrapped(left, right)
            return self._opaque_node(node, [left, right])
        elif isinstance(node, ast.UnaryOp):
            inner = self.ev(node.operand)
            if isinstance(node.op, ast.USub):
                return negate(inner)
            if isinstance(node.op, ast.UAdd):
                return inner
            return Unknown(f"`{self.text.segment(node)}`")
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._compare(node)
        elif isinstance(node, ast.Subscript):
            layout = _broadcast_layout(node)
            if layout is None:
                return Unknown(f"subscript `{self.text.segment(node)}`")
            return broadcast(self.ev(node.value), layout)
        elif isinstance(node, ast.Call):
            return self._call(node)
        return Unknown(f"`{self.text.segment(node)[:40]}`")

    def _compare(self, node: ast.Compare) -> Value:
        left, right = self.ev(node.left), self.ev(node.comparators[0])
        op = node.ops[0]
        if isinstance(op, ast.Lt):
            return less_than(left, right)
        if isinstance(op, ast.LtE):
            return less_than(left, right, inclusive=True)
        if isinstance(op, ast.Gt):
            return less_than(right, left)
        if isinstance(op, ast.GtE):
            return less_than(right, left, inclusive=True)
        return Unknown(f"comparison `{self.text.segment(node)}`")

    def _call(self, node: ast.Call) -> Value:
        name = self.resolve(node)
        args = positional(node)
        if name == TL + "arange":
            named = keywords(node)
            start_node = args[0] if args else named.get("start")
            end_node = args[1] if len(args) > 1 else named.get("end")
            start, end = self.ev(start_node), self.ev(end_node)
            if isinstance(start, Poly) and isinstance(end, Poly):
                return index(start, end - start)
            return Unknown(f"`{self.text.segment(node)}`")
        if name in PASS_THROUGH and args:
            return self.ev(args[0])
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to" and name not in SCALAR_CALLS:
            inner = self.ev(node.func.value)
            return inner if isinstance(inner, (Poly, Affine, Unknown)) else Unknown(f"`{self.text.segment(node)[:40]}`")
        if name == TL + "load" and args:
            # a scalar read (an expert's first row, a sequence length) is a value like any other;
            # a tile of loaded values (gathered row indices) is not an affine index
            if isinstance(self.ev(args[0]), Poly):
                return self._opaque_node(node, [])
            return Unknown("indices loaded from memory (a gather)")
        if name in SCALAR_CALLS:
            return self._opaque_node(node, [self.ev(a) for a in args])
        if name == TL + "where" and len(args) == 3 and is_zero(args[2]):
            # tl.where(offs < M, offs, 0): an index clamped into [0, M) (lanes past M read row 0)
            condition, kept = self.ev(args[0]), self.ev(args[1])
            if (isinstance(condition, Mask) and len(condition.conds) == 1 and isinstance(kept, Affine)
                    and kept.is_index() and kept.dims[0][1].wrap is None):
                ((d, dim),), cond = kept.dims, condition.conds[0]
                if cond.dim == d and cond.start == dim.start and cond.block == dim.block:
                    return wrapped(kept, cond.bound)
            return Unknown(f"`{self.text.segment(node)[:40]}`")
        return Unknown(f"`{short_name(name) if name else self.text.segment(node.func)}(...)`")

    def _opaque_node(self, node: ast.expr, operands: list[Value]) -> Value:
        return self._opaque(self.text.segment(node), isinstance(node, _BARE), names_read(node), operands)

    def _opaque(self, text: str, bare: bool, names: set[str], operands: list[Value]) -> Value:
        """A scalar expression kept whole (`pid // n`), or unknown when it involves tiles."""
        for operand in operands:
            if not isinstance(operand, Poly):
                return operand if isinstance(operand, Unknown) else Unknown(f"`{text[:40]}` on a tile")
        deps = frozenset((n, self.versions[n]) for n in names if n in self.versions)
        loop = any(d in self.loop_versions for d in deps)
        if not bare:
            text = f"({text})"
        return Poly.of(Atom(OPAQUE, text, f"{text}#{sorted(deps)}", deps, loop))

    # ------------------------------------------------------------------ loads and stores

    def accesses_in(self, node: ast.AST) -> list[tuple[ast.Call, str]]:
        """The `tl.load` / `tl.store` calls inside `node`, in source order, with their kind."""
        return [(call, ACCESSES[name]) for call in calls_in_order([node])
                if (name := self.resolve(call)) in ACCESSES]

    def _header(self, node: ast.AST) -> None:
        for call, kind in self.accesses_in(node):
            self.on_header_access(call, kind)


def _increment(small: ast.stmt) -> tuple[str | None, ast.expr | None]:
    """(`x`, `step`) for `x += step` or `x = x + step`."""
    if isinstance(small, ast.AugAssign) and isinstance(small.op, ast.Add) and isinstance(small.target, ast.Name):
        return small.target.id, small.value
    if isinstance(small, ast.Assign) and len(small.targets) == 1 and isinstance(small.targets[0], ast.Name):
        name = small.targets[0].id
        value = small.value
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            if isinstance(value.left, ast.Name) and value.left.id == name:
                return name, value.right
            if isinstance(value.right, ast.Name) and value.right.id == name:
                return name, value.left
    return None, None


def _broadcast_layout(node: ast.Subscript) -> list[bool] | None:
    """`x[:, None]` -> [True, False]; None for any other subscript."""
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    layout = []
    for item in items:
        if isinstance(item, ast.Constant) and item.value is None:
            layout.append(False)
        elif isinstance(item, ast.Slice) and item.lower is None and item.upper is None and item.step is None:
            layout.append(True)
        else:
            return None
    return layout


def is_zero(node: ast.expr | None) -> bool:
    """A missing argument or a literal zero."""
    if node is None:
        return True
    return is_number(node) and node.value == 0
