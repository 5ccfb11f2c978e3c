"""Phase 2: classify every Triton kernel (dot / norm / elementwise / reduction) and lint it for TileIR.

The class follows the decision tree of the TileIR workflow, on evidence found in the syntax tree
(helpers called by the kernel count, transitively):

    tl.dot / tl.dot_scaled?                    -> dot        (TMA + 2CTA + occupancy + larger tiles)
    reduction + a statistic that scales/shifts -> norm       (high occupancy)
    loaded elements?
    reduction (or cross-program atomics, or a
    zeroed accumulator summing loaded data
    across loop iterations)?                   -> reduction  (high occupancy)
    otherwise                                  -> elementwise (occupancy + num_stages)

`classify_paths` is what `run` and `report` call; `classify_file` and `classify_source` do one file. The
records of a file are computed once per release and kept on its model (`FileModel.records`); apply reads them
from there (`syntax_records`), and the IR check works on copies.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tileiropt.classify.discovery import KernelInfo, Scan
from tileiropt.classify.facts import TL, FactsBuilder, FunctionFacts
from tileiropt.classify.helpers_reached import helper_facts, imported_helper
from tileiropt.classify.ir.check import check_file, ir_codes, ir_finding, same_file, source_certain_codes
from tileiropt.classify.ir.sandbox import Registry
from tileiropt.classify.lint_cache import LintCache
from tileiropt.classify.model import FileModel, FileModels
from tileiropt.classify.parallel import MAX_JOBS, Workers, rules_of
from tileiropt.classify.params import is_size_param
from tileiropt.classify.rules import ALL_RULES, Finding, KernelContext, Rule, select_rules, suppressed
from tileiropt.errors import UserError
from tileiropt.harness.gate import optimized_original
from tileiropt.output import to_jsonable
from tileiropt.releases import Release, newest
from tileiropt.schema import ERROR, NOT_RUN, PASS

CLASSES = ("dot", "norm", "elementwise", "reduction")
STRATEGIES = {
    "dot": "TMA + 2CTA + occupancy + larger tiles",
    "norm": "high occupancy",
    "elementwise": "occupancy + num_stages",
    "reduction": "high occupancy",
}
MAX_EVIDENCE = 12
_ACCUMULATING_ATOMICS = frozenset({"tl.atomic_add", "tl.atomic_max", "tl.atomic_min"})


@dataclass
class Evidence:
    line: int
    text: str


@dataclass
class KernelRecord:
    """One JIT function: its class, why, and its lint findings. JSON: see `to_json` (key "class")."""

    file: str
    kernel: str
    line: int
    kernel_class: str  # "dot" | "norm" | "elementwise" | "reduction"
    confidence: float  # 0..1, a score of how direct the deciding evidence is (not a calibrated probability)
    evidence: list[Evidence]
    strategy: str
    is_entry: bool
    persistent: bool  # a persistent loop over tiles (for ... in tl.range(pid, total, NUM_SMS))
    uses_tma: bool  # tensor descriptors (device or host) already in use
    uses_block_ptr: bool  # tl.make_block_ptr (13.1: unsupported; 13.4+: emulated, slow)
    findings: list[Finding]
    tensor_of_pointer_lines: list[int] = field(default_factory=list)  # block-shaped pointer loads/stores
    calls: list[str] = field(default_factory=list)  # JIT helpers it calls
    pointer_params: list[str] = field(default_factory=list)  # parameters used as addresses (helpers followed)
    size_params: list[str] = field(default_factory=list)  # integer problem sizes (never an address)
    in_place_params: list[str] = field(default_factory=list)  # pointers both read and written
    atomic_lines: list[int] = field(default_factory=list)  # atomic updates (a helper's: the call line)
    ir: dict[str, Any] | None = None  # the IR check of an entry kernel (status, specializations, ...)
    made_by: str = "decorator"  # "decorator" (`@triton.jit`) | "assignment" (`k = triton.jit(k)` at module level)
    bound_to: str | None = None  # made by assignment: the module-level name holding it, where not the def's

    def to_json(self) -> dict[str, Any]:
        data = to_jsonable(self)
        data["class"] = data.pop("kernel_class")
        order = ["file", "kernel", "line", "class", "confidence", "evidence", "strategy", "is_entry", "persistent",
                 "uses_tma", "uses_block_ptr", "findings", "tensor_of_pointer_lines", "calls", "pointer_params",
                 "size_params", "in_place_params", "atomic_lines", "ir"]
        if self.made_by != "decorator":  # said where it says something: a decorated kernel's keys are as they were
            order += ["made_by", "bound_to"]
        return {key: data[key] for key in order}


@dataclass
class FileResult:
    file: str
    status: str  # PASS: parsed (`kernels` may be empty); NOT_RUN: no Triton kernel in it; ERROR: not parsed
    kernels: list[KernelRecord]
    message: str | None = None  # why a file has no records (parse error, no kernel)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "status": self.status, "message": self.message,
                "kernels": [k.to_json() for k in self.kernels]}


# --------------------------------------------------------------------------- entry points


def classify_paths(paths: Iterable[Path | str], select: list[str] | None = None,
                   ignore: list[str] | None = None, release: Release | None = None, ir: bool = True,
                   dtypes: list[str] | None = None, models: FileModels | None = None,
                   jobs: int | None = None) -> list[FileResult]:
    """Classify every `*.py` file under `paths` (files or folders, recursive), linting for `release`
    (default: the newest known). `models`: the command's file models, shared with its other phases.

    Raises UserError (exit 2) when a path does not exist; a file that does not parse becomes a
    FileResult with status "error" and the others are still processed.
    """
    rules = select_rules(ALL_RULES, select, ignore)
    return classify_files(collect_files(paths), lambda _: rules, release, ir, dtypes, models, jobs)


def classify_files(files: list[Path], rules_for: Callable[[Path], list[Rule]], release: Release | None = None,
                   ir: bool = True, dtypes: list[str] | None = None, models: FileModels | None = None,
                   jobs: int | None = None) -> list[FileResult]:
    """The results of `files`, in order, each linted with `rules_for(file)`. A file classified before with the same
    inputs is read from the lint cache (`lint_cache.py`); the others are classified here, or, when there are many,
    in `jobs` processes (default: one per core, at most 16), which start on the first files not in the cache while
    the others' keys are still being read, and take a few files at a time (the jobs balance over the processes)."""
    release = release or newest()
    models = models if models is not None else FileModels()
    cache = LintCache(context=lint_context(release, ir, dtypes))
    codes = {path: [rule.code for rule in rules_for(path)] for path in files}
    keys: dict[Path, str] = {}
    results: dict[Path, FileResult] = {}
    workers = Workers(release, ir, dtypes, min(jobs or os.cpu_count() or 1, MAX_JOBS))
    todo: list[Path] = []
    try:
        for index, path in enumerate(files):
            try:
                # the key from the very text classified below (one read: an edit in between cannot mix two versions)
                keys[path] = cache.key(path, models.get(path).source.encode("utf-8", "surrogatepass"), codes[path])
            except UserError:
                pass  # a pipe, a device, an unreadable file: classify_file says why in one line
            else:
                found = cache.get(keys[path])
                if found is not None:
                    results[path] = found
                    continue
            todo.append(path)
            workers.offer(todo, codes, unread=len(files) - index - 1)
        workers.offer(todo, codes, unread=0)
        options = IROptions(registry=Registry(), dtypes=dtypes) if ir else None
        done = {path: classify_file(path, rules=rules_of(codes[path]), release=release, ir=options, models=models)
                for path in todo}  # what no worker took: few files, classified here
        done.update(workers.results())
    finally:
        workers.close()
    for path, result in done.items():
        results[path] = result
        if path in keys:
            cache.put(keys[path], result)
    return [results[path] for path in files]


