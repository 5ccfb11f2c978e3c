"""The sections of one kernel's report that come from its classify, apply and validate records: its
classification, the compatibility and TileIR validation verdicts, the transformations, which rewritten
kernels a validation launched, and the file written. A section whose phase did not run says why: the
phase's own "not run" record, the kernel's stop in `run.json`, or the record file missing.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from tileiropt.bench.records import OPTIMIZED, ORIGINAL, BenchKernel, dtype_key
from tileiropt.classify.rules.base import KernelFinding
from tileiropt.contract.phase_records import ApplyFile
from tileiropt.harness.backends import BACKENDS, EMULATED_TILEIR, EMULATED_TILEIR_ON_INTERPRET
from tileiropt.harness.gate import twin_names, twinned
from tileiropt.harness.scaling import describe_scaling
from tileiropt.phases import comes_after
from tileiropt.records.run import RunResult
from tileiropt.report.artifacts import APPLY_FILE, CLASSIFY_FILE, Artifacts
from tileiropt.report.model import Classification, Coverage, Section, Verdict
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS, Cause
from tileiropt.validate.records import VALIDATE_FILE, ValidationRecord

# looked up by a classify record's class (None where a record has none)
SEED_CLASS_NAMES: dict[str | None, str] = {"dot": "dot-related", "norm": "norm-like", "elementwise": "element-wise",
                                           "reduction": "reduction"}
SEED_STRATEGIES: dict[str | None, str] = {"dot": "TMA + 2CTA", "norm": "High occupancy",
                                          "elementwise": "Occupancy + num_stages", "reduction": "High occupancy"}
MAX_FAILURES = 5
MAX_NOTES = 3  # distinct notes of passing records per verdict (each is a whole record reason)


def same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    return _normal(a) == _normal(b)


@functools.lru_cache(maxsize=4096)
def _normal(path: str) -> str:
    """A path as `same_file` compares it (a library's report compares each record's path with each kernel's)."""
    return os.path.normpath(os.path.abspath(path))


def stop_reason(stopped: dict[str, str] | None, phase: str) -> str | None:
    """"not run: stopped at <phase>: <reason>" when the kernel stopped before `phase`."""
    if not stopped or not comes_after(phase, str(stopped.get("phase"))):
        return None
    return f"not run: stopped at {stopped['phase']}: {stopped.get('reason', '')}".rstrip(": ")


def interrupted_phase(run: RunResult | None) -> str | None:
    """The phase a run was interrupted in (run.json), or None."""
    if run is None or run.exit_code != 130:
        return None
    return next((p.phase for p in run.phases if p.interrupted), "an earlier phase")


def missing_record(artifacts: Artifacts, record: str, command: str) -> str:
    problem = artifacts.problems.get(record)
    if problem:
        return f"not run: {record} is {problem}"
    return f"not run: no {record} in {artifacts.folder} (run `tileiropt {command}` or `tileiropt run`)"


def format_difference(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1e}"


# --------------------------------------------------------------------------- classification


def classify_records(kernel: BenchKernel, artifacts: Artifacts) -> list[dict]:
    """The classify records of the kernel's file (empty without classify.json)."""
    kernels = artifacts.classify.kernels if artifacts.classify is not None else []
    return [k for k in kernels if isinstance(k, dict) and same_file(k.get("file"), kernel.path)]


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
        return Classification(False, stop_reason(stopped, "classify") or missing_record(artifacts, CLASSIFY_FILE,
                                                                                    "classify"))
    files = [f for f in artifacts.classify.files if same_file(f.file, kernel.path)]
    records = classify_records(kernel, artifacts)
    if not records:
        if files and files[0].message:
            return Classification(False, f"not run: {files[0].message}")
        return Classification(False, stop_reason(stopped, "classify")
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
    findings = [KernelFinding.from_json(k.get("kernel"), f) for k in records for f in k.get("findings") or []]
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
        tolerance="; ".join(dict.fromkeys(f"atol {r.atol:g}, rtol {r.rtol:g}"  # each with the dtype it is for
                                          + (f" for {dtype_key(r.dtypes)}" if r.dtypes else "") for r in ran
                                          if r.atol is not None and r.rtol is not None)),
        reason="" if ran else "; ".join(dict.fromkeys(r.reason for r in skipped)) or "not run",
        configs=len(ran),
        not_run=len(skipped),
        repeats=sum(r.hint_only_repeat for r in skipped),
        dtypes=list(dict.fromkeys(dtype_key(r.dtypes) for r in records)),
        fallback=any(r.provenance.fallback for r in ran),
        failures=[f"{r.config} [{dtype_key(r.dtypes)}]: {r.status}: {r.reason}" for r in bad[:MAX_FAILURES]],
        notes=notes,
        agrees_only=any(r.bf16_wrong for r in ran if r.status == PASS),
        cause=_cause_of(bad[0]) if bad else next((r.cause for r in ran if r.cause), None),
        failed_status=bad[0].status if bad else "",
        evidence=list(bad[0].evidence) if bad else [],
    )
    return result


def _cause_of(record: ValidationRecord) -> Cause:
    """A failed record's cause; a record written before causes: a wrong output (FAIL) is the kernel's, anything else
    (ERROR) could not be told."""
    return record.cause or (Cause.KERNEL if record.status == FAIL else Cause.UNKNOWN)


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
    reason = stop_reason(stopped, phase) or missing_record(artifacts, VALIDATE_FILE, "validate")
    return Verdict(NOT_RUN, reason=reason)


def compatibility_for(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None) -> Verdict:
    records = _choose(artifacts, kernel.name, ORIGINAL, ("ptx", "interpret"))
    if not records:
        if artifacts.validate is not None:
            return Verdict(NOT_RUN, reason="not run: no record of the original file on PTX or the interpreter")
        return _no_validation(artifacts, stopped, "compatibility")
    return verdict(records)


EMULATED_BACKENDS = (EMULATED_TILEIR.name, EMULATED_TILEIR_ON_INTERPRET.name)


def emulated_for(kernel: BenchKernel, artifacts: Artifacts) -> Verdict | None:
    """The optimized file under the tests' emulated nvtriton (never the TileIR backend), where the run was."""
    if artifacts.validate is None:
        return None
    records = _choose(artifacts, kernel.name, OPTIMIZED, EMULATED_BACKENDS)
    return verdict(records) if records else None


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
        main = Verdict(NOT_RUN, reason=stop_reason(stopped, "validate")
                       or (f"not run: the run was interrupted during {interrupted}" if interrupted else
                           "not run: no TileIR (ENABLE_TILE=1) record of the optimized file"))
    code = _choose(artifacts, kernel.name, OPTIMIZED, ("tileir-code-on-ptx", "tileir-code-on-interpret"))
    ptx = _choose(artifacts, kernel.name, OPTIMIZED, ("ptx", "interpret"))
    return main, verdict(code) if code else None, verdict(ptx) if ptx else None


# --------------------------------------------------------------------------- transformations and output


def _apply_file(kernel: BenchKernel, artifacts: Artifacts) -> ApplyFile | None:
    if artifacts.apply is None:
        return None
    return next((f for f in artifacts.apply.files if same_file(f.file, kernel.path)), None)


def transformations_for(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None) -> Section:
    if artifacts.apply is None:
        return Section(False, stop_reason(stopped, "apply") or missing_record(artifacts, APPLY_FILE, "apply"))
    errors = [e for e in artifacts.apply.errors if same_file(e.file, kernel.path)]
    if errors:
        return Section(False, f"not run: apply failed: {errors[0].error}")
    record = _apply_file(kernel, artifacts)
    if record is None:
        return Section(False, stop_reason(stopped, "apply") or f"not run: {Path(kernel.path).name} is not in "
                                                                  f"{APPLY_FILE}")
    if record.already_prepared:
        return Section(True, lines=["none: the file already holds the TileIR gate (already prepared); unchanged"])
    # a captured launch: its kernel and the helpers it calls
    reached = kernels_reached(classify_records(kernel, artifacts), kernel.entry)
    kernels = [k for k in record.kernels if reached is None or k.kernel in reached]
    lines = []
    for k in kernels:  # a file left as it was has notes, never changes
        for change in k.changes:
            lines.append(f"`{k.kernel}` L{change.line}: {'' if record.changed else 'note: '}{change.what} "
                         f"({change.why})")
        for skipped in k.skipped:
            lines.append(f"`{k.kernel}` left alone: {skipped}")
    lines += [f"L{change.line}, outside the kernels: backend test widened to {change.what} ({change.why})"
              for change in record.host]
    changes = sum(len(k.changes) for k in kernels) + len(record.host) if record.changed else 0
    if not record.changed:
        lines.insert(0, "none: nothing to change for TileIR (the optimized file equals the original)")
    return Section(True, lines=lines, count=changes, left_alone=[why for k in kernels for why in k.skipped])


def coverage_for(kernel: BenchKernel, artifacts: Artifacts) -> list[Coverage]:
    """Per rewritten kernel of the file: launched by some validation of the optimized file, or not."""
    record = _apply_file(kernel, artifacts)
    if record is None or not record.changed:
        return []
    runs = [r for r in (artifacts.validate.records if artifacts.validate else [])
            if r.variant == "optimized" and same_file(r.path, kernel.optimized_path)]
    classified = classify_records(kernel, artifacts)
    run_by = []  # per record: the kernels it launched (twins by their kernel's name) and the JIT helpers they call
    for r in runs:
        bases = {twinned(launched) for launched in r.provenance.kernels}
        run_by.append(set().union(*[kernels_reached(classified, base) or {base} for base in bases]))

    found = []
    for k in record.kernels:
        if not k.changes:
            continue
        name = k.kernel
        names = {name, k.twin or twin_names(name)[0]}
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


def rejected_files(run: RunResult | None) -> dict[str, dict[str, Any]]:
    """run.json's set-aside optimized files, keyed by resolved path."""
    return {str(Path(str(p)).resolve()): dict(r) for p, r in run.rejected.items()} if run else {}


def output_for(kernel: BenchKernel, artifacts: Artifacts, stopped: dict[str, str] | None) -> Section:
    record = _apply_file(kernel, artifacts)
    written = record.output if record else None
    set_aside = rejected_files(artifacts.run).get(str(Path(written).resolve())) if written else None
    if set_aside:
        return Section(False, f"set aside: moved to {Path(str(set_aside.get('moved_to'))).name}, not the result "
                              f"({set_aside.get('reason')})")
    if written:  # a copy where apply changed nothing in the file: written so its kernels are validated alike
        copy = "" if record is None or record.changed else " (unchanged copy)"
        return Section(True, lines=[f"File: {Path(written).name}{copy}", f"Path: {written}"])
    reason = stop_reason(stopped, "apply")
    if reason:
        return Section(False, reason)
    if record is None:
        return Section(False, f"not written: no apply record for {Path(kernel.path).name}")
    return Section(False, "not written: apply wrote no file (dry run)")
