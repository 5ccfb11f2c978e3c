"""What every phase of a run is given (`RunContext`), and how a phase is called (`PhaseRunner`).

The context holds what the run was asked (`RunRequest`), the project and its kernels, the release every phase
follows, the machine as `check` judged it (probed once: later phases and their workers read it, never probe
again), the files read and classified once (`FileModels`), the workers kept between phases, and the store
where records go. Phases return their results as outcomes (`contract.outcome`); the context carries only what
the run shares."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from tileiropt.contract.outcome import Outcome
from tileiropt.contract.store import Store
from tileiropt.phases import Phase

if TYPE_CHECKING:  # the types of the phases above: named for the type checker, never imported here
    from rich.console import Console

    from tileiropt.bench.records import BenchRow
    from tileiropt.bench.run import BenchSettings
    from tileiropt.check.machine import Machine
    from tileiropt.classify.model import FileModels
    from tileiropt.engine.engine import RunWorkers
    from tileiropt.engine.executors import Executor
    from tileiropt.engine.resume import Earlier
    from tileiropt.project.spec import KernelSpec, Project
    from tileiropt.releases import Choice
    from tileiropt.validate.records import ValidationRecord

EventCallback = Callable[[str, str], None]  # (phase, message)


@dataclass(frozen=True)
class RunRequest:
    """What a run was asked to do, beside its project and kernels: it never changes while the run goes."""

    timeout: float | None  # seconds per record or measurement (None: the project's)
    bench_settings: BenchSettings
    command: list[str]  # the command line, as every record keeps it
    in_place: bool = False  # write each optimized file over its kernel file once proven
    fresh: bool = False  # redo every record
    executor: Executor | None = None  # where the workers run (None: this host)
    console: Console | None = None  # where progress goes (None: only the phase events)


@dataclass
class RunContext:
    """What the phases of one run share. `start` (run.pipeline) fills in the release, the workers and what a
    re-run may reuse before the first phase; `check` sets the machine."""

    project: Project
    request: RunRequest
    specs: list[KernelSpec]  # every kernel of the run, stopped or not (a capture adds its launches)
    store: Store
    models: FileModels  # each kernel file read, parsed and classified once, by classify and apply
    on_event: EventCallback
    release: Choice = field(init=False)  # every phase follows this CUDA Tile IR release
    workers: RunWorkers = field(init=False)  # validate's and bench's, kept between phases
    machine: Machine | None = None  # what `check` found: probed once, read by every later phase and worker
    earlier_validation: Earlier[ValidationRecord] | None = None  # what a re-run may reuse, read before the run
    earlier_bench: Earlier[BenchRow] | None = None  # writes anything
    adopted: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)  # the machine's facts, held to
    # the end of the run

    def the_machine(self) -> Machine:
        """The machine `check` judged; a phase after it may count on it."""
        if self.machine is None:
            raise RuntimeError("the check phase runs first: no machine was judged")
        return self.machine


class PhaseRunner(Protocol):
    """A phase of `tileiropt run` (each phase package's `phase.py`): what it is (`about`, from `phases.PHASES`:
    its name, whether it needs kernels left, whether it runs only when asked), the earlier phases it needs
    (`needs`: their records, read with `record_of`, or what they leave in the context: check's machine, classify's
    file models, apply's optimized files; every phase reads the stops of all), and `run`."""

    about: Phase
    needs: tuple[str, ...]

    def wanted(self, context: RunContext) -> bool:
        """Whether the run takes this phase at all (an optional phase: only when the project asks for it)."""
        ...

    def run(self, context: RunContext, earlier: Sequence[Outcome]) -> Outcome:
        """Do the phase over the kernels still going (`contract.policy.live`); return its outcome."""
        ...


def record_of(earlier: Sequence[Outcome], phase: str) -> object:
    """The record the named earlier phase gave back (None when it did not run or gave none)."""
    return next((o.record for o in reversed(earlier) if o.phase == phase), None)
