"""Phase 3: rewrite a kernel file for TileIR without changing its PTX path.

The rewrite changes only what it must, as an expert writes it: an `is_tileir()` gate after the imports (`gate`);
after each kernel an `if is_tileir():` block with its TileIR configs (one comprehension crossing the kernel's own
config list with literal lever values), and a `<name>_tileir` twin only for a new memory access (TMA); a math
rewrite in place, behind the gate's constexpr; a kernel launched without autotuner keeps its launch, which gets
the TileIR hint as a literal under the gate. With the gate off every branch taken is the original code, so the
module is the original one. What the tool needs to check the file (turning the TileIR code on under PTX, dropping
hints) is in its harness, not here.
"""

from __future__ import annotations

import difflib
import functools
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import libcst as cst
import libcst.matchers as matchers

from tileiropt.apply.assigned import follow_assignments
from tileiropt.apply.backend_checks import cuda_checks, widen
from tileiropt.apply.launch_sites import hinted_launches
from tileiropt.apply.math_rewrites import LOG2E
from tileiropt.apply.nested import (
    GUARDED_TRITON,
    Statement,
    binding_lines,
    gate_insert_index,
    guarded,
    insert_after,
    kernel_nodes,
    module_statements,
    placement_note,
    triton_imported_before,
    triton_only_in_blocks,
)
from tileiropt.apply.plan import FileNames, KernelPlan, file_names, share_lever_lists
from tileiropt.apply.spaces import (
    DEFAULT_MAX_CONFIGS,
    Space,
    load_spaces,
    space_for_release,
)
from tileiropt.apply.tma_runtime import RUNTIME_NAMES, RUNTIME_SOURCE, runtime_source
from tileiropt.apply.transforms import TRANSFORMS, KernelStep, Transform
from tileiropt.classify.blocks import alternatives_of
from tileiropt.classify.classify import TOO_DEEP, KernelRecord, kernel_records, rejected_code
from tileiropt.classify.discovery import KernelInfo, ModuleInfo
from tileiropt.classify.model import FileModel
from tileiropt.classify.rules import ALL_RULES
from tileiropt.classify.rules.base import Finding
from tileiropt.contract.phase_records import ApplyKernel, Change
from tileiropt.errors import UserError
from tileiropt.harness.gate import (
    GATE_MARKER,
    GATE_NAME,
    HELPER_MODULE,
    gate_comment,
    gate_source,
    helper_import_level,
    optimized_name,
    twinned,
)
from tileiropt.output import writable, write_atomic
from tileiropt.project.model import DEFAULT_ARTIFACTS
from tileiropt.releases import Release, newest

ERROR_RULES = [rule for rule in ALL_RULES if rule.code.startswith("TIR0")]  # a kernel they flag gets no TileIR code
ERROR_CODES = frozenset(rule.code for rule in ERROR_RULES)


@dataclass
class ApplyResult:
    path: str
    output: str | None
    already_prepared: bool
    kernels: list[ApplyKernel]
    source: str
    new_source: str
    written: list[str] = field(default_factory=list)  # files written, backups included
    host: list[Change] = field(default_factory=list)  # changes outside the kernels (backend checks widened)

    @property
    def changed(self) -> bool:
        return self.new_source != self.source

    def diff(self) -> str:
        out = self.output or f"{self.path} (rewritten)"
        return "".join(difflib.unified_diff(self.source.splitlines(keepends=True),
                                            self.new_source.splitlines(keepends=True),
                                            fromfile=self.path, tofile=out))


ClassifyFn = Callable[[ModuleInfo, KernelInfo], str]



