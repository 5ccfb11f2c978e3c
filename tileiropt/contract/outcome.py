"""What one phase of a run gives back (`Outcome`), and the row of run.json it keeps (`PhaseResult`).

A phase is called the same way whatever it does (`contract.context.PhaseRunner.run(context, outcomes)`) and
returns an outcome: its status and detail, the typed record later phases read in memory, the kernels it stops
and why, and what it says of the run's answer. Which kernels go on and whether the run failed are decided over
the outcomes by `contract.policy`; after them only the report can still make the answer no (a kernel whose
verdict needs attention, `report/phase.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tileiropt.contract.job_timing import JobTiming


@dataclass
class PhaseResult:
    """One phase of a run as run.json keeps it: its outcome, its seconds, and what its workers and jobs cost."""

    phase: str
    status: str  # PASS | FAIL | ERROR | NOT_RUN (tileiropt.schema)
    seconds: float = 0.0
    detail: str = ""
    workers: int = 0  # worker processes the phase started (validate, bench, capture replays)
    worker_start_s: float = 0.0  # their time from start to ready (Python, torch, Triton, the GPU), summed
    jobs: list[JobTiming] = field(default_factory=list)  # each job of the engine: worker start, import, compile...
    interrupted: bool = False  # the run was interrupted (Ctrl-C, SIGTERM) during this phase


@dataclass(frozen=True)
class Stop:
    """A kernel a phase stops: its later phases do not run for it, and say why."""

    kernel: str
    phase: str
    reason: str
    cause: str | None = None  # whose failure stopped it (a `schema.Cause`), where a failed record did


@dataclass
class Outcome:
    """What one phase gave back."""

    result: PhaseResult  # what run.json keeps of it
    record: Any = None  # the phase's typed record (ValidateRun, BenchRun, CaptureResult, ...), read by later phases
    stops: list[Stop] = field(default_factory=list)  # the kernels it stops, in the order it found them
    fails_run: bool = False  # the run's answer is no though no kernel stopped (the program failed, a bench errored)
    not_run_here: bool = False  # what was asked needs what this machine lacks (a GPU): not the user's failure
    program: dict[str, Any] | None = None  # the captured program's own failure or cut, as run.json keeps it
    later: Callable[[], tuple[str, str, object]] | None = None  # work going on beside the later phases: joined
    # (status, detail, record) before the run settles

    @classmethod
    def of(cls, phase: str, status: str, detail: str = "", *, record: object = None, stops: list[Stop] | None = None,
           fails_run: bool = False, not_run_here: bool = False) -> Outcome:
        return cls(PhaseResult(phase, status, detail=detail), record=record, stops=list(stops or []),
                   fails_run=fails_run, not_run_here=not_run_here)

    @property
    def phase(self) -> str:
        return self.result.phase

    @property
    def status(self) -> str:
        return self.result.status
