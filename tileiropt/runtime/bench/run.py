"""Phase 5: time original vs optimized under PTX, PTX vs TileIR, and the torch reference.

`bench_project(project, ...)` is the API (`tileiropt bench` and `tileiropt run` call it). For
each kernel, dtype set and bench size it produces one row per (variant, backend):

    original / ptx, optimized / ptx, original / tileir, optimized / tileir, reference / torch

Rows that cannot run here (no GPU, TileIR not ready, no optimized file, no torch reference)
are decided in this process and say "not run: <reason>"; nothing is timed on a CPU. The rest
run in worker subprocesses (`bench_worker.py`), one per (kernel, variant, backend) -- or one
per measurement with `isolate` -- strictly one after another so no two timings overlap, each
measurement with its own timeout, each worker with a fresh Triton cache (so the first call
really compiles and autotunes). A worker that times out or crashes costs its measurement; a
new worker goes on with the rest.
"""

from __future__ import annotations

import collections
import datetime as _dt
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from tileiropt.errors import MAX_SECONDS, UserError, check_seconds
from tileiropt.output import dataclass_from_dict
from tileiropt.project import REFERENCE_ORIGINAL, KernelSpec, Project
from tileiropt.runtime.backends import BACKENDS
from tileiropt.runtime.bench.records import (
    METHODS,
    OPTIMIZED,
    ORIGINAL,
    PAIRED_ROUNDS,
    PTX,
    REFERENCE,
    ROW_KINDS,
    THRESHOLD,
    TILEIR,
    TORCH,
    BenchKernel,
    BenchRow,
    BenchRun,
    PairedTiming,
    compare_rows,
    derive_metrics,
    mark_fallback,
    row_from_dict,
)
from tileiropt.runtime.bench.worker import BenchItem
from tileiropt.runtime.executors import Executor
from tileiropt.runtime.machine import Machine, environment_summary, versions
from tileiropt.runtime.progress import Progress
from tileiropt.runtime.provenance import Provenance, digest_memo, file_digest
from tileiropt.runtime.resume import Earlier, Journal, input_key, read_journal, tool_digest
from tileiropt.runtime.workers import (
    LOCAL,
    STARTUP_TIMEOUT_S,
    STOPPING,
    Launcher,
    WorkerEvents,
    WorkerProcess,
    run_in_slots,
)
from tileiropt.schema import ERROR, NOT_RUN, PASS

WORKER_MODULE = "tileiropt.runtime.bench.worker"
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
    if backend == TILEIR and machine.tileir_blockers:
        return "not run: " + "; ".join(machine.tileir_blockers)
    if variant == REFERENCE:
        if not spec.reference:
            return "not run: no torch reference (the project gives no `reference`)"
        if spec.reference.strip() == REFERENCE_ORIGINAL:
            return 'not run: the reference is "original"; the original PTX row is the baseline'
    return None


@dataclass
class Plan:
    groups: list[tuple[str, list[BenchItem]]] = field(default_factory=list)  # (backend, items) per worker
    keys: dict[int, tuple[int, ...]] = field(default_factory=dict)  # item id -> row order
    decided: list[tuple[tuple[int, ...], BenchRow]] = field(default_factory=list)
    inputs: dict[int, str] = field(default_factory=dict)  # item id -> input key (tileiropt.runtime.resume)
    reused: dict[int, BenchRow] = field(default_factory=dict)  # item id -> its row from an earlier run
    items: dict[int, BenchItem] = field(default_factory=dict)  # every item that has a row to time or reuse


def item_inputs(item: BenchItem, machine: Machine, versions: dict[str, Any],
                digest: Callable[[str | None], str | None] = file_digest) -> str:
    """The input key of a measurement: the item, the files' SHA-256, the tool, Triton, torch, the GPU."""
    job = {k: v for k, v in item.to_json().items() if k != "id"}
    return input_key({"job": job, "files": [digest(item.path), digest(item.original_path)],
                      "tool": tool_digest(), "versions": versions,
                      "device": [machine.device.get("name"), machine.device.get("capability")]})