def plan_kernels(model: FileModel, module: cst.Module, records: dict[str, KernelRecord],
                 spaces: dict[str, Space], cap: int, classify: ClassifyFn | None = None,
                 release: Release | None = None, transforms: tuple[Transform, ...] = TRANSFORMS,
                 hint_autotune: tuple[str, ...] = ()) -> dict[str, KernelPlan]:
    """A plan per kernel of the file's model (`module`: the file in libcst) from the analysis' records (class,
    pointers, sizes); `classify` overrides the class. `release` (default: the newest known) decides the math
    rewrites and bounds the occupancy hint. Each kernel goes through `transforms` in order. `hint_autotune`: the
    kernels the user asked a hint-only autotuner for (`all`: every one that does not write its own inputs)."""
    release = release or newest()
    info = model.module
    spaces = {name: space_for_release(space, release) for name, space in spaces.items()}
    nodes = kernel_nodes(module, info)
    plans: dict[str, KernelPlan] = {}
    kernel_names = {k.name for k in info.kernels}
    names = file_names(info, model.scan.tree)
    for kernel in info.kernels:
        if twinned(kernel.name) != kernel.name and twinned(kernel.name) in kernel_names:
            continue
        record = records[kernel.name]
        kernel_class = classify(info, kernel) if classify else record.kernel_class
        plan = KernelPlan(ApplyKernel(kernel.name, kernel.line, kernel_class))
        plans[kernel.name] = plan
        node = nodes.get(kernel.name)
        if node is None:
            plan.report.skipped.append("not a module-level function: left alone")
            continue
        plan.node = node
        helper, rejected = rejected_code(kernel.name, records)
        if rejected:  # TileIR configs or twins would only hide it: the TileIR compiler rejects the kernel
            first = rejected[0]
            where = f"it calls {helper}, which has " if helper else ""
            plan.report.skipped.append(f"no TileIR code added: {where}{first.code} (error) at L{first.line}: "
                                       f"{first.message} -- the TileIR compiler would reject this kernel (fix: "
                                       f"{first.hint}; then apply again)")
            continue
        follow_assignments(model, kernel, plan)
        step = KernelStep(model, kernel, record, kernel_class, node, spaces[kernel_class], cap, release, names, plan,
                          twin=node, target=kernel.binding, paths=[kernel.binding], hint_autotune=hint_autotune)
        for transform in transforms:
            transform(step)
        _note_block(kernel, info, plan)
    return plans


def _note_block(kernel: KernelInfo, info: ModuleInfo, plan: KernelPlan) -> None:
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


def rewrite_module(module: cst.Module, plans: dict[str, KernelPlan], names: FileNames, helper_level: int | None = None
                   ) -> cst.Module:
    """The gate before the first definition (the TMA runtime after it, guarded when Triton is optional here), or,
    in a library (`helper_level`: the dots of a relative import), one import of both from the package's helper
    module; each kernel's TileIR block right after its def, inside the module-level block that defines it."""
    launches = hinted_launches(module, plans, names.flag)  # by the lines of the file as read
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
        if needs_runtime and optional_triton:  # the file imports without Triton: the runtime stays in it, guarded
            gate_statements += guarded(_gate_statements(cst.parse_module(runtime_source(_runtime_called(plans)))))
        elif _runtime_called(plans):  # one module beside the file holds it, as NVIDIA's port keeps its TMA code apart
            gate_statements += _gate_statements(cst.parse_module(runtime_import(plans, names.gate)))
    rewrites = any(plan.rewritten is not None for plan in plans.values())
    if rewrites or launches:  # hints alone read a plain value, the constexprs in-place rewrites read need Triton
        late = rewrites and not optional_triton and names.imports_triton and not triton_imported_before(
            module, gate_index)  # the file imports Triton below the gate's place: the constexprs import it themselves
        triton = GUARDED_TRITON if optional_triton or late else names.triton
        text = (f"import triton as {GUARDED_TRITON}\n\n" if late else "") + gate_constants(
            names, triton, rewrites=rewrites, hints=bool(launches))
        constants = _gate_statements(cst.parse_module(text))
        gate_statements += guarded(constants) if optional_triton and rewrites else constants
    levers = share_lever_lists(plans, names.levers)
    if levers:
        gate_statements += _gate_statements(cst.parse_module(levers))
    blocks = {id(_anchor(module, plan)): _with_twins(_block_statement(name, plan.block, names.gate), plan)
              for name, plan in plans.items() if plan.block and plan.node is not None}
    before, after = list(module.body[:gate_index]), list(module.body[gate_index:])  # no def precedes the gate
    module = module.with_changes(body=[*before, *gate_statements, *insert_after(after, blocks)])
    rewritten: dict[int, Callable[[Any], cst.CSTNode]] = {
        id(plan.node): functools.partial(_replacement, plan.rewritten) for plan in plans.values()
        if plan.rewritten is not None and plan.node is not None}
    rewritten.update(launches)
    module = module.visit(_Replaced(rewritten)) if rewritten else module
    following = len(before) + len(gate_statements)  # last: the nodes found by identity above are all placed
    definition = matchers.FunctionDef() | matchers.ClassDef()
    if following < len(module.body) and gate_statements and (matchers.findall(gate_statements[-1], definition)
                                                              or matchers.matches(module.body[following], definition)):
        # two blank lines between the gate and what follows where either is a definition, as PEP 8 asks
        body = list(module.body)
        body[following] = _two_blank_lines_before(body[following])
        module = module.with_changes(body=body)
    return module


