"""`tileiropt run`: the phases end to end (`tileiropt.phases.PHASES`, in that order), then the report.

Each phase is called the same way (its package's `phase.py`: `run(context, earlier outcomes)`) and returns an
outcome (`contract.outcome`); which kernels go on and whether the run failed are decided over the outcomes by
`contract.policy`. A kernel stops -- and its later phases say why -- when its original fails the compatibility
check, its file cannot be classified or rewritten, or its optimized file fails validation; the other kernels go
on. Exit codes: 0 everything that could run passed (a bench that could not run for want of a GPU is not a
failure), 1 a kernel stopped or a benchmark errored, 2 bad input, 3 what was asked needs what this machine lacks.
"""

from __future__ import annotations

import datetime as _dt
import sys
import time
from pathlib import Path
from typing import TypeVar

from rich.console import Console

from tileiropt.apply.phase import ApplyPhase
from tileiropt.bench.phase import BenchPhase
from tileiropt.bench.records import BenchRun
from tileiropt.bench.run import BenchSettings, earlier_bench, kernel_info
from tileiropt.capture.capture import CaptureResult
from tileiropt.capture.phase import CapturePhase
from tileiropt.check.environment import CheckReport, choose_release
from tileiropt.check.phase import CheckPhase
from tileiropt.classify.model import FileModels
from tileiropt.classify.phase import ClassifyPhase
from tileiropt.contract import policy
from tileiropt.contract.context import EventCallback, PhaseRunner, RunContext, RunRequest, record_of
from tileiropt.contract.outcome import Outcome
from tileiropt.contract.phase_records import ApplyRecord, ClassifyRecord
from tileiropt.contract.store import Store
from tileiropt.engine.engine import RunWorkers
from tileiropt.engine.executors import Executor
from tileiropt.engine.workers import take_worker_starts
from tileiropt.errors import ExitCode, check_seconds
from tileiropt.project.spec import Project
from tileiropt.records.run import RunResult
from tileiropt.report.artifacts import Artifacts
from tileiropt.report.phase import report_run
from tileiropt.run.settle import settle
from tileiropt.schema import NOT_RUN
from tileiropt.validate.phase import CompatibilityPhase, ValidatePhase
from tileiropt.validate.records import ValidateRun
from tileiropt.validate.run import earlier_validation

R = TypeVar("R")

# the phases of `tileiropt.phases.PHASES` that run over the kernels, in that order (a test holds them to it); the
# report is rendered last, from what they recorded, once the run has settled
PHASE_RUNNERS: tuple[PhaseRunner, ...] = (CheckPhase(), CapturePhase(), CompatibilityPhase(), ClassifyPhase(),
                                          ApplyPhase(), ValidatePhase(), BenchPhase())


def run_target(project: Project) -> str:
    """What a run covers, to tell two runs that share a records folder apart: its project file, else its library
    folder (whatever files it holds today), else the kernel files it captures or validates."""
    if project.file is not None:
        return str(Path(project.file).resolve())
    capture = project.capture
    if capture is not None and capture.library is not None:
        return f"library {Path(capture.library).resolve()}"
    files = capture.files if capture is not None else [spec.path for spec in project.kernels]
    return ", ".join(sorted({str(Path(f).resolve()) for f in files}))


