"""`sagetui view`: saved reports in the console's panels, the compare view, help, themes,
variant toggles and baseline on a saved report, and a bad file that must not crash it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from textual.widgets import TabbedContent

from sagetui.tui.help_screen import HelpScreen
from sagetui.tui.modals import PathPromptScreen
from sagetui.tui.widgets.compare_table import CompareTable
from sagetui.tui.widgets.phase_table import PhaseTable
from sagetui.tui.widgets.phase_view import PhaseView
from sagetui.tui.widgets.plots import IterationPlot, RoundPlot
from sagetui.tui.widgets.scheduler_panel import SchedulerFacts, TailTable

from .conftest import (
    SYNTHETIC,
    THEME,
    TWO_BUILDS,
    VIDEO_CALL_PHASES,
    aio,
    palette,
    screen_text,
    settle,
    viewer,
    wait_for,
)


@aio
async def test_phase_breakdown_000_shows_phases_scheduler_and_tail_study() -> None:
    app = viewer(VIDEO_CALL_PHASES)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        text = screen_text(app)
        assert "phase breakdown" in text
        assert "k_mean_and_smoothing_preparation" in text and "237.089" in text  # mainloop p50
        assert "  q_int8_quantization" in text  # a child, indented under its parent
        assert "92.0 %" in text  # the main loop's share
        await pilot.press("5")
        await settle(pilot, app)
        text = screen_text(app)
        assert "16,576" in text and "591" in text  # grid CTAs, K iterations per CTA
        assert "equal" in text and "9190064.0" in text
        assert app.query_one(TailTable).row_count == 6
        assert "37761" in text and "99.66 %" in text
        await pilot.press("4")
        await settle(pilot, app)
        view = app.query_one(PhaseView)  # 000 has no variants: the report's phases
        assert view.row_count == 8 and str(view.get_row_at(0)[1]) == "report"


@aio
async def test_variant_comparison_001_shows_rounds_drift_and_variants() -> None:
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        text = screen_text(app)
        assert "baseline" in text and "interleave-softmax" in text
        assert "243.919" in text and "-0.016" in text  # p50 and the two-build report's own speedup
        assert "+0.64 DRIFT" in text  # drift computed from the round p50s, flagged
        # the two-build report's own verdict example
        assert "SAME*" in text and "[-0.12, -0.04]" in text
        assert "5 rounds" in text
        await pilot.press("2")
        await settle(pilot, app)
        rounds = app.query_one("#rounds-plot", RoundPlot)
        assert rounds.points == 10 and "drift flagged" in rounds.title_text
        await pilot.press("3")
        await settle(pilot, app)
        it = app.query_one("#iterations-plot", IterationPlot)
        assert "No raw samples" in it.title_text and it.points == 20


@aio
async def test_compare_view_puts_reports_side_by_side() -> None:
    app = viewer(VIDEO_CALL_PHASES, TWO_BUILDS, SYNTHETIC)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert app.query_one(TabbedContent).active == "compare"
        table = app.query_one(CompareTable)
        assert table.shown is not None
        header = [c.title for c in table.shown.columns]
        rows = [dict(zip(header, line.cells, strict=True)) for line in table.shown.lines]
        mainloop = next(r for r in rows if r["variant"] == "(phases)"
                        and r["phase"] == "mainloop")
        assert mainloop["A p50 ms"] == "237.089"  # A: 000's main loop
        assert mainloop["C p50 ms"] == "4.229"  # C: the synthetic baseline's, on the same row
        fast = next(r for r in rows if r["variant"] == "fast" and r["phase"] == "total")
        assert fast["C p50 speedup %"] == "+6.918"
        assert fast["C verdict: paired % [95% CI]"].startswith("FASTER")
        # no report here kept accuracy: no cosine columns to squeeze the others
        assert not any("cos" in title for title in header)
        base = next(r for r in rows if r["variant"] == "baseline" and r["phase"] == "total")
        assert base["B p50 ms"] == "243.919"
        assert "A = 000_a7d5760a8f7ea9fe.json" in " ".join(screen_text(app).split())


@aio
async def test_next_source_switches_every_panel() -> None:
    app = viewer(TWO_BUILDS, SYNTHETIC)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("1", "n")
        await settle(pilot, app)
        assert app.data.label == "synthetic_report.json"
        assert "NVIDIA H200" in screen_text(app)
        assert app.query_one(PhaseTable).row_count == 9  # 8 phases and the total


@aio
async def test_help_screen_lists_every_key() -> None:
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for needle in ("Run / stop", "Export CSV samples", "Set baseline", "Next theme"):
            assert needle in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


@aio
async def test_theme_switch_by_key_and_by_option() -> None:
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.theme == THEME
        await pilot.press("T")
        await settle(pilot, app)
        assert app.theme != THEME and app.theme.startswith("sage-")
        assert app.context().series[0] != "#56B4E9" or app.theme == "sage-dark"
    light = viewer(TWO_BUILDS, theme_name="sage-light")
    async with light.run_test(size=(100, 30)) as pilot:
        await settle(pilot, light)
        assert light.theme == "sage-light" and light.context().series[0] == "#0072B2"
    unknown = viewer(TWO_BUILDS, theme_name="no-such-theme")
    async with unknown.run_test(size=(100, 30)) as pilot:
        await settle(pilot, unknown)
        assert unknown.theme in ("sage-dark", "sage-256")  # a warning, not a crash


@aio
async def test_command_palette_offers_the_actions() -> None:
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await palette(pilot, app, "scheduler")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.query_one(TabbedContent).active == "scheduler",
                       what="the Scheduler tab from the palette")
        assert app.query_one(SchedulerFacts).row_count > 0


@aio
async def test_toggle_and_baseline_on_a_saved_report() -> None:
    app = viewer(SYNTHETIC)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        data = app.data
        await pilot.press("v")  # select "fast"
        assert app.selected == "fast"
        await pilot.press("t")
        assert not data.is_enabled("fast")
        await settle(pilot, app)
        assert app.query_one("#overview-rounds", RoundPlot).points == 6  # base only
        await pilot.press("t", "b")
        await settle(pilot, app)
        assert data.baseline == "fast"
        base = data.variants["base"]
        assert base.verdict is not None and base.verdict["state"] == "SLOWER"
        assert base.verdict_computed and base.speedup_percent is not None
        assert base.speedup_percent < -5


@aio
async def test_opening_a_malformed_report_shows_the_error_and_keeps_going(
        tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    data = json.loads(TWO_BUILDS.read_text())
    data["variants"][0]["timing"]["p50_s"] = "fast"
    bad.write_text(json.dumps(data))
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, PathPromptScreen)
        prompt = app.screen.query_one("Input")
        prompt.value = str(bad)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await pilot.pause()
        assert len(app.sources) == 1 and app.is_running
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors and "$.variants[0].timing.p50_s" in errors[-1].message
        await pilot.press("o")
        await pilot.pause()
        app.screen.query_one("Input").value = str(tmp_path / "missing.json")  # type: ignore
        await pilot.press("enter")
        await pilot.pause()
        assert "no such file" in [n for n in app._notifications][-1].message
        await pilot.press("o")
        await pilot.pause()
        app.screen.query_one("Input").value = str(SYNTHETIC)  # type: ignore
        await pilot.press("enter")
        await settle(pilot, app)
        assert len(app.sources) == 2 and app.data.label == "synthetic_report.json"


@aio
async def test_names_from_a_report_are_shown_as_written_never_as_markup(tmp_path: Path) -> None:
    data = json.loads(SYNTHETIC.read_text())
    odd = {"base": "[/x]", "fast": "[link=file:///etc/passwd]f[/link]", "broken": "\x1b[2Jb"}
    for v in data["variants"]:
        v["name"] = odd[v["name"]]
    data["baseline"] = odd[data["baseline"]]
    data["samples"] = {odd[k]: v for k, v in data["samples"].items()}
    for e in data["schedule"]:
        e["variant"] = odd[e["variant"]]
    for f in data["faults"]:
        f["variant"] = odd[f["variant"]]
    path = tmp_path / "[odd].json"
    path.write_text(json.dumps(data))
    app = viewer(path, export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        for tab in "1234567":
            await pilot.press(tab)
            await settle(pilot, app)
        await pilot.press("1")
        await settle(pilot, app)
        text = screen_text(app)
        assert "[/x]" in text and "[link=file:///etc/passwd]f[/link]" in text
        assert "Phases · [/x]" in text
        for _ in range(2):  # the second time asks about overwriting "[odd]-sagetui.md"
            await pilot.press("m")
            await pilot.pause()
            await pilot.press("enter")
            await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert app.is_running
        assert "[/x]" in (tmp_path / "[odd]-sagetui.md").read_text()


H200_KERNELS = VIDEO_CALL_PHASES.parent / "h200_kernels.json"
H200_PROFILE = VIDEO_CALL_PHASES.parent / "h200_profile_sm90_reference_shape.json"


def _facts(app) -> dict[str, str]:  # type: ignore[no-untyped-def]
    table = app.query_one(SchedulerFacts)
    out = {}
    for i in range(table.row_count):
        row = [str(c) for c in table.get_row_at(i)]
        out[row[0]], out[row[2]] = row[1], row[3]
    return out


@aio
async def test_the_scheduler_tab_shows_the_selected_variants_own_grid_and_throughput() -> None:
    """A report of several kernels showed the first variant's (sm80's) grid and
    shared memory beside the baseline's (sm90's) TOPS, for every variant. Each variant shows
    its own now: its kernel's tiles, and its own achieved TOPS; SDPA has no such grid."""
    app = viewer(H200_KERNELS)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        for name, kernel, cta_q, smem in (("sm90", "sm90", "64", "40,960"),
                                          ("sm80-fp16+fp32", "sm80-inst-buf", "128", "40,960"),
                                          ("sm89", "sm89", "128", "32,768")):
            app.selected = name
            app.sync_panels(force=True)
            await settle(pilot, app)
            facts = _facts(app)
            assert facts["kernel"] == kernel and facts["CTA_Q"] == cta_q, (name, facts)
            assert facts["shared memory B"] == smem, (name, facts)
            tops = app.data.variants[name].recorded.achieved["call_tops"]
            assert facts["call tops"] == f"{tops:.3f}"
            assert f"Scheduler grid · {name}" in screen_text(app)
        app.selected = "cudnn"
        app.sync_panels(force=True)
        await settle(pilot, app)
        assert "kernel" not in _facts(app) and "CTA_Q" not in _facts(app)


