"""What `apply` decides for each kernel before it writes anything (`KernelPlan`: the statements of its
`if is_tileir():` block, its twins, whether it needs the TMA runtime helpers), and the planners and code
builders the transforms (`transforms.py`) call: TileIR configs for a kernel's own autotuner, a hint-only
autotuner for an entry kernel without one, a TMA twin of a dot kernel."""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from dataclasses import dataclass, field

import libcst as cst

from tileiropt.apply.config_values import ConfigValue, Unresolvable, resolve_configs
from tileiropt.apply.spaces import (
    Space,
    TileIRConfig,
    covering_combinations,
    tile_sizes,
    tileir_configs,
)
from tileiropt.apply.tma import TmaResult, plan_tma
from tileiropt.classify.classify import KernelRecord
from tileiropt.classify.discovery import KernelInfo, ModuleInfo
from tileiropt.classify.model import FileModel
from tileiropt.classify.names import AUTOTUNE, HEURISTICS, call_name
from tileiropt.contract.phase_records import ApplyKernel, Change
from tileiropt.harness.gate import gate_name, twin_names
from tileiropt.harness.gate_off import FLAGS, LEVER_NAMES, LOG2E_NAMES
from tileiropt.harness.launch_hints import hint_splat

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas")


# ----------------------------------------------------------------------------- code builders


@dataclass(frozen=True)
class FileNames:
    """How the transformed file names what its TileIR code uses."""

    gate: str  # the gate function: `is_tileir`
    triton: str  # the triton module: `triton`
    imports_triton: bool = True  # the file binds `triton` itself (else the gate imports it)
    flag: str = "TILEIR"  # the gate as a module-level constexpr, read by in-place rewrites and launch hints
    log2e: str = "LOG2E"  # log2(e) as a module-level constexpr
    levers: str = "TILEIR_LEVERS"  # a list of lever combinations several kernels' configs are crossed with


def _hint_list(configs: list[TileIRConfig], names: FileNames) -> str:
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


def _crossed_list(source: str, combos: list[TileIRConfig], tiles: bool, names: FileNames) -> str:
    """A comprehension crossing a kernel's own configs (`source`, read at import: the tool never runs the code that
    builds them) with literal combinations of the TileIR levers (a larger tile replaces the own size where given)."""
    kwargs = "{**c.kwargs, **t}" if tiles else "c.kwargs"
    targets = ["o", "n", "s"] + (["t"] if tiles else [])
    rows = [repr((c.occupancy, c.num_ctas, c.num_stages,
                  *([{k: v for k, v in c.kwargs if v is not None}] if tiles else []))) for c in combos]
    listed = _wrapped_list(f"for {', '.join(targets)} in [", rows, 4)
    call = (f"{names.triton}.Config({kwargs}, num_warps=c.num_warps, num_stages=s, occupancy=o, num_ctas=n, "
            "pre_hook=c.pre_hook)")
    larger = "\n    if all(v >= c.kwargs.get(k, 0) for k, v in t.items())" if tiles else ""  # a tile never shrinks
    return f"[\n    {call}\n    for c in {source}\n    {listed}{larger}\n]"


def crossed_count(values: list[ConfigValue], combos: list[TileIRConfig]) -> int:
    """How many configs `_crossed_list` makes of the literal `values`: a combination's larger tile only where no
    size of it is smaller than the config's own."""
    return sum(_made(value, combos) for value in values)


def _made(value: ConfigValue, combos: list[TileIRConfig]) -> int:
    return sum(1 for combo in combos if _grows(value, _tile(combo)))


def _tile(combo: TileIRConfig) -> dict[str, int]:
    """The larger tile sizes a combination sets (None in its kwargs: the own config's size)."""
    return {name: size for name, size in combo.kwargs if size is not None}


def _grows(value: ConfigValue, tile: dict[str, int]) -> bool:
    """`_crossed_list`'s filter: a larger tile never shrinks the config's own."""
    return all(size >= value.kwargs.get(name, 0) for name, size in tile.items())


