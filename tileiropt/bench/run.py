"""Phase 5: time original vs optimized under PTX, PTX vs TileIR, and the torch reference.

`bench_project(project, ...)` is the API (`tileiropt bench` and `tileiropt run` call it). For
each kernel, dtype set and bench size it produces one row per (variant, backend):

    original / ptx, optimized / ptx, original / tileir, optimized / tileir, reference / torch

Rows that cannot run here (no GPU, TileIR not ready, no optimized file, no torch reference)
are decided in this process and say "not run: <reason>"; nothing is timed on a CPU. The rest
are jobs of the engine (`tileiropt.engine.engine`): one job per kernel and backend, holding its
rows and then its original/optimized pairs, timed in turns by the same worker while the compiled
kernels are in memory. Each slot (a GPU) runs one worker at a time, so no two timings overlap,
and a kernel's jobs all run on one slot (its rows compare like with like). Each measurement has
its own timeout; a worker that times out or crashes costs its measurement, and a new worker goes
on with the rest of the job.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as _dt
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tileiropt.bench.items import BenchItem
from tileiropt.bench.peaks import load_cached_peaks, peaks_path, save_peaks
from tileiropt.bench.records import (
    METHODS,
    OPTIMIZED,
    ORIGINAL,
    PAIRED_ROUNDS,
    PTX,
    REFERENCE,
    THRESHOLD,
    TILEIR,
    TILEIR_EMULATED,
    BenchKernel,
    BenchRow,
    BenchRun,
    PairedTiming,
    compare_rows,
    derive_metrics,
    load_bench_run,
    mark_fallback,
    row_from_dict,
    row_kinds,
)
from tileiropt.check.environment import torch_info, triton_distribution
from tileiropt.check.machine import Machine, environment_summary, versions
from tileiropt.engine.engine import JobPool, KeptWorkers, RunWorkers, start_worker
from tileiropt.engine.executors import Executor
from tileiropt.engine.progress import Progress
from tileiropt.engine.resume import Earlier, Journal, input_key, read_journal, tool_digest
from tileiropt.engine.workers import LOCAL, Launcher, WorkerEvents, run_in_slots
from tileiropt.errors import MAX_SECONDS, UserError, check_seconds
from tileiropt.harness.backends import BACKENDS
from tileiropt.harness.blame import Death, blame_death
from tileiropt.harness.provenance import Provenance, digest_memo, file_digest
from tileiropt.output import dataclass_from_dict
from tileiropt.project.spec import REFERENCE_ORIGINAL, KernelSpec, Project
from tileiropt.schema import ERROR, NOT_RUN, PASS

PEAKS_TIMEOUT_S = 300.0
RowCallback = Callable[[BenchRow], None]


@dataclass
class BenchSettings:
    method: str = "auto"  # "auto" | "do_bench" | "do_bench_cudagraph"
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    timeout: float | None = None  # seconds per measurement; default: each kernel's `timeout`
    isolate: bool = False  # one worker process per measurement
    sizes: list[int] | None = None  # override the project's bench sizes
    rounds: int = PAIRED_ROUNDS  # paired original/optimized PTX rounds (0: no paired timing)
    threshold: float = THRESHOLD  # a paired ratio whose whole interval lies beyond 1 +- this is a real difference

    def check(self) -> None:
        if self.method not in METHODS:
            raise UserError(f"--method: unknown value {self.method!r}", hint=f"use one of {', '.join(METHODS)}")
        for name, value in (("--warmup-ms", self.warmup_ms), ("--rep-ms", self.rep_ms)):
            check_seconds(name, value, limit=MAX_SECONDS * 1e3, unit="milliseconds")
        if self.timeout is not None:
            check_seconds("--timeout", self.timeout)
        if self.sizes is not None and (not self.sizes or any(s <= 0 for s in self.sizes)):
            raise UserError(f"--size must be a positive integer, got {self.sizes}")
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or not 0 <= self.rounds <= 1000:
            raise UserError(f"--rounds must be an integer in [0, 1000], got {self.rounds!r}")
        if self.rounds == 1:
            raise UserError("--rounds 1 gives no interval", hint="use 0 (no paired timing) or at least 2")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) \
                or not 0 < self.threshold < 1:
            raise UserError(f"--threshold must be a fraction in (0, 1), e.g. 0.05, got {self.threshold!r}")


# --------------------------------------------------------------------------- planning


def kernel_info(spec: KernelSpec, sizes: list[int] | None = None) -> BenchKernel:
    return BenchKernel(name=spec.name, path=str(spec.path), optimized_path=str(spec.optimized_path),
                       entry=spec.entry, reference=spec.reference, flops=spec.flops, bytes=spec.bytes,
                       sizes=list(sizes or spec.sizes), sweep=list(spec.sweep))


def size_points(spec: KernelSpec, sizes: list[int] | None = None) -> list[tuple[int | None, dict[str, int]]]:
    """(size, dims) per bench size; one point (size None) when the kernel sweeps no dim."""
    if not spec.sweep:
        return [(None, dict(spec.dims))]
    return [(size, {**spec.dims, **spec.sweep_dims(size)}) for size in (sizes or spec.sizes)]


def not_runnable(spec: KernelSpec, variant: str, backend: str, machine: Machine) -> str | None:
    """Why a row cannot be timed here, or None."""
    if not machine.has_gpu:
        return "not run: no GPU"
    if variant == OPTIMIZED and not spec.optimized_path.is_file():
        return f"not run: no optimized file {spec.optimized_path.name} (run `tileiropt apply` first)"
    if backend in (TILEIR, TILEIR_EMULATED):
        blocked = machine.blocks(BACKENDS[backend])
        if blocked:
            return blocked
    if variant == REFERENCE:
        if not spec.reference:
            return "not run: no torch reference (the project gives no `reference`)"
        if spec.reference.strip() == REFERENCE_ORIGINAL:
            return 'not run: the reference is "original"; the original PTX row is the baseline'
    return None


@dataclass
class Plan:
    jobs: list[BenchJob] = field(default_factory=list)  # per kernel and worker backend, in kernel order
    keys: dict[int, tuple[int, ...]] = field(default_factory=dict)  # item id -> row order
    decided: list[tuple[tuple[int, ...], BenchRow]] = field(default_factory=list)
    inputs: dict[int, str] = field(default_factory=dict)  # item id -> input key (tileiropt.engine.resume)
    reused: dict[int, BenchRow] = field(default_factory=dict)  # item id -> its row from an earlier run
    items: dict[int, BenchItem] = field(default_factory=dict)  # every item that has a row to time or reuse


def item_inputs(item: BenchItem, machine: Machine, versions: dict[str, Any],
                digest: Callable[[str | None], str | None] = file_digest) -> str:
    """The input key of a measurement: the item, the files' SHA-256, the tool, Triton, torch, the GPU."""
    job = {k: v for k, v in item.to_json().items() if k != "id"}
    return input_key({"job": job, "files": [digest(item.path), digest(item.original_path)],
                      "tool": tool_digest(), "versions": versions,
                      "device": machine.device.key()})


