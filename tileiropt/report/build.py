"""Build the report's content -- per kernel, the five seed sections -- from the saved records alone.

`build_report(artifacts, kernels)` returns a `Report` of plain dataclasses; `markdown.py` renders
it and `report --format json` prints it. A section whose phase did not run says why: the
phase's own "not run" record, the kernel's stop in `run.json`, or the record file missing.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tileiropt.report.artifacts import APPLY_FILE, CLASSIFY_FILE, Artifacts
from tileiropt.report.library import LibrarySummary, library_summary
from tileiropt.report.verdict import ATTENTION, KernelVerdict, kernel_verdict
from tileiropt.runtime.backends import BACKENDS
from tileiropt.runtime.bench.records import (
    OPTIMIZED,
    ORIGINAL,
    PTX,
    REFERENCE,
    TILEIR,
    TORCH,
    BenchKernel,
    BenchRow,
    dtype_key,
    kernel_from_dict,
)
from tileiropt.runtime.validate.records import ValidationRecord
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS, SCHEMA_VERSION

SEED_CLASS_NAMES = {"dot": "dot-related", "norm": "norm-like", "elementwise": "element-wise",
                    "reduction": "reduction"}
SEED_STRATEGIES = {"dot": "TMA + 2CTA", "norm": "High occupancy", "elementwise": "Occupancy + num_stages",
                   "reduction": "High occupancy"}
PHASE_ORDER = ("check", "compatibility", "classify", "apply", "validate", "bench", "report")
# Benchmark table rows: (variant, backend) -> the label of the seed's table.
BENCH_LABELS = {
    (ORIGINAL, PTX): "PTX (ENABLE_TILE=0)",
    (OPTIMIZED, PTX): "PTX (ENABLE_TILE=0), optimized file",
    (OPTIMIZED, TILEIR): "TileIR (ENABLE_TILE=1)",
    (ORIGINAL, TILEIR): "TileIR (ENABLE_TILE=1), original file",
    (REFERENCE, TORCH): "torch reference",
}
MAX_FAILURES = 5
MAX_NOTES = 3  # distinct notes of passing records per verdict (each is a whole record reason)


# --------------------------------------------------------------------------- the model


@dataclass
class Verdict:
    """The outcome of a set of validation records (one backend, one variant)."""

    status: str  # PASS | FAIL | NOT_RUN (tileiropt.schema)
    backend: str = ""  # validate's backend name
    backend_description: str = ""
    compiled_by: str | None = None  # what really compiled the kernels (provenance)
    max_difference: float | None = None  # max absolute difference over the records that compared
    tolerance: str = ""  # the tolerances those records were held to ("atol 1e-05, rtol 1e-05"; several joined)
    reason: str = ""  # why it did not run
    configs: int = 0  # records that ran
    not_run: int = 0  # records that did not
    dtypes: list[str] = field(default_factory=list)
    fallback: bool = False
    failures: list[str] = field(default_factory=list)  # "config: reason", the first few
    notes: list[str] = field(default_factory=list)  # e.g. shapes scaled for the interpreter


@dataclass
class Section:
    """A section that did not run, or its lines."""

    ran: bool
    reason: str = ""  # "not run: ..." when it did not
    lines: list[str] = field(default_factory=list)
    count: int = 0  # what the lines count (transformations: the changes made)


@dataclass
class Classification:
    ran: bool
    reason: str = ""
    kernel_type: str = ""  # seed wording, e.g. "norm-like"; several when the file's kernels differ
    strategy: str = ""
    kernels: list[dict[str, Any]] = field(default_factory=list)  # kernel, line, class, confidence, strategy
    findings: list[dict[str, Any]] = field(default_factory=list)  # code, severity, line, message, kernel


@dataclass
class BenchLine:
    label: str
    variant: str
    backend: str
    time: str  # "0.123" or "not run: ..." or "error: ..."
    speedup: str  # "1.00x" or "—"
    median_ms: float | None = None
    speedup_value: float | None = None


@dataclass
class BenchTable:
    dtypes: str
    size: int | None
    dims: dict[str, int]
    lines: list[BenchLine]
    sizes: list[int] = field(default_factory=list)  # a table that stands for several sizes (none ran)


@dataclass
class Benchmark:
    ran: bool
    reason: str = ""
    tables: list[BenchTable] = field(default_factory=list)
    details: list[BenchRow] = field(default_factory=list)  # the timed rows, for the detail table
    ptx_ratios: list[dict[str, Any]] = field(default_factory=list)  # size, dtypes, ratio, within_noise
    tileir_speedups: list[float] = field(default_factory=list)
    peaks_note: str = ""


@dataclass
class KernelReport:
    name: str
    path: str
    optimized_path: str
    stopped: dict[str, str] | None  # {"phase", "reason"} from run.json
    classification: Classification
    compatibility: Verdict
    transformations: Section
    tileir_validation: Verdict
    tileir_code: Verdict | None  # the TileIR code forced on under PTX / the interpreter
    optimized_ptx: Verdict | None  # the optimized file with its gate off
    benchmark: Benchmark
    output: Section
    coverage: list[Coverage] = field(default_factory=list)
    verdict: KernelVerdict | None = None  # the one verdict (report.verdict): every line that states one reads it


@dataclass
class Coverage:
    """Whether validation launched a kernel that `apply` rewrote (itself or its twin)."""

    kernel: str
    validated: bool
    records: int  # optimized-file records whose launches include it
    finding: str


@dataclass
class Report:
    artifacts: str
    environment: dict[str, Any]
    run: dict[str, Any] | None
    kernels: list[KernelReport]
    problems: dict[str, str]
    capture: list[str] = field(default_factory=list)  # what a capture run saw and what was replayed
    notes: list[str] = field(default_factory=list)  # record notes shared by several sections: said once, at the top
    library: LibrarySummary | None = None  # a library run: its kernels by verdict, class and file
    schema_version: int = SCHEMA_VERSION


# --------------------------------------------------------------------------- helpers


def _same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    return os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))


def _stop_reason(stopped: dict[str, str] | None, phase: str) -> str | None:
    """"not run: stopped at <phase>: <reason>" when the kernel stopped before `phase`."""
    if not stopped or stopped.get("phase") not in PHASE_ORDER or phase not in PHASE_ORDER:
        return None
    if PHASE_ORDER.index(phase) > PHASE_ORDER.index(stopped["phase"]):
        return f"not run: stopped at {stopped['phase']}: {stopped.get('reason', '')}".rstrip(": ")
    return None


def interrupted_phase(run: dict[str, Any] | None) -> str | None:
    """The phase a run was interrupted in (run.json), or None."""
    if not isinstance(run, dict) or run.get("exit_code") != 130:
        return None
    phases = [p for p in run.get("phases") or [] if isinstance(p, dict)]
    return next((str(p.get("phase")) for p in phases if p.get("detail") == "interrupted"), "an earlier phase")


def _missing(artifacts: Artifacts, record: str, command: str) -> str:
    problem = artifacts.problems.get(record)
    if problem:
        return f"not run: {record} is {problem}"
    return f"not run: no {record} in {artifacts.folder} (run `tileiropt {command}` or `tileiropt run`)"


def format_difference(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1e}"


# --------------------------------------------------------------------------- classification


def _classified(kernel: BenchKernel, artifacts: Artifacts) -> list[dict]:
    """The classify records of the kernel's file (empty without classify.json)."""
    return [k for k in (artifacts.classify or {}).get("kernels", []) if _same_file(k.get("file"), kernel.path)]


