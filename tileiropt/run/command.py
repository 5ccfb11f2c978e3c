"""`tileiropt run`: resolve the target, run the pipeline with a Rich progress display, print the outcome."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from tileiropt.bench.run import BenchSettings
from tileiropt.capture.interpreter_route import ROUTE_NOTE
from tileiropt.capture.targets import TargetOptions
from tileiropt.errors import ExitCode, UserError
from tileiropt.invocation import invoked_command
from tileiropt.output import console, err_console, print_json
from tileiropt.phases import PHASES
from tileiropt.project.file import key_line
from tileiropt.project.spec import check_command
from tileiropt.records.run import RunResult
from tileiropt.report.verdict import ATTENTION
from tileiropt.run.pipeline import run_pipeline, run_target
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS, STATUSES

_STYLE: dict[str, str] = {PASS: "green", FAIL: "bold red", ERROR: "bold red", NOT_RUN: "yellow"}


def outcome_table(result: RunResult) -> Table:
    table = Table(title="tileiropt run", title_justify="left")
    for column in ("phase", "status", "s", "detail"):
        table.add_column(column, overflow="fold", justify="right" if column == "s" else "left")
    for phase in result.phases:
        detail = phase.detail
        if phase.phase == "report" and result.report and detail == result.report:
            detail = "written (its path below, whole)"  # a path folded mid-word in a narrow column cannot be pasted
        table.add_row(phase.phase, f"[{_STYLE.get(phase.status, '')}]{phase.status}[/]", f"{phase.seconds:.1f}",
                      escape(detail))
    return table


class PhaseProgress:
    """One progress line per phase: a spinner while it runs, its status when done."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, phase: str, message: str) -> None:
        if phase not in self.tasks:
            self.tasks[phase] = self.progress.add_task(phase, total=1)
        task = self.tasks[phase]
        if message in STATUSES:
            style = _STYLE.get(message, "")
            self.progress.update(task, completed=1, description=f"{phase}: [{style}]{message}[/]")
        elif message != "start":  # a phase's own progress line names the phase already: said once
            self.progress.update(task, description=f"{phase}: {escape(message.removeprefix(f'{phase}: '))}")


def run_command(
    options: TargetOptions,
    *,
    timeout: float | None = None,
    sizes: list[int] | None = None,
    capture: list[str] | None = None,
    capture_budget: float | None = None,
    capture_stall: float | None = None,
    in_place: bool = False,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    spread_gpus: bool = False,
    max_configs: int | None = None,
    hint_autotune: tuple[str, ...] = (),
) -> ExitCode:
    project = options.project(capture=capture, may_capture=True, include=include, exclude=exclude)
    if project.capture is not None and not capture and project.file is not None:
        check_capture(project.capture.command, project.file, project.root)  # the project's own `capture`
    if max_configs is not None:  # --max-configs over the project's `max_configs`
        project.max_configs = max_configs
    if hint_autotune:  # --hint-autotune beside the project's `hint_autotune`
        project.hint_autotune = tuple(dict.fromkeys([*project.hint_autotune, *hint_autotune]))
    if project.capture is not None and spread_gpus:
        project.capture.spread_gpus = True
    if project.capture is not None and capture_budget is not None:
        project.capture.budget = capture_budget
    if project.capture is not None and capture_stall is not None:
        project.capture.stall = capture_stall
    settings = BenchSettings(timeout=timeout, sizes=sizes or None)
    settings.check()
    command = invoked_command()
    replaced = other_target(project.artifacts, run_target(project))
    if replaced:  # one records folder per folder: a kernel file run beside another's replaces its records
        err_console.print(f"note: the records in {project.artifacts} were made by `{replaced}`; this run will "
                          "replace them", markup=False, soft_wrap=True)
    run = functools.partial(run_pipeline, project, kernels=options.kernels, timeout=timeout, bench_settings=settings,
                            command=command, in_place=in_place, fresh=options.fresh,
                            executor=options.resolved_executor(project))
    if options.as_json:
        result = run()
        result.wall_seconds = process_seconds()
        print_json(result)
        return ExitCode(result.exit_code)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        result = run(on_event=PhaseProgress(progress), console=err_console)
    result.wall_seconds = process_seconds()
    console.print(outcome_table(result))
    print_outcome(result)
    return ExitCode(result.exit_code)


