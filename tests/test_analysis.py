"""The one analysis (core/analysis.py) and the runs that must not start."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.derived import speedup_percent
from sagetui.core.report.io import load_report
from sagetui.core.run import figures
from sagetui.core.statistics import verdict
from sagetui.core.statistics.analysis import analyse
from sagetui.core.statistics.drift import drift
from sagetui.core.statistics.outliers import outliers
from sagetui.core.statistics.threshold import resolve_threshold
from sagetui.session.session import Session

from .conftest import TINY, TWO_BUILDS


def test_analyse_is_the_formulas_of_stats_and_verdict():
    """On the two-build report's round p50s: the two-build report's p50 speedup, the paired verdict,
    drift."""
    r = load_report(TWO_BUILDS)
    rounds = {v.name: {i: s.p50_s for i, s in enumerate(v.rounds)} for v in r.variants}
    p50s = {v.name: v.timing.p50_s for v in r.variants}
    a = analyse(rounds, p50s, "baseline", resolve_threshold())
    other = a.variants["interleave-softmax"]
    assert other.speedup_p50_percent == speedup_percent(p50s["baseline"],
                                                        p50s["interleave-softmax"])
    assert other.speedup_p50_percent == r.variant("interleave-softmax").speedup_vs_baseline_percent
    b, v = (list(rounds[n].values()) for n in ("baseline", "interleave-softmax"))
    assert other.verdict == verdict.paired_speedup(b, v, threshold_percent=1.0)
    assert other.drift == drift(v)
    d = a.verdict_dict("interleave-softmax")
    assert d["state"] == "SAME" and d["threshold_source"] == "default"
    # the two estimates differ, which is why every table labels them apart
    assert d["estimate_percent"] != other.speedup_p50_percent
    assert a.verdict_dict("baseline") is None


def test_the_session_report_is_the_analysis(tmp_path):
    cfg = RunConfig(shape=Shape(heads=2, q_len=256, head_dim=64), rounds=3, iterations=4,
                    warmup=1, variants=[VariantSpec.parse("a=reference"),
                                        VariantSpec.parse("b=reference[slowdown=1.5]")])
    s = Session(cfg)
    report = s.run()
    a = figures.analysis(s.model)
    b = report.variant("b")
    assert b.verdict.model_dump(exclude_none=True) == a.verdict_dict("b")
    assert b.drift.model_dump(exclude_none=True) == {
        k: x for k, x in a.variants["b"].drift.to_dict().items() if x is not None}
    assert b.speedup_vs_baseline_percent == speedup_percent(report.variant("a").timing.p50_s,
                                                            b.timing.p50_s)
    flat = np.concatenate(report.samples["b"]["total"].tolist())
    assert b.outliers.count == len(outliers(flat))


def test_the_baseline_chosen_before_the_run_is_the_reports():
    """`b` before `r` in the console is Session.set_baseline before run(): with no shape given
    (auto_shape, the console's usual case) the session used to rebuild its collector once the
    runner was up, and the baseline went back to the first variant."""
    cfg = RunConfig(shape=Shape(heads=2, q_len=256, head_dim=64), rounds=2, iterations=2,
                    warmup=1, auto_shape=True,
                    variants=[VariantSpec.parse("a=reference"), VariantSpec.parse("b=reference")])
    s = Session(cfg)
    s.set_baseline("b")
    report = s.run()
    assert report.baseline == "b"
    assert report.variant("a").verdict is not None and report.variant("b").verdict is None


def test_a_backend_that_cannot_run_here_stops_before_anything_runs(cli_here, tmp_path):
    """On this CPU machine sdpa needs CUDA: the runner's hello says so (no extra probe), the
    run stops before any setup, one line, exit 2, no report and no recovery file."""
    out = cli_here("run", "--backend", "sdpa", *TINY)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("sagetui: error: nothing can run here:")
    assert "sdpa" in out.stderr and "CUDA" in out.stderr
    assert "Traceback" not in out.stderr
    assert list(tmp_path.glob("*.json")) == []
    assert not list((tmp_path / "state").rglob("*.json"))


def test_the_console_without_a_terminal_says_so(tmp_path):
    """`sagetui </dev/null >out`: one line suggesting `sagetui run`, exit 2, nothing drawn."""
    with open(tmp_path / "out", "w") as out:
        p = subprocess.run([sys.executable, "-m", "sagetui", *TINY], stdin=subprocess.DEVNULL,
                           stdout=out, stderr=subprocess.PIPE, text=True, timeout=60,
                           cwd=tmp_path)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "sagetui run" in p.stderr
    assert (tmp_path / "out").read_text() == ""  # no escape codes in the pipe
