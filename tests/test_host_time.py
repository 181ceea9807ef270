"""What the user's model pays, on the CPU: the reference backend on a simulated device
(runner/timing.SimStream, its `host_us`/`device_us` knobs) whose host work and device work per
call are controlled, timed by the same gated path as a GPU's: host time, back-to-back time,
host-bound calls marked, a drained block detected and measured again, and `check` recomputing
the derived figures. A real runner process, real sleeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.export.report import to_markdown
from sagetui.core.host_time import (
    back_to_back_floor,
    bound_by,
    drained,
    host_bound,
    host_share,
    idle_s,
    typical,
)
from sagetui.core.report.model import Report
from sagetui.core.statistics.clocks import clock_note, cycle_medians
from sagetui.session.session import Session

TINY = Shape(heads=1, q_len=64, head_dim=64)


def test_idle_time_and_drained_queue_from_the_events_times() -> None:
    busy = [(0.0, 1.0), (1.0, 2.0), (2.000001, 3.0)]
    assert idle_s(busy) == pytest.approx(1e-6)
    assert not drained(busy)  # a microsecond between launches is a full queue
    gaps = [(0.0, 1e-3), (1.5e-3, 2.5e-3), (3e-3, 4e-3)]  # the host's pace: 0.5 ms idle each
    assert idle_s(gaps) == pytest.approx(1e-3)
    assert drained(gaps)
    assert not drained(gaps[:1]) and not drained([])


def test_host_bound_and_typical() -> None:
    assert host_bound(2e-3, 1e-3) and not host_bound(1e-3, 2e-3)
    assert host_bound(None, 1e-3) is None and bound_by(2e-3, 1e-3) == "host"
    assert bound_by(1e-3, 2e-3) == "GPU" and typical([3.0, 1.0, 2.0]) == 2.0
    assert typical([]) is None


def test_clock_note_only_when_clocks_differ_beyond_the_half_width() -> None:
    tel = {0: {"available": True, "sm_clock_mhz": {"mean": 1980.0}}, 1: {"available": False}}
    assert cycle_medians({0: 1e-3, 1: 1e-3}, tel) == {0: pytest.approx(1.98e6)}
    verdict = {"ci_low_percent": 1.0, "ci_high_percent": 2.0}  # half-width 0.5 %
    cycles = {"estimate_percent": 1.8, "ci_low_percent": 1.2, "ci_high_percent": 2.4}
    base = {"mean_sm_clock_mhz": 1960.0, "throttle_reasons": ["sw_power_cap"]}
    note = clock_note("b", {"mean_sm_clock_mhz": 1980.0}, base, verdict, cycles)
    assert note == ("b ran 1.0 % higher SM clocks under sw_power_cap; "
                    "in cycles: +1.80 [+1.20, +2.40]")
    assert clock_note("b", {"mean_sm_clock_mhz": 1961.0}, base, verdict, cycles) is None
    assert clock_note("b", None, base, verdict, cycles) is None  # no telemetry: nothing said


def test_host_bound_call_marked_and_a_drained_block_redone() -> None:
    # a: the device's work (20 ms) far above the host's (the reference's own ~1 ms): GPU-bound.
    # b: 20 ms of host work per call over 1 ms of device work: host-bound; its first block's
    # gate (from one warm-up call, capped at 50 ms) is short of the 4 x 19 ms the host needs,
    # so the queue drains, and the block is measured again with a gate from its own host time.
    cfg = RunConfig(shape=TINY, warmup=1, rounds=2, iterations=8, variants=[
        VariantSpec.parse("a=reference[device_us=20000]"),
        VariantSpec.parse("b=reference[host_us=20000,device_us=1000]")])
    report = Session(cfg).run()
    assert report.status == "complete", report.status_detail
    a, b = report.variants
    assert a.host_bound is False and b.host_bound is True
    assert a.timing.p50_s > 0.019 and b.timing.p50_s < 0.01  # GPU time: the device's work
    assert b.host_s > 0.019 and a.host_s < 0.01
    # back to back, each call costs the larger of the two
    assert a.back_to_back_s > 0.019 and b.back_to_back_s > 0.019
    assert len(b.host_times_s) == len(b.back_to_back_times_s) == 2  # one per round
    assert b.redone_blocks >= 1  # (kept drained after its redos: drained_blocks, not here)
    # the three times are of the call the user makes, in blocks of their own: the reference has
    # no public function, so its decomposition, unclocked, and the report says so
    assert a.call_gpu_s > 0.019 and b.call_gpu_s < 0.01
    assert "the decomposition (reference has no public function)" == b.timed_call
    assert b.back_to_back_s >= back_to_back_floor(b.host_s, b.call_gpu_s)
    # how near host-bound: b's host needs its GPU time many times over, a's a small share of it
    assert b.host_share > 2 and 0 < a.host_share < 0.5
    assert b.host_share == b.host_s / b.call_gpu_s
    assert check_report(report) == []
    md = to_markdown(report)
    assert "| host ms | call GPU ms | b2b ms | bound | redone blocks |" in md and "| HOST |" in md
    assert "| the decomposition (reference has no public function) |" in md
    from rich.console import Console

    from sagetui.cli.run import summary_table
    from sagetui.core.compare.runs import run_table

    compared = run_table([("A", report)])
    assert "A timed call (host, call GPU, b2b)" in [c.title for c in compared.columns]
    assert "A call GPU ms" in [c.title for c in compared.columns]
    assert "A host/GPU" in [c.title for c in compared.columns] and "| host/GPU |" in md

    out = Console(width=400, record=True)
    out.print(summary_table(report, width=400))
    caption = " ".join(out.export_text().split())
    assert caption.endswith("host, call GPU and b2b time the call the user makes: a, b the "
                            "decomposition (reference has no public function)")
    assert "host/GPU" in caption
    tampered = report.model_copy(update={"variants": [
        a.model_copy(update={"host_share": None}),
        b.model_copy(update={"host_bound": False, "back_to_back_s": 1.0, "host_share": 0.5})]})
    paths = {m.path for m in check_report(tampered)}
    assert paths == {"$.variants[1].host_bound", "$.variants[1].back_to_back_s",
                     "$.variants[1].host_share", "$.variants[0].host_share"}


def _edited(report: Report, name: str, **fields: object) -> Report:
    return report.model_copy(update={"variants": [
        v.model_copy(update=fields) if v.name == name else v for v in report.variants]})


def test_check_rejects_back_to_back_below_the_host_time_or_the_call_unnamed() -> None:
    """Back to back a call costs at least its host time and its GPU time: a report whose
    back-to-back times are edited (consistently, medians and blocks) below its host time, or
    to half its GPU time, is rejected; so is one whose host time no longer says which call it
    is of. A real run on the simulated device (host 20 ms over 1 ms of device work)."""
    cfg = RunConfig(shape=TINY, warmup=1, rounds=2, iterations=4, variants=[
        VariantSpec.parse("a=reference[device_us=20000]"),
        VariantSpec.parse("b=reference[host_us=20000,device_us=1000]")])
    report = Session(cfg).run()
    a, b = report.variants
    assert check_report(report) == []
    low = [x / 2 for x in b.host_times_s]  # half its host time, every block
    bad = _edited(report, "b", back_to_back_times_s=low, back_to_back_s=typical(low))
    assert [m.path for m in check_report(bad)] == ["$.variants[1].back_to_back_s"]
    half = [x / 2 for x in a.call_gpu_times_s]  # half its GPU time
    bad = _edited(report, "a", back_to_back_times_s=half, back_to_back_s=typical(half))
    assert [m.path for m in check_report(bad)] == ["$.variants[0].back_to_back_s"]
    # the noise is the rounds' own spread where wider than 10 %: host readings 29 % apart
    # (a host whose pace moved between rounds) admit a back-to-back median 21 % below the
    # host's; the same medians from readings that agree do not
    x = b.host_s
    for hosts, caught in (([x, 1.4 * x], []),
                          ([1.2 * x, 1.2 * x], ["$.variants[1].back_to_back_s"])):
        b2b = [0.95 * x, 0.95 * x]
        moved = _edited(report, "b", host_times_s=hosts, host_s=typical(hosts),
                        host_share=host_share(typical(hosts), b.call_gpu_s),
                        back_to_back_times_s=b2b, back_to_back_s=typical(b2b))
        assert [m.path for m in check_report(moved)] == caught, hosts
    # the GPU sets a's floor: its host's readings 75 % apart (a loaded host) admit no
    # back-to-back time a third below its GPU time, whose readings agree
    g, h = a.call_gpu_s, a.host_s
    hosts, b2b = [h, 4 * h], [0.67 * g, 0.67 * g]
    jittery = _edited(report, "a", host_times_s=hosts, host_s=typical(hosts),
                      host_share=host_share(typical(hosts), g), back_to_back_times_s=b2b,
                      back_to_back_s=typical(b2b))
    assert typical(hosts) < g and [m.path for m in check_report(jittery)] == \
        ["$.variants[0].back_to_back_s"]
    unnamed = _edited(report, "b", timed_call=None)
    assert [m.path for m in check_report(unnamed)] == ["$.variants[1].timed_call"]
    # an older runner's recording (an event stream replayed) has none of the call's fields:
    # its host time was the instrumented decomposition's, taken as recorded (its host share
    # over the phases' p50, as folding it now makes it)
    older = _edited(report, "b", timed_call=None, call_gpu_s=None, call_gpu_times_s=None,
                    back_to_back_times_s=low, back_to_back_s=typical(low),
                    host_share=host_share(b.host_s, b.timing.p50_s))
    assert check_report(older) == []
    # a report before schema 6 timed the instrumented decomposition: taken as recorded (it
    # holds none of the members schema 6 and 7 first wrote: check holds the version to them)
    gone = dict.fromkeys(("timed_call", "call_gpu_s", "call_gpu_times_s", "host_share"))
    old = _edited(report.model_copy(update={"schema_version": 5, "variants": [
        v.model_copy(update=gone) for v in report.variants or []]}), "b",
        back_to_back_times_s=low, back_to_back_s=typical(low))
    assert check_report(old) == []


def test_a_variants_first_call_is_measured_and_shown() -> None:
    """The first call of each variant's backend, synchronised (the device's 20 ms of work
    waited for, not only its launch), a fact of the runner (report/model.VariantFacts) that the
    registry (core/variant_facts.py) shows in the Markdown and `compare`; `check` takes it as
    recorded."""
    from sagetui.core.check.recorded import recorded_why
    from sagetui.core.compare.runs import run_table

    cfg = RunConfig(shape=TINY, warmup=2, rounds=2, iterations=3, variants=[
        VariantSpec.parse("a=reference[device_us=20000]"), VariantSpec.parse("b=reference")])
    report = Session(cfg).run()
    assert report.status == "complete", report.status_detail
    a, b = report.variants
    assert a.first_call_s > 0.019 and 0 < b.first_call_s < a.first_call_s
    assert check_report(report) == []
    assert recorded_why(report.model_dump(mode="json"), "$.variants[0].first_call_s")
    md = to_markdown(report)
    assert "| first call ms |" in md and f"| {a.first_call_s * 1e3:.3f} |" in md
    table = run_table([("A", report)])
    assert "A first call ms" in [c.title for c in table.columns]
    old = report.model_copy(update={"variants": [v.model_copy(update={"first_call_s": None})
                                                 for v in report.variants]})
    assert "first call" not in to_markdown(old)  # a report before it: no empty column


def h200_reports() -> tuple[Report, Report]:
    """The recorded H200 stream (tests/data/events)'s report, and the same with its sdpa
    variant's rounds moved to 2 % higher SM clocks under sw_power_cap."""
    from pathlib import Path

    from sagetui.core.event_record import read_events
    from sagetui.core.run.assemble import build_report
    from sagetui.core.run.fold import apply, new_model

    stream = Path(__file__).parent / "data" / "events" / "h200_sm90_sm89_sdpa.jsonl"
    m = new_model()
    for e in read_events(stream.read_text().splitlines()):
        apply(m, e)
    plain = build_report(m)
    for b in m.variants["sdpa"].blocks.values():
        b.telemetry["sm_clock_mhz"] = {k: x * 1.02 for k, x in b.telemetry["sm_clock_mhz"].items()}
        b.telemetry["throttle_reasons"] = ["sw_power_cap"]
    m.version += 1  # changed outside the fold: say so, as a fold does (figures.of's cache)
    return plain, build_report(m)