def earlier_bench(artifacts: Path | str) -> Earlier[BenchRow]:
    """What a re-run may reuse: the rows of bench.json, then (superseding them) those of a journal."""
    earlier: Earlier[BenchRow] = Earlier()
    try:
        run = load_bench_run(artifacts)
    except UserError:
        run = None
    if run is not None:
        earlier.source = run.started
        for row in run.rows:
            earlier.add(row.inputs, row)
    for entry in read_journal(artifacts, "bench"):
        try:
            journal_row = row_from_dict(entry["row"]) if "row" in entry else None
        except (TypeError, ValueError, KeyError, AttributeError):
            continue
        if journal_row is not None and journal_row.inputs:
            earlier.results[journal_row.inputs] = [journal_row]
            earlier.complete.add(journal_row.inputs)
            earlier.source = earlier.source or "an unfinished run"
    return earlier


def parent_provenance(machine: Machine) -> Provenance:
    """Device, Triton and torch as this process sees them (for rows that never reach a worker)."""
    dist = triton_distribution()
    return Provenance(device=machine.device.to_json(), triton_distribution=dist.get("name"),
                      triton_version=dist.get("version"), torch_version=torch_info().get("version"))


def worker_backend(backend: str) -> str:
    """The worker backend of a row's backend: the torch reference is timed by the PTX worker."""
    return backend if backend in (TILEIR, TILEIR_EMULATED) else PTX