def _two_blank_lines_before(statement: Statement) -> Statement:
    """`statement` with at least two blank lines before its comments (its own blank lines kept)."""
    lines = list(statement.leading_lines)
    blank = next((i for i, line in enumerate(lines) if line.comment is not None), len(lines))
    missing = 2 - blank
    if missing <= 0:
        return statement
    return statement.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * missing + lines)


def _anchor(module: cst.Module, plan: KernelPlan) -> cst.CSTNode:
    """The statement a kernel's TileIR block follows: its def, or a module-level binding of the name the block reads
    (`plan.after_binding`: an autotuner made by a call after the def, the last of a kernel made by assignment)."""
    if plan.after_binding is None:
        assert plan.node is not None
        return plan.node
    binds = binding_lines(module.body if plan.after_index is None else module_statements(module.body),
                          plan.after_binding)
    assert binds, plan.after_binding  # found at module level by `call_form_autotuners` / `assignment_index`
    return binds[-1 if plan.after_index is None else plan.after_index]


def _replacement(node: cst.CSTNode, _: cst.CSTNode) -> cst.CSTNode:
    """`node`, whatever the node it replaces became."""
    return node


class _Replaced(cst.CSTTransformer):
    """Each node whose id is a key replaced by its value called on the node as updated, in one pass (the kernels
    rewritten in place, the launches given their hints)."""

    def __init__(self, replacements: dict[int, Callable[[Any], cst.CSTNode]]):
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
        replace = self.replacements.get(id(original))
        return replace(updated) if replace is not None else updated


def gate_constants(names: FileNames, triton: str, rewrites: bool = True, hints: bool = False) -> str:
    """The gate taken once at import, as the file reads it: a constexpr where in-place rewrites read it in kernels
    (with log2(e) beside it; `triton`: the module's name), else a plain value for the launches' hints."""
    if not rewrites:
        return (f"# the gate, taken once at import for the launches' TileIR hints (a launch never calls it)\n"
                f"{names.flag} = {names.gate}()\n")
    constexpr = f"{triton}.language.constexpr"
    comment = ("# the gate, taken once at import: a constexpr for kernels (only the branch it takes is compiled) "
               "and\n# the launches' TileIR hints") if hints else \
        "# the gate as kernels read it: a constexpr, so only the branch it takes is compiled"
    return (f"{comment}\n{names.flag} = {constexpr}({names.gate}())\n"
            f"{names.log2e} = {constexpr}({LOG2E})  # log2(e): exp(x) == exp2(x * {names.log2e})\n")


def helper_import(names: FileNames, plans: dict[str, KernelPlan], level: int) -> str:
    """`from .._tileir import is_tileir[, <the TMA runtime names the blocks call>]` with the gate's comment."""
    imported = [GATE_NAME if names.gate == GATE_NAME else f"{GATE_NAME} as {names.gate}"]
    imported += [name for name in RUNTIME_NAMES if name in _runtime_called(plans)]
    return f"{gate_comment()}\nfrom {'.' * level}{HELPER_MODULE} import {', '.join(imported)}\n"


def runtime_import(plans: dict[str, KernelPlan], gate: str = GATE_NAME) -> str:
    """A single file's TMA runtime, from the helper module written beside it: run from its path (`runpy`), so no
    other `_tileir` module on `sys.path` or already imported can stand in for it."""
    names = [name for name in RUNTIME_NAMES if name in _runtime_called(plans)]
    lines = [f"if {gate}():  # the TMA dispatch the TileIR blocks below call, from tileiropt's module beside this file",
             "    import os", "    import runpy", "",
             '    _tileiropt_folder = os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else '
             'os.getcwd()',
             f'    _tileiropt_runtime = runpy.run_path(os.path.join(_tileiropt_folder, "{HELPER_MODULE}.py"))']
    lines += [f'    {name} = _tileiropt_runtime["{name}"]' for name in names]
    return "\n".join(lines) + "\n"


