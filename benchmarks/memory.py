"""Memory: the console's resident set size once a run has collected 10^6 samples.

One process (this one) is the UI process, as `sagetui` is: the console (SageTUI under
App.run_test, headless, 120x40) and the Session in its worker thread. The synthetic runner
(synthetic_runner.py, a child process, not counted) streams 2 variants x 10 rounds x 50,000
iterations = 10^6 iteration events as fast as it can through the real Session, with the
recovery file written after every round as the console does. VmRSS and VmHWM are read from
/proc/self/status (psutil is not installed):

- idle: the console up, nothing run;
- at 10^5, 5x10^5 and 10^6 samples: the moment the UI has folded in that many events;
- after the run: the final report loaded into the panels (and kept for export), gc'd;
- peak: VmHWM over the whole run (the autosaves' transient copies included).

    python benchmarks/memory.py [--samples 1000000] [--rounds 10] [--trace]

Target: under 200 MB after 10^6 samples (300 MB before one model). Not a timed test; it
prints the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from streaming import Probe
from synthetic_runner import bench_config, console_uses_synthetic_runner, load_average

TARGET_MB = 200.0


def status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024  # kB
    raise KeyError(field)


def rss_mb() -> float:
    return status_mb("VmRSS")


def _base(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def arrays_mb(app: object) -> tuple[float, float]:
    """What the console's arrays of samples hold (its run model's, the iteration plot's totals
    and their pyramid: numpy buffers, capacity included; a buffer shared by two holders counted
    once), and how much of it is the final report's samples (the console's model adopts the
    session's arrays on round_done: they are the report's too)."""
    bufs: dict[int, np.ndarray] = {}
    for data in app.sources:  # type: ignore[attr-defined]
        arrays = [ps.values for v in data.variants.values() for ps in v.samples.values()]
        for view in data._totals.values():
            arrays += [view.series.values.view, *(g.view for g in view.series._lo),
                       *(g.view for g in view.series._hi)]
        bufs.update((id(b), b) for b in map(_base, arrays))
    report = app.final_report  # type: ignore[attr-defined]
    held = [s.values for phases in (report.samples or {}).values() for s in phases.values()] \
        if report is not None else []
    shared = sum(b.nbytes for b in bufs.values() if any(np.shares_memory(b, h) for h in held))
    return sum(b.nbytes for b in bufs.values()) / 2**20, shared / 2**20


async def measure(samples: int, rounds: int) -> list[tuple[str, float]]:
    from sagetui.tui.app import SageTUI

    iterations = samples // (2 * rounds)
    marks = sorted({samples // 10, samples // 2, samples})
    out: list[tuple[str, float]] = [("after imports", rss_mb())]
    with tempfile.TemporaryDirectory(prefix="sagetui-mem-") as tmp:
        counter = str(Path(tmp) / "counter")
        with console_uses_synthetic_runner(0.0, counter):
            app = SageTUI(config=bench_config(variants=2, rounds=rounds, iterations=iterations),
                          theme_name="sage-dark", recovery_path=Path(tmp) / "recovery.json",
                          export_dir=tmp)
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                app.flush_redraws(force=True)
                await pilot.pause()
                out.append(("idle console (nothing run)", rss_mb()))
                probe = Probe(app, counter)
                probe.install()
                t0 = time.monotonic()
                await pilot.press("r")
                await pilot.press("3")
                peak_during = 0.0
                while app.running:
                    peak_during = max(peak_during, rss_mb())
                    while marks and probe.handled >= marks[0]:
                        q = probe.sample()  # events decoded but not yet in the UI
                        out.append((f"UI has {marks[0]:,} samples (mid-run; "
                                    f"{q.emitted - q.handled:,} more emitted)", rss_mb()))
                        marks.pop(0)
                    await asyncio.sleep(0.05)
                elapsed = time.monotonic() - t0
                await pilot.pause()
                app.flush_redraws(force=True)
                await pilot.pause()
                gc.collect()
                n = sum(len(app.live.totals(v)) for v in app.live.variants.values())
                out.append((f"after the run: {n:,} samples in the panels, final report kept",
                            rss_mb()))
                panels, shared = arrays_mb(app)
                out.append(("  of which the console's sample arrays (its model, plots)", panels))
                out.append(("    of those, the final report's samples (not copied)", shared))
                out.append(("  sampled VmRSS max while running", peak_during))
                out.append(("peak VmHWM (autosave copies included)", status_mb("VmHWM")))
                # not counted above: the recovery file's writer, a child that holds a copy of
                # the samples while it writes (the synthetic runner is the other child)
                out.append(("  (not in the console: the largest child's peak, the writer's)",
                            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))
                if tracemalloc.is_tracing():
                    top = tracemalloc.take_snapshot().statistics("lineno")[:12]
                    print("where the live Python and numpy memory was allocated (--trace):")
                    for stat in top:
                        print(f"  {stat.size / 2**20:8.1f} MB {stat.count:>9,} blocks  "
                              f"{stat.traceback[0]}")
                print(f"run took {elapsed:.1f} s ({probe.handled:,} events handled)")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--trace", action="store_true",
                    help="trace allocations (slower) and print where the memory is held")
    a = ap.parse_args()
    if a.trace:
        tracemalloc.start()
    print(f"memory benchmark; {load_average()}")
    print(f"{a.samples:,} samples: 2 variants x {a.rounds} rounds x "
          f"{a.samples // (2 * a.rounds):,} iterations, 8 phases each (6 leaves)")
    rows = asyncio.run(measure(a.samples, a.rounds))
    for label, mb in rows:
        print(f"  {label:<62} {mb:8.1f} MB")
    final = next(mb for label, mb in rows if label.startswith("after the run"))
    mid = max((mb for label, mb in rows if "(mid-run" in label), default=final)
    worst = max(final, mid)
    print(f"RSS with 10^6 samples (worst of mid-run and after): {worst:.1f} MB; "
          f"{worst / TARGET_MB:.2f} of the {TARGET_MB:.0f} MB target -> "
          f"{'met' if worst < TARGET_MB else 'MISSED'}")
    print(f"({load_average()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
