"""One job engine for validate and bench: jobs pooled per backend, long-lived workers per slot fed over stdin.

A worker costs seconds to start (torch, Triton and the user's package are imported anew) and then runs a job in
milliseconds to seconds. So a worker is started once per slot and backend and is given job after job over its
stdin (`tileiropt.run.job_worker`), from one pool for the whole phase (`JobPool`): no slot waits while another
holds a long list, and a slot whose backend has no job left joins another where that ends the phase sooner.

What differs between the phases is the job (a validation case, a kernel's measurements) and its records: a
`JobKind` says what a job is sent as, how long each of its items may take, what its result events mean and what a
worker that died in the middle of an item costs. The rest is shared: the worker's start-up and its environment, the
per-item timeouts, the crash handling (the item that was running costs its record; a new worker goes on with the
rest), the resume from the next item, the shutdown, and the timing of every job (`JobTiming`).

Within one `tileiropt run`, workers outlive their phase (`KeptWorkers`): the PTX worker that validated a kernel
is the one that then times it, with its imports done and its compiled kernels still in memory.
"""

from __future__ import annotations

import collections
import contextlib
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

from tileiropt.check.environment import triton_distribution
from tileiropt.contract.job_timing import JobTiming
from tileiropt.engine.workers import (
    LOCAL,
    STARTUP_TIMEOUT_S,
    STOPPING,
    Launcher,
    WorkerEvents,
    WorkerProcess,
    run_in_slots,
    stop_all,
)
from tileiropt.harness.backends import BACKENDS, Backend
from tileiropt.harness.blame import Death, lost_worker
from tileiropt.harness.provenance import Provenance

WORKER_MODULE = "tileiropt.run.job_worker"


class Job(Protocol):
    """What the engine reads of a job (a validation case, a kernel's measurements): its id in the workers' events,
    and the item it starts from (set again when a worker dies or hangs in one)."""

    id: int
    start_item: int


J = TypeVar("J", bound=Job)
J_contra = TypeVar("J_contra", bound=Job, contravariant=True)


class JobKind(Protocol[J_contra]):
    """The phase's side of the engine, for its kind of job."""

    phase: str  # "validate" | "bench": in JobTiming records

    def message(self, job: J_contra) -> dict[str, Any]:
        """The job as sent to a worker (`{"kind": ..., ...}`, read by `tileiropt.run.job_worker`)."""

    def timeout(self, job: J_contra, item: int | None) -> float:
        """Seconds `item` may take (None: the job's preparation, before its first item)."""

    def result(self, job: J_contra, kind: str | None, event: dict[str, Any], launcher: Launcher) -> int | None:
        """Take one of the job's result events (`kind`: its "event", None when it has none); the index of the item
        it finished, or None."""

    def lost(self, job: J_contra, backend: str, item: int | None, label: str, death: Death, seconds: float | None,
             launcher: Launcher, base: Provenance) -> None:
        """The worker died or hung in `item` (None: before any item, while importing or preparing): `death` is how,
        with its evidence, from which the kind tells whose failure it is (`harness.blame.blame_death`)."""

    def ended(self, job: J_contra, finished: bool) -> None:
        """The job is done with (False: cut short)."""

    def describe(self, job: J_contra) -> dict[str, Any]:
        """What a JobTiming record names the job by: {"kernel": ..., ...}."""