def earlier_bench(artifacts: Any) -> Earlier:
    """What a re-run may reuse: the rows of bench.json, then (superseding them) those of a journal."""
    from tileiropt.runtime.bench.records import load_bench_run

    earlier = Earlier()
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
            row = row_from_dict(entry["row"]) if "row" in entry else None
        except (TypeError, ValueError, KeyError, AttributeError):
            continue
        if row is not None and row.inputs:
            earlier.results[row.inputs] = [row]
            earlier.complete.add(row.inputs)
            earlier.source = earlier.source or "an unfinished run"
    return earlier


def parent_provenance(machine: Machine) -> Provenance:
    """Device, Triton and torch as this process sees them (for rows that never reach a worker)."""
    from tileiropt.environment import probe_torch, triton_distribution

    dist = triton_distribution()
    return Provenance(device=dict(machine.device), triton_distribution=dist.get("name"),
                      triton_version=dist.get("version"), torch_version=probe_torch().get("version"))


def worker_of(variant: str, backend: str) -> tuple[str, str]:
    """(worker name, worker backend) of a row kind. The torch reference shares the original's PTX
    worker (one process less per kernel); original and optimized never share one, so each
    compiles from an empty Triton cache."""
    if (variant, backend) == (REFERENCE, TORCH):
        return f"{ORIGINAL}-{PTX}", PTX
    return f"{variant}-{backend}", backend


def plan_items(project: Project, specs: list[KernelSpec], settings: BenchSettings, machine: Machine,
               earlier: Earlier | None = None) -> Plan:
    plan = Plan()
    base = parent_provenance(machine)
    installed = versions() if machine.has_gpu else {}
    digest = digest_memo()
    next_id = 0
    for s_index, spec in enumerate(specs):
        workers: dict[str, tuple[str, list[BenchItem]]] = {}
        for k_index, (variant, backend) in enumerate(ROW_KINDS):
            if spec.launch and variant == REFERENCE:
                continue  # a captured launch has no torch reference: the original PTX row is the baseline
            name, worker_backend = worker_of(variant, backend)
            group = workers.setdefault(name, (worker_backend, []))[1]
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
                            continue
                    group.append(item)
        for worker_backend, group in workers.values():
            if not group:
                continue
            if settings.isolate:
                plan.groups.extend((worker_backend, [item]) for item in group)
            else:
                plan.groups.append((worker_backend, group))
    return plan


# --------------------------------------------------------------------------- running workers


def pair_key(item: BenchItem) -> tuple:
    """What an original and its optimized row share when they are timed in turns: kernel, dtypes, size."""
    return item.kernel, tuple(sorted(item.dtypes.items())), item.size


def in_worker_pairs(items: list[BenchItem]) -> list[list[int]]:
    """[original index, optimized index] of the PTX items of one group that are timed in turns by the same
    worker right after their own rows (same kernel, dtypes and size): the compiled kernels are still in memory."""
    by_key: dict[tuple, dict[str, int]] = {}
    for index, item in enumerate(items):
        if item.backend == PTX and item.variant in (ORIGINAL, OPTIMIZED):
            by_key.setdefault(pair_key(item), {})[item.variant] = index
    return [[pair[ORIGINAL], pair[OPTIMIZED]] for pair in by_key.values() if ORIGINAL in pair and OPTIMIZED in pair]


def _worker(backend: str, job: dict[str, Any], cache: str, launcher: Launcher = LOCAL) -> WorkerProcess:
    from tileiropt.environment import triton_distribution

    environment = BACKENDS[TILEIR if backend == TILEIR else PTX]
    job = {**job, "triton_distribution": triton_distribution()}  # the same for every worker of this host
    return WorkerProcess(environment, job, module=WORKER_MODULE, extra_env={"TRITON_CACHE_DIR": cache},
                         launcher=launcher)


