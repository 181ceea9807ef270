"""The Sweep tab: a live sweep in the console (a real runner on the CPU), its points streaming
into the table and the log2 plot, and the saved sweep report opened by `sagetui view`."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TabbedContent

from sagetui.core.report.io import save_report
from sagetui.core.sweep.plan import Axes
from sagetui.tui.app import SageTUI
from sagetui.tui.widgets.sweep_plot import SweepPlot
from sagetui.tui.widgets.sweep_table import SweepTable

from .conftest import THEME, aio, screen_text, settle, tiny_config, viewer, wait_for


@aio
async def test_a_live_sweep_streams_points_and_reopens_from_its_report(tmp_path: Path) -> None:
    app = SageTUI(config=tiny_config(variants=2), theme_name=THEME,
                  recovery_path=tmp_path / "recovery.json", export_dir=tmp_path,
                  sweep_axes=Axes(q_lens=[128, 256, 512], head_dims=[64], causal=[False]))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        assert app.query_one(TabbedContent).active == "sweep"
        # before its first point: r runs it (it once said to run `sagetui sweep --console`,
        # which is what opened it)
        before = screen_text(app)
        for line in ("no point measured yet:", "r runs the sweep over q_len,",
                     "each point shown here as it finishes"):
            assert line in before, before
        assert "sagetui sweep --console" not in before
        await pilot.press("r")
        await wait_for(pilot, lambda: app.sweeps.live_sweep is not None
                       and len(app.sweeps.live_sweep.points) >= 1, what="the first point")
        app.flush_redraws(force=True)
        await pilot.pause()
        assert app.query_one(SweepTable).row_count >= 2  # one point, two variants so far
        await wait_for(pilot, lambda: not app.running, what="the sweep to finish")
        await settle(pilot, app)
        table = app.query_one(SweepTable)
        assert table.row_count == 3 * 2
        cells = [str(c) for c in table.get_row_at(1)]
        assert cells[0] == "128 D64 non-causal" and cells[1] == "slow"
        assert float(cells[3]) > 0 and float(cells[4]) > 0  # kernel and e2e TOPS
        plot = app.query_one(SweepPlot)
        assert plot.points == 6 and "kernel TOPS vs q_len (log2)" in plot.title_text
        report = app.final_report  # the session's report: what e exports
        assert "sweep point 3/3" in screen_text(app) or report is not None
        assert report is not None and report.sweep is not None
        assert [p.x for p in report.sweep.points] == [128, 256, 512]
        await pilot.press("1")
        await settle(pilot, app)
        assert "✓ COMPLETE  3/3 points" in screen_text(app)  # each point ran its own rounds
    path = tmp_path / "sweep.json"
    save_report(report, path)
    saved = viewer(path)
    async with saved.run_test(size=(160, 48)) as pilot:
        await settle(pilot, saved)
        assert saved.query_one(TabbedContent).active == "sweep"
        assert saved.query_one(SweepTable).row_count == 6
        assert saved.query_one(SweepPlot).points == 6
        assert "512 D64 non-causal" in screen_text(saved)


H200_SWEEP = Path(__file__).resolve().parents[2] / "sample_results" / "h200_sweep.json"


@aio
async def test_the_tab_shows_the_crossovers_and_flags_noisy_points() -> None:
    """Once, only the Markdown export said where one backend overtakes another; and the
    H200 sweep's noisy points looked as trustworthy as any other point (the recording of
    q_len 1k..16k: flash at 8k, 12.4 ms ± 10.9 %, beside cudnn at 1k, ± 0.2 %)."""
    app = viewer(H200_SWEEP)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        text = " ".join(screen_text(app).split())
        # the report's eight end-to-end crossovers (the kernel lines never cross here)
        assert "kernel: none" in text
        assert "end to end, D128 non-causal: sm90 overtakes sm80 at ≈1109" in text
        assert "end to end, D128 causal:" in text and "sm90 overtakes cudnn at ≈10605" in text
        assert "! 3 of 50 results noisy: p50 95 % interval wider than ±10 % (marked !)" in text
        table = app.query_one(SweepTable)
        # beside the plot the table's columns fold into bands: p50 on its cell's first line
        p50 = {(str(table.get_row_at(i)[0]), str(table.get_row_at(i)[1])):
               str(table.get_row_at(i)[2]).split("\n")[0] for i in range(table.row_count)}
        assert p50[("8k D128 non-causal", "flash")] == "12.424 ± 10.9 % !"
        assert p50[("16k D128 causal", "cudnn")] == "13.539 ± 13.6 % !"
        assert p50[("1k D128 non-causal", "cudnn")] == "0.115 ± 0.2 %"
        plot = app.query_one(SweepPlot)
        assert any("noisy" in e.label for e in plot.legend)
        assert "kernel TOPS vs q_len (log2)" in text  # the plot's title is on screen
    small = viewer(H200_SWEEP)
    async with small.run_test(size=(80, 24)) as pilot:  # the smallest console: still said
        await settle(pilot, small)
        text = " ".join(screen_text(small).split())
        assert "3 of 50 results noisy" in text and "kernel: none" in text
        assert "sm80 overtakes flash at ≈4318" in text  # the last crossover line


@aio
async def test_a_workload_calls_module_path_shows_as_text_never_markup() -> None:
    """A replayed call's group holds its module path; a ModuleDict key may be `[bold red]x[/]`:
    the table shows it as it is."""
    from textual.app import App, ComposeResult
    from textual.widgets._data_table import default_cell_formatter

    from sagetui.core.blocks.sweep import SweepPoint
    from sagetui.core.config import Shape
    from sagetui.tui.sweep_view import SweepView

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield SweepTable()

    group = "call 0 heads.[bold red]x[/]"
    point = SweepPoint(index=0, x=16, group=group, status="failed", error="[red]boom[/]",
                       ops=1.0, shape=Shape(batch=1, heads=1, q_len=16, head_dim=64))
    app = One()
    async with app.run_test(size=(160, 10)) as pilot:
        table = app.query_one(SweepTable)
        table.sync(SweepView(points=[point], planned=1, version=1))
        await pilot.pause()
        # what the table draws of each cell (a str would be read as markup)
        cells = [default_cell_formatter(c).plain for c in table.get_row_at(0)]
        assert cells[0].endswith(group) and "[red]boom[/]" in cells[2]


def test_sweep_console_settles_its_configuration_as_the_console_does(
        tmp_path: Path, monkeypatch) -> None:
    """`sagetui sweep --console` with no backend on a CPU-only torch: the header named the
    reference backend while `a` and `p` asked for a run first "so the backend and shape are
    known" (`sagetui`'s own console settled it; the sweep's did not)."""
    import pytest

    from sagetui.cli.main import main
    from sagetui.cli.run_options import no_cuda_here

    if no_cuda_here("auto") is None:
        pytest.skip("torch here is a CUDA build")
    opened: list[SageTUI] = []
    monkeypatch.setattr(SageTUI, "run", lambda self, **kw: opened.append(self))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--console", "--q-len", "128,256", "--head-dim", "64",
                 "--recovery-dir", str(tmp_path)]) == 0
    config = opened[0].run_control.config
    assert config is not None and not config.auto and not config.auto_shape
    assert [v.backend for v in config.variants] == ["reference"]


