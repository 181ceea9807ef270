"""The Scheduler tab's accuracy per head (docs/counters.md): each variant's relative L1 head by
head, its worst heads, the options it ran with; hidden for a report that has none."""

from __future__ import annotations

import json

from sagetui.core.report.model import Report
from sagetui.tui.source import saved_source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.head_accuracy import LEVELS, HeadAccuracy, head_strips

from .conftest import ROOT, VIDEO_CALL_PHASES, aio, screen_text, settle, viewer

KBIAS = ROOT / "sample_results" / "cpu_reference_kbias.json"
CTX = ViewContext(selected=None, series=("#111111", "#222222"), error_colour="#ff0000")


async def scheduler_tab(pilot) -> None:
    await settle(pilot, pilot.app)
    await pilot.press("5")
    await settle(pilot, pilot.app)


@aio
async def test_the_scheduler_tab_shows_each_variants_heads_and_options() -> None:
    app = viewer(KBIAS)
    async with app.run_test(size=(160, 48)) as pilot:
        await scheduler_tab(pilot)
        text = screen_text(app)
        assert "Accuracy per head" in text
        assert "smooth  smooth_k=true" in text and "nosmooth  smooth_k=false" in text
        assert "worst: 1 (6.47 %), 2 (6.43 %), 0 (6.43 %)" in text  # without K smoothing
        assert "▁ 0 to █ 6.47 %" in text


@aio
async def test_hidden_for_a_report_without_per_head_accuracy() -> None:
    app = viewer(VIDEO_CALL_PHASES)
    async with app.run_test(size=(120, 40)) as pilot:
        await scheduler_tab(pilot)
        assert not app.query_one(HeadAccuracy).display
        assert "Accuracy per head" not in screen_text(app)


def test_a_non_finite_head_reads_as_a_mark_and_is_named_worst() -> None:
    data = json.loads(KBIAS.read_text())
    a = data["variants"][1]["accuracy"]
    for key in ("cosine_similarity", "relative_l1", "rmse", "max_abs_error"):
        a["per_head"][4][key] = None
    a["worst_heads"] = [4, 1, 2]
    text = head_strips(saved_source(Report.model_validate(data), "r"), CTX)
    assert text is not None
    lines = text.plain.splitlines()
    strip = lines[lines.index(next(x for x in lines if x.startswith("nosmooth"))) + 1]
    bars = strip.removeprefix("   0 ")  # the line's first head, then one bar per head
    assert len(bars) == 6 and bars[4] == "!"
    assert all(c in LEVELS for i, c in enumerate(bars) if i != 4)
    assert "worst: 4 (not finite), 1 (6.47 %)" in text.plain


def test_options_not_the_public_functions_default_carry_the_note() -> None:
    data = json.loads(KBIAS.read_text())
    v = data["variants"][0]
    v["backend"] = "sage2-sm89"
    v["options"] = {"pv_accum": "fp32+fp32", "qk_quant_gran": "per_warp", "smooth_k": True,
                    "smooth_v": False}
    text = head_strips(saved_source(Report.model_validate(data), "r"), CTX)
    assert text is not None
    assert "smooth  pv_accum=fp32+fp32*, qk_quant_gran=per_warp*, smooth_k=true" in text.plain
    assert text.plain.rstrip().endswith("* not sageattn_qk_int8_pv_fp8_cuda's default "
                                        "(pv_accum=fp32+fp16, qk_quant_gran=per_thread)")


def test_the_header_names_the_synthetic_inputs() -> None:
    from sagetui.core.report.io import load_report

    source = saved_source(load_report(KBIAS), "r")
    assert source.shape == "1x1024x6x128 bf16 NHD synthetic:kbias"
    assert saved_source(load_report(VIDEO_CALL_PHASES), "r").shape == "1x37810x56x128 NHD"