class Pipeline:
    """Runs the phases over a project. Building one reads and starts nothing: `run` chooses the release, reads
    what a re-run may reuse and starts the workers."""

    def __init__(self, project: Project, kernels: list[str] | None, timeout: float | None,
                 bench_settings: BenchSettings | None, command: list[str], on_event: EventCallback | None,
                 in_place: bool = False, fresh: bool = False, executor: Executor | None = None,
                 console: Console | None = None):
        request = RunRequest(timeout=timeout, bench_settings=bench_settings or BenchSettings(timeout=timeout),
                             command=command, in_place=in_place, fresh=fresh, executor=executor, console=console)
        self.context = RunContext(project, request, specs=project.select(kernels), store=Store(project.artifacts),
                                  models=FileModels(), on_event=on_event or (lambda phase, message: None))
        self.outcomes: list[Outcome] = []  # every phase's, in the order they ran
        self.result = RunResult(phases=[], kernels=[], stopped={}, artifacts=str(project.artifacts),
                                command=command, project=str(project.file) if project.file else None,
                                cwd=str(Path.cwd()), target=run_target(project))
        self.interrupted = False
        self.step = "check"  # what the run is doing: a phase, or after them the report's (joining, settling)

    def start(self) -> None:
        """The release every phase follows; what a re-run may reuse, read before this run writes anything; the
        workers of validate and bench, kept between phases (the PTX worker that validated a kernel times it)."""
        context = self.context
        context.release = choose_release(context.project.tileir_version)
        if not context.request.fresh:
            context.earlier_validation = earlier_validation(context.store.folder)
            context.earlier_bench = earlier_bench(context.store.folder)
        context.workers = RunWorkers(context.release.release.version, keep=True)

    def take(self, runner: PhaseRunner) -> None:
        """Run one phase (or say why it did not: no kernel left), timed, and keep its outcome."""
        name, context = runner.about.name, self.context
        if runner.about.needs_kernels and not policy.live(context.specs, self.outcomes):
            why = "no kernel left: every kernel stopped" if context.specs else "no kernel: the capture launched none"
            self.keep(Outcome.of(name, NOT_RUN, why))
            context.on_event(name, NOT_RUN)
            return
        context.on_event(name, "start")
        self.step = name
        started = time.monotonic()
        take_worker_starts()  # what an earlier phase's workers left is not this phase's
        outcome = runner.run(context, list(self.outcomes))
        outcome.result.seconds = round(time.monotonic() - started, 3)
        starts = take_worker_starts()
        outcome.result.workers, outcome.result.worker_start_s = len(starts), round(sum(starts), 3)
        self.keep(outcome)
        context.on_event(name, outcome.status)

    def keep(self, outcome: Outcome) -> None:
        """The outcome joins the run's: its row of run.json, the kernels it stopped, the program's failure."""
        self.outcomes.append(outcome)
        self.result.phases.append(outcome.result)
        self.result.stopped = {kernel: {"phase": stop.phase, "reason": stop.reason,
                                        **({"cause": stop.cause} if stop.cause else {})}
                               for kernel, stop in policy.stopped(self.outcomes).items()}
        if outcome.program is not None:
            self.result.program = outcome.program

    def join_later(self) -> None:
        """What a phase left going beside the later ones (a library's other files, classified) joins its row, and
        the time the run waited for it joins the row's seconds (what ran beside the other phases is not counted:
        they took that time)."""
        for outcome in self.outcomes:
            if outcome.later is not None:
                later, outcome.later = outcome.later, None
                waited = time.monotonic()
                outcome.result.status, outcome.result.detail, outcome.record = later()
                outcome.result.seconds = round(outcome.result.seconds + time.monotonic() - waited, 3)

    def run(self) -> RunResult:
        started = time.monotonic()
        self.result.started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self.start()
        settled: list[Outcome] = []
        try:
            for runner in PHASE_RUNNERS:
                if runner.wanted(self.context):
                    self.take(runner)
            self.step = "report"  # what follows the phases: the report's (the background files joined, settling)
            self.join_later()
            settled.append(settle(self.context, self.outcomes, self.result))
        except KeyboardInterrupt:  # every worker has ended; the records that finished are saved
            self.interrupted = True
            kept = any(o.phase == self.step for o in self.outcomes)  # between two phases: neither was cut
            cut = Outcome.of("report" if kept else self.step, NOT_RUN, "interrupted")
            cut.result.interrupted = True
            self.keep(cut)
        finally:
            self.context.workers.close()  # the workers kept between phases end, the run's Triton caches go
            self.context.adopted.close()  # the machine's facts are probed again by whatever runs next
        self.result.kernels = [kernel_info(s, self.context.request.bench_settings.sizes) for s in self.context.specs]
        outcomes, set_aside, interrupted = [*self.outcomes, *settled], bool(self.result.rejected), self.interrupted

        def decide(attention: list[str | None]) -> ExitCode:  # the run's one exit code, once the verdicts are known
            return policy.exit_code(outcomes, set_aside=set_aside, interrupted=interrupted, attention=attention)

        self.result.seconds = round(time.monotonic() - started, 3)  # every phase but the report's rendering
        report_run(self.result, self.held(), self.context.on_event, decide)
        return self.result

    def held(self) -> Artifacts:
        """The records this run made, as it holds them: the report reads only the others from the folder. An
        interrupted run holds only what finished before it: the report reads the folder, where that was saved."""
        if self.interrupted:
            return Artifacts(folder=self.context.store.folder)

        def record(phase: str, kind: type[R]) -> R | None:
            found = record_of(self.outcomes, phase)
            return found if isinstance(found, kind) else None

        return Artifacts(folder=self.context.store.folder, check=record("check", CheckReport),
                         capture=record("capture", CaptureResult), classify=record("classify", ClassifyRecord),
                         apply=record("apply", ApplyRecord),
                         validate=record("validate", ValidateRun) or record("compatibility", ValidateRun),
                         bench=record("bench", BenchRun))


def run_pipeline(project: Project, *, kernels: list[str] | None = None, timeout: float | None = None,
                 bench_settings: BenchSettings | None = None, command: list[str] | None = None,
                 on_event: EventCallback | None = None, in_place: bool = False, fresh: bool = False,
                 executor: Executor | None = None, console: Console | None = None) -> RunResult:
    """Run every phase over `project` (or the named `kernels`); records go to its artifacts folder."""
    if timeout is not None:
        check_seconds("--timeout", timeout)
    pipeline = Pipeline(project, kernels, timeout, bench_settings,
                        list(command) if command is not None else list(sys.argv), on_event, in_place, fresh,
                        executor, console)
    return pipeline.run()
