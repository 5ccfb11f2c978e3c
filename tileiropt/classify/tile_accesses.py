"""The tile loads and stores of a kernel that a tensor descriptor can replace, each proven or refused with why.

A `tl.load` / `tl.store` is a *tile access* when its pointer (evaluated by `tile_flow`) is a rank-2 tile over
one pointer argument, its strides are kernel arguments (or 1), and its mask bounds each dimension by a fixed
extent: then `tl.load(ptrs, mask, other=0)` reads exactly what a descriptor of that shape, loaded at the
tile's start, reads (TMA fills out-of-bounds elements with zeros and drops out-of-bounds stores). Anything
else is a `Skip` with the reason, left alone by the rewrite.

A load whose index wraps (`% M`) or is clamped reads real rows past `M` where a descriptor reads zeros; it is
kept a tile access only where that cannot reach memory (`_check_wrapped`).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from tileiropt.classify.names import TL
from tileiropt.classify.source import SourceText
from tileiropt.classify.syntax import identifiers, is_number, keywords, positional
from tileiropt.classify.tile_flow import Chain, TileFlow, is_zero
from tileiropt.classify.tile_values import ONE, PARAM, ZERO, Affine, Mask, Poly, Unknown, format_poly


@dataclass
class Access:
    """A recognised tile load or store."""

    call: ast.Call
    kind: str  # "load" | "store"
    chain: Chain  # from the function body inward, ending at the statement holding it
    pointer: str
    base: Poly  # the pointer argument plus batch offsets
    base_terms: tuple[tuple[str, ...], ...]  # arguments whose product makes each batch offset
    starts: tuple[Poly, Poly]
    blocks: tuple[Poly, Poly]
    strides: tuple[Poly, Poly]
    stride_names: tuple[tuple[str, ...], tuple[str, ...]]  # () for a literal unit stride
    extents: tuple[Poly, Poly]
    orient: str  # "n": last dim has unit stride; "t": first dim has; "nt": decided per launch
    wrapped: tuple[int, ...] = ()  # dims whose index wraps (`% M`) or is clamped: the extent is the wrap bound


@dataclass
class Skip:
    call: ast.Call
    kind: str
    reason: str


class TileAnalysis:
    """The tile accesses of one kernel (`accesses`) and the loads and stores left alone (`skips`), with the
    evaluation (`flow`) that proved them: its snapshots write a value out at any point of the kernel."""

    def __init__(self, function: ast.FunctionDef, text: SourceText, resolve: Callable[[ast.Call], str | None],
                 host_known: set[str], constexprs: set[str], helpers: set[str], reduces: bool):
        self.text = text
        self.resolve = resolve
        self.host_known = host_known  # arguments whose value the launch passes (not set by configs)
        self.reduces = reduces  # the kernel reduces or scans (wrapped rows could mix into stored values)
        self.function = function
        self.accesses: list[Access] = []
        self.skips: list[Skip] = []
        self.flow = TileFlow(function, text, resolve, constexprs, helpers, self._access, self._header_access)

    def run(self) -> TileAnalysis:
        self.flow.run()
        self._check_wrapped()
        return self

    # ------------------------------------------------------------------ each access

    def _header_access(self, call: ast.Call, kind: str) -> None:
        self.skips.append(Skip(call, kind, "in a loop or `if` header"))

    def _access(self, call: ast.Call, kind: str, chain: Chain) -> None:
        result = self._tile(call, kind, chain)
        if isinstance(result, str):
            self.skips.append(Skip(call, kind, result))
        else:
            self.accesses.append(result)

    def _tile(self, call: ast.Call, kind: str, chain: Chain) -> Access | str:
        segment = self.text.segment
        names = ("pointer", "mask", "other") if kind == "load" else ("pointer", "value", "mask")
        args = _bind(call, names)
        if args is None:
            return "arguments not understood"
        named = keywords(call)
        for option in ("boundary_check", "padding_option", "volatile"):
            if option in named and not (option == "volatile" and segment(named[option]) == "False"):
                return f"`{option}=` (a block pointer or a volatile access)"
        pointer = self.flow.ev(args["pointer"])
        if isinstance(pointer, Unknown):
            return f"pointer not understood: {pointer.reason}"
        if isinstance(pointer, Poly):
            return "a scalar access, not a tile"
        if not isinstance(pointer, Affine) or pointer.rank != 2 or len(pointer.dims) != 2:
            rank, terms = (pointer.rank, len(pointer.dims)) if isinstance(pointer, Affine) else (0, 0)
            return f"a {rank}-D access with {terms} index terms, not a 2-D tile"
        if kind == "load" and args.get("mask") is not None and not is_zero(args.get("other")):
            return f"masked lanes read `other={segment(args['other'])}`, a descriptor reads zeros"
        if kind == "store" and is_number(args.get("value")):
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
                      (stride_names[0], stride_names[1]), extents, orient,
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

    def _extents(self, mask_node: ast.expr | None, starts: tuple[Poly, Poly],
                 blocks: tuple[Poly, Poly], wraps: tuple[Poly | None, Poly | None] = (None, None)
                 ) -> tuple[Poly, Poly] | str:
        conds: dict[int, list] = {0: [], 1: []}
        if mask_node is not None:
            mask = self.flow.ev(mask_node)
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

    # ------------------------------------------------------------------ wrapped rows

    def _check_wrapped(self) -> None:
        """Keep a load whose index wraps (`% M`) or is clamped only where a descriptor load is exact.

        In the original, lanes past M read real rows (wrapped or row 0); a descriptor reads zeros there.
        The values differ only in those lanes, and for a `tl.dot` operand they only reach the result's rows
        (A, dim 0) or columns (B, dim 1) past M. So it is exact when the loaded tile is used only as that
        operand of `tl.dot`, nothing reduces across the result's rows or columns, and every store of the
        kernel is a tile store bounded by the same M from the same start (it drops exactly those lanes)."""
        uses = _NameUses(self.function, self.resolve)
        stores = [a for a in self.accesses if a.kind == "store"]
        kept_stores = [s for s in self.skips if s.kind == "store"]
        for access in [a for a in self.accesses if a.wrapped]:
            reason = None
            if len(access.wrapped) != 1:
                reason = "both dimensions wrap"
            else:
                (dim,) = access.wrapped
                name = uses.assigned.get(id(access.call))
                if name is None:
                    reason = "the wrapped load is not assigned to a name"
                elif uses.total[name] - uses.targets[name] != uses.dot_operand[(name, dim)] \
                        or not uses.dot_operand[(name, dim)]:
                    reason = (f"`{name}` is used other than as the {'first' if dim == 0 else 'second'} operand of "
                              "tl.dot, so its wrapped rows could reach memory")
                elif self.reduces:
                    reason = "the kernel reduces, so wrapped rows could mix into stored values"
                elif kept_stores or not stores:
                    reason = "a store of the kernel is not a bounded tile store"
                elif any(store.extents[dim] != access.extents[dim] or store.starts[dim] != access.starts[dim]
                         for store in stores):
                    reason = f"a store is not bounded by `{format_poly(access.extents[dim])}` along dim {dim}"
            if reason is not None:
                self.accesses.remove(access)
                self.skips.append(Skip(access.call, "load", f"wrapped index (`%` or clamp): {reason}"))


class _NameUses:
    """How a function uses its names: every occurrence, assignment targets, `tl.dot` operand positions, and
    the name each call is assigned to."""

    def __init__(self, function: ast.FunctionDef, resolve: Callable[[ast.Call], str | None]):
        self.total = Counter(identifiers(function))
        self.targets: Counter[str] = Counter()
        self.dot_operand: Counter[tuple[str, int]] = Counter()
        self.assigned: dict[int, str] = {}  # id of a call assigned to a single name -> the name
        for node in ast.walk(function):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self.targets.update(_target_names(target))
                if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    self.assigned[id(node.value)] = node.targets[0].id
            elif isinstance(node, ast.AugAssign):
                self.targets.update(_target_names(node.target))
            elif isinstance(node, ast.Call) and resolve(node) == TL + "dot":
                for place, arg in enumerate(positional(node)[:2]):
                    if isinstance(arg, ast.Name):
                        self.dot_operand[(arg.id, place)] += 1


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for element in target.elts for n in _target_names(element)]
    return []


def _bind(call: ast.Call, names: tuple[str, ...]) -> dict[str, ast.expr] | None:
    """The call's arguments by parameter name; None with `*args` / `**kwargs` or without a pointer."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    bound: dict[str, ast.expr] = dict(zip(names, call.args))
    bound.update({name: value for name, value in keywords(call).items() if name in names})
    if "pointer" not in bound:
        return None
    return bound
