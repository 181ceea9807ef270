"""Sweeps: axis parsing, the derived numbers, crossovers, check, and the CLI end to end on the
CPU (a real runner process, real timings)."""

import json
import math
import time
import weakref
import xml.etree.ElementTree as ET

import pytest

from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.derived import kernel_and_e2e, shape_ops
from sagetui.core.report.io import load_report
from sagetui.core.report.model import SCHEMA_VERSION, Report
from sagetui.core.statistics.intervals import half_percent
from sagetui.core.sweep import plan
from sagetui.core.sweep.axes import parse_axis, parse_causal, parse_length

SMALL = ["--heads", "2", "--head-dim", "64", "--warmup", "1", "--rounds", "3",
         "--iterations", "4"]


# -- axes ------------------------------------------------------------------------------------
def test_ranges_double_and_lists_sort():
    assert parse_axis("1k..32k") == [1024, 2048, 4096, 8192, 16384, 32768]
    assert parse_axis("128,1k,256") == [128, 256, 1024]
    assert parse_axis("1000") == [1000]
    assert parse_axis("1000..8000") == [1000, 2000, 4000, 8000]
    assert parse_length("1m") == 1024 * 1024 and parse_length("2K") == 2048
    assert parse_causal("both") == [False, True] and parse_causal("on") == [True]


@pytest.mark.parametrize("text", ["", "abc", "1k..3k", "32k..1k", "1,,2", "0", "-5", "1.5k",
                                  "1..1m0"])
def test_bad_axis_values_raise(text):
    with pytest.raises(ValueError):
        parse_axis(text)


@pytest.mark.parametrize(("args", "needle"), [
    (["--q-len", "1k..3k"], "--q-len: '1k..3k': 3072 is not 1024 times a power of two"),
    (["--q-len", "abc"], "--q-len: 'abc' is not a length"),
    (["--kv-len", "32k..1k"], "--kv-len"),
    (["--head-dim", "64,256"], "--head-dim"),
    (["--causal", "maybe"], "--causal: 'maybe': use off, on or both"),
    (["--q-len", "1k", "--tokens", "1000"], "--tokens 1000 is not a multiple of q_len 1024"),
    (["--tokens", "4096", "--batch", "2"], "give --tokens or --batch"),
    (["--backend", "nosuch"], "unknown backend 'nosuch'"),
    (["--tail-study"], "--tail-study"),
    (["--svg", "/no/such/dir/s.svg"], "--svg"),
])
def test_bad_sweep_input_is_one_line_and_exit_2(cli_here, args, needle):
    # in this process (main() as `python -m sagetui` calls it, its exit status and stderr):
    # a refusal needs no interpreter of its own; test_cli's refusals run as a child process
    out = cli_here("sweep", *args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], out.stderr
    assert "runner up" not in out.stderr


# -- derived numbers ------------------------------------------------------------------------
def test_plan_orders_series_and_keeps_tokens():
    base = Shape(heads=2, q_len=1, head_dim=64)
    axes = plan.Axes(q_lens=[1024, 2048, 4096], head_dims=[64, 128], causal=[False, True],
                   tokens=8192)
    shapes = plan.plan(base, axes)
    assert len(shapes) == 12
    assert [(s.head_dim, s.causal, s.q_len) for s in shapes[:4]] == [
        (64, False, 1024), (64, False, 2048), (64, False, 4096), (64, True, 1024)]
    assert all(s.batch * s.q_len == 8192 for s in shapes)
    only_kv = plan.Axes(q_lens=[512], kv_lens=[1024, 2048], head_dims=[64], causal=[False])
    assert only_kv.x_axis == "kv_len"
    assert [plan.x_of(s, "kv_len") for s in plan.plan(base, only_kv)] == [1024, 2048]


def test_tops_as_sagattention_bench_counts_them():
    s = Shape(batch=4, heads=32, q_len=4096, head_dim=128)
    assert shape_ops(s) == 4 * 4 * 32 * 4096 * 4096 * 128
    assert shape_ops(s.model_copy(update={"causal": True})) == shape_ops(s) / 2
    d = kernel_and_e2e(shape_ops(s), timing_p50_s=2e-3, kernel_p50_s=1e-3, peak=1979.0)
    assert d["kernel_tops"] == pytest.approx(shape_ops(s) / 1e-3 / 1e12)
    assert d["e2e_tops"] == pytest.approx(d["kernel_tops"] / 2)
    assert d["kernel_share_of_peak"] == pytest.approx(d["kernel_tops"] / 1979.0)
    assert plan.kernel_phase(["q_int8_quantization", "fused_mainloop"]) == "fused_mainloop"
    assert plan.kernel_phase(["attention"]) == "total"


