"""The run's policy over its phases' outcomes (`contract.policy`): which kernels stopped, and where; which go on;
whether the run failed, for each cause; its exit code. And the one list of phases the run loops over."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tileiropt.contract import policy
from tileiropt.contract.outcome import Outcome, Stop
from tileiropt.errors import ExitCode
from tileiropt.schema import FAIL, NOT_RUN, PASS


def _kernels(*names: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(name=name) for name in names]


def test_a_kernel_stops_once_where_it_first_failed() -> None:
    outcomes = [Outcome.of("compatibility", FAIL, stops=[Stop("a", "compatibility", "wrong on ptx")]),
                Outcome.of("validate", FAIL, stops=[Stop("a", "validate", "again"), Stop("b", "validate", "wrong")])]
    stopped = policy.stopped(outcomes)
    assert {k: (s.phase, s.reason) for k, s in stopped.items()} == {
        "a": ("compatibility", "wrong on ptx"), "b": ("validate", "wrong")}
    assert [k.name for k in policy.live(_kernels("a", "b", "c"), outcomes)] == ["c"]
    assert [k.name for k in policy.live(_kernels("c", "a"), outcomes[:0])] == ["c", "a"]  # nothing ran: all go on


@pytest.mark.parametrize(("cause", "failed"), [
    ("none", False), ("a kernel stopped", True), ("set aside", True), ("bench errored", True),
    ("program failed", True), ("needs a GPU", False),
])
def test_each_cause_of_failure_fails_the_run(cause: str, failed: bool) -> None:
    outcomes = [Outcome.of("check", PASS), Outcome.of("validate", PASS)]
    if cause == "a kernel stopped":
        outcomes[1] = Outcome.of("validate", FAIL, stops=[Stop("k", "validate", "wrong")])
    elif cause == "bench errored":
        outcomes.append(Outcome.of("bench", "error", fails_run=True))
    elif cause == "program failed":
        outcomes.insert(1, Outcome.of("capture", FAIL, fails_run=True))
    elif cause == "needs a GPU":
        outcomes.insert(1, Outcome.of("capture", NOT_RUN, not_run_here=True))
    assert policy.run_failed(outcomes, set_aside=cause == "set aside") is failed


@pytest.mark.parametrize(("interrupted", "fails", "set_aside", "not_run_here", "code"), [
    (False, False, False, False, ExitCode.OK), (False, False, False, True, ExitCode.NOT_RUN),
    (False, True, False, False, ExitCode.FAILED), (False, False, True, True, ExitCode.FAILED),
    (False, True, False, True, ExitCode.FAILED), (True, False, False, False, ExitCode.INTERRUPTED),
    (True, True, True, True, ExitCode.INTERRUPTED),
])
def test_the_exit_code_over_outcomes(interrupted: bool, fails: bool, set_aside: bool, not_run_here: bool,
                                     code: ExitCode) -> None:
    outcomes = [Outcome.of("check", PASS), Outcome.of("bench", NOT_RUN, fails_run=fails, not_run_here=not_run_here)]
    assert policy.exit_code(outcomes, set_aside=set_aside, interrupted=interrupted) == code


def test_the_run_loops_over_the_phases_in_their_one_order() -> None:
    from tileiropt.phases import NAMES
    from tileiropt.run.pipeline import PHASE_RUNNERS

    assert tuple(r.about.name for r in PHASE_RUNNERS) == tuple(n for n in NAMES if n != "report")
    assert all(r.about.name in {"check", *NAMES} for r in PHASE_RUNNERS)


def test_each_phase_reads_only_the_records_of_the_earlier_phases_it_needs() -> None:
    """`record_of(earlier, "x")` in a phase's class: "x" is in its `needs`, and every need is an earlier phase."""
    import ast

    from tileiropt.phases import NAMES
    from tileiropt.run.pipeline import PHASE_RUNNERS

    from shared import ROOT

    for runner in PHASE_RUNNERS:
        name = runner.about.name
        assert all(NAMES.index(need) < NAMES.index(name) for need in runner.needs), name
        module = ast.parse((ROOT / "tileiropt" / type(runner).__module__.split(".")[1] / "phase.py").read_text())
        (cls,) = [n for n in module.body if isinstance(n, ast.ClassDef) and n.name == type(runner).__name__]
        read = {call.args[1].value for call in ast.walk(cls) if isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name) and call.func.id == "record_of"
                and isinstance(call.args[1], ast.Constant)}
        assert read <= set(runner.needs), (name, read)