def plan_items(project: Project, specs: list[KernelSpec], settings: BenchSettings, machine: Machine,
               earlier: Earlier[BenchRow] | None = None, release: str | None = None) -> Plan:
    plan = Plan()
    base = parent_provenance(machine)
    installed = versions(release) if machine.has_gpu else {}
    digest = digest_memo()
    next_id = 0
    for s_index, spec in enumerate(specs):
        measured: dict[str, list[BenchItem]] = {}  # worker backend -> items to time
        for k_index, (variant, backend) in enumerate(row_kinds(bool(machine.tileir_emulated))):
            if spec.launch and variant == REFERENCE:
                continue  # a captured launch has no torch reference: the original PTX row is the baseline
            for d_index, dtypes in enumerate(spec.dtypes):
                for z_index, (size, dims) in enumerate(size_points(spec, settings.sizes)):
                    item = BenchItem(
                        id=next_id, kernel=spec.name, variant=variant, backend=backend,
                        path="" if variant == REFERENCE else str(spec.path if variant == ORIGINAL
                                                                 else spec.optimized_path),
                        entry=spec.entry, reference=spec.reference, size=size, dims=dims,
                        shapes=spec.shapes(dims), dtypes=dict(dtypes), args=dict(spec.args),
                        ranges={k: list(v) for k, v in spec.ranges.items()}, seed=spec.seed,
                        search_paths=[str(project.root)], method=settings.method, warmup_ms=settings.warmup_ms,
                        rep_ms=settings.rep_ms, timeout_s=float(settings.timeout or spec.timeout),
                        original_path=str(spec.path), module=spec.module, call=spec.call, launch=spec.launch,
                    )
                    next_id += 1
                    key = (s_index, d_index, z_index, k_index)
                    reason = not_runnable(spec, variant, backend, machine)
                    if reason:
                        plan.decided.append((key, item.row(NOT_RUN, reason, Provenance(**asdict(base)))))
                        continue
                    plan.keys[item.id] = key
                    plan.items[item.id] = item
                    plan.inputs[item.id] = item_inputs(item, machine, installed, digest)
                    if earlier is not None:
                        found = earlier.reusable(plan.inputs[item.id], lambda r: r.status != PASS)
                        if found is not None:
                            plan.reused[item.id] = found[-1]
                    measured.setdefault(worker_backend(backend), []).append(item)
        for backend, items in measured.items():
            _keep_pairs_whole(items, plan.reused)
            items = [item for item in items if item.id not in plan.reused]
            if not items:
                continue
            pairs = in_worker_pairs(items) if settings.rounds else []
            if not settings.isolate:
                plan.jobs.append(BenchJob(len(plan.jobs), spec.name, backend, items, pairs))
                continue
            for item in items:  # each measurement in a worker of its own, as asked; then each pair in one
                plan.jobs.append(BenchJob(len(plan.jobs), spec.name, backend, [item]))
            for a, b in pairs:
                plan.jobs.append(BenchJob(len(plan.jobs), spec.name, backend, [items[a], items[b]], [[0, 1]],
                                          start_item=2))  # its rows' outcomes join when it is sent
    return plan


def _keep_pairs_whole(items: list[BenchItem], reused: dict[int, BenchRow]) -> None:
    """An original/optimized pair is timed in turns by one worker, so when one of its rows must be timed again,
    the other is too (its earlier row is not reused)."""
    for a, b in in_worker_pairs(items):
        if (items[a].id in reused) != (items[b].id in reused):
            reused.pop(items[a].id, None)
            reused.pop(items[b].id, None)


# --------------------------------------------------------------------------- jobs of the engine


def pair_key(item: BenchItem) -> tuple:
    """What an original and its optimized row share when they are timed in turns: kernel, dtypes, size."""
    return item.kernel, tuple(sorted(item.dtypes.items())), item.size


def in_worker_pairs(items: list[BenchItem]) -> list[list[int]]:
    """[original index, optimized index] of the PTX items of one job that are timed in turns by the same worker
    right after their own rows (same kernel, dtypes and size): the compiled kernels are still in memory."""
    by_key: dict[tuple, dict[str, int]] = {}
    for index, item in enumerate(items):
        if item.backend == PTX and item.variant in (ORIGINAL, OPTIMIZED):
            by_key.setdefault(pair_key(item), {})[item.variant] = index
    return [[pair[ORIGINAL], pair[OPTIMIZED]] for pair in by_key.values() if ORIGINAL in pair and OPTIMIZED in pair]


