"""`tileiropt run`: the phases end to end (`tileiropt.phases.PHASES`, in that order), then the report.

A kernel stops -- and its later phases say why -- when its original fails the compatibility
check, its file cannot be classified or rewritten, or its optimized file fails validation; the
other kernels go on. Exit codes: 0 everything that could run passed (a bench that could not run
for want of a GPU is not a failure), 1 a kernel stopped or a benchmark errored, 2 bad input.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tileiropt.apply.apply import helper_level, write_helper
from tileiropt.apply.command import apply_document, apply_paths
from tileiropt.bench.records import ERROR as BENCH_ERROR
from tileiropt.bench.records import (
    code_proof,
    save_bench_run,
)
from tileiropt.bench.run import BenchSettings, bench_project, earlier_bench, kernel_info
from tileiropt.capture.capture import add_captured_kernels, cut_summary
from tileiropt.check.device import Device
from tileiropt.check.environment import check_environment, choose_release
from tileiropt.check.machine import Machine
from tileiropt.check.machine_facts import machine_facts
from tileiropt.classify.background import BackgroundClassify
from tileiropt.classify.classify import classify_paths
from tileiropt.classify.command import classify_json
from tileiropt.classify.ir.specialize import ir_dtype
from tileiropt.classify.model import FileModels
from tileiropt.engine.engine import RunWorkers
from tileiropt.engine.executors import Executor, validate_per_gpu
from tileiropt.engine.job_timing import JobTiming
from tileiropt.engine.progress import Progress
from tileiropt.engine.resume import Earlier
from tileiropt.engine.workers import take_worker_starts
from tileiropt.errors import ExitCode, check_seconds, run_exit_code
from tileiropt.harness.backends import BACKENDS, default_backends
from tileiropt.harness.provenance import file_digest
from tileiropt.phases import PHASES, Phase
from tileiropt.project.spec import KernelSpec, Project
from tileiropt.records.phases import apply_from_dict, classify_from_dict
from tileiropt.records.run import PhaseResult, RunResult
from tileiropt.releases import Choice
from tileiropt.report.artifacts import (
    APPLY_FILE,
    CHECK_FILE,
    CLASSIFY_FILE,
    REPORT_FILE,
    RUN_FILE,
    load_artifacts,
    save_record,
)
from tileiropt.report.build import build_report
from tileiropt.report.markdown import write_markdown
from tileiropt.report.verdict import ATTENTION
from tileiropt.run.decisions import not_proven_not_slower, rejections
from tileiropt.run.phase_reuse import (
    apply_inputs,
    classify_inputs,
    earlier_apply,
    earlier_classify,
    written_before,
)
from tileiropt.run.settle import set_aside, write_in_place
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS
from tileiropt.validate.records import ValidateRun, save_validate_run
from tileiropt.validate.run import REPEATED, earlier_validation, validate_project

EventCallback = Callable[[str, str], None]  # (phase, message)


@dataclass(frozen=True)
class RunRequest:
    """What a run was asked to do, beside its project and kernels: it never changes while the run goes."""

    timeout: float | None  # seconds per record or measurement (None: the project's)
    bench_settings: BenchSettings
    in_place: bool = False  # write each optimized file over its kernel file once proven
    fresh: bool = False  # redo every record
    executor: Executor | None = None  # where the workers run (None: this host)
    console: Any = None  # where progress goes (None: only the phase events)


class Pipeline:
    """Runs the phases over a project, keeping track of the kernels still going. Building one reads and starts
    nothing: `run` chooses the release, reads what a re-run may reuse and starts the workers."""

    def __init__(self, project: Project, kernels: list[str] | None, timeout: float | None,
                 bench_settings: BenchSettings | None, command: list[str], on_event: EventCallback | None,
                 in_place: bool = False, fresh: bool = False, executor: Executor | None = None,
                 console: Any = None):
        # what the run was asked: it never changes while the run goes
        self.project = project
        self.specs = project.select(kernels)
        self.artifacts = project.artifacts
        self.request = RunRequest(timeout=timeout, bench_settings=bench_settings or BenchSettings(timeout=timeout),
                                  in_place=in_place, fresh=fresh, executor=executor, console=console)
        self.on_event = on_event or (lambda phase, message: None)
        # what `start` sets up for the phases
        self.release: Choice  # every phase follows this CUDA Tile IR release
        self.workers: RunWorkers  # validate's and bench's, kept between phases
        self.earlier: Earlier | None = None  # what a re-run may reuse, read before it writes anything
        self.earlier_bench: Earlier | None = None
        self.adopted = contextlib.ExitStack()  # the machine's facts, adopted from the check to the end of the run
        self.models = FileModels()  # each kernel file read, parsed and classified once, by classify and apply
        # what the phases found so far: the run's record, and what its decisions read
        self.result = RunResult(phases=[], kernels=[kernel_info(s, self.request.bench_settings.sizes)
                                                    for s in self.specs],
                                stopped={}, artifacts=str(self.artifacts), command=command,
                                project=str(project.file) if project.file else None, cwd=str(Path.cwd()))
        self.validation: ValidateRun | None = None
        self.bench_run: Any = None
        self.jobs: list[JobTiming] = []  # the current phase's jobs of the engine
        # (GPU, TileIR ready, the GPU's memory in GiB, emulated), once checked: `prestart`
        self.ready_to_start: tuple[bool, bool, float | None, bool] | None = None
        self.bench_failed = False
        self.capture_failed = False
        self.interrupted = False
        self.not_run_here = False  # the program needs what this machine lacks (a GPU)
        self.library_rest: BackgroundClassify | None = None  # a library's files no launch needs, being classified

    # ------------------------------------------------------------------ helpers

    @property
    def live(self) -> list[KernelSpec]:
        return [s for s in self.specs if s.name not in self.result.stopped]

    def stop(self, kernel: str, phase: str, reason: str) -> None:
        if kernel not in self.result.stopped:
            self.result.stopped[kernel] = {"phase": phase, "reason": reason}

    def phase(self, phase: Phase, action: Callable[[], PhaseResult]) -> None:
        name = phase.name
        if not self.live and phase.needs_kernels:
            why = "no kernel left: every kernel stopped" if self.specs else "no kernel: the capture launched none"
            self.result.phases.append(PhaseResult(name, NOT_RUN, 0.0, why))
            self.on_event(name, NOT_RUN)
            return
        self.on_event(name, "start")
        started = time.monotonic()
        take_worker_starts()  # what an earlier phase's workers left is not this phase's
        self.jobs = []
        result = action()
        result.seconds = round(time.monotonic() - started, 3)
        result.jobs = self.jobs
        starts = take_worker_starts()
        result.workers, result.worker_start_s = len(starts), round(sum(starts), 3)
        self.result.phases.append(result)
        self.on_event(name, result.status)

    def record_event(self, phase: str) -> Callable[[Any], None]:
        def event(record: Any) -> None:
            if self.request.console is None:  # else the progress line says more
                self.on_event(phase, f"{record.kernel} {record.variant} {record.backend}")

        return event

    def save_validation(self, run: ValidateRun) -> None:
        """Merge `run` into the records of this run's validate.json."""
        if self.validation is None:
            self.validation = run
        else:
            self.validation.merge(run)
        save_validate_run(self.validation, self.artifacts)
        if run.interrupted:
            raise KeyboardInterrupt("interrupted")  # the records that finished are saved

    def progress(self, phase: str, unit: str) -> Any:

        if self.request.console is None:
            return None
        return Progress(phase, unit, self.request.console, on_status=lambda text: self.on_event(phase, text))

    def validation_options(self, phase: str) -> dict[str, Any]:
        return {"executor": self.request.executor, "earlier": self.earlier, "journal": True,
                "progress": self.progress(phase, "cases"), "workers": self.workers}

    def stop_on_failures(self, run: ValidateRun, phase: str, what: str) -> int:
        """Stop every kernel with a failed or errored record; return how many stopped."""
        stopped = 0
        for record in run.records:
            if record.status in (FAIL, ERROR) and record.kernel not in self.result.stopped:
                self.stop(record.kernel, phase, f"{what} {record.status} on {record.backend} "
                                                f"({record.config}): {record.reason}")
                stopped += 1
        return stopped

    def stop_unvalidated(self, run: ValidateRun) -> int:
        """Stop every kernel whose optimized file did not run on any backend, for a reason the project controls
        (no optimized file, no reference, ...): a run that proved nothing about it must not exit 0. Reasons of
        the machine (no GPU, TileIR not ready) are not the user's: the interpreter or PTX still runs."""
        stopped = 0
        for spec in self.live:
            mine = [r for r in run.records if r.kernel == spec.name and r.variant == "optimized"]
            if any(r.status != NOT_RUN for r in mine):
                continue
            reasons = list(dict.fromkeys(r.reason for r in mine)) or ["no validation record"]
            self.stop(spec.name, "validate", "the optimized file was never validated: " + "; ".join(reasons))
            stopped += 1
        return stopped

    # ------------------------------------------------------------------ phases

    def check(self) -> PhaseResult:

        origin = self.adopted.enter_context(machine_facts(self.request.fresh))  # held until the run ends
        report = check_environment(release=self.release.release.version)
        report.release["origin"] = self.release.origin
        save_record(self.artifacts, CHECK_FILE, report)
        device = Device.from_json(report.gpu)
        self.ready_to_start = (device.is_gpu, report.tileir_ready, device.memory_gib,
                               bool(report.triton.get("emulated")))
        ready = "TileIR ready" if report.tileir_ready else "TileIR not ready: " + "; ".join(report.reasons)
        return PhaseResult("check", PASS, detail=f"{device.name}; {ready}; machine {origin}")

    def prestart(self) -> None:
        """Start the validation workers the run will need first as the program starts: their start-up (torch,
        Triton, CUDA) overlaps the program's run instead of following it. One per slot of the compatibility
        phase's backend, then one per slot of the next backend validate runs, up to half the host's cores (they
        import torch while the program runs). Not on SLURM (a job step is not started ahead of its work), nor
        before the check said what this machine runs."""
        executor = (self.request.executor or Executor()).check()
        if executor.kind != "local" or self.ready_to_start is None:
            return
        has_gpu, tileir_ready, memory_gib, emulated = self.ready_to_start
        first = "ptx" if has_gpu else "interpret"  # the compatibility phase's backend
        later = [name for name in default_backends(has_gpu, tileir_ready, emulated) if name != first
                 and (name != "tileir" or tileir_ready)]
        launchers = executor.slots(gpu_work=has_gpu, per_gpu=validate_per_gpu(memory_gib=memory_gib), cpu_slots=1)
        wanted = [(launcher, BACKENDS[name]) for name in [first, *later[:1]] for launcher in launchers]
        for launcher, backend in wanted[:max(2, (os.cpu_count() or 1) // 2)]:
            self.workers.prestart(launcher, [backend])

    def compatibility(self) -> PhaseResult:

        machine = Machine.probe(self.workers.release)
        backend = "ptx" if machine.has_gpu else "interpret"
        run = validate_project(self.project, kernels=[s.name for s in self.live], backends=[backend],
                               variants=["original"], timeout=self.request.timeout, command=self.result.command,
                               on_record=self.record_event("compatibility"), machine=machine,
                               **self.validation_options("compatibility"))
        self.save_validation(run)
        self.jobs = list(run.jobs)
        stopped = self.stop_on_failures(run, "compatibility", "the original file")
        passed = sum(r.status == PASS for r in run.records)
        if stopped:
            return PhaseResult("compatibility", FAIL, detail=f"{stopped} kernel(s) failed on {backend}")
        if not passed:
            return PhaseResult("compatibility", NOT_RUN, detail="no record ran: " + "; ".join(
                dict.fromkeys(r.reason for r in run.records)))
        return PhaseResult("compatibility", PASS, detail=f"{passed} record(s) passed on {backend}")

    def classify(self) -> PhaseResult:

        paths = list(dict.fromkeys(s.path for s in self.specs))  # static: even a stopped kernel is classified
        rest: list[Path] = []  # a library's files no captured launch needs: classified beside the later phases
        if self.project.capture is not None:  # every target file (a whole library), launched or not
            launched = {p.resolve() for p in paths}
            rest = [p for p in dict.fromkeys(self.project.capture.files) if p.resolve() not in launched]
        # the IR check lowers with the float dtypes the project (or a capture) uses: exact, not assumed
        lowered = {ir_dtype(d) for s in self.specs for variant in s.dtypes for d in variant.values()}
        dtypes = sorted(d for d in lowered if d is not None) or None
        inputs = classify_inputs([*paths, *rest], self.release.release.version, dtypes)
        document = None if self.request.fresh else earlier_classify(self.artifacts, inputs)
        reused = document is not None
        if document is None:
            first = classify_paths(paths, release=self.release.release, dtypes=dtypes, models=self.models)
            if rest and paths:
                # no launch of theirs says their dtypes: lowered as `tileiropt classify` lowers a file alone; the
                # whole record, keyed by every file, once the rest is in (`join_library_rest`)
                self.library_rest = BackgroundClassify(rest, self.release.release, first, inputs)
                inputs = classify_inputs(paths, self.release.release.version, dtypes)  # until then, these only
            else:
                first += classify_paths(rest, release=self.release.release, dtypes=dtypes, models=self.models)
            document = {**classify_json(first, self.release), "inputs": inputs}
        save_record(self.artifacts, CLASSIFY_FILE, document)
        record = classify_from_dict(document)
        failed = {Path(f.file).resolve(): f.message or f.status for f in record.files if f.status == ERROR}
        for spec in self.specs:
            if spec.path.resolve() in failed:
                self.stop(spec.name, "classify", f"cannot classify {spec.path.name}: {failed[spec.path.resolve()]}")
        how = " (reused: the files, the release and the tool unchanged)" if reused else ""
        if self.library_rest is not None:
            how = f"; the library's other {len(rest)} file(s) are classified beside the later phases"
        return self.classify_result(record, len(failed), how)

    def classify_result(self, record: Any, failed: int, how: str) -> PhaseResult:
        if failed:
            return PhaseResult("classify", ERROR, detail=f"{failed} file(s) could not be classified{how}")
        helpers = sum(1 for k in record.kernels if isinstance(k, dict) and not k.get("is_entry", True))
        called = f" ({len(record.kernels) - helpers} launched by the host, {helpers} helper(s) they call)" \
            if helpers else ""
        return PhaseResult("classify", PASS, detail=f"{len(record.kernels)} Triton kernel(s){called} in "
                                                    f"{len(record.files)} file(s){how}")

    def join_library_rest(self) -> None:
        """The library's other files, classified beside the later phases: their results join the launched files'
        in classify.json (its inputs then those of every file), and the classify phase's line counts them."""
        rest, self.library_rest = self.library_rest, None
        if rest is None:
            return
        waited = time.monotonic()
        results = rest.join()
        document = {**classify_json(results, self.release), "inputs": rest.inputs}
        save_record(self.artifacts, CLASSIFY_FILE, document)
        record = classify_from_dict(document)
        failed = sum(1 for f in record.files if f.status == ERROR)
        how = (f"; {len(results) - len(rest.first)} of the files, those no captured launch needs, classified beside "
               f"the later phases (waited {time.monotonic() - waited:.1f} s for them at the end)")
        phase = next(p for p in self.result.phases if p.phase == "classify")
        done = self.classify_result(record, failed, how)
        phase.status, phase.detail = done.status, done.detail

    def apply(self) -> PhaseResult:

        pairs = list(dict.fromkeys((spec.path.resolve(), spec.optimized_path.resolve()) for spec in self.live))
        inputs = apply_inputs(pairs, self.project.max_configs, self.release.release.version,
                              self.project.hint_autotune)
        document = None if self.request.fresh else earlier_apply(self.artifacts, inputs)
        reused = document is not None
        if document is None:
            results, errors = [], []
            library = self.project.capture.library if self.project.capture is not None else None
            ours = written_before(self.artifacts)
            for path, output in pairs:  # once per (file, optimized path): kernels sharing a file may name their own
                if output.is_file() and ours.get(str(output)) == file_digest(output):
                    output.unlink()  # as the last apply wrote it (an unchanged copy has no marker): ours to redo
                output.parent.mkdir(parents=True, exist_ok=True)  # outside the project: under artifacts
                level = helper_level(path, library) if library is not None and path.is_relative_to(
                    library.resolve()) else None  # a library's files share one helper module
                written, problems = apply_paths([path], output=output, max_configs=self.project.max_configs,
                                                release=self.release.release, models=self.models, helper_level=level,
                                                hint_autotune=self.project.hint_autotune)
                for result in written:
                    write_helper(result, level)
                results += written
                errors += problems
            document = {**apply_document(results, errors, dry_run=False, choice=self.release), "inputs": inputs,
                        "outputs": {str(o): file_digest(o) for _, o in pairs if o.is_file()}}
        save_record(self.artifacts, APPLY_FILE, document)
        record = apply_from_dict(document)
        for error in record.errors:
            for spec in self.live:
                if Path(error.file).resolve() == spec.path.resolve():
                    self.stop(spec.name, "apply", f"apply failed: {error.error}")
        count = sum(1 for f in record.files if f.output)
        if record.errors:
            return PhaseResult("apply", ERROR, detail=f"{len(record.errors)} file(s) could not be rewritten")
        how = " (reused: the files, the release and the tool unchanged, the outputs as written)" if reused else ""
        return PhaseResult("apply", PASS, detail=f"{count} optimized file(s) written{how}")

    def validate(self) -> PhaseResult:

        run = validate_project(self.project, kernels=[s.name for s in self.live], variants=["optimized"],
                               timeout=self.request.timeout, command=self.result.command,
                               on_record=self.record_event("validate"), **self.validation_options("validate"))
        self.save_validation(run)
        self.jobs = list(run.jobs)
        stopped = self.stop_on_failures(run, "validate", "the optimized file")
        stopped += self.stop_unvalidated(run)
        counts = run.counts()
        repeats = sum(r.hint_only_repeat for r in run.records)
        shown = {**counts, NOT_RUN: counts[NOT_RUN] - repeats, REPEATED: repeats}
        detail = ", ".join(f"{n} {status}" for status, n in shown.items() if n)
        if stopped:
            return PhaseResult("validate", FAIL, detail=f"{stopped} kernel(s) failed: {detail}")
        return PhaseResult("validate", PASS if counts[PASS] else NOT_RUN, detail=detail)

    def capture(self) -> PhaseResult:
        """Run the program, keep the distinct launches of the target files' kernels as replay specs."""
        request = self.project.capture
        assert request is not None
        machine = Machine.probe(self.workers.release)
        result, specs = add_captured_kernels(self.project, machine, self.request.timeout, fresh=self.request.fresh,
                                             before_program=self.prestart, on_progress=self.capture_progress())
        self.specs += specs
        self.result.kernels += [kernel_info(s, self.request.bench_settings.sizes) for s in specs]
        kernels = len({(s.launch.kernel, s.launch.file) if s.launch else (None, None) for s in specs})
        never = result.never_launched_text()
        how = (f"reused from the capture of {result.started or 'an earlier run'} (the program, its files and the "
               "kernel files unchanged; --fresh runs it again)") if result.reused else \
            f"in {result.seconds:.1f} s" + ("" if result.failure else f"; {result.ended}")  # the failure says it
        detail = (f"{len(specs)} distinct launch(es) of {kernels} kernel(s) {how}"
                  + (f"; never launched: {never}" if never else ""))
        if result.outside:
            detail += f"; {len(result.outside)} kernel(s) launched from outside the targets"
        failure = result.failure
        if failure is not None:
            self.result.program = {"command": result.command, **failure.to_json(), "summary": failure.summary()}
        if result.cut:  # never a pass: what it launched before is still replayed, the coverage is partial
            self.capture_failed = True
            self.result.program = {"command": result.command, "cut": result.cut, "where": result.where,
                                   "summary": cut_summary(result.cut, result.where)}
            return PhaseResult("capture", FAIL, detail=f"{detail}; {cut_summary(result.cut, result.where)}")
        if not specs:
            files = ", ".join(p.name for p in request.files) if request.library is None else \
                f"the {len(request.files)} kernel file(s) under {request.library.name}/"
            if failure is not None and failure.needs_gpu and not machine.has_gpu:
                self.not_run_here = True
                return PhaseResult("capture", NOT_RUN, detail=f"the program needs a GPU and this machine has none: "
                                                              f"{failure.summary()}")
            self.capture_failed = True
            if failure is not None:
                return PhaseResult("capture", ERROR, detail=f"the program failed before launching a kernel of "
                                                            f"{files}: {failure.summary()}")
            detail = f"no launch of a kernel in {files} was captured; {result.ended}"
            if request.command is None:
                detail += ("; module-level benchmarks are not run during a capture: give a command that launches "
                           f"the kernels after `--`: tileiropt run {request.files[0].name} -- <command>")
            return PhaseResult("capture", ERROR, detail=detail)
        if failure is not None and failure.needs_gpu and not machine.has_gpu:  # the machine's, not the code's
            return PhaseResult("capture", PASS, detail=f"{detail}; the rest of the program did not run here: it needs "
                                                       f"a GPU and this machine has none ({failure.summary()})")
        if failure is not None:  # what it launched before failing is still replayed
            self.capture_failed = True
            return PhaseResult("capture", FAIL, detail=f"{detail}; the program failed: {failure.summary()}")
        return PhaseResult("capture", PASS, detail=detail)

    def capture_progress(self) -> Callable[[str], None]:
        """Where the capture's progress line goes: the phase's line on a terminal; in a pipe, a line every 30 s."""
        printed = [time.monotonic()]

        def show(text: str) -> None:
            self.on_event("capture", text)
            console = self.request.console
            if console is not None and not console.is_terminal and time.monotonic() - printed[0] >= 30:
                printed[0] = time.monotonic()
                console.print(f"capture: {text}", markup=False, highlight=False, soft_wrap=True)

        return show

    def bench(self) -> PhaseResult:

        def on_row(row: Any) -> None:
            if self.request.console is None:  # else the progress line says more
                self.on_event("bench", f"{row.kernel} {row.short_label} size {row.size}")

        run = bench_project(self.project, kernels=[s.name for s in self.live], settings=self.request.bench_settings,
                            command=self.result.command, on_row=on_row, executor=self.request.executor, journal=True,
                            earlier=self.earlier_bench, progress=self.progress("bench", "rows"),
                            workers=self.workers)
        save_bench_run(run, self.artifacts)
        self.bench_run = run
        self.jobs = list(run.jobs)
        if run.interrupted:
            raise KeyboardInterrupt("interrupted")  # the rows that finished are saved
        counts = run.counts()
        detail = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
        proof = code_proof(run.rows)
        if proof:
            detail += f"; {proof}"
        if counts[BENCH_ERROR]:
            self.bench_failed = True
            return PhaseResult("bench", ERROR, detail=detail)
        if run.exit_code() == ExitCode.NOT_RUN:
            reasons = "; ".join(dict.fromkeys(r.reason for r in run.rows))
            return PhaseResult("bench", NOT_RUN, detail=reasons)
        return PhaseResult("bench", PASS, detail=detail)

    def report(self) -> None:
        """Save run.json (the report reads the phases and stops from it), then render report.md.

        run.json already lists the report phase when the report is rendered, so `tileiropt report`
        on the same records renders the same text; only that phase's seconds are filled in after.
        """
        path = self.artifacts / REPORT_FILE
        phase = PhaseResult("report", PASS, detail=str(path))
        self.result.phases.append(phase)
        self.result.report = str(path)
        save_record(self.artifacts, RUN_FILE, self.result)
        self.on_event("report", "start")
        started = time.monotonic()
        report = build_report(load_artifacts(self.artifacts), self.result.kernels)
        self.result.verdicts = {k.name: {"bucket": k.verdict.bucket, "text": k.verdict.text}
                                for k in report.kernels if k.verdict is not None}
        if any(v["bucket"] == ATTENTION for v in self.result.verdicts.values()) and \
                self.result.exit_code in (ExitCode.OK, ExitCode.NOT_RUN):
            self.result.exit_code = int(ExitCode.FAILED)  # a kernel that needs attention is not a success
        report.run = copy.deepcopy(self.result)  # the verdicts and exit code run.json keeps
        write_markdown(report, path)
        phase.seconds = round(time.monotonic() - started, 3)
        save_record(self.artifacts, RUN_FILE, self.result)
        self.on_event("report", PASS)

    # ------------------------------------------------------------------ the safe-modification rule

    def rejections(self) -> dict[Path, str]:
        """Optimized file -> why it must not be the result (`decisions.rejections`)."""
        return rejections(self.specs, self.validation.records if self.validation else [],
                          self.bench_run.rows if self.bench_run is not None else [])

    def settle(self) -> None:
        """Set aside every optimized file that failed or regressed; with --in-place, write each accepted one over
        the user's file, the original kept beside it (`settle.py`)."""
        set_aside(self.rejections(), self.result, self.on_event)
        if not self.request.in_place:
            return
        write_in_place(self.live, self.validation.records if self.validation else [],
                       self.bench_run.rows if self.bench_run is not None else [], self.result)
        if self.result.in_place_refused:
            if self.bench_run is None or self.bench_run.exit_code() == ExitCode.NOT_RUN:
                self.not_run_here = True  # the proof needs a GPU this machine does not have
            else:
                self.bench_failed = True

    def not_proven_not_slower(self, kernel: str) -> str:
        """'' when measured not slower on PTX, else why not (`decisions.not_proven_not_slower`)."""
        return not_proven_not_slower(self.bench_run.rows if self.bench_run is not None else [], kernel)

    # ------------------------------------------------------------------ all of it

    def failed(self) -> bool:
        """Whether the run's answer is no: a kernel stopped, an optimized file was set aside (wrong or slower), a
        benchmark errored, the program failed, or --in-place could not be proven."""
        return bool(self.result.stopped) or self.bench_failed or self.capture_failed or bool(self.result.rejected)

    def start(self) -> None:
        """The release every phase follows; what a re-run may reuse, read before this run writes anything; the
        workers of validate and bench, kept between phases (the PTX worker that validated a kernel times it)."""
        self.release = choose_release(self.project.tileir_version)
        self.earlier = None if self.request.fresh else earlier_validation(self.artifacts)
        self.earlier_bench = None if self.request.fresh else earlier_bench(self.artifacts)
        self.workers = RunWorkers(self.release.release.version, keep=True)

    def run(self) -> RunResult:
        started = time.monotonic()
        self.start()
        self.result.started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        runners: dict[str, Callable[[], PhaseResult]] = {
            "check": self.check, "capture": self.capture, "compatibility": self.compatibility,
            "classify": self.classify, "apply": self.apply, "validate": self.validate, "bench": self.bench,
        }  # the report is rendered last, from what they recorded (`report`)
        phase = PHASES[0]
        try:
            for phase in PHASES:
                if phase.name not in runners or (phase.optional and self.project.capture is None):
                    continue
                self.phase(phase, runners[phase.name])
            self.join_library_rest()
            self.settle()
        except KeyboardInterrupt:  # every worker has ended; the records that finished are saved
            self.interrupted = True
            self.result.phases.append(PhaseResult(phase.name, NOT_RUN, 0.0, "interrupted"))
        finally:
            self.workers.close()  # the workers kept between phases end, the run's Triton caches go
            self.adopted.close()  # the machine's facts are probed again by whatever runs next
        self.result.exit_code = int(run_exit_code(interrupted=self.interrupted, failed=self.failed(),
                                                  not_run_here=self.not_run_here))
        self.result.seconds = round(time.monotonic() - started, 3)  # every phase but the report's rendering
        self.report()
        return self.result


def run_pipeline(project: Project, *, kernels: list[str] | None = None, timeout: float | None = None,
                 bench_settings: BenchSettings | None = None, command: list[str] | None = None,
                 on_event: EventCallback | None = None, in_place: bool = False, fresh: bool = False,
                 executor: Executor | None = None, console: Any = None) -> RunResult:
    """Run every phase over `project` (or the named `kernels`); records go to its artifacts folder."""
    if timeout is not None:

        check_seconds("--timeout", timeout)
    pipeline = Pipeline(project, kernels, timeout, bench_settings,
                        list(command) if command is not None else list(sys.argv), on_event, in_place, fresh,
                        executor, console)
    return pipeline.run()

