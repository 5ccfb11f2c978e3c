"""TMA twins of dot kernels: tile loads and stores through device-side tensor descriptors.

TileIR's compiler is slow on tensor-of-pointer `tl.load`s and wants TMA for dot kernels; it
falls back by itself where TMA's requirements are not met. This rewrite turns, in a kernel's
`<name>_tileir` twin, every tile access it can prove equivalent into a descriptor access:

    a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
    ->  a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])

with `a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
block_shape=[BLOCK_M, BLOCK_K])` created once, where everything it needs is defined (see
`tma_analysis` for what is proven: the tile's start, its fixed extents from the mask, batch
offsets folded into the base). A tile whose unit stride may be on either dimension gets a
constexpr layout flag (`TMA_T_<POINTER>`, a trailing parameter defaulting to False, set per
launch by the dispatch): the flag picks the descriptor over the transposed view, whose tiles are
`tl.trans`-ed after a load and before a store. What cannot be proven is left as a pointer
access and reported with the reason; the pointer arithmetic the descriptors made dead is dropped.

**Why device-side descriptors.** The twin keeps the original signature, so the module-level
binding (`kernel = <dispatch>` under the gate) serves every existing caller, in this file or
another, with no change to any wrapper; block shapes come from the config that is compiled, so
no host `pre_hook` can leave a descriptor with a dummy block shape. Host `TensorDescriptor`s
would change the kernel's parameters (every wrapper would have to build them) and need a
mandatory per-config `pre_hook` to set block shapes. The cost: device-side descriptors need
`triton.set_allocator`, which the generated dispatch sets lazily, only for a TMA launch and only
when the program has not set its own (`tma_runtime`).

**Per-launch preconditions.** TMA needs a 16-byte aligned base, a unit stride on the
contiguous dimension and 16-byte multiples for the other strides. Those are properties of a
launch, so the generated dispatch checks them on the launch's own arguments and launches the
pointer kernel (the original or its math-only twin) when they fail; `.last_path` records which
ran. The TMA twin and the pointer kernel stay module globals (`<name>_tileir`,
`<name>_tileir_pointer`), so `tileiropt.runtime.autotuners.autotuners()` finds both autotuners.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from tileiropt.analysis.discovery import KernelInfo, ModuleInfo
from tileiropt.transform.tma_analysis import Access, Analysis, Position, Skip, Snapshot, code, dotted
from tileiropt.transform.tma_values import LOCAL, Atom, Poly, format_poly

FLAG_PREFIX = "TMA_T_"
POINTER_SUFFIX = "_pointer"  # `<name>_tileir_pointer`: the pointer kernel under the dispatch
DISPATCH = "_tileiropt_tma_dispatch"
GUARD = "_tileiropt_guard_ctas"

_PURE_CALLS = {"tl.arange", "tl.program_id", "tl.num_programs", "tl.cdiv", "triton.cdiv", "cdiv", "min", "max",
               "tl.multiple_of", "tl.max_contiguous", "tl.max_constancy", "tl.where", "tl.minimum", "tl.maximum",
               "tl.zeros", "tl.full", "tl.broadcast_to", "int"}


@dataclass(frozen=True)
class Operand:
    """What the dispatch checks on one pointer argument before a TMA launch."""

    pointer: str
    strides: tuple[tuple[str, ...], tuple[str, ...]]  # arguments whose product is each tile stride; () = 1
    offsets: tuple[tuple[str, ...], ...]  # arguments whose product scales each batch offset
    orient: str  # "n", "t" or "nt": which dimension may have the unit stride
    flag: str | None  # the twin's layout flag when orient is "nt"

    def source(self) -> str:
        return repr((self.pointer, self.strides, self.offsets, self.orient, self.flag))


@dataclass
class TmaResult:
    twin: cst.FunctionDef | None  # the rewritten function (the caller names it), None when nothing changed
    operands: list[Operand] = field(default_factory=list)
    changes: list[tuple[int, str]] = field(default_factory=list)  # (line, what)
    skipped: list[str] = field(default_factory=list)  # what was left as it is, and why


@dataclass
class _Group:
    """Accesses served by one descriptor, created at one point."""

    name: str
    block: int
    index: int
    accesses: list[Access]
    flag: str | None = None


def plan_tma(function: cst.FunctionDef, kernel: KernelInfo, info: ModuleInfo, source: str | None = None,
             first_line: int = 1) -> TmaResult:
    """The TMA twin of `function` (a kernel, or its math-rewritten twin), with what changed and why.

    `source` is the kernel's text in its file starting at `first_line`; lines are found in it.
    """
    tl = "tl" if "tl" in info.tl_names else (sorted(info.tl_names)[0] if info.tl_names else "tl")
    text = code(function)
    lines = _Lines(source if source is not None else text, first_line)
    for marker, reason in (("make_block_ptr", "it uses block pointers (tl.make_block_ptr); the rewrite starts "
                                              "from pointer loads"),
                           ("make_tensor_descriptor", "it builds tensor descriptors already")):
        if f".{marker}(" in text or f"_experimental_{marker}(" in text:
            return TmaResult(None, skipped=[f"no TMA twin: {reason}"])
    if not info.tl_names:
        return TmaResult(None, skipped=["no TMA twin: triton.language is not imported under a name"])
    params = {p.name for p in kernel.params}
    if _descriptor_arguments(function, params):
        return TmaResult(None, skipped=["no TMA twin: it takes tensor descriptors already (host TensorDescriptor "
                                        "arguments)"])
    config_names = set(kernel.autotune.config_names) if kernel.autotune else set()
    host_known = params - config_names - set(kernel.heuristics)
    constexprs = {p.name for p in kernel.params if p.is_constexpr}
    analysis = Analysis(function, info.tl_names, host_known, constexprs, set(info.module_functions)).run()
    _check_wrapped_loads(analysis, function, info.tl_names)
    result = TmaResult(None)
    for skip in analysis.skips:
        result.skipped.append(f"line {lines.find(skip.call)}: tl.{skip.kind} kept (pointer {skip.kind}): {skip.reason}")
    if not analysis.accesses:
        if not analysis.skips:
            result.skipped.append("no TMA twin: no tl.load / tl.store in the kernel body")
        else:
            result.skipped.append("no TMA twin: no tile access could be rewritten")
        return result
    taken = _names_in_function(function)
    groups = _group(analysis, result, lines, taken)
    if not groups:
        result.skipped.append("no TMA twin: no tile access could be rewritten")
        return result
    flags = _flags(groups, taken)
    replacements: dict[int, Callable[[cst.Call], cst.BaseExpression]] = {}
    inserts: dict[int, list[tuple[int, list[cst.BaseStatement]]]] = {}
    operands: list[Operand] = []
    for group in groups:
        group.flag = flags.get(group.accesses[0].pointer) if group.accesses[0].orient == "nt" else None
        statements = _descriptor_statements(group, analysis, tl)
        if statements is None:
            for access in group.accesses:
                result.skipped.append(f"line {lines.find(access.call)}: tl.{access.kind} kept: its descriptor "
                                      "cannot be written where every access sees it")
            continue
        inserts.setdefault(group.block, []).append((group.index, statements))
        first = group.accesses[0]
        operand = Operand(first.pointer, first.stride_names, first.base_terms, first.orient, group.flag)
        if operand not in operands:
            operands.append(operand)
        for access in group.accesses:
            coordinates = _coordinates(access, analysis)
            assert coordinates is not None  # checked when grouping
            replacements[id(access.call)] = _replacement(access, group, coordinates, tl)
            shape = f"[{format_poly(access.blocks[0])}, {format_poly(access.blocks[1])}]"
            result.changes.append((lines.find(access.call),
                                   f"tl.{access.kind} of a {shape} tile of {access.pointer} -> {group.name}."
                                   f"{access.kind}([{', '.join(coordinates)}])"
                                   + (f" (layout flag {group.flag})" if group.flag else "")
                                   + (_wrap_note(access) if access.wrapped else "")))
    if not replacements:
        result.skipped.append("no TMA twin: no descriptor could be placed")
        return result
    dead_before = _dead_names(function, info.tl_names)
    rewritten = function.visit(_Rewriter(replacements, inserts))
    assert isinstance(rewritten, cst.FunctionDef)
    rewritten = _add_flags(rewritten, [f for f in dict.fromkeys(g.flag for g in groups if g.flag)], tl)
    rewritten = _prune(rewritten, info.tl_names, dead_before)
    result.twin = rewritten
    result.operands = operands
    return result


_REDUCING = {"sum", "max", "min", "reduce", "argmax", "argmin", "xor_sum", "cumsum", "cumprod", "associative_scan"}


def _check_wrapped_loads(analysis: Analysis, function: cst.FunctionDef, tl_names: set[str]) -> None:
    """Keep a load whose index wraps (`% M`) or is clamped only where a descriptor load is exact.

    In the original, lanes past M read real rows (wrapped or row 0); a descriptor reads zeros there.
    The values differ only in those lanes, and for a `tl.dot` operand they only reach the result's rows
    (A, dim 0) or columns (B, dim 1) past M. So it is exact when the loaded tile is used only as that
    operand of `tl.dot`, nothing reduces across the result's rows or columns, and every store of the
    kernel is a tile store bounded by the same M from the same start (it drops exactly those lanes)."""
    uses = _NameUses(tl_names)
    function.visit(uses)
    stores = [a for a in analysis.accesses if a.kind == "store"]
    kept_stores = [s for s in analysis.skips if s.kind == "store"]
    for access in [a for a in analysis.accesses if a.wrapped]:
        reason = None
        if len(access.wrapped) != 1:
            reason = "both dimensions wrap"
        else:
            (dim,) = access.wrapped
            name = uses.assigned.get(id(access.call))
            if name is None:
                reason = "the wrapped load is not assigned to a name"
            elif uses.total.get(name, 0) - uses.targets.get(name, 0) != uses.dot_operand.get((name, dim), 0) \
                    or not uses.dot_operand.get((name, dim)):
                reason = (f"`{name}` is used other than as the {'first' if dim == 0 else 'second'} operand of tl.dot, "
                          "so its wrapped rows could reach memory")
            elif uses.reduces:
                reason = "the kernel reduces, so wrapped rows could mix into stored values"
            elif kept_stores or not stores:
                reason = "a store of the kernel is not a bounded tile store"
            elif any(store.extents[dim] != access.extents[dim] or store.starts[dim] != access.starts[dim]
                     for store in stores):
                reason = f"a store is not bounded by `{format_poly(access.extents[dim])}` along dim {dim}"
        if reason is not None:
            analysis.accesses.remove(access)
            analysis.skips.append(Skip(access.call, "load", f"wrapped index (`%` or clamp): {reason}"))


def _wrap_note(access: Access) -> str:
    (dim,) = access.wrapped
    bound = format_poly(access.extents[dim])
    part = "rows" if dim == 0 else "columns"
    return (f"; its {part} wrap at {bound} in the original and read zeros past {bound} here: exact, since they "
            f"only reach the tl.dot result's {part} past {bound}, which every store drops")


class _NameUses(cst.CSTVisitor):
    """Name occurrences, assignment targets, `tl.dot` operand positions and reductions of a function."""

    def __init__(self, tl_names: set[str]):
        self.tl_names = tl_names
        self.total: dict[str, int] = {}
        self.targets: dict[str, int] = {}
        self.dot_operand: dict[tuple[str, int], int] = {}
        self.assigned: dict[int, str] = {}  # id of a call assigned to a single name -> the name
        self.reduces = False

    def visit_Name(self, node: cst.Name) -> None:
        self.total[node.value] = self.total.get(node.value, 0) + 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            for name in _target_names(target.target):
                self.targets[name] = self.targets.get(name, 0) + 1
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self.assigned[id(node.value)] = node.targets[0].target.value

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        for name in _target_names(node.target):
            self.targets[name] = self.targets.get(name, 0) + 1

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func, self.tl_names)
        if name == "tl.dot":
            positional = [a.value for a in node.args if a.keyword is None and not a.star]
            for position, arg in enumerate(positional[:2]):
                if isinstance(arg, cst.Name):
                    key = (arg.value, position)
                    self.dot_operand[key] = self.dot_operand.get(key, 0) + 1
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in _REDUCING:
            self.reduces = True


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _target_names(element.value)]
    return []


def dispatch_statement(kernel: str, tma: str, pointer: str, operands: list[Operand]) -> str:
    """`kernel = _tileiropt_tma_dispatch(tma, pointer, [...])`, one operand per line."""
    inner = "".join(f"        {operand.source()},\n" for operand in operands)
    return f"{kernel} = {DISPATCH}(\n    {tma},\n    {pointer},\n    [\n{inner}    ],\n)".replace(
        "\n    [\n", "\n    [  # (pointer, (row stride, column stride), batch offsets, layouts, flag)\n", 1)


def persistent_step(function: cst.FunctionDef, kernel: KernelInfo, tl_names: set[str]) -> str | None:
    """The argument a persistent kernel strides its tile loop by (`NUM_SMS`), when its loop is
    `for tile in tl.range(tl.program_id(0), tiles, NUM_SMS)` (start possibly through a name)."""
    config_names = set(kernel.autotune.config_names) if kernel.autotune else set()
    params = {p.name for p in kernel.params} - config_names - set(kernel.heuristics)
    finder = _PersistentLoop(tl_names, params)
    function.visit(finder)
    return finder.step


# ---------------------------------------------------------------------- grouping and placement


def _group(analysis: Analysis, result: TmaResult, lines: _Lines, taken: set[str]) -> list[_Group]:
    groups: dict[tuple, _Group] = {}
    for access in analysis.accesses:
        where = _placement(analysis, access)
        if isinstance(where, str):
            result.skipped.append(f"line {lines.find(access.call)}: tl.{access.kind} kept: {where}")
            continue
        if _coordinates(access, analysis) is None:
            result.skipped.append(f"line {lines.find(access.call)}: tl.{access.kind} kept: its start uses a value "
                                  "reassigned since the tile was built")
            continue
        key = (access.pointer, access.base, access.strides, access.blocks, access.extents, access.orient, where[0])
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(_fresh(_descriptor_name(access.pointer), taken), where[0], where[1], [])
        group.index = min(group.index, where[1])
        group.accesses.append(access)
    return list(groups.values())


def _placement(analysis: Analysis, access: Access) -> Position | str:
    """The statement a descriptor is created before: the outermost one inside the deepest block that
    defines something the descriptor needs, on the way to the access."""
    blocks = [block for block, _ in access.chain]
    depth = 0
    for poly in (access.base, *access.extents):
        for atom in poly.atoms():
            for dep in atom.deps:
                site = analysis.defs.get(dep)
                if site is None:
                    continue  # an argument or a module global
                if site[0] not in blocks:
                    return "its descriptor needs values set in another branch"
                level = blocks.index(site[0])
                if site[1] >= access.chain[level][1]:
                    return "its descriptor needs a value set on the access's own line"
                depth = max(depth, level)
    return access.chain[depth]


def _render(poly: Poly, snapshot: Snapshot) -> str | None:
    """Source for `poly` at a point of the kernel, or None when a name it needs holds another value there.

    A name reassigned by a known amount (`x_ptr += row * stride`) is written through its new value
    (`x_ptr - row * stride` for the old one), which is how a moved base pointer is reached."""
    for _ in range(8):
        stale = [a for a in sorted(poly.atoms()) if any(snapshot.versions.get(n) != v for n, v in a.deps)]
        if not stale:
            return format_poly(poly)
        atom = stale[0]
        name = atom.name
        current = snapshot.env.get(name) if name else None
        if not isinstance(current, Poly) or current.terms.get((atom,)) != 1 or name not in snapshot.versions:
            return None
        rest = current - Poly.of(atom)
        if atom in rest.atoms():
            return None
        version = snapshot.versions[name]
        now = Atom(LOCAL, name, f"{name}#{version}", frozenset({(name, version)}))
        poly = poly.substitute(atom, Poly.of(now) - rest)
    return None


def _coordinates(access: Access, analysis: Analysis) -> tuple[str, str] | None:
    snapshot = analysis.snapshots[access.chain[-1]]
    first, second = (_render(start, snapshot) for start in access.starts)
    if first is None or second is None:
        return None
    return first, second


def _flags(groups: list[_Group], taken: set[str]) -> dict[str, str]:
    flags: dict[str, str] = {}
    for group in groups:
        pointer = group.accesses[0].pointer
        if group.accesses[0].orient == "nt" and pointer not in flags:
            flags[pointer] = _fresh(FLAG_PREFIX + pointer.upper(), taken)
    return flags


# ---------------------------------------------------------------------- code


def _descriptor_statements(group: _Group, analysis: Analysis, tl: str) -> list[cst.BaseStatement] | None:
    access = group.accesses[0]
    snapshot = analysis.snapshots[(group.block, group.index)]
    base = _render(access.base, snapshot)
    extents = [_render(e, snapshot) for e in access.extents]
    strides = [_render(s, snapshot) for s in access.strides]
    blocks = [_render(b, snapshot) for b in access.blocks]
    if base is None or None in extents or None in strides or None in blocks:
        return None

    def make(d0: int, d1: int) -> str:
        return (f"{group.name} = {tl}.make_tensor_descriptor(\n    {base}, shape=[{extents[d0]}, {extents[d1]}], "
                f"strides=[{strides[d0]}, 1], block_shape=[{blocks[d0]}, {blocks[d1]}])")

    orient = access.orient
    if orient == "n":
        statement = cst.parse_statement(make(0, 1) + "\n")
    elif orient == "t":
        statement = cst.parse_statement(make(1, 0) + "\n")
    else:
        transposed, normal = (make(1, 0).replace("\n", "\n    "), make(0, 1).replace("\n", "\n    "))
        statement = cst.parse_statement(f"if {group.flag}:\n    {transposed}\nelse:\n    {normal}\n")
    what = f"# tileiropt: TMA descriptor for the {access.pointer} tiles"
    return [statement.with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(what))])]


def _replacement(access: Access, group: _Group, coordinates: tuple[str, str], tl: str
                 ) -> Callable[[cst.Call], cst.BaseExpression]:
    c0, c1 = coordinates
    desc = group.name
    if access.kind == "load":
        if access.orient == "n":
            text = f"{desc}.load([{c0}, {c1}])"
        elif access.orient == "t":
            text = f"{tl}.trans({desc}.load([{c1}, {c0}]))"
        else:
            text = f"({tl}.trans({desc}.load([{c1}, {c0}])) if {group.flag} else {desc}.load([{c0}, {c1}]))"
        expression = cst.parse_expression(text)

        def load(updated: cst.Call) -> cst.BaseExpression:
            if updated.lpar and isinstance(expression, cst.IfExp):
                return expression.with_changes(lpar=updated.lpar, rpar=updated.rpar)
            if isinstance(expression, cst.Call):
                return expression.with_changes(lpar=updated.lpar, rpar=updated.rpar)
            return expression

        return load

    normal = f"{desc}.store([{c0}, {c1}], _tileiropt_value)"
    transposed = f"{desc}.store([{c1}, {c0}], {tl}.trans(_tileiropt_value))"
    if access.orient == "n":
        template = cst.parse_expression(normal)
    elif access.orient == "t":
        template = cst.parse_expression(transposed)
    else:
        template = cst.parse_expression(f"{transposed} if {group.flag} else {normal}")

    def store(updated: cst.Call) -> cst.BaseExpression:
        filled = template.visit(_Fill(_store_value(updated)))
        assert isinstance(filled, cst.BaseExpression)
        return filled.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    return store


class _Fill(cst.CSTTransformer):
    """Put the stored value where the template says `_tileiropt_value`."""

    def __init__(self, value: cst.BaseExpression):
        super().__init__()
        self.value = value

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.value if updated.value == "_tileiropt_value" else updated


def _store_value(call: cst.Call) -> cst.BaseExpression:
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) > 1:
        return positional[1].value
    return next(a.value for a in call.args if a.keyword is not None and a.keyword.value == "value")


class _Rewriter(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, Callable[[cst.Call], cst.BaseExpression]],
                 inserts: dict[int, list[tuple[int, list[cst.BaseStatement]]]]):
        super().__init__()
        self.replacements = replacements
        self.inserts = inserts

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        make = self.replacements.get(id(original))
        return make(updated) if make else updated

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        items = self.inserts.get(id(original))
        if not items:
            return updated
        body = list(updated.body)
        # from the end, so indexes stay valid; at one index, last first, so they end up in the order given
        for _, (index, statements) in sorted(enumerate(items), key=lambda item: (item[1][0], item[0]), reverse=True):
            body[index:index] = statements
        return updated.with_changes(body=body)


def _add_flags(function: cst.FunctionDef, flags: list[str], tl: str) -> cst.FunctionDef:
    """Append `FLAG: tl.constexpr = False` parameters (after any existing default)."""
    if not flags:
        return function
    params = list(function.params.params)
    annotation = cst.Annotation(cst.parse_expression(f"{tl}.constexpr"))
    between = _between(params)
    closing = params[-1].comma if params else cst.MaybeSentinel.DEFAULT
    new = [cst.Param(cst.Name(flag), annotation=annotation, default=cst.Name("False"),
                     equal=cst.AssignEqual(), comma=between) for flag in flags]
    new[-1] = new[-1].with_changes(comma=closing)
    if params:
        params[-1] = params[-1].with_changes(comma=between)
    return function.with_changes(params=function.params.with_changes(params=params + new))


def _between(params: list[cst.Param]) -> cst.Comma:
    """The comma style between two parameters of this signature."""
    if len(params) >= 2 and isinstance(params[-2].comma, cst.Comma):
        return params[-2].comma
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


# ---------------------------------------------------------------------- dead pointer arithmetic


class _Usage(cst.CSTVisitor):
    """Reads of each name, and the single-target assignments of each (pure or not)."""

    def __init__(self, tl_names: set[str]):
        self.tl_names = tl_names
        self.reads: Counter[str] = Counter()
        self.assigned: dict[str, list[cst.SimpleStatementLine]] = {}
        self.impure: set[str] = set()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        target, value = _single_assignment(node)
        if target is None or value is None:
            return True
        self.assigned.setdefault(target, []).append(node)
        if not _pure(value, self.tl_names):
            self.impure.add(target)
        reads = _NameCounter()
        value.visit(reads)
        for name, count in reads.counts.items():
            if name != target:
                self.reads[name] += count
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.reads[node.value] += 1


class _NameCounter(cst.CSTVisitor):
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] += 1

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False


def _single_assignment(line: cst.SimpleStatementLine) -> tuple[str | None, cst.BaseExpression | None]:
    if len(line.body) != 1:
        return None, None
    small = line.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value, small.value
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
        return small.target.value, small.value
    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
        return small.target.value, small.value
    return None, None


class _Impure(cst.CSTVisitor):
    def __init__(self, tl_names: set[str]):
        self.tl_names = tl_names
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func, self.tl_names)
        is_cast = isinstance(node.func, cst.Attribute) and node.func.attr.value == "to"
        if name not in _PURE_CALLS and not is_cast:
            self.found = True


def _pure(value: cst.BaseExpression, tl_names: set[str]) -> bool:
    visitor = _Impure(tl_names)
    value.visit(visitor)
    return not visitor.found


def _dead_names(function: cst.FunctionDef, tl_names: set[str]) -> set[str]:
    usage = _Usage(tl_names)
    function.visit(usage)
    return {n for n in usage.assigned if usage.reads[n] == 0 and n not in usage.impure}


class _Remove(cst.CSTTransformer):
    def __init__(self, statements: set[int]):
        super().__init__()
        self.statements = statements

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        kept = [s for s, o in zip(updated.body, original.body) if id(o) not in self.statements]
        if len(kept) == len(updated.body):
            return updated
        return updated.with_changes(body=kept or [cst.SimpleStatementLine([cst.Pass()])])


def _prune(function: cst.FunctionDef, tl_names: set[str], dead_before: set[str]) -> cst.FunctionDef:
    """Drop the pointer arithmetic the descriptors made dead (names dead in the original stay)."""
    for _ in range(16):
        usage = _Usage(tl_names)
        function.visit(usage)
        dead = {n for n in usage.assigned if usage.reads[n] == 0 and n not in usage.impure} - dead_before
        if not dead:
            break
        statements = {id(s) for n in dead for s in usage.assigned[n]}
        function = function.visit(_Remove(statements))
    return function


# ---------------------------------------------------------------------- small helpers


class _PersistentLoop(cst.CSTVisitor):
    def __init__(self, tl_names: set[str], params: set[str]):
        self.tl_names = tl_names
        self.params = params
        self.program_names: set[str] = set()
        self.step: str | None = None

    def _is_program_id_0(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self.program_names
        if not (isinstance(node, cst.Call) and dotted(node.func, self.tl_names) == "tl.program_id"):
            return False
        return len(node.args) == 1 and isinstance(node.args[0].value, cst.Integer) \
            and node.args[0].value.evaluated_value == 0

    def visit_Assign(self, node: cst.Assign) -> None:
        target = node.targets[0].target if len(node.targets) == 1 else None
        if isinstance(target, cst.Name) and self._is_program_id_0(node.value):
            self.program_names.add(target.value)

    def visit_For(self, node: cst.For) -> None:
        call = node.iter
        if not (isinstance(call, cst.Call) and dotted(call.func, self.tl_names) in ("range", "tl.range")):
            return
        positional = [a.value for a in call.args if a.keyword is None]
        if len(positional) >= 3 and self._is_program_id_0(positional[0]) and isinstance(positional[2], cst.Name) \
                and positional[2].value in self.params:
            self.step = positional[2].value


class _Lines:
    """Line numbers of nodes, found by their text in the kernel's source."""

    def __init__(self, source: str, first_line: int):
        self.source = source
        self.first_line = first_line
        self.searched_from: dict[str, int] = {}

    def find(self, node: cst.CSTNode) -> int:
        text = code(node).split("\n", 1)[0]  # continuation lines lose their block's indentation
        offset = self.source.find(text, self.searched_from.get(text, 0))
        if offset < 0:
            offset = self.source.find(text)
        else:
            self.searched_from[text] = offset + 1
        return self.first_line + self.source.count("\n", 0, offset) if offset >= 0 else self.first_line


class _DescriptorCalls(cst.CSTVisitor):
    def __init__(self, params: set[str]):
        self.params = params
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("load", "store", "gather", "scatter") \
                and isinstance(func.value, cst.Name) and func.value.value in self.params:
            self.found = True


def _descriptor_arguments(function: cst.FunctionDef, params: set[str]) -> bool:
    """Whether the kernel calls `.load` / `.store` on one of its arguments: a host TensorDescriptor."""
    visitor = _DescriptorCalls(params)
    function.visit(visitor)
    return visitor.found


def _names_in_function(function: cst.FunctionDef) -> set[str]:
    counter = _NameCounter()
    function.visit(counter)
    return set(counter.counts)


def _descriptor_name(pointer: str) -> str:
    stem = pointer
    for suffix in ("_ptr", "_Ptr", "_PTR", "Ptr", "ptr"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
            break
    return f"{stem.rstrip('_')}_desc"


def _fresh(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        candidate = f"{name}_{n}"
        n += 1
    taken.add(candidate)
    return candidate