@aio
async def test_a_profile_only_report_opens_where_its_counters_are() -> None:
    """A report of `sagetui profile` alone opened on an empty Overview, its counters
    in a box titled "Correctness"."""
    app = viewer(H200_PROFILE)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert app.query_one(TabbedContent).active == "scheduler"
        text = screen_text(app)
        assert "Inside the main loop (Nsight Compute)" in text and "Correctness" not in text
        assert "online_softmax" in text  # sm90's phases, from its counters


@aio
async def test_the_verdict_panel_title_states_the_rule_whole_at_80_columns() -> None:
    """Once, "Verdicts vs baseline · SAME ±1.00 % from default" read like a verdict. The
    title states the rule and where its threshold came from, whole at 80 columns; the `*`
    note moves under the table."""
    for size in ((80, 24), (160, 48)):
        app = viewer(TWO_BUILDS)
        async with app.run_test(size=size) as pilot:
            await settle(pilot, app)
            text = screen_text(app)
            assert "Verdicts: SAME if the 95 % CI is within ±1.00 % (default threshold)" in text
            assert "SAME ±1.00 % from default" not in text
            table = app.query_one("#verdicts")
            assert str(table.border_subtitle) == "*: computed from the report's round p50s"
    app = viewer(SYNTHETIC)  # a report that recorded its threshold and where it came from
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert "SAME if the 95 % CI is within ±1.00 % (default threshold)" in screen_text(app)
    older = json.loads(SYNTHETIC.read_text())  # a report that predates threshold_source
    older.pop("threshold")
    for v in older["variants"]:
        if v.get("verdict"):
            v["verdict"].pop("threshold_source")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "older.json"
        path.write_text(json.dumps(older))
        app = viewer(path)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, app)
            assert "SAME if the 95 % CI is within ±1.00 % (the report's threshold)" in \
                screen_text(app)
