"""Accuracy against fp32 attention: the metrics against numpy on small arrays, the chunked
reference of the runner against a whole-array numpy attention, the head subset it takes when
the reference would not fit, and `check` refusing values out of range."""

import json

import numpy as np
import pytest
import torch

from sagetui.core import accuracy
from sagetui.core.check.report import check_report
from sagetui.core.report.model import Report
from sagetui.runner import exact_reference
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
    got, want = accuracy.of_arrays(o, r), _np_metrics(o, r)
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12)
    # known values: identical arrays, and o = 2 r
    same = accuracy.of_arrays(r, r)
    assert same["cosine_similarity"] == pytest.approx(1.0) and same["rmse"] == 0.0
    double = accuracy.of_arrays(2 * r, r)
    assert double["relative_l1"] == pytest.approx(1.0)
    assert double["cosine_similarity"] == pytest.approx(1.0)
    assert accuracy.of_arrays(-r, r)["cosine_similarity"] == pytest.approx(-1.0)


def test_chunked_sums_equal_whole_array_sums():
    rng = np.random.default_rng(2)
    r, o = rng.standard_normal((4, 30)), rng.standard_normal((4, 30))
    parts = [accuracy.sums_of(o[i], r[i]) for i in range(4)]
    sums = {k: sum(p[k] for p in parts) for k in accuracy.SUMS}
    chunked = accuracy.from_sums(sums, float(np.abs(o - r).max()), o.size)
    assert chunked == pytest.approx(accuracy.of_arrays(o, r), rel=1e-12)


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
    monkeypatch.setattr(exact_reference, "CHUNK_ELEMENTS", 37 * 97)  # several ragged row blocks
    g = torch.Generator().manual_seed(3)
    b, n, d = 2, 97, 32
    q, k, v = (torch.randn(b, h, n, d, generator=g) for h in (h_q, h_kv, h_kv))
    want = _np_attention(q.double().numpy(), k.double().numpy(), v.double().numpy(), 0.2, causal)
    to = (lambda x: x.transpose(1, 2).contiguous()) if layout == "NHD" else (lambda x: x)
    inputs = Inputs(q=to(q), k=to(k), v=to(v), layout=layout, causal=causal, sm_scale=0.2)
    ref = exact_reference.ExactReference(inputs)
    assert ref.all_heads
    np.testing.assert_allclose(ref.out.double().numpy(), want, rtol=1e-4, atol=1e-5)
    noisy = torch.from_numpy(want).float() + 0.001 * torch.randn(want.shape, generator=g)
    got = ref.compare(to(noisy), layout)
    expected = accuracy.of_arrays(noisy.double().numpy(), want)
    for key in ("cosine_similarity", "relative_l1", "rmse", "max_abs_error"):
        assert got[key] == pytest.approx(expected[key], rel=1e-3)
    assert got["heads"] == "all" and got["elements"] == want.size


def test_a_reference_that_does_not_fit_uses_evenly_spaced_heads(monkeypatch):
    assert exact_reference.plan_heads(56, 100, budget=56 * 100) == list(range(56))
    subset = exact_reference.plan_heads(56, 100, budget=8 * 100)
    assert len(subset) == 8 and subset[0] == 0 and subset == sorted(set(subset))
    assert subset[-1] >= 48  # spread over the heads, not the first eight
    monkeypatch.setattr(exact_reference, "REFERENCE_BUDGET_BYTES", 2 * 16 * 8 * 4)
    monkeypatch.setattr(exact_reference, "plan_heads",
                        lambda h, per: [0, 2])  # what the budget above allows of 4 heads
    x = torch.randn(1, 4, 16, 8)
    ref = exact_reference.ExactReference(Inputs(q=x, k=x, v=x, layout="HND", causal=False,
                                                sm_scale=0.3))
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
    assert accuracy.problems({"cosine_similarity": 1.2, "rmse": -1.0}) == [
        "cosine_similarity 1.2 is outside [-1, 1]", "rmse -1.0 is negative"]