@dataclass
class GroupRunner:
    """Runs the items of one group in workers, restarting after a timeout or a crash."""

    backend: str
    items: list[BenchItem]
    on_row: RowCallback | None = None
    rows: dict[int, BenchRow] = field(default_factory=dict)
    base: Provenance = field(default_factory=Provenance)
    launcher: Launcher = field(default_factory=Launcher)
    inputs: dict[int, str] = field(default_factory=dict)  # item id -> input key
    cache: str | None = None  # the run's Triton cache for this backend (None: a fresh one per worker)
    pairs: dict[str, Any] | None = None  # {"rounds", "threshold"}: time original/optimized in turns in the worker
    paired: dict[int, PairedTiming | str] = field(default_factory=dict)  # optimized item id -> its paired timing

    def add(self, item: BenchItem, row: BenchRow) -> None:
        row.inputs = self.inputs.get(item.id)
        if self.launcher.name != "local":
            row.provenance.worker = self.launcher.name
        self.rows[item.id] = row
        if self.on_row:
            self.on_row(row)

    def error(self, item: BenchItem, reason: str) -> None:
        self.add(item, item.row(ERROR, reason, Provenance(**asdict(self.base))))

    def run(self) -> dict[int, BenchRow]:
        pending = list(self.items)
        while pending and not STOPPING.is_set():
            cache = self.cache or tempfile.mkdtemp(prefix="tileiropt-triton-cache-")
            try:
                pending = self._one_worker(pending, cache)
            finally:
                if cache != self.cache:
                    shutil.rmtree(cache, ignore_errors=True)
        return self.rows

    def _one_worker(self, pending: list[BenchItem], cache: str) -> list[BenchItem]:
        job: dict[str, Any] = {"kind": "bench", "backend": self.backend, "items": [item.to_json() for item in pending]}
        if self.pairs is not None:
            job.update(self.pairs, pairs=in_worker_pairs(pending))
        worker = _worker(self.backend, job, cache, self.launcher)
        started: int | None = None
        pairing: int | None = None  # the optimized item whose paired timing is running
        started_at = 0.0
        last_done = -1

        def timeout() -> float:
            if pairing is not None:  # both first calls, then 2 x rounds short benchmarks
                return 2 * pending[pairing].timeout_s + 60.0
            return pending[started].timeout_s if started is not None else STARTUP_TIMEOUT_S

        events = WorkerEvents(worker, timeout)
        for kind, event in events:
            if kind == "start":
                started, started_at = int(event["item"]), time.monotonic()
            elif kind == "row":
                index = int(event["item"])
                self.add(pending[index], row_from_dict(event["row"]))
                last_done, started = index, None
            elif kind == "pair_start":
                pairing = int(event["item"])
            elif kind == "pair":
                index = int(event["item"])
                self.paired[pending[index].id] = (dataclass_from_dict(PairedTiming, event["paired"])
                                                  if event.get("paired") else
                                                  f"paired timing failed: {event.get('error')}")
                pairing = None
        if pairing is not None:  # the worker ended while timing a pair: that pair's timing failed
            self.paired[pending[pairing].id] = f"paired timing failed: {events.cause}"
        if events.provenance is not None:
            self.base = events.provenance
        cause = events.cause
        if events.finished or STOPPING.is_set():  # interrupted: what did not finish is not a row
            return []
        if events.provenance is None:
            for item in pending:
                self.error(item, f"the worker did not start: {cause}")
            return []
        if started is not None:  # the measurement that was running costs its row
            seconds = time.monotonic() - started_at
            self.error(pending[started], f"{cause} (after {seconds:.1f}s)")
            return pending[started + 1:]
        if last_done < 0:
            for item in pending:
                self.error(item, f"the worker stopped: {cause}")
            return []
        return pending[last_done + 1:]


# --------------------------------------------------------------------------- paired original / optimized


def pair_groups(rows: dict[int, BenchRow], items: dict[int, BenchItem]) -> list[list[tuple[BenchItem, BenchItem]]]:
    """Per kernel, the (original, optimized) PTX items whose own rows both timed: they are timed again in turns."""
    by_key: dict[tuple, dict[str, BenchItem]] = {}
    for item_id, row in rows.items():
        item = items[item_id]
        if row.status != PASS or item.backend != PTX or item.variant not in (ORIGINAL, OPTIMIZED):
            continue
        by_key.setdefault(pair_key(item), {})[item.variant] = item
    groups: dict[str, list[tuple[BenchItem, BenchItem]]] = {}
    for key, pair in by_key.items():
        if ORIGINAL in pair and OPTIMIZED in pair:
            groups.setdefault(key[0], []).append((pair[ORIGINAL], pair[OPTIMIZED]))
    return list(groups.values())


