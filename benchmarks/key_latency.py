"""Input latency: a key press to the updated screen, idle and while a run streams.

The console runs in a real terminal (a detached tmux pane, 120x40, TERM=xterm-256color, as in
tui_first_paint.py), its runs going to the synthetic runner (synthetic_runner.py) at
--rate iteration events a second through the real Session. The script presses tab keys with
`tmux send-keys` and polls `tmux capture-pane` until the screen shows the new tab (a text only
that tab shows is there, and the previous tab's is gone): the time from just before send-keys
to that capture is one latency. Presses come every 0.2-0.4 s (random, so that they land at
every phase of the console's 2 Hz refresh tick), first with the console idle, then while a run
streams.

The console process also logs (one clock, CLOCK_MONOTONIC) when the tab action ran and when
each frame was written to the terminal, so that each latency splits into: key to action
(tmux, the pty, Textual's input parsing, and the event loop being busy), action to the first
frame written after it (layout, the plots' redraw, rendering), and frame to seen (the terminal
and the polling: one capture-pane, about 3 ms).

    python benchmarks/key_latency.py [--presses 40] [--rate 10000]

Target: p95 under 100 ms while the run streams. Not a timed test: it prints the load average.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic_runner import load_average, read_counter

TARGET_P95_S = 0.1
SIZE = (120, 40)
# tab key -> a text only that tab shows at 120x40 (the overview shows no plot below 140 columns;
# the log is left out: no text of its own stays on screen both idle and as it scrolls)
MARKERS = {"1": "Variants · t toggle", "2": "Round medians, ms", "3": "Per-iteration latency",
           "4": "╭─ Phases ─ | one under another", "5": "Scheduler grid",
           "7": "Open two or more"}


def shows(screen: str, marker: str) -> bool:
    """Whether the screen shows a marker, or one of its forms (" | " between them: the Phases
    panel is titled "Phases" until a run has phase timings)."""
    return any(m in screen for m in marker.split(" | "))


# -- the console side: `--serve` ---------------------------------------------------------------
def serve(log: str, counter: str, rate: float, recovery: str, diagnose: bool) -> int:
    """Run the console in this terminal, instrumented, its runs on the synthetic runner."""
    from synthetic_runner import bench_config, console_uses_synthetic_runner

    from sagetui.tui.app import SageTUI

    out = open_log(log)
    if diagnose:
        watch(out)

    config = bench_config(variants=2, rounds=1000, iterations=10_000)
    with console_uses_synthetic_runner(rate, counter):
        instrumented(SageTUI, out)(config=config, theme_name="sage-dark",
                                   recovery_path=recovery or None).run()
    return 0


def open_log(path: str):  # type: ignore[no-untyped-def]
    """The serving process's log, line-buffered; its first line is its pid (for stop_console)."""
    out = open(path, "a", buffering=1)
    out.write(f"pid {os.getpid()}\n")
    return out