def kernels_reached(records: list[dict], entry: str) -> set[str] | None:
    """The kernel named `entry` and the JIT helpers it calls, transitively, from the classify records of its
    file; None when no kernel is named `entry` (the entry is a wrapper: the whole file counts)."""
    calls = {k.get("kernel"): k.get("calls") or [] for k in records}
    if entry not in calls:
        return None
    reached, todo = set(), [entry]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += [c for c in calls.get(name, []) if isinstance(c, str)]
    return reached


def classification_for(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None) -> Classification:
    if artifacts.classify is None:
        return Classification(False, _stop_reason(stopped, "classify") or _missing(artifacts, CLASSIFY_FILE,
                                                                                    "classify"))
    files = [f for f in artifacts.classify.get("files", []) if _same_file(f.get("file"), kernel.path)]
    records = _classified(kernel, artifacts)
    if not records:
        if files and files[0].get("message"):
            return Classification(False, f"not run: {files[0]['message']}")
        return Classification(False, _stop_reason(stopped, "classify")
                              or f"not run: {Path(kernel.path).name} is not in {CLASSIFY_FILE}")
    reached = kernels_reached(records, kernel.entry)  # a captured launch replays one kernel and its helpers
    records = [k for k in records if reached is None or k.get("kernel") in reached]
    classes = list(dict.fromkeys(k.get("class", "?") for k in records))
    entries = [k for k in records if k.get("is_entry")] or records
    if len(classes) == 1:
        kernel_type = SEED_CLASS_NAMES.get(classes[0], classes[0])
    else:
        kernel_type = ", ".join(f"{SEED_CLASS_NAMES.get(k.get('class'), k.get('class'))} ({k.get('kernel')})"
                                for k in entries)
    strategies = list(dict.fromkeys(SEED_STRATEGIES.get(k.get("class"), k.get("strategy", "")) for k in entries))
    findings = [{"kernel": k.get("kernel"), **f} for k in records for f in k.get("findings", [])]
    return Classification(
        True, kernel_type=kernel_type, strategy="; ".join(s for s in strategies if s),
        kernels=[{"kernel": k.get("kernel"), "line": k.get("line"), "class": k.get("class"),
                  "confidence": k.get("confidence"), "strategy": k.get("strategy"), "is_entry": k.get("is_entry")}
                 for k in records],
        findings=findings,
    )