def test_accuracy_and_sdpa_backend_reach_the_exports_and_the_console_views():
    from sagetui.core.export.report import to_markdown
    from sagetui.core.format import accuracy
    from sagetui.tui.source import saved_source

    from .conftest import SAMPLES

    data = json.loads((SAMPLES / "h200_backends.json").read_text())
    for other in data["variants"]:  # the recording measured every variant's, on all heads:
        other["accuracy"] = None    # here only this one's, on a subset of the heads
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
    view = saved_source(report, "r").variants[v["name"]]
    assert view.facts.sdpa_backend == "cudnn"
    assert view.facts.accuracy is not None
    cells = accuracy(view.facts.accuracy.model_dump())
    assert (cells["cos"], cells["l1"]) == ("0.99987", "1.23")
    assert accuracy(None)["cos"] == accuracy(None)["l1"] == "-"


# -- accuracy per query head (docs/counters.md) --------------------------------------------------
def _np_head_metrics(out: np.ndarray, ref: np.ndarray) -> list[dict[str, float]]:
    """Each head's metrics in float64 numpy, written out here ([B, H, N, D] arrays)."""
    heads = []
    for h in range(out.shape[1]):
        o, r = out[:, h].astype(np.float64).ravel(), ref[:, h].astype(np.float64).ravel()
        heads.append({"cosine_similarity": o @ r / np.linalg.norm(o) / np.linalg.norm(r),
                      "relative_l1": np.abs(o - r).sum() / np.abs(r).sum(),
                      "rmse": np.sqrt(np.mean((o - r) ** 2)),
                      "max_abs_error": np.abs(o - r).max()})
    return heads


def _hnd_np(x: torch.Tensor, layout: str) -> np.ndarray:
    return (x.transpose(1, 2) if layout == "NHD" else x).double().numpy()


def test_per_head_accuracy_of_a_cpu_run_agrees_with_float64_numpy():
    """The reference backend on the CPU, GQA (8 query heads on 2 KV heads): the report's
    figures of every head against float64 attention computed here from the same inputs."""
    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.runner.backends.base import NullClock
    from sagetui.runner.backends.reference import ReferenceBackend
    from sagetui.runner.inputs import build_inputs
    from sagetui.session.session import Session

    cfg = RunConfig(shape=Shape(heads=8, kv_heads=2, q_len=192, head_dim=64, causal=True),
                    variants=[VariantSpec(name="r", backend="reference")], warmup=1,
                    rounds=1, iterations=1, seed=11)
    report = Session(cfg).run()
    got = report.variants[0].accuracy
    assert got is not None and got.per_head is not None

    inputs = build_inputs(cfg, "cpu")  # the same seed, the same inputs, the same output
    out = ReferenceBackend().run(inputs, NullClock())
    q, k, v = (_hnd_np(t, inputs.layout) for t in (inputs.q, inputs.k, inputs.v))
    ref = _np_attention(q, k, v, inputs.sm_scale, causal=True)
    want = _np_head_metrics(_hnd_np(out, inputs.layout), ref)
    assert [h.head for h in got.per_head] == list(range(8))
    for h, w in zip(got.per_head, want, strict=True):
        assert h.elements == 192 * 64
        for key, value in w.items():
            assert getattr(h, key) == pytest.approx(value, rel=1e-4), (h.head, key)
    # the whole output's figures from the same arrays, and the worst heads really the worst
    whole = _np_metrics(_hnd_np(out, inputs.layout), ref)
    for key, value in whole.items():
        assert getattr(got, key) == pytest.approx(value, rel=1e-4), key
    by_l1 = sorted(range(8), key=lambda i: -want[i]["relative_l1"])
    assert got.worst_heads == by_l1[:accuracy.WORST_HEADS]
    assert check_report(report) == []


def test_per_head_sums_give_the_whole_outputs_figures_as_before():
    """The overall figures are the heads' sums added in head order, exactly as the runner
    added them before it kept each head's (the same floats, bit for bit)."""
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, h, 70, 16, generator=g) for h in (6, 3, 3))
    inputs = Inputs(q=q, k=k, v=v, layout="HND", causal=False, sm_scale=0.25)
    ref = exact_reference.ExactReference(inputs)
    out = ref.out + 0.01 * torch.randn(ref.out.shape, generator=g)
    got = ref.compare(out, "HND")
    sums, max_abs = dict.fromkeys(accuracy.SUMS, 0.0), 0.0
    for h in range(6):  # the loop of the code before per-head accuracy
        oh, rh = out[:, h].float(), ref.out[:, h]
        d = oh - rh
        parts = {"dot": (oh * rh).sum(), "out_sq": (oh * oh).sum(), "ref_sq": (rh * rh).sum(),
                 "abs_diff": d.abs().sum(), "ref_abs": rh.abs().sum(), "sq_diff": (d * d).sum()}
        for key, value in parts.items():
            sums[key] += float(value.double().item())
        max_abs = max(max_abs, float(d.abs().max().item()))
    before = accuracy.from_sums(sums, max_abs, out.numel())
    assert {k: got[k] for k in before} == before
    assert len(got["per_head"]) == 6 and got["elements"] == out.numel()


