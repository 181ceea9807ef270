"""Streaming: can the console keep up with a runner that streams 10,000 iterations a second?

The synthetic runner (synthetic_runner.py: the real protocol, no kernel) is driven through the
real Session into the real console (SageTUI under App.run_test, headless, 120x40, on the
Iterations tab: the plot that redraws with every batch), exactly as `r` starts a run. Every
0.25 s the script samples, side by side:

- emitted: iteration events the runner has written (its --counter file);
- handled: iteration events the UI thread has folded into its RunData;
- the queues in between: the runner client's event queue (decoded, not yet taken by the
  session's thread) and the app's message queue;

and, for every batch the UI handles, how old its oldest event is (runner's t_emit to the UI,
one clock: CLOCK_MONOTONIC). The UI keeps up when what it handles matches what was emitted and
the lag (emitted - handled) stays flat instead of growing: its slope over the run is reported
next to the rate.

    python benchmarks/streaming.py [--rates 10000,0] [--seconds 20] [--size 120x40]

A rate of 0 means "as fast as the runner can" (about 10^5 events/s by itself): that measures the
most the pipeline handles (where a growing lag is expected if the runner outruns it).
Not a timed test: run it on an idle machine; it prints the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from synthetic_runner import bench_config, console_uses_synthetic_runner, load_average, read_counter

TARGET_RATE = 10_000


def cpu_s() -> float:
    """User + system CPU seconds of this process, all threads."""
    t = os.times()
    return t.user + t.system


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))]


def slope(ts: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over ts (units of y per second)."""
    if len(ts) < 3:
        return float("nan")
    mt, my = statistics.fmean(ts), statistics.fmean(ys)
    var = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (y - my) for t, y in zip(ts, ys, strict=True)) / var if var else 0.0


@dataclass
class Sample:
    t: float
    emitted: int
    handled: int
    client_queue: int
    message_queue: int


@dataclass
class Probe:
    """Watches a running console: what the runner emitted, what the UI handled, and how old each
    batch is when the UI folds it in."""

    app: object
    counter: str
    samples: list[Sample] = field(default_factory=list)
    batch_age_s: list[float] = field(default_factory=list)  # age of each batch's oldest event
    batch_sizes: list[int] = field(default_factory=list)
    handled: int = 0
    first_handled: float | None = None
    last_handled: float | None = None

    def install(self) -> None:
        from sagetui.core.events import Iterations

        control = self.app.run_control  # type: ignore[attr-defined]
        fold = control.on_event

        def on_event(e: object) -> None:  # what one SessionEvent message carries
            now = time.monotonic()
            fold(e)
            if isinstance(e, Iterations) and e.n:
                self.handled += e.n
                self.batch_sizes.append(e.n)
                if e.t_emit is not None:  # the synthetic runner's stamp
                    self.batch_age_s.append(now - e.t_emit)
                self.first_handled = self.first_handled or now
                self.last_handled = time.monotonic()

        control.on_event = on_event  # the app calls self.run_control.on_event(message.event)

    def sample(self) -> Sample:
        app = self.app
        session = app.session  # type: ignore[attr-defined]
        s = Sample(time.monotonic(), read_counter(self.counter), self.handled,
                   session.pending_events() if session is not None else 0,
                   app._message_queue.qsize())  # type: ignore[attr-defined]
        self.samples.append(s)
        return s


@dataclass
class Result:
    rate: float
    emitted: int
    emit_rate: float
    handle_rate: float
    lag_p50: float
    lag_p95: float
    lag_max: float
    lag_slope: float  # events/s: > 0 is a lag that grows
    age_p50: float
    age_p95: float
    age_max: float
    client_queue_max: int
    message_queue_max: int
    cpu_cores: float
    keeps_up: bool

    def lines(self) -> list[str]:
        what = f"{self.rate:,.0f}/s paced" if self.rate else "as fast as it can"
        return [
            f"runner {what}: emitted {self.emitted:,} events at {self.emit_rate:,.0f}/s; "
            f"the UI handled {self.handle_rate:,.0f}/s "
            f"(ratio {self.handle_rate / self.emit_rate:.3f})",
            f"  lag emitted-handled: median {self.lag_p50:,.0f}, p95 {self.lag_p95:,.0f}, "
            f"max {self.lag_max:,.0f} events; slope {self.lag_slope:+,.0f} events/s "
            f"({self.lag_slope / self.emit_rate * 100:+.2f} % of the rate)",
            f"  batch age at the UI (t_emit -> handled): median {self.age_p50 * 1e3:.0f} ms, "
            f"p95 {self.age_p95 * 1e3:.0f} ms, max {self.age_max * 1e3:.0f} ms",
            f"  queues: runner client max {self.client_queue_max:,} events, app messages max "
            f"{self.message_queue_max}; this process used {self.cpu_cores:.2f} cores",
            f"  keeps up: {'YES' if self.keeps_up else 'NO'}",
        ]