def run_pairs(pairs: list[tuple[BenchItem, BenchItem]], settings: BenchSettings,
              launcher: Launcher = LOCAL, cache: str | None = None) -> dict[int, PairedTiming | str]:
    """Optimized item id -> its PairedTiming (or why it could not be timed), in PTX workers (the run's cache, or a
    fresh one per worker); a worker that dies costs the pair it was timing, a new one goes on. Used for the pairs
    the rows' own worker did not time."""
    results: dict[int, PairedTiming | str] = {}
    pending = list(pairs)
    while pending and not STOPPING.is_set():
        folder = cache or tempfile.mkdtemp(prefix="tileiropt-triton-cache-")
        try:
            pending = _pair_worker(pending, settings, folder, results, launcher)
        finally:
            if folder != cache:
                shutil.rmtree(folder, ignore_errors=True)
    return results


def _pair_worker(pending: list[tuple[BenchItem, BenchItem]], settings: BenchSettings, cache: str,
                 results: dict[int, PairedTiming | str], launcher: Launcher) -> list[tuple[BenchItem, BenchItem]]:
    """One worker over `pending`; returns the pairs left for the next worker."""
    job = {"kind": "pair", "backend": PTX, "items": [i.to_json() for pair in pending for i in pair],
           "rounds": settings.rounds, "threshold": settings.threshold}
    state: dict[str, int | None] = {"started": None}

    def timeout() -> float:  # both first calls, then 2 x rounds short benchmarks
        started = state["started"]
        return STARTUP_TIMEOUT_S if started is None else 2 * pending[started][0].timeout_s + 60.0

    events = WorkerEvents(_worker(PTX, job, cache, launcher), timeout)
    done = -1
    for kind, event in events:
        if kind == "start":
            state["started"] = int(event["item"]) // 2
        elif kind == "pair":
            index = int(event["item"]) // 2
            results[pending[index][1].id] = (dataclass_from_dict(PairedTiming, event["paired"]) if event.get("paired")
                                             else f"paired timing failed: {event.get('error')}")
            done, state["started"] = index, None
    if STOPPING.is_set():
        return []
    if events.finished or events.provenance is None:
        for _, optimized in pending[done + 1:]:
            results.setdefault(optimized.id, f"paired timing not run: {events.cause or 'no answer'}")
        return []
    started = state["started"]
    failed = started if started is not None else done + 1
    if failed < len(pending):
        results[pending[failed][1].id] = f"paired timing failed: {events.cause}"
    return pending[failed + 1:]


# --------------------------------------------------------------------------- peaks


