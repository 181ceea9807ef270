"""Comparing reports: the Compare tab names the files, matches rows of differently named
variants (sm89 vs sm90) and says how, and uses one sign convention; `sagetui compare` shows the
same rows with a delta column and the verdict the console derives (the two-build report: SAME*)."""

from __future__ import annotations

import io

from rich.console import Console
from textual.widgets import Static

from sagetui.cli.reports import compare_table, load_all
from sagetui.core.report.io import load_report
from sagetui.tui.widgets.compare_table import CompareTable

from .conftest import ROOT, TWO_BUILDS, aio, screen_text, settle, viewer

SM89 = ROOT / "sample_results" / "h200_sm89_reference_shape.json"
SM90 = ROOT / "sample_results" / "h200_sm90_reference_shape.json"


def _rows(table: CompareTable) -> list[list[str]]:
    assert table.shown is not None
    return [line.cells for line in table.shown.lines]


def _header(table: CompareTable) -> list[str]:
    assert table.shown is not None
    return [c.title for c in table.shown.columns]


@aio
async def test_compare_tab_names_files_matches_sm89_with_sm90_and_states_the_sign() -> None:
    app = viewer(SM89, SM90)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, app)
        table = app.query_one(CompareTable)
        title = " ".join(screen_text(app).split())  # the legend wraps at 200 columns
        assert SM89.name in title and SM90.name in title  # which file is A, which B
        assert "A = " + SM89.name in title
        header = _header(table)
        assert "B faster %" in header  # one convention, said in the header ...
        assert "+ = faster" in title  # ... and what its sign means
        totals = [r for r in _rows(table) if r[1] == "total"]
        assert len(totals) == 1, totals  # sm89 and sm90 on one row
        row = dict(zip(header, totals[0], strict=True))
        assert "sage2-sm89" in row["variant"] and "sage2-sm90" in row["variant"]
        assert row["matched"] == "baseline"
        # 130.554 ms vs 51.577 ms: B is faster, so positive, as "speedup %" is
        assert row["B faster %"] == "+153.13"


@aio
async def test_compare_tab_matches_same_names_by_name() -> None:
    app = viewer(TWO_BUILDS, TWO_BUILDS)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, app)
        table = app.query_one(CompareTable)
        header = _header(table)
        totals = [dict(zip(header, r, strict=True)) for r in _rows(table) if r[1] == "total"]
        assert {r["matched"] for r in totals} == {"name"} and len(totals) == 2
        assert all(r["B faster %"] == "+0.00" for r in totals)


def _cli(*paths) -> str:
    out = io.StringIO()
    # wide enough for the host-time columns the H200 reports now have, headers unwrapped
    Console(file=out, width=320, color_system=None).print(
        compare_table(load_all([str(p) for p in paths]), 320))
    return out.getvalue()


def test_cli_compare_has_the_delta_column_and_the_derived_verdict() -> None:
    text = _cli(SM89, SM90)
    assert "B faster %" in text and "+153.13" in text
    assert f"A = {SM89.name}" in text and "+ = faster" in text
    one = _cli(TWO_BUILDS)
    line = next(x for x in one.splitlines() if "interleave-softmax" in x and "total" in x)
    assert "SAME*" in line and "[-0.12, -0.04]" in line


@aio
async def test_compare_tab_warns_of_what_sagetui_compare_refuses() -> None:
    """Another shape (and a sweep beside a run) is said above the table; the console shows
    what it can rather than refusing."""
    cpu = ROOT / "sample_results" / "cpu_reference_default.json"
    other = ROOT / "sample_results" / "cpu_reference_variants.json"
    app = viewer(cpu, other)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, app)
        hint = str(app.query_one("#compare-hint", Static).render())
        assert "Not comparable as they are" in hint
        assert "shape 1x1024x6x128 vs 1x512x4x128" in hint
        assert app.query_one(CompareTable).row_count > 0
    app = viewer(SM89, ROOT / "sample_results" / "sweep_cpu_reference.json")
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, app)
        hint = str(app.query_one("#compare-hint", Static).render())
        assert "is a run report and B (sweep_cpu_reference.json) a sweep report" in hint
        assert app.query_one(CompareTable).row_count == 0


@aio
async def test_compare_tab_lines_up_two_sweeps_point_by_point() -> None:
    sweep = ROOT / "sample_results" / "sweep_cpu_reference.json"
    app = viewer(sweep, sweep)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, app)
        table = app.query_one(CompareTable)
        header = _header(table)
        assert header[:3] == ["point", "variant", "matched"] and "B kernel TOPS" in header
        points = load_report(sweep).sweep.points  # type: ignore[union-attr]
        assert table.row_count == sum(len(p.variants) for p in points)
        rows = [dict(zip(header, r, strict=True)) for r in _rows(table)]
        assert {r["B faster %"] for r in rows} == {"+0.00"}
