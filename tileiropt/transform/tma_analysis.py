"""Find the tile loads and stores of a kernel body that a tensor descriptor can replace.

The body is evaluated statement by statement into symbolic values (`tma_values`): index
vectors `start + tl.arange(0, B)`, pointer tiles `ptr + base + sum_d stride_d * index_d`, masks
`index_d < bound`. Loops are handled the way kernels use them: a pointer tile advanced by a
loop-invariant step (`a_ptrs += BLOCK_K * stride_ak`) is, on iteration `k`, the entry value
plus `k` steps; any other value a loop changes is unknown inside it. Both branches of an `if`
are evaluated; a value they leave different is unknown after it.

A `tl.load` / `tl.store` is a *tile access* when its pointer is a rank-2 tile over one pointer
argument, its strides are kernel arguments (or 1), and its mask bounds each dimension by a
fixed extent: then `tl.load(ptrs, mask, other=0)` reads exactly what a descriptor of that
shape, loaded at the tile's start, reads (TMA fills out-of-bounds elements with zeros and
drops out-of-bounds stores). Anything else is reported with the reason and left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from tileiropt.transform.tma_values import (
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
    format_poly,
    index,
    less_than,
    multiply,
    negate,
    wrapped,
)

_EMPTY = cst.Module(body=[])
_PASS_THROUGH = {"tl.multiple_of", "tl.max_contiguous", "tl.max_constancy"}
_SCALAR_CALLS = {"tl.program_id", "tl.num_programs", "tl.cdiv", "triton.cdiv", "cdiv", "min", "max", "int", "abs",
                 "tl.minimum", "tl.maximum"}
_RANGES = {"range", "tl.range", "tl.static_range"}

Position = tuple[int, int]  # (id of the block, index of a statement in it)


def code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


@dataclass
class Snapshot:
    """The analysis state just before a statement."""

    versions: dict[str, int]
    env: dict[str, Value]


@dataclass
class Access:
    """A recognised tile load or store."""

    call: cst.Call
    kind: str  # "load" | "store"
    chain: tuple[Position, ...]  # from the function body inward, ending at the statement holding it
    pointer: str
    base: Poly  # the pointer argument plus batch offsets
    base_terms: tuple[tuple[str, ...], ...]  # arguments whose product makes each batch offset
    starts: tuple[Poly, Poly]
    blocks: tuple[Poly, Poly]
    strides: tuple[Poly, Poly]
    stride_names: tuple[tuple[str, ...], tuple[str, ...]]  # () for a literal unit stride
    extents: tuple[Poly, Poly]
    orient: str  # "n": last dim has unit stride; "t": first dim has; "nt": decided per launch
    value: cst.BaseExpression | None  # what a store writes
    wrapped: tuple[int, ...] = ()  # dims whose index wraps (`% M`) or is clamped: the extent is the wrap bound


@dataclass
class Skip:
    call: cst.Call
    kind: str
    reason: str


class Analysis:
    """One pass over a kernel; `accesses` and `skips` hold what it found."""

    def __init__(self, function: cst.FunctionDef, tl_names: set[str], host_known: set[str],
                 constexprs: set[str], helpers: set[str]):
        self.function = function
        self.tl_names = tl_names
        self.host_known = host_known  # arguments whose value the launch passes (not set by configs)
        self.helpers = helpers  # module-level functions: their results unpack into scalars
        self.params = [p.name.value for p in _all_params(function)]
        self.constexprs = constexprs
        self.versions: dict[str, int] = {name: 0 for name in self.params}
        self.env: dict[str, Value] = {}
        self.defs: dict[tuple[str, int], Position] = {}  # where each version was made (index -1: loop entry)
        self.loop_versions: set[tuple[str, int]] = set()
        self.snapshots: dict[Position, Snapshot] = {}
        self.accesses: list[Access] = []
        self.skips: list[Skip] = []
        self._counter = 0

    # ------------------------------------------------------------------ driving

    def run(self) -> Analysis:
        body = self.function.body
        if isinstance(body, cst.IndentedBlock):
            self._block(body, ())
        return self

    def _block(self, block: cst.BaseSuite, chain: tuple[Position, ...]) -> None:
        statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
        for i, statement in enumerate(statements):
            position = (id(block), i)
            self.snapshots[position] = Snapshot(dict(self.versions), dict(self.env))
            self._statement(statement, chain + (position,), position)

    def _statement(self, statement: cst.CSTNode, chain: tuple[Position, ...], position: Position) -> None:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                for call, kind in self._accesses_in(small):
                    self._access(call, kind, chain)
                self._small(small, position)
        elif isinstance(statement, cst.For):
            self._for(statement, chain, position)
        elif isinstance(statement, cst.If):
            self._if(statement, chain, position)
        elif isinstance(statement, cst.While):
            self._header_accesses(statement.test)
            assigned = _assigned_names(statement.body)
            self._kill(assigned, (id(statement.body), -1), loop=True)
            self._block(statement.body, chain)
            self._kill(assigned, position, loop=False)
        elif isinstance(statement, (cst.With, cst.Try)):
            self._block(statement.body, chain)
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

    def _small(self, small: cst.BaseSmallStatement, position: Position) -> None:
        if isinstance(small, cst.Assign):
            value_node = small.value
            for target in small.targets:
                self._assign_target(target.target, value_node, position)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            self._assign_target(small.target, small.value, position)
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            name = small.target.value
            current = self.name_value(name)
            right = self.ev(small.value)
            op = type(small.operator)
            if op is cst.AddAssign:
                value = add(current, right)
            elif op is cst.SubtractAssign:
                value = add(current, negate(right))
            elif op is cst.MultiplyAssign:
                value = multiply(current, right)
            else:
                value = self._opaque_or_unknown(cst.BinaryOperation(
                    left=small.target, operator=_binary_of(small.operator), right=small.value), [current, right])
            self._assign(name, value, position)

    def _assign_target(self, target: cst.BaseExpression, value_node: cst.BaseExpression, position: Position) -> None:
        if isinstance(target, cst.Name):
            self._assign(target.value, self.ev(value_node), position)
        elif isinstance(target, (cst.Tuple, cst.List)):
            names = [e.value.value for e in target.elements if isinstance(e.value, cst.Name)]
            if isinstance(value_node, (cst.Tuple, cst.List)) and len(value_node.elements) == len(target.elements):
                values = [self.ev(e.value) for e in value_node.elements]
                for element, value in zip(target.elements, values):
                    if isinstance(element.value, cst.Name):
                        self._assign(element.value.value, value, position)
                return
            scalar = isinstance(value_node, cst.Call) and dotted(value_node.func) in self.helpers
            for name in names:
                version = self._new_version(name, position)
                self.env[name] = (Poly.of(self._name_atom(name, version)) if scalar
                                  else Unknown(f"`{name}` unpacked from {code(value_node)[:40]}"))

    def _for(self, statement: cst.For, chain: tuple[Position, ...], position: Position) -> None:
        self._header_accesses(statement.iter)
        assigned = _assigned_names(statement.body)
        target = statement.target.value if isinstance(statement.target, cst.Name) else None
        bounds = self._range(statement.iter) if target else None
        steps = self._steps(statement.body, assigned) if bounds else {}
        before = {name: self.name_value(name) for name in steps}
        entry = (id(statement.body), -1)  # versions made by the loop itself count from its body's start
        loop_names = assigned | ({target} if target else set())
        self._kill(loop_names - set(steps), entry, loop=True)
        if target and bounds:
            start, step, start_code, step_code = bounds
            done = Poly.of(self._name_atom(target, self.versions[target])) - start
            for name, increment in steps.items():
                shift = self._iterations(done, step, increment, target, start_code, step_code)
                self._new_version(name, entry, loop=True)
                self.env[name] = add(before[name], shift)
        self._block(statement.body, chain)
        self._kill(loop_names, position, loop=False)

    def _iterations(self, done: Poly, step: Poly, increment: Poly, target: str, start_code: str,
                    step_code: str) -> Poly:
        """How far `increment` per iteration has moved a value on the iteration where the loop variable
        is `target`: `done` is `target - start`, the distance covered in steps of `step`."""
        if step == ONE:
            return done * increment
        per_unit = increment.divide(step)
        if per_unit is not None:
            return done * per_unit
        names = {target} | _names_in(start_code) | _names_in(step_code)
        deps = frozenset((n, self.versions[n]) for n in names if n in self.versions)
        text = f"(({target} - {start_code}) // {step_code})"
        atom = Atom(OPAQUE, text, f"{text}#{sorted(deps)}", deps, True)
        return Poly.of(atom) * increment

    def _range(self, node: cst.BaseExpression) -> tuple[Poly, Poly, str, str] | None:
        """(start, step, their source) of `range(...)` / `tl.range(...)` with polynomial bounds."""
        if not isinstance(node, cst.Call) or dotted(node.func, self.tl_names) not in _RANGES:
            return None
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if not positional:
            return None
        start_node = positional[0] if len(positional) > 1 else None
        step_node = positional[2] if len(positional) > 2 else None
        start = self.ev(start_node) if start_node is not None else ZERO
        step = self.ev(step_node) if step_node is not None else ONE
        if not (isinstance(start, Poly) and isinstance(step, Poly)):
            return None
        start_code = f"({code(start_node)})" if start_node is not None else "0"
        step_code = f"({code(step_node)})" if step_node is not None else "1"
        return start, step, start_code, step_code

    def _steps(self, body: cst.BaseSuite, assigned: set[str]) -> dict[str, Poly]:
        """Names the loop only advances by a loop-invariant amount, each with its step per iteration."""
        statements = body.body if isinstance(body, cst.IndentedBlock) else []
        found: dict[str, Poly] = {}
        counts = _assignment_counts(body)
        for statement in statements:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                name, amount = _increment(small)
                if name is None or amount is None or counts.get(name) != 1:
                    continue
                if not isinstance(self.env.get(name), (Affine, Poly)) and name not in self.params:
                    continue
                if _names_in(code(amount)) & assigned:
                    continue
                value = self.ev(amount)
                if isinstance(value, Poly) and not any(a.loop for a in value.atoms()):
                    found[name] = value
        return found

    def _if(self, statement: cst.If, chain: tuple[Position, ...], position: Position) -> None:
        self._header_accesses(statement.test)
        before_versions, before_env = dict(self.versions), dict(self.env)
        self._block(statement.body, chain)
        then_versions, then_env = self.versions, self.env
        self.versions, self.env = dict(before_versions), dict(before_env)
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            self._if(orelse, chain, position)
        elif isinstance(orelse, cst.Else):
            self._block(orelse.body, chain)
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

    def ev(self, node: cst.BaseExpression | None) -> Value:
        if node is None:
            return Unknown("missing")
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return Unknown(node.value)
            return self.name_value(node.value)
        if isinstance(node, cst.Integer):
            return Poly.const(int(node.evaluated_value))
        if isinstance(node, cst.BinaryOperation):
            left, right = self.ev(node.left), self.ev(node.right)
            op = type(node.operator)
            if op is cst.Add:
                return add(left, right)
            if op is cst.Subtract:
                return add(left, negate(right))
            if op is cst.Multiply:
                return multiply(left, right)
            if op is cst.BitAnd:
                return conjoin(left, right)
            if op is cst.Modulo and isinstance(left, Affine):
                return wrapped(left, right)
            return self._opaque_or_unknown(node, [left, right])
        if isinstance(node, cst.UnaryOperation):
            inner = self.ev(node.expression)
            if isinstance(node.operator, cst.Minus):
                return negate(inner)
            if isinstance(node.operator, cst.Plus):
                return inner
            return Unknown(f"`{code(node)}`")
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            target = node.comparisons[0]
            left, right = self.ev(node.left), self.ev(target.comparator)
            op = type(target.operator)
            if op is cst.LessThan:
                return less_than(left, right)
            if op is cst.LessThanEqual:
                return less_than(left, right, inclusive=True)
            if op is cst.GreaterThan:
                return less_than(right, left)
            if op is cst.GreaterThanEqual:
                return less_than(right, left, inclusive=True)
            return Unknown(f"comparison `{code(node)}`")
        if isinstance(node, cst.Subscript):
            layout = _broadcast_layout(node)
            if layout is None:
                return Unknown(f"subscript `{code(node)}`")
            return broadcast(self.ev(node.value), layout)
        if isinstance(node, cst.Call):
            return self._call(node)
        return Unknown(f"`{code(node)[:40]}`")

    def _call(self, node: cst.Call) -> Value:
        name = dotted(node.func, self.tl_names)
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if name == "tl.arange":
            keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
            start_node = args[0] if args else keywords.get("start")
            end_node = args[1] if len(args) > 1 else keywords.get("end")
            start, end = self.ev(start_node), self.ev(end_node)
            if isinstance(start, Poly) and isinstance(end, Poly):
                return index(start, end - start)
            return Unknown(f"`{code(node)}`")
        if name in _PASS_THROUGH and args:
            return self.ev(args[0])
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "to" and name not in _SCALAR_CALLS:
            inner = self.ev(node.func.value)
            return inner if isinstance(inner, (Poly, Affine, Unknown)) else Unknown(f"`{code(node)[:40]}`")
        if name == "tl.load" and args:
            # a scalar read (an expert's first row, a sequence length) is a value like any other;
            # a tile of loaded values (gathered row indices) is not an affine index
            if isinstance(self.ev(args[0]), Poly):
                return self._opaque_or_unknown(node, [])
            return Unknown("indices loaded from memory (a gather)")
        if name in _SCALAR_CALLS:
            return self._opaque_or_unknown(node, [self.ev(a) for a in args])
        if name == "tl.where" and len(args) == 3 and _is_zero(args[2]):
            # tl.where(offs < M, offs, 0): an index clamped into [0, M) (lanes past M read row 0)
            condition, kept = self.ev(args[0]), self.ev(args[1])
            if (isinstance(condition, Mask) and len(condition.conds) == 1 and isinstance(kept, Affine)
                    and kept.is_index() and kept.dims[0][1].wrap is None):
                ((d, dim),), cond = kept.dims, condition.conds[0]
                if cond.dim == d and cond.start == dim.start and cond.block == dim.block:
                    return wrapped(kept, cond.bound)
            return Unknown(f"`{code(node)[:40]}`")
        return Unknown(f"`{name or code(node.func)}(...)`")

    def _opaque_or_unknown(self, node: cst.BaseExpression, operands: list[Value]) -> Value:
        """A scalar expression kept whole (`pid // n`), or unknown when it involves tiles."""
        for operand in operands:
            if not isinstance(operand, Poly):
                return operand if isinstance(operand, Unknown) else Unknown(f"`{code(node)[:40]}` on a tile")
        text = code(node)
        deps = frozenset((n, self.versions[n]) for n in _names_in(text) if n in self.versions)
        loop = any(d in self.loop_versions for d in deps)
        if not _is_atomic(node):
            text = f"({text})"
        return Poly.of(Atom(OPAQUE, text, f"{text}#{sorted(deps)}", deps, loop))

    # ------------------------------------------------------------------ loads and stores

    def _accesses_in(self, node: cst.CSTNode) -> list[tuple[cst.Call, str]]:
        finder = _AccessFinder(self.tl_names)
        node.visit(finder)
        return finder.found

    def _header_accesses(self, node: cst.CSTNode) -> None:
        for call, kind in self._accesses_in(node):
            self.skips.append(Skip(call, kind, "in a loop or `if` header"))

    def _access(self, call: cst.Call, kind: str, chain: tuple[Position, ...]) -> None:
        result = self._tile(call, kind, chain)
        if isinstance(result, str):
            self.skips.append(Skip(call, kind, result))
        else:
            self.accesses.append(result)

    def _tile(self, call: cst.Call, kind: str, chain: tuple[Position, ...]) -> Access | str:
        names = ("pointer", "mask", "other") if kind == "load" else ("pointer", "value", "mask")
        args = _bind(call, names)
        if args is None:
            return "arguments not understood"
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        for option in ("boundary_check", "padding_option", "volatile"):
            if option in keywords and not (option == "volatile" and code(keywords[option]) == "False"):
                return f"`{option}=` (a block pointer or a volatile access)"
        pointer = self.ev(args["pointer"])
        if isinstance(pointer, Unknown):
            return f"pointer not understood: {pointer.reason}"
        if isinstance(pointer, Poly):
            return "a scalar access, not a tile"
        if not isinstance(pointer, Affine) or pointer.rank != 2 or len(pointer.dims) != 2:
            rank, terms = (pointer.rank, len(pointer.dims)) if isinstance(pointer, Affine) else (0, 0)
            return f"a {rank}-D access with {terms} index terms, not a 2-D tile"
        if kind == "load" and args.get("mask") is not None and not _is_zero(args.get("other")):
            return f"masked lanes read `other={code(args['other'])}`, a descriptor reads zeros"
        if kind == "store" and isinstance(args.get("value"), (cst.Integer, cst.Float)):
            return "stores a scalar"
        dims = pointer.dim_map()
        blocks = (dims[0].block, dims[1].block)
        strides = (dims[0].stride, dims[1].stride)
        split = self._split_scalar(pointer.scalar, strides)
        if isinstance(split, str):
            return split
        pointer_name, base, base_terms, shifts = split
        starts = (dims[0].start + shifts[0], dims[1].start + shifts[1])
        stride_names = []
        for d, stride in enumerate(strides):
            names_d = self._stride_names(stride)
            if names_d is None:
                return f"stride of dim {d} (`{format_poly(stride)}`) is not a kernel argument"
            stride_names.append(names_d)
        if strides[0] == ONE and strides[1] == ONE:
            return "both dimensions have unit stride"
        if strides[1] == ONE:
            orient = "n"
        elif strides[0] == ONE:
            orient = "t"
        else:
            orient = "nt"
        wraps = (dims[0].wrap, dims[1].wrap)
        if kind == "store" and any(w is not None for w in wraps):
            return "a store through a wrapped index"
        extents = self._extents(args.get("mask"), starts, blocks, wraps)
        if isinstance(extents, str):
            return extents
        return Access(call, kind, chain, pointer_name, base, tuple(base_terms), starts, blocks, strides,
                      (stride_names[0], stride_names[1]), extents, orient, args.get("value"),
                      tuple(d for d in (0, 1) if wraps[d] is not None))

    def _split_scalar(self, scalar: Poly, strides: tuple[Poly, Poly]
                      ) -> tuple[str, Poly, list[tuple[str, ...]], list[Poly]] | str:
        """Split a tile's scalar part into its pointer argument, batch offsets and start shifts per dim."""
        candidates = [t for t in scalar.split() if (m := t.monomial()) and m[0] == 1 and len(m[1]) == 1
                      and m[1][0].kind == PARAM and m[1][0].key.endswith("#0")]
        if len(candidates) > 1:
            named = [t for t in candidates if "ptr" in next(iter(t.atoms())).text.lower()]
            candidates = named if len(named) == 1 else candidates
        if len(candidates) != 1:
            return "no single pointer argument at the tile's base" if not candidates else "ambiguous base pointer"
        pointer_term = candidates[0]
        pointer_name = next(iter(pointer_term.atoms())).text
        base, base_terms, shifts = pointer_term, [], [ZERO, ZERO]
        for term in (scalar - pointer_term).split():
            owners = [d for d in (0, 1) if strides[d] != ONE and term.divide(strides[d]) is not None]
            if len(owners) > 1:
                return f"offset `{format_poly(term)}` fits both dimensions"
            if owners:
                d = owners[0]
                shifts[d] = shifts[d] + term.divide(strides[d])  # type: ignore[operator]
                continue
            ((monomial, _),) = term.terms.items()
            host = tuple(sorted(a.text for a in monomial if a.text in self.host_known and a.key.endswith("#0")))
            if host:
                base = base + term
                base_terms.append(host)
                continue
            units = [d for d in (0, 1) if strides[d] == ONE]
            if len(units) != 1:
                return f"offset `{format_poly(term)}` belongs to no dimension"
            shifts[units[0]] = shifts[units[0]] + term
        return pointer_name, base, base_terms, shifts

    def _stride_names(self, stride: Poly) -> tuple[str, ...] | None:
        if stride == ONE:
            return ()
        single = stride.monomial()
        if single is None or single[0] != 1:
            return None
        coefficient, atoms = single
        if not all(a.text in self.host_known and a.key.endswith("#0") for a in atoms):
            return None
        return tuple(a.text for a in atoms)

    def _extents(self, mask_node: cst.BaseExpression | None, starts: tuple[Poly, Poly],
                 blocks: tuple[Poly, Poly], wraps: tuple[Poly | None, Poly | None] = (None, None)
                 ) -> tuple[Poly, Poly] | str:
        conds: dict[int, list] = {0: [], 1: []}
        if mask_node is not None:
            mask = self.ev(mask_node)
            if isinstance(mask, Unknown):
                return f"mask not understood: {mask.reason}"
            if not isinstance(mask, Mask) or mask.rank > 2:
                return "mask is not a conjunction of `index < bound`"
            for cond in mask.conds:
                conds[cond.dim + 2 - mask.rank].append(cond)
        extents = []
        for d in (0, 1):
            if len(conds[d]) > 1:
                return f"dim {d} is bounded twice in the mask"
            wrap = wraps[d]
            if wrap is not None:
                if conds[d]:
                    return f"dim {d} wraps and is masked"
                if any(a.loop for a in wrap.atoms()):
                    return f"the wrap bound of dim {d} moves with the loop"
                extents.append(wrap)  # the descriptor's shape: lanes past it read zeros, not wrapped rows
                continue
            if conds[d]:
                cond = conds[d][0]
                if cond.block != blocks[d]:
                    return f"mask of dim {d} spans {format_poly(cond.block)}, the tile {format_poly(blocks[d])}"
                extent = cond.bound - cond.start + starts[d]
                if any(a.loop for a in extent.atoms()):
                    return f"the bound of dim {d} (`{format_poly(extent)}`) moves with the loop"
                extents.append(extent)
            elif starts[d].is_zero:
                extents.append(blocks[d])
            else:
                return f"dim {d} has no mask bound and starts at `{format_poly(starts[d])}`"
        return extents[0], extents[1]


