"""Accuracy against fp32 attention: the metrics against numpy on small arrays, the chunked
reference of the runner against a whole-array numpy attention, the head subset it takes when
the reference would not fit, and `check` refusing values out of range."""

import json

import numpy as np
import pytest
import torch

from sagetui.core import accuracy as acc
from sagetui.core.report.check import check_report
from sagetui.core.report.model import Report
from sagetui.runner import accuracy as racc
from sagetui.runner.backends.base import Inputs


def _np_metrics(o: np.ndarray, r: np.ndarray) -> dict[str, float]:
    o, r = o.astype(np.float64).ravel(), r.astype(np.float64).ravel()
    return {"cosine_similarity": o @ r / np.linalg.norm(o) / np.linalg.norm(r),
            "relative_l1": np.abs(o - r).sum() / np.abs(r).sum(),
            "rmse": np.sqrt(np.mean((o - r) ** 2)), "max_abs_error": np.abs(o - r).max()}


def test_metrics_against_numpy():
    rng = np.random.default_rng(1)
    r = rng.standard_normal((3, 50, 16))
    o = r + 0.01 * rng.standard_normal(r.shape)
    got, want = acc.of_arrays(o, r), _np_metrics(o, r)
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12)
    # known values: identical arrays, and o = 2 r
    same = acc.of_arrays(r, r)
    assert same["cosine_similarity"] == pytest.approx(1.0) and same["rmse"] == 0.0
    double = acc.of_arrays(2 * r, r)
    assert double["relative_l1"] == pytest.approx(1.0)
    assert double["cosine_similarity"] == pytest.approx(1.0)
    assert acc.of_arrays(-r, r)["cosine_similarity"] == pytest.approx(-1.0)


def test_chunked_sums_equal_whole_array_sums():
    rng = np.random.default_rng(2)
    r, o = rng.standard_normal((4, 30)), rng.standard_normal((4, 30))
    parts = [acc.sums_of(o[i], r[i]) for i in range(4)]
    sums = {k: sum(p[k] for p in parts) for k in acc.SUMS}
    chunked = acc.from_sums(sums, float(np.abs(o - r).max()), o.size)
    assert chunked == pytest.approx(acc.of_arrays(o, r), rel=1e-12)


def _np_attention(q, k, v, scale, causal):
    """[B, H, N, D] float64 attention in numpy (GQA by repeating K/V heads)."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.triu(np.ones(s.shape[-2:], dtype=bool), 1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize(("layout", "causal", "h_q", "h_kv"), [
    ("NHD", False, 4, 4), ("HND", True, 4, 2), ("NHD", True, 6, 3)])
def test_exact_reference_in_chunks_matches_numpy(monkeypatch, layout, causal, h_q, h_kv):
    monkeypatch.setattr(racc, "CHUNK_ELEMENTS", 37 * 97)  # several ragged row blocks
    g = torch.Generator().manual_seed(3)
    b, n, d = 2, 97, 32
    q, k, v = (torch.randn(b, h, n, d, generator=g) for h in (h_q, h_kv, h_kv))
    want = _np_attention(q.double().numpy(), k.double().numpy(), v.double().numpy(), 0.2, causal)
    to = (lambda x: x.transpose(1, 2).contiguous()) if layout == "NHD" else (lambda x: x)
    inputs = Inputs(q=to(q), k=to(k), v=to(v), layout=layout, causal=causal, sm_scale=0.2)
    ref = racc.ExactReference(inputs)
    assert ref.all_heads
    np.testing.assert_allclose(ref.out.double().numpy(), want, rtol=1e-4, atol=1e-5)
    noisy = torch.from_numpy(want).float() + 0.001 * torch.randn(want.shape, generator=g)
    got = ref.compare(to(noisy), layout)
    expected = acc.of_arrays(noisy.double().numpy(), want)
    for key in ("cosine_similarity", "relative_l1", "rmse", "max_abs_error"):
        assert got[key] == pytest.approx(expected[key], rel=1e-3)
    assert got["heads"] == "all" and got["elements"] == want.size


def test_a_reference_that_does_not_fit_uses_evenly_spaced_heads(monkeypatch):
    assert racc.plan_heads(56, 100, budget=56 * 100) == list(range(56))
    subset = racc.plan_heads(56, 100, budget=8 * 100)
    assert len(subset) == 8 and subset[0] == 0 and subset == sorted(set(subset))
    assert subset[-1] >= 48  # spread over the heads, not the first eight
    monkeypatch.setattr(racc, "REFERENCE_BUDGET_BYTES", 2 * 16 * 8 * 4)
    monkeypatch.setattr(racc, "plan_heads",
                        lambda h, per: [0, 2])  # what the budget above allows of 4 heads
    x = torch.randn(1, 4, 16, 8)
    ref = racc.ExactReference(Inputs(q=x, k=x, v=x, layout="HND", causal=False, sm_scale=0.3))
    got = ref.compare(x, "HND")
    assert got["heads"] == [0, 2] and got["elements"] == 2 * 16 * 8


def test_check_refuses_accuracy_out_of_range(tmp_path):
    from .conftest import SAMPLES

    data = json.loads((SAMPLES / "h200_backends.json").read_text())
    data["variants"][0]["accuracy"] = {"cosine_similarity": 0.999, "relative_l1": 0.02,
                                       "rmse": 0.5, "max_abs_error": 0.1}
    found = [str(m) for m in check_report(Report.model_validate(data))]
    assert any("rmse" in m and "exceeds max_abs_error" in m for m in found), found
    data["variants"][0]["accuracy"] = {"cosine_similarity": 1.5}
    with pytest.raises(ValueError):
        Report.model_validate(data)  # the model's range refuses it before check runs
    assert acc.problems({"cosine_similarity": 1.2, "rmse": -1.0}) == [
        "cosine_similarity 1.2 is outside [-1, 1]", "rmse -1.0 is negative"]


def test_accuracy_and_sdpa_backend_reach_the_exports_and_the_console_views():
    from sagetui.core.format import accuracy
    from sagetui.core.report.export import to_markdown
    from sagetui.tui.report_view import from_report

    from .conftest import SAMPLES

    data = json.loads((SAMPLES / "h200_backends.json").read_text())
    v = data["variants"][1]
    v["accuracy"] = {"cosine_similarity": 0.999871, "relative_l1": 0.0123, "rmse": 0.002,
                     "max_abs_error": 0.05, "rows": "all", "heads": [0, 7],
                     "reference": "fp32 attention of the same inputs (TF32 off)"}
    v["sdpa_backend"] = "cudnn"
    report = Report.model_validate(data)
    md = to_markdown(report)
    # rel. L1 in percent, as everywhere
    assert f"| {v['name']} | cudnn |" in md and "0.99987 | 1.23 |" in md
    assert "heads [0, 7]" in md  # a subset is said
    view = from_report(report, "r").variants[v["name"]]
    assert view.sdpa_backend == "cudnn"
    cells = accuracy(view.accuracy)
    assert (cells["cos"], cells["l1"]) == ("0.99987", "1.23")
    assert accuracy(None)["cos"] == accuracy(None)["l1"] == "-"