def _runtime_called(plans: dict[str, KernelPlan]) -> set[str]:
    """The TMA runtime helpers the TileIR blocks call."""
    used = "\n".join(line for plan in plans.values() for line in plan.block)
    return {name for name in RUNTIME_NAMES if f"{name}(" in used}


@functools.lru_cache(maxsize=1)
def helper_source() -> str:
    """A library's helper module (`<package>/_tileir.py`): the gate and the TMA runtime, once for all its files."""
    runtime = cst.Module(body=guarded(_gate_statements(cst.parse_module(RUNTIME_SOURCE)))).code
    docstring = '"""CUDA Tile IR helpers of the optimized kernel files beside or below this module (tileiropt)."""'
    return f"{docstring}\n\n\n{gate_source()}\n\n{runtime.lstrip()}"


def _helper_beside(file: Path, level: int) -> Path:
    """The helper module a file at `file` imports with `level` dots (0: the one beside it, a single file's)."""
    return (file.parents[level - 1] if level else file.parent) / f"{HELPER_MODULE}.py"


def write_helper(result: ApplyResult) -> Path | None:
    """Write the helper module where `result`'s optimized file imports it from: a library's package (its
    relative import's folders up), or a single file's own folder; None when the file imports none."""
    level = helper_import_level(result.new_source) if HELPER_MODULE in result.new_source else None
    if level is None or result.output is None:
        return None
    helper = _helper_beside(Path(result.output), level)
    if not helper.is_file() or helper.read_text(encoding="utf-8", errors="replace") != helper_source():
        write_atomic(helper, helper_source(), "utf-8", replaces=lambda text: GATE_MARKER in text, what="file")
    return helper


def helper_copy(optimized: Path, user_file: Path) -> tuple[Path, Path] | None:
    """Where the helper module `optimized` imports lies, and where it goes when `optimized` replaces `user_file`
    (a library's package, or the single file's own folder); None when it imports none."""
    try:
        level = helper_import_level(Path(optimized).read_bytes())
    except OSError:
        return None
    if level is None:
        return None
    return _helper_beside(Path(optimized), level), _helper_beside(Path(user_file), level)


def copy_helper(optimized: Path, user_file: Path) -> Path | None:
    """After `optimized` was written over `user_file`: the helper module it imports, copied beside the user's file
    or into its package (never over a module of the user's own). None when it imports none."""
    paths = helper_copy(optimized, user_file)
    if paths is None:
        return None
    helper, target = paths
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
                  max_configs: int = DEFAULT_MAX_CONFIGS, models: dict[Path, FileModel] | None = None,
                  hint_autotune: tuple[str, ...] = ()) -> tuple[list[ApplyResult], Path | None]:
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
                                helper_level=level, hint_autotune=hint_autotune)
        except NoKernelFound:
            continue
        results.append(result)
        helper = write_helper(result) or helper
    return results, helper


def _with_twins(block: cst.BaseStatement, plan: KernelPlan) -> cst.BaseStatement:
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
                     release: Release | None = None, helper_level: int | None = None,
                     transforms: tuple[Transform, ...] = TRANSFORMS, hint_autotune: tuple[str, ...] = ()
                     ) -> ApplyResult:
    """Plan and rewrite one module's source; nothing is written. `transforms`: the ones run (all, in order)."""
    return transform_model(FileModel(source, path), spaces=spaces, max_configs=max_configs, classify=classify,
                           release=release, helper_level=helper_level, transforms=transforms,
                           hint_autotune=hint_autotune)


def transform_model(model: FileModel, *, spaces: dict[str, Space] | None = None,
                    max_configs: int = DEFAULT_MAX_CONFIGS, classify: ClassifyFn | None = None,
                    release: Release | None = None, helper_level: int | None = None,
                    transforms: tuple[Transform, ...] = TRANSFORMS, hint_autotune: tuple[str, ...] = (),
                    decided: Mapping[str, Sequence[Finding]] | None = None) -> ApplyResult:
    """Plan and rewrite the file of `model` (parsed with libcst here, once); nothing is written. `helper_level`:
    a library's file, importing the gate from the package's helper module with that many dots. `decided`: each
    kernel's error findings as the classify phase decided them (the IR check confirms or clears a syntax one);
    None: this file's are linted here, at syntax level."""
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
        if decided is not None:  # one verdict per kernel: classify's, where it ran
            records = {name: replace(record, findings=[f for f in decided.get(name, []) if f.code in ERROR_CODES])
                       for name, record in records.items()}
        module = cst.parse_module(source)
        plans = plan_kernels(model, module, records, spaces or load_spaces(), max_configs, classify, release,
                             transforms, hint_autotune)
        jit = {kernel.name for kernel in info.kernels}  # as discovery found them, aliases included
        host = cuda_checks(model.scan.tree, source, jit)
        changed = any(p.block or p.twin or p.rewritten or p.launch_hints for p in plans.values())
        if changed:
            module = rewrite_module(module, plans, file_names(info, model.scan.tree), helper_level)
        new_source = widen(module, jit).code if host else module.code if changed else source
    except RecursionError:
        raise TOO_DEEP(path) from None
    return ApplyResult(path, None, False, [p.report for p in plans.values()], source, new_source, host=host)