# ---------------------------------------------------------------------- syntax helpers


class _AccessFinder(cst.CSTVisitor):
    def __init__(self, tl_names: set[str]):
        self.tl_names = tl_names
        self.found: list[tuple[cst.Call, str]] = []

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func, self.tl_names)
        if name in ("tl.load", "tl.store"):
            self.found.append((node, name[3:]))


class _Assigned(cst.CSTVisitor):
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def _add(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.counts[target.value] = self.counts.get(target.value, 0) + 1
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._add(element.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._add(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target)


def _assignment_counts(node: cst.CSTNode) -> dict[str, int]:
    visitor = _Assigned()
    node.visit(visitor)
    return visitor.counts


def _assigned_names(node: cst.CSTNode) -> set[str]:
    return set(_assignment_counts(node))


def _increment(small: cst.BaseSmallStatement) -> tuple[str | None, cst.BaseExpression | None]:
    """(`x`, `step`) for `x += step` or `x = x + step`."""
    if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign) \
            and isinstance(small.target, cst.Name):
        return small.target.value, small.value
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        name = small.targets[0].target.value
        value = small.value
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
            if isinstance(value.left, cst.Name) and value.left.value == name:
                return name, value.right
            if isinstance(value.right, cst.Name) and value.right.value == name:
                return name, value.left
    return None, None


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False


def _names_in(text: str) -> set[str]:
    try:
        expression = cst.parse_expression(text)
    except cst.ParserSyntaxError:
        return set()
    visitor = _Names()
    expression.visit(visitor)
    return visitor.names


def dotted(node: cst.BaseExpression, tl_names: set[str] | None = None) -> str | None:
    """`tl.load` for `tl.load` / `language.load` (any alias of triton.language), `min` for `min`."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    head = node.value
    if tl_names is not None and head in tl_names:
        head = "tl"
    if head == "triton" and parts[-1:] == ["language"]:
        parts.pop()
        head = "tl"
    return ".".join([head, *reversed(parts)])


def _broadcast_layout(node: cst.Subscript) -> list[bool] | None:
    layout = []
    for element in node.slice:
        item = element.slice
        if isinstance(item, cst.Index) and isinstance(item.value, cst.Name) and item.value.value == "None":
            layout.append(False)
        elif isinstance(item, cst.Slice) and item.lower is None and item.upper is None and item.step is None:
            layout.append(True)
        else:
            return None
    return layout


def _bind(call: cst.Call, names: tuple[str, ...]) -> dict[str, cst.BaseExpression] | None:
    bound: dict[str, cst.BaseExpression] = {}
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args):
        return None
    for name, arg in zip(names, positional):
        bound[name] = arg.value
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in names:
            bound[arg.keyword.value] = arg.value
    if "pointer" not in bound:
        return None
    return bound


def _is_zero(node: cst.BaseExpression | None) -> bool:
    if node is None:
        return True
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.evaluated_value) == 0.0
    return False


def _is_atomic(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Name, cst.Call, cst.Attribute, cst.Subscript)) or bool(node.lpar)


def _binary_of(operator: cst.BaseAugOp) -> cst.BaseBinaryOp:
    mapping = {cst.FloorDivideAssign: cst.FloorDivide, cst.ModuloAssign: cst.Modulo, cst.DivideAssign: cst.Divide,
               cst.PowerAssign: cst.Power, cst.LeftShiftAssign: cst.LeftShift, cst.RightShiftAssign: cst.RightShift,
               cst.BitAndAssign: cst.BitAnd, cst.BitOrAssign: cst.BitOr, cst.BitXorAssign: cst.BitXor}
    return mapping.get(type(operator), cst.FloorDivide)()


def _all_params(function: cst.FunctionDef) -> list[cst.Param]:
    p = function.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]