def test_a_verdict_names_its_clocks_on_a_recorded_h200_run() -> None:
    """Moved 2 % in its clocks, sdpa's verdict in cycles differs from its verdict in time by
    those 2 %, its verdict line says so, and `check` re-derives both; unmoved, the clocks are
    equal and nothing is said."""
    import io

    from rich.console import Console

    from sagetui.cli.run import summary_table

    plain, report = h200_reports()
    assert all(v.clocks.mean_sm_clock_mhz == 1980.0 and v.clocks.note is None
               for v in plain.variants)
    sdpa = report.variant("sdpa")
    time_est = sdpa.verdict.estimate_percent
    cycles_est = sdpa.clocks.cycles_verdict.estimate_percent
    assert (1 + cycles_est / 100) == pytest.approx((1 + time_est / 100) / 1.02)
    assert sdpa.clocks.note.startswith("sdpa ran 2.0 % higher SM clocks under sw_power_cap; "
                                       "in cycles: ")
    assert check_report(report) == []
    assert sdpa.clocks.note in to_markdown(report)
    printed = Console(file=io.StringIO(), width=400, color_system=None)
    printed.print(summary_table(report))  # its caption, wrapped to the table's width
    assert sdpa.clocks.note in " ".join(printed.file.getvalue().split())
    tampered = report.model_copy(update={"variants": [
        v.model_copy(update={"clocks": v.clocks.model_copy(update={"note": None})})
        if v.name == "sdpa" else v for v in report.variants]})
    assert [m.path for m in check_report(tampered)] == ["$.variants[2].clocks.note"]


