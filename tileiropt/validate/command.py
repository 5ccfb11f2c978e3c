"""`tileiropt validate`: resolve the target, validate, save the records, print a summary."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich import box
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tileiropt.capture.targets import TargetOptions, adopting_machine_facts, prepared
from tileiropt.engine.progress import Progress
from tileiropt.errors import ExitCode, UserError
from tileiropt.harness.scaling import describe_scaling
from tileiropt.invocation import invoked_command
from tileiropt.output import console, err_console
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS, Repeat
from tileiropt.validate.records import ValidateRun, ValidationRecord, load_validate_run, save_validate_run
from tileiropt.validate.run import earlier_validation, tally, validate_project

_STYLE: dict[str, str] = {PASS: "green", FAIL: "bold red", ERROR: "bold red", NOT_RUN: "yellow"}


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.1e}"


def _dtypes(record: ValidationRecord) -> str:
    distinct = sorted(set(record.dtypes.values()))
    return distinct[0] if len(distinct) == 1 else ", ".join(f"{k}={v}" for k, v in record.dtypes.items())


def short_config(label: str) -> str:
    """A config label for the table: launch options shortened, default num_ctas=1 dropped."""
    parts = [p.strip() for p in label.split(",")]
    parts = [p for p in parts if p != "num_ctas=1"]
    return " ".join(p.replace("num_warps=", "warps=").replace("num_stages=", "stages=") for p in parts)


def summary_table(run: ValidateRun) -> Table:
    """One row per record: its config, status, largest error and wrong elements, under a row naming the case
    (kernel, variant, dtype, backend) whenever it changes, so the table fits an 80-column terminal."""
    table = Table(title="validate", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column in ("config", "status", "max abs", "wrong"):
        table.add_column(column, overflow="fold", no_wrap=column != "config",
                         justify="right" if column in ("max abs", "wrong") else "left")
    case = None
    for r in run.records:
        if (r.kernel, r.variant, _dtypes(r), r.backend) != case:
            case = (r.kernel, r.variant, _dtypes(r), r.backend)
            table.add_row(f"[bold]{escape(r.kernel)}[/] {escape(' · '.join(case[1:]))}", "", "", "")
        wrong = "" if r.mismatches is None else f"{r.mismatches}/{r.elements}"
        status = "repeat" if r.hint_only_repeat else r.status + (" (fallback)" if r.provenance.fallback else "")
        style = "dim" if r.hint_only_repeat else _STYLE[r.status]
        table.add_row(Padding(Text(short_config(r.config), overflow="fold"), (0, 0, 0, 2)), f"[{style}]{status}[/]",
                      _number(r.max_abs), wrong)
    return table


REPEATED_ON_INTERPRETER = ("run once per distinct meta-parameters and pre-hook: the interpreter computes the same "
                           "whatever the hints (num_warps, num_stages, num_ctas, occupancy)")
REPEATED_ON_PTX = ("run once per distinct compiled config: occupancy and 2-CTA mode are TileIR's, num_warps only a "
                   "hint to it (PTX compiles at least what the tile needs), so configs differing only there compile "
                   "alike")


def detail_lines(run: ValidateRun) -> list[str]:
    """A line per record that failed or errored, a line per distinct "not run" reason (with its
    count), and each kernel's scaling note once."""
    lines, scaled, margins = [], set(), set()
    not_run: dict[tuple[str, str], int] = {}
    for r in run.records:
        where = f"{r.kernel} {r.variant} {_dtypes(r)} {r.backend} [{short_config(r.config)}]"
        if r.status == NOT_RUN:  # hint-only repeats: one line for them all (each names its own twin)
            repeated = REPEATED_ON_INTERPRETER if r.repeat == Repeat.INTERPRETER else REPEATED_ON_PTX
            key = (r.backend, repeated if r.hint_only_repeat else r.reason.removeprefix("not run: "))
            not_run[key] = not_run.get(key, 0) + 1
        elif r.status != PASS:
            lines.append(f"{r.status}: {where}: {r.reason}")
        elif r.scaled_from and r.kernel not in scaled:
            scaled.add(r.kernel)
            lines.append(f"note: {r.kernel}: {describe_scaling(r.scaled_from, r.shapes)}")
        if r.status == PASS and r.max_abs is not None and r.atol is not None and r.max_abs > r.atol and \
                r.rtol and (r.kernel, _dtypes(r)) not in margins:  # a pass above atol: its relative margin says why
            # (a comparison widened to the original's own run-to-run spread says so in its reason: rtol 0)
            margins.add((r.kernel, _dtypes(r)))
            lines.append(f"note: {r.kernel} {_dtypes(r)}: passed with a max abs difference of {r.max_abs:.1e}, "
                         f"above atol {r.atol:.1e}: every element is within atol + rtol x |reference| "
                         f"(rtol {r.rtol:.1e}), as torch.allclose judges")
        if r.provenance.fallback:
            lines.append(f"fallback: {where}: {r.reason}")
    for (backend, reason), count in not_run.items():
        lines.append(f"not run: {backend} ({count} record{'s' if count > 1 else ''}): {reason}")
    return lines