def instrumented(app_class: type, out):  # type: ignore[no-untyped-def]
    """`app_class` logging to `out` when its tab action runs and when each frame is written
    (both the console and key_latency_ratios.py's bare Textual app switch tabs by
    action_show_tab), and when a widget takes the focus (the console's switch moves it)."""

    from textual.widget import Widget

    real_focus = Widget.focus

    def focus(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        out.write(f"focus {time.monotonic():.6f}\n")
        return real_focus(self, *args, **kwargs)

    Widget.focus = focus  # type: ignore[method-assign]

    class Instrumented(app_class):  # type: ignore[misc,valid-type]
        def action_show_tab(self, tab: str) -> None:
            out.write(f"action {time.monotonic():.6f} {tab}\n")
            super().action_show_tab(tab)

        def _display(self, screen, renderable) -> None:  # type: ignore[no-untyped-def]
            super()._display(screen, renderable)
            if renderable is not None:
                out.write(f"frame {time.monotonic():.6f}\n")

    return Instrumented


def watch(out) -> None:  # type: ignore[no-untyped-def]
    """--diagnose: log full GC collections, the session's autosaves, and every stretch of
    60 ms or more in which the UI thread was never idle (sampled every 5 ms), with the
    functions seen most, so that a slow press can be matched with what happened then."""
    import collections
    import gc
    import threading

    from sagetui.session import autosave

    def on_gc(phase: str, info: dict) -> None:
        if info["generation"] == 2:
            tag = "gcs" if phase == "start" else "gce"
            extra = f" {len(gc.get_objects(generation=2))}" if phase == "start" else ""
            out.write(f"{tag} {time.monotonic():.6f}{extra}\n")

    gc.callbacks.append(on_gc)
    save = autosave.Autosaver._round_autosave

    def round_autosave(self) -> None:  # type: ignore[no-untyped-def]
        out.write(f"saves {time.monotonic():.6f}\n")
        try:
            save(self)
        finally:
            out.write(f"savee {time.monotonic():.6f}\n")

    autosave.Autosaver._round_autosave = round_autosave  # type: ignore[method-assign]
    main = threading.get_ident()

    def sample() -> None:
        start, seen, leaves = None, collections.Counter(), collections.Counter()
        while True:
            time.sleep(0.005)
            frame = sys._current_frames().get(main)
            if frame is None:
                continue
            idle = frame.f_code.co_name in ("select", "poll")
            if not idle:
                start = start or time.monotonic()
                names, f = [], frame
                while f is not None:
                    names.append(f.f_code.co_name)
                    f = f.f_back
                seen.update(set(names[:12]))
                leaves[f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{names[0]}"] += 1
            elif start is not None:
                if time.monotonic() - start >= 0.06:
                    top = ",".join(n for n, _ in seen.most_common(8))
                    leaf = ",".join(f"{n}x{c}" for n, c in leaves.most_common(3))
                    out.write(f"stall {start:.6f} {time.monotonic() - start:.3f} {top} "
                              f"innermost:{leaf}\n")
                start, seen, leaves = None, collections.Counter(), collections.Counter()

    threading.Thread(target=sample, daemon=True).start()


# -- the driver ----------------------------------------------------------------------------------
class Pane:
    """One tmux session (`target`) of the tmux server on `socket`; several panes may share one
    server (key_latency_ratios.py runs three side by side)."""

    def __init__(self, target: str = "keys", socket: str = "") -> None:
        self.socket = socket or f"sagetui-keys-{os.getpid()}"
        self.target = target

    def __call__(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, check=False).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", self.target)

    def send(self, key: str) -> None:
        self("send-keys", "-t", self.target, key)

    def launch(self, script: Path, args: str) -> None:
        """Start `python script args` in a new detached session of SIZE, TERM=xterm-256color,
        once the pty has that size (so that the first frame is laid out for it)."""
        root = Path(__file__).resolve().parent.parent
        cmd = (f"while [ \"$(stty size)\" != '{SIZE[1]} {SIZE[0]}' ]; do sleep 0.05; done; "
               f"cd {root} && env -u COLORTERM -u COLUMNS -u LINES TERM=xterm-256color "
               f"PYTHONPATH={root} {sys.executable} {script} {args}")
        self("new-session", "-d", "-s", self.target, "-x", str(SIZE[0]), "-y", str(SIZE[1]),
             cmd)

    def wait_for(self, test, timeout: float = 30.0) -> float:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if test(self.screen()):
                return time.monotonic()
            time.sleep(0.005)
        raise TimeoutError(f"the screen never changed as expected:\n{self.screen()}")


def presses(pane: Pane, n: int, rng: random.Random, start_tab: str,
            markers: dict[str, str] = MARKERS) -> list[tuple[float, float, str]]:
    """(key sent, seen, key) monotonic times of n tab switches; `markers`: tab key -> a text
    only that tab shows."""
    cycle = ["3", "4", "1", "2", "5", "7"]
    tab, out = start_tab, []
    for i in range(n):
        nxt = cycle[i % len(cycle)]
        if nxt == tab:
            nxt = cycle[(i + 1) % len(cycle)]
        new, old = markers[nxt], markers[tab]
        time.sleep(rng.uniform(0.2, 0.4))
        t0 = time.monotonic()
        pane.send(nxt)
        t1 = pane.wait_for(lambda s, new=new, old=old: shows(s, new) and not shows(s, old))
        out.append((t0, t1, nxt))
        tab = nxt
    return out


def split(events: list[tuple[str, float]], t0: float, t1: float, _key: str = ""
          ) -> tuple[float, float, float]:
    """(key to action, action to first frame after it, frame to seen) for one press."""
    action = next((t for k, t in events if k == "action" and t0 <= t <= t1), None)
    if action is None:
        return float("nan"), float("nan"), float("nan")
    frames = [t for k, t in events if k == "frame" and action <= t <= t1]
    frame = frames[0] if frames else t1
    return action - t0, frame - action, t1 - frame


def read_log(path: str) -> list[tuple[str, float]]:
    out = []
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if parts[0] in ("action", "frame"):
            out.append((parts[0], float(parts[1])))
    return out


def explain(path: str, presses: list[tuple[float, float, str]], slower_than: float) -> None:
    """--diagnose: what the console logged during each press slower than `slower_than`."""
    lines = [ln.split() for ln in Path(path).read_text().splitlines()]
    for t0, t1, key in presses:
        if t1 - t0 < slower_than:
            continue
        print(f"  tab {key}: {(t1 - t0) * 1e3:.0f} ms")
        for parts in lines:
            kind = parts[0]
            if kind in ("gcs", "gce", "saves", "savee"):
                t = float(parts[1])
                if t0 - 0.5 <= t <= t1:
                    print(f"    {kind} at {(t - t0) * 1e3:+.0f} ms")
            elif kind == "stall":
                t, d = float(parts[1]), float(parts[2])
                if t < t1 and t + d > t0 - 0.05:
                    print(f"    UI busy from {(t - t0) * 1e3:+.0f} ms for {d * 1e3:.0f} ms: "
                          f"{' '.join(parts[3:])}")


def stop_console(log: str) -> None:
    """End the console this script started (its pid is in its log): tmux's hangup alone may
    leave it running."""
    try:
        pid = int(next(ln.split()[1] for ln in Path(log).read_text().splitlines()
                       if ln.startswith("pid ")))
    except (OSError, StopIteration, ValueError):
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def serve_args(log: str, counter: str, rate: float, recovery: str, diagnose: bool = False
               ) -> str:
    """This script's arguments that make it the instrumented console (see serve)."""
    return (f"--serve --log {log} --counter {counter} --rate {rate} --recovery={recovery}"
            f"{' --diagnose' if diagnose else ''}")


def start_run(pane: Pane, counter: str, timeout: float = 30.0) -> int:
    """Press r in the console and wait for the runner's first events; their count so far."""
    pane.send("r")
    deadline = time.monotonic() + timeout
    while read_counter(counter) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    return read_counter(counter)


def print_presses(name: str, presses: list[tuple[float, float, str]],
                  events: list[tuple[str, float]]) -> None:
    """--verbose: every press and its split."""
    for t0, t1, key in presses:
        k, f, s = split(events, t0, t1)
        print(f"  {name} tab {key}: {(t1 - t0) * 1e3:5.0f} ms = key->action {k * 1e3:4.0f} + "
              f"action->frame {f * 1e3:4.0f} + frame->seen {s * 1e3:4.0f}")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))]