def _point_variant(name: str, gpu_s: float, host_s: float, b2b: list[float]) -> dict:
    from sagetui.core.statistics.summary import summarize

    samples = [[gpu_s * (1 + 0.01 * r)] * 3 for r in range(len(b2b))]
    return {"name": name, "status": "ok", "timing": summarize([x for r in samples for x in r]),
            "samples": {"total": samples}, "host_times_s": [host_s] * len(b2b),
            "back_to_back_times_s": b2b, "host_s": host_s, "back_to_back_s": typical(b2b),
            "host_bound": host_bound(host_s, summarize(samples[0])["p50_s"])}


def test_a_workloads_totals_in_gpu_time_and_back_to_back_time() -> None:
    """Two calls: b is faster than a on the GPU (0.1 against 0.2 ms) but its host needs 0.3 ms
    a call, so back to back it is slower (0.3 against 0.2 ms): its totals say both, each with
    its verdict, and each call says which time bounds it."""
    from sagetui.core.blocks.sweep import SweepPoint
    from sagetui.core.blocks.workload import ReplayedCall, Workload
    from sagetui.core.workload import export
    from sagetui.core.workload.tally import totals

    calls = [ReplayedCall(index=i, signature="s", count=2, weight=1.0, file=f"{i}.safetensors",
                          point=i) for i in range(2)]
    points = [SweepPoint.model_validate({
        "index": i, "x": 64, "group": "g", "shape": TINY, "status": "ok", "ops": 1.0,
        "variants": [_point_variant("a", 2e-4, 5e-5, [2.0e-4, 2.02e-4, 1.99e-4]),
                     _point_variant("b", 1e-4, 3e-4, [3.0e-4, 3.03e-4, 2.98e-4])]})
        for i in range(2)]
    got = totals(calls, points, ["a", "b"], "a")
    a, b = got
    assert a.seconds == pytest.approx(2 * 2e-4, rel=0.02) and b.speedup_percent > 90
    assert b.back_to_back_seconds == pytest.approx(2 * 3e-4, rel=0.01)
    assert b.back_to_back_speedup_percent == pytest.approx((2 / 3 - 1) * 100, abs=1.5)
    assert b.back_to_back_ci_high_percent < 0  # slower back to back, beyond its interval
    wl = Workload(directory="d", manifest_sha256="0" * 64, calls_seen=2, calls=calls,
                  points=points, totals=got, variants={"a": "reference", "b": "reference"},
                  baseline="a", warmup=1, rounds=3, iterations=3)
    rows = export.total_rows(wl)
    assert rows[1][2].startswith("FASTER") and rows[1][4].startswith("SLOWER")
    assert export.total_columns(wl)[-2:] == export.BACK_TO_BACK_COLUMNS
    bound = export.call_columns(wl).index("bound")
    assert [r[bound] for r in export.call_rows(wl)] == ["GPU", "HOST", "GPU", "HOST"]


