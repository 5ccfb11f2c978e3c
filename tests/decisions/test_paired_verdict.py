"""The paired verdict: the 95% interval at and around 1 +- threshold, short kernels (sequential paired rounds:
`test_sequential_rounds.py`).

Each decision users depend on, over every combination of its inputs (or at and around each threshold).
GPU-only outcomes are built from records and stubs, so the CPU suite holds them.
"""

from __future__ import annotations

import math

import pytest

from tileiropt.bench.records import FASTER, SAME, SLOWER, UNCLEAR, paired_ratio

# --------------------------------------------------------------------------- the paired verdict


def _paired(ratios: list[float], per_call_ms: float = 1.0, threshold: float = 0.05) -> tuple:
    """paired_ratio over rounds whose optimized/original ratios are `ratios`."""
    original = [per_call_ms] * len(ratios)
    return paired_ratio(original, [per_call_ms * r for r in ratios], threshold)


def _spread(low: float, high: float, n: int = 10) -> list[float]:
    return [low + (high - low) * i / (n - 1) for i in range(n)]


@pytest.mark.parametrize(("ratios", "verdict"), [
    (_spread(1.06, 1.10), SLOWER),  # the whole interval above 1.05
    (_spread(1.051, 1.09), SLOWER),  # the interval's lower end just above the threshold
    (_spread(0.99, 1.12), UNCLEAR),  # median 1.055 > 1.05, yet the interval reaches 1.0: not slower
    (_spread(1.02, 1.12), UNCLEAR),  # the lower end within the threshold: not slower
    (_spread(0.97, 1.03), SAME),  # within 1 +- 0.05
    (_spread(0.95, 1.05), SAME),  # touching both bounds: still within
    (_spread(0.90, 0.94), FASTER),  # the whole interval below 0.95
    (_spread(0.88, 0.97), UNCLEAR),  # the upper end within the threshold: not faster
])
def test_paired_verdict_at_and_around_the_threshold(ratios: list[float], verdict: str) -> None:
    middle, low, high, found = _paired(ratios)
    assert found == verdict, (middle, low, high)
    assert low <= middle <= high


def test_paired_interval_is_order_statistics_not_the_range() -> None:
    ratios = [1.2] + [1.0] * 18 + [0.8]  # one disturbed round each way
    _, low, high, verdict = _paired(ratios)
    assert (low, high) == (1.0, 1.0) and verdict == SAME


def test_short_kernels_are_never_judged() -> None:
    assert _paired(_spread(1.5, 1.6), per_call_ms=0.0005)[3] == UNCLEAR
    assert _paired(_spread(0.5, 0.6), per_call_ms=0.0005)[3] == UNCLEAR


def test_paired_ratio_values_exactly() -> None:
    from tileiropt.bench.records import _order_statistic

    assert paired_ratio([2.0, 2.0, 2.0], [2.0, 4.0, 6.0])[0] == 2.0  # B/A per round, the middle one (odd n)
    assert paired_ratio([1.0, 1.0], [1.0, 4.0])[0] == 2.0  # even n: the geometric mean of the two middle ones
    assert paired_ratio([1.0, 0.0, 1.0, 1.0], [1.0, 5.0, 0.0, 3.0])[0] == pytest.approx(3 ** 0.5)  # zeros dropped
    with pytest.raises(ValueError, match="^no positive paired timing$"):
        paired_ratio([0.0, 1.0], [1.0, 0.0])
    ratios = [1.0 + i / 100 for i in range(20)]
    k = _order_statistic(20)
    _, low, high, _ = _paired(ratios)
    assert (low, high) == (ratios[k - 1], ratios[20 - k]) and 1 < k < 10


# The 95% distribution-free interval of the median, as printed in tables of it: (n, k) with [x_(k), x_(n+1-k)].
ORDER_STATISTIC_TABLE = {2: 1, 5: 1, 6: 1, 8: 1, 9: 2, 11: 2, 12: 3, 14: 3, 15: 4, 16: 4, 17: 5, 19: 5, 20: 6, 25: 8,
                         30: 10, 40: 14}


@pytest.mark.parametrize("n", range(2, 41))
def test_order_statistic_is_the_widest_95_percent_interval(n: int) -> None:
    from tileiropt.bench.records import _order_statistic

    def covers(k: int) -> bool:  # P(x_(k) <= median <= x_(n+1-k)) >= 95%, counted in whole binomial terms
        return 20 * sum(math.comb(n, i) for i in range(k, n - k + 1)) >= 19 * 2 ** n

    k = _order_statistic(n)
    assert k == max([j for j in range(1, n // 2 + 1) if covers(j)], default=1)
    if n in ORDER_STATISTIC_TABLE:
        assert k == ORDER_STATISTIC_TABLE[n]


def test_judged_at_the_floor_itself_and_by_the_middle_round() -> None:
    from tileiropt.bench.records import MIN_JUDGED_MS, judged

    assert judged([MIN_JUDGED_MS] * 3)
    assert not judged([MIN_JUDGED_MS * 0.999] * 3)
    assert judged([0.0, 0.0, MIN_JUDGED_MS, 1.0, 1.0])  # the middle of five is the third, at the floor
    assert not judged([0.0, 0.0, 0.0, 1.0, 1.0])
    assert not judged([])


def test_same_at_exactly_the_bounds_and_the_middle_of_five() -> None:
    ratios = [0.95, 0.96, 1.0, 1.04, 1.05]  # n = 5: the interval is the whole range, [0.95, 1.05]
    ratio, low, high, verdict = _paired(ratios)
    assert (ratio, low, high, verdict) == (1.0, 0.95, 1.05, SAME)
    assert _paired([0.95] * 5)[3] == SAME and _paired([1.05] * 5)[3] == SAME
    assert _paired([2.0, 3.0, 5.0, 7.0, 11.0])[0] == 5.0  # the third of five, not the second


def test_paired_bounds_are_strict() -> None:
    assert _paired([1.05] * 5 + [1.08] * 5)[3] != SLOWER  # the lower end at 1 + threshold: not beyond it
    assert _paired([0.90] * 5 + [0.95] * 5)[3] != FASTER  # the upper end at 1 - threshold: not beyond it