@dataclass
class BenchJob:
    """One kernel's measurements on one backend (the torch reference rides with the original's PTX worker)."""

    id: int
    kernel: str
    backend: str  # the worker's backend: PTX, TILEIR or TILEIR_EMULATED
    items: list[BenchItem]
    pairs: list[list[int]] = field(default_factory=list)  # [original, optimized] item indices timed in turns
    start_item: int = 0  # resume after a timeout or crash: rows first, then pairs (item len(items) + p)
    passed: list[int] = field(default_factory=list)  # item indices whose rows timed (their pairs can run)


@dataclass
class BenchJobs:
    """The bench phase's side of the engine: its rows by item id, and the paired timings of optimized items."""

    settings: BenchSettings
    on_row: RowCallback | None = None
    inputs: dict[int, str] = field(default_factory=dict)  # item id -> input key
    rows: dict[int, BenchRow] = field(default_factory=dict)
    paired: dict[int, PairedTiming | str] = field(default_factory=dict)  # optimized item id -> its paired timing
    lock: threading.Lock = field(default_factory=threading.Lock)
    phase: str = "bench"

    def message(self, job: BenchJob) -> dict[str, Any]:
        timed = {i for i, item in enumerate(job.items) if item.id in self.rows and self.rows[item.id].status == PASS}
        return {"kind": "bench", "id": job.id, "items": [item.to_json() for item in job.items], "pairs": job.pairs,
                "rounds": self.settings.rounds, "threshold": self.settings.threshold, "start_item": job.start_item,
                "passed": sorted(set(job.passed) | timed)}  # a pair runs only when both its rows timed

    def timeout(self, job: BenchJob, item: int | None) -> float:
        if item is None:
            return max(i.timeout_s for i in job.items)
        if item < len(job.items):
            return job.items[item].timeout_s
        original = job.items[job.pairs[item - len(job.items)][0]]
        return 2 * original.timeout_s + 60.0  # both first calls, then 2 x rounds short benchmarks

    def describe(self, job: BenchJob) -> dict[str, Any]:
        return {"kernel": job.kernel, "items": len(job.items), "pairs": len(job.pairs)}

    def add(self, item: BenchItem, row: BenchRow, launcher: Launcher) -> None:
        row.inputs = self.inputs.get(item.id)
        if launcher.name != "local":
            row.provenance.worker = launcher.name
        with self.lock:
            self.rows[item.id] = row
        if self.on_row:
            self.on_row(row)

    def result(self, job: BenchJob, kind: str | None, event: dict[str, Any], launcher: Launcher) -> int | None:
        index = int(event["item"]) if event.get("item") is not None else None
        if index is None:
            return None
        if kind == "row" and index < len(job.items):
            row = row_from_dict(event["row"])
            self.add(job.items[index], row, launcher)
            if row.status == PASS:
                job.passed.append(index)
            return index
        if kind == "pair" and index >= len(job.items):
            optimized = job.items[job.pairs[index - len(job.items)][1]]
            self.paired[optimized.id] = dataclass_from_dict(PairedTiming, event["paired"]) if event.get("paired") \
                else f"paired timing failed: {event.get('error')}"
            return index
        return None

    def lost(self, job: BenchJob, backend: str, item: int | None, label: str, death: Death, seconds: float | None,
             launcher: Launcher, base: Provenance) -> None:
        cause = death.words
        own = [p for i in job.items for p in (i.path, i.original_path) if p]
        blame = blame_death(death, own, during=f"the timing of {label}" if label else "the kernel's import")
        if item is None:  # before any item: every row left costs the cause
            for pending in job.items[job.start_item:]:
                self.add(pending, pending.row(ERROR, f"{cause}; {blame.why}", Provenance(**asdict(base)),
                                              cause=blame.cause, evidence=blame.evidence), launcher)
        elif item < len(job.items):
            reason = f"{cause} (after {seconds:.1f}s)" if seconds is not None else cause
            self.add(job.items[item], job.items[item].row(ERROR, f"{reason}; {blame.why}", Provenance(**asdict(base)),
                                                          cause=blame.cause, evidence=blame.evidence), launcher)
        else:
            optimized = job.items[job.pairs[item - len(job.items)][1]]
            self.paired[optimized.id] = f"paired timing failed: {cause}"

    def ended(self, job: BenchJob, finished: bool) -> None:
        """Nothing to do: each row was reported as it came."""


