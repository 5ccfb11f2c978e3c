"""Validation cases as jobs of the engine (`tileiropt.engine.engine`): what a case is sent as, how long its
items may take, and what its records are, including the record a dead or hung worker costs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tileiropt.engine.workers import Launcher
from tileiropt.harness.blame import Death, blame_death
from tileiropt.harness.provenance import Provenance
from tileiropt.schema import ERROR
from tileiropt.validate.cases import Case, record_for, user_paths
from tileiropt.validate.records import PREPARE, ValidationRecord, record_from_dict

RecordCallback = Callable[[ValidationRecord], None]


@dataclass
class CaseJobs:
    """The validate phase's side of the engine: its records, in the order of (case id, item)."""

    timeouts: dict[int, float]  # case id -> seconds per record
    best_config: bool = False
    on_record: RecordCallback | None = None
    inputs: dict[int, str] = field(default_factory=dict)  # case id -> input key (tileiropt.engine.resume)
    on_case_done: Callable[[Case, bool], None] | None = None  # a case ended (True: finished, False: cut short)
    records: list[tuple[tuple[int, int], ValidationRecord]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    reference_cache: str | None = None  # the run's folder of references computed once (validate.reference_cache)
    phase: str = "validate"

    def message(self, case: Case) -> dict[str, Any]:
        return {"kind": "case", "id": case.id, "case": case.to_json(), "best_config": self.best_config,
                "reference_cache": self.reference_cache}

    def timeout(self, case: Case, item: int | None) -> float:
        return self.timeouts[case.id]

    def describe(self, case: Case) -> dict[str, Any]:
        return {"kernel": case.kernel, "variant": case.variant,
                **({"shard": f"{case.shard + 1}/{case.shards}"} if case.shards > 1 else {})}

    def add(self, case: Case, item: int | None, record: ValidationRecord, launcher: Launcher) -> None:
        record.inputs = self.inputs.get(case.id)
        if launcher.name != "local":
            record.provenance.worker = launcher.name
        with self.lock:
            self.records.append(((case.id, -1 if item is None else item), record))
        if self.on_record:
            self.on_record(record)

    def result(self, case: Case, kind: str | None, event: dict[str, Any], launcher: Launcher) -> int | None:
        if kind == "record":
            self.add(case, event.get("item"), record_from_dict(event["record"]), launcher)
        if kind in ("record", "skip") and event.get("item") is not None:
            return int(event["item"])
        return None

    def lost(self, case: Case, backend: str, item: int | None, label: str, death: Death, seconds: float | None,
             launcher: Launcher, base: Provenance) -> None:
        """The worker died or hung in `item`: its record says how, and whose failure the evidence shows."""
        during = f"the config {label}" if item is not None and label else "the file's import or its reference"
        blame = blame_death(death, user_paths(case), during=during)
        reason = f"{death.words}; {blame.why}"
        self.add(case, item, record_for(case, backend, label if item is not None else PREPARE, ERROR, reason, base,
                                        cause=blame.cause, evidence=blame.evidence, seconds=seconds), launcher)

    def ended(self, case: Case, finished: bool) -> None:
        if self.on_case_done:
            self.on_case_done(case, finished)