# --------------------------------------------------------------------------- validation verdicts


def verdict(records: list[ValidationRecord]) -> Verdict:
    """PASS when every record that ran passed, FAIL when one failed or errored, else NOT_RUN."""
    if not records:
        return Verdict(NOT_RUN, reason="not run: no validation record")
    backend = records[0].backend
    ran = [r for r in records if r.status != NOT_RUN]
    skipped = [r for r in records if r.status == NOT_RUN]
    bad = [r for r in ran if r.status in (FAIL, ERROR)]
    compared = [r.max_abs for r in ran if r.max_abs is not None]
    compiled = sorted({b for r in ran for b in (r.provenance.compiled_backend or "").split(",") if b})
    notes = []
    for record in ran:
        if record.scaled_from:
            from tileiropt.runtime.scaling import describe_scaling

            note = describe_scaling(record.scaled_from, record.shapes)
            if note not in notes:
                notes.append(note)
    noted = [note for note in dict.fromkeys(r.reason for r in ran if r.status == PASS and r.reason)
             if note not in notes]  # stand-ins used, ... (a record's reason may be its scaling note: said once)
    notes += noted[:MAX_NOTES] + ([f"and {len(noted) - MAX_NOTES} more different notes in the records"]
                                  if len(noted) > MAX_NOTES else [])
    result = Verdict(
        status=FAIL if bad else PASS if ran else NOT_RUN,
        backend=backend,
        backend_description=BACKENDS[backend].description if backend in BACKENDS else backend,
        compiled_by=",".join(compiled) or None,
        max_difference=max(compared) if compared else None,
        tolerance="; ".join(dict.fromkeys(f"atol {r.atol:g}, rtol {r.rtol:g}" for r in ran
                                          if r.atol is not None and r.rtol is not None)),
        reason="" if ran else "; ".join(dict.fromkeys(r.reason for r in skipped)) or "not run",
        configs=len(ran),
        not_run=len(skipped),
        dtypes=list(dict.fromkeys(dtype_key(r.dtypes) for r in records)),
        fallback=any(r.provenance.fallback for r in ran),
        failures=[f"{r.config} [{dtype_key(r.dtypes)}]: {r.status}: {r.reason}" for r in bad[:MAX_FAILURES]],
        notes=notes,
    )
    if result.reason and not result.reason.startswith("not run"):
        result.reason = f"not run: {result.reason}"
    return result


