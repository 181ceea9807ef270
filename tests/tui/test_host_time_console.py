"""The console shows what the user's model pays and the clocks a verdict names: a saved H200
report (tests/data/events) whose sdpa rounds ran 2 % higher SM clocks, and whose sm90 calls are
host-bound, opened with `sagetui view`: the variant table's host columns mark sm90 HOST, and
the Verdicts panel says sdpa's clocks differed."""

from __future__ import annotations

from pathlib import Path

from sagetui.core.report.io import save_report
from sagetui.tui.widgets.variant_table import VariantTable
from sagetui.tui.widgets.verdict_table import VerdictTable

from ..test_host_time import h200_reports
from .conftest import aio, settle, viewer


@aio
async def test_the_console_marks_host_bound_calls_and_names_the_clocks(tmp_path: Path) -> None:
    _, report = h200_reports()
    sm90 = report.variant("sm90")
    host = sm90.timing.p50_s * 1.5  # the host's time to issue it: above its GPU time
    marked = sm90.model_copy(update={"host_times_s": [host] * 3, "host_s": host,
                                     "back_to_back_times_s": [host] * 3, "back_to_back_s": host,
                                     "host_bound": True})
    report = report.model_copy(update={"variants": [
        marked if v.name == "sm90" else v for v in report.variants]})
    app = viewer(save_report(report, tmp_path / "run.json"))
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        table = app.query_one(VariantTable)
        rows = {str(table.get_row_at(i)[2]).split(" [")[0]: [str(c) for c in table.get_row_at(i)]
                for i in range(table.row_count)}
        assert "HOST" in rows["sm90"] and "GPU" not in rows["sm90"]
        assert all("HOST" not in rows[n] for n in ("sm89", "sdpa"))
        subtitle = str(app.query_one(VerdictTable).border_subtitle)
        assert "sdpa ran 2.0 % higher SM clocks under sw_power_cap; in cycles:" in subtitle