def test_interval_is_the_t_interval_of_log_round_medians():
    assert half_percent([1.0]) is None
    x = [1.0, 1.02, 0.98, 1.01]
    logs = [math.log(v) for v in x]
    mean = sum(logs) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / 3)
    assert half_percent(x) == pytest.approx(math.expm1(3.182446305284263 * sd / 2) * 100)


def test_crossover_is_found_and_interpolated_in_log2():
    series = {"D128": {"a": [(1024, 10.0), (2048, 20.0), (4096, 30.0)],
                       "b": [(1024, 15.0), (2048, 18.0), (4096, 25.0)]}}
    (x,) = plan.crossovers(series)
    assert (x["before"], x["after"], x["x_low"], x["x_high"]) == ("b", "a", 1024, 2048)
    assert x["x"] == pytest.approx(2 ** (10 + 5 / 7))
    assert plan.crossovers({"g": {"a": [(1, 2.0), (2, 3.0)], "b": [(1, 1.0), (2, 1.0)]}}) == []


# -- a real sweep on the CPU ----------------------------------------------------------------
@pytest.fixture(scope="module")
def sweep_report(tmp_path_factory) -> Report:
    from sagetui.session.sweep import SweepSession

    cfg = RunConfig(shape=Shape(heads=2, q_len=128, head_dim=64),
                    variants=[VariantSpec.parse("a=reference"),
                              VariantSpec.parse("b=reference[slowdown=2]")],
                    warmup=1, rounds=2, iterations=3)
    events = []
    report = SweepSession(cfg, plan.Axes(q_lens=[128, 256], head_dims=[64], causal=[False, True]),
                          on_event=events.append).run()
    kinds = [e.NAME for e in events]
    assert kinds.count("point") == 4 and kinds.count("point_start") == 4
    assert kinds[-1] == "finished"
    assert "iterations" not in kinds  # a point's own progress stays in the session
    return report


def test_sweep_points_interleave_variants_and_pass_check(sweep_report):
    r = sweep_report
    assert r.status == "complete" and r.schema_version == SCHEMA_VERSION
    assert [(p.x, p.shape.causal) for p in r.sweep.points] == [
        (128, False), (256, False), (128, True), (256, True)]
    for p in r.sweep.points:
        a, b = p.variants
        assert a.kernel_phase == "fused_mainloop" and a.round_count == 2
        assert len(a.samples["total"]) == 2 and len(a.samples["total"][0]) == 3
        assert a.kernel_tops > a.e2e_tops > 0  # the main loop is part of the call
        assert b.accuracy_brief.model_dump(include={
            "against", "max_abs_diff", "mean_abs_diff", "byte_exact"}) == {
            "against": "a", "max_abs_diff": 0.0, "mean_abs_diff": 0.0, "byte_exact": True}
        # against fp32 attention: the reference's quantization error, the same for a copy
        assert 0.999 < b.accuracy_brief.cosine_similarity <= 1.0
        assert b.accuracy_brief.cosine_similarity == a.accuracy_brief.cosine_similarity
        # the reference stands in for sm89: its tiles' geometry at this point's shape
        assert p.scheduler.kernel == "sm89" and p.scheduler.q_len == p.x
    assert check_report(r) == []
    assert Report.model_validate(r.to_json_dict()) == r


@pytest.mark.parametrize(("where", "value", "path"), [
    (["points", 1, "ops"], 7.0, "$.sweep.points[1].ops"),
    (["points", 0, "variants", 1, "kernel_tops"], 1.0, "$.sweep.points[0].variants[1].kernel_tops"),
    (["points", 0, "variants", 0, "e2e_tops"], 1.0, "$.sweep.points[0].variants[0].e2e_tops"),
    (["points", 2, "variants", 0, "p50_ci_percent"], 1.0,
     "$.sweep.points[2].variants[0].p50_ci_percent"),
    (["points", 3, "variants", 0, "kernel", "p50_s"], 1.0,
     "$.sweep.points[3].variants[0].kernel.p50_s"),
    (["points", 3, "x"], 4096, "$.sweep.points[3].x"),
    (["points", 1, "scheduler", "grid_ctas"], 5, "$.sweep.points[1].scheduler.grid_ctas"),
])
def test_check_names_every_edited_number(sweep_report, where, value, path):
    data = sweep_report.to_json_dict()
    node = data["sweep"]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    found = [m.path for m in check_report(Report.model_validate(data))]
    assert path in found, found


