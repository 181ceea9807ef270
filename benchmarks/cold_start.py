"""From `sagetui run` to the verdict, cold: the floor, the time to the first round and the tail
after the last round, side by side in one run.

For each code tree (NAME=PATH, put first on PYTHONPATH), backend and shape it runs
`python -m sagetui run --backend B --rounds R` in a fresh process, its event stream recorded into
a named pipe (`--record-events`: a pipe's reader gets each event as it is handed to the display)
and every event stamped as it arrives. Beside them, alternately, the floor: a bare
`python -c "import torch; torch.zeros(1, device='cuda')"` (CPU: `torch.zeros(1)`).

Printed per run (seconds from the process's start): the runner's hello, inputs ready, the first
round's start (every variant warmed up: its first timed block follows), round 1 done, the last
round done, the verdict (the `measured` event, at which `sagetui run` prints its table; a tree
without it shows its verdict with the report), the report (`finished`) and the exit; then the
medians, and against the issue's targets: first round <= floor + 2 s, last round to verdict
<= 1 s, and the whole report within 2 s of the verdict (`measured` -> `finished`: the late
figures, with the public API's first call paid in the baseline's warm-up).

    python benchmarks/cold_start.py --trees new=. --trees base=.bench_base \
        --backend sage2-sm90 --backend sage2-sm89 --shape ref --shape small [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SHAPES = {  # the reference shape (1 x 37,810 x 56 x 128) is sagetui's GPU default
    "ref": [],
    "small": ["--q-len", "4096", "--heads", "16"],
    "cpu": [],  # the CPU default (1 x 1024 x 6 x 128)
}
MARKS = ("hello", "loaded", "ready", "warmed", "first_round", "round1_done", "last_round",
         "verdict", "decomposed", "report", "exit")


def floor_s(python: str, gpu: bool) -> float:
    code = ("import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()" if gpu
            else "import torch; torch.zeros(1)")
    t0 = time.perf_counter()
    subprocess.run([python, "-c", code], check=True)
    return time.perf_counter() - t0


def run_once(python: str, tree: str, backend: str | None, shape: str, rounds: int,
             extra_path: str, extra_args: list[str] | None = None) -> dict[str, float | str]:
    """One cold `sagetui run`, its events stamped as they arrive (MARKS); `extra_args` more
    words for it (variants); the marks hold its report's path (`report_path`)."""
    tmp = Path(tempfile.mkdtemp(prefix="sagetui-cold-"))
    fifo = tmp / "events"
    os.mkfifo(fifo)
    arrivals: list[tuple[float, dict]] = []
    argv = [python, "-m", "sagetui", "run", "--rounds", str(rounds), "--json",
            str(tmp / "report.json"), "--record-events", str(fifo), "--force",
            *SHAPES[shape], *(extra_args or [])]
    if backend:
        argv += ["--backend", backend]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (tree, extra_path) if p))
    t0 = time.perf_counter()
    # run where no sagetui/ lies: `python -m` puts the working directory first on sys.path,
    # and the tree under measurement must be the one on PYTHONPATH
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp)

    def read() -> None:
        with open(fifo, encoding="utf-8") as f:
            for line in f:
                arrivals.append((time.perf_counter() - t0, json.loads(line)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out, err = proc.communicate(timeout=900)
    t_exit = time.perf_counter() - t0
    reader.join(timeout=10)
    marks: dict[str, float | str] = {"exit": t_exit, "rc": proc.returncode, "stderr": err[-400:],
                                     "report_path": str(tmp / "report.json")}
    rounds_done = [t for t, e in arrivals if e["event"] == "round_done"]
    for t, e in arrivals:
        name = e["event"]
        if name in ("hello", "ready"):
            marks.setdefault(name, t)
        elif name == "variant":
            marks.setdefault("loaded", t)
        elif name == "warmup_done":
            marks.setdefault("warmed", t)
        elif name == "decomposition":
            marks.setdefault("decomposed", t)
        elif name == "round_started":
            marks.setdefault("first_round", t)
        elif name == "measured":
            marks.setdefault("verdict", t)
        elif name == "finished":
            marks["report"] = t
            marks["status"] = e.get("status", "?")
    if rounds_done:
        marks["round1_done"], marks["last_round"] = rounds_done[0], rounds_done[-1]
    if "verdict" in marks:  # every event after `measured`, stamped from it: where late time goes
        v0 = float(marks["verdict"])
        marks["after_measured"] = "; ".join(
            f"{e['event']}{' ' + str(e['variant']) if e.get('variant') else ''}"
            f"{' ' + ','.join(sorted(e.get('facts') or {})) if e.get('facts') else ''} "
            f"+{t - v0:.2f}" for t, e in arrivals if t >= v0)
    marks.setdefault("verdict", marks.get("report", float("nan")))
    if proc.returncode not in (0, 1):
        marks["error"] = (err or out).strip().splitlines()[-1:] and (err or out).strip()[-300:]
    return marks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", action="append", default=[], help="NAME=PATH (default new=.)")
    ap.add_argument("--backend", action="append", default=[])
    ap.add_argument("--shape", action="append", default=[], choices=sorted(SHAPES))
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--floor-repeats", type=int, default=3)
    ap.add_argument("--extra-path", default=os.environ.get("SAGETUI_EXTRA_PATH", ""),
                    help="appended to PYTHONPATH (where sageattention is)")
    ap.add_argument("--json", help="write every run's marks here")
    args = ap.parse_args()
    python = sys.executable
    trees = [t.split("=", 1) for t in (args.trees or ["new=."])]
    backends = args.backend or [None]
    shapes = args.shape or ["ref"]
    import torch  # only to know whether the floor touches a GPU

    gpu = torch.cuda.is_available()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    floor_s(python, gpu)  # the first import warms the file cache for everything after
    floors: list[float] = []
    rows: list[dict] = []
    for rep in range(args.repeats):
        for backend in backends:
            for shape in shapes:
                for name, path in trees:
                    if len(floors) < args.floor_repeats:
                        floors.append(floor_s(python, gpu))
                    m = run_once(python, str(Path(path).resolve()), backend, shape,
                                 args.rounds, args.extra_path)
                    m.update(tree=name, backend=backend or "default", shape=shape, repeat=rep)
                    rows.append(m)
                    print(json.dumps(m), flush=True)
    while len(floors) < args.floor_repeats:
        floors.append(floor_s(python, gpu))
    floor = statistics.median(floors)
    print(f"\nfloor (import torch; a tensor on the device): median {floor:.2f} s of "
          f"{', '.join(f'{f:.2f}' for f in floors)}")
    print(f"\n{'tree':6} {'backend':11} {'shape':6} " + " ".join(f"{m:>11}" for m in MARKS)
          + "   first-floor  last->verdict  last->report  measured->finished")
    for key in sorted({(r["tree"], r["backend"], r["shape"]) for r in rows}):
        sel = [r for r in rows if (r["tree"], r["backend"], r["shape"]) == key]

        def med(mark: str, sel: list[dict] = sel) -> float:
            vals = [float(r[mark]) for r in sel if mark in r]
            return statistics.median(vals) if vals else float("nan")

        cells = " ".join(f"{med(m):11.2f}" for m in MARKS)
        first, tail, rep = (med("first_round") - floor, med("verdict") - med("last_round"),
                            med("report") - med("last_round"))
        ok1 = "met" if first <= 2.0 else "MISSED"
        ok2 = "met" if tail <= 1.0 else "MISSED"
        late = med("report") - med("verdict")
        ok3 = "met" if late <= 2.0 else "MISSED"
        print(f"{key[0]:6} {key[1][:11]:11} {key[2]:6} {cells}   {first:+6.2f} {ok1:6} "
              f"{tail:6.2f} {ok2:6} {rep:6.2f}   {late:6.2f} {ok3:6}   "
              f"status {sel[-1].get('status')}")
    print(f"\nload average at end: {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"floor_s": floors, "runs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
