"""Replaying a capture as a workload (`sagetui run --workload DIR`): the small transformer of
tests/capture_model.py captured for real (8 calls), replayed with two variants of the CPU
reference backend, its report checked against what the model passed and against numbers
computed here independently; a one-call workload against the `--inputs` run of that call; bad
input refused with one line, exit 2 and nothing written."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from sagetui.core.capture.loaded import load_workload
from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, Shape
from sagetui.core.derived import speedup_percent
from sagetui.core.export.report import to_csv, to_markdown
from sagetui.core.report.io import load_report
from sagetui.core.report.model import Report
from sagetui.core.statistics.verdict import paired_speedup
from sagetui.core.sweep import plan
from sagetui.runner.captured_call import load_call

from .capture_model import sha256
from .test_capture import captured
from .test_check_mutation import held_whole

VARIANTS = ["--variant", "a=reference", "--variant", "b=reference[slowdown=1.2]"]
MEASURE = ["--rounds", "3", "--iterations", "2", "--warmup", "1"]


def _run(cli_here, tmp_path, *words):
    return cli_here("run", *words, *VARIANTS, *MEASURE, "--quiet", "--recovery-dir",
                    tmp_path / "rec")


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    """8 calls of 3 forward passes captured, replayed once for the whole module: (capture
    directory, the model's own record of what it passed, the report, stdout, exit status)."""
    import os

    from sagetui.cli.main import main

    tmp = tmp_path_factory.mktemp("replay")
    _, model, _ = captured(tmp / "cap", steps=3, calls="0-7")
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = main(["run", "--workload", "cap", *VARIANTS, *MEASURE, "--quiet",
                       "--recovery-dir", "rec", "--json", "wl.json", "--csv", "wl.csv",
                       "--markdown", "wl.md"])
    finally:
        os.chdir(cwd)  # main() puts back the signal handlers `run` changed
    return tmp / "cap", model.attention_log(), load_report(tmp / "wl.json"), out.getvalue(), rc


def test_every_call_is_replayed_on_the_tensors_the_model_passed(replay):
    cap, own, report, _, rc = replay
    assert rc == 0 and report.status == "complete"
    wl = report.workload
    assert wl is not None and wl.calls_seen == 12 and len(wl.calls) == len(wl.points) == 8
    workload = load_workload(cap, hashes=True)  # every tensor's sha256 against the manifest
    for call, mine, entry in zip(workload.calls, own[:8], wl.calls, strict=True):
        t = load_call(call)  # what the runner's inputs are read from: the same file
        assert (sha256(t.q), sha256(t.k), sha256(t.v)) == (mine["q"], mine["k"], mine["v"])
        assert [call.facts.tensors[n].sha256 for n in "qkv"] == [mine[n] for n in "qkv"]
        point = wl.points[entry.point or 0]
        assert entry.index == call.index and entry.module == mine["module"]
        assert point.shape == call.shape == entry.shape
        assert point.status == "ok" and [v.name for v in point.variants] == ["a", "b"]
    # the layout is the program's (HND): q's shape as the model passed it
    assert [wl.calls[0].shape.heads, wl.calls[0].shape.q_len] == own[0]["q_shape"][1:3]
    assert report.inputs is not None and report.inputs.file == str(cap.name)


def _independent_interval(report: Report, baseline: str, name: str) -> tuple[float, float]:
    """statistics/weighted_total.py's interval written out again from its docstring's
    formulas, with scipy's t quantile."""
    wl = report.workload
    assert wl is not None
    rows = []
    for c in wl.calls:
        p = wl.points[c.point or 0]
        b, v = (next(x for x in p.variants if x.name == n) for n in (baseline, name))
        rows.append((c.weight, b.timing.p50_s, v.timing.p50_s,
                     [np.median(r) for r in b.samples["total"]],
                     [np.median(r) for r in v.samples["total"]]))
    tb = sum(w * pb for w, pb, _, _, _ in rows)
    tv = sum(w * pv for w, _, pv, _, _ in rows)
    s2 = [np.var([w * (x / tb - y / tv) for x, y in zip(rb, rv, strict=True)], ddof=1)
          / len(rb) for w, _, _, rb, rv in rows]
    df = sum(s2) ** 2 / sum(s ** 2 / (len(r[3]) - 1) for s, r in zip(s2, rows, strict=True))
    half = stats.t.ppf(0.975, df) * math.sqrt(sum(s2))
    centre = math.log(tb / tv)
    return (math.expm1(centre - half) * 100, math.expm1(centre + half) * 100)


def test_totals_are_the_weighted_sum_of_the_calls(replay):
    _, _, report, stdout, _ = replay
    wl = report.workload
    assert wl is not None and wl.baseline == "a"
    # saved calls of one signature share its count: each signature weighs its count once
    saved = Counter(c.signature for c in wl.calls)
    weights = {c.index: c.count / saved[c.signature] for c in wl.calls}
    assert [c.weight for c in wl.calls] == [weights[c.index] for c in wl.calls]
    assert sum(weights.values()) == 12  # every call the program made, once

    def total(name: str) -> float:
        return sum(weights[c.index] * next(v.timing.p50_s for v in wl.points[c.point].variants
                                           if v.name == name) for c in wl.calls)

    a, b = (next(t for t in wl.totals if t.variant == n) for n in "ab")
    assert a.seconds == pytest.approx(total("a"), rel=1e-12)
    assert b.seconds == pytest.approx(total("b"), rel=1e-12)
    assert b.speedup_percent == pytest.approx((total("a") / total("b") - 1) * 100, rel=1e-9)
    lo, hi = _independent_interval(report, "a", "b")
    assert (b.ci_low_percent, b.ci_high_percent) == (pytest.approx(lo), pytest.approx(hi))
    assert b.ci_low_percent < b.speedup_percent < b.ci_high_percent
    assert a.speedup_percent is None  # the baseline's own
    # the worst call by speed and by accuracy, and the worst head, for b
    worst = next(w for w in wl.worst if w.variant == "b")
    per_call = {c.index: next(v for v in wl.points[c.point].variants if v.name == "b")
                for c in wl.calls}
    base = {c.index: next(v for v in wl.points[c.point].variants if v.name == "a")
            for c in wl.calls}
    slow = min(per_call, key=lambda i: speedup_percent(base[i].timing.p50_s,
                                                       per_call[i].timing.p50_s))
    assert worst.slowest_call == slow
    l1 = {i: v.accuracy_brief.relative_l1 for i, v in per_call.items()}
    assert worst.least_accurate_call == max(l1, key=l1.get)
    heads = {i: v.accuracy_brief.worst_head_relative_l1 for i, v in per_call.items()}
    assert worst.worst_head_call == max(heads, key=heads.get)
    assert worst.worst_head == per_call[worst.worst_head_call].accuracy_brief.worst_head
    # per call: p50 with its interval, a verdict against a, accuracy with its worst head
    for v in per_call.values():
        assert v.p50_ci_percent is not None and v.verdict is not None
        assert v.verdict.rounds == 3 and v.accuracy_brief.worst_head is not None
    assert "total attention time" in stdout and "blocks.3.attn" in stdout


def test_check_recomputes_every_derived_number(replay, tmp_path):
    _, _, report, _, _ = replay
    assert check_report(report) == []
    data = report.to_json_dict()
    data["workload"]["totals"][1]["seconds"] *= 1.01
    data["workload"]["totals"][1]["ci_high_percent"] += 1
    data["workload"]["calls"][0]["weight"] = 3
    data["workload"]["points"][1]["variants"][1]["verdict"]["estimate_percent"] += 1
    data["workload"]["worst"][1]["slowest_call"] = 99
    found = {m.path for m in check_report(Report.model_validate(data))}
    assert {"$.workload.totals[1].seconds", "$.workload.totals[1].ci_high_percent",
            "$.workload.calls[0].weight", "$.workload.points[1].variants[1].verdict."
            "estimate_percent", "$.workload.worst[1].slowest_call"} <= found


def test_markdown_and_csv_hold_the_calls_and_totals(replay):
    _, _, report, _, _ = replay
    md = to_markdown(report)
    assert "## sagetui workload" in md and "| 7 blocks.3.attn | 1.5 |" in md
    assert "| b |" in md and "delta method" in md
    rows = to_csv(report).splitlines()
    assert rows[0].startswith("call,module,count,weight") and len(rows) == 1 + 8 * 2


def test_one_call_is_the_inputs_run_of_that_call(replay, cli_here, tmp_path):
    """`--workload DIR --calls 2` and `sagetui run --inputs FILE` with the call's shape: the
    same configuration, and the same figures computed the same way."""
    cap = replay[0]
    call = load_workload(cap).calls[2]
    one = _run(cli_here, tmp_path, "--workload", cap, "--calls", "2", "--json", "one.json")
    run = _run(cli_here, tmp_path, *(call.run_argv() or []), "--json", "run.json")
    assert one.returncode == run.returncode == 0, (one.stderr, run.stderr)
    w, r = load_report(tmp_path / "one.json"), load_report(tmp_path / "run.json")
    assert w.workload is not None and len(w.workload.points) == 1
    point = w.workload.points[0]
    wcfg = RunConfig.model_validate(w.config).model_copy(update={"inputs_path": str(call.file)})
    assert wcfg == RunConfig.model_validate(r.config)
    assert point.shape == Shape.model_validate(r.config["shape"]) == call.shape
    assert check_report(w) == [] and check_report(r) == []
    for pv in point.variants:
        rv = next(v for v in r.variants or [] if v.name == pv.name)
        # the same inputs, kernel and reference: the same output and accuracy, byte for byte
        assert pv.output_sha256 == rv.output_sha256 and pv.checksum == rv.checksum
        against = r.baseline if pv.name != r.baseline else None
        assert pv.accuracy_brief == plan.accuracy(rv.model_dump(), against)
        assert pv.round_count == len(rv.rounds or []) == 3
        if pv.name == "b":  # the verdict: the same function of each's own round medians
            for v, samples in ((pv.verdict, pv.samples["total"]),
                               (rv.verdict, r.samples["b"]["total"].tolist())):
                base = (point.variants[0].samples["total"] if v is pv.verdict
                        else r.samples["a"]["total"].tolist())
                want = paired_speedup([np.median(x) for x in base],
                                      [np.median(x) for x in samples],
                                      threshold_percent=v.threshold_percent)
                assert v.estimate_percent == pytest.approx(want.estimate_percent)
    # alone, the call carries its signature's whole count (3 passes): the total is 3 x its
    # p50, and the total's speedup the run's p50 speedup
    a, b = w.workload.totals
    (pa, pb) = (v.timing.p50_s for v in point.variants)
    assert w.workload.calls[0].weight == 3 and a.seconds == pytest.approx(3 * pa)
    assert b.speedup_percent == pytest.approx(speedup_percent(pa, pb))


def _flip_byte(cap: Path) -> None:
    p = cap / "call-000001.safetensors"
    raw = bytearray(p.read_bytes())
    raw[-1] ^= 1
    p.write_bytes(bytes(raw))


def _manifest(change):
    def edit(cap: Path) -> None:
        m = json.loads((cap / "manifest.json").read_text())
        change(m)
        (cap / "manifest.json").write_text(json.dumps(m))
    return edit


def _no_dropout_runs(m):
    for c in m["calls"]:
        c["dropout_p"] = 0.1


@pytest.mark.parametrize(("words", "tamper", "needle"), [
    (["--inputs", "x.safetensors"], None, "--workload replays each call's own q/k/v: drop "
                                          "--inputs"),
    (["--heads", "4", "--causal"], None, "each call brings its own shape; drop --heads, "
                                         "--causal"),
    (["--tail-study"], None, "--tail-study: a workload has no tail study"),
    ([], _flip_byte, "call 1 (call-000001.safetensors): v's bytes have sha256"),
    ([], lambda d: (d / "call-000002.safetensors").unlink(),
     "call 2 (call-000002.safetensors): no such file"),
    ([], _manifest(lambda m: m["calls"][1]["tensors"]["q"].update(shape=[1, 4, 8, 16])),
     "call 1 (call-000001.safetensors): q is bfloat16 [1, 4, 16, 8] in the file; the "
     "manifest says bfloat16 [1, 4, 8, 16]"),
    (["--calls", "40-50"], None, "--calls 40-50: no saved call of cap matches (saved: 0, 1, "
                                 "2, 3)"),
    (["--calls", "every:0"], None, "every:N takes a whole number >= 1"),
    ([], _manifest(_no_dropout_runs), "cap: no call to replay: call 0 dropout_p 0.1 is not "
                                      "part of a run; call 1 dropout_p"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(cli_here, tmp_path, words, tamper,
                                                         needle):
    captured(tmp_path / "cap", steps=1)
    if tamper:
        tamper(tmp_path / "cap")
    got = cli_here("run", "--workload", "cap", *words, *VARIANTS, "--json", "out.json",
                   "--recovery-dir", tmp_path / "rec")
    err = got.stderr.splitlines()
    assert got.returncode == 2 and len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "rec").exists()


def test_calls_without_a_workload_is_refused(cli_here, tmp_path):
    got = cli_here("run", "--calls", "0", "--json", "out.json")
    assert got.returncode == 2 and got.stderr.strip() == (
        "sagetui: error: --calls selects a workload's calls: give --workload DIR")
    assert not (tmp_path / "out.json").exists()


def test_the_console_shows_the_calls_and_totals(replay):
    """`sagetui view` of a workload report: its Sweep tab lists each call's point and the
    totals (the minimal view: the sweep's table, the totals in the crossovers' place)."""
    from textual.widgets import TabbedContent

    from sagetui.tui.widgets.sweep_table import SweepTable

    from .tui.conftest import aio, screen_text, settle, viewer

    path = replay[0].parent / "wl.json"

    @aio
    async def show() -> None:
        app = viewer(path)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot, app)
            assert app.query_one(TabbedContent).active == "sweep"
            assert app.query_one(SweepTable).row_count == 16
            text = " ".join(screen_text(app).split())
            assert "Workload (Σ weight x p50)" in text and "b total" in text
            assert "call 3 blocks.3.attn" in text

    show()


def test_the_total_interval_reduces_to_a_calls_paired_one_and_needs_two_rounds():
    """weighted_total.total_speedup: a call's weight scales nothing but its share; one call's
    interval is, to first order, its paired verdict's; under two rounds, no interval."""
    from sagetui.core.statistics.weighted_total import CallTimes, total_speedup

    b, v = [1.00, 1.02, 0.99, 1.01, 1.00], [0.90, 0.93, 0.89, 0.91, 0.90]
    one = total_speedup([CallTimes(1.0, 1.0, 0.9, b, v)])
    heavy = total_speedup([CallTimes(7.0, 1.0, 0.9, b, v)])
    assert one.speedup_percent == pytest.approx(100 / 9) == heavy.speedup_percent
    assert (one.ci_low_percent, one.ci_high_percent) == (
        pytest.approx(heavy.ci_low_percent), pytest.approx(heavy.ci_high_percent))
    paired = paired_speedup(b, v, threshold_percent=1.0)
    width = one.ci_high_percent - one.ci_low_percent
    assert width == pytest.approx(paired.ci_high_percent - paired.ci_low_percent, rel=0.05)
    # a second call, twice as heavy and alike: the total's speedup is the calls' common one
    two = total_speedup([CallTimes(1.0, 1.0, 0.9, b, v), CallTimes(2.0, 1.0, 0.9, b, v)])
    assert two.speedup_percent == pytest.approx(100 / 9)
    assert two.ci_high_percent - two.ci_low_percent < width  # more rounds in all: narrower
    short = total_speedup([CallTimes(1.0, 1.0, 0.9, b, v), CallTimes(1.0, 1.0, 0.9, [1.0],
                                                                     [0.9])])
    assert short.ci_low_percent is None and short.ci_high_percent is None


def test_the_console_replays_a_workload_live_and_shows_its_totals(replay, tmp_path):
    """`sagetui --workload DIR`: `r` replays the capture's calls in the console, each a point
    on the Sweep tab as it finishes, and the finished run's view carries the totals."""
    from sagetui.cli.console import console_app
    from sagetui.cli.main import build_parser
    from sagetui.tui.widgets.sweep_table import SweepTable
    from sagetui.tui.widgets.variant_table import VariantTable

    from .tui.conftest import aio, screen_text, wait_for

    args = build_parser().parse_args(["--workload", str(replay[0]), "--calls", "0-1",
                                      *VARIANTS, *MEASURE])
    app = console_app(args)  # what `sagetui --workload DIR ...` runs in its terminal
    app.run_control.recovery_path = tmp_path / "rec.json"

    @aio
    async def replay_live() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.press("r")
            await wait_for(pilot, lambda: not app.running and app.run_control.final_report
                           is not None, timeout=120, what="the workload")
            await pilot.press("8")
            await wait_for(pilot, lambda: app.query_one(SweepTable).row_count == 4,
                           what="the calls")  # 2 calls x 2 variants
            await wait_for(pilot, lambda: "b total" in screen_text(app), what="the totals")
            report = app.run_control.final_report
            assert report.workload is not None and len(report.workload.points) == 2
            # what the console wrote (its recovery file) passes check, whole
            held_whole(json.loads((tmp_path / "rec.json").read_text()))
            # the Overview lists the variants over the calls, with their totals
            await pilot.press("1")
            await wait_for(pilot, lambda: "total ms" in screen_text(app), what="the totals")
            table = app.query_one(VariantTable)
            rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
            assert [r[2] for r in rows] == ["a", "b"]
            assert all(r[4:6] == ["ok", "2 of 2"] for r in rows)

    replay_live()
