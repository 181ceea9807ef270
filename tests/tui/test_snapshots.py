"""SVG snapshots of the console on seeded data (no live timings): the two-build report from
sample_results/, the synthetic report of tests/tui/data/ and H200 reports, at 80x24 and
160x48 (and 200x60 for the views the issue "console as a workbench" names).

After an intended change of the look: pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from .conftest import ROOT, SYNTHETIC, TWO_BUILDS, VIDEO_CALL_PHASES, settle, viewer

SIZES = [(80, 24), (160, 48)]
ALL_SIZES = [*SIZES, (200, 60)]
H200_BACKENDS = ROOT / "sample_results" / "h200_backends.json"
SM89 = ROOT / "sample_results" / "h200_sm89_reference_shape.json"
SM90 = ROOT / "sample_results" / "h200_sm90_reference_shape.json"
SM89_VARIANTS = ROOT / "sample_results" / "h200_sm89_variants.json"
KBIAS = ROOT / "sample_results" / "cpu_reference_kbias.json"


def _settled(*keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot, pilot.app)
        for key in keys:
            await pilot.press(key)
            await settle(pilot, pilot.app)
    return run_before


@pytest.mark.parametrize("size", ALL_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_overview_of_reference_001(snap_compare, size) -> None:
    assert snap_compare(viewer(TWO_BUILDS), terminal_size=size, run_before=_settled())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_overview_of_synthetic_report(snap_compare, size) -> None:
    assert snap_compare(viewer(SYNTHETIC), terminal_size=size, run_before=_settled())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_round_medians_of_synthetic_report(snap_compare, size) -> None:
    assert snap_compare(viewer(SYNTHETIC), terminal_size=size, run_before=_settled("2"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_scheduler_and_tail_study_of_reference_000(snap_compare, size) -> None:
    assert snap_compare(viewer(VIDEO_CALL_PHASES), terminal_size=size, run_before=_settled("5"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_accuracy_per_head_of_kbias_inputs(snap_compare, size) -> None:
    """K smoothing on and off on synthetic:kbias, head by head, in the Scheduler
    tab under the grid and the correctness box (at 80x24 scrolled to it)."""
    async def run_before(pilot) -> None:
        await _settled("5")(pilot)
        pilot.app.query_one("#heads").scroll_visible(animate=False, top=True)
        await settle(pilot, pilot.app)

    assert snap_compare(viewer(KBIAS), terminal_size=size, run_before=run_before)


def test_compare_view_at_160x48(snap_compare) -> None:
    assert snap_compare(viewer(VIDEO_CALL_PHASES, TWO_BUILDS, SYNTHETIC), terminal_size=(160, 48),
                        run_before=_settled())


@pytest.mark.parametrize("size", ALL_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_rounds_of_throttled_h200_report(snap_compare, size) -> None:
    """Every round power-capped: the five variant lines, the marks on their own row, the
    legend under the frame."""
    assert snap_compare(viewer(H200_BACKENDS), terminal_size=size, run_before=_settled("2"))


@pytest.mark.parametrize("size", ALL_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_compare_of_sm89_and_sm90_reports(snap_compare, size) -> None:
    """Two reports whose variants are named differently: matched baseline with baseline,
    the files named in the title, one sign convention."""
    assert snap_compare(viewer(SM89, SM90), terminal_size=size, run_before=_settled())


@pytest.mark.parametrize("size", ALL_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_phases_of_two_variants(snap_compare, size) -> None:
    """Two builds of sm89 phase by phase: values, deltas against the baseline, log bars."""
    assert snap_compare(viewer(SM89_VARIANTS), terminal_size=size, run_before=_settled("4"))


@pytest.mark.parametrize("size", ALL_SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_run_editor(snap_compare, size) -> None:
    """The run editor over a console that can run, a second variant added: its variants, the
    shape and measurement fields, and the `sagetui run` command line they make."""
    from sagetui.cli.main import run_config
    from sagetui.tui.app import SageTUI

    from .conftest import THEME, tiny_config

    async def run_before(pilot) -> None:
        await settle(pilot, pilot.app)
        await pilot.press("E")
        await settle(pilot, pilot.app)
        box = pilot.app.screen.query_one("#ed-new")
        box.value = "slow=reference[slowdown=1.5]"
        box.focus()
        await pilot.press("enter")
        await settle(pilot, pilot.app)

    app = SageTUI(config=tiny_config(), theme_name=THEME, build_config=run_config)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_phases_with_and_without_k_smoothing(snap_compare, size) -> None:
    """smooth_k=false's own phase (k_int8_quantization) under qk_int8_quantization, beside
    the smoothing variant's k_int8_subtract_mean_quantization."""
    assert snap_compare(viewer(KBIAS), terminal_size=size, run_before=_settled("4"))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_sweep_tab_of_the_h200_sweep(snap_compare, size) -> None:
    """The Sweep tab's table fits its width: short headers and cut cells (…) at 80 columns,
    every header in sight at 160."""
    sweep = ROOT / "sample_results" / "h200_sweep.json"
    assert snap_compare(viewer(sweep), terminal_size=size, run_before=_settled("8"))
