"""`sagetui view` of a workload report at 80x24, the smallest terminal the console
is made for: the Overview lists the variants and their totals over the workload; the Sweep tab
plots each call at its own x (its index among the program's calls, where every call was drawn
at one x, its q_len, before), its table says each call's causal, GQA and kv_len, and scrolls to
the last call. The report is a real replay of a real capture (conftest's replayed_workload)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TabbedContent

from sagetui.core.report.io import load_report
from sagetui.core.workload import export
from sagetui.tui.widgets.phase_table import PhaseTable
from sagetui.tui.widgets.sweep_plot import SweepPlot
from sagetui.tui.widgets.sweep_table import WORKLOAD_COLUMNS, SweepTable
from sagetui.tui.widgets.variant_table import VariantTable

from ..conftest import REPLAYED_CALLS
from .conftest import aio, screen_text, settle, viewer

SIZE = (80, 24)
# wide enough for the tables' columns side by side (at 80 they fold: test_layout_tmux)
WIDE = (200, 40)


def _rows(table) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


@aio
async def test_the_overview_lists_the_variants_and_their_totals(replayed_workload: Path) -> None:
    report = load_report(replayed_workload)
    assert report.workload is not None
    totals = {row[0]: row[1:] for row in export.total_rows(report.workload)}
    app = viewer(replayed_workload)
    async with app.run_test(size=WIDE) as pilot:
        app.action_show_tab("overview")
        await settle(pilot, app)
        rows = _rows(app.query_one(VariantTable))
        by_name = {r[2]: r for r in rows}
        assert list(by_name) == ["ref", "slow"]  # not "(none)"
        calls = f"{REPLAYED_CALLS} of {REPLAYED_CALLS}"
        assert by_name["ref"][3:] == ["baseline", "ok", calls, totals["ref"][0], ""]
        assert by_name["slow"][3:] == ["", "ok", calls, *totals["slow"][:2]]  # in GPU time
        text = screen_text(app)
        assert "(none)" not in text and "no phase timings yet" not in text
        assert "total ms" in text and totals["slow"][0] in text
        assert str(app.query_one(PhaseTable).get_row_at(0)[0]) == \
            "each call's timings: the Sweep tab (8)"


@aio
async def test_the_sweep_tab_plots_calls_by_index_lists_their_shapes_and_scrolls(
        replayed_workload: Path) -> None:
    report = load_report(replayed_workload)
    assert report.workload is not None
    calls = {c.point: c for c in report.workload.calls if c.point is not None}
    app = viewer(replayed_workload)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot, app)
        assert app.query_one(TabbedContent).active == "sweep"
        view = app.sweeps.sweep_of(app.data)
        assert view is not None and view.workload
        # each call at its own x: its index among the program's calls (not every call at 16)
        assert {name: [x for x, _ in line] for name, line in view.call_series().items()} == \
            {name: list(range(REPLAYED_CALLS)) for name in ("ref", "slow")}
        plot = app.query_one(SweepPlot)
        assert plot.points == 2 * REPLAYED_CALLS and plot.title_text == "p50 ms per call"
        table = app.query_one(SweepTable)
        assert tuple(str(c.label) for c in table.columns.values()) == WORKLOAD_COLUMNS
        rows = _rows(table)
        assert len(rows) == 2 * REPLAYED_CALLS
        first = next(c for c in calls.values() if c.index == 0)
        assert first.shape is not None
        # call, variant, causal, GQA, q_len, kv_len: the call's own facts
        for row in rows:
            call = next(c for c in calls.values() if row[0] == f"call {c.index} {c.module}")
            shape = call.shape
            assert shape is not None
            gqa = "no" if shape.n_kv_heads == shape.heads else \
                f"{shape.heads}/{shape.n_kv_heads}"
            assert row[2:6] == ["yes" if shape.causal else "no", gqa, str(shape.q_len),
                                str(shape.n_kv_len)]
        assert {r[3] for r in rows} == {"no", "4/2"} and {r[2] for r in rows} == {"yes", "no"}
        assert [r[0] for r in rows[::2]] == [f"call {c.index} {c.module}" for c in
                                             sorted(calls.values(), key=lambda c: c.index)]
        last = f"call {REPLAYED_CALLS - 1} blocks.3.attn"
    app = viewer(replayed_workload)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        table = app.query_one(SweepTable)
        text = screen_text(app)
        assert "kv_len" in text and "accuracy" in text  # every header, folded into bands
        assert "call 0 blocks.0.attn" in text and last not in text  # below the fold
        await pilot.click("#sweep-table")  # focus it, as a user would
        await pilot.press("pagedown")
        await settle(pilot, app)
        assert table.has_focus and table.scroll_y > 0
        await pilot.press("ctrl+home")
        await settle(pilot, app)
        assert last not in screen_text(app)
        await pilot.press("ctrl+end")
        await settle(pilot, app)
        assert last in screen_text(app)


@aio
async def test_a_sweep_reports_overview_lists_its_variants() -> None:
    """The same for a sweep report (no totals: its points are of many shapes)."""
    from .test_sweep_tab import H200_SWEEP

    report = load_report(H200_SWEEP)
    assert report.sweep is not None
    app = viewer(H200_SWEEP)
    async with app.run_test(size=SIZE) as pilot:
        app.action_show_tab("overview")
        await settle(pilot, app)
        rows = _rows(app.query_one(VariantTable))
        n = len(report.sweep.points)
        assert [r[2] for r in rows] == list(report.sweep.variants)
        assert all(r[4:] == ["ok", f"{n} of {n}"] for r in rows)
        assert "each point's timings: the Sweep tab (8)" in screen_text(app)