def test_check_recomputes_the_crossovers(sweep_report):
    data = sweep_report.to_json_dict()
    fake = {"group": "D64 causal", "before": "a", "after": "b", "x_low": 128, "x_high": 256,
            "x": 180.0}  # one more (or one other) than the points' lines give
    data["sweep"]["crossovers"] = [*data["sweep"].get("crossovers", []), fake]
    found = [m.path for m in check_report(Report.model_validate(data))]
    assert "$.sweep.crossovers" in found, found


def test_exports_csv_markdown_svg(sweep_report):
    from sagetui.core.export.report import to_csv, to_markdown
    from sagetui.core.sweep.export import to_svg

    rows = to_csv(sweep_report).strip().splitlines()
    assert len(rows) == 1 + 4 * 2 and rows[0].startswith("point,group,x,")
    md = to_markdown(sweep_report)
    assert "| q_len 256, D64 causal | b |" in md
    svg = ET.fromstring(to_svg(sweep_report))
    lines = svg.findall("{http://www.w3.org/2000/svg}polyline")
    assert len(lines) == 2 * 2  # two variants x two series (non-causal, causal)
    labels = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "128" in labels and "256" in labels and "q_len (tokens, log2 scale)" in labels


def test_a_second_setup_frees_the_first_points_inputs():
    """The runner's setup path (runner.main): the old engine dropped, then the new one made;
    nothing may keep the first point's tensors alive."""
    import threading

    from sagetui.core.status_board import StatusBoard
    from sagetui.runner.main import free_memory, new_engine

    def cfg(q):
        return RunConfig(shape=Shape(heads=2, q_len=q, head_dim=64), device="cpu",
                         variants=[VariantSpec.parse("reference")], warmup=0)

    events = []

    def emit(event):
        events.append(event.NAME)

    engine = new_engine(cfg(256), emit, StatusBoard(None), threading.Event())
    engine.block("reference", 0, 0, 1)  # keeps a first output too
    held = [weakref.ref(t) for t in (engine.inputs.q, engine.inputs.k,
                                     engine.checks.first("reference").tensor)]
    engine = None
    free_memory()
    assert all(r() is None for r in held)
    engine = new_engine(cfg(128), emit, StatusBoard(None), threading.Event())
    assert engine.inputs.q.shape[1] == 128 and events.count("ready") == 2


# -- the command line, as a user meets it ---------------------------------------------------
def test_cli_sweep_of_four_lengths_finishes_in_a_minute_and_checks(cli_here, tmp_path):
    """The sweep's target: the reference backend over four small sequence lengths on this
    2-core machine, under a minute, with a report that `sagetui check` passes."""
    t0 = time.monotonic()
    out = cli_here("sweep", "--backend", "reference", "--q-len", "128,256,512,1024", *SMALL,
                   "--json", "s.json", "--csv", "s.csv", "--markdown", "s.md", "--svg", "s.svg")
    took = time.monotonic() - t0
    assert out.returncode == 0, out.stderr
    assert took < 60, took
    report = load_report(tmp_path / "s.json")
    assert [p.x for p in report.sweep.points] == [128, 256, 512, 1024]
    assert all(p.status == "ok" for p in report.sweep.points)
    assert cli_here("check", "s.json").returncode == 0
    assert "kernel TOPS" in out.stdout and "point 4/4" in out.stderr
    ET.parse(tmp_path / "s.svg")
    assert (tmp_path / "s.csv").read_text().count("\n") == 5


def test_an_oom_point_fails_the_sweep_goes_on_and_the_largest_fit_is_stated(
        cli_here, monkeypatch, tmp_path):
    monkeypatch.setenv("SAGETUI_INJECT_FAULT", "oom@setup:512")
    out = cli_here("sweep", "--backend", "reference", "--q-len", "128,256,512", "--head-dim",
                   "32,64", "--heads", "2", "--warmup", "1", "--rounds", "2", "--iterations", "2",
                   "--json", "s.json")
    assert out.returncode == 1, out.stderr
    report = load_report(tmp_path / "s.json")
    status = [(p.shape.head_dim, p.x, p.status, p.fault_kind) for p in report.sweep.points]
    assert status == [(32, 128, "ok", None), (32, 256, "ok", None), (32, 512, "failed", "oom"),
                      (64, 128, "ok", None), (64, 256, "ok", None), (64, 512, "failed", "oom")]
    fit = report.sweep.largest_fit
    assert fit.index == 4 and "largest point that fit: 1x256x2x64" in fit.note
    assert "largest point that fit" in out.stdout
    assert cli_here("check", "s.json").returncode == 0
    data = json.loads((tmp_path / "s.json").read_text())
    data["sweep"].pop("largest_fit")
    bad = [m.path for m in check_report(Report.model_validate(data))]
    assert "$.sweep.largest_fit.index" in bad


