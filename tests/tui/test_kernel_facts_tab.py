"""The Scheduler tab's kernel facts (docs/architecture.md, "Kernel facts"): the variants side by
side, a fact they do not share marked; hidden for a report without them."""

from __future__ import annotations

import json
from pathlib import Path

from sagetui.tui.widgets.scheduler_panel import KernelFactsTable

from ..test_kernel_facts import _facts, _report_with_facts
from .conftest import TWO_BUILDS, aio, screen_text, settle, viewer


async def scheduler_tab(pilot) -> None:
    await settle(pilot, pilot.app)
    await pilot.press("5")
    await settle(pilot, pilot.app)


@aio
async def test_the_variants_facts_side_by_side_with_the_differences_marked(tmp_path: Path):
    data = _report_with_facts(_facts(168), _facts(128, local=16))
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    names = [v["name"] for v in data["variants"]]
    app = viewer(path)
    async with app.run_test(size=(200, 60)) as pilot:
        await scheduler_tab(pilot)
        table = app.query_one(KernelFactsTable)
        assert table.display
        marks = {table.get_row(key)[1].plain: table.get_row(key)[0].plain
                 for key in table.rows}
        assert marks["registers / thread"] == "≠" and marks["CTAs / SM"] == "≠"
        assert marks["threads / CTA"] == "" and marks["dynamic shared B / CTA"] == ""
        registers = table.get_row("registers")
        assert [c.plain for c in registers[2:4]] == ["168", "128"]
        assert all("bold" in str(c.style) for c in registers[2:4])
        text = screen_text(app)
        assert "Kernel facts" in text and names[0] in text and names[1] in text
        assert "facts differ" in text


@aio
async def test_hidden_for_a_report_without_kernel_facts():
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await scheduler_tab(pilot)
        assert not app.query_one(KernelFactsTable).display
        assert "Kernel facts" not in screen_text(app)
