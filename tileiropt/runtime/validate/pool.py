"""The cases of a validation, shared by its slots: each slot runs one worker at a time and feeds it cases.

A worker costs seconds to start (torch, Triton and the user's package are imported anew) and then
runs a case in milliseconds to seconds. So a worker is started once per slot and backend and is given
case after case over its stdin, from one pool for the whole run: no slot waits while another holds a
long list (a shard fixed in advance leaves slots idle at the end), and a slot whose backend has no
case left joins another where that ends the run sooner (`CasePool`).

A worker that hangs past a record's timeout, or crashes, costs that record (or, before its first
item, the case's "prepare" record); a new worker goes on with the rest of the case and the pool.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from tileiropt.environment import triton_distribution
from tileiropt.runtime.backends import Backend
from tileiropt.runtime.provenance import Provenance
from tileiropt.runtime.validate.cases import Case, record_for
from tileiropt.runtime.validate.records import PREPARE, ValidationRecord, record_from_dict
from tileiropt.runtime.workers import LOCAL, STARTUP_TIMEOUT_S, STOPPING, Launcher, WorkerEvents, WorkerProcess
from tileiropt.schema import ERROR

RecordCallback = Callable[[ValidationRecord], None]


class CasePool:
    """Per backend, the cases no worker has taken yet, in order; how many workers serve each backend; and what
    the run has measured so far: seconds per case, and a worker's start-up (from its start to the end of its
    first case, which imports torch, Triton and the user's package).

    A slot asks `choose()` which backend to start a worker for, and its worker asks `next_case()` for each
    case. Before anything is measured, slots go where the most cases wait per worker. Then the estimates
    decide: a free slot joins a backend only when the work left per worker there exceeds a start-up (else
    the workers serving it finish first), and a worker leaves its backend for another when the run would
    end clearly sooner that way (never leaving its own without a worker)."""

    SWITCH_GAIN = 0.85  # switch only when the estimated end of the two backends comes at least 15% sooner

    def __init__(self, cases: dict[str, list[Case]]):
        self.waiting = {name: collections.deque(items) for name, items in cases.items() if items}
        self.serving: collections.Counter[str] = collections.Counter()
        self.case_seconds: dict[str, list[float]] = collections.defaultdict(list)  # after each worker's first
        self.startup_seconds: dict[str, list[float]] = collections.defaultdict(list)
        self.worked: set[str] = set()  # backends a worker has begun a case of (`began`): the backend can run
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ measurements

    def began(self, backend: str) -> None:
        """A worker of `backend` began a case."""
        with self.lock:
            self.worked.add(backend)

    def observe(self, backend: str, seconds: float, *, first: bool) -> None:
        """A case ended after `seconds` (`first`: the worker's first, counted from the worker's start)."""
        with self.lock:
            (self.startup_seconds if first else self.case_seconds)[backend].append(seconds)

    def _mean(self, table: dict[str, list[float]], backend: str | None) -> float | None:
        own = table.get(backend) if backend is not None else None
        if own:
            return sum(own) / len(own)
        every = [value for values in table.values() for value in values]
        return sum(every) / len(every) if every else None  # another backend's, until this one has its own

    def _left(self, backend: str) -> float | None:
        """Estimated seconds of work waiting for `backend`; None before any case was timed."""
        mean = self._mean(self.case_seconds, backend)
        return None if mean is None else len(self.waiting.get(backend, ())) * mean

    # ------------------------------------------------------------------ decisions

    def choose(self, current: str | None = None) -> str | None:
        """The backend a slot starts a worker for (counted as served from now; `release()` when it ends):
        `current` while cases wait there, else a backend worth joining; None when none is."""
        with self.lock:
            if current is not None and self.waiting.get(current):
                chosen: str | None = current
            else:
                chosen = self._worth_joining()
            if chosen is not None:
                self.serving[chosen] += 1
            return chosen

    def _worth_joining(self) -> str | None:
        open_ = [name for name, queue in self.waiting.items() if queue]
        unserved = [name for name in open_ if not self.serving[name]]
        if unserved:
            return max(unserved, key=lambda name: len(self.waiting[name]))
        scored = []
        for name in open_:
            left, startup = self._left(name), self._mean(self.startup_seconds, name)
            if left is None or startup is None:  # nothing measured yet: where the most cases wait per worker
                scored.append((len(self.waiting[name]) / (self.serving[name] + 1), name))
            elif left / self.serving[name] > startup:
                scored.append((left / self.serving[name], name))
        return max(scored)[1] if scored else None

    def next_case(self, backend: str) -> tuple[Case | None, str | None]:
        """For a worker of `backend` ready for more: (its next case, None), or (None, another backend its slot
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

    def put_back(self, case: Case, backend: str) -> None:
        """A case cut short goes first, to go on from its next item."""
        with self.lock:
            self.waiting.setdefault(backend, collections.deque()).appendleft(case)

    def drain(self, backend: str) -> list[Case]:
        with self.lock:
            queue = self.waiting.pop(backend, collections.deque())
            return list(queue)

    def drain_all(self) -> list[tuple[str, Case]]:
        with self.lock:
            left = [(name, case) for name, queue in self.waiting.items() for case in queue]
            self.waiting.clear()
            return left


@dataclass
class ValidationSlots:
    """Runs a pool's cases in workers, one slot (a thread with its launcher) at a time per `serve` call."""

    pool: CasePool
    backends: dict[str, Backend]
    timeouts: dict[int, float]  # case id -> seconds per record
    best_config: bool = False
    on_record: RecordCallback | None = None
    inputs: dict[int, str] = field(default_factory=dict)  # case id -> input key (tileiropt.runtime.resume)
    on_case_done: Callable[[Case, bool], None] | None = None  # a case ended (True: finished, False: cut short)
    records: list[tuple[tuple[int, int], ValidationRecord]] = field(default_factory=list)
    bases: dict[str, Provenance] = field(default_factory=dict)  # per backend, as its last worker reported
    lock: threading.Lock = field(default_factory=threading.Lock)
    workers_started: int = 0
    causes: dict[str, str] = field(default_factory=dict)  # per backend: why a slot gave it up

    # ------------------------------------------------------------------ records

    def add(self, case: Case, item: int | None, record: ValidationRecord, launcher: Launcher) -> None:
        record.inputs = self.inputs.get(case.id)
        if launcher.name != "local":
            record.provenance.worker = launcher.name
        with self.lock:
            self.records.append(((case.id, -1 if item is None else item), record))
        if self.on_record:
            self.on_record(record)

    def error(self, case: Case, backend: str, item: int | None, label: str, reason: str, seconds: float | None,
              launcher: Launcher) -> None:
        base = self.bases.get(backend) or Provenance()
        self.add(case, item, record_for(case, backend, label, ERROR, reason, Provenance(**asdict(base)),
                                        seconds=seconds), launcher)

    def ended(self, case: Case, finished: bool) -> None:
        if self.on_case_done:
            self.on_case_done(case, finished)

    # ------------------------------------------------------------------ a slot

    def serve(self, launcher: Launcher = LOCAL) -> None:
        """One slot: start a worker for the backend the pool chooses and feed it while the pool has cases for
        it (if it dies, a new one goes on), then move where the pool says; until the pool has nothing for it.
        Two workers in a row that end without taking a case: the slot gives up (and, when no worker of that
        backend ever took one, so does the backend: its cases get the cause as their error)."""
        backend = self.pool.choose()
        in_a_row = 0  # workers of this slot that ended without beginning a case
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
                    for case in self.pool.drain(backend):
                        self.error(case, backend, None, PREPARE, outcome.cause, None, launcher)
                        self.ended(case, False)
                self.causes[backend] = outcome.cause
                return
            backend = self.pool.choose(backend)

    def leftovers(self) -> None:
        """Cases no worker took (every slot gave up on their backend): an error record each, never lost."""
        for backend, case in self.pool.drain_all():
            cause = self.causes.get(backend, "no worker could take it")
            self.error(case, backend, None, PREPARE, f"not validated: {cause}", None, LOCAL)
            self.ended(case, False)

    def _one_worker(self, backend: Backend, launcher: Launcher, outcome: WorkerOutcome) -> None:
        """Run one worker of `backend`, feeding it cases; `outcome` says where its slot goes next."""
        name = backend.name
        born = time.monotonic()
        worker = WorkerProcess(backend, None, launcher=launcher)
        try:
            self._feed_worker(worker, name, launcher, outcome, born)
        finally:
            if worker.proc.poll() is None and not outcome.finished:
                worker.kill()

    def _feed_worker(self, worker: WorkerProcess, name: str, launcher: Launcher, outcome: WorkerOutcome,
                     born: float) -> None:
        with self.lock:
            self.workers_started += 1
        worker.send({"backend": name, "best_config": self.best_config,
                     "triton_distribution": triton_distribution()})  # the same for every worker of this host
        current: Case | None = None
        acked = False  # the worker said it began `current` (a case sent to a worker that then died is put back)
        plan: list[str] = []
        started: int | None = None
        started_at = 0.0
        last_item: int | None = None
        fed_at = born
        cases_done = 0

        def feed() -> None:
            nonlocal current, acked, plan, started, last_item, fed_at
            current, outcome.moved_to = self.pool.next_case(name)
            acked, plan, started, last_item, fed_at = False, [], None, None, time.monotonic()
            if current is None:
                worker.close_input()
            else:
                worker.send({"case": current.to_json()})

        def ours(event: dict) -> bool:
            return current is not None and acked and event.get("id") == current.id

        events = WorkerEvents(worker, lambda: self.timeouts.get(current.id, STARTUP_TIMEOUT_S)
                              if current is not None and acked else STARTUP_TIMEOUT_S)
        for kind, event in events:
            if kind == "hello":
                self.bases[name] = events.provenance or Provenance()
                feed()
            elif kind == "case" and current is not None and event.get("id") == current.id:
                acked = outcome.took_a_case = True
                self.pool.began(name)
            elif kind == "plan" and ours(event):
                plan = list(event.get("labels") or [])
            elif kind == "start" and ours(event):
                started, started_at = int(event["item"]), time.monotonic()
            elif kind in ("record", "skip") and ours(event):
                if kind == "record":
                    self.add(current, event.get("item"), record_from_dict(event["record"]), launcher)
                if event.get("item") is not None:
                    last_item = int(event["item"])
                started = None
            elif kind == "case_done" and ours(event):
                now = time.monotonic()
                self.pool.observe(name, now - (born if not cases_done else fed_at), first=not cases_done)
                cases_done += 1
                self.ended(current, True)
                feed()
        outcome.finished = events.finished
        if events.finished or STOPPING.is_set():  # interrupted: what did not finish is not a record
            return
        cause = events.cause
        if current is not None and not acked:  # sent, never begun: it goes back for the next worker
            self.pool.put_back(current, name)
            current = None
        if not outcome.took_a_case:
            outcome.cause = f"the worker did not start: {cause}" if events.provenance is None else \
                f"the worker stopped before its first case: {cause}"
            return
        if current is None:  # it left between cases: a new worker goes on
            return
        if started is not None:  # the item that was running costs its record
            label = plan[started] if started < len(plan) else f"config {started}"
            self.error(current, name, started, label, cause, round(time.monotonic() - started_at, 3), launcher)
            current.start_item = started + 1
        elif last_item is not None:  # the worker left on its own after an item: go on
            current.start_item = last_item + 1
        else:  # it never reached an item: importing, building inputs or the reference
            self.error(current, name, None, PREPARE, f"{cause} (while importing the file or evaluating the "
                                                    "reference)", None, launcher)
            current.start_item = len(plan)
        if current.start_item < len(plan):
            self.pool.put_back(current, name)
        else:
            self.ended(current, False)


@dataclass
class WorkerOutcome:
    """How one worker ended, for its slot."""

    moved_to: str | None = None  # the backend its slot serves next (already counted as served)
    finished: bool = False  # it said "done"
    took_a_case: bool = False
    cause: str = ""  # why it ended without beginning a case

    @property
    def fruitless(self) -> bool:
        """It ended without beginning any case (it did not start, or left at once)."""
        return not self.finished and not self.took_a_case