# --------------------------------------------------------------------------- peaks


def obtain_peaks(machine: Machine, remeasure: bool = False, workers: RunWorkers | None = None,
                 launcher: Launcher = LOCAL) -> tuple[dict[str, Any] | None, str]:
    """(peaks, where they came from): the cache, or a fresh measurement in a PTX worker on `launcher`: one the run
    keeps idle there when it has one (it goes back to the run after), else one started for it."""
    if not machine.has_gpu:
        return None, "not run: no GPU"
    device, torch_version = machine.device.name, str(torch_info().get("version"))
    if not remeasure:
        cached = load_cached_peaks(device, torch_version)
        if cached:
            return cached, f"cached in {peaks_path()} (measured {cached.get('measured', '?')})"
    with contextlib.nullcontext(workers) if workers is not None else RunWorkers() as setting:
        env = setting.env(PTX)
        key = KeptWorkers.key(launcher, PTX, env)
        worker = setting.kept.take(key) if setting.kept is not None else None
        kept = worker is not None
        worker = worker or start_worker(BACKENDS[PTX], launcher, env, setting.setup())
        worker.send({"job": {"kind": "peaks", "id": 0}})
        if not kept:
            worker.close_input()  # it answers "done" after the job
        peaks = None
        events = WorkerEvents(worker, lambda: PEAKS_TIMEOUT_S)
        for kind, event in events:
            if kind == "peaks":
                peaks = event.get("peaks")
            elif kind == "job_done" and kept and setting.kept is not None:  # kept: taken from `setting.kept`
                setting.kept.keep(key, worker)  # idle again, for the run's timing jobs
                break
        cause = events.cause
    if not peaks:
        return None, f"peaks not measured: {cause or 'no answer from the worker'}"
    try:
        path = save_peaks(peaks)
        return peaks, f"measured now, cached in {path}"
    except OSError as exc:
        return peaks, f"measured now (not cached: {exc})"


# --------------------------------------------------------------------------- the API


def finish_rows(rows: list[BenchRow], specs: list[KernelSpec], peaks: dict[str, Any] | None) -> list[str]:
    """Derived metrics, fallback flags, speedups and PTX ratios; returns notes."""
    by_name = {spec.name: spec for spec in specs}
    notes: list[str] = []
    for row in rows:
        spec = by_name.get(row.kernel)
        if spec is not None:
            for problem in derive_metrics(row, spec.flops, spec.bytes, peaks):
                if problem not in notes:
                    notes.append(problem)
        mark_fallback(row)
    notes.extend(compare_rows(rows))
    return notes


