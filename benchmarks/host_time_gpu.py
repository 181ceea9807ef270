"""What the user's model pays, on a GPU: per call the host time, GPU time and back-to-back time
of sdpa, sage2-sm80, sage2-sm89 and sage2-sm90 at 1 x 8 x 4,096 x 128 HND and at the reference
shape (1 x 37,810 x 56 x 128 NHD bf16), the seconds from `measured` to `finished` (the late
figures: the whole report within 2 s of the verdicts), and a replay of an 8-call workload
(8 calls of 1 x 8 x 4,096 x 128 HND bf16, captured here from plain SDPA calls) run three times
in a row, its totals in GPU time and in back-to-back time with their intervals.

    python benchmarks/host_time_gpu.py [--rounds 10] [--replays 3] [--out DIR]
        [--workload DIR]   (an existing capture instead of the synthetic 8-call one)

Every run is a cold `python -m sagetui run` (benchmarks/cold_start.run_once: its events
stamped as they arrive); each report is kept in --out and `sagetui check`ed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import run_once  # noqa: E402

VARIANTS = ["--variant", "sdpa", "--variant", "sage2-sm80", "--variant", "sage2-sm89",
            "--variant", "sage2-sm90"]
SHAPES = {
    "1x8x4096x128 HND": ["--batch", "1", "--heads", "8", "--q-len", "4096", "--head-dim", "128",
                         "--layout", "HND", "--dtype", "bf16"],
    "reference 1x37810x56x128 NHD": [],  # sagetui's GPU default
}
ROOT = Path(__file__).resolve().parent.parent


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:8.3f}"


def ci(est: float | None, lo: float | None, hi: float | None) -> str:
    if est is None:
        return "-"
    return f"{est:+.1f} %" + ("" if lo is None or hi is None else f" [{lo:+.1f}, {hi:+.1f}]")


def check(path: Path) -> str:
    out = subprocess.run([sys.executable, "-m", "sagetui", "check", str(path)],
                         capture_output=True, text=True, cwd=ROOT)
    return "check ok" if out.returncode == 0 else f"check FAILED: {out.stdout[-300:]}"


def per_call(report: dict) -> None:
    print(f"  {'variant':11} {'GPU p50 ms':>10} {'host ms':>8} {'b2b ms':>8} {'bound':>5} "
          f"{'redone':>6} {'drained':>7} {'SM MHz':>7} {'W':>6}  verdict")
    for v in report.get("variants") or []:
        t, c, vd = v.get("timing") or {}, v.get("clocks") or {}, v.get("verdict") or {}
        bound = {True: "HOST", False: "GPU"}.get(v.get("host_bound"), "-")
        print(f"  {v['name']:11} {ms(t.get('p50_s')):>10} {ms(v.get('host_s')):>8} "
              f"{ms(v.get('back_to_back_s')):>8} {bound:>5} {v.get('redone_blocks', '-'):>6} "
              f"{v.get('drained_blocks', '-'):>7} {c.get('mean_sm_clock_mhz') or 0:7.0f} "
              f"{c.get('mean_power_w') or 0:6.1f}  {vd.get('state', '')} "
              + ci(vd.get("estimate_percent"), vd.get("ci_low_percent"),
                   vd.get("ci_high_percent"))
              + (f"; {c['note']}" if c.get("note") else ""))


CAPTURE = """
import sys, torch, sagetui
import torch.nn.functional as F
torch.manual_seed(0)
with sagetui.capture(sys.argv[1]):
    x = torch.randn(1, 8, 4096, 128, dtype=torch.bfloat16, device="cuda")
    for block in range(8):  # an 8-block model's attention calls, each its own inputs
        q, k, v = (x + 0.1 * torch.randn_like(x) for _ in range(3))
        x = F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
"""


def capture(directory: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    subprocess.run([sys.executable, "-c", CAPTURE, str(directory)], check=True, env=env)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--replays", type=int, default=3)
    ap.add_argument("--out", default="/tmp/sagetui-host-time")
    ap.add_argument("--workload", help="an existing capture directory")
    ap.add_argument("--extra-path", default=os.environ.get("SAGETUI_EXTRA_PATH", ""))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    for name, words in SHAPES.items():
        m = run_once(sys.executable, str(ROOT), None, "ref", args.rounds, args.extra_path,
                     extra_args=[*VARIANTS, *words])
        kept = out / f"run_{name.split()[0]}.json"
        made = Path(str(m["report_path"]))
        if not made.exists():  # the run's own words are in its marks (exit status, events)
            print(f"\n{name}: no report (exit {m.get('rc')}; marks {m})")
            continue
        report = json.loads(made.read_text())
        kept.write_text(json.dumps(report))
        late = float(m.get("report", "nan")) - float(m.get("verdict", "nan"))
        print(f"\n{name}: status {report.get('status')}, exit {m['rc']}; measured -> finished "
              f"{late:.2f} s ({'met' if late <= 2.0 else 'MISSED'}: within 2 s); "
              f"{check(kept)}")
        per_call(report)
    cap = Path(args.workload) if args.workload else out / "capture_8x_1x8x4096x128"
    if not args.workload and not cap.exists():
        capture(cap)
    print(f"\nworkload {cap}: {args.replays} replays in a row")
    for i in range(args.replays):
        kept = out / f"workload_{i + 1}.json"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "sagetui", "run", "--workload", str(cap),
                               *VARIANTS, "--rounds", str(args.rounds), "--quiet", "--force",
                               "--json", str(kept)], capture_output=True, text=True, cwd=ROOT)
        if not kept.exists():
            print(f"  replay {i + 1}: exit {proc.returncode}: {proc.stderr[-300:]}")
            continue
        wl = json.loads(kept.read_text()).get("workload") or {}
        print(f"  replay {i + 1} ({time.perf_counter() - t0:.0f} s, exit {proc.returncode}, "
              f"{check(kept)}):")
        for t in wl.get("totals") or []:
            gpu = ci(*(t.get(k) for k in ("speedup_percent", "ci_low_percent",
                                          "ci_high_percent")))
            b2b = ci(*(t.get(f"back_to_back_{k}") for k in ("speedup_percent", "ci_low_percent",
                                                              "ci_high_percent")))
            print(f"    {t['variant']:11} GPU {ms(t.get('seconds'))} ms {gpu:28} "
                  f"back to back {ms(t.get('back_to_back_seconds'))} ms {b2b}")
        for c in wl.get("calls") or []:
            if c.get("point") is None:
                continue
            p = wl["points"][c["point"]]
            cells = [f"{v['name']} {ms((v.get('timing') or {}).get('p50_s')).strip()}/"
                     f"{ms(v.get('host_s')).strip()}/{ms(v.get('back_to_back_s')).strip()}"
                     + (" HOST" if v.get("host_bound") else "") for v in p["variants"]]
            print(f"    call {c['index']} (GPU/host/b2b ms): " + "; ".join(cells))
    print(f"\nload average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