def lint_context(release: Release, ir: bool, dtypes: list[str] | None) -> dict[str, Any]:
    """What a file's results depend on besides its bytes, its imports and its rules (`LintCache.key`)."""
    from tileiropt.check.machine import versions
    from tileiropt.engine.resume import tool_digest

    resolved = hashlib.sha256(repr(release).encode()).hexdigest()  # every field, inherited tables included
    return {"release": release.version, "resolved": resolved, "ir": ir, "dtypes": dtypes, "tool": tool_digest(),
            "versions": versions(release.version)}


def collect_files(paths: Iterable[Path | str]) -> list[Path]:
    files: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UserError("no such file or folder", file=str(path), hint="check the path")
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.py")
                           if p.is_file() and not _hidden(p, path) and not _prepared_copy(p))
        else:
            found = [path]
        for file in found:
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                files.append(file)
    return files


def _prepared_copy(path: Path) -> bool:
    """`x_tileir.py` beside `x.py`: apply's output, found in a folder, is not a kernel file of its own."""
    return optimized_original(path) is not None


def _hidden(path: Path, root: Path) -> bool:
    """Skip dot-folders (.git, .venv) and __pycache__ below a scanned folder."""
    parts = path.relative_to(root).parts[:-1]
    return any(part.startswith(".") or part == "__pycache__" for part in parts)