def bench_project(
    project: Project,
    kernels: list[str] | None = None,
    settings: BenchSettings | None = None,
    *,
    remeasure_peaks: bool = False,
    command: list[str] | None = None,
    on_row: RowCallback | None = None,
    machine: Machine | None = None,
    executor: Executor | None = None,
    earlier: Earlier[BenchRow] | None = None,
    journal: bool = False,
    progress: Progress | None = None,
    workers: RunWorkers | None = None,
) -> BenchRun:
    """Benchmark the project's kernels; every row is returned (bench.json is the caller's to save).

    A kernel's measurements all run on one slot of the `executor` (one GPU: never two measurements on one
    GPU at once; its rows compare like with like); kernels spread over the slots. With `journal`, each
    finished row goes at once to the artifacts folder's journal; with `earlier` (`earlier_bench(artifacts)`),
    a row whose inputs did not change is reused. `workers`: what the run's workers share (the CUDA Tile IR
    release, the Triton caches, the workers kept from validation); default: the project's release, fresh caches.
    Ctrl-C or SIGTERM ends every worker; the run returned then holds what finished (`interrupted`)."""
    settings = settings or BenchSettings()
    settings.check()
    started = time.monotonic()
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    own_workers = workers is None
    workers = workers or RunWorkers(project.tileir_version)
    machine = machine or Machine.probe(workers.release)
    workers.judged(machine.tileir_blockers)  # the workers take this judgement instead of probing again
    executor = (executor or Executor()).check()
    specs = project.select(kernels)
    plan = plan_items(project, specs, settings, machine, earlier=earlier if machine.has_gpu else None,
                      release=workers.release)
    log = Journal(project.artifacts, "bench") if journal else None
    lock = threading.Lock()

    def row_done(row: BenchRow) -> None:
        if log is not None and row.inputs:
            log.append("row", row)
        with lock:
            if progress is not None:
                progress.record(row.kernel, row.status)
                progress.finished(row.kernel)
            if on_row:
                on_row(row)

    if progress is not None:
        units = collections.Counter(row.kernel for _, row in plan.decided)
        units.update(item.kernel for item in plan.items.values())
        progress.plan(dict(units))
    for _, row in plan.decided:
        if progress is not None:
            progress.record(row.kernel, row.status)
            progress.finished(row.kernel, reused=True)
        if on_row:
            on_row(row)
    for row in plan.reused.values():
        if progress is not None:
            progress.record(row.kernel, row.status)
            progress.finished(row.kernel, reused=True)
    # reused rows need the peaks too (their % of peak is derived again): from the cache, without a worker
    slots = executor.slots(gpu_work=True, per_gpu=1, cpu_slots=1)
    peaks, peaks_note = obtain_peaks(machine, remeasure_peaks, workers, slots[0]) if plan.jobs or plan.reused \
        else (None, "not run: nothing to time")
    if not machine.has_gpu:
        peaks_note = "not run: no GPU"
    jobs = BenchJobs(settings, on_row=row_done, inputs=plan.inputs)
    order = list(dict.fromkeys(job.kernel for job in plan.jobs))
    share = {kernel: index % len(slots) for index, kernel in enumerate(order)}  # a kernel's jobs on one slot
    served = []
    for index in range(min(len(slots), len(order))):
        mine: dict[str, list[BenchJob]] = {}
        for job in plan.jobs:
            if share[job.kernel] == index:
                mine.setdefault(job.backend, []).append(job)
        served.append(workers.slots(JobPool(mine), {name: BACKENDS[name] for name in mine}, jobs,
                                    isolate=settings.isolate))
    interrupted = False
    try:
        run_in_slots([own.serve for own in served], slots[:len(served)])
        for own in served:
            own.leftovers()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if own_workers:
            workers.close()
    timed: dict[int, BenchRow] = {**plan.reused, **jobs.rows}
    for item_id, paired in jobs.paired.items():
        optimized = timed.get(item_id)
        if optimized is None or optimized.status != PASS:
            continue
        if isinstance(paired, str):
            optimized.reason = "; ".join(r for r in (optimized.reason, paired) if r)
        else:
            optimized.paired = paired
        if log is not None and optimized.inputs:
            log.append("row", optimized)  # the optimized row, now with its paired timing
    keyed = list(plan.decided) + [(plan.keys[i], row) for i, row in timed.items()]
    keyed.sort(key=lambda pair: pair[0])
    rows = [row for _, row in keyed]
    notes = finish_rows(rows, specs, peaks)
    if plan.reused:
        notes.append(f"{len(plan.reused)} row(s) reused from the run of {earlier.source if earlier else '?'} "
                     "(inputs unchanged; --fresh measures them again)")
    if interrupted:
        notes.append("interrupted: the rows that finished are kept; run again to go on (finished rows are reused)")
    return BenchRun(
        rows=rows,
        kernels=[kernel_info(spec, settings.sizes) for spec in specs],
        peaks=peaks,
        peaks_note=peaks_note,
        settings={**asdict(settings), "triton_cache": "one fresh TRITON_CACHE_DIR per run and compiler, shared by "
                  "its workers (each kernel's compiled backend is read from its own metadata)",
                  "workers": "kept from validation" if workers.kept is not None else "started for this phase",
                  "rotation": "input copies rotated when inputs + outputs fit in L2",
                  "slots": [launcher.name for launcher in slots]},
        environment=machine.environment or environment_summary(workers.release),
        command=list(command) if command is not None else list(sys.argv),
        project=str(project.file) if project.file else None,
        started=started_at,
        seconds=round(time.monotonic() - started, 3),
        notes=notes,
        reused=len(plan.reused),
        interrupted=interrupted,
        jobs=[timing for own in served for timing in own.timings],
    )