def with_other_kernels(run: ValidateRun, artifacts: Path, kernels: list[str] | None) -> ValidateRun:
    """What validate.json keeps after `validate --kernel K`: this run's records, and those of the project's other
    kernels from the validate.json before it (made for the same project), so validating one kernel never drops
    another's records. The run printed is this one alone."""
    if not kernels:
        return run
    try:
        before = load_validate_run(artifacts)
    except UserError:
        return run
    if before.project != run.project:
        return run
    kept = [r for r in before.records if r.kernel not in kernels]
    if not kept:
        return run
    keys = {r.inputs for r in kept}
    return dataclasses.replace(run, records=[*kept, *run.records],
                               complete=[*[k for k in before.complete if k in keys], *run.complete],
                               notes=[*run.notes, f"the records of {len({r.kernel for r in kept})} other kernel(s) "
                                                  f"kept from the run of {before.started}"])


@adopting_machine_facts
def validate_command(
    options: TargetOptions,
    *,
    backends: list[str] | None = None,
    variant: str | None = None,
    all_configs: bool = True,
    timeout: float | None = None,
) -> ExitCode:
    """Everything behind the command; returns the exit code."""
    if variant not in (None, "original", "optimized", "both"):
        raise UserError(f"--variant: unknown value {variant!r}", hint="use original, optimized or both")
    variants = None if variant is None else ["original", "optimized"] if variant == "both" else [variant]
    target = prepared(options)
    project = target.project
    with Progress("validate", "cases", err_console) as progress:
        run = validate_project(project, kernels=options.kernels, backends=backends, variants=variants,
                               all_configs=all_configs, timeout=timeout, command=invoked_command(),
                               executor=target.executor, progress=progress, journal=True, machine=target.machine,
                               earlier=None if options.fresh else earlier_validation(project.artifacts))
    whole = with_other_kernels(run, project.artifacts, options.kernels)
    saved = save_validate_run(whole, project.artifacts)
    for note in whole.notes[len(run.notes):]:
        err_console.print(f"note: {note}", markup=False)
    code = target.exit_code(run.exit_code())
    early = target.ends_early(run, code, saved=saved, progress=progress, done=len(run.records), unit="records",
                              as_json=options.as_json)
    if early is not None:
        return early
    if not run.records:
        err_console.print("nothing to validate (no record for the chosen kernels, variants and backends)")
        return ExitCode.NOT_RUN
    console.print(summary_table(run))
    for line in detail_lines(run):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    for note in run.notes:
        err_console.print(f"note: {note}")
    shown = ", ".join(f"{n} {status}" for status, n in tally(run).items())
    console.print(f"{shown} in {run.seconds:.1f}s; records saved to {saved}")
    return code