def distinct_rows(values: list[ConfigValue]) -> list[int]:
    """The indices of the own configs (literal `values`) the crossing makes differently: the first of each set alike
    but for num_stages and num_ctas, which the crossing sets itself."""
    distinct: dict[tuple, int] = {}
    for index, value in enumerate(values):
        key = (tuple(sorted((name, repr(v)) for name, v in value.kwargs.items())), value.num_warps,
               repr(value.options.get("pre_hook")))
        distinct.setdefault(key, index)
    return list(distinct.values())


def crossed_rows(values: list[ConfigValue], combos: list[TileIRConfig], cap: int) -> list[int]:
    """The indices of the own configs (literal `values`) the lever combinations cross, at most `cap` TileIR configs
    in all: of the `distinct_rows`, the author's first, then those that hold the meta-parameter and num_warps values
    not held yet, then the author's order; never one that would make a config another crossed row makes (a larger
    tile replaces the sizes in which two own configs differ)."""
    rows = distinct_rows(values)
    made = {index: _made_configs(values[index], combos) for index in rows}
    held = {index: {(name, repr(v)) for name, v in values[index].kwargs.items()} | {
        ("num_warps", repr(values[index].num_warps))} for index in rows}
    chosen = [rows[0]]  # the author's first choice, whatever it makes
    total, making = len(made[rows[0]]), set(made[rows[0]])
    uncovered = set().union(*held.values()) - held[rows[0]]
    remaining = rows[1:]
    while remaining:  # the room only shrinks, and what is made only grows
        remaining = [index for index in remaining if total + len(made[index]) <= cap and not made[index] & making]
        if not remaining:
            break
        best = max(remaining, key=lambda index: len(held[index] & uncovered))  # the first of the best
        remaining.remove(best)
        chosen.append(best)
        total += len(made[best])
        making |= made[best]
        uncovered -= held[best]
    return sorted(chosen)


def _made_configs(value: ConfigValue, combos: list[TileIRConfig]) -> set[tuple]:
    """The configs `_crossed_list` makes of one own config: its meta-parameters with a combination's larger tile,
    its num_warps, the combination's levers."""
    made = set()
    for combo in combos:
        tile = _tile(combo)
        if _grows(value, tile):
            kwargs = {**value.kwargs, **tile}
            made.add((tuple(sorted((name, repr(v)) for name, v in kwargs.items())), value.num_warps,
                      combo.occupancy, combo.num_ctas, combo.num_stages))
    return made


def crossed_source(configs: str, rows: list[int] | None = None, total: int = 0, first: int | None = None) -> str:
    """The own configs a crossing reads at import from `configs`: those at `rows` of its `total` (literal; read by
    index where the file could change the list after it is written, so a shorter list never fails the import),
    or the first `first` of those the crossing makes differently (a list built by code, which the tool does not
    read: one of each set alike but for num_stages and num_ctas, which the crossing sets itself)."""
    if rows is not None:
        if rows == list(range(total)):
            return configs
        if rows == list(range(len(rows))):
            return f"{configs}[:{len(rows)}]"
        return f"[c for i, c in enumerate({configs}) if i in {tuple(rows)!r}]"
    if first is None:
        return configs
    return (f"[c for i, c in enumerate({configs})  # each unlike those before it (num_stages aside)\n"
            f"              if all((c.kwargs, c.num_warps) != (d.kwargs, d.num_warps) for d in {configs}[:i])]"
            f"[:{first}]")


def _wrapped_list(head: str, rows: list[str], indent: int) -> str:
    """`head` then `rows` as one list literal, wrapped at 100 characters under its first row (`indent`: the
    column `head` starts at)."""
    lines, line = [], ""
    for row in rows:
        if line and len(line) + len(row) > 100:
            lines.append(line.rstrip())
            line = ""
        line += row + ", "
    lines.append(line.rstrip(", "))
    return head + ("\n" + " " * (indent + len(head))).join(lines) + "]"


LEVER_LIST = re.compile(r"(?<=for o, n, s in )\[[^\]]*\]|(?<=for o, n, s, t in )\[[^\]]*\]")