def _records(artifacts: Artifacts, kernel: str, variant: str, backends: tuple[str, ...]) -> list[ValidationRecord]:
    if artifacts.validate is None:
        return []
    return [r for r in artifacts.validate.records
            if r.kernel == kernel and r.variant == variant and r.backend in backends]


def _choose(artifacts: Artifacts, kernel: str, variant: str, backends: tuple[str, ...]) -> list[ValidationRecord]:
    """The records of the first backend in `backends` that ran, else of the first one present."""
    groups = [_records(artifacts, kernel, variant, (b,)) for b in backends]
    for group in groups:
        if any(r.status != NOT_RUN for r in group):
            return group
    return next((g for g in groups if g), [])


def _no_validation(artifacts: Artifacts, stopped: dict[str, str] | None, phase: str) -> Verdict:
    from tileiropt.runtime.validate.records import VALIDATE_FILE

    reason = _stop_reason(stopped, phase) or _missing(artifacts, VALIDATE_FILE, "validate")
    return Verdict(NOT_RUN, reason=reason)


def compatibility_for(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None) -> Verdict:
    records = _choose(artifacts, kernel.name, ORIGINAL, ("ptx", "interpret"))
    if not records:
        if artifacts.validate is not None:
            return Verdict(NOT_RUN, reason="not run: no record of the original file on PTX or the interpreter")
        return _no_validation(artifacts, stopped, "compatibility")
    return verdict(records)


def tileir_for(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None
               ) -> tuple[Verdict, Verdict | None, Verdict | None]:
    """(TileIR backend, TileIR code forced on under PTX / the interpreter, optimized file on PTX)."""
    if artifacts.validate is None:
        return _no_validation(artifacts, stopped, "validate"), None, None
    tileir = _records(artifacts, kernel.name, OPTIMIZED, ("tileir",))
    if tileir:
        main = verdict(tileir)
    else:
        interrupted = interrupted_phase(artifacts.run)
        main = Verdict(NOT_RUN, reason=_stop_reason(stopped, "validate")
                       or (f"not run: the run was interrupted during {interrupted}" if interrupted else
                           "not run: no TileIR (ENABLE_TILE=1) record of the optimized file"))
    code = _choose(artifacts, kernel.name, OPTIMIZED, ("tileir-code-on-ptx", "tileir-code-on-interpret"))
    ptx = _choose(artifacts, kernel.name, OPTIMIZED, ("ptx", "interpret"))
    return main, verdict(code) if code else None, verdict(ptx) if ptx else None


# --------------------------------------------------------------------------- transformations and output


def _apply_file(kernel: BenchKernel, artifacts: Artifacts) -> dict[str, Any] | None:
    if artifacts.apply is None:
        return None
    return next((f for f in artifacts.apply.get("files", []) if _same_file(f.get("file"), kernel.path)), None)


def transformations_for(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None) -> Section:
    if artifacts.apply is None:
        return Section(False, _stop_reason(stopped, "apply") or _missing(artifacts, APPLY_FILE, "apply"))
    errors = [e for e in artifacts.apply.get("errors", []) if _same_file(e.get("file"), kernel.path)]
    if errors:
        return Section(False, f"not run: apply failed: {errors[0].get('error')}")
    record = _apply_file(kernel, artifacts)
    if record is None:
        return Section(False, _stop_reason(stopped, "apply") or f"not run: {Path(kernel.path).name} is not in "
                                                                  f"{APPLY_FILE}")
    if record.get("already_prepared"):
        return Section(True, lines=["none: the file already holds the TileIR gate (already prepared); unchanged"])
    reached = kernels_reached(_classified(kernel, artifacts), kernel.entry)  # a captured launch: its kernel, helpers
    kernels = [k for k in record.get("kernels", []) if reached is None or k.get("kernel") in reached]
    lines = []
    for k in kernels:
        for change in k.get("changes", []):
            lines.append(f"`{k.get('kernel')}` L{change.get('line')}: {change.get('what')} ({change.get('why')})")
        for skipped in k.get("skipped", []):
            lines.append(f"`{k.get('kernel')}` left alone: {skipped}")
    changes = sum(len(k.get("changes", [])) for k in kernels)
    if not record.get("changed"):
        lines.insert(0, "none: nothing to change for TileIR (the optimized file equals the original)")
    return Section(True, lines=lines, count=changes)