def test_a_redone_block_is_a_log_line() -> None:
    from sagetui.core import events as ev
    from sagetui.core.eventlog import log_line

    line = log_line(ev.BlockDone(variant="b", round=1, half=0, iterations=4, cancelled=False,
                                 redone=1))
    assert line is not None and line.text == (
        "variant b: round 2's block drained (the GPU waited for the host): measured again 1x "
        "with a longer gate")
    kept = log_line(ev.BlockDone(variant="b", round=1, half=0, iterations=4, cancelled=False,
                                 redone=2, drained=True))
    assert kept is not None and kept.severity == "warning" and "drained_blocks" in kept.text
    assert log_line(ev.BlockDone(variant="b", round=1, half=0, iterations=4,
                                 cancelled=False)) is None


def test_a_replay_whose_host_pace_moved_says_so() -> None:
    """The H100's 8-call replay (sample_results/, a real run of one shape 8 times): every
    variant's host time a call read 1.3-1.4 times its usual at calls 3-5, so its back-to-back
    totals follow the host's pace; with those calls' host times set to their usual (an edit in
    memory) the note goes, and a 1.2-fold spread is below PACE_MOVED."""
    from sagetui.core.host_time import PACE_MOVED, host_pace, pace_moved
    from sagetui.core.report.io import load_report
    from sagetui.core.workload import export

    samples = Path(__file__).resolve().parent.parent / "sample_results"
    from sagetui.tui.sweep_view import SweepView

    report = load_report(samples / "h100_workload_replay.json")
    wl = report.workload
    assert wl is not None
    note = next(n for n in export.notes(wl) if n.startswith("host pace"))
    view = SweepView.from_report(report)
    assert view is not None and note in view.totals  # the console's workload tab says it too
    assert "1.6-fold" in note and "call 3, call 4, call 5)" in note
    paces = host_pace([{v.name: v.host_s for v in p.variants} for p in wl.points])
    spread, slow = pace_moved(paces)
    assert spread == pytest.approx(max(paces) / min(paces)) and slow == [3, 4, 5]
    steady = [p.model_copy(update={"variants": [
        v.model_copy(update={"host_s": v.host_s / paces[i]}) for v in p.variants]})
        for i, p in enumerate(wl.points)]
    assert not any(n.startswith("host pace")
                   for n in export.notes(wl.model_copy(update={"points": steady})))
    no_b2b = wl.model_copy(update={"totals": [t.model_copy(update={
        "back_to_back_seconds": None}) for t in wl.totals]})
    assert not any(n.startswith("host pace") for n in export.notes(no_b2b))  # nothing to follow
    assert pace_moved([1.0, 1.2, None]) is None and pace_moved([1.0, PACE_MOVED]) is not None