def share_lever_lists(plans: dict[str, KernelPlan], name: str) -> str:
    """One module-level list, named, for each list of lever combinations (`_crossed_list`) that two or more of the
    file's TileIR blocks cross their kernels' configs with (a file of several dot kernels repeats one list); the
    blocks name it instead. Returns the definitions ("" when no list repeats)."""
    def key(literal: str) -> str:
        return re.sub(r"\s+", " ", literal)

    counts = Counter(key(found) for plan in plans.values() for line in plan.block
                     for found in LEVER_LIST.findall(line))
    shared = {literal: name if number == 1 else f"{name}_{number}"
              for number, literal in enumerate((k for k, count in counts.items() if count > 1), 1)}
    if not shared:
        return ""
    def joined(found: re.Match) -> str:  # `for c in <configs> for o, n, s in <name>` on one line where it fits
        own, levers = found.group(1), found.group(3)
        return f"{own} {levers}" if len(found.group(2)) + len(own) + len(levers) < 96 else found.group()

    for plan in plans.values():
        plan.block = [re.sub(r"(for c in \S+)\n( *)(for o, n, s(?:, t)? in \w+)$", joined, LEVER_LIST.sub(
            lambda found: shared.get(key(found.group()), found.group()), line), flags=re.M) for line in plan.block]
    definitions = [_wrapped_list(f"{variable} = [", [repr(row) for row in ast.literal_eval(literal)], 0)
                   for literal, variable in shared.items()]
    return ("# TileIR levers (occupancy, num_ctas, num_stages, larger tiles) crossed with several kernels' configs\n"
            + "\n".join(definitions) + "\n")


def _extend(owner: str, paths: list[str], configs: str, fixed_list_possible: bool) -> list[str]:
    """Statements giving the autotuner at each of `paths` its own configs and `configs` (an expression) as a new
    list: the author's list object stays as it is, since other autotuners may hold it too (one list named in
    several decorators, or imported from another file), and extending it in place would cross their configs again.
    A package's autotuner may keep its list fixed, and then runs its own configs rather than fail the import."""
    if len(paths) == 1:
        lines = [f"{paths[0]}.configs = {paths[0]}.configs + {configs}"]
    else:
        variable = f"{owner}_tileir_configs"
        lines = [f"{variable} = {configs}", *(f"{path}.configs = {path}.configs + {variable}" for path in paths)]
    if not fixed_list_possible:
        return lines
    body = "\n".join(lines).replace("\n", "\n    ")
    return [f"try:\n    {body}\nexcept (AttributeError, TypeError):  # its autotuner keeps its config list fixed\n"
            "    pass"]


# ----------------------------------------------------------------------------- planning


@dataclass
class KernelPlan:
    report: ApplyKernel
    twin: cst.FunctionDef | None = None
    block: list[str] = field(default_factory=list)  # statements inside `if is_tileir():`
    pointer_twin: cst.FunctionDef | None = None  # the math-only twin beside a TMA twin (defined under the gate)
    runtime: bool = False  # uses the TMA dispatch / 2-CTA guard helpers (tma_runtime)
    node: cst.FunctionDef | None = None  # the kernel's def, at the top level or inside a module-level block
    rewritten: cst.FunctionDef | None = None  # the kernel's def with in-place rewrites behind the gate's constexpr
    launch_hints: dict[int, dict[str, int]] = field(default_factory=dict)  # launch line -> hints it passes gated
    after_binding: str | None = None  # the module-level name whose binding the block follows (default: the def)
    after_index: int | None = None  # which of that name's module-level assignments, through module-level blocks
    # (`nested.assignment_index`); None: the last at the top level
    launched_as: list[str] = field(default_factory=list)  # the names its hinted launches use (default: the kernel's)


def _config_names(values: list[ConfigValue]) -> list[str]:
    """The meta-parameter names the kernel's configs set, in first-seen order."""
    return list(dict.fromkeys(name for value in values for name in value.kwargs))


