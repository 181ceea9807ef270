"""One run, one model, in the console (docs/architecture.md, "The run model"): a recorded event
stream of a real run (tests/data/events/) fed to the console as its session would feed it, and the
run's report reopened with `sagetui view`: every number the panels show (the variant, verdict and
phase tables, each variant's scheduler grid) is the report's, formatted by the one formatter of its
kind (core/format.py), live and reopened alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sagetui.core import events as ev
from sagetui.core import format as fmt
from sagetui.core import variant_facts
from sagetui.core.export.report import sol_cells
from sagetui.core.phases import PARENTS
from sagetui.core.report.io import save_report
from sagetui.core.report.model import Report
from sagetui.tui.app import SageTUI
from sagetui.tui.widgets.phase_table import PhaseTable
from sagetui.tui.widgets.scheduler_panel import FACTS, SchedulerFacts, _fact
from sagetui.tui.widgets.variant_table import VariantTable
from sagetui.tui.widgets.verdict_table import VerdictTable

from ..test_parity import STREAMS, replay
from .conftest import THEME, aio, settle, viewer


def _rows(table: Any) -> list[list[str]]:
    return [[str(c).strip() for c in table.get_row_at(i)] for i in range(table.row_count)]


async def panel_cells(pilot: Any, app: SageTUI) -> dict[str, Any]:
    """What the panels show, by variant."""
    out: dict[str, Any] = {}
    variants = {r[2].split(" [")[0]: r[4:] for r in _rows(app.query_one(VariantTable))}
    verdicts = {r[0]: r[1:] for r in _rows(app.query_one(VerdictTable))}
    for name in app.data.variants:
        app.selected = name
        app.sync_panels(force=True)
        await settle(pilot, app)
        facts: dict[str, str] = {}
        for row in _rows(app.query_one(SchedulerFacts)):
            facts[row[0]], facts[row[2]] = row[1], row[3]
        facts.pop("", None)
        out[name] = {"variant": variants[name], "verdict": verdicts[name],
                     "phases": _rows(app.query_one(PhaseTable)), "grid": facts}
    return out


def report_cells(report: Report) -> dict[str, Any]:
    """The same cells, from the report's numbers."""
    out: dict[str, Any] = {}
    for v in report.variants or []:
        base = v.name == report.baseline
        acc = fmt.accuracy(v.accuracy.model_dump() if v.accuracy else None)
        variant = [v.status or "ok", fmt.ms(v.timing.p50_s if v.timing else None),
                   "" if base else fmt.pct(v.speedup_vs_baseline_percent, 3),
                   fmt.drift(v.drift.model_dump() if v.drift else None)[0]]
        # host time's cells (the H200 stream's blocks timed the host) before the accuracy's
        variant += variant_facts.cells(v, [f for f in variant_facts.shown_in(variant_facts.TABLE)
                                           if f.group == variant_facts.HOST]) \
            if variant_facts.measured(report.variants) else []
        variant += [acc["cos"], acc["l1"]] if any(x.accuracy for x in report.variants or []) \
            else []
        vd = v.verdict
        n = str(len(v.rounds or []) or "-")
        verdict = (["baseline", "-", "-", "-", n] if base else
                   [vd.state, fmt.pct(vd.estimate_percent),
                    fmt.ci(vd.ci_low_percent, vd.ci_high_percent),
                    fmt.pct(vd.threshold_percent, sign=False), str(vd.rounds)] if vd else
                   ["-", "-", "-", "-", n])
        phases = []
        pt = v.phase_timings or {}
        parents = {PARENTS.get(p) for p in pt}
        leaves = sum(s.p50_s for p, s in pt.items() if p not in parents)
        intervals = v.intervals or {}
        bw = (v.sol.phases or {}) if v.sol else {}  # bytes, GB/s, % copy where modelled

        def traffic(name: str, bw: dict[str, Any] = bw) -> list[str]:
            if not bw:
                return []
            b = bw.get(name)
            if b is None:
                return ["", "", ""]
            return [fmt.size(b.bytes_read + b.bytes_written),
                    "" if b.gbps is None else fmt.gbps(b.gbps),
                    "" if b.share_of_copy is None else f"{fmt.fraction_pct(b.share_of_copy, 1)} %"]

        for p, s in pt.items():  # a parent's share is its children's together
            share = f"{100 * s.p50_s / leaves:.1f} %"
            phases.append([p, fmt.ms(s.p50_s), fmt.ms(s.p90_s), share,
                           fmt.half_width(intervals[p]) if p in intervals else "",
                           str(s.count), *traffic(p)])
        if v.timing:
            phases.append(["total (one call)", fmt.ms(v.timing.p50_s),
                           fmt.ms(v.timing.p90_s), "",
                           fmt.half_width(intervals["total"]) if "total" in intervals else "",
                           str(v.timing.count), *traffic("total")])
        grid = v.scheduler.model_dump(exclude_none=True) if v.scheduler else {}
        facts = {label: _fact(key, grid[key]) for key, label in FACTS if key in grid}
        for key, value in (v.achieved or {}).items():
            if value is not None:
                facts[key.replace("_", " ")] = (f"{100 * value:.2f} %" if "share" in key
                                                else f"{value:.3f}")
        if v.peak_memory_bytes is not None:
            facts["call's peak memory"] = f"{v.peak_memory_bytes / 2**20:,.1f} MiB"
        if v.sol is not None and v.sol.tops is not None:  # the export's cells: one renderer
            facts.update(sol_cells(v.sol))
        out[v.name] = {"variant": variant, "verdict": verdict, "phases": phases,
                       "grid": facts}
    return out


@aio
@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
async def test_every_number_the_panels_show_is_the_reports(path: Path, tmp_path: Path) -> None:
    events, finished = replay(path)
    start = events[0]
    assert isinstance(start, ev.RunStarted)
    expected = report_cells(finished.report)
    if path.stem.startswith("h200"):  # a GPU run: every variant's memory fact is on show
        assert all("call's peak memory" in cells["grid"] for cells in expected.values())
    app = SageTUI(config=start.config, theme_name=THEME, recovery_path=tmp_path / "r.json",
                  export_dir=tmp_path)
    # 240: the phase table beside the plots keeps its columns side by side (narrower, they fold)
    async with app.run_test(size=(240, 60)) as pilot:
        await settle(pilot, app)
        for e in events:  # as the session's worker thread hands them over
            app.run_control.on_event(e)
        await settle(pilot, app)
        assert app.data.status == finished.status
        live = await panel_cells(pilot, app)
    assert live == expected
    saved = viewer(save_report(finished.report, tmp_path / "run.json"))
    async with saved.run_test(size=(240, 60)) as pilot:
        await settle(pilot, saved)
        reopened = await panel_cells(pilot, saved)
    assert reopened == expected
