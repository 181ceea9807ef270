"""Unit tests of sagetui.core.statistics.verdict on hand-made and reference-report numbers."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from sagetui.core.statistics.drift import drift
from sagetui.core.statistics.outliers import outliers
from sagetui.core.statistics.verdict import (
    MAD_TO_SD,
    Verdict,
    VerdictState,
    ci_width_percent,
    default_threshold_percent,
    noise_floor_percent,
    paired_speedup,
    should_stop,
)

REPORT_001 = Path(__file__).resolve().parents[1] / "sample_results" / "001_c3fd8b591d904547.json"


def _report_001_rounds(field: str) -> dict[str, list[float]]:
    report = json.loads(REPORT_001.read_text())
    return {v["name"]: [r[field] for r in v["rounds"]] for v in report["variants"]}


# --- paired_speedup ---------------------------------------------------------------------------


def test_hand_computed_estimate_and_interval() -> None:
    # Log ratios 0.01, 0.03, 0.02: mean 0.02, sd 0.01, n 3, t(0.975, 2) = 4.302653.
    d = np.array([0.01, 0.03, 0.02])
    variant = np.array([0.2, 0.3, 0.25])
    baseline = variant * np.exp(d)
    v = paired_speedup(baseline, variant, threshold_percent=1.0)
    half = 4.302653 * 0.01 / math.sqrt(3)
    assert v.estimate_percent == pytest.approx(math.expm1(0.02) * 100, rel=1e-9)
    assert v.ci_low_percent == pytest.approx(math.expm1(0.02 - half) * 100, rel=1e-6)
    assert v.ci_high_percent == pytest.approx(math.expm1(0.02 + half) * 100, rel=1e-6)
    assert (v.rounds, v.confidence, v.threshold_percent) == (3, 0.95, 1.0)
    # -0.48 % .. +4.59 %: straddles 0 and leaves ±1 %.
    assert v.state == VerdictState.INCONCLUSIVE


def test_matches_scipy_ttest_rel_on_logs() -> None:
    base = np.array([0.2411, 0.2420, 0.2436, 0.2452, 0.2475, 0.2461])
    var = np.array([0.2380, 0.2401, 0.2399, 0.2431, 0.2440, 0.2450])
    v = paired_speedup(base, var, threshold_percent=1.0, confidence=0.9)
    ref = stats.ttest_rel(np.log(base), np.log(var))
    ci = ref.confidence_interval(0.9)
    assert v.ci_low_percent == pytest.approx(math.expm1(ci.low) * 100, rel=1e-9)
    assert v.ci_high_percent == pytest.approx(math.expm1(ci.high) * 100, rel=1e-9)
    assert v.confidence == 0.9


def test_sign_convention_matches_report_speedup() -> None:
    # Same sign as speedup_vs_baseline_percent = (baseline_p50 / variant_p50 - 1) * 100.
    base, var = [0.25] * 4, [0.24, 0.241, 0.239, 0.2405]
    v = paired_speedup(base, var, threshold_percent=1.0)
    assert v.estimate_percent > 0
    assert v.state == VerdictState.FASTER
    assert paired_speedup(var, base, threshold_percent=1.0).state == VerdictState.SLOWER


@pytest.mark.parametrize(
    ("variant", "state"),
    [
        ([0.240, 0.241, 0.239, 0.2405], VerdictState.FASTER),  # ~4 % faster, tight
        ([0.260, 0.261, 0.259, 0.2605], VerdictState.SLOWER),  # ~4 % slower, tight
        ([0.2501, 0.2499, 0.2502, 0.2498], VerdictState.SAME),  # inside ±1 %
        ([0.240, 0.262, 0.245, 0.258], VerdictState.INCONCLUSIVE),  # straddles, wide
        ([0.240], VerdictState.INCONCLUSIVE),  # one round: no spread to judge by
        ([], VerdictState.INCONCLUSIVE),
    ],
)
def test_every_state_is_reachable(variant: list[float], state: VerdictState) -> None:
    v = paired_speedup([0.25] * len(variant), variant, threshold_percent=1.0)
    assert v.state == state
    assert v.state == state.value  # plain strings compare equal too


def test_one_round_reports_its_estimate_but_no_interval() -> None:
    v = paired_speedup([0.25], [0.2], threshold_percent=1.0)
    assert v.estimate_percent == pytest.approx(25.0)
    assert math.isnan(v.ci_low_percent) and math.isnan(v.ci_high_percent)
    assert v.to_dict()["ci_low_percent"] is None


def test_same_comes_before_significance_report_001() -> None:
    # The two-build report: the variant's round p50 is higher in all 5 rounds by ~0.08 %:
    # significant (p = 0.005) but far inside ±1 %, so SAME, never SLOWER.
    r = _report_001_rounds("p50_s")
    v = paired_speedup(r["baseline"], r["interleave-softmax"], threshold_percent=1.0)
    assert v.ci_high_percent < 0
    assert v.estimate_percent == pytest.approx(-0.0788, abs=1e-3)
    assert v.state == VerdictState.SAME
    # With a threshold below the effect, the same interval is SLOWER.
    tight = paired_speedup(r["baseline"], r["interleave-softmax"], threshold_percent=0.05)
    assert tight.state == VerdictState.SLOWER


def test_threshold_is_strictly_inside_for_same() -> None:
    # Identical rounds: a zero-width interval at 0 is SAME at any threshold.
    assert paired_speedup([1, 2, 3], [1, 2, 3], threshold_percent=0.01).state == "SAME"


def test_verdict_to_dict_is_json() -> None:
    v = paired_speedup([0.25, 0.26], [0.24, 0.25], threshold_percent=1.5)
    d = v.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert set(d) == {
        "state",
        "estimate_percent",
        "ci_low_percent",
        "ci_high_percent",
        "threshold_percent",
        "confidence",
        "rounds",
        "method",
    }
    assert d["state"] in {"FASTER", "SLOWER", "SAME", "INCONCLUSIVE"}
    assert isinstance(d["method"], str) and d["method"]


@pytest.mark.parametrize(
    ("base", "var", "kw"),
    [
        ([1.0, 2.0], [1.0], {"threshold_percent": 1.0}),
        ([1.0, 0.0], [1.0, 1.0], {"threshold_percent": 1.0}),
        ([1.0, float("nan")], [1.0, 1.0], {"threshold_percent": 1.0}),
        ([1.0, 2.0], [1.0, 2.0], {"threshold_percent": 0.0}),
        ([1.0, 2.0], [1.0, 2.0], {"threshold_percent": 1.0, "confidence": 1.0}),
    ],
)
def test_bad_input_raises(base: list[float], var: list[float], kw: dict) -> None:
    with pytest.raises(ValueError):
        paired_speedup(base, var, **kw)


# --- thresholds and the noise floor ----------------------------------------------------------


@pytest.mark.parametrize(
    ("floor", "threshold"),
    [(None, 1.0), (0.0, 1.0), (0.3, 1.0), (0.5, 1.0), (0.8, 1.6), (2.5, 5.0), (math.nan, 1.0)],
)
def test_default_threshold(floor: float | None, threshold: float) -> None:
    assert default_threshold_percent(floor) == pytest.approx(threshold)


def test_noise_floor_is_robust_sd_of_log_ratio_about_zero() -> None:
    d = np.array([0.01, -0.02, 0.005, 0.0, 0.5])  # one wild round must not dominate
    b = np.full(5, 0.24)
    a = b * np.exp(d)
    # median |d| = 0.01
    assert noise_floor_percent(a, b) == pytest.approx(math.expm1(MAD_TO_SD * 0.01) * 100)
    assert noise_floor_percent(b, b) == 0.0
    with pytest.raises(ValueError):
        noise_floor_percent(a, b[:3])
    with pytest.raises(ValueError):
        noise_floor_percent([], [])


# --- drift ------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["baseline", "interleave-softmax"])
def test_drift_on_report_001_round_means(variant: str) -> None:
    dr = drift(_report_001_rounds("mean_s")[variant])
    assert dr.rounds == 5
    assert dr.slope_percent_per_round == pytest.approx(0.67, abs=0.03)
    assert dr.run_change_percent == pytest.approx(2.7, abs=0.1)
    assert dr.first_to_last_percent == pytest.approx(2.7, abs=0.15)
    assert dr.noise_source == "residuals"
    assert dr.noise_percent < 0.1  # the rounds sit close to the line
    assert dr.trend_p_value == pytest.approx(2 / 120)  # monotone: exact Mann-Kendall
    assert dr.flagged


def test_drift_theil_sen_ignores_one_wild_round() -> None:
    y = 0.24 * (1 + 0.01 * np.arange(8))
    y[3] *= 1.2
    dr = drift(y)
    # 21 of the 28 pairwise slopes are exactly 0.01 x 0.24; the median round is 1.045 x 0.24.
    assert dr.slope_percent_per_round == pytest.approx(1.0 / 1.045, rel=1e-9)
    assert dr.flagged


def test_drift_not_flagged_for_flat_noise_or_short_runs() -> None:
    rng = np.random.default_rng(7)
    flat = 0.24 * np.exp(rng.normal(0, 0.003, 10))
    assert not drift(flat).flagged
    # 4 rounds can never reach Mann-Kendall p < 0.05, however large the change.
    short = drift([1.0, 1.1, 1.2, 1.3])
    assert short.trend_p_value > 0.05 and not short.flagged
    assert drift([1.0, 1.0, 1.0, 1.0, 1.0]).flagged is False
    one = drift([1.0])
    assert one.rounds == 1 and not one.flagged and math.isnan(one.slope_percent_per_round)


def test_drift_against_given_noise() -> None:
    y = 0.24 * (1 + 0.002 * np.arange(6))  # +1 % over the run, perfectly monotone
    assert drift(y, noise_percent=0.2).flagged  # 1 % > 2 x 0.2 %
    quiet = drift(y, noise_percent=0.6)  # 1 % < 2 x 0.6 %
    assert quiet.noise_source == "given" and not quiet.flagged
    assert drift([1.0, 1.1, 1.2]).noise_source == "unavailable"


def test_drift_to_dict_is_json_with_the_rule() -> None:
    d = drift([1.0, 1.1]).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["noise_percent"] is None
    assert set(d) == {
        "slope_percent_per_round",
        "first_to_last_percent",
        "noise_percent",
        "flagged",
        "rule",
        "run_change_percent",
        "noise_source",
        "trend_p_value",
        "rounds",
    }
    assert "Mann-Kendall" in d["rule"] and "2 x noise" in d["rule"]


def test_to_dicts_fit_the_report_model() -> None:
    report = pytest.importorskip("sagetui.core.report.model")
    r = _report_001_rounds("mean_s")
    report.Drift.model_validate(drift(r["baseline"]).to_dict())
    report.Drift.model_validate(drift([1.0]).to_dict())
    v = paired_speedup(r["baseline"], r["interleave-softmax"], threshold_percent=1.0)
    report.VerdictRecord.model_validate(v.to_dict())
    report.VerdictRecord.model_validate(paired_speedup([], [], threshold_percent=1.0).to_dict())


# --- outliers ---------------------------------------------------------------------------------


def test_outliers_modified_z() -> None:
    x = [10.0, 10.1, 9.9, 10.05, 9.95, 10.0, 30.0, 9.0]
    # median 10.0, MAD 0.075: 30 scores 180, 9.0 scores 9.0; both flagged, the rest not.
    assert outliers(x) == [6, 7]
    assert outliers(x, threshold=10.0) == [6]
    assert x[6] == 30.0  # nothing is dropped or changed


def test_outliers_when_mad_is_zero() -> None:
    # More than half equal: MAD is 0, the mean absolute deviation takes over.
    assert outliers([5.0, 5.0, 5.0, 5.0, 5.0, 6.0]) == [5]
    assert outliers([5.0, 5.0, 5.0, 5.0]) == []
    assert outliers([5.0, float("nan"), 5.0]) == [1]
    assert outliers([1.0, 100.0]) == []  # too few to judge


# --- adaptive stopping ------------------------------------------------------------------------


def _v(lo: float, hi: float) -> Verdict:
    return Verdict(VerdictState.SAME, (lo + hi) / 2, lo, hi, 1.0, 0.95, 5)


def test_ci_width_and_should_stop() -> None:
    a, b = _v(-0.4, 0.4), _v(0.1, 1.3)
    assert ci_width_percent(a) == pytest.approx(0.8)
    assert ci_width_percent(b) == pytest.approx(1.2)
    assert not should_stop([a, b], 1.0)
    assert should_stop([a, b], 1.5)
    assert not should_stop([], 1.0)
    one_round = paired_speedup([1.0], [1.0], threshold_percent=1.0)
    assert ci_width_percent(one_round) == math.inf
    assert not should_stop([a, one_round], 100.0)


def test_importing_verdict_does_not_import_scipy() -> None:
    code = "import sys, sagetui.core.statistics.verdict; print('scipy' in sys.modules)"
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True
    )
    assert out.stdout.strip() == "False"


# -- the statistics written here instead of importing scipy.stats (60 MB resident) ------------
# scipy.stats is the oracle: the same numbers, on the inputs that take each branch.

def _trend_inputs():
    rng = np.random.default_rng(7)
    for n in (2, 3, 4, 5, 8, 12, 20, 33, 34, 50, 200, 1500):
        yield rng.normal(size=n)  # no ties: exact up to 33, normal beyond
        yield np.sort(rng.normal(size=n))  # a perfect trend: 0 discordant pairs
        yield np.round(rng.normal(size=n), 1)  # ties: the tie-corrected normal
    yield np.array([1.0, 2.0, 4.0, 3.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0] * 4)  # ties, near-sorted
    yield np.r_[np.arange(40.0), 0.5]  # no ties, n > 33, one discordant pair... and more
    yield np.r_[np.arange(1.0, 41.0), 0.5][::-1].copy()


def test_mann_kendall_p_is_scipys_kendalltau() -> None:
    from sagetui.core.statistics.drift import mann_kendall_p

    for y in _trend_inputs():
        want = stats.kendalltau(np.arange(y.size), y).pvalue
        assert mann_kendall_p(y) == pytest.approx(want, rel=1e-9, abs=1e-15), y.size
    assert mann_kendall_p(np.ones(9)) == 1.0  # scipy: NaN (no ranks to correlate)


def test_mann_kendall_s_is_exact_across_blocks() -> None:
    from sagetui.core.statistics.drift import _mann_kendall_s

    rng = np.random.default_rng(3)
    y = np.round(rng.normal(size=300), 1)
    brute = int(np.sign(y[None, :] - y[:, None])[np.triu_indices(y.size, k=1)].sum())
    for block in (1, 7, 64, 1024):
        assert _mann_kendall_s(y, block=block) == brute


def test_theil_sen_and_t_quantile_are_scipys() -> None:
    from sagetui.core.statistics.drift import _theil_sen
    from sagetui.core.statistics.intervals import t_quantile

    rng = np.random.default_rng(5)
    for n in (2, 3, 10, 101, 1000):
        y = 1 + 0.01 * rng.normal(size=n) + 0.001 * np.arange(n)
        slope, _ = _theil_sen(y)
        assert slope == stats.theilslopes(y, np.arange(n, dtype=float)).slope
    for df in (1, 2, 4, 9, 30, 299):
        assert t_quantile(0.975, df) == stats.t.ppf(0.975, df)


def test_welch_half_width_is_scipys_welch_interval() -> None:
    """Two independent samples' difference of means: the half-width and df of
    intervals.welch_half_width (each part its variance of the mean and n) are scipy's
    ttest_ind(equal_var=False) interval's; no spread, no interval."""
    from sagetui.core.statistics.intervals import welch_half_width

    rng = np.random.default_rng(13)
    for na, nb, sa, sb in ((2, 2, 1.0, 1.0), (3, 9, 0.5, 2.0), (12, 5, 3.0, 0.1), (40, 41, 1, 1)):
        a, b = rng.normal(0.0, sa, na), rng.normal(0.3, sb, nb)
        got = welch_half_width([(float(a.var(ddof=1)) / na, na),
                                (float(b.var(ddof=1)) / nb, nb)], 0.95)
        assert got is not None
        res = stats.ttest_ind(a, b, equal_var=False)
        lo, hi = res.confidence_interval(0.95)
        assert got[0] == pytest.approx((hi - lo) / 2, rel=1e-9)
        assert got[1] == pytest.approx(res.df, rel=1e-12)
    assert welch_half_width([(0.0, 3), (0.0, 4)]) is None