def test_worst_heads_by_relative_l1_a_non_finite_head_first():
    assert accuracy.worst_heads({0: 0.01, 1: 0.05, 2: 0.03, 3: 0.02}) == [1, 2, 3]
    assert accuracy.worst_heads({0: 0.01, 1: float("nan"), 2: 0.03}) == [1, 2, 0]
    # ties: the lower head first
    assert accuracy.worst_heads({0: 0.02, 1: None, 2: 0.02, 3: 0.02}) == [1, 0, 2]
    assert accuracy.worst_heads({5: 0.1}) == [5]
    assert accuracy.worst_heads({}) == []


def _per_head_report():
    """A saved CPU report's variant with per-head accuracy, as JSON."""
    from .conftest import SAMPLES

    data = json.loads((SAMPLES / "cpu_reference_kbias.json").read_text())
    a = data["variants"][0]["accuracy"]
    assert a["per_head"] and check_report(Report.model_validate(data)) == []
    return data, a


def _found(data) -> list[str]:
    return [str(m) for m in check_report(Report.model_validate(data))]


def test_check_recomputes_each_heads_metrics_and_the_whole_outputs_from_the_sums():
    data, a = _per_head_report()
    a["per_head"][1]["relative_l1"] *= 1.01
    assert any(m.startswith("$.variants[0].accuracy.per_head[1].relative_l1")
               and "from the head's sums" in m for m in _found(data))
    data, a = _per_head_report()
    a["per_head"][2]["sums"]["abs_diff"] *= 1.01  # a head's sum: its metric and the whole's
    found = _found(data)
    assert any(m.startswith("$.variants[0].accuracy.per_head[2].relative_l1") for m in found)
    assert any(m.startswith("$.variants[0].accuracy.relative_l1:") for m in found), found
    data, a = _per_head_report()
    a["max_abs_error"] = a["max_abs_error"] * 0.5
    assert any(m.startswith("$.variants[0].accuracy.max_abs_error") and "largest" in m
               for m in _found(data))


def test_check_holds_the_heads_compared_the_count_and_the_worst_heads():
    data, a = _per_head_report()
    a["worst_heads"] = list(reversed(a["worst_heads"]))
    assert any(m.startswith("$.variants[0].accuracy.worst_heads") for m in _found(data))
    data, a = _per_head_report()
    del a["per_head"][0]  # a head missing: the count is no longer the heads' sum
    found = _found(data)
    assert any(m.startswith("$.variants[0].accuracy.per_head:") for m in found), found
    assert any(m.startswith("$.variants[0].accuracy.elements") for m in found), found


def test_a_non_finite_head_is_kept_without_its_figures_and_ranked_worst():
    """A NaN output travels as null (core/protocol.py): its head keeps its place, counts as
    the worst, and `check` recomputes what is still there."""
    data, a = _per_head_report()
    bad = a["per_head"][3]
    for key in ("cosine_similarity", "relative_l1", "rmse", "max_abs_error"):
        bad[key] = None
        a[key] = None
    bad["sums"] = {k: None for k in bad["sums"]}
    l1 = {h["head"]: h["relative_l1"] for h in a["per_head"]}
    a["worst_heads"] = accuracy.worst_heads(l1)
    assert a["worst_heads"][0] == bad["head"]
    assert _found(data) == []
    from sagetui.core.format import worst_heads

    assert worst_heads(a).startswith(f"{bad['head']} (not finite), ")


def test_a_sweep_point_keeps_its_worst_head_in_the_csv_and_markdown():
    from sagetui.core.sweep import plan
    from sagetui.core.sweep.export import CSV_FIELDS, accuracy_text

    _, a = _per_head_report()
    point = plan.accuracy({"accuracy": a}, None)
    worst = a["worst_heads"][0]
    assert point is not None and point.worst_head == worst
    assert point.worst_head_relative_l1 == a["per_head"][worst]["relative_l1"]
    assert f"worst head {worst} 3.91 %" in accuracy_text(point)
    assert CSV_FIELDS.index("worst_head") == CSV_FIELDS.index("relative_l1") + 1
