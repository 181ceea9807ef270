"""Plot cost: how long each live plot takes to redraw while a run is live, at 120x40 and 200x60,
with 10^5 and 10^6 samples collected.

The console (SageTUI under App.run_test, headless) shows a live run model filled, as a run
would fill it, with 2 variants of the reference backend's 8 phases (6 leaves) in two round
structures:
- "long rounds": 50 rounds per variant (10^6 samples: 10,000 iterations a round);
- "10-iteration rounds": the CLI's default --iterations 10, so the number of rounds grows with
  the samples (10^6 samples: 50,000 rounds per variant).
Every round also carries its block telemetry (unavailable on a CPU), as a live run's do.

Each plot (round medians on tab 2, per-iteration latency on tab 3, per-phase bars on tab 4;
at 200x60 also the overview's two plots) is shown, then redrawn `--reps` times. Before each
redraw a batch of 200 new iterations is folded in and the data version moves, as between two
ticks of a live run, so that no cache that a live run would miss is warm. Each redraw is timed
in two parts:
- draw: SeriesPlot.redraw_if_due (reduce the data to the plot's width, plotext calls);
- paint: Textual paints it: PlotextPlot.render (plotext builds the frame, Rich parses its
  ANSI), the plot's lines, the screen composed (the next pilot.pause(), less what a pause
  with nothing to paint costs); the build alone is also timed, as part of the paint.
The target is on draw + paint: under 30 ms at 120x40, whatever the number of samples.

    python benchmarks/plot_cost.py [--reps 15] [--samples 100000,1000000]

Not a timed test: run it on an idle machine; it prints the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import numpy as np
from synthetic_runner import LEAF_MEANS, PHASES, bench_config, load_average

TARGET_MS = 30.0
SIZES = ((120, 40), (200, 60))
# plot id -> the key of its tab
PLOTS = {"rounds-plot": "2", "iterations-plot": "3",
         "overview-rounds": "1", "overview-iterations": "1"}  # phases: a table
NO_TELEMETRY = {"available": False, "reason": "no GPU: telemetry is NVML's", "samples": 0,
                "sm_clock_mhz": None, "mem_clock_mhz": None, "temperature_c": None,
                "power_w": None, "throttle_reasons": []}


def fill(data, samples: int, per_round: int, seed: int = 0) -> None:
    """`samples` iterations into a live source's run model, split over 2 variants,
    `per_round` a round, through the run model's own storage and round events (filled in bulk,
    a round's column at a time: folding 10^6 events one by one takes a minute and ends in the
    same arrays)."""
    from sagetui.core import events as ev
    from sagetui.core.run.fold import apply
    from sagetui.core.run.model import TOTAL, PhaseSamples

    rng = np.random.default_rng(seed)
    m = data.model
    names = list(m.variants)
    tree = [(n, p) for n, p in PHASES]
    parents = {p for _, p in tree if p}
    rounds = max(1, samples // (len(names) * per_round))
    apply(m, ev.RunStarted(config=m.config, created_utc="2026-01-01T00:00:00+00:00"))
    for name in names:
        apply(m, ev.VariantLoaded(name=name, backend="reference", status="ok", phases=tree))
    for r in range(rounds):
        apply(m, ev.RoundStarted(round=r, variants=names))
        for k, name in enumerate(names):
            v = m.variants[name]
            slow = 1.0 + 0.1 * k
            leaf = {n: mean * slow * rng.lognormal(0.0, 0.05, per_round)
                    for n, mean in LEAF_MEANS.items()}
            vals = dict(leaf)
            for par in parents:
                vals[par] = sum(leaf[n] for n, pp in tree if pp == par)
            vals[TOTAL] = sum(leaf.values())
            for n, x in vals.items():  # as the fold adds a block's columns
                v.samples.setdefault(n, PhaseSamples()).add(r, x)
            for half in (0, 1):
                apply(m, ev.BlockDone(variant=name, round=r, half=half,
                                      iterations=per_round // 2, cancelled=False,
                                      telemetry=NO_TELEMETRY))
        apply(m, ev.RoundDone(round=r, completed=names))
    for name in names:
        m.variants[name].drift = {"slope_percent_per_round": 0.01, "flagged": False}
    base = data.p50_s(m.variants[names[0]])
    for name in names:
        m.variants[name].speedup_percent = (base / data.p50_s(m.variants[name]) - 1) * 100
    p = m.progress
    p.round, p.iterations_done, p.stage = rounds, samples, "measuring"
    data.clock.start(rounds + 1, per_round, None)
    data.touch()


def new_batch(data, n: int = 200) -> list:
    """The next n iterations of the round in progress (n / 2 a variant), as `iterations`
    events, the columns the runner sends."""
    from sagetui.core.events import Iterations

    r = len(data.model.completed_rounds)
    out = []
    for name in data.variants:
        k = n // len(data.variants)
        cols = {leaf: [m * (1 + 0.01 * (i % 7)) for i in range(k)]
                for leaf, m in LEAF_MEANS.items()}
        total = [sum(xs) for xs in zip(*cols.values(), strict=True)]
        out.append(Iterations(variant=name, round=r, half=0, start=0, phases=cols,
                              total_s=total))
    return out


async def measure(samples: int, per_round: int, size: tuple[int, int], reps: int
                  ) -> dict[str, tuple[float, float, float, int]]:
    """plot id -> median (draw, paint, of which build) ms and the points drawn."""
    from sagetui.core.run.fold import apply
    from sagetui.tui.app import SageTUI
    from sagetui.tui.widgets.plots import SeriesPlot

    app = SageTUI(config=bench_config(variants=2, rounds=10**5, iterations=per_round),
                  theme_name="sage-dark")
    t = time.perf_counter()
    fill(app.live, samples, per_round)
    fill_s = time.perf_counter() - t
    out: dict[str, tuple[float, float, float, int]] = {}
    sync_all: list[float] = []
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        idle = []
        for _ in range(reps):  # what a pause costs when there is nothing to paint
            t = time.perf_counter()
            await pilot.pause()
            idle.append(time.perf_counter() - t)
        idle_s = statistics.median(idle)
        for pid, key in PLOTS.items():
            await pilot.press(key)
            await pilot.pause()
            plot = app.query_one(f"#{pid}", SeriesPlot)
            if not plot.is_on_screen or plot.size.width < 10:
                continue  # the overview's plots: only from 140 columns
            app.flush_redraws(force=True)
            await pilot.pause()
            draws, builds, paints, syncs = [], [], [], []
            for _ in range(reps):
                for e in new_batch(app.live):  # a live tick's worth of samples
                    apply(app.live.model, e)
                app.live.touch()  # and a block or round event: the version moves
                t = time.perf_counter()
                app.sync_panels()  # every panel syncs on the tick (not a plot: apart)
                syncs.append(time.perf_counter() - t)
                t0 = time.perf_counter()
                drawn = plot.redraw_if_due(0.0)
                t1 = time.perf_counter()
                await pilot.pause()  # Textual paints: plot.render() (plotext build) and more
                t2 = time.perf_counter()
                plot.render()  # the build alone, again, for the breakdown (not in the total)
                t3 = time.perf_counter()
                assert drawn, pid
                draws.append(t1 - t0)
                paints.append(max(0.0, t2 - t1 - idle_s))
                builds.append(t3 - t2)
            ms = [statistics.median(x) * 1e3 for x in (draws, paints, builds)]
            out[pid] = (ms[0], ms[1], ms[2], plot.points)
            sync_all.extend(syncs)
    out["_fill_s"] = (fill_s, statistics.median(sync_all) * 1e3, 0, 0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--samples", default="100000,1000000")
    a = ap.parse_args()
    print(f"plot cost benchmark; {load_average()}")
    print("per redraw, medians of", a.reps, "redraws: draw + paint = total ms "
          "[plotext build, part of the paint] (points drawn)")
    worst_120 = 0.0
    rows = []
    for samples in (int(x) for x in a.samples.split(",")):
        for per_round, label in ((samples // 100, "50 long rounds"),
                                 (10, "10-iteration rounds")):
            for size in SIZES:
                res = asyncio.run(measure(samples, per_round, size, a.reps))
                fill_s, sync_ms = res.pop("_fill_s")[:2]
                rounds = samples // (2 * per_round)
                print(f"\n{samples:,} samples, {label} ({rounds:,} per variant), "
                      f"{size[0]}x{size[1]} (filled in {fill_s:.1f} s; the tables' and status "
                      f"line's sync on the same tick, not a plot: {sync_ms:.1f} ms):")
                for pid, (d, p, b, pts) in res.items():
                    total = d + p
                    rows.append((samples, label, size, pid, total))
                    if size == (120, 40):
                        worst_120 = max(worst_120, total)
                    flag = "" if size != (120, 40) or total < TARGET_MS else "  > 30 ms"
                    print(f"  {pid:<20} {d:6.1f} + {p:6.1f} = {total:6.1f} ms "
                          f"[build {b:5.1f}] ({pts:,} points){flag}", flush=True)
    print(f"\nsummary ({load_average()}):")
    for samples in sorted({r[0] for r in rows}):
        for size in SIZES:
            sel = [r for r in rows if r[0] == samples and r[2] == size]
            worst = max(sel, key=lambda r: r[4])
            print(f"  {samples:>9,} samples {size[0]}x{size[1]}: slowest plot {worst[3]} "
                  f"({worst[1]}) {worst[4]:.1f} ms")
    print(f"target: every redraw under {TARGET_MS:.0f} ms at 120x40 -> slowest "
          f"{worst_120:.1f} ms ({worst_120 / TARGET_MS:.2f} of it) -> "
          f"{'met' if worst_120 < TARGET_MS else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
