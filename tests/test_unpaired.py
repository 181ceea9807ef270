"""The verdict of one variant across two separate runs (`sagetui compare`): rounds of two runs
are not paired, so it is Welch's interval on log round medians; scipy.stats is the oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from sagetui.core.statistics.unpaired import UNPAIRED_METHOD, unpaired_speedup
from sagetui.core.statistics.verdict import VerdictState


def _pct(x: float) -> float:
    return math.expm1(x) * 100


@pytest.mark.parametrize("seed", range(6))
def test_the_interval_is_scipys_welch_interval_on_log_round_medians(seed: int) -> None:
    rng = np.random.default_rng(seed)
    na, nb = rng.integers(2, 12, size=2)
    a = np.exp(rng.normal(np.log(0.1), 0.01 * (seed + 1), size=na))
    b = np.exp(rng.normal(np.log(0.1), 0.02, size=nb))
    v = unpaired_speedup(a, b, threshold_percent=1.0)
    # B's speedup over A: ln(a) - ln(b) > 0 when B takes less time
    want = stats.ttest_ind(np.log(a), np.log(b), equal_var=False).confidence_interval(0.95)
    assert v.ci_low_percent == pytest.approx(_pct(want.low), rel=1e-9)
    assert v.ci_high_percent == pytest.approx(_pct(want.high), rel=1e-9)
    assert v.estimate_percent == pytest.approx(
        _pct(np.log(a).mean() - np.log(b).mean()), rel=1e-9)
    assert v.method == UNPAIRED_METHOD


def test_the_sign_is_the_compare_tables_own_positive_is_faster() -> None:
    a = [1.00, 1.01, 0.99, 1.00]
    b = [0.90, 0.91, 0.89, 0.90]  # B takes 10 % less time: faster
    v = unpaired_speedup(a, b, threshold_percent=1.0)
    assert v.state == VerdictState.FASTER and v.ci_low_percent > 0
    w = unpaired_speedup(b, a, threshold_percent=1.0)
    assert w.state == VerdictState.SLOWER and w.ci_high_percent < 0


def test_a_run_against_itself_is_same_within_the_threshold() -> None:
    a = [0.100, 0.1003, 0.0998, 0.1001, 0.0999]
    v = unpaired_speedup(a, a, threshold_percent=1.0)
    assert v.state == VerdictState.SAME and v.estimate_percent == 0.0
    assert v.ci_low_percent == pytest.approx(-v.ci_high_percent / (1 + v.ci_high_percent / 100))


def test_fewer_than_two_rounds_a_side_claims_nothing() -> None:
    v = unpaired_speedup([1.0], [0.5, 0.51], threshold_percent=1.0)
    assert v.state == VerdictState.INCONCLUSIVE
    assert math.isnan(v.ci_low_percent) and v.estimate_percent > 0


def test_no_spread_on_either_side_is_an_interval_of_one_point() -> None:
    v = unpaired_speedup([1.0, 1.0], [0.5, 0.5], threshold_percent=1.0)
    assert v.ci_low_percent == v.ci_high_percent == pytest.approx(100.0)
    assert v.state == VerdictState.FASTER
