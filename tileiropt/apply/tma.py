"""TMA twins of dot kernels: tile loads and stores through device-side tensor descriptors.

TileIR's compiler is slow on tensor-of-pointer `tl.load`s and wants TMA for dot kernels; it
falls back by itself where TMA's requirements are not met. This rewrite turns, in a kernel's
`<name>_tileir` twin, every tile access it can prove equivalent into a descriptor access:

    a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
    ->  a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])

with `a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
block_shape=[BLOCK_M, BLOCK_K])` created once, where everything it needs is defined (see
`tileiropt.classify.tile_accesses` for what is proven: the tile's start, its fixed extents from the mask,
batch offsets folded into the base). A tile whose unit stride may be on either dimension gets a
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
`<name>_tileir_pointer`), so `tileiropt.harness.autotuners.autotuners()` finds both autotuners.

What the kernel does comes from the file's model (`tileiropt.classify.model`: its calls, loops and tile
accesses); this module plans where each descriptor goes and how each value is written there, `tma_code` writes
the code and `tma_prune` drops what the descriptors left unread.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst

from tileiropt.apply.locate import Locator
from tileiropt.apply.tma_code import (
    Descriptor,
    Inserts,
    Replacement,
    Rewriter,
    add_flags,
    descriptor_statement,
    replacement,
)
from tileiropt.apply.tma_prune import dead_names, name_counts, prune
from tileiropt.classify.discovery import KernelInfo
from tileiropt.classify.facts import MAKE_DESCRIPTOR, TL, CallFact
from tileiropt.classify.model import FileModel
from tileiropt.classify.tile_accesses import Access, TileAnalysis
from tileiropt.classify.tile_flow import BlockPath, Position, Snapshot
from tileiropt.classify.tile_values import LOCAL, Atom, Poly, format_poly

FLAG_PREFIX = "TMA_T_"
DISPATCH = "_tileiropt_tma_dispatch"


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
    block: BlockPath
    index: int
    accesses: list[Access]
    flag: str | None = None


def plan_tma(model: FileModel, kernel: KernelInfo, function: cst.FunctionDef) -> TmaResult:
    """The TMA twin of `function` (libcst: the kernel, or its math-rewritten twin), with what changed and why."""
    info = model.module
    tl = "tl" if "tl" in info.tl_names else (sorted(info.tl_names)[0] if info.tl_names else "tl")
    refusal = _refusal(model, kernel)
    if refusal is not None:
        return TmaResult(None, skipped=[f"no TMA twin: {refusal}"])
    analysis = model.tiles(kernel)
    result = TmaResult(None)
    for skip in analysis.skips:
        result.skipped.append(f"line {skip.call.lineno}: tl.{skip.kind} kept (pointer {skip.kind}): {skip.reason}")
    if not analysis.accesses:
        if not analysis.skips:
            result.skipped.append("no TMA twin: no tl.load / tl.store in the kernel body")
        else:
            result.skipped.append("no TMA twin: no tile access could be rewritten")
        return result
    locator = Locator(model.node(kernel), function, info.aliases)
    taken = set(name_counts(function))
    groups = _group(analysis, locator, result, taken)
    if not groups:
        result.skipped.append("no TMA twin: no tile access could be rewritten")
        return result
    flags = _flags(groups, taken)
    replacements: dict[int, Replacement] = {}
    inserts: Inserts = {}
    operands: list[Operand] = []
    wide = model.kernel_facts(kernel).wide_names  # 64-bit values: cast where they are coordinates
    for group in groups:
        first = group.accesses[0]
        group.flag = flags.get(first.pointer) if first.orient == "nt" else None
        descriptor = _descriptor(group, analysis)
        block = locator.block(group.block)
        if descriptor is None or block is None:
            for access in group.accesses:
                result.skipped.append(f"line {access.call.lineno}: tl.{access.kind} kept: its descriptor "
                                      "cannot be written where every access sees it")
            continue
        inserts.setdefault(id(block), []).append((group.index, [descriptor_statement(descriptor, tl)]))
        operand = Operand(first.pointer, first.stride_names, first.base_terms, first.orient, group.flag)
        if operand not in operands:
            operands.append(operand)
        for access in group.accesses:
            coordinates = _coordinates(access, analysis, wide, tl)
            call = locator.call(access.call)
            assert coordinates is not None and call is not None  # checked when grouping
            replacements[id(call)] = replacement(access.kind, descriptor, coordinates, tl)
            shape = f"[{format_poly(access.blocks[0])}, {format_poly(access.blocks[1])}]"
            result.changes.append((access.call.lineno,
                                   f"tl.{access.kind} of a {shape} tile of {access.pointer} -> {group.name}."
                                   f"{access.kind}([{', '.join(coordinates)}])"
                                   + (f" (layout flag {group.flag})" if group.flag else "")
                                   + (_wrap_note(access) if access.wrapped else "")))
    if not replacements:
        result.skipped.append("no TMA twin: no descriptor could be placed")
        return result
    if not any(change.startswith("tl.load") for _, change in result.changes):
        result.changes.clear()
        result.skipped.append("no TMA twin: only its stores could take a descriptor; its loads, the traffic TMA "
                              "would speed up, stay pointer loads (above), so a second kernel is not worth its keep")
        return result
    dead_before = dead_names(function, info.aliases)
    rewritten = function.visit(Rewriter(replacements, inserts))
    assert isinstance(rewritten, cst.FunctionDef)
    rewritten = add_flags(rewritten, [f for f in dict.fromkeys(g.flag for g in groups if g.flag)], tl)
    result.twin = prune(rewritten, info.aliases, dead_before)
    result.operands = operands
    return result


def _refusal(model: FileModel, kernel: KernelInfo) -> str | None:
    """Why the kernel gets no TMA twin at all, from what it calls; None when it may get one."""
    calls = model.kernel_facts(kernel).calls
    if any(call.name == TL + "make_block_ptr" for call in calls):
        return "it uses block pointers (tl.make_block_ptr); the rewrite starts from pointer loads"
    if any(call.name in MAKE_DESCRIPTOR for call in calls):
        return "it builds tensor descriptors already"
    if not model.module.tl_names:
        return "triton.language is not imported under a name"
    params = {p.name for p in kernel.params}
    if any(_descriptor_method(call, params) for call in calls):
        return "it takes tensor descriptors already (host TensorDescriptor arguments)"
    return None


def _descriptor_method(call: CallFact, params: set[str]) -> bool:
    """`.load` / `.store` called on an argument: a host TensorDescriptor."""
    return call.method in ("load", "store", "gather", "scatter") and isinstance(call.receiver, ast.Name) \
        and call.receiver.id in params


def _wrap_note(access: Access) -> str:
    (dim,) = access.wrapped
    bound = format_poly(access.extents[dim])
    part = "rows" if dim == 0 else "columns"
    return (f"; its {part} wrap at {bound} in the original and read zeros past {bound} here: exact, since they "
            f"only reach the tl.dot result's {part} past {bound}, which every store drops")


def dispatch_statement(kernel: str, tma: str, pointer: str, operands: list[Operand]) -> str:
    """`kernel = _tileiropt_tma_dispatch(tma, pointer, [...])`, one operand per line (the block indents it by 4)."""
    head, indent = f"{kernel} = {DISPATCH}({tma}, {pointer}, [", ""
    if len(head) > 96:
        head, indent = f"{kernel} = {DISPATCH}(\n    {tma}, {pointer}, [", "    "
    inner = "".join(f"{indent}    {operand.source()},\n" for operand in operands)
    return (f"{head}\n{indent}    # (pointer, (row stride, column stride), batch offsets, layouts, flag)\n"
            f"{inner}{indent}])")


# ---------------------------------------------------------------------- grouping and placement


def _group(analysis: TileAnalysis, locator: Locator, result: TmaResult, taken: set[str]) -> list[_Group]:
    groups: dict[tuple, _Group] = {}
    for access in analysis.accesses:
        line = access.call.lineno
        where = _placement(analysis, access)
        if isinstance(where, str):
            result.skipped.append(f"line {line}: tl.{access.kind} kept: {where}")
            continue
        if _coordinates(access, analysis) is None:
            result.skipped.append(f"line {line}: tl.{access.kind} kept: its start uses a value "
                                  "reassigned since the tile was built")
            continue
        if locator.call(access.call) is None:
            result.skipped.append(f"line {line}: tl.{access.kind} kept: its call was not found in the twin")
            continue
        key = (access.pointer, access.base, access.strides, access.blocks, access.extents, access.orient, where[0])
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(_fresh(_descriptor_name(access.pointer), taken), where[0], where[1], [])
        group.index = min(group.index, where[1])
        group.accesses.append(access)
    return list(groups.values())


def _placement(analysis: TileAnalysis, access: Access) -> Position | str:
    """The statement a descriptor is created before: the outermost one inside the deepest block that
    defines something the descriptor needs, on the way to the access."""
    blocks = [block for block, _ in access.chain]
    depth = 0
    for poly in (access.base, *access.extents):
        for atom in poly.atoms():
            for dep in atom.deps:
                site = analysis.flow.defs.get(dep)
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


def _coordinates(access: Access, analysis: TileAnalysis, wide: set[str] | None = None, tl: str = "tl"
                 ) -> tuple[str, str] | None:
    """The tile's start as written at the access; a coordinate computed from 64-bit values cast to int32
    (`wide`: the kernel's 64-bit names), as Tile IR takes descriptor coordinates (TIR012)."""
    snapshot = analysis.flow.snapshots[access.chain[-1]]
    first, second = (_render(start, snapshot) for start in access.starts)
    if first is None or second is None:
        return None
    texts = []
    for start, text in zip(access.starts, (first, second), strict=True):
        names = {name for atom in start.atoms() for name, _ in atom.deps} | {
            atom.name for atom in start.atoms() if atom.name}
        texts.append(f"({text}).to({tl}.int32)" if wide and names & wide else text)
    return texts[0], texts[1]


def _descriptor(group: _Group, analysis: TileAnalysis) -> Descriptor | None:
    """The group's descriptor, its values written out where it is created; None when one cannot be."""
    access = group.accesses[0]
    snapshot = analysis.flow.snapshots[(group.block, group.index)]
    base = _render(access.base, snapshot)
    extents = _all_rendered([_render(e, snapshot) for e in access.extents])
    strides = _all_rendered([_render(s, snapshot) for s in access.strides])
    blocks = _all_rendered([_render(b, snapshot) for b in access.blocks])
    if base is None or extents is None or strides is None or blocks is None:
        return None
    return Descriptor(group.name, access.pointer, base, (extents[0], extents[1]), (strides[0], strides[1]),
                      (blocks[0], blocks[1]), access.orient, group.flag)


def _all_rendered(values: list[str | None]) -> list[str] | None:
    """The rendered values, or None when one of them cannot be rendered."""
    rendered = [value for value in values if value is not None]
    return rendered if len(rendered) == len(values) else None


def _flags(groups: list[_Group], taken: set[str]) -> dict[str, str]:
    flags: dict[str, str] = {}
    for group in groups:
        pointer = group.accesses[0].pointer
        if group.accesses[0].orient == "nt" and pointer not in flags:
            flags[pointer] = _fresh(FLAG_PREFIX + pointer.upper(), taken)
    return flags


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
