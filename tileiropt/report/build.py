"""Build the report's content -- per kernel, the five seed sections -- from the saved records alone.

`build_report(artifacts, kernels)` returns a `Report` of plain dataclasses (`model`); `markdown.py` renders
it and `report --format json` prints it. The sections come from `sections` and `benchmark`; here, the
kernels the records know, notes shared by several sections said once, records that do not describe the
files as they are, and what a capture saw.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from tileiropt.bench.records import BENCH_FILE, OPTIMIZED, ORIGINAL, BenchKernel
from tileiropt.capture.capture import CaptureResult, cut_summary
from tileiropt.capture.keys import KernelKey
from tileiropt.harness.gate import optimized_name, twinned
from tileiropt.harness.provenance import file_digest
from tileiropt.project.launch import kernel_labels
from tileiropt.report.artifacts import RUN_FILE, Artifacts, projects_of
from tileiropt.report.benchmark import benchmark_for
from tileiropt.report.hint_reach import hint_reach
from tileiropt.report.library import library_summary
from tileiropt.report.markdown_blocks import launch_names
from tileiropt.report.model import Benchmark, Classification, KernelReport, Report, Section, Verdict
from tileiropt.report.sections import (
    classification_for,
    compatibility_for,
    coverage_for,
    emulated_for,
    interrupted_phase,
    kernels_reached,
    output_for,
    rejected_files,
    tileir_for,
    transformations_for,
)
from tileiropt.report.verdict import ATTENTION, KernelVerdict, kernel_verdict
from tileiropt.schema import NOT_RUN
from tileiropt.validate.records import VALIDATE_FILE


def kernels_from_records(artifacts: Artifacts) -> list[BenchKernel]:
    """The kernels the records know: run.json, else bench.json, else validate.json."""
    if artifacts.run and artifacts.run.kernels:
        return list(artifacts.run.kernels)
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
        optimized = Path(known.optimized_path)
        if not known.path and optimized.suffix == ".py" and optimized.stem != twinned(optimized.stem):
            known.path = str(optimized.with_name(twinned(optimized.stem) + ".py"))
        if not known.optimized_path and known.path.endswith(".py"):
            known.optimized_path = str(Path(known.path).with_name(optimized_name(Path(known.path).stem)))
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
    stops = artifacts.run.stopped if artifacts.run else {}  # checked on read: each stop is an object
    sections = []
    rejected = rejected_files(artifacts.run)
    for kernel in kernels:
        try:
            section = _kernel_report(kernel, artifacts, stops.get(kernel.name))
            section.verdict = kernel_verdict(section, rejected, interrupted_phase(artifacts.run))
        except Exception as exc:  # one kernel's records have an unexpected shape: its sections say so
            section = _unreadable(kernel, f"not run: unreadable record ({type(exc).__name__}: {exc})")
        sections.append(section)
    environment = asdict(artifacts.check) if artifacts.check is not None else {}
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
                  cut=cut_md(artifacts.capture),
                  library=library_summary(artifacts.capture, artifacts.classify, sections))


NOTE_SEPARATOR = "; "  # a record's note joins its parts (stand-ins used, a top-level call that raised, ...)


def _verdicts(section: KernelReport) -> list[Verdict]:
    return [v for v in (section.compatibility, section.tileir_validation, section.tileir_code, section.optimized_ptx,
                        section.tileir_emulated) if v is not None]


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
    return [part if len(kernels[part]) == every else f"{part} ({launch_names(kernels[part])})" for part in shared]


def provenance_problems(artifacts: Artifacts) -> dict[str, str]:
    """Records that do not describe the files as they are, or not this run: a file changed since it was measured
    (its SHA-256 differs), or validate.json / bench.json older than run.json. Never mixed silently."""
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
    made_for = projects_of(artifacts)
    this = made_for.get(RUN_FILE)  # the project the run was made for, where run.json names it
    for name, project in made_for.items():
        if this is not None and project != this:  # a folder copied with its records, then run again in part
            problems[name] = f"made for another project ({project}) than run.json ({this}): not this run's records"
    started = artifacts.run.started if artifacts.run else None
    for name, phase_run in ((VALIDATE_FILE, artifacts.validate), (BENCH_FILE, artifacts.bench)):
        when = getattr(phase_run, "started", None)
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
    transformations = transformations_for(kernel, artifacts, stopped)
    reach = hint_reach(kernel, artifacts)
    transformations.lines += [f"checked: {line}" for line in reach.reached] + \
        [f"checked: {line}" for line in reach.unreached]
    return KernelReport(
        name=kernel.name, path=kernel.path, optimized_path=kernel.optimized_path, stopped=stopped,
        classification=classification_for(kernel, artifacts, stopped),
        compatibility=compatibility_for(kernel, artifacts, stopped),
        transformations=transformations, hint_unreached=reach.unreached,
        tileir_validation=tileir, tileir_code=code, optimized_ptx=ptx,
        benchmark=benchmark_for(kernel, artifacts, stopped),
        output=output_for(kernel, artifacts, stopped),
        coverage=coverage_for(kernel, artifacts),
        tileir_emulated=emulated_for(kernel, artifacts),
    )


def cut_md(capture: CaptureResult | None) -> str:
    """The first line of a report whose captured command was cut (budget, no progress), else ""."""
    if capture is None or not capture.cut:
        return ""
    return f"**Cut**: {cut_summary(capture.cut, capture.where)}."


def helpers_run(launched: set[tuple[str, str]], artifacts: Artifacts) -> set[tuple[str, str]]:
    """(file, JIT helper) of every helper the launched kernels call, transitively, read from classify.json."""
    kernels = artifacts.classify.kernels if artifacts.classify is not None else []
    by_file: dict[str, list[dict]] = {}
    for record in kernels:
        if isinstance(record, dict) and record.get("file"):
            by_file.setdefault(os.path.realpath(str(record["file"])), []).append(record)
    return {(file, helper) for file, kernel in launched
            for helper in kernels_reached(by_file.get(file, []), kernel) or ()}


def capture_summary(artifacts: Artifacts) -> list[str]:
    """Kernels captured, distinct launches, launches replayed, rewritten kernels the program never launched."""
    capture = artifacts.capture
    if not capture:
        return []
    launches, counts = capture.launches, capture.counts
    kernels = sorted(set(kernel_labels(launches)))
    reused = (f" (reused by this run: the program, its files and the kernel files are unchanged since "
              f"{capture.started or 'then'})") if capture.reused else ""
    lines = [f"Capture: `{' '.join(capture.command)}` ran {capture.seconds:.1f} s "
             f"({capture.ended or '?'}){reused}: {len(launches)} distinct launch(es) of {len(kernels)} "
             f"kernel(s) ({', '.join(kernels) or 'none'}) out of {sum(counts.values())} launch(es) seen."]
    if artifacts.validate is not None:
        replayed = [r for r in artifacts.validate.records if r.config.startswith("captured: ")]
        statuses = ", ".join(f"{n} {status}" for status, n in Counter(r.status for r in replayed).most_common())
        lines.append(f"Replayed: {len(replayed)} record(s) on the original and the optimized kernels: "
                     f"{statuses or 'none'} (bit-exact on the unchanged path; per-dtype tolerances with the TileIR "
                     "code on).")
    captured_files = {launch.file for launch in launches} | {KernelKey.parse(key).file for key in capture.expected}
    launched = {(os.path.realpath(KernelKey.parse(key).file), KernelKey.parse(key).kernel) for key in counts}
    launched |= helpers_run(launched, artifacts)  # a JIT helper a launched kernel calls ran, validated with it
    never: dict[str, list[str]] = {}  # file -> its rewritten kernels the program never launched
    for item in artifacts.apply.files if artifacts.apply is not None else []:
        real = os.path.realpath(item.file) if item.file else ""
        if real in captured_files:
            never[real] = [k.kernel for k in item.kernels if k.changes and (real, k.kernel) not in launched]
    shown = [f"`{Path(file).name}`: {', '.join(kernels)}" for file, kernels in sorted(never.items()) if kernels]
    if shown:
        lines.append(f"Rewritten but never launched by the program (not validated): {'; '.join(shown)}.")
    outside = capture.outside
    if outside:
        rows = [f"- `{item.get('kernel')}` ({item.get('launches', 0)} launch(es)), defined in `{item.get('file')}`"
                + (f" line {item['line']}" if item.get("line") else "") for item in outside.values()]
        lines.append(f"Launched from outside the targets: {len(outside)} kernel(s) that no target file defines "
                     "(generated code, other packages), not validated:\n\n" + "\n".join(rows))
    stacks = capture.stacks
    if stacks:
        fence = "````"
        lines.append("Where the cut program was (every thread's stack, process by process):\n\n" + "\n\n".join(
            f"{fence}text\nprocess {pid}\n{text}\n{fence}" for pid, text in stacks.items()))
    return lines
