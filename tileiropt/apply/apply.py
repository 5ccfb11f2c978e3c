"""Phase 3: rewrite a kernel file for TileIR without changing its PTX path.

The rewrite only ever *inserts* code, as an expert writes it: an `is_tileir()` gate after the imports (`gate`),
and after each kernel an `if is_tileir():` block with its TileIR configs (one comprehension crossing the kernel's
own config list with literal lever values), plus a `<name>_tileir` twin when the body must change.
Every original statement -- kernels, decorators, config lists -- stays byte-identical, so
with the gate off the module is the original one. What the tool needs to check the file (turning the TileIR
code on under PTX, dropping hints) is in its harness, not here.
"""

from __future__ import annotations

import ast
import difflib
import functools
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from tileiropt.apply.config_values import ConfigValue, Unresolvable, resolve_configs
from tileiropt.apply.gate import (
    GATE_MARKER,
    GATE_NAME,
    HELPER_MODULE,
    gate_comment,
    gate_name,
    gate_source,
    helper_import_level,
)
from tileiropt.apply.locate import Locator
from tileiropt.apply.math_rewrites import rewrite_math
from tileiropt.apply.nested import (
    Statement,
    gate_insert_index,
    guarded,
    insert_after,
    kernel_nodes,
    placement_note,
    triton_only_in_blocks,
)
from tileiropt.apply.spaces import (
    DEFAULT_MAX_CONFIGS,
    Space,
    TileIRConfig,
    covering_combinations,
    load_spaces,
    space_for_release,
    tile_sizes,
    tileir_configs,
)
from tileiropt.apply.tma import GUARD, POINTER_SUFFIX, TmaResult, dispatch_statement, plan_tma
from tileiropt.apply.tma_runtime import RUNTIME_NAMES, RUNTIME_SOURCE, runtime_source
from tileiropt.classify.blocks import alternatives_of
from tileiropt.classify.classify import TOO_DEEP, KernelRecord, kernel_records
from tileiropt.classify.discovery import KernelInfo, ModuleInfo
from tileiropt.classify.model import FileModel
from tileiropt.classify.names import AUTOTUNE, HEURISTICS, call_name
from tileiropt.classify.rules import ALL_RULES
from tileiropt.errors import UserError
from tileiropt.output import writable, write_atomic
from tileiropt.releases import Release, newest
from tileiropt.run.phase_records import ApplyKernel, Change

TWIN_SUFFIX = "_tileir"
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas")
ERROR_RULES = [rule for rule in ALL_RULES if rule.code.startswith("TIR0")]  # a kernel they flag gets no TileIR code


@dataclass
class ApplyResult:
    path: str
    output: str | None
    already_prepared: bool
    kernels: list[ApplyKernel]
    source: str
    new_source: str
    written: list[str] = field(default_factory=list)  # files written, backups included

    @property
    def changed(self) -> bool:
        return self.new_source != self.source

    def diff(self) -> str:
        out = self.output or f"{self.path} (rewritten)"
        return "".join(difflib.unified_diff(self.source.splitlines(keepends=True),
                                            self.new_source.splitlines(keepends=True),
                                            fromfile=self.path, tofile=out))


ClassifyFn = Callable[[ModuleInfo, KernelInfo], str]


# ----------------------------------------------------------------------------- code builders


@dataclass(frozen=True)
class _Names:
    """How the transformed file names what its TileIR code uses."""

    gate: str  # the gate function: `is_tileir`
    triton: str  # the triton module: `triton`
    imports_triton: bool = True  # the file binds `triton` itself (else the gate imports it)


def _hint_list(configs: list[TileIRConfig], names: _Names) -> str:
    """Hint-only configs (no meta-parameters) as one comprehension: over the product of the lever values when the
    configs are that product, else over the literal combinations. A lever with one value is written as it is;
    `None` (num_warps always: the launch's own) leaves it to the launch, which passes its own."""
    levers: list[tuple[str, list[int | None]]] = [
        ("num_stages", [c.num_stages for c in configs]), ("occupancy", [c.occupancy for c in configs]),
        ("num_ctas", [c.num_ctas for c in configs])]
    levers = [(name, list(dict.fromkeys(values))) for name, values in levers]
    varying = [(name, values) for name, values in levers if len(values) > 1]
    short = {name: name.removeprefix("num_") for name, _ in varying}  # the comprehension's variables
    keywords = ["num_warps=None"] + [f"{name}={short[name]}" if name in short else f"{name}={values[0]!r}"
                                     for name, values in levers if name in short or values[0] != 1]
    call = f"{names.triton}.Config({{}}, {', '.join(keywords)})"
    if not varying:
        return f"[{call}]"
    if math.prod(len(values) for _, values in varying) == len(configs):
        return f"[\n    {call}\n    {' '.join(f'for {short[name]} in {values!r}' for name, values in varying)}\n]"
    rows = [tuple(getattr(c, name) for name, _ in varying) for c in configs]
    return f"[\n    {call}\n    for {', '.join(short.values())} in {rows!r}\n]"


