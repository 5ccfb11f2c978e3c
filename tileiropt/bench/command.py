"""`tileiropt bench`: resolve the target, benchmark, save the rows, print a table or JSON."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from tileiropt.bench.records import (
    CUDAGRAPH,
    SAME_CODE,
    BenchRow,
    BenchRun,
    dtype_key,
    peak_text,
    rate_text,
    save_bench_run,
)
from tileiropt.bench.run import BenchSettings, bench_project, earlier_bench
from tileiropt.capture.targets import TargetOptions, adopting_machine_facts, prepared
from tileiropt.engine.progress import Progress
from tileiropt.errors import ExitCode
from tileiropt.invocation import invoked_command
from tileiropt.output import console, err_console
from tileiropt.schema import ERROR, NOT_RUN, PASS

_STYLE: dict[str, str] = {PASS: "green", ERROR: "bold red", NOT_RUN: "yellow"}


def _ms(value: float | None, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}g}"


def spread(row: BenchRow) -> str:
    t = row.timing
    if t is None or t.p20_ms is None or t.p80_ms is None:
        return ""
    return f"{t.p20_ms:.4g}-{t.p80_ms:.4g}"


def note(row: BenchRow) -> str:
    parts = [row.reason] if row.reason else []
    if row.paired is not None:
        p = row.paired
        if p.verdict == SAME_CODE:
            parts.append(f"opt/orig: {p.note}")
        else:
            parts.append(f"opt/orig {p.ratio:.3f} [{p.ci_low:.3f}-{p.ci_high:.3f}] {p.verdict} ({p.rounds} paired "
                         "rounds)")
    elif row.ratio_to_original is not None:
        parts.append(f"opt/orig {row.ratio_to_original:.3f}" + ("" if row.within_noise else " OUTSIDE NOISE"))
    if row.timing is not None:
        method = "graph" if row.timing.method == CUDAGRAPH else row.timing.method
        parts.append(method + (f", {row.timing.input_sets} input sets" if row.timing.input_sets > 1 else ""))
        if row.timing.note:
            parts.append(row.timing.note)
    return "; ".join(parts)


def summary_table(run: BenchRun) -> Table:
    """One line per timed (or failed) row; rows that did not run are summarized below the table."""
    table = Table(title="bench", show_lines=False)
    for column in ("kernel", "dtypes", "size", "row", "median ms", "p20-p80", "rate", "% peak", "speedup",
                   "autotune ms", "compiled by", "note"):
        table.add_column(column, overflow="fold", no_wrap=column not in ("kernel", "row", "compiled by", "note"),
                         justify="right" if column in ("size", "median ms", "speedup", "autotune ms") else "left")
    for r in run.rows:
        if r.status == NOT_RUN:
            continue
        median = _ms(r.median_ms) if r.status == PASS else f"[{_STYLE[r.status]}]{r.status}[/]"
        compiled = (r.provenance.compiled_backend or "") + (" [bold red](fallback)[/]" if r.provenance.fallback
                                                             else "")
        table.add_row(r.kernel, dtype_key(r.dtypes), "" if r.size is None else str(r.size), r.short_label, median,
                      spread(r), rate_text(r), peak_text(r), "" if r.speedup is None else f"{r.speedup:.2f}x",
                      "" if r.autotune_ms is None else f"{r.autotune_ms:.0f}", compiled, escape(note(r)))
    return table


def not_run_lines(run: BenchRun) -> list[str]:
    """"12 rows: not run: no GPU", one line per distinct reason."""
    reasons: dict[str, int] = {}
    for row in run.rows:
        if row.status == NOT_RUN:
            reasons[row.reason] = reasons.get(row.reason, 0) + 1
    return [f"{count} row{'s' if count > 1 else ''}: {reason}" for reason, count in reasons.items()]


@adopting_machine_facts
def bench_command(
    options: TargetOptions,
    *,
    settings: BenchSettings | None = None,
    remeasure_peaks: bool = False,
) -> ExitCode:
    """Everything behind the command; returns the exit code."""
    target = prepared(options)
    project = target.project
    with Progress("bench", "rows", err_console) as progress:
        run = bench_project(project, kernels=options.kernels, settings=settings, remeasure_peaks=remeasure_peaks,
                            command=invoked_command(), executor=target.executor, progress=progress,
                            journal=True, machine=target.machine,
                            earlier=None if options.fresh else earlier_bench(project.artifacts))
    saved = save_bench_run(run, project.artifacts)
    code = target.exit_code(run.exit_code())
    early = target.ends_early(run, code, saved=saved, progress=progress, done=len(run.rows), unit="rows",
                              as_json=options.as_json)
    if early is not None:
        return early
    if any(r.status != NOT_RUN for r in run.rows):
        console.print(summary_table(run))
    for line in not_run_lines(run):
        console.print(line, markup=False, soft_wrap=True)
    for line in run.notes:
        err_console.print(f"note: {escape(line)}", soft_wrap=True)
    counts = run.counts()
    summary = ", ".join(f"{counts[s]} {s}" for s in (PASS, ERROR, NOT_RUN) if counts[s])
    if code == ExitCode.NOT_RUN:
        err_console.print("nothing was timed (no fake CPU timings): run `tileiropt bench` on a machine with an "
                          "NVIDIA GPU", soft_wrap=True)
    console.print(f"peaks: {escape(run.peaks_note)}", soft_wrap=True)
    console.print(f"{summary} in {run.seconds:.1f}s; rows saved to {saved}", markup=False)
    return code