class JobPool(Generic[J]):
    """Per backend, the jobs no worker has taken yet, in order; how many workers serve each backend; and what
    the phase has measured so far: seconds per job, and a worker's start-up (from its start to the end of its
    first job, which imports torch, Triton and the user's package).

    A slot asks `choose()` which backend to start a worker for, and its worker asks `next_job()` for each
    job. Before anything is measured, slots go where the most jobs wait per worker. Then the estimates
    decide: a free slot joins a backend only when the work left per worker there exceeds a start-up (else
    the workers serving it finish first), and a worker leaves its backend for another when the phase would
    end clearly sooner that way (never leaving its own without a worker)."""

    SWITCH_GAIN = 0.85  # switch only when the estimated end of the two backends comes at least 15% sooner

    def __init__(self, jobs: dict[str, list[J]]):
        self.waiting = {name: collections.deque(items) for name, items in jobs.items() if items}
        self.serving: collections.Counter[str] = collections.Counter()
        self.job_seconds: dict[str, list[float]] = collections.defaultdict(list)  # after each worker's first
        self.startup_seconds: dict[str, list[float]] = collections.defaultdict(list)
        self.worked: set[str] = set()  # backends a worker has begun a job of (`began`): the backend can run
        self.lock = threading.Lock()

    def count(self) -> int:
        return sum(len(queue) for queue in self.waiting.values())

    # ------------------------------------------------------------------ measurements

    def began(self, backend: str) -> None:
        """A worker of `backend` began a job."""
        with self.lock:
            self.worked.add(backend)

    def observe(self, backend: str, seconds: float, *, first: bool) -> None:
        """A job ended after `seconds` (`first`: the worker's first, counted from the worker's start)."""
        with self.lock:
            (self.startup_seconds if first else self.job_seconds)[backend].append(seconds)

    def _mean(self, table: dict[str, list[float]], backend: str | None) -> float | None:
        own = table.get(backend) if backend is not None else None
        if own:
            return sum(own) / len(own)
        every = [value for values in table.values() for value in values]
        return sum(every) / len(every) if every else None  # another backend's, until this one has its own

    def _left(self, backend: str) -> float | None:
        """Estimated seconds of work waiting for `backend`; None before any job was timed."""
        mean = self._mean(self.job_seconds, backend)
        return None if mean is None else len(self.waiting.get(backend, ())) * mean

    # ------------------------------------------------------------------ decisions

    def choose(self, current: str | None = None, exclude: set[str] | frozenset[str] = frozenset()) -> str | None:
        """The backend a slot starts a worker for (counted as served from now; `release()` when it ends):
        `current` while jobs wait there, else a backend worth joining, never one in `exclude` (the slot gave it
        up); None when none is."""
        with self.lock:
            if current is not None and current not in exclude and self.waiting.get(current):
                chosen: str | None = current
            else:
                chosen = self._worth_joining(exclude)
            if chosen is not None:
                self.serving[chosen] += 1
            return chosen

    def _worth_joining(self, exclude: set[str] | frozenset[str] = frozenset()) -> str | None:
        # a backend with no more jobs waiting than workers serving it: another worker would find nothing to take
        open_ = [name for name, queue in self.waiting.items()
                 if len(queue) > self.serving[name] and name not in exclude]
        unserved = [name for name in open_ if not self.serving[name]]
        if unserved:
            return max(unserved, key=lambda name: len(self.waiting[name]))
        scored = []
        for name in open_:
            left, startup = self._left(name), self._mean(self.startup_seconds, name)
            if left is None or startup is None:  # nothing measured yet: where the most jobs wait per worker
                scored.append((len(self.waiting[name]) / (self.serving[name] + 1), name))
            elif left / self.serving[name] > startup:
                scored.append((left / self.serving[name], name))
        return max(scored)[1] if scored else None

    def next_job(self, backend: str) -> tuple[J | None, str | None]:
        """For a worker of `backend` ready for more: (its next job, None), or (None, another backend its slot
        should serve instead, already counted as served), or (None, None): nothing left for it."""
        with self.lock:
            queue = self.waiting.get(backend)
            if not queue:
                return None, None
            other = self._better_elsewhere(backend)
            if other is not None:
                self.serving[backend] -= 1
                self.serving[other] += 1
                return None, other
            return queue.popleft(), None

    def _better_elsewhere(self, current: str) -> str | None:
        workers = self.serving[current]
        left_here = self._left(current)
        if workers < 2 or left_here is None:
            return None
        best: tuple[float, str] | None = None
        for name, queue in self.waiting.items():
            left, startup, serving = self._left(name), self._mean(self.startup_seconds, name), self.serving[name]
            if name == current or not queue or not serving or left is None or startup is None:
                continue
            before = max(left_here / workers, left / serving)
            after = max(left_here / (workers - 1), startup + max(0.0, left - serving * startup) / (serving + 1))
            if after < self.SWITCH_GAIN * before and (best is None or after < best[0]):
                best = (after, name)
        return best[1] if best else None

    def release(self, backend: str) -> None:
        with self.lock:
            self.serving[backend] -= 1

    def put_back(self, job: J, backend: str) -> None:
        """A job cut short goes first, to go on from its next item."""
        with self.lock:
            self.waiting.setdefault(backend, collections.deque()).appendleft(job)

    def drain(self, backend: str) -> list[J]:
        with self.lock:
            return list(self.waiting.pop(backend, collections.deque()))

    def drain_all(self) -> list[tuple[str, J]]:
        with self.lock:
            left = [(name, job) for name, queue in self.waiting.items() for job in queue]
            self.waiting.clear()
            return left


