"""The run's policy over its phases' outcomes, as pure functions: which kernels stopped (and where), which go on,
whether the run's answer is no, and its exit code. Their decision tables: `tests/decisions/test_run_policy.py`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from tileiropt.contract.outcome import Outcome, Stop
from tileiropt.errors import ExitCode, run_exit_code, verdicts_exit_code


class Named(Protocol):
    @property
    def name(self) -> str: ...


K = TypeVar("K", bound=Named)


def stopped(outcomes: Iterable[Outcome]) -> dict[str, Stop]:
    """Kernel -> the first stop of it, in the order the phases ran: a kernel stops once, where it first failed."""
    first: dict[str, Stop] = {}
    for outcome in outcomes:
        for stop in outcome.stops:
            first.setdefault(stop.kernel, stop)
    return first


def live(kernels: Iterable[K], outcomes: Iterable[Outcome]) -> list[K]:
    """The kernels no phase stopped, in their order."""
    gone = stopped(outcomes)
    return [k for k in kernels if k.name not in gone]


def run_failed(outcomes: Sequence[Outcome], *, set_aside: bool) -> bool:
    """Whether the run's answer is no: a kernel stopped, a phase failed the run without stopping one (the program
    failed, a benchmark errored, --in-place could not be proven), or an optimized file was set aside."""
    return set_aside or any(o.stops or o.fails_run for o in outcomes)


def exit_code(outcomes: Sequence[Outcome], *, set_aside: bool, interrupted: bool,
              attention: Sequence[str | None] = ()) -> ExitCode:
    """The run's one exit code: 130 interrupted; else, where kernels need attention (`attention`: each one's cause,
    None for one without), the code of their causes (`errors.verdicts_exit_code`: 1 the kernel's own, 4-10 a
    compiler, the machine, the tool, ...); else 1 the run failed (`run_failed`), 3 what was asked needs what this
    machine lacks, else 0."""
    if not interrupted and attention:
        return verdicts_exit_code(list(attention))
    return run_exit_code(interrupted=interrupted, failed=run_failed(outcomes, set_aside=set_aside),
                         not_run_here=any(o.not_run_here for o in outcomes))