NO_TRITON_IMPORT = "no Triton kernel (no triton import)"  # a file without `triton` and `jit`: not even parsed


def classify_file(path: Path | str, select: list[str] | None = None, ignore: list[str] | None = None,
                  rules: list[Rule] | None = None, release: Release | None = None,
                  ir: IROptions | None = None, models: FileModels | None = None) -> FileResult:
    """Classify the kernels of one file; problems with the file become a FileResult message."""
    try:
        model = models.get(path) if models is not None else FileModel.read(path)
    except UserError as exc:
        return FileResult(file=str(path), status=ERROR, kernels=[], message=str(exc))
    return classify_model(model, select=select, ignore=ignore, rules=rules, release=release, ir=ir)


def classify_source(source: str, path: str = "<string>", select: list[str] | None = None,
                    ignore: list[str] | None = None, rules: list[Rule] | None = None,
                    release: Release | None = None, ir: IROptions | None = None) -> FileResult:
    return classify_model(FileModel(source, path), select=select, ignore=ignore, rules=rules, release=release, ir=ir)


def classify_model(model: FileModel, select: list[str] | None = None, ignore: list[str] | None = None,
                   rules: list[Rule] | None = None, release: Release | None = None,
                   ir: IROptions | None = None) -> FileResult:
    """Classify the kernels of a file's model; a file that does not parse becomes a FileResult message."""
    path = model.path
    if rules is None:
        rules = select_rules(ALL_RULES, select, ignore)
    # A file without both words cannot define a Triton JIT function: skip the parse (speed only).
    if "triton" not in model.source or "jit" not in model.source:
        return FileResult(file=path, status=NOT_RUN, kernels=[], message=NO_TRITON_IMPORT)
    try:
        if not model.module.kernels:
            return FileResult(file=path, status=NOT_RUN, kernels=[], message="no @triton.jit function")
        return FileResult(file=path, status=PASS, kernels=kernel_records(model, rules, release, ir))
    except UserError as exc:
        return FileResult(file=path, status=ERROR, kernels=[], message=str(exc))
    except (RecursionError, MemoryError):
        return FileResult(file=path, status=ERROR, kernels=[], message=str(TOO_DEEP(path)))


def TOO_DEEP(path: str) -> UserError:  # noqa: N802 - reads as the error it builds
    """The one-line error for a file whose expressions are nested too deeply to analyse."""
    return UserError("expressions nested too deeply to analyse", file=path,
                     hint="split the deepest expression into named parts")


@dataclass
class IROptions:
    """How classify runs the IR check: a registry shared by the files of one run, and the dtypes to lower
    with (a project's; None: assumed)."""

    registry: Registry = field(default_factory=Registry)
    dtypes: list[str] | None = None


def kernel_records(model: FileModel, rules: list[Rule], release: Release | None = None,
                   ir: IROptions | None = None) -> list[KernelRecord]:
    """Classify and lint the kernels of a file for `release` with `rules`; with `ir`, the IR check decides the
    release-dependent findings on the lines it lowers."""
    release = release or newest()
    codes = {rule.code for rule in rules}
    records = [replace(record, findings=[f for f in record.findings if f.code in codes])
               for record in syntax_records(model, release)]
    if ir is not None:
        _merge_ir(model.scan, records, rules, release, ir, model.facts)
    return records


def syntax_records(model: FileModel, release: Release) -> list[KernelRecord]:
    """The file's records with every rule's findings at syntax level, computed once per release and kept on the
    model (a caller filters or copies them, never changes them)."""
    key = f"{release.version} ({release.path})"
    if key not in model.records:
        model.records[key] = _records(model, release)
    return model.records[key]