INSTALLED_FOLDERS = ("site-packages", "dist-packages")  # where pip and the system put installed packages


def installed_output(path: Path) -> Path | None:
    """The optimized file of a file of an installed package, never written into the package: under the current
    folder's `.tileiropt/optimized/`, in the package's own layout (where `tileiropt run FILE` puts it); None for a
    file that is not installed. The path as given and as its links resolve are both looked at (a package of
    links into a store, as uv's symlink mode or Nix install it, is installed too)."""
    for seen in dict.fromkeys([path.absolute(), path.resolve()]):
        folder = next((parent for parent in seen.parents if parent.name in INSTALLED_FOLDERS), None)
        if folder is not None:
            relative = seen.relative_to(folder)
            return Path.cwd() / DEFAULT_ARTIFACTS / "optimized" / relative.parent / optimized_name(relative.stem)
    return None


def output_path_for(path: Path, output: Path | None, in_place: bool) -> Path:
    if in_place and output is not None:
        raise UserError("--in-place and -o/--output exclude each other", hint="choose one")
    if in_place:
        return path
    return output or installed_output(path) or path.with_name(optimized_name(path.stem))


def apply_file(path: Path, *, output: Path | None = None, in_place: bool = False, dry_run: bool = False,
               spaces: dict[str, Space] | None = None, max_configs: int = DEFAULT_MAX_CONFIGS,
               classify: ClassifyFn | None = None, release: Release | None = None,
               model: FileModel | None = None, helper_level: int | None = None,
               hint_autotune: tuple[str, ...] = (), decided: Mapping[str, Sequence[Finding]] | None = None
               ) -> ApplyResult:
    """Transform one kernel file and write the result (atomically) unless `dry_run`. `model`: the file's model
    when the command has read it already.

    The input is never overwritten unless `in_place`; then the original is kept beside it as
    `<name>.orig` (or `.orig.N` when that name is taken: an existing file is never replaced). Any other
    output replaces only a file tileiropt wrote (its gate marker); links and devices are refused.
    """
    path = Path(path)
    if model is None:
        if not path.exists():
            raise UserError("kernel file not found", file=str(path), hint="check the path")
        model = FileModel.read(path)  # a folder, pipe or device is refused here, in one line
    target = output_path_for(path, output, in_place)
    if target.resolve() == path.resolve() and not in_place:
        raise UserError("the output would overwrite the input", file=str(path),
                        hint="pass --in-place to rewrite the file itself (a .orig backup is kept)")
    result = transform_model(model, spaces=spaces, max_configs=max_configs, classify=classify, release=release,
                             helper_level=helper_level, hint_autotune=hint_autotune, decided=decided)
    result.output = str(target)
    if dry_run or result.already_prepared:  # a prepared file is its own output: nothing to write
        return result
    helper = write_helper(result)  # first: where it cannot be written, the file that imports it is not either
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
        write_atomic(target, result.new_source, model.encoding, what="file",
                     replaces=lambda text: GATE_MARKER in text or text == result.new_source)  # or nothing to lose
        result.written.append(str(target))
    if helper is not None:
        result.written.append(str(helper))
    return result


def free_backup(path: Path, limit: int = 1000) -> Path:
    """`<name>.orig`, or the first `<name>.orig.N` that does not exist yet."""
    candidate = path.with_name(path.name + ".orig")
    for number in range(1, limit):
        if not candidate.exists() and not candidate.is_symlink():
            return candidate
        candidate = path.with_name(f"{path.name}.orig.{number}")
    raise UserError(f"{limit} backups exist already", file=str(path), hint="remove old .orig files")