def _autotuner_path(model: FileModel, kernel: KernelInfo) -> str | None:
    """The attribute path from the kernel's module-level name to its autotuner (`""`, `".fn"` under
    @triton.heuristics), read from its decorators, or from what its assignments apply over it (`k =
    triton.heuristics(...)(triton.autotune(...)(triton.jit(k)))`); None when a wrapper of unknown kind sits above it."""
    path = ""
    package = kernel.autotune.package if kernel.autotune else None
    for decorator in model.scan.layers(kernel.name, model.node(kernel)):
        name = call_name(decorator, model.module.aliases)
        source = ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
        if name in AUTOTUNE or (package is not None and source == package):
            return path
        if name in HEURISTICS:
            path += ".fn"
        else:
            return None
    return None


def call_form_autotuners(tree: ast.Module, kernel: str, aliases: dict[str, str]) -> list[tuple[str, int]]:
    """(name, line) of each module-level `name = triton.autotune(...)(x)` whose `x` is the kernel, or a name bound
    at module level to `triton.heuristics(...)(kernel)` (an autotuner made by a call, not a decorator)."""
    bindings = [(node.targets[0].id, node) for node in tree.body
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)]
    bound = {name: node.value for name, node in bindings}

    def made_by(value: ast.expr, maker: frozenset[str]) -> ast.expr | None:
        """The one argument `x` of `<maker>(...)(x)`, else None."""
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Call) and len(value.args) == 1 and \
                call_name(value.func, aliases) in maker:
            return value.args[0]
        return None

    def wraps_kernel(value: ast.expr | None, depth: int = 0) -> bool:
        if isinstance(value, ast.Name):
            return value.id == kernel or (depth < 4 and value.id in bound and wraps_kernel(bound[value.id], depth + 1))
        return value is not None and wraps_kernel(made_by(value, HEURISTICS), depth + 1)

    return [(name, node.lineno) for name, node in bindings if wraps_kernel(made_by(node.value, AUTOTUNE))]