def summarise(probe: Probe, rate: float, cpu: float, wall: float) -> Result:
    ss = [s for s in probe.samples if s.emitted > 0]
    # the streaming window: from the first emitted event to the last sample before the runner
    # stopped writing (the drain after it is not streaming)
    last_emit = max(s.emitted for s in ss)
    end = next(i for i, s in enumerate(ss) if s.emitted == last_emit)
    window = ss[: end + 1]
    t0, t1 = window[0].t, window[-1].t
    span = max(1e-9, t1 - t0)
    emit_rate = (window[-1].emitted - window[0].emitted) / span
    handle_rate = (window[-1].handled - window[0].handled) / span
    lags = [s.emitted - s.handled for s in window]
    half = window[len(window) // 2:]  # the slope after start-up
    lag_slope = slope([s.t for s in half], [s.emitted - s.handled for s in half])
    age = probe.batch_age_s
    res = Result(rate, last_emit, emit_rate, handle_rate, percentile(lags, 50),
                 percentile(lags, 95), max(lags), lag_slope, percentile(age, 50),
                 percentile(age, 95), max(age) if age else float("nan"),
                 max(s.client_queue for s in ss), max(s.message_queue for s in ss),
                 cpu / wall, False)
    # kept up: the runner was held to (about) its pace: the session sends the next block only
    # when it has taken in the last one, so a console that falls behind shows as gaps between
    # blocks (emitted under 90 % of the pace); the UI handled as much as was emitted (the
    # lag's slope is emit_rate - handle_rate: under 2 % of the rate); and the lag stays under
    # half a second of events (p95)
    res.keeps_up = ((not rate or emit_rate >= 0.9 * rate) and handle_rate >= 0.98 * emit_rate
                    and res.lag_p95 < 0.5 * emit_rate)
    return res


async def stream_once(rate: float, seconds: float, size: tuple[int, int], tab: str,
                      iterations: int, sample_s: float = 0.25) -> Result:
    from sagetui.tui.app import SageTUI

    # the run's size: `seconds` at the paced rate; as fast as it can, 300,000 events
    events = rate * seconds if rate else 300_000
    rounds = max(2, round(events / (2 * iterations)))
    with tempfile.TemporaryDirectory(prefix="sagetui-stream-") as tmp:
        counter = str(Path(tmp) / "counter")
        with console_uses_synthetic_runner(rate, counter):
            app = SageTUI(config=bench_config(variants=2, rounds=rounds, iterations=iterations),
                          theme_name="sage-dark", recovery_path=Path(tmp) / "recovery.json",
                          export_dir=tmp)
            async with app.run_test(size=size) as pilot:
                await pilot.pause()
                probe = Probe(app, counter)
                probe.install()
                c0, w0 = cpu_s(), time.monotonic()
                await pilot.press("r")
                await pilot.press(tab)
                while app.running:
                    probe.sample()
                    await asyncio.sleep(sample_s)
                probe.sample()
                cpu, wall = cpu_s() - c0, time.monotonic() - w0
                await pilot.pause()
    return summarise(probe, rate, cpu, wall)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="10000,20000,0",
                    help="comma-separated runner rates, events/s (0: as fast as it can)")
    ap.add_argument("--seconds", type=float, default=30.0,
                    help="about how long each paced run (a run as fast as it can: 300,000 events)")
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--tab", default="3", help="the tab shown while streaming (3: Iterations)")
    ap.add_argument("--iterations", type=int, default=10_000,
                    help="iterations per variant per round (2 variants, 2 blocks each)")
    a = ap.parse_args()
    w, h = (int(x) for x in a.size.split("x"))
    print(f"streaming benchmark; {load_average()}")
    print(f"2 variants, {a.iterations:,} iterations per round (blocks of {a.iterations // 2:,}), "
          f"{w}x{h}, tab {a.tab}, recovery file written after every round as the console does")
    results = []
    for rate in (float(x) for x in a.rates.split(",")):
        r = asyncio.run(stream_once(rate, a.seconds, (w, h), a.tab, a.iterations))
        results.append(r)
        print("\n".join(r.lines()), flush=True)
    paced = [r for r in results if r.rate >= TARGET_RATE]
    print(f"\nsummary ({load_average()}):")
    for r in results:
        label = f"{r.rate:>7,.0f}/s" if r.rate else "    max"
        print(f"  {label}: UI handled {r.handle_rate:>8,.0f}/s of {r.emit_rate:>8,.0f}/s "
              f"emitted (x{r.handle_rate / r.emit_rate:.3f}); lag p95 {r.lag_p95:>7,.0f} events, "
              f"slope {r.lag_slope / r.emit_rate * 100:+6.2f} %/s; batch age p95 "
              f"{r.age_p95 * 1e3:5.0f} ms; keeps up: {'yes' if r.keeps_up else 'NO'}")
    ok = all(r.keeps_up for r in paced if r.rate == TARGET_RATE)
    print(f"target: keeps up with {TARGET_RATE:,} events/s -> {'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
