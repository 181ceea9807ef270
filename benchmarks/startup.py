"""Start-up: `sagetui --help`, and the console's first paint next to a bare Textual app's.

1. `sagetui --help` (the installed console script), hyperfine-style: a few warm-up runs, then
   --runs timed runs; prints mean +- sd, median, min and max, beside `python -c pass` (the
   interpreter's own start) measured the same way. Target: median under 0.3 s.
2. First paint in a real terminal: tui_first_paint.first_paint (a detached tmux pane, the
   screen polled every 10 ms until a marker shows) times `sagetui` (until "press r to run")
   and a bare Textual app that only paints a Label (until its text), alternately, in the
   same run. Target: the console's median within 0.5 s of the bare app's.
3. Where the difference goes: the import time of `sagetui.tui.app` next to `textual.app` +
   `textual.widgets` (what the bare app imports), each in a fresh interpreter.

    python benchmarks/startup.py [--runs 20] [--paint-runs 9] [--size 160x48]

Not a timed test: run it on an idle machine; it prints the load average.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic_runner import load_average
from tui_first_paint import first_paint

HELP_TARGET_S = 0.3
PAINT_TARGET_S = 0.5
BARE_MARKER = "bare textual app painted"
BARE_APP = f'''from textual.app import App
from textual.widgets import Label


class Bare(App):
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self):
        yield Label("{BARE_MARKER}")


Bare().run()
'''


def wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def hyperfine(argv: list[str], runs: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        wall(argv)
    return [wall(argv) for _ in range(runs)]


def describe(name: str, xs: list[float]) -> str:
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return (f"{name}: mean {statistics.fmean(xs) * 1e3:.1f} ms +- {sd * 1e3:.1f} ms, median "
            f"{statistics.median(xs) * 1e3:.1f} ms, min {min(xs) * 1e3:.1f}, max "
            f"{max(xs) * 1e3:.1f} ({len(xs)} runs)")


def import_s(module_code: str, runs: int = 5) -> float:
    code = f"import time; t = time.perf_counter(); {module_code}; print(time.perf_counter() - t)"
    out = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout) for _ in range(runs)]
    return statistics.median(out)


def paint(size: str, program: str | None, marker: str, tries: int = 3) -> float:
    for attempt in range(tries):  # a tmux server that is slow to start once is not the app
        try:
            return first_paint(size, program=program, marker=marker)
        except TimeoutError:
            if attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--paint-runs", type=int, default=9)
    ap.add_argument("--size", default="160x48")
    a = ap.parse_args()
    print(f"start-up benchmark; {load_average()}")

    script = shutil.which("sagetui", path=str(Path(sys.executable).parent)) or "sagetui"
    help_t = hyperfine([script, "--help"], a.runs)
    pass_t = hyperfine([sys.executable, "-c", "pass"], a.runs)
    print(describe(f"{script} --help", help_t))
    print(describe("python -c pass", pass_t))
    help_med = statistics.median(help_t)
    print(f"--help median {help_med * 1e3:.1f} ms = {help_med / HELP_TARGET_S:.2f} of the "
          f"{HELP_TARGET_S} s target; x{help_med / statistics.median(pass_t):.2f} of a bare "
          "interpreter's start")

    if shutil.which("tmux") is None:
        print("first paint: needs tmux")
        return 1
    console_t, bare_t = [], []
    with tempfile.TemporaryDirectory(prefix="sagetui-startup-") as tmp:
        bare = Path(tmp) / "bare_app.py"
        bare.write_text(BARE_APP)
        paint(a.size, None, "press r to run")  # warm the page cache once, not timed
        paint(a.size, f"{sys.executable} {bare}", BARE_MARKER)
        for _ in range(a.paint_runs):  # alternate, so that both see the same machine
            console_t.append(paint(a.size, None, "press r to run"))
            bare_t.append(paint(a.size, f"{sys.executable} {bare}", BARE_MARKER))
    print(f"\nfirst paint at {a.size} in tmux (polled every 10 ms):")
    print(describe("sagetui console ", console_t))
    print(describe("bare Textual app", bare_t))
    diffs = [c - b for c, b in zip(console_t, bare_t, strict=True)]
    c_med, b_med = statistics.median(console_t), statistics.median(bare_t)
    print(f"console - bare: {(c_med - b_med) * 1e3:.0f} ms between medians (median of paired "
          f"differences {statistics.median(diffs) * 1e3:.0f} ms); ratio x{c_med / b_med:.2f}; "
          f"{(c_med - b_med) / PAINT_TARGET_S:.2f} of the {PAINT_TARGET_S} s allowance")

    imp_app = import_s("import sagetui.tui.app")
    imp_tx = import_s("import textual.app, textual.widgets")
    print(f"\nimport sagetui.tui.app {imp_app * 1e3:.0f} ms vs textual.app + textual.widgets "
          f"{imp_tx * 1e3:.0f} ms (medians of 5 fresh interpreters)")
    print(f"\nsummary ({load_average()}):")
    print(f"  sagetui --help median {help_med * 1e3:.1f} ms (target < {HELP_TARGET_S * 1e3:.0f} "
          f"ms) -> {'met' if help_med < HELP_TARGET_S else 'MISSED'}")
    print(f"  first paint median {c_med:.3f} s vs bare Textual {b_med:.3f} s: +{c_med - b_med:.3f}"
          f" s (target within {PAINT_TARGET_S} s) -> "
          f"{'met' if c_med - b_med < PAINT_TARGET_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
