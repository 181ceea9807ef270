"""The "inside the main loop" panel from a report's profiles (built from the recorded toy
fixtures): stacked bar, shares, change against the baseline, hot lines."""

from __future__ import annotations

from sagetui.core.profile.shares import to_profile
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


def test_the_compare_tab_shows_the_profile_diff_and_scrolls_to_it(tmp_path):
    """Pilot: the toy build and its line-shifted rebuild, saved as two reports, in the Compare
    tab: under the profiles, the diff of B against A (phases, stall reasons, hot lines matched
    by code with their new lines); the panel scrolls to its end. Then one report holding both
    profiles: its own diff, against its first."""
    import asyncio

    from sagetui.core.profile.diff import profile_diff
    from sagetui.core.report.io import load_report, save_report
    from sagetui.core.report.model import Report
    from sagetui.tui.app import SageTUI
    from sagetui.tui.keymap import TABS

    from ..test_profile_toy import call_line
    from .conftest import THEME, screen_text, settle

    profs = [to_profile(run(name), variant="toy", family="toy")
             for name in ("toy_attention", "toy_attention_shifted")]
    paths = [save_report(Report(schema_version=2, mainloop_profiles=[p]), tmp_path / f"{i}.json")
             for i, p in enumerate(profs)]
    both = [profs[0], profs[1].model_copy(update={"variant": "moved"})]
    one = save_report(Report(schema_version=2, mainloop_profiles=both,
                             mainloop_diff=profile_diff(both)), tmp_path / "both.json")

    async def go(files) -> tuple[str, str]:
        app = SageTUI(reports=[(str(p), load_report(p)) for p in files], theme_name=THEME)
        async with app.run_test(size=(160, 60)) as pilot:
            await settle(pilot, app)
            tabs = app.query_one("TabbedContent")
            if tabs.active != "compare":  # one report of profiles opens on Scheduler
                await pilot.press(str(1 + [t for t, _ in TABS].index("compare")))
                await settle(pilot, app)
            assert tabs.active == "compare"
            top = screen_text(app)
            app.query_one("#compare-mainloop-box").scroll_end(animate=False)
            await settle(pilot, app)
            return top, screen_text(app)
    top, end = asyncio.run(go(paths))
    # the profiles first, the diff's head under them; scrolled to its end, the hot lines
    assert "inside the main loop" in top and "profile diff" in top
    assert "inside the main loop" not in end and "hot lines that moved" not in top
    qk = call_line("toy_attention_shifted", "compute_int_qk")
    row = next(ln for ln in end.splitlines() if "compute_int_qk" in ln and ".cu:" in ln)
    assert f"toy_attention_shifted.cu:{qk}" in row and "code" in row
    assert "B: toy vs A: toy: hot lines that moved or changed" in end
    _, end = asyncio.run(go([one]))
    assert "moved vs toy: hot lines that moved or changed" in end