def coverage_for(kernel: BenchKernel, artifacts: Artifacts) -> list[Coverage]:
    """Per rewritten kernel of the file: launched by some validation of the optimized file, or not."""
    record = _apply_file(kernel, artifacts)
    if record is None or not record.get("changed"):
        return []
    runs = [r for r in (artifacts.validate.records if artifacts.validate else [])
            if r.variant == "optimized" and _same_file(r.path, kernel.optimized_path)]
    classified = _classified(kernel, artifacts)
    run_by = []  # per record: the kernels it launched (twins by their kernel's name) and the JIT helpers they call
    for r in runs:
        bases = {re.sub(r"_tileir(_pointer)?$", "", launched) for launched in r.provenance.kernels}
        run_by.append(set().union(*[kernels_reached(classified, base) or {base} for base in bases]))

    found = []
    for k in record.get("kernels", []):
        if not k.get("changes"):
            continue
        name = k.get("kernel")
        names = {name, k.get("twin") or f"{name}_tileir"}
        launched = sum(1 for r in runs if names & set(r.provenance.kernels))
        through = sum(1 for r, reached in zip(runs, run_by) if not names & set(r.provenance.kernels)
                      and name in reached)
        if launched:
            finding = f"`{name}` rewritten and validated: launched in {launched} record(s) of the optimized file"
        elif through:
            finding = (f"`{name}` rewritten and validated: a JIT helper run by the kernels launched in {through} "
                       "record(s) of the optimized file")
            launched = through
        elif not runs:
            finding = f"`{name}` rewritten, not validated: the optimized file has no validation record"
        else:
            finding = f"`{name}` rewritten, not validated: no entry launches it"
        found.append(Coverage(kernel=name, validated=bool(launched), records=launched, finding=finding))
    return found


