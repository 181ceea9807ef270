"""Key latency and first paint as ratios measured in one run: the console while a run streams
against the idle console, and the idle console against a bare Textual app.

Three apps run side by side in one tmux server, each in its own 120x40 session (as in
key_latency.py, whose pieces this script uses): (a) bare_tabs.py, a bare Textual app with a
TabbedContent of the console's tabs, each pane a text of its own; (b) the console, idle (no
run started); (c) a second console whose run streams from the synthetic runner at --rate
events a second. The same tab keys are pressed in each (every 0.2-0.4 s, each press timed
from send-keys to the capture that shows the new tab) in phases that alternate a, b, c (the
order rotated every cycle), so that load drift on a shared machine hits all three alike.
Before them each app shows each tab once (timed, printed, left out of the ratios: a pane's
first showing lays it out and renders it for the first time). Outside its own phases (c)'s
runner is held with SIGSTOP, so that the streaming does not load the other phases; it resumes
--warm-s before (c)'s presses (the watchdog allows 120 s).
Between cycles the first paint of `sagetui` and of the bare app (tui_first_paint.first_paint,
a separate tmux server) are timed alternately.

    python benchmarks/key_latency_ratios.py [--presses 40] [--cycles 4] [--paint-runs 2]

Targets: streaming p95 / idle p95 <= 1.3; idle p95 / bare p95 <= 1.5. Exit status 1
on a miss. A benchmark, not a test: it prints the load average.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bare_tabs import MARKERS as BARE_MARKERS
from key_latency import (
    MARKERS,
    Pane,
    explain,
    instrumented,
    open_log,
    pct,
    presses,
    print_presses,
    read_log,
    report,
    serve_args,
    split,
    start_run,
    stop_console,
)
from startup import paint
from synthetic_runner import load_average, read_counter

from sagetui.tui.keymap import TABS

STREAM_OVER_IDLE = 1.3
IDLE_OVER_BARE = 1.5
PAINT_SIZE = "160x48"  # startup.py's


def serve_bare(log: str) -> int:
    from bare_tabs import BareTabs

    instrumented(BareTabs, open_log(log))().run()
    return 0


def child_running(parent: int, needle: str) -> int | None:
    """The pid of `parent`'s child whose command line holds `needle` (the synthetic runner)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == parent and needle in (entry / "cmdline").read_text():
                return int(entry.name)
        except (OSError, ValueError, IndexError):
            continue
    return None


def log_pid(log: str) -> int:
    return int(Path(log).read_text().split()[1])


class Phase:
    def __init__(self, name: str, pane: Pane, log: str, markers: dict[str, str]) -> None:
        self.name, self.pane, self.log, self.markers = name, pane, log, markers
        self.tab = "1"
        self.times: list[tuple[float, float, str]] = []
        self.by_cycle: list[list[float]] = []
        self.first: list[float] = []  # the first visit of each tab: not in the ratios

    def press(self, n: int, rng: random.Random, timed: bool = True) -> None:
        got = presses(self.pane, n, rng, self.tab, self.markers)
        self.tab = got[-1][2]
        if not timed:
            self.first += [t1 - t0 for t0, t1, _ in got]
            return
        self.times += got
        self.by_cycle.append([t1 - t0 for t0, t1, _ in got])

    @property
    def latencies(self) -> list[float]:
        return [t1 - t0 for t0, t1, _ in self.times]

    def median_ms(self, key: str) -> float:
        return statistics.median(t1 - t0 for t0, t1, k in self.times if k == key) * 1e3

    def line(self) -> str:
        events = read_log(self.log)
        return report(f"{self.name:<17}", self.latencies,
                      [split(events, *p) for p in self.times])


