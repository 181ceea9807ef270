"""A variant's result has one shape (docs/architecture.md, "A variant's result"): a run's
Variant and a sweep's or workload's point share blocks/result.VariantResult, a field name means
one type in both, a point is its run's variant copied, and the points' wire names are kept."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from sagetui.core.blocks.result import VariantResult
from sagetui.core.blocks.sweep import SweepVariantPoint
from sagetui.core.config import shape_of
from sagetui.core.report.io import load_report
from sagetui.core.report.model import Variant
from sagetui.core.sweep import collect, plan

SAMPLES = Path(__file__).resolve().parent.parent / "sample_results"
# a point's fields that keep a wire name the run's Variant uses for another thing
WIRE = {"kernel_timing": "kernel", "round_count": "rounds", "accuracy_brief": "accuracy"}


def test_a_field_name_has_one_type_in_both_shapes():
    shared = set(Variant.model_fields) & set(SweepVariantPoint.model_fields)
    assert shared == set(VariantResult.model_fields)
    for name in shared - {"status"}:  # each declared once, in the base
        assert (Variant.model_fields[name].annotation
                == SweepVariantPoint.model_fields[name].annotation
                == VariantResult.model_fields[name].annotation), name
    # a point's status is one of a run variant's: ok or failed
    point = set(typing.get_args(SweepVariantPoint.model_fields["status"].annotation))
    run = set(typing.get_args(typing.get_args(Variant.model_fields["status"].annotation)[0]))
    assert point == {"ok", "failed"} and point < run
    for field, wire in WIRE.items():
        assert SweepVariantPoint.model_fields[field].alias == wire
        assert wire not in SweepVariantPoint.model_fields


def test_points_keep_their_wire_names_in_every_recorded_report():
    """Every sample report of points (a sweep's, a workload's; older schemas too) reads and
    writes its points as recorded."""
    seen = 0
    for path in sorted(SAMPLES.glob("*.json")):
        data = json.loads(path.read_text())
        blocks = [k for k in ("sweep", "workload") if k in data]
        if not blocks:
            continue
        written = load_report(path).to_json_dict()
        for k in blocks:
            assert written[k] == data[k], path.name
            seen += sum(len(p.get("variants", [])) for p in data[k]["points"])
    assert seen > 100


def test_a_point_is_its_run_variant_copied():
    """The runner's facts and every other field of the result reach the point: an H200 run's
    SDPA backend and peak memory too, which a point built field by field left out."""
    rep = load_report(SAMPLES / "h200_backends.json")
    shape = shape_of((rep.config or {})["shape"])
    assert shape is not None
    axes = plan.Axes(q_lens=[shape.q_len], head_dims=[shape.head_dim], causal=[shape.causal])
    point = collect.point(0, shape, axes, rep)
    assert [v.name for v in point.variants] == [v.name for v in rep.variants or []]
    for pv, rv in zip(point.variants, rep.variants or [], strict=True):
        assert pv.status == rv.status == "ok"
        for name in VariantResult.model_fields:
            assert getattr(pv, name) == getattr(rv, name), (pv.name, name)
    assert {v.sdpa_backend for v in point.variants} > {None}
    assert all(v.peak_memory_bytes for v in point.variants if v.backend != "sdpa")