def _crossed_list(source: str, combos: list[TileIRConfig], tiles: bool, names: _Names) -> str:
    """A comprehension crossing a kernel's own configs (`source`, read at import: the tool never runs the code that
    builds them) with literal combinations of the TileIR levers (a larger tile replaces the own size where given)."""
    kwargs = "{**c.kwargs, **t}" if tiles else "c.kwargs"
    targets = ["o", "n", "s"] + (["t"] if tiles else [])
    rows = [repr((c.occupancy, c.num_ctas, c.num_stages,
                  *([{k: v for k, v in c.kwargs if v is not None}] if tiles else []))) for c in combos]
    lines, line = [], ""
    for row in rows:  # the combinations wrapped at 100 characters
        if line and len(line) + len(row) > 100:
            lines.append(line.rstrip())
            line = ""
        line += row + ", "
    lines.append(line.rstrip(", "))
    head = f"for {', '.join(targets)} in ["
    listed = head + ("\n" + " " * (4 + len(head))).join(lines) + "]"
    call = (f"{names.triton}.Config({kwargs}, num_warps=c.num_warps, num_stages=s, occupancy=o, num_ctas=n, "
            "pre_hook=c.pre_hook)")
    return f"[\n    {call}\n    for c in {source}\n    {listed}\n]"


def _extend(owner: str, paths: list[str], configs: str, fixed_list_possible: bool) -> list[str]:
    """Statements adding `configs` (an expression) to the autotuner at each of `paths`; a package's autotuner may
    keep its list fixed, and then runs its own configs rather than fail the import."""
    if len(paths) == 1:
        lines = [f"{paths[0]}.configs += {configs}"]
    else:
        variable = f"{owner}_tileir_configs"
        lines = [f"{variable} = {configs}", *(f"{path}.configs += {variable}" for path in paths)]
    if not fixed_list_possible:
        return lines
    body = "\n".join(lines).replace("\n", "\n    ")
    return [f"try:\n    {body}\nexcept (AttributeError, TypeError):  # its autotuner keeps its config list fixed\n"
            "    pass"]


# ----------------------------------------------------------------------------- planning


@dataclass
class _Plan:
    report: ApplyKernel
    twin: cst.FunctionDef | None = None
    block: list[str] = field(default_factory=list)  # statements inside `if is_tileir():`
    pointer_twin: cst.FunctionDef | None = None  # the math-only twin beside a TMA twin (defined under the gate)
    runtime: bool = False  # uses the TMA dispatch / 2-CTA guard helpers (tma_runtime)
    node: cst.FunctionDef | None = None  # the kernel's def, at the top level or inside a module-level block


def _config_names(values: list[ConfigValue]) -> list[str]:
    """The meta-parameter names the kernel's configs set, in first-seen order."""
    return list(dict.fromkeys(name for value in values for name in value.kwargs))


def _autotuner_path(model: FileModel, kernel: KernelInfo) -> str | None:
    """The attribute path from the kernel's module-level name to its autotuner (`""`, `".fn"` under
    @triton.heuristics), read from its decorators; None when a wrapper of unknown kind sits above it."""
    path = ""
    package = kernel.autotune.package if kernel.autotune else None
    for decorator in model.node(kernel).decorator_list:
        name = call_name(decorator, model.module.aliases)
        source = ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
        if name in AUTOTUNE or (package is not None and source == package):
            return path
        if name in HEURISTICS:
            path += ".fn"
        else:
            return None
    return None