def report(name: str, lat: list[float], parts: list[tuple[float, float, float]]) -> str:
    ms = [x * 1e3 for x in lat]
    med = [statistics.median([p[i] * 1e3 for p in parts if p[i] == p[i]] or [float("nan")])
           for i in range(3)]
    return (f"{name}: median {statistics.median(ms):.0f} ms, p95 {pct(ms, 95):.0f} ms, max "
            f"{max(ms):.0f} ms over {len(ms)} presses; median split: key->action {med[0]:.0f}"
            f" ms, action->frame {med[1]:.0f} ms, frame->seen {med[2]:.0f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presses", type=int, default=40)
    ap.add_argument("--rate", type=float, default=10_000.0)
    ap.add_argument("--warm-s", type=float, default=5.0,
                    help="how long the run streams before the first timed press")
    ap.add_argument("--verbose", action="store_true", help="print every press")
    ap.add_argument("--no-autosave", action="store_true",
                    help="diagnosis: no recovery file (the console writes one after rounds)")
    ap.add_argument("--diagnose", action="store_true",
                    help="log GC, autosaves and UI stalls in the console; explain slow presses")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    ap.add_argument("--counter", help=argparse.SUPPRESS)
    ap.add_argument("--recovery", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        return serve(a.log, a.counter, a.rate, a.recovery, a.diagnose)

    print(f"key latency benchmark; {load_average()}")
    rng = random.Random(0)
    pane = Pane()
    with tempfile.TemporaryDirectory(prefix="sagetui-keys-") as tmp:
        log, counter = str(Path(tmp) / "log"), str(Path(tmp) / "counter")
        pane.launch(Path(__file__).resolve(), serve_args(log, counter, a.rate,
                    "" if a.no_autosave else tmp + "/recovery.json", a.diagnose))
        try:
            pane.wait_for(lambda s: "press r to run" in s)
            time.sleep(1.0)
            idle = presses(pane, a.presses, rng, "1")
            pane.send("1")
            pane.wait_for(lambda s: MARKERS["1"] in s)
            n0 = start_run(pane, counter)
            time.sleep(a.warm_s)
            t_stream = time.monotonic()
            busy = presses(pane, a.presses, rng, "1")
            n1 = read_counter(counter)
            rate = (n1 - n0) / (time.monotonic() - t_stream + a.warm_s)
            events = read_log(log)
            log_copy = str(Path(tempfile.gettempdir()) / f"sagetui-keys-{os.getpid()}.log")
            Path(log_copy).write_text(Path(log).read_text())
        finally:
            pane("kill-server")
            stop_console(log)
    if n0 == 0:
        print("the run never streamed")
        return 1
    idle_lat = [t1 - t0 for t0, t1, _ in idle]
    busy_lat = [t1 - t0 for t0, t1, _ in busy]
    print(report("idle console    ", idle_lat, [split(events, *p) for p in idle]))
    print(report("while streaming ", busy_lat, [split(events, *p) for p in busy]))
    print(f"the runner streamed {rate:,.0f} events/s over the timed presses ({n1:,} events in "
          f"all by the last press)")
    if a.diagnose:
        print("slow presses while streaming, and what the console logged around them:")
        explain(log_copy, busy, 0.1)
    if a.verbose:
        print_presses("idle", idle, events)
        print_presses("streaming", busy, events)
    p95 = pct(busy_lat, 95)
    print(f"\nsummary ({load_average()}):")
    print(f"  p95 key press -> updated screen while streaming: {p95 * 1e3:.0f} ms ("
          f"{p95 / TARGET_P95_S:.2f} of the {TARGET_P95_S * 1e3:.0f} ms target) -> "
          f"{'met' if p95 < TARGET_P95_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