def test_theil_sen_of_many_rounds_is_near_the_exact_one_and_cheap() -> None:
    """Over 1,000 rounds the slope comes from 499,500 random pairs: within a quarter of the
    exact estimator's own standard error (sd / sqrt(sum (x - mean x)^2), about 20 % of this
    slope) of the median of all pairs (computed here the slow way), and never n^2 memory."""
    from sagetui.core.statistics.drift import _theil_sen

    rng = np.random.default_rng(11)
    n = 2_000
    y = 1 + 0.01 * rng.normal(size=n) + 2e-6 * np.arange(n)
    i, j = np.triu_indices(n, k=1)
    exact = float(np.median((y[j] - y[i]) / (j - i)))
    slope, _ = _theil_sen(y)
    se = 0.01 / math.sqrt(((np.arange(n) - (n - 1) / 2) ** 2).sum())
    assert abs(slope - exact) < 0.25 * se
    slope_100k, _ = _theil_sen(1 + 1e-6 * np.arange(100_000.0))  # exact line: any pairs agree
    assert slope_100k == pytest.approx(1e-6, rel=1e-6)


def test_the_console_imports_no_scipy_stats() -> None:
    """scipy.stats is 60 MB of the console's resident size: a run must not import it."""
    code = ("import sys, numpy as np\n"
            "from sagetui.core.statistics import drift, outliers, verdict as vd\n"
            "drift.drift(np.r_[1.0, 1.1, 1.05, 1.2, 1.3])\n"
            "vd.paired_speedup([1.0, 1.1], [1.0, 1.0], threshold_percent=1.0)\n"
            "outliers.outliers(np.r_[1.0, 1.0, 9.0, 1.1])\n"
            "import sagetui.tui.app, sagetui.session.session\n"
            "print('scipy.stats' in sys.modules)")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         check=True)
    assert out.stdout.strip() == "False"