def _records(model: FileModel, release: Release) -> list[KernelRecord]:
    scanned = model.scan
    builder = model.facts
    records = []
    for kernel, node in zip(scanned.module.kernels, scanned.kernel_nodes, strict=True):
        own = builder.facts(node)
        everything = helper_facts(own, model)
        record = _classify(kernel, own, everything, scanned)
        use = model.params.use(node)
        record.pointer_params = [p.name for p in kernel.params if p.name in use.pointers]
        record.size_params = [p.name for p in kernel.params
                              if is_size_param(p.name, p.annotation, p.default, use.pointers)]
        record.in_place_params = use.in_place
        record.atomic_lines = use.atomic_lines
        context = KernelContext(kernel=kernel, node=node, facts=own, kernel_class=record.kernel_class,
                                scan=scanned, release=release)
        record.findings = _lint(context, ALL_RULES, scanned) + _imported_errors(own, model, release)
        records.append(record)
    return records


def rejected_code(name: str, records: dict[str, KernelRecord]) -> tuple[str | None, list[Finding]]:
    """The errors that make the TileIR compiler reject kernel `name`: its own, else those of the first JIT helper of
    the file it calls, directly or through others (a helper is linted on its own, and lowering the kernel lowers
    it too), with that helper's name (None: the kernel's own)."""
    seen, waiting = set(), [name]
    while waiting:
        current = waiting.pop(0)
        if current in seen or current not in records:
            continue
        seen.add(current)
        errors = [f for f in records[current].findings if f.severity == "error"]
        if errors:
            return (None if current == name else current), errors
        waiting += records[current].calls
    return None, []


_IN_PROGRESS: set[str] = set()  # modules whose records are being made (a cycle of imports ends there)


def _imported_errors(own: FunctionFacts, model: FileModel, release: Release) -> list[Finding]:
    """An error of a JIT helper the kernel imports from its package's other modules, at the call's line: what the
    TileIR compiler rejects in the helper, it rejects in the kernel (a helper of the kernel's own file is linted
    with the file, and apply follows it). The IR check, where it lowers the call's line, decides it as its own."""
    functions = {node.name for node in model.scan.kernel_nodes}
    found: list[Finding] = []
    reported: set[str] = set()  # one finding a helper, at its first call
    key = str(Path(model.path).resolve())
    _IN_PROGRESS.add(key)
    try:
        for line, callee in own.helper_calls:
            if callee in functions or callee in reported:
                continue
            helper = imported_helper(model, callee)
            if helper is None or str(Path(helper[0].path).resolve()) in _IN_PROGRESS:
                continue
            owner, node = helper
            inner, errors = rejected_code(node.name, {r.kernel: r for r in syntax_records(owner, release)})
            if errors:
                reported.add(callee)
                error = errors[0]
                via = f"{callee}, through {inner}" if inner else callee
                found.append(Finding(error.code, "error", line, f"{error.message} (in {Path(owner.path).name}:"
                                     f"{error.line}, in helper {via})", error.hint))
    finally:
        _IN_PROGRESS.discard(key)
    return found


def _merge_ir(scanned: Scan, records: list[KernelRecord], rules: list[Rule], release: Release, ir: IROptions,
              builder: FactsBuilder) -> None:
    """Replace syntax findings of IR-visible features on the lines the TTIR covers with the IR's own."""
    pointers = {r.kernel: set(r.pointer_params) for r in records}
    result = check_file(scanned, pointers, release, ir.registry, ir.dtypes, builder)
    by_name = {r.kernel: r for r in records}
    if result.unavailable:
        for record in records:
            if record.is_entry:
                record.ir = {"status": NOT_RUN, "reason": result.unavailable, "needed": True}
        return
    selected = {rule.code for rule in rules}
    decided, certain = ir_codes(), source_certain_codes()
    path = scanned.module.path
    covered: set[int] = set()
    for kernel_ir in result.kernels.values():
        by_name[kernel_ir.kernel].ir = kernel_ir.summary()
        for file, lines in kernel_ir.lines.items():
            if same_file(file, path):
                covered |= lines
    spans = [(k.first_line, k.end_line, k.name) for k in scanned.module.kernels]
    calls = _triton_call_spans(scanned)
    for record in records:
        record.findings = [f for f in record.findings if not (f.code in decided and f.line in covered)]
    for kernel_ir in result.kernels.values():
        for hit in kernel_ir.hits:
            finding = ir_finding(hit, path)
            if finding.code not in selected:
                continue
            owner = by_name[kernel_ir.kernel]
            if hit.file is not None and hit.line is not None and same_file(hit.file, path):  # a located op: both
                owner = next((by_name[name] for first, last, name in spans if first <= hit.line <= last), owner)
            else:
                finding.line = kernel_ir.call_line(hit.function, path) or owner.line
            finding.line = _call_start(calls, finding.line)
            if suppressed(finding, scanned.text.line(finding.line)):
                continue
            if finding.code in certain and any((f.code, f.line) == (finding.code, finding.line)
                                               for f in owner.findings):
                continue  # the syntax rule's finding stands (SOURCE_CERTAIN)
            if all((f.code, f.line, f.message) != (finding.code, finding.line, finding.message)
                   for f in owner.findings):
                owner.findings.append(finding)
    for record in records:
        record.findings.sort(key=lambda f: (f.line, f.code))


