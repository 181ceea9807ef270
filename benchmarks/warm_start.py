"""From `r` to the first round in the console, run after run: the first run starts a runner;
later ones find it warm (session/warm.py) and, on the same shape, its inputs kept.

The console (`SageTUI`, headless under App.run_test) gets the configuration `sagetui` would
build from the same options (cli/run_options.py config_from_args), and `r` is pressed RUNS times;
each run goes to its end (an unexported result's question is answered "run again"). For each
run it prints the seconds from the key press to the first round's start (every variant set up
and warmed up) and to its end (the first round's verdicts on screen), and whether the runner
was warm. The same script runs against an older tree (PYTHONPATH) for the "before" figures.

    python benchmarks/warm_start.py --backend sage2-sm89 [--runs 3] [--rounds 2] [--json F]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time


async def measure(args: argparse.Namespace) -> list[dict[str, float | bool]]:
    from sagetui.cli.main import build_parser
    from sagetui.cli.run_options import config_from_args
    from sagetui.core import events as ev
    from sagetui.tui.app import SageTUI
    from sagetui.tui.modals import ChoiceScreen

    argv = ["run", "--rounds", str(args.rounds), "--iterations", str(args.iterations)]
    for b in args.backend:
        argv += ["--backend", b]
    config = config_from_args(build_parser(only="run").parse_args(argv))
    out = tempfile.mkdtemp(prefix="sagetui-warm-")
    app = SageTUI(config=config, recovery_path=f"{out}/recovery.json", export_dir=out)
    marks: dict[str, float] = {}
    warm = {"yes": False}
    seen = app.run_control.on_event

    def on_event(e: ev.Event) -> None:
        now = time.perf_counter()
        if isinstance(e, ev.RoundStarted):
            marks.setdefault("started", now)
        elif isinstance(e, ev.RoundDone):
            marks.setdefault("done", now)
        elif isinstance(e, ev.LogMessage) and "runner is warm" in e.message:
            warm["yes"] = True
        seen(e)

    app.run_control.on_event = on_event  # type: ignore[method-assign]
    rows: list[dict[str, float | bool]] = []
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(args.runs):
            marks.clear()
            warm["yes"] = False
            t0 = time.perf_counter()
            await pilot.press("r")
            await pilot.pause()
            if isinstance(app.screen, ChoiceScreen):  # the last run is not exported
                await pilot.press("y")
            while "started" not in marks or app.running:
                await asyncio.sleep(0.005)
            rows.append({"to_first_round_start_s": marks["started"] - t0,
                         "to_first_round_done_s": marks["done"] - t0, "warm": warm["yes"]})
            r = rows[-1]
            print(f"run {len(rows)}: r -> first round start {r['to_first_round_start_s']:.2f}"
                  f" s, -> first round done {r['to_first_round_done_s']:.2f} s"
                  f" ({'warm' if warm['yes'] else 'cold'} runner)", flush=True)
        await pilot.press("q")
        await pilot.pause()
        if isinstance(app.screen, ChoiceScreen):
            await pilot.press("y")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", action="append", default=[])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = asyncio.run(measure(args))
    later = [r["to_first_round_start_s"] for r in rows[1:]]
    if later:
        print(f"first run {rows[0]['to_first_round_start_s']:.2f} s; later runs, median "
              f"{statistics.median(later):.2f} s (ratio "
              f"{statistics.median(later) / float(rows[0]['to_first_round_start_s']):.2f})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"backend": args.backend, "runs": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