def rejected_files(run: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """run.json's set-aside optimized files, keyed by resolved path."""
    rejected = (run or {}).get("rejected") if isinstance(run, dict) else None
    if not isinstance(rejected, dict):
        return {}
    return {str(Path(str(p)).resolve()): r for p, r in rejected.items() if isinstance(r, dict)}


def output_for(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None) -> Section:
    record = _apply_file(kernel, artifacts)
    written = record.get("output") if record else None
    set_aside = rejected_files(artifacts.run).get(str(Path(written).resolve())) if written else None
    if set_aside:
        return Section(False, f"set aside: moved to {Path(str(set_aside.get('moved_to'))).name}, not the result "
                              f"({set_aside.get('reason')})")
    if written:
        return Section(True, lines=[f"File: {Path(written).name}", f"Path: {written}"])
    reason = _stop_reason(stopped, "apply")
    if reason:
        return Section(False, reason)
    if record is None:
        return Section(False, f"not written: no apply record for {Path(kernel.path).name}")
    return Section(False, "not written: apply wrote no file (dry run)")


# --------------------------------------------------------------------------- benchmark


def _line(row: BenchRow) -> BenchLine:
    label = BENCH_LABELS.get((row.variant, row.backend), row.label)
    if row.status == PASS and row.median_ms is not None:
        time = f"{row.median_ms:.4f}"
        speedup = f"{row.speedup:.2f}x" if row.speedup is not None else "—"
        if row.provenance.fallback:
            speedup += " (fallback: not TileIR)"
    elif row.status == NOT_RUN:
        time, speedup = row.reason or "not run", "—"
    else:
        time, speedup = f"error: {row.reason}", "—"
    return BenchLine(label, row.variant, row.backend, time, speedup, row.median_ms, row.speedup)


def benchmark_for(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None) -> Benchmark:
    from tileiropt.runtime.bench.records import BENCH_FILE

    if artifacts.bench is None:
        return Benchmark(False, _stop_reason(stopped, "bench") or _missing(artifacts, BENCH_FILE, "bench"))
    rows = [r for r in artifacts.bench.rows if r.kernel == kernel.name]
    if not rows:
        interrupted = interrupted_phase(artifacts.run)
        return Benchmark(False, _stop_reason(stopped, "bench")
                         or (f"not run: the run was interrupted during {interrupted}" if interrupted else
                             f"not run: no row for {kernel.name} in {BENCH_FILE}"),
                         peaks_note=artifacts.bench.peaks_note)
    order = list(BENCH_LABELS)
    reasons = {r.reason for r in rows}
    result = Benchmark(True, peaks_note=artifacts.bench.peaks_note)
    if all(r.status == NOT_RUN for r in rows) and len(reasons) == 1:
        result.ran, result.reason = False, reasons.pop()
        seen: dict[tuple[str, str], BenchRow] = {}
        for row in rows:
            seen.setdefault((row.variant, row.backend), row)
        lines = [_line(seen[k]) for k in order if k in seen]
        sizes = sorted({r.size for r in rows if r.size is not None})
        result.tables = [BenchTable(", ".join(dict.fromkeys(dtype_key(r.dtypes) for r in rows)), None, {}, lines,
                                    sizes)]
        return result
    groups: dict[tuple[str, int | None], list[BenchRow]] = {}
    for row in rows:
        groups.setdefault((dtype_key(row.dtypes), row.size), []).append(row)
    for (dtypes, size), group in groups.items():
        group.sort(key=lambda r: order.index((r.variant, r.backend)) if (r.variant, r.backend) in order else 99)
        result.tables.append(BenchTable(dtypes, size, dict(group[0].dims), [_line(r) for r in group]))
        chosen = {r.variant: [a.best_config for a in r.autotuners] for r in group if r.backend == PTX}
        for row in group:
            if row.ratio_to_original is not None:
                paired = row.paired
                result.ptx_ratios.append({"dtypes": dtypes, "size": size, "ratio": row.ratio_to_original,
                                          "within_noise": row.within_noise,
                                          "same_config": chosen.get(OPTIMIZED) == chosen.get(ORIGINAL),
                                          "paired": None if paired is None else {
                                              "ci_low": paired.ci_low, "ci_high": paired.ci_high,
                                              "verdict": paired.verdict, "rounds": paired.rounds,
                                              "threshold": paired.threshold}})
            if (row.variant, row.backend) == (OPTIMIZED, TILEIR) and row.speedup is not None:
                result.tileir_speedups.append(row.speedup)
    result.details = [r for r in rows if r.status == PASS]
    return result


# --------------------------------------------------------------------------- the report


def kernels_from_records(artifacts: Artifacts) -> list[BenchKernel]:
    """The kernels the records know: run.json, else bench.json, else validate.json."""
    if artifacts.run and artifacts.run.get("kernels"):
        return [kernel_from_dict(k) for k in artifacts.run["kernels"]]
    if artifacts.bench and artifacts.bench.kernels:
        return list(artifacts.bench.kernels)
    kernels: dict[str, BenchKernel] = {}
    for record in artifacts.validate.records if artifacts.validate else []:
        known = kernels.setdefault(record.kernel, BenchKernel(record.kernel, "", "", ""))
        if record.variant == ORIGINAL and not known.path:
            known.path = record.path
        if record.variant == OPTIMIZED and not known.optimized_path:
            known.optimized_path = record.path
    for known in kernels.values():
        if not known.path and known.optimized_path.endswith("_tileir.py"):
            known.path = known.optimized_path[: -len("_tileir.py")] + ".py"
        if not known.optimized_path and known.path.endswith(".py"):
            known.optimized_path = known.path[:-3] + "_tileir.py"
    return list(kernels.values())


def build_report(artifacts: Artifacts, kernels: list[BenchKernel] | None = None) -> Report:
    """The report of `kernels` (default: the kernels the records know)."""
    problems = dict(artifacts.problems)
    if kernels is None:
        try:
            kernels = kernels_from_records(artifacts)
        except Exception as exc:  # a record of the wrong shape: say so, never a traceback
            problems["run.json"] = f"unreadable record: {type(exc).__name__}: {exc}"
            kernels = []
    stops = (artifacts.run or {}).get("stopped") or {}
    if not isinstance(stops, dict):
        problems["run.json"] = "unreadable record: `stopped` is not an object"
        stops = {}
    sections = []
    rejected = rejected_files(artifacts.run)
    for kernel in kernels:
        try:
            section = _kernel_report(kernel, artifacts, stops.get(kernel.name))
            section.verdict = kernel_verdict(section, rejected, interrupted_phase(artifacts.run))
        except Exception as exc:  # one kernel's records have an unexpected shape: its sections say so
            section = _unreadable(kernel, f"not run: unreadable record ({type(exc).__name__}: {exc})")
        sections.append(section)
    environment = artifacts.check if isinstance(artifacts.check, dict) else {}
    if not environment and artifacts.validate is not None:
        environment = dict(artifacts.validate.environment or {})
    if not environment and artifacts.bench is not None:
        environment = dict(artifacts.bench.environment or {})
    try:
        problems.update(provenance_problems(artifacts))
    except Exception as exc:
        problems["records"] = f"cannot compare the records with the files: {type(exc).__name__}: {exc}"
    try:
        capture = capture_summary(artifacts)
    except Exception as exc:
        problems["capture.json"] = f"unreadable record: {type(exc).__name__}: {exc}"
        capture = []
    return Report(artifacts=str(artifacts.folder), environment=dict(environment), run=artifacts.run,
                  kernels=sections, problems=problems, capture=capture, notes=lift_shared_notes(sections),
                  library=library_summary(artifacts.capture, artifacts.classify, sections))


NOTE_SEPARATOR = "; "  # a record's note joins its parts (stand-ins used, a top-level call that raised, ...)


def _verdicts(section: KernelReport) -> list[Verdict]:
    return [v for v in (section.compatibility, section.tileir_validation, section.tileir_code, section.optimized_ptx)
            if v is not None]


def lift_shared_notes(sections: list[KernelReport]) -> list[str]:
    """The note parts found in more than one verdict (the module's own call that raised, in every record of every
    kernel of a file): removed from the verdicts and returned, to be said once. The rest stay where they are."""
    seen: dict[str, int] = {}
    kernels: dict[str, list[str]] = {}
    for section in sections:
        for verdict in _verdicts(section):
            for part in dict.fromkeys(p for note in verdict.notes for p in note.split(NOTE_SEPARATOR)):
                seen[part] = seen.get(part, 0) + 1
                kernels.setdefault(part, [])
                if section.name not in kernels[part]:
                    kernels[part].append(section.name)
    shared = [part for part, count in seen.items() if count > 1]
    for section in sections:
        for verdict in _verdicts(section):
            kept = (NOTE_SEPARATOR.join(p for p in note.split(NOTE_SEPARATOR) if p not in shared)
                    for note in verdict.notes)
            verdict.notes = list(dict.fromkeys(note for note in kept if note))
    every = len(sections)
    return [part if len(kernels[part]) == every else f"{part} ({', '.join(kernels[part])})" for part in shared]


def provenance_problems(artifacts: Artifacts) -> dict[str, str]:
    """Records that do not describe the files as they are, or not this run: a file changed since it was measured
    (its SHA-256 differs), or validate.json / bench.json older than run.json. Never mixed silently."""
    from tileiropt.runtime.bench.records import BENCH_FILE
    from tileiropt.runtime.provenance import file_digest
    from tileiropt.runtime.validate.records import VALIDATE_FILE

    problems: dict[str, str] = {}
    measured: dict[str, set[str]] = {}
    for record in (artifacts.validate.records if artifacts.validate else []):
        if record.source_sha256 and record.path:
            measured.setdefault(record.path, set()).add(record.source_sha256)
    for row in (artifacts.bench.rows if artifacts.bench else []):
        if row.source_sha256 and row.path:
            measured.setdefault(row.path, set()).add(row.source_sha256)
    for path, digests in sorted(measured.items()):
        where = Path(path)
        if not where.is_absolute():  # as the project gave it: relative to the project, the artifacts' parent
            where = Path(artifacts.folder).parent / where
        now = file_digest(where)
        if now is not None and digests != {now}:  # a file not here (records rendered elsewhere) claims nothing
            problems[f"{Path(path).name}"] = ("changed since its records were made (SHA-256 differs): rerun "
                                              "`tileiropt run` before trusting them")
    started = (artifacts.run or {}).get("started")
    for name, record in ((VALIDATE_FILE, artifacts.validate), (BENCH_FILE, artifacts.bench)):
        when = getattr(record, "started", None)
        if isinstance(started, str) and isinstance(when, str) and when and when < started:
            problems[name] = f"from an earlier run (started {when}) than run.json ({started}): not this run's records"
    return problems


def _unreadable(kernel: BenchKernel, reason: str) -> KernelReport:
    """A kernel whose records cannot be read: every section says why."""
    return KernelReport(name=str(kernel.name), path=str(kernel.path), optimized_path=str(kernel.optimized_path),
                        stopped=None, classification=Classification(False, reason),
                        compatibility=Verdict(NOT_RUN, reason=reason), transformations=Section(False, reason),
                        tileir_validation=Verdict(NOT_RUN, reason=reason), tileir_code=None, optimized_ptx=None,
                        benchmark=Benchmark(False, reason), output=Section(False, reason), coverage=[],
                        verdict=KernelVerdict(ATTENTION, f"its records cannot be read: {reason}"))


def _kernel_report(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None) -> KernelReport:
    tileir, code, ptx = tileir_for(kernel, artifacts, stopped)
    return KernelReport(
        name=kernel.name, path=kernel.path, optimized_path=kernel.optimized_path, stopped=stopped,
        classification=classification_for(kernel, artifacts, stopped),
        compatibility=compatibility_for(kernel, artifacts, stopped),
        transformations=transformations_for(kernel, artifacts, stopped),
        tileir_validation=tileir, tileir_code=code, optimized_ptx=ptx,
        benchmark=benchmark_for(kernel, artifacts, stopped),
        output=output_for(kernel, artifacts, stopped),
        coverage=coverage_for(kernel, artifacts),
    )


def capture_summary(artifacts: Artifacts) -> list[str]:
    """Kernels captured, distinct launches, launches replayed, rewritten kernels the program never launched."""
    capture = artifacts.capture
    if not capture:
        return []
    launches = capture.get("launches", [])
    counts: dict[str, int] = capture.get("counts", {})
    files_of: dict[str, set[str]] = {}
    for launch in launches:
        files_of.setdefault(launch["kernel"], set()).add(launch["file"])
    kernels = sorted({launch["kernel"] if len(files_of[launch["kernel"]]) == 1 else
                      f"{Path(launch['file']).stem}.{launch['kernel']}" for launch in launches})
    reused = (f" (reused by this run: the program, its files and the kernel files are unchanged since "
              f"{capture.get('started') or 'then'})") if capture.get("reused") else ""
    lines = [f"Capture: `{' '.join(capture.get('command', []))}` ran {capture.get('seconds', 0):.1f} s "
             f"({capture.get('ended', '?')}){reused}: {len(launches)} distinct launch(es) of {len(kernels)} "
             f"kernel(s) ({', '.join(kernels) or 'none'}) out of {sum(counts.values())} launch(es) seen."]
    if artifacts.validate is not None:
        replayed = [r for r in artifacts.validate.records if r.config.startswith("captured: ")]
        statuses = ", ".join(f"{n} {status}" for status, n in Counter(r.status for r in replayed).most_common())
        lines.append(f"Replayed: {len(replayed)} record(s) on the original and the optimized kernels: "
                     f"{statuses or 'none'} (bit-exact on the unchanged path; per-dtype tolerances with the TileIR "
                     "code on).")
    captured_files = {launch["file"] for launch in launches} | {key.split("@", 1)[1] for key in capture.get(
        "expected", [])}
    launched = {key.split("@")[0] for key in counts}
    rewritten = []
    for item in (artifacts.apply or {}).get("files", []):
        if item.get("file") and os.path.realpath(item["file"]) in captured_files:
            rewritten += [k["kernel"] for k in item.get("kernels", []) if k.get("changes")]
    never = sorted(set(rewritten) - launched)
    if never:
        lines.append(f"Rewritten but never launched by the program (not validated): {', '.join(never)}.")
    return lines
