"""Sequential paired rounds: when a benchmark may stop early, and how often an identical copy is called slower.

Each decision users depend on, over every combination of its inputs (or at and around each threshold).
GPU-only outcomes are built from records and stubs, so the CPU suite holds them.
"""

from __future__ import annotations

import types

import pytest

# --------------------------------------------------------------------------- sequential paired rounds


def _false_alarm(rounds: int) -> float:
    """The exact chance that an identical copy is ever called slower (one side) by the sequential rule: every
    pattern of rounds above/below 1 (each 1/2 under no difference, the worst case of a threshold near 0)."""
    from tileiropt.bench.records import _order_statistic, sequential_looks

    looks = {**sequential_looks(rounds), rounds: _order_statistic(rounds)}
    alarms = 0
    for pattern in range(2 ** rounds):
        below = 0
        for index in range(rounds):
            below += (pattern >> index) & 1
            k = looks.get(index + 1)
            if k is not None and below < k:  # the k-th smallest ratio is above 1: the interval lies above
                alarms += 1
                break
    return alarms / 2 ** rounds


@pytest.mark.parametrize("rounds", [6, 8, 10, 12, 14, 16])  # from 6 rounds a 95% interval exists
def test_the_sequential_rule_keeps_the_false_alarm_rate_within_5_percent(rounds: int) -> None:
    assert 2 * _false_alarm(rounds) <= 0.05  # both sides


def test_the_interim_looks_of_the_default_rounds() -> None:
    from tileiropt.bench.records import PAIRED_ROUNDS, sequential_looks

    assert sequential_looks(PAIRED_ROUNDS) == {8: 1}  # one interim look, after 4 ABBA blocks: [min, max] of 8
    assert sequential_looks(20) == {12: 1, 14: 2, 16: 2, 18: 3}
    assert sequential_looks(3) == {} and sequential_looks(6) == {}
    # one side: 8 above at the look (4/1024), or at most 1 of 10 below at the end (11/1024), less both (3/1024)
    assert _false_alarm(PAIRED_ROUNDS) == 12 / 1024


def test_a_decided_interim_look_stops_the_rounds_and_an_undecided_one_goes_on(monkeypatch) -> None:
    from tileiropt.bench import worker

    class Prepared:
        def __init__(self, times: list[float]):
            self.times, self.method, self.call, self.sets = times, "do_bench", None, []
            self.input_sets, self.fn, self.tuned = 1, None, {}
            self.provenance = types.SimpleNamespace(launched={})  # no compiled code to compare: timed

    def fake_time(prepared, warmup, rep):
        return types.SimpleNamespace(median_ms=prepared.times.pop(0))

    def run(a_times: list[float], b_times: list[float]) -> object:
        prepared = iter([Prepared(list(a_times)), Prepared(list(b_times))])
        monkeypatch.setattr(worker.Measurement, "prepare", lambda self: next(prepared))
        monkeypatch.setattr(worker, "time_prepared", fake_time)
        monkeypatch.setattr(worker, "gpu_state", lambda: {})
        item = worker.BenchItem(id=0, kernel="k", variant="original", backend="ptx", path="", entry="k",
                                reference=None, size=None, dims={}, shapes={}, dtypes={})
        return worker.run_pair(item, item, None, 10, 0.05)

    slower = run([1.0] * 10, [1.10] * 10)
    assert (slower.verdict, slower.rounds, slower.planned_rounds) == ("slower", 8, 10)
    same = run([1.0] * 10, [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 1.0, 1.0])
    assert (same.verdict, same.rounds) == ("same", 8)
    wobbly = [1.0, 1.10, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 1.0, 1.0]  # one round outside: [min, max] undecided
    late = run([1.0] * 10, wobbly)
    assert (late.verdict, late.rounds) == ("same", 10)  # the final 95% interval drops the one round