def test_a_failing_variant_is_shown_failed_at_each_point(cli_here, monkeypatch, tmp_path):
    monkeypatch.setenv("SAGETUI_INJECT_FAULT", "exception@b:0")
    out = cli_here("sweep", "--variant", "a=reference", "--variant", "b=reference", "--q-len",
                   "128,256", "--heads", "2", "--head-dim", "64", "--warmup", "1", "--rounds", "2",
                   "--iterations", "2", "--json", "s.json")
    assert out.returncode == 1
    report = load_report(tmp_path / "s.json")
    for p in report.sweep.points:
        assert p.status == "partial"
        assert [v.status for v in p.variants] == ["ok", "failed"]
        assert "injected" in p.variants[1].error
    assert "b failed" in out.stderr
    assert cli_here("check", "s.json").returncode == 0


def test_svg_marks_a_crossover(sweep_report):
    from sagetui.core.blocks.sweep import Crossover
    from sagetui.core.sweep.export import to_svg

    data = sweep_report.to_json_dict()  # a faster at 128, b at 256: the lines cross
    pts = data["sweep"]["points"]
    pts[0]["variants"][1]["kernel_tops"] = 0.1 * pts[0]["variants"][0]["kernel_tops"]
    pts[1]["variants"][1]["kernel_tops"] = 10 * pts[1]["variants"][0]["kernel_tops"]
    edited = Report.model_validate(data)
    found = plan.crossovers(plan.series_of(edited.sweep.points))
    (x,) = [c for c in found if c["group"] == "D64 non-causal"]
    assert (x["before"], x["after"], x["x_low"], x["x_high"]) == ("a", "b", 128, 256)
    edited.sweep.crossovers = [Crossover(**x)]
    assert "b &gt; a" in to_svg(edited)


def test_end_to_end_crossovers_are_found_where_the_kernel_lines_do_not_cross():
    """A quantized kernel with the faster main loop everywhere, whose quantization costs more
    than it saves at short lengths: only the end-to-end lines cross."""
    from types import SimpleNamespace as NS

    def point(x, fast_k, fast_e, base):
        return NS(group="D128", x=x, variants=[
            NS(name="sage", status="ok", kernel_tops=fast_k, e2e_tops=fast_e),
            NS(name="sdpa", status="ok", kernel_tops=base, e2e_tops=base)])
    pts = [point(1024, 600.0, 230.0, 560.0), point(4096, 860.0, 590.0, 680.0),
           point(8192, 900.0, 730.0, 690.0)]
    (x,) = plan.all_crossovers(pts)
    assert (x["metric"], x["before"], x["after"]) == ("e2e_tops", "sdpa", "sage")
    assert (x["x_low"], x["x_high"]) == (4096, 8192)


@pytest.mark.parametrize(("where", "value", "path"), [
    (["points", 0, "variants", 1, "verdict", "state"], "FASTER",
     "$.sweep.points[0].variants[1].verdict.state"),
    (["points", 1, "variants", 1, "verdict", "estimate_percent"], 3.0,
     "$.sweep.points[1].variants[1].verdict.estimate_percent"),
    (["points", 2, "variants", 1, "verdict", "threshold_percent"], 2.5,
     "$.sweep.points[2].variants[1].verdict.threshold_percent"),
    (["points", 3, "status"], "partial", "$.sweep.points[3].status"),
    (["points", 3, "variants", 0, "status"], "failed", "$.sweep.points[3].variants[0].status"),
])
def test_check_rederives_each_points_verdict_and_status(sweep_report, where, value, path):
    """A point's verdict from its variants' round medians through the one analysis,
    its status from its variants', and the sweep's from its points."""
    assert all(p.variants[1].verdict is not None for p in sweep_report.sweep.points)
    data = sweep_report.to_json_dict()
    node = data["sweep"]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    assert path in [m.path for m in check_report(Report.model_validate(data))]
    for status in ("partial", "failed", "cancelled"):
        found = [m.path for m in check_report(Report.model_validate(
            {**sweep_report.to_json_dict(), "status": status}))]
        assert found == ["$.status"], (status, found)