def check_capture(command: list[str] | None, file: Path, root: Path) -> None:
    """A project's `capture` command can start, checked where a run will start it (not when any command reads the
    project: its records are read on machines without the program): a typo ends here, naming the key."""
    try:
        check_command(command, root)
    except UserError as exc:
        where = exc.file if exc.file else ""
        try:
            line = key_line(file.read_text(encoding="utf-8"), "project.capture")
        except OSError:
            line = None
        raise UserError(f"[project.capture] {exc.message.replace('the command after `--`', 'the capture command')}"
                        + (f" ({where})" if where else ""), file=str(file), line=line, hint=exc.hint) from None


def other_target(artifacts: Path, target: str) -> str | None:
    """The command of the run whose records `artifacts` holds, where that run covered another target than this
    one (`tileiropt run 01.py`, then `tileiropt run 02.py` in the same folder); None where the same, or unknown."""
    try:
        before = json.loads((artifacts / "run.json").read_text(encoding="utf-8"))
        ran, command = before.get("target"), " ".join(str(c) for c in before["command"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return command if ran and ran != target else None


def process_seconds() -> float | None:
    """Seconds since this process started (Linux's /proc); None where that cannot be read."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()  # after the command's name
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return round(max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")), 2)  # field 22: its start
    except (OSError, ValueError, IndexError):
        return None


def cost_line(result: RunResult) -> str | None:
    """The tool's own time: in all, in the phases, and before them."""
    if result.wall_seconds is None:
        return None
    before = max(0.0, result.wall_seconds - result.seconds)
    return (f"took {result.wall_seconds:.1f} s: {result.seconds:.1f} s from the first phase to the report (the "
            f"phases above, and their waits), {before:.1f} s before and after (Python, the tool's imports, reading "
            "the target, rendering the report)")


def print_outcome(result: RunResult) -> None:
    """What made the run's answer what it is, below its table: the program's failure, the kernels stopped, those
    whose verdict needs attention, the files set aside or not written in place; then where the artifacts are."""
    if result.program and result.program.get("cut"):
        err_console.print(f"[bold red]cut[/]: {escape(result.program['summary'])}", soft_wrap=True)
    elif result.program and result.program.get("needs_gpu") and result.program.get("launched_none"):
        err_console.print(f"[bold]not run here[/]: the program needs a GPU before its first launch: "
                          f"{escape(result.program['summary'])}; to validate its kernels here under the interpreter: "
                          f"{escape(str(result.program.get('hint')))} {ROUTE_NOTE}", soft_wrap=True)
    elif result.program and result.program.get("launched_none"):
        err_console.print(f"[bold red]nothing to check[/]: {escape(result.program['summary'])}", soft_wrap=True)
    elif result.program:
        tail = "; its last lines:" if result.program.get("output") else ""
        err_console.print(f"[bold red]the program failed[/]: {escape(result.program['summary'])}{tail}",
                          soft_wrap=True)
        for line in result.program.get("output") or []:
            err_console.print(f"  | {line}", markup=False, soft_wrap=True, highlight=False)
    for kernel, stop in result.stopped.items():
        err_console.print(f"[bold red]stopped[/] {escape(kernel)} at {stop['phase']}: {escape(stop['reason'])}",
                          soft_wrap=True)
    for kernel, verdict in result.verdicts.items():  # the report's "needs attention", which made the answer no
        if verdict.get("bucket") == ATTENTION and kernel not in result.stopped:
            err_console.print(f"[bold red]needs attention[/] {escape(kernel)}: {escape(verdict.get('text') or '')}",
                              soft_wrap=True)
    for path, rejected in result.rejected.items():
        err_console.print(f"[bold red]set aside[/] {escape(path)} -> {escape(rejected['moved_to'])}: "
                          f"{escape(rejected['reason'])}", soft_wrap=True)
    for path, reason in result.in_place_refused.items():
        err_console.print(f"[bold red]not written in place[/] {escape(path)}: {escape(reason)}", soft_wrap=True)
    for path, backup in result.in_place.items():
        console.print(f"rewritten in place: {path} (original kept as {backup})", markup=False, soft_wrap=True)
    if result.exit_code == ExitCode.INTERRUPTED:
        err_console.print("interrupted: every worker ended; the records that finished are saved (run again to go on)")
    cost = cost_line(result)
    if cost is not None:
        console.print(cost, markup=False, soft_wrap=True)
    console.print(f"artifacts: {result.artifacts}", markup=False, soft_wrap=True)
    if result.report:
        console.print(f"report: {result.report}", markup=False, soft_wrap=True)
    missing = [p.name for p in PHASES if p.name not in {r.phase for r in result.phases} and not p.optional]
    if missing:
        err_console.print(f"phases not reached: {', '.join(missing)}")