class KeptWorkers:
    """Idle workers kept between the phases of one run, per slot and backend, with the environment they were
    started with; `close()` ends them. A worker is taken by one slot at a time."""

    def __init__(self) -> None:
        self.idle: dict[tuple, list[WorkerProcess]] = collections.defaultdict(list)
        self.lock = threading.Lock()

    @staticmethod
    def key(launcher: Launcher, backend: str, env: dict[str, str]) -> tuple:
        return launcher.name, tuple(launcher.prefix), tuple(sorted(launcher.env.items())), backend, \
            tuple(sorted(env.items()))

    def take(self, key: tuple) -> WorkerProcess | None:
        with self.lock:
            while self.idle[key]:
                worker = self.idle[key].pop()
                if worker.proc.poll() is None:
                    return worker
                worker.forget()
        return None

    def keep(self, key: tuple, worker: WorkerProcess) -> None:
        with self.lock:
            self.idle[key].append(worker)

    def close(self) -> None:
        """Close every idle worker's input: it says "done" and exits; one that does not within seconds is killed."""
        with self.lock:
            workers = [w for kept in self.idle.values() for w in kept]
            self.idle.clear()
        for worker in workers:
            worker.close_input()
        for worker in workers:
            with contextlib.suppress(Exception):
                worker.proc.wait(timeout=10)
            if worker.proc.poll() is None:
                worker.kill()
            worker.forget()


