"""What the user's model pays, on a GPU: per call the host time, GPU time and back-to-back time
of sdpa, sage2-sm80, sage2-sm89 and sage2-sm90 at 1 x 8 x 4,096 x 128 HND and at the reference
shape (1 x 37,810 x 56 x 128 NHD bf16), the seconds from `measured` to `finished` (the late
figures: the whole report within 2 s of the verdicts), and a replay of an 8-call workload
(8 calls of 1 x 8 x 4,096 x 128 HND bf16, captured here from plain SDPA calls) run three times
in a row, its totals in GPU time and in back-to-back time with their intervals.

    python benchmarks/host_time_gpu.py [--rounds 10] [--replays 3] [--out DIR]
        [--shapes 1x8 reference] [--pairs 3]
        [--workload DIR]   (an existing capture instead of the synthetic 8-call one)

Every run is a cold `python -m sagetui run` (benchmarks/cold_start.run_once: its events
stamped as they arrive); each report is kept in --out and `sagetui check`ed.

**An independent loop** (`loop_times`, written apart from sagetui's runner: no sagetui import)
times each public function as a user calls it, with SageAttention's and torch's own arguments
spelled out here, before and after each sagetui run (--pairs sagetui runs, each between two of
the loop's), on the same inputs' shape: GPU time by
CUDA events around a block of calls behind a sleep kernel long enough for the whole enqueue
(a block whose GPU left the sleep first is dropped, the sleep doubled); host time by
perf_counter around that enqueue; back-to-back time by a hot loop of as many calls from an idle
GPU, synchronised once; the median of REPEATS blocks each. The figures are defined as
docs/architecture.md ("Host time and back-to-back time") defines them, and measured here
independently: a block holds the calls that make about 10 ms of GPU time (2 to 100; the GPU
time a call from 5 calls behind a sleep), and three untimed calls go first behind the sleep
(the first call after a pause costs 2-7 calls' enqueue, the second 1.3-1.8 and the third
1.05-1.1: benchmarks/host_noise_gpu.py; over a block of 2 they would be most of the figure).
Per variant and figure it prints the median of sagetui's runs over the median of the loop's,
and whether it lies within 0.90-1.10; beside it each run's ratio (over the mean of the loop's
runs on either side) and how far the loop's own runs lie apart. Pooled, because on an H100 the
host's pace moved the loop against itself by up to 1.7x from one minute to the next, and
sagetui's rounds within one run (at the reference shape a block of 2 calls each) by up to half:
over ten single pairs the host-time ratios read 0.62-1.23, scattered both sides of 1
(benchmarks/results/h100_host_time_20261207.txt). Every event after `measured` is printed,
stamped: where the late seconds go.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import run_once  # noqa: E402

LEAD = 3  # untimed calls before each timed block (the module docstring)
NAMES = ["sdpa", "sage2-sm80", "sage2-sm89", "sage2-sm90", "sage2-auto"]
VARIANTS = [w for n in NAMES for w in ("--variant", n)]
REPLAYED = [w for n in NAMES[:4] for w in ("--variant", n)]
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
    print(f"  {'variant':11} {'phases p50':>10} {'host ms':>8} {'b2b ms':>8} {'bound':>5} "
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
    for v in report.get("variants") or []:  # each round's, in order: a figure that drifts
        print(f"    {v['name']:11} host per round ms: "
              + " ".join(f"{x * 1e3:.3f}" for x in v.get("host_times_s") or []))


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


# -- the independent loop ---------------------------------------------------------------------
BLOCK_GPU_S = 0.01  # a block's GPU time: its calls, 2 to 100
REPEATS = 15  # blocks (5 of the long calls)
SHAPE_DIMS = {  # (batch, heads, tokens, head_dim, layout): as SHAPES' sagetui words say
    "1x8x4096x128 HND": (1, 8, 4096, 128, "HND"),
    "reference 1x37810x56x128 NHD": (1, 56, 37810, 128, "NHD"),
}


def public_call(variant: str, layout: str, d: int):  # noqa: ANN201 - a callable of q, k, v
    """`variant`'s public function with sagetui's default options, spelled out from
    SageAttention's and torch's signatures (not read from sagetui)."""
    import functools

    import sageattention
    import torch.nn.functional as F

    scale = d ** -0.5
    common = dict(tensor_layout=layout, is_causal=False, sm_scale=scale)
    if variant == "sdpa":
        def sdpa(q, k, v):  # noqa: ANN001, ANN202
            if layout == "NHD":  # a model holding NHD tensors hands SDPA their HND views
                return F.scaled_dot_product_attention(
                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                    is_causal=False, scale=scale).transpose(1, 2)
            return F.scaled_dot_product_attention(q, k, v, is_causal=False, scale=scale)
        return sdpa
    if variant == "sage2-sm80":
        return functools.partial(sageattention.sageattn_qk_int8_pv_fp16_cuda, **common,
                                 qk_quant_gran="per_warp", pv_accum_dtype="fp32",
                                 smooth_k=True, smooth_v=False)
    if variant == "sage2-sm89":
        return functools.partial(sageattention.sageattn_qk_int8_pv_fp8_cuda, **common,
                                 qk_quant_gran="per_warp", pv_accum_dtype="fp32+fp32",
                                 smooth_k=True, smooth_v=False)
    if variant == "sage2-sm90":
        return functools.partial(sageattention.sageattn_qk_int8_pv_fp8_cuda_sm90, **common,
                                 qk_quant_gran="per_warp", pv_accum_dtype="fp32+fp32",
                                 smooth_k=True)
    if variant == "sage2-auto":
        return functools.partial(sageattention.sageattn, **common)
    raise ValueError(variant)


def loop_times(variant: str, dims: tuple) -> dict[str, float]:
    """Per call, seconds: GPU, host and back-to-back time, each the median of REPEATS blocks."""
    import gc

    import torch

    b, h, n, d, layout = dims
    shape = (b, h, n, d) if layout == "HND" else (b, n, h, d)
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(shape, dtype=torch.bfloat16, device="cuda", generator=g)
               for _ in range(3))
    call = public_call(variant, layout, d)
    for _ in range(3):  # its first call pays imports and JIT
        call(q, k, v)
    torch.cuda.synchronize()
    t = time.perf_counter()
    call(q, k, v)
    torch.cuda.synchronize()
    one = time.perf_counter() - t  # one call, synchronised (host and GPU)
    t = time.perf_counter()
    for _ in range(3):
        call(q, k, v)
    enqueue = (time.perf_counter() - t) / 3  # its host time, about
    torch.cuda.synchronize()
    torch.cuda._sleep(int(2e9 * (10 * enqueue + 2e-3)))  # the GPU time a call, gated
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        call(q, k, v)
    end.record()
    torch.cuda.synchronize()
    gpu_one = start.elapsed_time(end) * 1e-3 / 5
    block = max(2, min(100, math.ceil(BLOCK_GPU_S / max(gpu_one, 1e-6))))
    gpu, host, b2b = [], [], []
    sleep_s = 2 * (block + 3 * LEAD) * enqueue + 2e-3  # three enqueues for each untimed call
    gc.disable()  # as timeit does: a collection's pause is no call's
    for _ in range(REPEATS if one < 0.01 else 5):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(2e9 * sleep_s))  # ~1-2x its seconds at 1-2 GHz
        for _ in range(LEAD):  # untimed, behind the sleep: the first calls after a pause
            call(q, k, v)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t = time.perf_counter()
        for _ in range(block):
            call(q, k, v)
        host.append((time.perf_counter() - t) / block)
        waited = start.query()  # True: the GPU left the sleep before the host was done
        end.record()
        torch.cuda.synchronize()
        if waited:
            sleep_s *= 2
        else:
            gpu.append(start.elapsed_time(end) * 1e-3 / block)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(block):
            call(q, k, v)
        torch.cuda.synchronize()
        b2b.append((time.perf_counter() - t) / block)
    gc.enable()
    med = statistics.median
    return {"call_gpu_s": med(gpu) if gpu else float("nan"), "host_s": med(host),
            "back_to_back_s": med(b2b), "gpu_blocks": float(len(gpu)), "block": float(block)}


def loop_all(variants: list[str], dims: tuple) -> dict[str, dict[str, float]]:
    out = {}
    for name in variants:
        try:
            out[name] = loop_times(name, dims)
        except Exception as exc:  # noqa: BLE001 - said, and the rest measured
            print(f"  loop {name}: {type(exc).__name__}: {exc}")
            continue
        print(f"  loop {name:11} " + "  ".join(f"{k} {v * 1e3:.4f} ms" for k, v in
                                                out[name].items() if k.endswith("_s")),
              flush=True)
    import torch

    torch.cuda.empty_cache()
    return out


def ratio(mine: float, theirs: float) -> float:
    return mine / theirs if theirs == theirs and theirs > 0 else float("nan")


def ratios(reports: list[dict], loops: list[dict[str, dict[str, float]]]) -> bool:
    """Per variant and figure the median of sagetui's runs over the median of the loop's (each
    sagetui run between loops[i] and loops[i + 1]); True when every one lies within 0.90-1.10.
    Beside it each run's ratio over the mean of the loop's runs on either side, and the loop's
    spread (its largest run over its smallest): where that passes the band, the host's pace
    moved in those minutes, and no single pair says much."""
    ok = True
    print(f"  {'variant':11} {'figure':15} {'sagetui ms':>10} {'loop ms':>9} {'ratio':>6}  "
          "each run's ratio; the loop's spread; timed call")
    names = [v["name"] for v in reports[0].get("variants") or []] if reports else []
    for name in names:
        mine_runs: list[dict] = [
            next((v for v in r.get("variants") or [] if v["name"] == name), {})
            for r in reports]
        for fig in ("call_gpu_s", "host_s", "back_to_back_s"):
            each = [lp[name][fig] for lp in loops if name in lp]
            if not each or any(v.get(fig) is None for v in mine_runs):
                continue
            mine = [float(v[fig]) for v in mine_runs]
            mine_med, loop_med = statistics.median(mine), statistics.median(each)
            pooled = ratio(mine_med, loop_med)
            within = 0.90 <= pooled <= 1.10
            ok &= within
            pairs = [ratio(m, (loops[i][name][fig] + loops[i + 1][name][fig]) / 2)
                     for i, m in enumerate(mine)
                     if name in loops[i] and name in loops[i + 1]]
            spread = ratio(max(each), min(each))
            print(f"  {name:11} {fig:15} {ms(mine_med):>10} "
                  f"{ms(loop_med):>9} {pooled:6.3f}{'' if within else ' OUT'}  "
                  + " ".join(f"{x:.2f}" for x in pairs)
                  + f"; {spread:.2f}" + (" (the loop moved)" if spread > 1.10 else "")
                  + (f"; {mine_runs[0].get('timed_call')}" if fig == "host_s" else ""))
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--replays", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=3,
                    help="sagetui runs per shape, each between two of the loop's")
    ap.add_argument("--out", default="/tmp/sagetui-host-time")
    ap.add_argument("--workload", help="an existing capture directory")
    ap.add_argument("--shapes", nargs="+", default=["1x8", "reference"],
                    help="which shapes (by their names' start): 1x8, reference")
    ap.add_argument("--extra-path", default=os.environ.get("SAGETUI_EXTRA_PATH", ""))
    ap.add_argument("--affinity", metavar="CPU",
                    help="one CPU for the loop (this process) and for sagetui (--affinity): a "
                         "call's host time depends on the CPU it is enqueued from")
    args = ap.parse_args()
    pin = ["--affinity", args.affinity] if args.affinity else []
    allowed = os.sched_getaffinity(0)
    if args.affinity:
        # the loop's thread pinned while it times, sagetui started from every CPU: its own
        # pin then holds its timing thread alone, its hashing and telemetry threads and the
        # session's process elsewhere (pinned before it started, this process's pin was all
        # the CPUs sagetui had: its hashes ran beside its timed calls)
        print(f"the loop's thread and sagetui's timing thread on CPU {args.affinity}; "
              f"the rest of sagetui on CPUs {sorted(allowed)}", flush=True)

    def loops(dims: tuple) -> dict[str, dict[str, float]]:
        if args.affinity:
            os.sched_setaffinity(0, {int(args.affinity)})
        try:
            return loop_all(NAMES, dims)
        finally:
            os.sched_setaffinity(0, allowed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    all_within = True
    for name, words in SHAPES.items():
        if not any(name.startswith(w) for w in args.shapes):
            continue
        print(f"\n{name}: the independent loop, then sagetui and the loop again, "
              f"{args.pairs} times", flush=True)
        timed = [loops(SHAPE_DIMS[name])]
        reports: list[dict] = []
        for i in range(args.pairs):
            m = run_once(sys.executable, str(ROOT), None, "ref", args.rounds, args.extra_path,
                         extra_args=[*VARIANTS, *words, *pin])
            kept = out / f"run_{name.split()[0]}_{i + 1}.json"
            made = Path(str(m["report_path"]))
            if not made.exists():  # the run's own words are in its marks (exit, events)
                print(f"\n{name}: no report (exit {m.get('rc')}; marks {m})")
                break
            report = json.loads(made.read_text())
            kept.write_text(json.dumps(report))
            late = float(m.get("report", "nan")) - float(m.get("verdict", "nan"))
            print(f"\n{name}, run {i + 1}: status {report.get('status')}, exit {m['rc']}; "
                  f"measured -> finished {late:.2f} s "
                  f"({'met' if late <= 2.0 else 'MISSED'}: within 2 s); {check(kept)}")
            print(f"  after measured: {m.get('after_measured')}")
            per_call(report)  # before the next loop: a run cut short still shows its figures
            timed.append(loops(SHAPE_DIMS[name]))
            reports.append(report)
        all_within &= bool(reports) and ratios(reports, timed)
    print(f"\nevery figure within 0.90-1.10 of the loop's: {'yes' if all_within else 'NO'}")
    if args.replays <= 0:
        return 0
    cap = Path(args.workload) if args.workload else out / "capture_8x_1x8x4096x128"
    if not args.workload and not cap.exists():
        capture(cap)
    print(f"\nworkload {cap}: {args.replays} replays in a row")
    intervals: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for i in range(args.replays):
        kept = out / f"workload_{i + 1}.json"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "sagetui", "run", "--workload", str(cap),
                               *REPLAYED, *pin, "--rounds", str(args.rounds), "--quiet",
                               "--force",
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
            for fig, pre in (("GPU", ""), ("back to back", "back_to_back_")):
                lo, hi = t.get(f"{pre}ci_low_percent"), t.get(f"{pre}ci_high_percent")
                if lo is not None and hi is not None:
                    intervals.setdefault((t["variant"], fig), []).append((lo, hi))
        for c in wl.get("calls") or []:
            if c.get("point") is None:
                continue
            p = wl["points"][c["point"]]
            cells = [f"{v['name']} {ms((v.get('timing') or {}).get('p50_s')).strip()}/"
                     f"{ms(v.get('host_s')).strip()}/{ms(v.get('back_to_back_s')).strip()}"
                     + (" HOST" if v.get("host_bound") else "") for v in p["variants"]]
            print(f"    call {c['index']} (GPU/host/b2b ms): " + "; ".join(cells))
    # the replays agree where one speedup lies inside every replay's interval
    for (variant, fig), got in intervals.items():
        low, high = max(lo for lo, _ in got), min(hi for _, hi in got)
        print(f"  {variant:11} {fig:12} speedup intervals of {len(got)} replays "
              f"{'agree' if low <= high else 'DO NOT agree'} (common part "
              f"[{low:+.2f}, {high:+.2f}])")
    print(f"\nload average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
