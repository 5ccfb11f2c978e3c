"""Phase 4: validate every kernel, variant, dtype set, backend and autotune config.

`validate_project(project, ...)` is the API (`tileiropt validate` and `tileiropt run` call it).
Each backend runs in its own worker subprocess (`worker.py`), because the backend is fixed
when Triton and the kernel module are imported. The parent enforces a timeout per record: a
hanging or crashing kernel costs its own record, and a new worker goes on with the rest.
"""

from __future__ import annotations

import collections
import datetime as _dt
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tileiropt.errors import UserError, check_seconds
from tileiropt.project import REFERENCE_ORIGINAL, KernelSpec, Project
from tileiropt.runtime.backends import BACKENDS, RELEASE_ENV, Backend, backend_env, default_backends
from tileiropt.runtime.cases import Case, record_for
from tileiropt.runtime.records import (
    NONE,
    PREPARE,
    VARIANTS,
    Provenance,
    ValidateRun,
    ValidationRecord,
    record_from_dict,
)
from tileiropt.runtime.scaling import scale_for_interpreter
from tileiropt.schema import ERROR, NOT_RUN

STARTUP_TIMEOUT_S = 120.0  # importing torch and triton in a fresh worker
RecordCallback = Callable[[ValidationRecord], None]


# --------------------------------------------------------------------------- the machine


@dataclass
class Machine:
    """What this machine can run: a GPU, and whether TileIR could be active on it."""

    device: dict[str, Any]
    tileir_blockers: list[str]  # why TileIR cannot run here; empty when it may

    @property
    def has_gpu(self) -> bool:
        return self.device.get("name") not in (None, "cpu")

    @classmethod
    def probe(cls, release: str | None = None) -> Machine:
        """This machine, judged for the CUDA Tile IR `release` (default: detected, else the newest known)."""
        from tileiropt.environment import choose_release, device_description, triton_distribution

        device = device_description()
        chosen = choose_release(release or os.environ.get(RELEASE_ENV) or None).release
        blockers = []
        if not triton_distribution().get("tileir_backend"):
            blockers.append("nvtriton is not installed (triton.backends.tileir not found)")
        if device.get("name") in (None, "cpu"):
            blockers.append("no GPU")
        elif not chosen.targets(device.get("capability")):
            blockers.append(f"{device['name']} is sm_{str(device.get('capability')).replace('.', '')}; "
                            f"{chosen.label()} targets {', '.join(chosen.architectures)}")
        return cls(device=device, tileir_blockers=blockers)


def environment_summary() -> dict[str, Any]:
    """The `check` report of this machine, stored with the records."""
    from tileiropt.environment import check_environment

    return asdict(check_environment())


# --------------------------------------------------------------------------- one worker process