@dataclass
class Slots(Generic[J]):
    """Runs a pool's jobs in workers, one slot (a thread with its launcher) at a time per `serve` call."""

    pool: JobPool[J]
    backends: dict[str, Backend]
    kind: JobKind[J]
    env: dict[str, dict[str, str]] = field(default_factory=dict)  # per backend: variables of its workers
    setup: dict[str, Any] = field(default_factory=dict)  # sent to every worker first (the release it follows)
    kept: KeptWorkers | None = None  # None: a worker ends when its slot is done with it
    isolate: bool = False  # one job per worker (a fresh process for each), never kept
    timings: list[JobTiming] = field(default_factory=list)
    bases: dict[str, Provenance] = field(default_factory=dict)  # per backend, as its last worker reported
    lock: threading.Lock = field(default_factory=threading.Lock)
    workers_started: int = 0
    causes: dict[str, str] = field(default_factory=dict)  # per backend: why a slot gave it up
    retried: set[tuple[int, int]] = field(default_factory=set)  # (job, item) run again after its worker died
    crashes: collections.defaultdict[int, list[object]] = field(
        default_factory=lambda: collections.defaultdict(list))  # per job: how each item's worker ended

    def serve(self, launcher: Launcher = LOCAL) -> None:
        """One slot: start a worker for the backend the pool chooses and feed it while the pool has jobs for
        it (if it dies, a new one goes on), then move where the pool says; until the pool has nothing for it.
        Two workers in a row that end without taking a job: the slot gives that backend up (and, when no worker
        of it ever took one, so does the run: its jobs are lost with the cause) and serves the others."""
        backend = self.pool.choose()
        in_a_row = 0  # workers of this slot that ended without beginning a job
        given_up: set[str] = set()  # backends this slot gave up
        while backend is not None:
            outcome = WorkerOutcome()
            try:
                if not STOPPING.is_set():
                    self._one_worker(self.backends[backend], launcher, outcome)
            finally:
                if outcome.moved_to is None:
                    self.pool.release(backend)
            if STOPPING.is_set():
                if outcome.moved_to is not None:
                    self.pool.release(outcome.moved_to)
                return
            if outcome.moved_to is not None:
                backend, in_a_row = outcome.moved_to, 0
                continue
            in_a_row = in_a_row + 1 if outcome.fruitless else 0
            if in_a_row >= 2:
                if backend not in self.pool.worked:
                    for job in self.pool.drain(backend):
                        self.kind.lost(job, backend, None, "", outcome.death or lost_worker(outcome.cause), None,
                                       launcher, self._base(backend))
                        self.kind.ended(job, False)
                self.causes[backend] = outcome.cause
                given_up.add(backend)
                backend, in_a_row = self.pool.choose(exclude=given_up), 0
                continue
            backend = self.pool.choose(backend, exclude=given_up)

    def leftovers(self) -> None:
        """Jobs no worker took (every slot gave up on their backend): lost with the cause, never silently."""
        for backend, job in self.pool.drain_all():
            cause = self.causes.get(backend, "no worker could take it")
            self.kind.lost(job, backend, None, "", lost_worker(f"no worker took it: {cause}"), None, LOCAL,
                           self._base(backend))
            self.kind.ended(job, False)

    def _base(self, backend: str) -> Provenance:
        return Provenance(**asdict(self.bases.get(backend) or Provenance()))

    def _one_worker(self, backend: Backend, launcher: Launcher, outcome: WorkerOutcome) -> None:
        """Run one worker of `backend` (a kept one when there is), feeding it jobs; `outcome` says where its slot
        goes next."""
        env = self.env.get(backend.name, {})
        key = KeptWorkers.key(launcher, backend.name, env)
        worker = self.kept.take(key) if self.kept is not None and not self.isolate else None
        if worker is None:
            worker = start_worker(backend, launcher, env, self.setup)
            with self.lock:
                self.workers_started += 1
        try:
            self._feed_worker(worker, backend.name, launcher, outcome)
        finally:
            if outcome.parked and self.kept is not None:
                self.kept.keep(key, worker)
            elif worker.proc.poll() is None and not outcome.finished:
                worker.kill()

    def _feed_worker(self, worker: WorkerProcess, name: str, launcher: Launcher, outcome: WorkerOutcome) -> None:
        kind = self.kind
        current: J | None = None
        acked = False  # the worker said it began `current` (a job sent to a worker that then died is put back)
        plan: list[str] = []
        started: int | None = None
        started_at = 0.0
        last_item: int | None = None
        fed_at = time.monotonic()
        new_worker = worker.hello is None
        jobs_done = 0

        def feed() -> bool:
            """Send the next job; False when the slot is done with this worker (kept, or its input closed)."""
            nonlocal current, acked, plan, started, last_item, fed_at
            if self.isolate and (jobs_done or current is not None):
                current, acked = None, False
                worker.close_input()  # its one job is done
                return True
            current, outcome.moved_to = self.pool.next_job(name)
            acked, plan, started, last_item, fed_at = False, [], None, None, time.monotonic()
            if current is not None:
                worker.send({"job": kind.message(current)})
                return True
            if self.kept is not None and not self.isolate:
                outcome.parked = True
                return False
            worker.close_input()
            return True  # it answers "done"

        def ours(event: dict) -> bool:
            return current is not None and acked and event.get("id") == current.id

        def timeout() -> float:
            if current is None or not acked:
                return STARTUP_TIMEOUT_S
            return kind.timeout(current, started)

        if worker.hello is not None:  # not `new_worker`: a kept worker, which said hello before
            self.bases[name] = worker.hello
            if not feed():
                return
        events = WorkerEvents(worker, timeout)
        for event_kind, event in events:
            if event_kind == "hello":
                worker.hello = self.bases[name] = events.provenance or Provenance()
                if not feed():
                    return
            elif event_kind == "job" and current is not None and event.get("id") == current.id:
                acked = outcome.took_a_job = True
                self.pool.began(name)
            elif event_kind == "plan" and ours(event):
                plan = list(event.get("labels") or [])
            elif event_kind == "start" and ours(event):
                started, started_at = int(event["item"]), time.monotonic()
            elif event_kind == "job_done" and current is not None and ours(event):
                now = time.monotonic()
                first = new_worker and not jobs_done
                # a first job costs the worker's start-up, then the job (a worker started early waited between)
                self.pool.observe(name, (worker.hello_seconds or 0.0) + now - fed_at if first else now - fed_at,
                                  first=first)
                self._timed(current, name, launcher, now - fed_at, event.get("parts") or {},
                            round(worker.hello_seconds, 3) if first and worker.hello_seconds is not None else None)
                jobs_done += 1
                kind.ended(current, True)
                if not feed():
                    return
            elif current is not None and ours(event):
                finished = kind.result(current, event_kind, event, launcher)
                if finished is not None:
                    last_item, started = finished, None
        outcome.finished = events.finished
        if events.finished or STOPPING.is_set():  # interrupted: what did not finish is not a record
            return
        cause = events.cause
        death = events.death or lost_worker(cause)
        if current is not None and not acked:  # sent, never begun: it goes back for the next worker
            self.pool.put_back(current, name)
            current = None
        if not outcome.took_a_job:
            outcome.cause = f"the worker did not start: {cause}" if worker.hello is None else \
                f"the worker stopped before its first job: {cause}"
            outcome.death = replace(death, words=outcome.cause)
            return
        if current is None:  # it left between jobs: a new worker goes on
            return
        base = self._base(name)
        if started is not None:  # the item that was running costs its record, once it crashed a fresh worker too
            if self.retry_in_fresh_worker(current, started, death):
                current.start_item = started  # the same item again, in the next worker
                self.pool.put_back(current, name)
                return
            label = plan[started] if started < len(plan) else f"item {started}"
            kind.lost(current, name, started, label, death, round(time.monotonic() - started_at, 3), launcher, base)
            current.start_item = started + 1
            if self.crashed_alike(current, death) and current.start_item < len(plan):
                kind.lost(current, name, current.start_item, "", replace(death, words=(
                    f"not tried: {len(plan) - current.start_item} more config(s) left after two configs ended the "
                    f"worker the same way ({death.words}); said once")), None, launcher, base)
                current.start_item = len(plan)
        elif last_item is not None:  # the worker left on its own after an item: go on
            current.start_item = last_item + 1
        else:  # it never reached an item: importing, building inputs or the reference
            kind.lost(current, name, None, "", replace(death, words=(
                f"{death.words} (while importing the file or evaluating the reference)")), None, launcher, base)
            current.start_item = len(plan)
        if current.start_item < len(plan):
            self.pool.put_back(current, name)
        else:
            kind.ended(current, False)

    def retry_in_fresh_worker(self, job: J, item: int, death: Death) -> bool:
        """Whether the item a worker died in runs once more, in a fresh worker: a crash is evidence, not a verdict,
        so a config that ended its worker gets a second worker before its record says so. A timeout is not retried
        (it would cost its limit again), nor is an interrupted run."""
        if death.timed_out is not None or STOPPING.is_set():
            return False
        key = (id(job), item)
        with self.lock:
            if key in self.retried:
                return False
            self.retried.add(key)
        return True

    def crashed_alike(self, job: J, death: Death) -> bool:
        """Whether two items of `job` have now ended their workers the same way (its signal or exit code): the rest
        would too, so they are said once instead of tried."""
        with self.lock:
            self.crashes[id(job)].append(death.returncode if death.timed_out is None else "timeout")
            ways = self.crashes[id(job)]
        return len(ways) >= 2 and ways[-1] == ways[-2]

    def _timed(self, job: J, backend: str, launcher: Launcher, seconds: float, parts: dict[str, Any],
               worker_start: float | None) -> None:
        described = dict(self.kind.describe(job))
        timing = JobTiming(phase=self.kind.phase, kernel=str(described.pop("kernel", "")), backend=backend,
                           slot=launcher.name, seconds=round(seconds, 3), worker_start_s=worker_start,
                           parts={k: round(float(v), 3) for k, v in parts.items() if isinstance(v, (int, float))},
                           detail=described)
        with self.lock:
            self.timings.append(timing)


