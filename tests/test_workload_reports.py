"""A workload report is a report like a run's: a replay stopped by Ctrl-C or SIGTERM keeps
every call it reached, with the rounds each made (a sweep: the points measured whole), as a
partial report that `check` accepts; `check` of a replay whose variant failed; `compare` of two
replays, call by call and in total, gated on the total, another capture refused, another order
said; its Markdown and CSV; its progress lines; a capture out of bounds refused at load; a call
whose output is not finite is the least accurate; float32 calls replayed cast with --dtype.

Real parts throughout: captures of tests/capture_model.py's model, `sagetui` as a child process
on the CPU reference backend, real signals sent to it, its stderr read as it comes; where only
what it printed, wrote and exited with is read, main() in this process (sagetui_here)."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import signal
import threading
from pathlib import Path

import pytest
from pydantic import ValidationError

from sagetui.core.check.report import check_report
from sagetui.core.report.io import load_report
from sagetui.core.report.model import Report
from sagetui.core.workload import tally
from sagetui.core.workload.export import (
    CSV_FIELDS,
    call_columns,
    to_csv,
    to_markdown,
    total_columns,
)

from .conftest import sagetui_here
from .faults.conftest import no_traceback, sagetui, start_sagetui, wait_for
from .test_capture import captured, one_thread
from .test_check_mutation import held_whole

VARIANTS = ["--variant", "a=reference", "--variant", "b=reference[slowdown=1.2]"]
MEASURE = ["--rounds", "3", "--iterations", "2", "--warmup", "1"]


@pytest.fixture(scope="module")
def cap(tmp_path_factory) -> Path:
    """8 saved calls of the model's 3 passes (12 calls)."""
    d = tmp_path_factory.mktemp("wl") / "cap"
    captured(d, steps=3, calls="0-7")
    return d


@pytest.fixture(scope="module")
def replays(cap) -> dict[str, Report]:
    """Two complete replays of the capture (A, B), one of its first 3 calls, and one whose
    variant b fails in round 1 at every call."""
    out = {}
    for name, words, extra in (("a", [], None), ("b", [], None), ("first3", ["--calls", "0-2"],
                                                                   None),
                               ("failed", ["--calls", "0-1"],
                                {"SAGETUI_INJECT_FAULT": "exception@b:1"})):
        got = sagetui_here("run", "--workload", cap, *words, *VARIANTS, *MEASURE, "--json",
                           f"{name}.json", "--recovery-dir", "rec", cwd=cap.parent, env=extra)
        assert got.returncode == (1 if extra else 0), got.stderr
        out[name] = load_report(cap.parent / f"{name}.json")
    return out


# --- stopped by a signal --------------------------------------------------------------------