def _plan_autotuned(kernel: KernelInfo, model: FileModel, space: Space, cap: int, paths: list[str], plan: _Plan,
                    names: _Names, cta_guard: bool = False) -> bool:
    """Add the TileIR configs to the autotuner of each kernel in `paths`; True when some use num_ctas > 1.

    One comprehension crosses the autotuner's own list, read at import, with literal lever combinations: the tool
    never runs the kernel file. When the file states its configs literally they are read here (at least `cap`
    configs in all, names checked against the kernel's parameters); configs built by code (a function that branches
    on the backend, a package's autotuner reading tuned configs from disk) get the covering combinations only.
    `cta_guard`: the persistent kernel gets the 2-CTA guard
    (NUM_SMS // num_ctas), so 2-CTA configs are safe for it."""
    autotune = kernel.autotune
    assert autotune is not None
    target = paths[0]
    params = {p.name for p in kernel.params}
    allow_ctas = "NUM_SMS" not in params or cta_guard  # persistent kernels: see the 2-CTA note below
    if not allow_ctas and any(c > 1 for c in space.num_ctas):
        plan.report.skipped.append(
            "num_ctas=2 not added: persistent kernel (NUM_SMS); its grid and tile stride would need "
            "NUM_SMS // num_ctas, which a config pre_hook cannot pass to the launch")
    suffix = _autotuner_path(model, kernel)
    if suffix is None:
        plan.report.skipped.append(
            f"TileIR configs not added: a wrapper of unknown kind ({', '.join(kernel.wrappers) or 'a decorator'}) "
            "sits above the autotuner, so its attribute path is not known")
        return False
    attributes = [path + suffix for path in paths]
    ctas = space.num_ctas if allow_ctas else [1]
    owner = f"{autotune.package}(...)" if autotune.package else "its autotuner"
    tiles = tile_sizes(space, [n for n in autotune.config_names if n in params])
    try:
        if autotune.package:
            raise Unresolvable(f"{autotune.package} is a package's own autotuner")
        values = resolve_configs(model.scan.tree, model.scan.configs_nodes.get(kernel.name), model.module.triton_names)
    except Unresolvable as exc:
        combos = covering_combinations(space, ctas, tiles)
        plan.block.extend(_extend(kernel.name, attributes, _crossed_list(
            f"{attributes[0]}.configs", combos, bool(tiles), names), autotune.package is not None))
        plan.report.changes.append(Change(
            autotune.line,
            f"TileIR configs crossed at import from the own config list of {owner} on {target} ({len(combos)} "
            f"combinations per own config: occupancy {space.occupancy}, num_ctas {ctas}, num_stages "
            f"{space.num_stages}" + (f", larger {', '.join(tiles)}" if tiles else "") + ")",
            f"its configs are built by code ({exc}); one comprehension crosses the autotuner's actual configs with "
            "literal lever values that cover every value, so the tool never runs the kernel file"))
        return any(c > 1 for c in ctas)
    config_names = _config_names(values)
    unknown = [n for n in config_names if n not in params]
    if unknown:
        plan.report.skipped.append(f"TileIR configs not added: configs set {unknown[0]!r}, not a kernel parameter")
        return False
    combos = covering_combinations(space, ctas, tiles, at_least=cap // max(len(values), 1))
    plan.block.extend(_extend(kernel.name, attributes, _crossed_list(
        f"{attributes[0]}.configs", combos, bool(tiles), names), False))
    plan.report.configs_added = len(values) * len(combos)
    # the combinations of int lever values (`ctas`, `space.num_stages`): neither hint is None here
    used_ctas = sorted({c.num_ctas for c in combos if c.num_ctas is not None})
    used_stages = sorted({c.num_stages for c in combos if c.num_stages is not None})
    plan.report.changes.append(Change(
        autotune.line,
        f"{len(values) * len(combos)} TileIR configs added to the autotune space of {target}: its {len(values)} "
        f"own configs crossed with {len(combos)} combinations of occupancy {sorted({c.occupancy for c in combos})}, "
        f"num_ctas {used_ctas}, num_stages {used_stages}"
        + (f", larger {', '.join(tiles)}" if tiles else ""),
        "TileIR tunes occupancy and 2-CTA mode; num_stages is a cost hint; larger tiles suit CGA-level tiles; "
        f"the kernel's own {len(values)} configs are kept first; every lever value is tried at least once"))
    return any(c.num_ctas is not None and c.num_ctas > 1 for c in combos)


def _plan_hint_only(kernel: KernelInfo, record: KernelRecord, space: Space, cap: int, bind: str, target: str,
                    plan: _Plan, names: _Names) -> None:
    """`bind = triton.autotune(<hint-only configs>, key=<its sizes>)(target)` for a kernel without autotuner."""
    if not kernel.launches:
        plan.report.skipped.append("no hint autotune: the kernel is not launched in this file")
        return
    if record.atomic_lines:
        plan.report.skipped.append(
            f"no hint autotune: atomics (line {record.atomic_lines[0]}) accumulate across runs, and autotuning "
            "re-runs the kernel")
        return
    key = record.size_params
    if not key:
        plan.report.skipped.append("no hint autotune: no runtime size argument to key the autotuner on")
        return
    if kernel.wrappers:
        plan.report.skipped.append(f"no hint autotune: wrapped by {', '.join(kernel.wrappers)}, which holds no "
                                   "autotuner the file shows (wrapping it could pass launch options twice)")
        return
    # Launch options the call sites pass stay theirs; a `**options` splat may pass any of them.
    # A kernel parameter named like a launch option is one too (passed positionally).
    passed = {name for launch in kernel.launches for name in launch.kwargs}
    passed |= set(LAUNCH_OPTIONS) & {p.name for p in kernel.params}
    if "**" in passed:
        passed |= set(LAUNCH_OPTIONS)
    stages: list[int | None] = [None] if "num_stages" in passed else list(space.num_stages)
    ctas: list[int | None] = [None] if "num_ctas" in passed else list(space.num_ctas)
    configs = tileir_configs(space, [({}, None)], [], num_ctas=ctas, num_stages=stages, cap=cap)
    count = len(configs)
    restore = record.in_place_params
    restore_arg = f"    restore_value={restore!r},\n" if restore else ""
    listed = _hint_list(configs, names).replace("\n", "\n    ")
    plan.block.append(f"{bind} = {names.triton}.autotune(\n    configs={listed},\n    key={key!r},\n"
                      f"{restore_arg})({target})")
    plan.report.configs_added = count
    plan.report.changes.append(Change(
        kernel.line,
        f"hint-only autotune under the gate: {count} configs over occupancy {space.occupancy}"
        + (f", num_stages {stages}" if stages != [None] else "")
        + (f", num_ctas {ctas}" if len(ctas) > 1 else "") + f", keyed on {', '.join(key)}"
        + (f", restoring {', '.join(restore)} between trials" if restore else ""),
        "the launch passes its own block sizes, so only TileIR hints are tuned; launch options it passes "
        "(" + (", ".join(o for o in LAUNCH_OPTIONS if o in passed) or "none") + ") are left to it; "
        "keys are integer sizes only (a tensor as key would tune again for every new tensor)"))


def _plan_tma(model: FileModel, kernel: KernelInfo, kernel_class: str, function: cst.FunctionDef,
              plan: _Plan) -> TmaResult | None:
    """The TMA twin of a dot kernel, set on the plan: the TMA twin becomes `<name>_tileir`, the
    pointer kernel (the math-only twin, or the original) `<name>_tileir_pointer`."""
    if kernel_class != "dot":
        return None
    if not kernel.is_entry:
        plan.report.skipped.append("no TMA twin: a device helper (its tiles come from its caller's pointers)")
        return None
    tma = plan_tma(model, kernel, function)
    plan.report.skipped.extend(tma.skipped)
    if tma.twin is None:
        return None
    name, pointer = kernel.name + TWIN_SUFFIX, kernel.name + TWIN_SUFFIX + POINTER_SUFFIX
    if plan.twin is not None:
        plan.pointer_twin = plan.twin.with_changes(name=cst.Name(pointer))
    else:
        plan.block.append(f"{pointer} = {kernel.name}")
    plan.twin = tma.twin.with_changes(name=cst.Name(name))
    plan.report.twin = name
    plan.runtime = True
    for line, what in tma.changes:
        plan.report.changes.append(Change(line, f"twin {name}: {what}", "TileIR wants TMA for dot kernels "
                                          "(tensor-of-pointer loads are slow there); masks become the descriptor's "
                                          "bounds, which TMA zero-fills on load and clips on store"))
    plan.report.changes.append(Change(
        kernel.line, f"{kernel.name} bound under the gate to a dispatch: {name} when the launch's tensors meet TMA's "
        f"rules (16-byte aligned base and strides, unit inner stride), {pointer} otherwise",
        "TMA's rules are properties of each launch's tensors; .last_path records the path taken"))
    return tma


def file_names(info: ModuleInfo) -> _Names:
    """The gate's name in this file (`is_tileir` unless the file has its own) and its name for the triton module
    (`triton` when imported as such; "triton" with an import of its own when the file has none)."""
    defined = set(info.module_functions) | set(info.definitions)
    triton_name = "triton" if "triton" in info.triton_names else min(info.triton_names, default="triton")
    return _Names(gate_name(defined), triton_name, imports_triton=bool(info.triton_names))


@dataclass
class KernelStep:
    """What the transforms of one kernel share, in the order `TRANSFORMS` runs them: each reads what the earlier
    ones decided (the twin's name, the kernels the configs go to) and adds to the kernel's plan."""

    model: FileModel
    kernel: KernelInfo
    record: KernelRecord
    kernel_class: str
    node: cst.FunctionDef
    space: Space
    cap: int
    release: Release
    names: _Names  # the file's own module-level names (a new one must not shadow them)
    plan: _Plan
    twin: cst.FunctionDef  # the body the TMA rewrite starts from: the math twin's, else the kernel's own
    target: str  # the name the kernel is bound to under the gate
    paths: list[str] = field(default_factory=list)  # the kernels the TileIR configs go to
    tma: TmaResult | None = None  # the TMA rewrite's plan, when the kernel gets one
    step: str | None = None  # a persistent kernel's tile-stride argument (the 2-CTA guard divides it)


def math_twin(ctx: KernelStep) -> None:
    """A twin with exp rewritten as exp2 + mul where the release's compiler does not do it itself."""
    kernel, plan, release = ctx.kernel, ctx.plan, ctx.release
    info = ctx.model.module
    twin, rewrites = rewrite_math(ctx.node, info.aliases) if release.exp_to_exp2 else (ctx.node, [])
    ctx.twin = twin
    if rewrites:
        plan.twin = twin.with_changes(name=cst.Name(kernel.name + TWIN_SUFFIX))
        plan.report.twin = kernel.name + TWIN_SUFFIX
        ctx.target = plan.report.twin
        locator = Locator(ctx.model.node(kernel), ctx.node, info.aliases)
        for rewrite in rewrites:
            call = locator.tree_call(rewrite.call)
            plan.report.changes.append(Change(call.lineno if call is not None else kernel.first_line,
                                              f"twin {ctx.target}: {rewrite.what}",
                                              f"{release.label()}'s compiler does not rewrite exp into ex2 + "
                                              "mul itself"))
    ctx.paths = [ctx.target]


def tma_twin(ctx: KernelStep) -> None:
    """A TMA twin of a dot kernel (descriptor loads), the pointer twin beside it; the configs go to both."""
    ctx.tma = _plan_tma(ctx.model, ctx.kernel, ctx.kernel_class, ctx.twin, ctx.plan)
    release, kernel = ctx.release, ctx.kernel
    if release.num_warps == "hint" and kernel.autotune is not None:
        ctx.plan.report.changes.append(Change(kernel.line, f"num_warps kept in the TileIR configs: {release.label()} "
                                              f"takes it as a hint", release.num_warps_note))
    if ctx.tma is not None:
        assert ctx.plan.report.twin is not None  # _plan_tma names the twin it plans
        ctx.paths = [ctx.plan.report.twin, kernel.name + TWIN_SUFFIX + POINTER_SUFFIX]
        ctx.target = ctx.paths[0]
    ctx.step = ctx.model.persistent_step(kernel)


def autotuner_configs(ctx: KernelStep) -> None:
    """TileIR configs added to the kernel's own autotuner (and the 2-CTA guard of a persistent kernel)."""
    kernel, plan, step = ctx.kernel, ctx.plan, ctx.step
    if kernel.autotune is None:
        return
    two_ctas = _plan_autotuned(kernel, ctx.model, ctx.space, ctx.cap, ctx.paths, plan, ctx.names,
                               cta_guard=step is not None)
    if step is not None and two_ctas:
        plan.block.extend(f"{GUARD}({path}, {step!r})" for path in ctx.paths)
        plan.runtime = True  # the guard is defined with the TMA runtime helpers
        plan.report.changes.append(Change(
            kernel.line, f"2-CTA guard on {', '.join(ctx.paths)}: under num_ctas=2, {step} // 2 programs "
            f"and tile stride", "each 2-CTA program takes two SMs; a config pre_hook cannot change the "
            "launch (the autotuner passes it a copy of the arguments)"))


def hint_only_configs(ctx: KernelStep) -> None:
    """An autotuner of TileIR hints for an entry kernel that has none (each TMA path its own)."""
    kernel, plan, step = ctx.kernel, ctx.plan, ctx.step
    if kernel.autotune is not None or not kernel.is_entry:
        return
    before = len(plan.block)
    for path in ctx.paths:  # before a TMA dispatch: each path gets its own autotuner
        _plan_hint_only(kernel, ctx.record, ctx.space, ctx.cap, path if ctx.tma else kernel.name, path, plan,
                        ctx.names)
    if step is not None and len(plan.block) > before:
        plan.block.extend(f"{GUARD}({path if ctx.tma else kernel.name}, {step!r})" for path in ctx.paths)
        plan.runtime = True


def rebinding(ctx: KernelStep) -> None:
    """The kernel's module-level name bound, under the gate, to its TMA dispatch or its twin."""
    kernel, plan = ctx.kernel, ctx.plan
    if ctx.tma is not None:
        plan.block.append(dispatch_statement(kernel.name, ctx.paths[0], ctx.paths[1], ctx.tma.operands))
    if plan.twin is not None and not any(line.startswith(f"{kernel.name} =") for line in plan.block):
        plan.block.append(f"{kernel.name} = {ctx.target}")
        plan.report.changes.append(Change(kernel.line, f"{kernel.name} bound to {ctx.target} under the gate",
                                          "every caller, in this module or another, gets the TileIR body"))


# The transforms of a kernel, in order: a new one is a function of a `KernelStep`, placed where what it reads is
# decided (the twin before the configs that name it, the configs before the dispatch that binds the name).
TRANSFORMS: tuple[Callable[[KernelStep], None], ...] = (math_twin, tma_twin, autotuner_configs,
                                                        hint_only_configs, rebinding)


def plan_kernels(model: FileModel, module: cst.Module, records: dict[str, KernelRecord],
                 spaces: dict[str, Space], cap: int, classify: ClassifyFn | None = None,
                 release: Release | None = None) -> dict[str, _Plan]:
    """A plan per kernel of the file's model (`module`: the file in libcst) from the analysis' records (class,
    pointers, sizes); `classify` overrides the class. `release` (default: the newest known) decides the math
    rewrites and bounds the occupancy hint. Each kernel goes through `TRANSFORMS` in order."""
    release = release or newest()
    info = model.module
    spaces = {name: space_for_release(space, release) for name, space in spaces.items()}
    nodes = kernel_nodes(module, info)
    plans: dict[str, _Plan] = {}
    kernel_names = {k.name for k in info.kernels}
    names = file_names(info)
    for kernel in info.kernels:
        if kernel.name.endswith(TWIN_SUFFIX) and kernel.name[: -len(TWIN_SUFFIX)] in kernel_names:
            continue
        record = records[kernel.name]
        kernel_class = classify(info, kernel) if classify else record.kernel_class
        plan = _Plan(ApplyKernel(kernel.name, kernel.line, kernel_class))
        plans[kernel.name] = plan
        node = nodes.get(kernel.name)
        if node is None:
            plan.report.skipped.append("not a module-level function: left alone")
            continue
        plan.node = node
        rejected = [f for f in record.findings if f.severity == "error"]
        if rejected:  # TileIR configs or twins would only hide it: the TileIR compiler rejects the kernel
            first = rejected[0]
            plan.report.skipped.append(f"no TileIR code added: {first.code} (error) at L{first.line}: {first.message} "
                                       f"-- the TileIR compiler would reject this kernel (fix: {first.hint}; then "
                                       "apply again)")
            continue
        ctx = KernelStep(model, kernel, record, kernel_class, node, spaces[kernel_class], cap, release, names, plan,
                         twin=node, target=kernel.name)
        for transform in TRANSFORMS:
            transform(ctx)
        _note_block(kernel, info, plan)
    return plans


def _note_block(kernel: KernelInfo, info: ModuleInfo, plan: _Plan) -> None:
    """For a kernel inside a module-level block: where its TileIR code goes, and which definition of its
    name on another branch gets none."""
    note = placement_note(kernel)
    if note is not None and (plan.block or plan.twin is not None):
        plan.report.changes.append(Change(kernel.line, note, "the kernel exists only when that block runs; its "
                                          "TileIR code runs with it, where the kernel's name is bound"))
    for other in alternatives_of(info.definitions, kernel.name, kernel.line):
        what = "the Triton kernel" if other.kind == "kernel" else "the plain-Python definition"
        plan.report.skipped.append(f"{what} of {kernel.name} at line {other.line} (under `{other.condition}`) "
                                   "left alone: another branch of the block (TIR203)")


def _block_statement(kernel: str, lines: list[str], gate: str) -> cst.BaseStatement:
    body = "\n".join("    " + line.replace("\n", "\n    ") for line in lines)
    code = f"# TileIR code for {kernel} (tileiropt)\nif {gate}():\n{body}\n"
    statement = cst.parse_statement(code)
    blank = cst.EmptyLine(indent=False)  # inside a module-level block too: no trailing indentation
    return statement.with_changes(leading_lines=[blank, blank, *statement.leading_lines])


def rewrite_module(module: cst.Module, plans: dict[str, _Plan], names: _Names, helper_level: int | None = None
                   ) -> cst.Module:
    """The gate before the first definition (the TMA runtime after it, guarded when Triton is optional here), or,
    in a library (`helper_level`: the dots of a relative import), one import of both from the package's helper
    module; each kernel's TileIR block right after its def, inside the module-level block that defines it."""
    needs_runtime = any(plan.runtime for plan in plans.values())
    gate_index = gate_insert_index(module)
    optional_triton = triton_only_in_blocks(module, gate_index)
    if helper_level is not None and not (needs_runtime and optional_triton):
        gate_statements = _gate_statements(cst.parse_module(helper_import(names, plans, helper_level)))
    else:
        gate_text = gate_source(names.gate)
        if not names.imports_triton:
            gate_text = f"import {names.triton}\n\n\n{gate_text}"
        gate_statements = _gate_statements(cst.parse_module(gate_text))
        if needs_runtime:
            runtime = _gate_statements(cst.parse_module(runtime_source(_runtime_called(plans))))
            gate_statements += guarded(runtime) if optional_triton else runtime
    blocks = {id(plan.node): _with_twins(_block_statement(name, plan.block, names.gate), plan)
              for name, plan in plans.items() if plan.block and plan.node is not None}
    before, after = list(module.body[:gate_index]), list(module.body[gate_index:])  # no def precedes the gate
    return module.with_changes(body=[*before, *gate_statements, *insert_after(after, blocks)])


def helper_import(names: _Names, plans: dict[str, _Plan], level: int) -> str:
    """`from .._tileir import is_tileir[, <the TMA runtime names the blocks call>]` with the gate's comment."""
    imported = [GATE_NAME if names.gate == GATE_NAME else f"{GATE_NAME} as {names.gate}"]
    imported += [name for name in RUNTIME_NAMES if name in _runtime_called(plans)]
    return f"{gate_comment()}\nfrom {'.' * level}{HELPER_MODULE} import {', '.join(imported)}\n"


def _runtime_called(plans: dict[str, _Plan]) -> set[str]:
    """The TMA runtime helpers the TileIR blocks call."""
    used = "\n".join(line for plan in plans.values() for line in plan.block)
    return {name for name in RUNTIME_NAMES if f"{name}(" in used}


@functools.lru_cache(maxsize=1)
def helper_source() -> str:
    """A library's helper module (`<package>/_tileir.py`): the gate and the TMA runtime, once for all its files."""
    runtime = cst.Module(body=guarded(_gate_statements(cst.parse_module(RUNTIME_SOURCE)))).code
    docstring = '"""CUDA Tile IR helpers shared by this package\'s kernel files (tileiropt)."""'
    return f"{docstring}\n\n\n{gate_source()}\n{runtime}"


def write_helper(result: ApplyResult, level: int | None) -> Path | None:
    """Write the library's helper module where `result`'s optimized file imports it from (`level` folders up);
    None when the file imports none."""
    if level is None or result.output is None or f"{HELPER_MODULE} import {GATE_NAME}" not in result.new_source:
        return None
    helper = Path(result.output).parents[level - 1] / f"{HELPER_MODULE}.py"
    if not helper.is_file() or helper.read_text(encoding="utf-8", errors="replace") != helper_source():
        write_atomic(helper, helper_source(), "utf-8", replaces=lambda text: GATE_MARKER in text, what="file")
    return helper


def copy_helper(optimized: Path, user_file: Path) -> Path | None:
    """After `--in-place` wrote `optimized` over `user_file`: the helper module it imports, copied into the user's
    package beside it (never over a module of the user's own). None when it imports none."""
    level = helper_import_level(Path(user_file).read_bytes())
    if level is None:
        return None
    helper = Path(optimized).parents[level - 1] / f"{HELPER_MODULE}.py"
    target = Path(user_file).parents[level - 1] / helper.name
    write_atomic(target, helper.read_text(encoding="utf-8"), "utf-8", replaces=lambda text: GATE_MARKER in text,
                 what="file")
    return target


def helper_level(path: Path, library: Path) -> int | None:
    """The dots of `path`'s relative import of the library's helper module (`library/_tileir.py`): 1 at the
    library's top, one more per folder below (a folder without `__init__.py` is a namespace package); None when
    the library's folder is not a package."""
    if not (Path(library) / "__init__.py").is_file():
        return None
    return len(Path(path).resolve().relative_to(Path(library).resolve()).parts)


def apply_library(library: Path, out: Path, *, files: list[Path] | None = None, release: Release | None = None,
                  max_configs: int = DEFAULT_MAX_CONFIGS, models: dict[Path, FileModel] | None = None
                  ) -> tuple[list[ApplyResult], Path | None]:
    """Library mode: each kernel file of `library` (or `files`) rewritten to its mirrored place under `out`
    (`library.mirrored_output`), importing the one helper module written at `out/<library name>/_tileir.py`
    when the library is a package (else each file keeps its own gate). Returns the results and the helper."""
    from tileiropt.project.library import library_files, mirrored_output

    paths = files if files is not None else library_files(library).kernel_files
    results, helper = [], None
    for path in paths:
        level = helper_level(path, library)
        output = mirrored_output(path, library, out)
        output.parent.mkdir(parents=True, exist_ok=True)
        model = (models or {}).get(Path(path).resolve())
        try:
            result = apply_file(Path(path), output=output, release=release, max_configs=max_configs, model=model,
                                helper_level=level)
        except NoKernelFound:
            continue
        results.append(result)
        helper = write_helper(result, level) or helper
    return results, helper


def _with_twins(block: cst.BaseStatement, plan: _Plan) -> cst.BaseStatement:
    """The gated block with the twins defined first inside it: with the gate off they do not exist,
    so not even their decorators run and the module is the original one."""
    if not isinstance(block, cst.If):
        return block
    twins: list[cst.BaseStatement] = []
    if plan.twin is not None:
        comment = cst.EmptyLine(comment=cst.Comment(
            f"# tileiropt: TileIR twin of {plan.report.kernel} (the original above is unchanged)"))
        twins.append(plan.twin.with_changes(leading_lines=[comment]))
    if plan.pointer_twin is not None:
        comment = cst.EmptyLine(comment=cst.Comment(
            f"# tileiropt: TileIR twin of {plan.report.kernel} with pointer loads, for launches TMA cannot serve"))
        twins.append(plan.pointer_twin.with_changes(leading_lines=[cst.EmptyLine(indent=False), comment]))
    if not twins:
        return block
    rest = list(block.body.body)
    if rest:
        first = rest[0]
        # the gated block is indented (`_block_statement`): its statements are lines or compound statements
        assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        rest[0] = first.with_changes(leading_lines=[cst.EmptyLine(indent=False), *first.leading_lines])
    return block.with_changes(body=block.body.with_changes(body=[*twins, *rest]))


def _gate_statements(gate: cst.Module) -> list[Statement]:
    """The gate's statements, its header comment (with the marker) attached to the first."""
    comments = [line for line in gate.header if line.comment is not None]
    first, *rest = gate.body
    blank = cst.EmptyLine(indent=False)
    return [first.with_changes(leading_lines=[blank, blank, *comments]), *rest]


class NoKernelFound(UserError):
    """The file defines no @triton.jit function: an error for a file named, passed over in a folder."""


def transform_source(source: str, path: str = "<string>", *, spaces: dict[str, Space] | None = None,
                     max_configs: int = DEFAULT_MAX_CONFIGS, classify: ClassifyFn | None = None,
                     release: Release | None = None, helper_level: int | None = None) -> ApplyResult:
    """Plan and rewrite one module's source; nothing is written."""
    return transform_model(FileModel(source, path), spaces=spaces, max_configs=max_configs, classify=classify,
                           release=release, helper_level=helper_level)


def transform_model(model: FileModel, *, spaces: dict[str, Space] | None = None,
                    max_configs: int = DEFAULT_MAX_CONFIGS, classify: ClassifyFn | None = None,
                    release: Release | None = None, helper_level: int | None = None) -> ApplyResult:
    """Plan and rewrite the file of `model` (parsed with libcst here, once); nothing is written. `helper_level`:
    a library's file, importing the gate from the package's helper module with that many dots."""
    source, path = model.source, model.path
    if GATE_MARKER in source:
        return ApplyResult(path, None, True, [], source, source)
    try:
        info = model.module
        if not info.kernels:
            raise NoKernelFound("no Triton kernel found (no @triton.jit function)", file=path,
                            hint="point apply at a file that defines @triton.jit kernels")
        # the error rules: a kernel the release's compiler rejects gets no TileIR code (plan_kernels)
        records = {record.kernel: record for record in kernel_records(model, ERROR_RULES, release)}
        module = cst.parse_module(source)
        plans = plan_kernels(model, module, records, spaces or load_spaces(), max_configs, classify, release)
        changed = any(p.block or p.twin for p in plans.values())
        new_source = rewrite_module(module, plans, file_names(info), helper_level).code if changed else source
    except RecursionError:
        raise TOO_DEEP(path) from None
    return ApplyResult(path, None, False, [p.report for p in plans.values()], source, new_source)


def output_path_for(path: Path, output: Path | None, in_place: bool) -> Path:
    if in_place and output is not None:
        raise UserError("--in-place and -o/--output exclude each other", hint="choose one")
    if in_place:
        return path
    return output or path.with_name(f"{path.stem}{TWIN_SUFFIX}.py")


def apply_file(path: Path, *, output: Path | None = None, in_place: bool = False, dry_run: bool = False,
               spaces: dict[str, Space] | None = None, max_configs: int = DEFAULT_MAX_CONFIGS,
               classify: ClassifyFn | None = None, release: Release | None = None,
               model: FileModel | None = None, helper_level: int | None = None) -> ApplyResult:
    """Transform one kernel file and write the result (atomically) unless `dry_run`. `model`: the file's model
    when the command has read it already.

    The input is never overwritten unless `in_place`; then the original is kept beside it as
    `<name>.orig` (or `.orig.N` when that name is taken: an existing file is never replaced). Any other
    output replaces only a file tileiropt wrote (its gate marker); links and devices are refused.
    """
    path = Path(path)
    if model is None:
        if not path.exists():
            raise UserError("kernel file not found", file=str(path))
        model = FileModel.read(path)  # a folder, pipe or device is refused here, in one line
    target = output_path_for(path, output, in_place)
    if target.resolve() == path.resolve() and not in_place:
        raise UserError("the output would overwrite the input", file=str(path),
                        hint="pass --in-place to rewrite the file itself (a .orig backup is kept)")
    result = transform_model(model, spaces=spaces, max_configs=max_configs, classify=classify, release=release,
                             helper_level=helper_level)
    result.output = str(target)
    if dry_run or result.already_prepared:  # a prepared file is its own output: nothing to write
        return result
    if in_place:
        if result.changed:
            writable(path)  # a link or a device is refused before anything is copied
            backup = free_backup(path)  # never over another file: <name>.orig, else .orig.1, .orig.2, ...
            try:
                shutil.copy2(path, backup)
            except OSError as exc:
                raise UserError(f"cannot keep the original: {exc.strerror or exc}", file=str(backup)) from None
            result.written.append(str(backup))
            write_atomic(path, result.new_source, model.encoding)
            result.written.append(str(path))
    else:
        # only a file tileiropt wrote is replaced: a hand-written <stem>_tileir.py or `optimized = "notes.py"` is not
        write_atomic(target, result.new_source, model.encoding, replaces=lambda text: GATE_MARKER in text,
                     what="file")
        result.written.append(str(target))
    return result


def free_backup(path: Path, limit: int = 1000) -> Path:
    """`<name>.orig`, or the first `<name>.orig.N` that does not exist yet."""
    candidate = path.with_name(path.name + ".orig")
    for number in range(1, limit):
        if not candidate.exists() and not candidate.is_symlink():
            return candidate
        candidate = path.with_name(f"{path.name}.orig.{number}")
    raise UserError(f"{limit} backups exist already", file=str(path), hint="remove old .orig files")