def plan_call_form_autotuned(tuners: list[tuple[str, int]], kernel: KernelInfo, space: Space, cap: int,
                             plan: KernelPlan, names: FileNames) -> None:
    """TileIR configs for each autotuner made by a call over the kernel (`call_form_autotuners`): the first of its
    own configs (a list built where the tool does not read it), as many as keep within `cap`, crossed at import with
    the lever combinations that cover every value (no larger tiles: the names its configs set are not read), as a
    new list."""
    combos = covering_combinations(space, space.num_ctas, {})
    first = max(1, cap // len(combos))
    plan.after_binding = max(tuners, key=lambda found: found[1])[0]  # the block reads them: after the last one
    plan.report.configs_added_at_most = first * len(combos) * len(tuners)
    for tuner, line in tuners:
        plan.block.extend(_extend(tuner, [tuner], _crossed_list(
            crossed_source(f"{tuner}.configs", first=first), combos, False, names), False))
        plan.report.changes.append(Change(
            line,
            f"TileIR configs crossed at import from at most {first} distinct own configs (the first) of {tuner} = "
            f"triton.autotune(...)(...) ({len(combos)} combinations each: occupancy {space.occupancy}, num_ctas "
            f"{space.num_ctas}, num_stages {space.num_stages})",
            f"{tuner} autotunes {kernel.name} through a call rather than a decorator; its configs go into that "
            "autotuner, read at import, so the tool never runs the code that builds them"))


def plan_autotuned(kernel: KernelInfo, model: FileModel, space: Space, cap: int, paths: list[str], plan: KernelPlan,
                    names: FileNames) -> None:
    """Add the TileIR configs to the autotuner of each kernel in `paths`.

    One comprehension crosses the autotuner's own list, read at import, with literal lever combinations: the tool
    never runs the kernel file. When the file states its configs literally they are read here (names checked
    against the kernel's parameters) and at most `cap` configs are made (`crossed_rows`; more only where trying
    every lever value once takes more); configs built by code (a function that branches on the backend, a
    package's autotuner reading tuned configs from disk) get the covering combinations, crossed with their first
    few distinct configs.
    A persistent kernel gets 2-CTA configs as any other (as NVIDIA's port of tutorial 09 does): its programs
    then take two SMs each, and the autotuner times that like every other config."""
    autotune = kernel.autotune
    assert autotune is not None
    target = paths[0]
    params = {p.name for p in kernel.params}
    suffix = _autotuner_path(model, kernel)
    reached = suffix is None  # a package's wrapper above the autotuner: reached at import through its chain
    attributes = [f"_tileiropt_autotuner({path})" if reached else f"{path}{suffix}" for path in paths]
    if reached:
        plan.runtime = True
        plan.report.changes.append(Change(
            autotune.line, f"the autotuner under {', '.join(kernel.wrappers) or 'its wrapper'} reached at import "
            "(_tileiropt_autotuner: through .fn, __wrapped__ or the one autotuner a wrapper holds)",
            "the package's own wrapper sits above the autotuner; the TileIR configs go into the list the kernel is "
            "tuned with, reached as the tool's replay reaches it; where none is found there, none is added"))
    ctas = space.num_ctas
    owner = f"{autotune.package}(...)" if autotune.package else "its autotuner"
    tiles = tile_sizes(space, [n for n in autotune.config_names if n in params])
    try:
        if autotune.package:
            raise Unresolvable(f"{autotune.package} is a package's own autotuner")
        values = resolve_configs(model.scan.tree, model.scan.configs_nodes.get(kernel.name), model.module.triton_names)
    except Unresolvable as exc:
        combos = covering_combinations(space, ctas, tiles)
        first = max(1, cap // len(combos))
        plan.report.configs_added_at_most = first * len(combos)
        plan.block.extend(_extend(kernel.name, attributes, _crossed_list(
            crossed_source(f"{attributes[0]}.configs", first=first), combos, bool(tiles), names),
            autotune.package is not None or reached))
        plan.report.changes.append(Change(
            autotune.line,
            f"TileIR configs crossed at import from at most {first} distinct own configs (the first) of {owner} on "
            f"{target} ({len(combos)} combinations each: occupancy {space.occupancy}, num_ctas {ctas}, num_stages "
            f"{space.num_stages}" + (f", larger {', '.join(tiles)}" if tiles else "") + ")",
            f"its configs are built by code ({exc}); one comprehension crosses the autotuner's actual configs with "
            "literal lever values that cover every value, so the tool never runs the kernel file"))
        _note_persistent(kernel, model, ctas, plan)
        return
    config_names = _config_names(values)
    unknown = [n for n in config_names if n not in params]
    if unknown:
        plan.report.skipped.append(f"TileIR configs not added: configs set {unknown[0]!r}, not a kernel parameter")
        return
    combos = covering_combinations(space, ctas, tiles, at_least=cap // max(len(distinct_rows(values)), 1))
    rows = crossed_rows(values, combos, cap)
    plan.block.extend(_extend(kernel.name, attributes, _crossed_list(
        crossed_source(f"{attributes[0]}.configs", rows, len(values)), combos, bool(tiles), names), reached))
    crossed = [values[index] for index in rows]
    plan.report.configs_added = added = crossed_count(crossed, combos)
    # the combinations of int lever values (`ctas`, `space.num_stages`): neither hint is None here
    used_ctas = sorted({c.num_ctas for c in combos if c.num_ctas is not None})
    used_stages = sorted({c.num_stages for c in combos if c.num_stages is not None})
    plan.report.changes.append(Change(
        autotune.line,
        f"{added} TileIR configs added to the autotune space of {target}: "
        + (f"its {len(values)} own configs" if len(rows) == len(values) else
           f"{len(rows)} of its {len(values)} own configs (those at {', '.join(map(str, rows))})")
        + f" crossed with {len(combos)} combinations of occupancy {sorted({c.occupancy for c in combos})}, "
        f"num_ctas {used_ctas}, num_stages {used_stages}"
        + (f", larger {', '.join(tiles)}" if tiles else "")
        + (f" ({len(rows) * len(combos) - added} left out: their tile would be smaller than the config's own)"
           if added < len(rows) * len(combos) else "")
        + (f"; more than max_configs ({cap}): trying every lever value once takes {len(combos)} combinations"
           if added > cap else ""),
        "TileIR tunes occupancy and 2-CTA mode; num_stages is a cost hint; larger tiles suit CGA-level tiles; "
        f"the kernel's own {len(values)} configs are kept first; every lever value is tried at least once"
        + ("" if len(rows) == len(values) else
           f"; at most {cap} added (max_configs): own configs the crossing makes alike (it sets num_stages and "
           "num_ctas) count once, and those crossed hold every meta-parameter and num_warps value within the cap "
           "where they can")))
    _note_persistent(kernel, model, used_ctas, plan)


def _note_persistent(kernel: KernelInfo, model: FileModel, ctas: list[int], plan: KernelPlan) -> None:
    """Why a persistent kernel's 2-CTA configs are added as they are, without a guard on its grid."""
    step = model.persistent_step(kernel)
    if step is not None and any(c > 1 for c in ctas):
        plan.report.changes.append(Change(
            kernel.line, f"2-CTA configs on a persistent kernel: under num_ctas=2 each of its {step} programs takes "
            "two SMs", "as in NVIDIA's port of tutorial 09: the autotuner times each 2-CTA config as launched, so "
            "one that oversubscribes the SMs is chosen only where it is the faster"))


def plan_hint_only(kernel: KernelInfo, record: KernelRecord, space: Space, cap: int, bind: str, target: str,
                    plan: KernelPlan, names: FileNames) -> None:
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


def hint_autotune_asked(kernel: KernelInfo, record: KernelRecord, asked: tuple[str, ...]) -> bool:
    """Whether the user asked for a hint-only autotuner on this kernel (`--hint-autotune NAME`, or `all`). A kernel
    that writes its own inputs gets one only when named: every trial would run it again on its own outputs."""
    return kernel.name in asked or ("all" in asked and not record.in_place_params)


def in_place_note(kernel: KernelInfo, record: KernelRecord) -> str:
    """Why `--hint-autotune all` passed over a kernel that writes its own inputs."""
    return (f"no hint autotune: it writes its own inputs ({', '.join(record.in_place_params)}), which every trial "
            f"would run it on again; `--hint-autotune {kernel.name}` adds one that restores them between trials")


def method_calls(tree: ast.Module, kernel: str, method: str) -> list[tuple[int, set[str]]]:
    """(line, keywords) of each `kernel.<method>(...)` call of the file, in order. `kernel.warmup(...)`: a launch
    compiled ahead (its options are compile options, as a launch's are), then run as a compiled kernel that takes
    none."""
    return sorted(((node.lineno, {k.arg or "**" for k in node.keywords}) for node in ast.walk(tree)
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
                   and isinstance(node.func.value, ast.Name) and node.func.value.id == kernel), key=lambda c: c[0])


def plan_launch_hints(kernel: KernelInfo, kernel_class: str, occupancy: int | None, release_label: str,
                      flag: str, plan: KernelPlan, tree: ast.Module) -> None:
    """The TileIR hint each launch site of a kernel without autotuner passes under the gate, as a literal read
    from the gate's module-level value (`flag`): the author's launch (its num_warps, num_stages, block sizes) is
    kept, and no autotuner is added."""
    if occupancy is None:
        plan.report.skipped.append(f"no TileIR hint at its launch: {release_label} gives {kernel_class} kernels "
                                   "TileIR's default occupancy (1)")
        return
    warmups = sorted(call for name in kernel.names for call in method_calls(tree, name, "warmup"))
    if not kernel.launches and not warmups:
        ran = next((name for name in kernel.names if method_calls(tree, name, "run")), None)
        plan.report.skipped.append(
            f"no TileIR hint at its launch: it is launched through {ran}.run(...) here, which the tool does "
            "not rewrite" if ran is not None else "no TileIR hint at its launch: it is "
            "launched from another file (a hint goes where the launch is)")
        return
    if "occupancy" in {p.name for p in kernel.params}:
        plan.report.skipped.append("no TileIR hint at its launch: a parameter of the kernel is named occupancy")
        return
    sites = [(site.line, set(site.kwargs)) for site in kernel.launches] + warmups
    sites = sorted((site for site in sites if not {"occupancy", "**"} & site[1]), key=lambda site: site[0])
    if not sites:
        plan.report.skipped.append("no TileIR hint at its launch: its launches pass their own occupancy, or spread "
                                   "options of their own (`**...`) that may hold it")
        return
    hints = {"occupancy": occupancy}
    plan.launch_hints.update({line: hints for line, _ in sites})
    plan.report.hint_through = list(kernel.wrappers)  # a wrapper may drop it: checked where the TileIR code runs
    plan.launched_as = list(kernel.names)
    lines = ", ".join(f"L{line}" + (" (.warmup)" if (line, keywords) in warmups else "") for line, keywords in sites)
    passed = sorted({name for _, keywords in sites for name in keywords if name in LAUNCH_OPTIONS})
    plan.report.changes.append(Change(
        sites[0][0],
        f"occupancy {occupancy} at its launch{'es' if len(sites) > 1 else ''} under the gate ({lines}): "
        f"{hint_splat(hints, flag)}; no autotuner added" + (
            f"; it passes through {', '.join(kernel.wrappers)}: whether it reaches the kernel is checked where the "
            "TileIR code runs" if kernel.wrappers else ""),
        f"launched with fixed options{' (' + ', '.join(passed) + ')' if passed else ''} and no autotuner, so the "
        f"author's launch is kept; {occupancy} is {release_label}'s starting occupancy for {kernel_class} kernels "
        f"(TileIR's default is 1); `--hint-autotune {kernel.name}` added to the same `tileiropt run` (or `apply`) "
        f"command, or `hint_autotune = [\"{kernel.name}\"]` in a project, searches it instead"))


def plan_tma_twin(model: FileModel, kernel: KernelInfo, kernel_class: str, function: cst.FunctionDef,
              plan: KernelPlan) -> TmaResult | None:
    """The TMA twin of a dot kernel, set on the plan: the TMA twin becomes `<name>_tileir`, the
    pointer kernel (the math-only twin, or the original) `<name>_tileir_pointer`."""
    if kernel_class != "dot":
        return None
    if not kernel.is_entry:
        plan.report.skipped.append("no TMA twin: a device helper (its tiles come from its caller's pointers)")
        return None
    if kernel.made_by == "assignment":
        plan.report.skipped.append(
            f"no TMA twin: the kernel is made by assignment ({kernel.jit_decorator} at module level), which a copy "
            "of its def would not carry; its loads stay pointer loads (its other TileIR code is added)")
        return None
    tma = plan_tma(model, kernel, function)
    # each reason once (two loads on one line give the same one)
    plan.report.skipped.extend(s for s in dict.fromkeys(tma.skipped) if s not in plan.report.skipped)
    if tma.twin is None:
        return None
    name, pointer = twin_names(kernel.name)
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


def file_names(info: ModuleInfo, tree: ast.Module | None = None) -> FileNames:
    """The gate's name in this file (`is_tileir` unless the file has its own) and its name for the triton module
    (`triton` when imported as such; "triton" with an import of its own when the file has none). The names of the
    gate's values (`TILEIR`, `LOG2E`) are read inside kernels and at launches, so they avoid every name the file
    uses anywhere (`tree`): a parameter or local `TILEIR` would shadow the module's."""
    defined = set(info.module_functions) | set(info.definitions)
    used = set(defined)
    if tree is not None:
        used |= {node.id if isinstance(node, ast.Name) else node.arg for node in ast.walk(tree)
                 if isinstance(node, (ast.Name, ast.arg))}
    triton_name = "triton" if "triton" in info.triton_names else min(info.triton_names, default="triton")
    flag = next(name for name in sorted(FLAGS, key=len) if name not in used)
    log2e = next(name for name in LOG2E_NAMES if name not in used)
    levers = next(name for name in LEVER_NAMES if not any(
        d == name or d.startswith(name + "_") for d in defined))
    return FileNames(gate_name(defined), triton_name, imports_triton=bool(info.triton_names), flag=flag, log2e=log2e,
                     levers=levers)