def verdict(name: str, num: float, den: float, target: float) -> tuple[str, bool]:
    ok = num / den <= target
    return (f"  {name}: {num * 1e3:.0f} / {den * 1e3:.0f} ms = {num / den:.2f} (target <= "
            f"{target}) -> {'OK' if ok else 'MISS'}", ok)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presses", type=int, default=40, help="presses per app, in all")
    ap.add_argument("--cycles", type=int, default=4, help="alternations of the three phases")
    ap.add_argument("--rate", type=float, default=10_000.0)
    ap.add_argument("--warm-s", type=float, default=3.0,
                    help="how long the run streams again before each streaming phase")
    ap.add_argument("--paint-runs", type=int, default=2,
                    help="first paints of each app after each cycle (0: none)")
    ap.add_argument("--verbose", action="store_true", help="print every press")
    ap.add_argument("--diagnose", action="store_true",
                    help="log GC, autosaves and UI stalls in the streaming console; explain "
                         "its slow presses")
    ap.add_argument("--keep-logs", metavar="DIR",
                    help="copy the three apps' logs (action, focus and frame times) to DIR")
    ap.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve_bare:
        return serve_bare(a.log)

    print(f"key latency ratios; {load_average()}")
    rng = random.Random(0)
    per_cycle = math.ceil(a.presses / a.cycles)
    here = Path(__file__).resolve()
    key_latency = here.with_name("key_latency.py")
    socket = f"sagetui-ratios-{os.getpid()}"
    paints: dict[str, list[float]] = {"console": [], "bare": []}
    loads, streamed, stream_s, runner = [], 0, 0.0, None
    with tempfile.TemporaryDirectory(prefix="sagetui-ratios-") as tmp:
        logs = {n: f"{tmp}/{n}.log" for n in ("bare", "idle", "stream")}
        counter = f"{tmp}/counter"
        bare = Phase("bare Textual app", Pane("bare", socket), logs["bare"], BARE_MARKERS)
        idle = Phase("idle console", Pane("idle", socket), logs["idle"], MARKERS)
        stream = Phase("while streaming", Pane("stream", socket), logs["stream"], MARKERS)
        bare.pane.launch(here, f"--serve-bare --log {logs['bare']}")
        idle.pane.launch(key_latency, serve_args(logs["idle"], f"{tmp}/idle-counter", a.rate,
                                                 f"{tmp}/idle-recovery.json"))
        stream.pane.launch(key_latency, serve_args(logs["stream"], counter, a.rate,
                                                   f"{tmp}/recovery.json", a.diagnose))
        try:
            bare.pane.wait_for(lambda s: BARE_MARKERS["1"] in s)
            for p in (idle, stream):
                p.pane.wait_for(lambda s: "press r to run" in s)
            if start_run(stream.pane, counter) == 0:
                print("the run never streamed")
                return 1
            runner = child_running(log_pid(logs["stream"]), "synthetic_runner.py")
            if runner is None:
                print("the synthetic runner's process was not found")
                return 1
            phases = [bare, idle, stream]
            for p in phases:  # a tab's first showing lays out and renders it for the first time;
                p.press(len(MARKERS), rng, timed=False)  # presses() visits each tab once so
            os.kill(runner, signal.SIGSTOP)
            time.sleep(1.0)
            for cycle in range(a.cycles):
                loads.append(load_average().split()[2])
                for p in phases[cycle % 3:] + phases[:cycle % 3]:
                    if p is stream:
                        os.kill(runner, signal.SIGCONT)
                        time.sleep(a.warm_s)
                        n0, t0 = read_counter(counter), time.monotonic()
                    p.press(per_cycle, rng)
                    if p is stream:
                        streamed += read_counter(counter) - n0
                        stream_s += time.monotonic() - t0
                        os.kill(runner, signal.SIGSTOP)
                        time.sleep(0.5)  # what the pipe held is taken in before the next phase
                for _ in range(a.paint_runs):
                    paints["console"].append(paint(PAINT_SIZE, None, "press r to run"))
                    paints["bare"].append(paint(PAINT_SIZE, f"{sys.executable} "
                                                f"{here.with_name('bare_tabs.py')}",
                                                BARE_MARKERS["1"]))
            lines = [p.line() for p in phases]
            if a.verbose:
                for p in phases:
                    print_presses(p.name, p.times, read_log(p.log))
            if a.diagnose:
                print("slow presses while streaming, and what the console logged around them:")
                explain(logs["stream"], stream.times, 0.1)
        finally:
            if a.keep_logs:
                Path(a.keep_logs).mkdir(parents=True, exist_ok=True)
                for name, log in logs.items():
                    shutil.copy(log, Path(a.keep_logs) / f"{name}.log")
            if runner is not None:
                os.kill(runner, signal.SIGCONT)
            stream.pane("kill-server")
            for log in logs.values():
                stop_console(log)
    print("\n".join(lines))
    print(f"the runner streamed {streamed / stream_s:,.0f} events/s during the streaming "
          f"phases ({streamed:,} events in {stream_s:.0f} s)")
    print("median ms per cycle (bare / idle / streaming; 1-minute load average at its start):")
    for c in range(a.cycles):
        meds = " / ".join(f"{statistics.median(p.by_cycle[c]) * 1e3:.0f}" for p in phases)
        print(f"  cycle {c + 1} (load {loads[c]}): {meds}")
    print("median ms by the tab switched to (bare / idle / streaming):")
    for key in sorted({k for _, _, k in bare.times}):
        meds = " / ".join(f"{p.median_ms(key):.0f}" for p in phases)
        print(f"  {key} {TABS[int(key) - 1][1]}: {meds}")
    print("first visit of each tab (before the timed presses, not in the ratios), median / max "
          "ms: " + "; ".join(f"{p.name} {statistics.median(p.first) * 1e3:.0f} / "
                             f"{max(p.first) * 1e3:.0f}" for p in phases))
    b95, i95, s95 = (pct(p.latencies, 95) for p in phases)
    print(f"\nsummary ({load_average()}):")
    for p in phases:
        print(f"  {p.name}: p50 {statistics.median(p.latencies) * 1e3:.0f} ms, p95 "
              f"{pct(p.latencies, 95) * 1e3:.0f} ms ({len(p.times)} presses)")
    checks = [verdict("streaming p95 / idle p95", s95, i95, STREAM_OVER_IDLE),
              verdict("idle p95 / bare p95", i95, b95, IDLE_OVER_BARE)]
    for text, _ in checks:
        print(text)
    if paints["console"]:
        c_med, b_med = (statistics.median(paints[k]) for k in ("console", "bare"))
        print(f"  first paint at {PAINT_SIZE}: sagetui {c_med:.3f} s / bare tabs {b_med:.3f} s "
              f"= {c_med / b_med:.2f} (medians of {len(paints['console'])} each, alternated)")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
