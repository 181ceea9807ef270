"""The console's fast p50/p90 (core/run/quantiles.QuantileView) are the report's: the one
percentile rule (core/statistics/summary.percentiles) over the completed rounds, bit for bit,
below and above the size where it stops calling numpy; a round being measured counts in no
figure."""

from __future__ import annotations

import numpy as np
import pytest

from sagetui.core.run.model import PhaseSamples
from sagetui.core.run.quantiles import SELECT_FROM, QuantileView
from sagetui.core.statistics.summary import median, medians_by_round, percentiles, summarize


@pytest.mark.parametrize("per_round", [7, SELECT_FROM // 3 + 1])
def test_quantiles_are_the_summary_of_the_completed_rounds(per_round: int) -> None:
    rng = np.random.default_rng(1)
    ps, view = PhaseSamples(capacity=64 * per_round), QuantileView()
    assert view.quantiles(ps) is None
    for r in range(12):
        ps.add(r, rng.lognormal(-7, 0.05, per_round))
        ps.complete(r)
        ps.add(r + 100, rng.lognormal(-5, 0.05, 77))  # the round being measured: far slower
        got = view.quantiles(ps)
        assert got is not None and list(got) == percentiles(ps.values, (50, 90))
        s = summarize(ps.values)
        assert got == (s["p50_s"], s["p90_s"])
        ps.drop(r + 100)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_medians_by_round_are_each_rounds_median_bit_for_bit(seed: int) -> None:
    """The rounds of one length at once (the console's phase table at 50,000 rounds a variant)
    give each round's `median` exactly: odd and even lengths, one sample, an empty round."""
    rng = np.random.default_rng(seed)
    lengths = [10] * 40 + [int(n) for n in rng.integers(0, 9, 30)] + [1, 0, 11]
    rng.shuffle(lengths)
    rounds = [rng.lognormal(0.0, 0.3, n) for n in lengths]
    bounds = np.cumsum([0, *lengths])
    got = medians_by_round(np.concatenate(rounds), bounds)
    want = [median(r) if len(r) else np.nan for r in rounds]
    assert np.array_equal(got, np.array(want), equal_nan=True)
