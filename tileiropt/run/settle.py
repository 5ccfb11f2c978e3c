"""The safe-modification rule, once every phase ran: an optimized file that failed validation or is slower on PTX
beyond the threshold is set aside (`<stem>.rejected.py`, its reason in run.json and the report); with --in-place,
each validated, not-slower optimized file is written over the user's file, the original kept beside it."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tileiropt.apply.apply import copy_helper, free_backup, helper_copy
from tileiropt.bench.records import BenchRun
from tileiropt.classify.source import read_source_file
from tileiropt.contract.context import RunContext, record_of
from tileiropt.contract.outcome import Outcome
from tileiropt.contract.phase_records import ApplyRecord
from tileiropt.contract.policy import live
from tileiropt.errors import ExitCode
from tileiropt.harness.gate import GATE_MARKER
from tileiropt.output import write_atomic
from tileiropt.project.spec import KernelSpec
from tileiropt.records.run import RunResult
from tileiropt.run.decisions import not_proven_not_slower, rejections
from tileiropt.schema import PASS
from tileiropt.validate.records import ValidateRun


def settle(context: RunContext, outcomes: Sequence[Outcome], result: RunResult) -> Outcome:
    """Once every phase ran: set aside every optimized file that failed or regressed; with --in-place, write each
    accepted one over the user's file, the original kept beside it. Its outcome (never a row of run.json) says
    whether --in-place could not be proven: for want of a GPU (the machine's), or for a bench that failed."""
    validation = record_of(outcomes, "validate") or record_of(outcomes, "compatibility")
    records = validation.records if isinstance(validation, ValidateRun) else []
    bench = record_of(outcomes, "bench")
    rows = bench.rows if isinstance(bench, BenchRun) else []
    applied = record_of(outcomes, "apply")
    twins = applied.twins() if isinstance(applied, ApplyRecord) else set()
    set_aside(rejections(context.specs, records, rows, twins), result, context.on_event)
    done = Outcome.of("settle", PASS)
    if context.request.in_place:
        write_in_place(live(context.specs, outcomes), records, rows, result)
        if result.in_place_refused:  # the proof needs a GPU this machine lacks, or the bench failed
            unmeasured = not isinstance(bench, BenchRun) or bench.exit_code() == ExitCode.NOT_RUN
            done.not_run_here, done.fails_run = unmeasured, not unmeasured
    return done


def set_aside(reasons: dict[Path, str], result: RunResult, on_event: Callable[[str, str], None]) -> None:
    """Move each optimized file of `reasons` (path -> why it must not be the result) aside, noted in `result`."""
    for path, reason in reasons.items():
        if not path.is_file() or GATE_MARKER not in path.read_text(encoding="utf-8", errors="replace"):
            continue  # not ours (a capture's replay, a file we never wrote): nothing to set aside
        moved = path.with_name(f"{path.stem}.rejected.py")
        if moved.exists():
            moved = free_backup(moved)
        path.rename(moved)
        result.rejected[str(path)] = {"moved_to": str(moved), "reason": reason}
        on_event("settle", f"set aside {path.name}: {reason}")


def write_in_place(live: list[KernelSpec], records: Sequence[Any], bench_rows: Sequence[Any],
                   result: RunResult) -> None:
    """Write each live kernel's optimized file over its kernel file when it passed validation, was not set aside
    and was measured not slower on PTX (`result.in_place`); say why not where it was never measured
    (`result.in_place_refused`)."""
    passed = {r.kernel for r in records if r.variant == "optimized" and r.status == PASS}
    for spec in live:
        source = spec.optimized_path
        if spec.name not in passed or not source.is_file() or str(source) in result.rejected \
                or str(spec.path) in result.in_place:
            continue  # only a validated, not-slower optimized file replaces the user's
        unproven = not_proven_not_slower(list(bench_rows), spec.name)
        if unproven:
            helper = helper_copy(source, spec.path)  # the module it imports goes with it
            also = f" && cp -n {shlex.quote(str(helper[0]))} {shlex.quote(str(helper[1]))}" if helper else ""
            result.in_place_refused[str(spec.path)] = (
                f"'not slower on PTX' was never measured ({unproven}); to use the validated file anyway: "
                f"cp {shlex.quote(str(source))} {shlex.quote(str(spec.path))}{also}")
            continue
        text = spec.path.read_text(encoding="utf-8", errors="replace")
        kept = spec.path.with_name(spec.path.name + ".orig")
        if GATE_MARKER in text and kept.is_file():
            backup = kept  # a re-run over our own output: the user's original is kept already
        else:
            backup = free_backup(spec.path)
            shutil.copy2(spec.path, backup)
        text, encoding = read_source_file(source)  # written in the source's own (PEP 263) encoding
        write_atomic(spec.path, text, encoding)
        result.in_place[str(spec.path)] = str(backup)
        copy_helper(source, spec.path)  # a library's file: its package gets the helper module it imports
