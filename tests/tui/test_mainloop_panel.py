"""The "inside the main loop" panel from a report's profiles (built from the recorded toy
fixtures): stacked bar, shares, change against the baseline, hot lines."""

from __future__ import annotations

from sagetui.core.profile.summary import to_profile
from sagetui.tui.widgets.mainloop_panel import BAR_WIDTH, PHASE_COLOURS, bar, mainloop_text

from ..test_profile_toy import run


def test_panel_shows_each_variant_bar_table_and_change():
    a = to_profile(run("toy_attention"), variant="base", family="toy")
    b = to_profile(run("toy_attention_shifted"), variant="moved", family="toy")
    assert len(bar(a).plain) == BAR_WIDTH
    text = mainloop_text([a, b], baseline="base")
    plain = text.plain
    assert "inside the main loop" in plain and "base" in plain and "moved" in plain
    pv = a.phases["pv_accumulation"]
    assert f"{100 * pv.share:5.1f} ± {100 * pv.share_error:.1f} %" in plain
    d = b.phases["pv_accumulation"].share - pv.share
    assert f"{100 * d:+.1f} pt vs base" in plain
    assert f"toy_attention.cu:{a.hot_lines[0].line}" in plain
    assert {s.style for s in bar(a).spans} <= set(PHASE_COLOURS.values())


def test_scheduler_panel_shows_measured_shares_instead_of_the_note():
    from sagetui.core.report.model import Report
    from sagetui.tui.source import saved_source
    from sagetui.tui.widgets.scheduler_panel import decomposition_text

    prof = to_profile(run("toy_attention"), variant="toy", family="toy")
    data = saved_source(Report(schema_version=2, mainloop_profiles=[prof],
                                      fused_mainloop_phases={"int8_qk": "fused"}), "r")
    plain = decomposition_text(data).plain
    assert "inside the main loop" in plain and "fused inside the main loop" not in plain


def test_the_compare_view_puts_two_reports_profiles_side_by_side(tmp_path):
    """Two saved reports with profiles (the same toy build, and its line-shifted rebuild) in
    the Compare tab: each variant named by its report's letter, B's shares against A's."""
    import asyncio

    from sagetui.core.report.io import save_report
    from sagetui.core.report.model import Report
    from sagetui.tui.app import SageTUI

    from .conftest import THEME, screen_text, settle

    paths = []
    for name in ("toy_attention", "toy_attention_shifted"):
        prof = to_profile(run(name), variant="toy", family="toy")
        path = tmp_path / f"{name}.json"
        save_report(Report(schema_version=2, mainloop_profiles=[prof]), path)
        paths.append(path)

    async def go() -> str:
        from sagetui.core.report.io import load_report

        app = SageTUI(reports=[(str(p), load_report(p)) for p in paths], theme_name=THEME)
        async with app.run_test(size=(160, 60)) as pilot:
            await settle(pilot, app)
            assert app.query_one("TabbedContent").active == "compare"
            return screen_text(app)
    text = asyncio.run(go())
    assert "inside the main loop" in text and "A: toy" in text and "B: toy" in text
    assert "pt vs A: toy" in text