def start_worker(backend: Backend, launcher: Launcher, env: dict[str, str], setup: dict[str, object]) -> WorkerProcess:
    """A new worker of the engine for `backend`, its set-up line sent (it then imports torch and Triton): the
    run's `setup` (`RunWorkers.setup`: the release, the machine's judgement of TileIR)."""
    worker = WorkerProcess(backend, None, module=WORKER_MODULE, extra_env=env, launcher=launcher)
    worker.send({**setup, "backend": backend.name, "triton_distribution": triton_distribution()})
    return worker


@dataclass
class WorkerOutcome:
    """How one worker ended, for its slot."""

    moved_to: str | None = None  # the backend its slot serves next (already counted as served)
    finished: bool = False  # it said "done"
    parked: bool = False  # it is kept, idle, for a later job of the run
    took_a_job: bool = False
    cause: str = ""  # why it ended without beginning a job
    death: Death | None = None  # how, with the worker's evidence

    @property
    def fruitless(self) -> bool:
        """It ended without beginning any job (it did not start, or left at once)."""
        return not self.finished and not self.parked and not self.took_a_job


def run_jobs(slots: Slots[J], launchers: list[Launcher]) -> bool:
    """Serve the pool from every launcher; False when interrupted (the records that finished are kept)."""
    try:
        run_in_slots([slots.serve] * min(len(launchers), slots.pool.count()), launchers)
    except KeyboardInterrupt:  # wherever it reached the main thread (starting the slots' threads, too)
        stop_all()
        return False
    slots.leftovers()
    return True