@aio
async def test_a_and_p_in_a_sweep_console_calibrate_its_points_and_profile(
        tmp_path: Path, monkeypatch, fake_pass) -> None:
    """`a` in a sweep's console ran an A/A sweep, then said "calibration did not complete"
    (a sweep report has no run's samples) and stored nothing; after a sweep of an `auto`
    configuration (a GPU node's before its first run) `a` and `p` still asked for a run first.
    Now `a` stores each point's floor under its shape, which the next sweep's points judge
    with, and `p` profiles the selected variant at the sweep's first shape."""
    from sagetui.session import calibration
    from sagetui.tui.profile_flow import ProfileFlow

    from ..conftest import fake_noise_floor

    fake_noise_floor(monkeypatch, 0.75)
    app = SageTUI(config=tiny_config(variants=2, iterations=2, auto=True), theme_name=THEME,
                  recovery_path=tmp_path / "recovery.json", export_dir=tmp_path,
                  sweep_axes=Axes(q_lens=[64, 128], head_dims=[64], causal=[False]))
    tools, profile = fake_pass
    app.profiling = ProfileFlow(app, app.run_control, profile=profile, tools=lambda: tools)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running and app.final_report is not None,
                       what="the sweep")
        await pilot.press("p")  # after the sweep: the selected variant, ref
        await wait_for(pilot, lambda: app.profiling.cancel is None
                       and bool(app.data.model.profiles), what="the profile pass")
        assert app.final_report is not None and app.final_report.sweep is not None
        assert [p.variant for p in app.final_report.mainloop_profiles or []] == ["ref"]
        await pilot.press("a")  # asks first: the sweep is not exported
        await pilot.press("y")
        await wait_for(pilot, lambda: app.run_control.calibrating is None and not app.running,
                       what="the calibration")
        notes = [n.message for n in app._notifications]
        assert not [n for n in notes if "Run once first" in n], notes
        shapes = sorted(e["shape"] for e in calibration.entries().values())
        assert shapes == ["1x128x2x64 bf16 NHD", "1x64x2x64 bf16 NHD"], notes
        await pilot.press("r")
        await wait_for(pilot, lambda: not app.running and app.final_report is not None,
                       what="the next sweep")
        report = app.final_report
        assert report is not None and report.sweep is not None
        judged = [v.verdict for p in report.sweep.points for v in p.variants
                  if v.name == "slow"]
        assert [v.threshold_source if v else None for v in judged] == ["calibration"] * 2