# --------------------------------------------------------------------------- classification


def _triton_call_spans(scanned: Scan) -> list[tuple[int, int]]:
    """(first line, last line) of every call in the file's JIT functions: an op's location in the TTIR may be
    any line of a call written over several lines; findings are reported at the line the call starts on."""
    return [(node.lineno, node.end_lineno or node.lineno) for fn in scanned.kernel_nodes for node in ast.walk(fn)
            if isinstance(node, ast.Call) and (node.end_lineno or node.lineno) > node.lineno]


def _call_start(spans: list[tuple[int, int]], line: int) -> int:
    """The first line of the innermost multi-line call holding `line` (the line itself when none does)."""
    holding = [(last - first, first) for first, last in spans if first <= line <= last]
    return min(holding)[1] if holding else line


def _collect(everything: list[tuple[FunctionFacts, str | None]], attribute: str) -> list[Evidence]:
    items = []
    for facts, helper in everything:
        for line, text in getattr(facts, attribute):
            items.append(Evidence(line, f"{text} (in helper {helper})" if helper else text))
    return items


def _classify(kernel: KernelInfo, own: FunctionFacts, everything: list[tuple[FunctionFacts, str | None]],
              scanned: Scan) -> KernelRecord:
    dots = _collect(everything, "dots")
    reductions = _collect(everything, "reductions")
    scans = _collect(everything, "scans")
    norms = _collect(everything, "normalisation")
    accumulations = _collect(everything, "accumulations")
    atomics = [Evidence(a.line, f"{a.name} accumulates across programs (in helper {helper})" if helper
                        else f"{a.name} accumulates across programs")
               for facts, helper in everything for a in facts.accesses
               if a.kind == "atomic" and a.name in _ACCUMULATING_ATOMICS]
    accesses = [a for facts, _ in everything for a in facts.accesses]
    stored = [value for facts, _ in everything for _, _, value in facts.stored]
    guides = [value for facts, _ in everything for value in facts.guides]
    index_only = bool(reductions) and not (scans or atomics or accumulations or norms) and bool(stored) and all(
        value.has("data") and not value.has("stat") for value in stored) and not any(
        value.has("stat") for value in guides)  # stores write loaded data as is, placed (not picked) by the reduction

    evidence: list[Evidence] = []
    if index_only and not dots:  # a prefix sum of offsets placing the data: the data itself is moved, not reduced
        evidence += [Evidence(e.line, f"{e.text} reduction, its result only places data (where stores write)")
                     for e in reductions]
        reductions = []
    if dots:
        kernel_class = "dot"
        direct = any(facts is own for facts, _ in everything if facts.dots)
        confidence = 0.95 if direct else 0.85
        evidence += [Evidence(e.line, f"{e.text}: matrix multiply") for e in dots]
    elif norms and (reductions or scans):
        kernel_class = "norm"
        confidence = min(0.95, 0.75 + 0.05 * len({e.line for e in norms}))
        evidence += [Evidence(e.line, f"{e.text} reduction") for e in reductions] + norms
    elif reductions or scans or atomics or accumulations:
        kernel_class = "reduction"
        confidence = 0.85 if reductions else 0.65
        evidence += [Evidence(e.line, f"{e.text} reduction, result not used to normalise elements")
                     for e in reductions]
        evidence += [Evidence(e.line, f"{e.text} scan") for e in scans] + atomics + accumulations
    else:
        kernel_class = "elementwise"
        confidence = 0.9 if accesses else 0.6
        if accesses:
            lines = sorted({a.line for a in accesses})
            what = "what is stored is not reduced" if index_only else "no reduction"
            evidence.append(Evidence(lines[0], f"{len(accesses)} loads/stores, {what} and no dot"))
        else:
            evidence.append(Evidence(kernel.line, "no memory access, no reduction and no dot (a math helper)"))
    if kernel_class == "dot" and (reductions or norms):
        evidence += [Evidence(e.line, f"{e.text} reduction (inside a dot kernel)") for e in reductions[:2]]

    persistent = _collect(everything, "persistent_loops")
    descriptors = _collect(everything, "descriptors")
    host_descriptors = _host_descriptors(kernel, scanned)
    block_pointers = _collect(everything, "block_pointers")
    evidence += persistent + [Evidence(e.line, f"TMA: {e.text}") for e in descriptors[:2]] + host_descriptors
    evidence += [Evidence(e.line, f"block pointer: {e.text}") for e in block_pointers[:2]]
    pointer_lines = sorted({a.line for a in own.accesses if a.tile and a.name in ("tl.load", "tl.store")})
    if kernel_class == "dot" and pointer_lines:
        evidence.append(Evidence(pointer_lines[0], f"tensor-of-pointer loads/stores at lines "
                                                   f"{', '.join(map(str, pointer_lines[:6]))}"))
    if kernel.calls:
        evidence.append(Evidence(kernel.line, f"calls JIT helpers: {', '.join(kernel.calls)}"))

    return KernelRecord(
        file=scanned.module.path,
        kernel=kernel.name,
        line=kernel.line,
        kernel_class=kernel_class,
        confidence=round(confidence, 2),
        evidence=_dedupe(evidence)[:MAX_EVIDENCE],
        strategy=STRATEGIES[kernel_class],
        is_entry=kernel.is_entry,
        persistent=bool(persistent),
        uses_tma=bool(descriptors or host_descriptors),
        uses_block_ptr=bool(block_pointers),
        findings=[],
        tensor_of_pointer_lines=pointer_lines if kernel_class == "dot" else [],
        calls=list(kernel.calls),
        made_by=kernel.made_by, bound_to=kernel.bound_to,
    )