class WorkerProcess:
    """A running worker: its events on a queue, the tail of its stderr kept for crash reports."""

    def __init__(self, backend: Backend, job: dict[str, Any], module: str = "tileiropt.runtime.worker",
                 extra_env: dict[str, str] | None = None):
        env = backend_env(backend)
        env.update(extra_env or {})  # RELEASE_ENV travels in the parent's environment (set by the pipeline)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env["MPLBACKEND"] = "Agg"  # a kernel file that plots at import never opens a window
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, text=True, encoding="utf-8", errors="replace", start_new_session=True,
        )
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=40)
        threading.Thread(target=self._read_events, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(job))
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # it died at start-up; the event stream ends and says so

    def _read_events(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                self.stderr.append(line.rstrip())
                continue
            if isinstance(event, dict):
                self.events.put(event)
        self.events.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.strip():
                self.stderr.append(line.rstrip())

    def next_event(self, timeout: float) -> dict[str, Any] | None:
        """The next event; None when the worker's output ended. Raises queue.Empty on timeout."""
        return self.events.get(timeout=timeout)

    def kill(self) -> None:
        """End the worker and anything it started (its own process group)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def exit_description(self) -> str:
        """"crashed: SIGSEGV" or "crashed (exit code 1): <last stderr line>"."""
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.returncode
        time.sleep(0.05)  # let the stderr reader catch the last lines
        last = self.stderr[-1] if self.stderr else ""
        if rc is not None and rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return f"crashed: {name}" + (f" ({last})" if last else "")
        return f"crashed (exit code {rc})" + (f": {last}" if last else "")


class WorkerEvents:
    """The events of one worker, with the handling every phase shares.

    Iterating yields (kind, event) for the phase's own events; "hello" (it sets `provenance`)
    and "done" are taken here. The iteration ends when the worker says "done" (`finished`),
    when its output ends (it exited; `cause` says how) or when no event comes within
    `timeout()` seconds, asked before each wait (it is killed; `cause` is "timeout after Ns").
    """

    def __init__(self, worker: WorkerProcess, timeout: Callable[[], float]):
        self.worker = worker
        self.timeout = timeout
        self.provenance: Provenance | None = None  # from "hello"; None when the worker never started
        self.finished = False
        self.cause = ""

    def __iter__(self) -> Iterator[tuple[str | None, dict[str, Any]]]:
        while True:
            timeout = self.timeout()
            try:
                event = self.worker.next_event(timeout)
            except queue.Empty:
                self.worker.kill()
                self.cause = f"timeout after {timeout:g}s"
                return
            if event is None:
                self.cause = self.worker.exit_description()
                return
            kind = event.get("event")
            if kind == "hello":
                self.provenance = Provenance(**(event.get("provenance") or {}))
            elif kind == "done":
                self.finished = True
                self.worker.proc.wait()
                return
            else:
                yield kind, event


# --------------------------------------------------------------------------- one backend


@dataclass
class BackendRunner:
    """Runs every case of one backend, restarting the worker after a timeout or a crash."""

    backend: Backend
    cases: list[Case]
    timeouts: dict[int, float]  # case id -> seconds per record
    best_config: bool = False
    on_record: RecordCallback | None = None
    records: list[tuple[tuple[int, int], ValidationRecord]] = field(default_factory=list)
    base: Provenance = field(default_factory=Provenance)

    def add(self, case: Case, item: int | None, record: ValidationRecord) -> None:
        self.records.append(((case.id, -1 if item is None else item), record))
        if self.on_record:
            self.on_record(record)

    def error(self, case: Case, item: int | None, label: str, reason: str, seconds: float | None) -> None:
        self.add(case, item, record_for(case, self.backend.name, label, ERROR, reason,
                                        Provenance(**asdict(self.base)), seconds=seconds))

    def run(self) -> list[tuple[tuple[int, int], ValidationRecord]]:
        pending = list(self.cases)
        while pending:
            pending = self._one_worker(pending)
        return self.records

    def _one_worker(self, pending: list[Case]) -> list[Case]:
        """Run one worker over `pending`; return the cases (or their remaining items) left."""
        by_id = {case.id: case for case in pending}
        worker = WorkerProcess(self.backend, {"backend": self.backend.name, "best_config": self.best_config,
                                              "cases": [case.to_json() for case in pending]})
        progressed = False
        current: Case | None = None
        plan: list[str] = []
        started: int | None = None
        started_at = 0.0
        last_item: int | None = None
        done: set[int] = set()
        events = WorkerEvents(worker, lambda: self.timeouts.get(current.id, STARTUP_TIMEOUT_S) if current
                              else STARTUP_TIMEOUT_S)
        for kind, event in events:
            if kind == "case":
                current, plan, started, last_item = by_id[event["id"]], [], None, None
            elif kind == "plan":
                plan = list(event.get("labels") or [])
            elif kind == "start":
                started, started_at = int(event["item"]), time.monotonic()
            elif kind in ("record", "skip"):
                if kind == "record":
                    self.add(by_id[event["id"]], event.get("item"), record_from_dict(event["record"]))
                if event.get("item") is not None:
                    last_item = int(event["item"])
                started, progressed = None, True
            elif kind == "case_done":
                done.add(int(event["id"]))
                current, progressed = None, True
        if events.provenance is not None:
            self.base = events.provenance
        cause = events.cause
        left = [case for case in pending if case.id not in done]
        if events.finished or not left:
            return []
        if events.provenance is None:
            for case in left:
                self.error(case, None, PREPARE, f"the worker did not start: {cause}", None)
            return []
        if current is not None:
            if started is not None:  # the item that was running costs its record
                label = plan[started] if started < len(plan) else f"config {started}"
                self.error(current, started, label, cause, round(time.monotonic() - started_at, 3))
                current.start_item = started + 1
            elif last_item is not None:  # the worker left on its own after an item: go on
                current.start_item = last_item + 1
            else:  # it never reached an item: importing, building inputs or the reference
                reason = f"{cause} (while importing the file or evaluating the reference)"
                self.error(current, None, PREPARE, reason, None)
                current.start_item = len(plan)
            if current.start_item >= len(plan):
                left.remove(current)
        elif not progressed:
            for case in left:
                self.error(case, None, PREPARE, f"the worker stopped: {cause}", None)
            return []
        return left


# --------------------------------------------------------------------------- planning


def _choose_backends(names: list[str] | None, machine: Machine) -> list[Backend]:
    if not names:
        names = default_backends(machine.has_gpu, not machine.tileir_blockers)
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise UserError(f"unknown backend {unknown[0]!r}", hint=f"choose among: {', '.join(BACKENDS)}")
    return [BACKENDS[n] for n in dict.fromkeys(names)]


def _variants_for(spec: KernelSpec, variants: list[str] | None) -> list[str]:
    if variants:
        bad = [v for v in variants if v not in VARIANTS]
        if bad:
            raise UserError(f"unknown variant {bad[0]!r}", hint="use original, optimized or both")
        return [v for v in VARIANTS if v in variants]
    return ["original", "optimized"] if spec.optimized_path.is_file() else ["original"]


def _check_reference(spec: KernelSpec, project: Project) -> None:
    from tileiropt.runtime.harness import HarnessError, Reference

    if spec.reference is None:
        return
    try:
        Reference.parse(spec.reference)
    except HarnessError as exc:
        raise UserError(str(exc), file=str(project.file) if project.file else None,
                        hint=f"fix the reference of kernel {spec.name!r}") from None


@dataclass
class Plan:
    """The cases per backend, and the records already decided (not run) before any worker."""

    cases: dict[str, list[Case]] = field(default_factory=dict)
    timeouts: dict[int, float] = field(default_factory=dict)
    keys: dict[int, tuple[int, ...]] = field(default_factory=dict)  # case id -> sort key
    records: list[tuple[tuple[int, ...], ValidationRecord]] = field(default_factory=list)


def plan_cases(project: Project, specs: list[KernelSpec], backends: list[Backend], machine: Machine,
               variants: list[str] | None, timeout: float | None) -> Plan:
    plan = Plan(cases={b.name: [] for b in backends})
    next_id = 0
    for s_index, spec in enumerate(specs):
        _check_reference(spec, project)
        for v_index, variant in enumerate(_variants_for(spec, variants)):
            path = spec.path if variant == "original" else spec.optimized_path
            reference = spec.reference
            if variant == "optimized" and reference is None:
                reference = REFERENCE_ORIGINAL  # the untransformed file is the reference
            for d_index, dtypes in enumerate(spec.dtypes):
                atol, rtol = spec.tolerances(dtypes)
                for b_index, backend in enumerate(backends):
                    if backend.optimized_only and variant != "optimized":
                        continue
                    key = (s_index, v_index, d_index, b_index)
                    scaled = scale_for_interpreter(spec.inputs, spec.dims, spec.flops) \
                        if backend.interpreted and not spec.launch else None  # a launch keeps its shapes
                    case = Case(
                        id=next_id, kernel=spec.name, variant=variant, path=str(path), entry=spec.entry,
                        reference=reference or "", shapes=scaled.shapes if scaled else spec.shapes(),
                        dtypes=dict(dtypes), atol=atol, rtol=rtol, original_path=str(spec.path),
                        dims=scaled.dims if scaled else dict(spec.dims), args=dict(spec.args),
                        ranges={k: list(v) for k, v in spec.ranges.items()}, seed=spec.seed,
                        search_paths=[str(project.root)], scaled_from=scaled.scaled_from if scaled else None,
                        module=spec.module, call=spec.call, launch=spec.launch,
                    )
                    next_id += 1
                    reason = _not_runnable(spec, variant, path, reference, backend, machine)
                    if reason:
                        case.scaled_from = None
                        case.shapes = spec.shapes()
                        plan.records.append((key + (-1,), record_for(case, backend.name, NONE, NOT_RUN, reason)))
                        continue
                    plan.cases[backend.name].append(case)
                    plan.timeouts[case.id] = float(timeout if timeout is not None else spec.timeout)
                    plan.keys[case.id] = key
    return plan


def _not_runnable(spec: KernelSpec, variant: str, path: Path, reference: str | None, backend: Backend,
                  machine: Machine) -> str | None:
    if not path.is_file():
        return f"not run: no optimized file {path.name} (run `tileiropt apply` first)"
    if not reference:
        return ("not run: no reference (set `reference` to a torch expression or \"pkg.mod:fn\"; "
                "the optimized file is compared with this one)")
    if reference == REFERENCE_ORIGINAL and variant == "original" and not spec.launch:
        return 'not run: reference is "original", the file itself (validate the optimized variant)'
    if backend.name == "tileir" and machine.tileir_blockers:
        return "not run: " + "; ".join(machine.tileir_blockers)
    if backend.needs_gpu and not machine.has_gpu:
        return "not run: no GPU"
    return None


# --------------------------------------------------------------------------- the API


def validate_project(
    project: Project,
    kernels: list[str] | None = None,
    backends: list[str] | None = None,
    variants: list[str] | None = None,
    all_configs: bool = True,
    timeout: float | None = None,
    *,
    command: list[str] | None = None,
    on_record: RecordCallback | None = None,
    parallel: int | None = None,
    machine: Machine | None = None,
) -> ValidateRun:
    """Validate the project's kernels; every record is returned (none is saved here).

    `backends` defaults by machine (`backends.default_backends`); `variants` defaults to both
    when the optimized file exists. `all_configs=False` validates only the config the
    autotuner picks (GPU backends; the interpreter cannot benchmark, so it still pins each).
    `parallel` backends run at once (default: as many as CPU cores allow).
    """
    started = time.monotonic()
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    if timeout is not None:
        check_seconds("--timeout", timeout)
    machine = machine or Machine.probe()
    specs = project.select(kernels)
    chosen = _choose_backends(backends, machine)
    notes = []
    if not all_configs and any(b.interpreted for b in chosen):
        notes.append("--best-config needs a GPU to benchmark; interpreter backends validate every config")
    plan = plan_cases(project, specs, chosen, machine, variants, timeout)
    lock = threading.Lock()

    def report(record: ValidationRecord) -> None:
        if on_record:
            with lock:
                on_record(record)

    for _, record in plan.records:
        report(record)
    runners = [BackendRunner(b, plan.cases[b.name], plan.timeouts, best_config=not all_configs and not b.interpreted,
                             on_record=report)
               for b in chosen if plan.cases[b.name]]
    workers = max(1, min(len(runners), parallel or os.cpu_count() or 1))
    keyed = list(plan.records)
    threads_done: list[list[tuple[tuple[int, int], ValidationRecord]]] = []
    _run_all(runners, workers, threads_done)
    for results in threads_done:
        for (case_id, item), record in results:
            keyed.append((plan.keys[case_id] + (item,), record))
    keyed.sort(key=lambda pair: pair[0])
    return ValidateRun(
        records=[record for _, record in keyed],
        backends=[b.name for b in chosen],
        command=list(command) if command is not None else list(sys.argv),
        environment=environment_summary(),
        project=str(project.file) if project.file else None,
        started=started_at,
        seconds=round(time.monotonic() - started, 3),
        notes=notes,
    )


def _run_all(runners: list[BackendRunner], workers: int,
             results: list[list[tuple[tuple[int, int], ValidationRecord]]]) -> None:
    """Run the backend runners, `workers` at a time."""
    waiting = list(runners)
    lock = threading.Lock()

    def loop() -> None:
        while True:
            with lock:
                if not waiting:
                    return
                runner = waiting.pop(0)
            output = runner.run()
            with lock:
                results.append(output)

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