class RunWorkers:
    """What the workers of one run share: the CUDA Tile IR release they follow, one Triton cache per compiler (a
    fresh folder, so a first call really compiles; removed by `close()`), and, with `keep`, the idle workers kept
    between phases. Each kernel's compiled backend is read from its own metadata, so a shared cache never hides
    which backend compiled it."""

    def __init__(self, release: str | None = None, keep: bool = False):
        self.release = release
        self.tileir_blockers: list[str] | None = None  # the machine's judgement (`judged`), sent to each worker
        self.kept = KeptWorkers() if keep else None
        self.caches: dict[str, str] = {}
        self.lock = threading.Lock()
        self.scratch = tempfile.mkdtemp(prefix="tileiropt-run-")  # the run's own files (saved references)

    def env(self, backend: str) -> dict[str, str]:
        """A backend's workers' variables: the Triton cache of its compiler. PTX and the TileIR code forced on
        under PTX share one ("cuda": the same compiler, whose cache keys hold the kernel's source, so the
        original's kernels compile once for both); the TileIR backend has its own."""
        known = BACKENDS.get(backend)
        compiler = known.expected_backend if known is not None else backend
        with self.lock:
            if compiler not in self.caches:
                self.caches[compiler] = tempfile.mkdtemp(prefix=f"tileiropt-triton-cache-{compiler}-")
            return {"TRITON_CACHE_DIR": self.caches[compiler]}

    def judged(self, tileir_blockers: list[str]) -> None:
        """Why TileIR cannot run on this machine, as `Machine.judge` decided it once (empty: it can): every worker
        started from now on is told, instead of probing the machine again."""
        self.tileir_blockers = list(tileir_blockers)

    def setup(self) -> dict[str, object]:
        """What each worker is told as it starts, beside its backend."""
        return {"release": self.release, "tileir_blockers": self.tileir_blockers}

    def prestart(self, launcher: Launcher, backends: list[Backend]) -> None:
        """Start a worker of each of `backends` on `launcher` now, kept idle for the first phase that needs it: it
        imports torch and Triton while the tool does something else (runs the user's program, validates the
        original files). Without kept workers, nothing."""
        if self.kept is None:
            return
        for backend in backends:
            env = self.env(backend.name)
            self.kept.keep(KeptWorkers.key(launcher, backend.name, env),
                           start_worker(backend, launcher, env, self.setup()))

    def slots(self, pool: JobPool[J], backends: dict[str, Backend], kind: JobKind[J],
              isolate: bool = False) -> Slots[J]:
        """The slots serving `pool` with these workers (`isolate`: a fresh worker per job)."""
        return Slots(pool, backends, kind, env={name: self.env(name) for name in backends},
                     setup=self.setup(), kept=self.kept, isolate=isolate)

    def close(self) -> None:
        if self.kept is not None:
            self.kept.close()
        for folder in [*self.caches.values(), self.scratch]:
            shutil.rmtree(folder, ignore_errors=True)
        self.caches.clear()

    def __enter__(self) -> RunWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