def _host_descriptors(kernel: KernelInfo, scanned: Scan) -> list[Evidence]:
    """Host-side TensorDescriptor objects built in a function that launches this kernel."""
    found: list[Evidence] = []
    wrappers = {id(w): w for launch in kernel.launches
                if (w := scanned.launch_functions.get((kernel.name, launch.line))) is not None}
    for wrapper in wrappers.values():
        for node in ast.walk(wrapper):
            if isinstance(node, ast.Call):
                func = node.func
                target = func.value if isinstance(func, ast.Attribute) else func
                if isinstance(target, ast.Name) and target.id == "TensorDescriptor":
                    found.append(Evidence(node.lineno, f"TMA: host TensorDescriptor in {wrapper.name}"))
                    return found
    return found


def _dedupe(items: list[Evidence]) -> list[Evidence]:
    seen: set[tuple[int, str]] = set()
    result = []
    for item in items:
        key = (item.line, item.text)
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result


# --------------------------------------------------------------------------- lint


def _lint(context: KernelContext, rules: list[Rule], scanned: Scan) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[str, int, str]] = set()
    for rule in rules:
        for finding in rule.findings(context):
            key = (finding.code, finding.line, finding.message)
            if key in seen or suppressed(finding, scanned.text.line(finding.line)):
                continue
            seen.add(key)
            findings.append(finding)
    findings.sort(key=lambda f: (f.line, f.code))
    return findings


def has_errors(results: list[FileResult]) -> bool:
    """True when any kernel has an error-severity finding (for --strict)."""
    return any(f.severity == "error" for r in results for k in r.kernels for f in k.findings)


__all__ = ["CLASSES", "STRATEGIES", "TL", "Evidence", "FileResult", "IROptions", "KernelRecord", "classify_file",
           "classify_model", "classify_paths", "classify_source", "collect_files", "has_errors", "kernel_records",
           "syntax_records"]