def obtain_peaks(machine: Machine, remeasure: bool = False) -> tuple[dict[str, Any] | None, str]:
    """(peaks, where they came from): the cache, or a fresh measurement in a worker."""
    from tileiropt.environment import probe_torch
    from tileiropt.runtime.bench.peaks import load_cached_peaks, peaks_path, save_peaks

    if not machine.has_gpu:
        return None, "not run: no GPU"
    device, torch_version = str(machine.device.get("name")), str(probe_torch().get("version"))
    if not remeasure:
        cached = load_cached_peaks(device, torch_version)
        if cached:
            return cached, f"cached in {peaks_path()} (measured {cached.get('measured', '?')})"
    cache = tempfile.mkdtemp(prefix="tileiropt-triton-cache-")
    try:
        worker = _worker(PTX, {"kind": "peaks"}, cache)
        peaks = None
        events = WorkerEvents(worker, lambda: PEAKS_TIMEOUT_S)
        for kind, event in events:
            if kind == "peaks":
                peaks = event.get("peaks")
        cause = events.cause
    finally:
        shutil.rmtree(cache, ignore_errors=True)
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
    earlier: Earlier | None = None,
    journal: bool = False,
    progress: Progress | None = None,
) -> BenchRun:
    """Benchmark the project's kernels; every row is returned (bench.json is the caller's to save).

    A kernel's measurements all run on one slot of the `executor` (one GPU: never two measurements on one
    GPU at once; its rows compare like with like); kernels spread over the slots. With `journal`, each
    finished row goes at once to the artifacts folder's journal; with `earlier` (`earlier_bench(artifacts)`),
    a row whose inputs did not change is reused.
    Ctrl-C or SIGTERM ends every worker; the run returned then holds what finished (`interrupted`)."""
    settings = settings or BenchSettings()
    settings.check()
    started = time.monotonic()
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    machine = machine or Machine.probe()
    executor = (executor or Executor()).check()
    specs = project.select(kernels)
    plan = plan_items(project, specs, settings, machine, earlier=earlier if machine.has_gpu else None)
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
    peaks, peaks_note = obtain_peaks(machine, remeasure_peaks) if plan.groups else (None, "not run: nothing to time")
    if not machine.has_gpu:
        peaks_note = "not run: no GPU"
    timed: dict[int, BenchRow] = dict(plan.reused)
    by_kernel: dict[str, list[tuple[str, list[BenchItem]]]] = {}
    for backend, group in plan.groups:
        by_kernel.setdefault(group[0].kernel, []).append((backend, group))

    caches = {backend: tempfile.mkdtemp(prefix=f"tileiropt-triton-cache-{backend}-") for backend in (PTX, TILEIR)}
    pairing = {"rounds": settings.rounds, "threshold": settings.threshold} if settings.rounds else None

    def batch_job(kernels: list[list[tuple[str, list[BenchItem]]]]) -> Callable[[Launcher], None]:
        """The kernels one slot measures: one worker per backend for all of them (torch, Triton and CUDA start
        once per slot, not once per kernel), restarted only after a crash or a timeout."""
        def job(launcher: Launcher) -> None:
            measured: dict[int, BenchRow] = {}
            paired_here: dict[int, PairedTiming | str] = {}
            merged: list[tuple[str, list[BenchItem]]] = []
            for backend, group in (pair for groups in kernels for pair in groups):
                if settings.isolate:  # each item in a worker of its own, as asked
                    merged.append((backend, group))
                    continue
                found = next((items for b, items in merged if b == backend), None)
                if found is None:
                    merged.append((backend, list(group)))
                else:
                    found.extend(group)
            for backend, group in merged:
                runner = GroupRunner(backend, group, on_row=row_done, launcher=launcher, inputs=plan.inputs,
                                     cache=caches[TILEIR if backend == TILEIR else PTX], pairs=pairing)
                rows = runner.run()
                paired_here.update(runner.paired)
                measured.update(rows)
                with lock:
                    timed.update(rows)
            for groups in kernels:
                if not settings.rounds or STOPPING.is_set():
                    break
                kernel = groups[0][1][0].kernel
                with lock:
                    mine = {i: r for i, r in timed.items() if plan.items[i].kernel == kernel}
                for pairs in pair_groups(mine, plan.items):
                    fresh_pairs = [(a, b) for a, b in pairs if (a.id in measured or b.id in measured)]
                    done = {b.id: paired_here[b.id] for _, b in fresh_pairs if b.id in paired_here}
                    left = [(a, b) for a, b in fresh_pairs if b.id not in done]  # a pair its worker did not time
                    if left:
                        done.update(run_pairs(left, settings, launcher, caches[PTX]))
                    for item_id, paired in done.items():
                        if isinstance(paired, str):
                            timed[item_id].reason = "; ".join(r for r in (timed[item_id].reason, paired) if r)
                        else:
                            timed[item_id].paired = paired
                        if log is not None and timed[item_id].inputs:
                            log.append("row", timed[item_id])  # the optimized row, now with its paired timing
        return job

    slots = executor.slots(gpu_work=True, per_gpu=1, cpu_slots=1)
    interrupted = False
    try:
        kernels = list(by_kernel.values())
        run_in_slots([batch_job(kernels[i::len(slots)]) for i in range(min(len(slots), len(kernels)))], slots)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for cache in caches.values():
            shutil.rmtree(cache, ignore_errors=True)
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
        settings={**asdict(settings), "triton_cache": "one fresh TRITON_CACHE_DIR per run and backend, shared by "
                  "its workers (each kernel's compiled backend is read from its own metadata)",
                  "rotation": "input copies rotated when inputs + outputs fit in L2",
                  "slots": [launcher.name for launcher in slots]},
        environment=environment_summary(),
        command=list(command) if command is not None else list(sys.argv),
        project=str(project.file) if project.file else None,
        started=started_at,
        seconds=round(time.monotonic() - started, 3),
        notes=notes,
        reused=len(plan.reused),
        interrupted=interrupted,
    )
