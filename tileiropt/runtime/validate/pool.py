"""The cases of a validation, shared by its slots: each slot runs one worker at a time and feeds it cases.

A worker costs seconds to start (torch, Triton and the user's package are imported anew) and then
runs a case in milliseconds to seconds. So a worker is started once per slot and backend and is given
case after case over its stdin, from one pool for the whole run: no slot waits while another holds a
long list (a shard fixed in advance leaves slots idle at the end), and a slot whose backend has no
case left joins the backend with the most cases waiting per worker serving it.

A worker that hangs past a record's timeout, or crashes, costs that record (or, before its first
item, the case's "prepare" record); a new worker goes on with the rest of the case and the pool.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from tileiropt.runtime.backends import Backend
from tileiropt.runtime.provenance import Provenance
from tileiropt.runtime.validate.cases import Case, record_for
from tileiropt.runtime.validate.records import PREPARE, ValidationRecord, record_from_dict
from tileiropt.runtime.workers import LOCAL, STARTUP_TIMEOUT_S, STOPPING, Launcher, WorkerEvents, WorkerProcess
from tileiropt.schema import ERROR

RecordCallback = Callable[[ValidationRecord], None]


class CasePool:
    """Per backend, the cases no worker has taken yet, in order; and how many workers serve each backend."""

    def __init__(self, cases: dict[str, list[Case]]):
        self.waiting = {name: collections.deque(items) for name, items in cases.items() if items}
        self.serving: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()

    def choose(self, current: str | None) -> str | None:
        """The backend a slot serves next: its current one while cases wait there, else the one with the most
        cases waiting per worker serving it; None when every case is taken."""
        with self.lock:
            if current is not None and self.waiting.get(current):
                return current
            open_ = [name for name, queue in self.waiting.items() if queue]
            if not open_:
                return None
            return max(open_, key=lambda name: (len(self.waiting[name]) / (self.serving[name] + 1),
                                                -self.serving[name]))

    def take(self, backend: str) -> Case | None:
        with self.lock:
            queue = self.waiting.get(backend)
            return queue.popleft() if queue else None

    def put_back(self, case: Case, backend: str) -> None:
        """A case cut short goes first, to go on from its next item."""
        with self.lock:
            self.waiting.setdefault(backend, collections.deque()).appendleft(case)

    def drain(self, backend: str) -> list[Case]:
        with self.lock:
            queue = self.waiting.pop(backend, collections.deque())
            return list(queue)

    def serve(self, backend: str, change: int) -> None:
        with self.lock:
            self.serving[backend] += change


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
        """One slot: start a worker for the backend the pool needs most and feed it until that backend has no
        case left (or it dies: a new one goes on), then the next backend; until the pool is empty."""
        backend: str | None = None
        while not STOPPING.is_set():
            backend = self.pool.choose(backend)
            if backend is None:
                return
            self.pool.serve(backend, +1)
            try:
                self._one_worker(self.backends[backend], launcher)
            finally:
                self.pool.serve(backend, -1)

    def _one_worker(self, backend: Backend, launcher: Launcher) -> None:
        name = backend.name
        worker = WorkerProcess(backend, None, launcher=launcher)
        with self.lock:
            self.workers_started += 1
        worker.send({"backend": name, "best_config": self.best_config})
        current: Case | None = None
        plan: list[str] = []
        started: int | None = None
        started_at = 0.0
        last_item: int | None = None
        progressed = False

        def feed() -> None:
            nonlocal current, plan, started, last_item
            current, plan, started, last_item = self.pool.take(name), [], None, None
            if current is None:
                worker.close_input()
            else:
                worker.send({"case": current.to_json()})

        events = WorkerEvents(worker, lambda: self.timeouts.get(current.id, STARTUP_TIMEOUT_S) if current
                              else STARTUP_TIMEOUT_S)
        for kind, event in events:
            if kind == "hello":
                self.bases[name] = events.provenance or Provenance()
                feed()
            elif kind == "plan":
                plan = list(event.get("labels") or [])
            elif kind == "start":
                started, started_at = int(event["item"]), time.monotonic()
            elif kind in ("record", "skip"):
                if kind == "record" and current is not None:
                    self.add(current, event.get("item"), record_from_dict(event["record"]), launcher)
                if event.get("item") is not None:
                    last_item = int(event["item"])
                started, progressed = None, True
            elif kind == "case_done" and current is not None:
                self.ended(current, True)
                progressed = True
                feed()
        if events.finished or STOPPING.is_set():  # interrupted: what did not finish is not a record
            return
        cause = events.cause
        if events.provenance is None:  # it never started: nor would the next one, for this backend's cases
            for case in ([current] if current else []) + self.pool.drain(name):
                self.error(case, name, None, PREPARE, f"the worker did not start: {cause}", None, launcher)
                self.ended(case, False)
            return
        if current is None:
            if not progressed:  # it left between cases without doing anything: the next would too
                for case in self.pool.drain(name):
                    self.error(case, name, None, PREPARE, f"the worker stopped: {cause}", None, launcher)
                    self.ended(case, False)
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
