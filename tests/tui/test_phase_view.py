"""The Phases tab compares variants: side by side per phase, values in ms, each against the
baseline, bars on a log scale (a 0.14 ms phase beside a 48 ms main loop stays readable), and
no rows for phases a variant does not have."""

from __future__ import annotations

from .conftest import ROOT, aio, screen_text, settle, viewer

H200_BACKENDS = ROOT / "sample_results" / "h200_backends.json"
PHASE, VARIANT, P50, P90, VS_BASE, BAR = range(6)


@aio
async def test_phases_side_by_side_with_values_deltas_and_log_bars() -> None:
    from sagetui.tui.widgets.phase_view import PhaseView

    app = viewer(H200_BACKENDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await settle(pilot, app)
        assert "log scale" in screen_text(app)
        table = app.query_one(PhaseView)
        header = [str(c.label) for c in table.ordered_columns]
        assert header[P50] == "p50 ms" and "+ = faster" in header[VS_BASE]
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        first = next(i for i, r in enumerate(rows) if "k_mean" in r[PHASE])
        base = rows[first]  # one phase, the variants one under another, the baseline first
        other = next(r for r in rows[first + 1: first + 3] if r[VARIANT] == "sm89-fp16acc")
        assert base[VARIANT] == "sage2-sm90" and base[VS_BASE] == "baseline"
        assert other[PHASE].strip() == ""
        sums = {n: v.recorded.phase_timings["k_mean_and_smoothing_preparation"].p50_s
                for n, v in app.data.variants.items() if n in ("sage2-sm90", "sm89-fp16acc")}
        assert other[P50] == f"{sums['sm89-fp16acc'] * 1e3:.3f}"
        assert other[VS_BASE] == f"{(sums['sage2-sm90'] / sums['sm89-fp16acc'] - 1) * 100:+.2f}"
        # log scale: the 0.14 ms bar is at least a fifth of the 48 ms one (linear: 0.3 %)
        main = next(r for r in rows if "fused_mainloop" in r[PHASE])
        assert main[VARIANT] == "sage2-sm90"
        assert 5 * len(base[BAR].strip()) >= len(main[BAR].strip()) > 0
        # sdpa has one phase ("attention"): no empty rows of the others' phases for it
        sdpa = [r for r in rows if r[VARIANT] == "sdpa"]
        assert sdpa and all(r[P50] != "-" for r in sdpa)
        assert all(r[P50] != "-" for r in rows)