def _stop(p, started: str, sig: signal.Signals) -> tuple[int, str]:
    """Send `sig` to `p` once a line of its stderr matches `started` (read as it comes);
    its exit status and all of its stderr."""
    lines: list[str] = []

    def read() -> None:
        for line in p.stderr:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_for(lambda: any(re.search(started, x) for x in lines), timeout=120, what=started)
        p.send_signal(sig)
        rc = p.wait(timeout=120)
        reader.join(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    return rc, "".join(lines)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_replay_stopped_by_a_signal_keeps_the_calls_measured(cap, tmp_path, sig):
    """The calls are taken in turn, a round at a time: stopped in its second round, the replay
    keeps every call with the rounds it made (the one whose round was cut short one fewer)."""
    p = start_sagetui("run", "--workload", cap, *VARIANTS, "--rounds", "40", "--iterations",
                      "2", "--warmup", "1", "--json", "r.json", "--csv", "r.csv", "--markdown",
                      "r.md", "--recovery-dir", "rec", cwd=tmp_path)
    rc, err = _stop(p, r"call 3 of 8 \(#2 blocks\.2\.attn, round 2\)", sig)
    assert rc == 1 and no_traceback(err), err
    assert f"{sig.name}: stopping; what was measured is kept" in err
    m = re.search(r"replay partial: 8 calls, (\d+)(?:-(\d+))? of 40 rounds each \((stopped by "
                  rf"{sig.name} in round (\d+): 8 of 8 calls kept, with the rounds each made)\)",
                  err)
    assert m, err
    low, high, rnd = int(m[1]), int(m[2] or m[1]), int(m[4])
    assert 1 <= low <= high == rnd - (low == high and low == rnd - 1) <= 39, err
    (recovery,) = (tmp_path / "rec").glob("*.json")
    for path in (tmp_path / "r.json", recovery):
        report = load_report(path)
        wl = report.workload
        assert report.status == "partial" and wl is not None and wl.order == "round by round"
        assert report.status_detail == [m[3]]
        assert [p.index for p in wl.points] == list(range(8))
        made = {len(v.samples["total"]) for p in wl.points for v in p.variants}
        assert made <= {low, high} and low in made, made
        assert [t.missing for t in wl.totals] == [None] * 2
        assert check_report(report) == []
        if sig == signal.SIGINT:  # every leaf held; edits caught (once: one kind of report)
            held_whole(json.loads(path.read_text()))
    # both, through `sagetui check` as a user runs it: one child for the two files
    got = sagetui("check", tmp_path / "r.json", recovery, cwd=tmp_path)
    assert got.returncode == 0, got.stdout + got.stderr
    for path in (tmp_path / "r.json", recovery):
        assert any(line.startswith(f"{path}: ok: ") for line in got.stdout.splitlines()), \
            got.stdout
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert len(rows) == 8 * 2  # a row per call and variant
    assert "not measured" not in {r["status"] for r in rows}


def test_a_sweep_stopped_by_a_signal_keeps_its_points(tmp_path):
    p = start_sagetui("sweep", "--backend", "reference", "--q-len", "128,256,512,1024",
                      "--heads", "2", "--head-dim", "64", "--warmup", "1", "--rounds", "40",
                      "--iterations", "2", "--json", "s.json", "--recovery-dir", "rec",
                      cwd=tmp_path)
    rc, err = _stop(p, "sweep point 1/4", signal.SIGTERM)
    assert rc == 1 and no_traceback(err), err
    report = load_report(tmp_path / "s.json")
    assert report.sweep is not None and report.status == "partial"
    kept = len(report.sweep.points)
    assert 1 <= kept < 4 and report.status_detail[0].startswith(
        f"stopped by SIGTERM after {kept} of 4 points")
    assert f"sweep partial: {kept} points kept (stopped by SIGTERM" in err
    assert check_report(report) == []


# --- check ----------------------------------------------------------------------------------

def test_check_of_a_replay_whose_variant_failed(replays):
    report = replays["failed"]
    wl = report.workload
    assert report.status == "partial" and wl is not None
    assert {v.status for p in wl.points for v in p.variants if v.name == "b"} == {"failed"}
    b = next(t for t in wl.totals if t.variant == "b")
    assert b.seconds is None and b.missing == [0, 1]
    assert check_report(report) == []
    data = report.to_json_dict()
    data["workload"]["totals"][1]["missing"] = [0]
    data["status"] = "complete"
    found = {m.path for m in check_report(Report.model_validate(data))}
    assert found == {"$.workload.totals[1].missing", "$.status"}


def _set(path: str, value):
    """An edit of the report's JSON at a dotted path (list indices as numbers)."""
    def edit(data):
        *head, last = [int(x) if x.isdigit() else x for x in path.split(".")]
        for k in head:
            data = data[k]
        data[last] = value
    return edit


def _every_worst_head(data) -> None:
    for p in data["workload"]["points"]:
        for v in p["variants"]:
            v["accuracy"]["worst_head"] = 2.5


@pytest.mark.parametrize(("edit", "caught"), [
    (_set("status", "partial"), "$.status"),
    (_set("workload.calls.0.cast", True), "$.workload.calls[0].cast"),
    (_set("workload.cast_to", "bf16"), "$.workload.cast_to"),
    (_set("workload.calls.1.skipped", "made up"), "$.workload.calls[1].skipped"),
    (_set("workload.calls.4.index", 99), "$.workload.calls"),
    (_set("workload.worst.0.least_accurate_call", 6), "$.workload.worst[0].least_accurate_call"),
    (_set("workload.points.2.status", "partial"), "$.workload.points[2].status"),
    (_set("workload.points.2.variants.1.status", "failed"),
     "$.workload.points[2].variants[1].status"),
    (_set("workload.points.2.variants.1.accuracy.byte_exact", False),
     "$.workload.points[2].variants[1].accuracy.byte_exact"),
    (_set("workload.points.2.variants.1.accuracy.max_abs_diff", 0.5),
     "$.workload.points[2].variants[1].accuracy.max_abs_diff"),
    (_set("workload.points.2.variants.1.verdict.confidence", 1.5),
     "$.workload.points[2].variants[1].verdict.confidence"),  # no verdict has it: no crash
    (_set("workload.points.0.scheduler.causal", False), "$.workload.points[0].scheduler.causal"),
])
def test_check_holds_each_claim_of_a_workload(replays, edit, caught):
    report = replays["a"]
    assert check_report(report) == []
    data = report.to_json_dict()
    edit(data)
    assert caught in {m.path for m in check_report(Report.model_validate(data))}


def test_a_point_whose_worst_head_is_no_head_is_refused_at_load(replays):
    """A point's accuracy is typed (blocks/result.AccuracyBrief): no head is 2.5."""
    data = replays["a"].to_json_dict()
    _every_worst_head(data)
    with pytest.raises(ValidationError, match="worst_head"):
        Report.model_validate(data)


def test_a_call_whose_output_is_not_finite_is_the_least_accurate(replays):
    """A NaN output leaves relative L1 out of the point's accuracy (core/protocol.py carries
    it as null) and keeps its worst head: that call and head rank worst (accuracy.error_rank,
    the per-head rule), and check recomputes the pick."""
    data = replays["a"].to_json_dict()
    acc = data["workload"]["points"][5]["variants"][1]["accuracy"]
    for key in ("cosine_similarity", "relative_l1", "rmse", "worst_head_relative_l1"):
        acc.pop(key, None)
    report = Report.model_validate(data)
    wl = report.workload
    worst = tally.worst(wl.calls, wl.points, list(wl.variants), wl.baseline)[1]
    assert worst.least_accurate_call == 5 and worst.relative_l1 is None
    assert worst.worst_head_call == 5 and worst.worst_head_relative_l1 is None
    assert any(m.path.startswith("$.workload.worst[1]") for m in check_report(report))
    data["workload"]["worst"][1] = worst.model_dump(exclude_none=True)
    fixed = Report.model_validate(data)
    assert not [m for m in check_report(fixed) if m.path.startswith("$.workload.worst")]
    from sagetui.core.workload.export import worst_lines

    assert "least accurate on call 5 (relative L1 not finite)" in " ".join(
        worst_lines(fixed.workload))


def test_a_replayed_call_whose_output_is_nan_is_the_least_accurate(tmp_path):
    """A real NaN: one of call 1's q values set to NaN in its file (the manifest's sha256
    made to match), replayed: its output is not finite, and call 1 is each variant's least
    accurate call and holds its worst head, though its relative L1 is no number."""
    import hashlib

    import torch
    from safetensors.torch import load_file, save_file

    captured(tmp_path / "cap", steps=1)
    f = tmp_path / "cap" / "call-000001.safetensors"
    t = load_file(str(f))
    t["q"][0, 0, 0, 0] = float("nan")
    save_file(t, str(f))
    sha = hashlib.sha256(t["q"].contiguous().reshape(-1).view(torch.uint8).numpy().data)
    _edit(tmp_path / "cap", lambda m: m["calls"][1]["tensors"]["q"].update(
        sha256=sha.hexdigest()))
    got = sagetui_here("run", "--workload", "cap", *VARIANTS, *MEASURE, "--json", "n.json",
                       "--recovery-dir", "rec", cwd=tmp_path)
    assert got.returncode == 1, got.stderr  # a NaN output is a fault: the timings stand
    report = load_report(tmp_path / "n.json")
    assert check_report(report) == []
    for w in report.workload.worst:
        assert (w.least_accurate_call, w.relative_l1) == (1, None)
        assert w.worst_head_call == 1 and w.worst_head_relative_l1 is None
    assert "least accurate on call 1 (relative L1 not finite)" in got.stdout


# --- compare --------------------------------------------------------------------------------

def test_compare_two_replays_call_by_call_and_in_total(replays, cap, tmp_path):
    d = cap.parent
    got = sagetui_here("compare", d / "a.json", d / "b.json", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    out = got.stdout
    assert "profile" not in out + got.stderr and "sampled warp" not in out
    assert "call 7 blocks.3.attn" in out and "total (8 calls)" in out
    a, b = (replays[n].workload for n in "ab")
    for ta, tb in zip(a.totals, b.totals, strict=True):
        faster = (ta.seconds / tb.seconds - 1) * 100
        assert f"{faster:+.2f}" in out
    # gates the totals cannot cross hold (exit 0; a gate tripping: the next test)
    held = sagetui_here("compare", d / "a.json", d / "b.json", "--fail-if-slower", "1000",
                   "--fail-if-faster", "1000", cwd=tmp_path)
    assert held.returncode == 0, held.stderr


def test_the_gate_trips_on_a_slower_total(cap, tmp_path):
    slow = ["--variant", "a=reference[slowdown=4]", "--variant", "b=reference[slowdown=1.2]"]
    for name, variants in (("fast", VARIANTS), ("slow", slow)):
        got = sagetui_here("run", "--workload", cap, "--calls", "0-1", *variants, "--rounds", "8",
                      "--iterations", "3", "--warmup", "1", "--json", f"{name}.json",
                      "--recovery-dir", "rec", cwd=tmp_path)
        assert got.returncode == 0, got.stderr
    gate = sagetui_here("compare", "fast.json", "slow.json", "--fail-if-slower", "5", cwd=tmp_path)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "slower than A by more than 5 %: B a total: faster %" in gate.stderr
    assert "at call" not in gate.stderr  # the calls are shown, the total is gated


def test_compare_refuses_another_capture_unless_forced(replays, cap, tmp_path):
    other = tmp_path / "other"
    captured(other, steps=1)
    got = sagetui_here("run", "--workload", other, *VARIANTS, *MEASURE, "--json", "o.json",
                  "--recovery-dir", "rec", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    a = cap.parent / "a.json"
    refused = sagetui_here("compare", a, "o.json", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    sha = replays["a"].workload.manifest_sha256[:12]
    assert "replays another capture (manifest sha256" in refused.stderr
    assert f"vs A's {sha}" in refused.stderr and "--force" in refused.stderr
    forced = sagetui_here("compare", a, "o.json", "--force", cwd=tmp_path)
    assert forced.returncode == 0 and "call 0 blocks.0.attn" in forced.stdout
    # a run report and a workload report are different kinds: said as such
    run = sagetui_here("compare", a, Path(__file__).parents[1] / "sample_results" /
                  "001_c3fd8b591d904547.json", cwd=tmp_path)
    assert run.returncode == 2 and "is a workload report and B" in run.stderr


# --- exports and progress -------------------------------------------------------------------

def _cells(row: str) -> list[str]:
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


def test_markdown_cells_are_escaped(replays):
    data = replays["a"].to_json_dict()
    acc = data["workload"]["points"][0]["variants"][1]["accuracy"]
    acc.update(byte_exact=False, max_abs_diff=0.0061)
    data["workload"]["calls"][0]["module"] = "blocks|0"
    report = Report.model_validate(data)
    md = to_markdown(report)
    assert "max \\|Δ\\| 0.0061 vs a" in md and "0 blocks\\|0" in md
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    widths = {len(call_columns(report.workload)), len(total_columns(report.workload))}
    assert rows and all(len(_cells(r)) in widths for r in rows), rows


def test_csv_holds_a_row_per_call_and_variant(replays):
    report = replays["first3"]
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert list(rows[0]) == list(CSV_FIELDS)
    assert [(r["call"], r["variant"]) for r in rows] == [(str(i), v) for i in range(3)
                                                         for v in "ab"]
    wl = report.workload
    for r in rows:
        c = next(c for c in wl.calls if c.index == int(r["call"]))
        v = next(v for v in wl.point_of(c).variants if v.name == r["variant"])
        assert float(r["p50_s"]) == v.timing.p50_s and r["cast"] == "False"


def test_progress_speaks_of_calls_and_marks_noisy_intervals(cap, tmp_path):
    got = sagetui_here("run", "--workload", cap, "--calls", "0-1", *VARIANTS, *MEASURE, "--json",
                       "p.json", "--recovery-dir", "rec", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    err, out = got.stderr, got.stdout
    # the calls take their rounds in turn: each turn says its round, each call is done after
    # its last round
    assert "call 1 of 2 (#0 blocks.0.attn, round 1): 1x16x4x8 bf16 HND causal" in err
    turns = re.findall(r"call (\d) of 2 \(#\d blocks\.\d\.attn, round (\d)\): ", err)
    assert turns == [(c, r) for r in "123" for c in "12"], err
    assert err.index("call 2 of 2 (#1 blocks.1.attn, round 3)") \
        < err.index("call 2 of 2 (#1 blocks.1.attn) done:")
    assert "replay complete: 2 calls, 3 rounds each" in err
    assert "sweep point" not in err and "run complete" not in err and "rounds kept" not in err
    from sagetui.core.sweep.plan import NOISY_MARK, noisy

    wl = load_report(tmp_path / "p.json").workload
    flagged = [v for p in wl.points for v in p.variants if noisy(v)]
    marked = re.findall(rf"± [\d.]+ % {re.escape(NOISY_MARK)} ", out)
    assert len(marked) == len(flagged)
    if flagged:
        assert f"{NOISY_MARK} noisy: the p50's 95 % interval is wider than" in out


# --- bad captures ---------------------------------------------------------------------------

def _edit(cap: Path, change) -> None:
    m = json.loads((cap / "manifest.json").read_text())
    change(m)
    (cap / "manifest.json").write_text(json.dumps(m))


def _no_calls(m) -> None:
    m["calls"], m["bytes_saved"] = [], 0


@pytest.mark.parametrize(("change", "needle"), [
    (lambda m: m["calls"][0].update(count=10 ** 15),
     "call 0: count 1000000000000000 is more than the 12 calls seen"),
    (lambda m: [c.update(count=5) for c in m["calls"]],
     "the signatures' counts add up to 20, more than the 12 calls seen"),
    (lambda m: m.update(calls_seen=10 ** 15), "calls_seen: Input should be less than"),
    (_no_calls, "cap: the capture saved no call (12 calls seen): nothing to replay"),
])
def test_a_capture_out_of_bounds_is_one_line_at_load(cli_here, tmp_path, change, needle):
    captured(tmp_path / "cap", steps=3, calls="0-3")
    _edit(tmp_path / "cap", change)
    # refused at load: main() in this process (as `python -m sagetui` calls it; its exit
    # status and stderr), no interpreter of its own; the replays above run as children
    got = cli_here("run", "--workload", "cap", *VARIANTS, "--json", "o.json", "--recovery-dir",
                   "rec")
    err = got.stderr.splitlines()
    assert got.returncode == 2 and len(err) == 1 and needle in err[0], got.stderr
    assert "--calls None" not in got.stderr and "Traceback" not in got.stderr
    assert not (tmp_path / "o.json").exists() and not (tmp_path / "rec").exists()


def test_two_calls_of_a_signature_disagreeing_on_its_count(cli_here, tmp_path):
    captured(tmp_path / "cap", steps=3, calls="0,4")  # one signature: blocks.0's call
    _edit(tmp_path / "cap", lambda m: m["calls"][1].update(count=2))
    # refused at load: main() in this process (as `python -m sagetui` calls it; its exit
    # status and stderr), no interpreter of its own; the replays above run as children
    got = cli_here("run", "--workload", "cap", *VARIANTS, "--json", "o.json")
    assert got.returncode == 2 and len(got.stderr.splitlines()) == 1
    assert "call 4: count 2, but another call of its signature" in got.stderr


# --- float32 calls, cast with --dtype -------------------------------------------------------

@pytest.fixture(scope="module")
def fp32_cap(tmp_path_factory) -> Path:
    import torch

    import sagetui

    from .capture_model import run

    d = tmp_path_factory.mktemp("fp32") / "cap"
    with one_thread(), sagetui.capture(d, calls="0-3"):
        run(1, dtype=torch.float32)
    return d


def test_float32_calls_are_skipped_without_dtype(cli_here, fp32_cap, tmp_path):
    # refused at load: main() in this process (as `python -m sagetui` calls it; its exit
    # status and stderr), no interpreter of its own; the replays above run as children
    got = cli_here("run", "--workload", fp32_cap, *VARIANTS, "--json", "o.json")
    assert got.returncode == 2 and len(got.stderr.splitlines()) == 1
    assert "call 0 float32: a run is fp16 or bf16 (--dtype fp16|bf16 replays it cast)" \
        in got.stderr


def test_dtype_replays_float32_calls_cast_and_marks_them(fp32_cap, tmp_path):
    got = sagetui_here("run", "--workload", fp32_cap, "--dtype", "fp16", *VARIANTS, *MEASURE,
                       "--json", "c.json", "--csv", "c.csv", "--markdown", "c.md", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert "cast call 0 blocks.0.attn: float32 replayed in fp16" in got.stderr
    assert "(cast from float32)" in got.stdout
    report = load_report(tmp_path / "c.json")
    wl = report.workload
    assert wl.cast_to == "fp16" and [c.cast for c in wl.calls] == [True] * 4
    assert all(p.shape.dtype == "fp16" for p in wl.points)
    assert all(v.accuracy_brief and math.isfinite(v.accuracy_brief.relative_l1)
               for p in wl.points for v in p.variants)
    assert check_report(report) == []
    assert "(cast from float32)" in (tmp_path / "c.md").read_text()
    assert {r["cast"] for r in csv.DictReader(open(tmp_path / "c.csv"))} == {"True"}
    data = report.to_json_dict()
    data["workload"]["cast_to"] = "bf16"
    found = {m.path for m in check_report(Report.model_validate(data))}
    assert "$.workload.cast_to" in found and "$.workload.calls[0].cast" in found


def test_dtype_without_a_float32_call_is_refused(cli_here, cap, tmp_path):
    # refused at load: main() in this process (as `python -m sagetui` calls it; its exit
    # status and stderr), no interpreter of its own; the replays above run as children
    got = cli_here("run", "--workload", cap, "--dtype", "fp16", *VARIANTS, "--json", "o.json")
    assert got.returncode == 2 and got.stderr.strip().endswith(
        "--dtype fp16 casts float32 calls: " + str(cap) + " has none among the calls selected "
        "(the others replay as they were passed; drop --dtype)")


def test_compare_says_when_the_calls_were_measured_in_another_order(replays, tmp_path):
    """A replay of before schema 8 measured each call whole; compared with one that took its
    calls in turn, the difference is said (not refused: the same capture and hardware)."""
    from sagetui.core.compare.facts import differences, facts

    new = replays["a"]
    assert new.workload is not None and new.workload.order == "round by round"
    old = new.model_copy(update={"workload": new.workload.model_copy(update={"order": None})})
    refused, said = differences(facts(old), facts(new))
    assert refused == [] and said == ["calls measured call by call vs round by round"]
    assert differences(facts(new), facts(new)) == ([], [])
