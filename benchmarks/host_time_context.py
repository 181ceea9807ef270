"""Where sagetui's host time at the reference shape parts from the independent loop's (issue 40):
the same public calls, the same inputs' shape, one process, one CPU for the timing thread, in
five settings, per variant the host time per call (ms, median of the readings) and its readings:

- `loop`: benchmarks/host_time_gpu.loop_times, the independent loop (its own blocks, 5 in a row);
- `timer alone`: sagetui's CallTimer (runner/call_times.py) on the bound public call, 5 times
  in a row with nothing between;
- `timer gate +5ms`, `timer lead 1`: CallTimer alone with its gate 5 ms longer (the GPU still
  in the gate, not in the untimed calls, while the host enqueues the block), and that behind
  one untimed call (runner/call_times.LEAD_CALLS);
- `timer in turn`: CallTimer, the variants taking turns, each measure after that variant's own
  hot loop of `--between` calls (the rounds' phase blocks stand for it);
- `engine`: sagetui's Engine (runner/engine.py), its warm-up then its blocks in the order the
  session sends them (session/schedule.round_order), `host_call_s` of each round;
- `engine lead 1`, `engine 3 blocks`, `engine gate +2ms`: the same with one untimed call
  before the timed block, with three blocks a round where a call is long (one today), or with
  the gate 2 ms longer (the loop's sleep holds the GPU past the whole enqueue: sagetui's gate
  may end while the host enqueues, the GPU then running the untimed calls);
- `engine alone`: the Engine's blocks of one variant, its rounds in a row.

    python benchmarks/host_time_context.py [--cpu 8] [--rounds 5] [--variants sdpa ...]
        [--shape reference|1x8]

A diagnostic: it imports sagetui to run its parts in each setting (the loop it compares with
does not).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def row(name: str, mode: str, readings: list[float]) -> None:
    med = statistics.median(readings) if readings else float("nan")
    print(f"  {name:11} {mode:14} {med * 1e3:8.4f}  "
          + " ".join(f"{x * 1e3:.4f}" for x in readings), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", default="8")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--between", type=int, default=5)
    ap.add_argument("--shape", default="reference", choices=["reference", "1x8"])
    ap.add_argument("--variants", nargs="+",
                    default=["sdpa", "sage2-sm80", "sage2-sm89", "sage2-sm90", "sage2-auto"])
    args = ap.parse_args()
    os.sched_setaffinity(0, {int(args.cpu)})  # this thread, before CUDA starts its own

    import torch
    from host_time_gpu import SHAPE_DIMS, loop_all, public_call

    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.core.run_fields import REFERENCE_SHAPE
    from sagetui.core.status_board import StatusBoard
    from sagetui.runner import call_times
    from sagetui.runner.call_times import CallTimer
    from sagetui.runner.main import new_engine
    from sagetui.session.schedule import round_order

    LEAD, LONG, MARGIN = call_times.LEAD_CALLS, call_times.LONG_CALL_S, call_times.GATE_MARGIN_S
    dims = SHAPE_DIMS["reference 1x37810x56x128 NHD" if args.shape == "reference"
                      else "1x8x4096x128 HND"]
    b, h, n, d, layout = dims
    print(f"{torch.cuda.get_device_name()}; {b}x{n}x{h}x{d} {layout}; timing thread on CPU "
          f"{args.cpu}; host time per call, ms: median, then each reading", flush=True)

    loops = loop_all(args.variants, dims)
    for name in args.variants:
        if name in loops:
            row(name, "loop", [loops[name]["host_s"]])

    shape = (b, h, n, d) if layout == "HND" else (b, n, h, d)
    g = torch.Generator(device="cuda").manual_seed(0)
    qkv = [torch.randn(shape, dtype=torch.bfloat16, device="cuda", generator=g)
           for _ in range(3)]
    calls = {}
    for name in args.variants:
        f = public_call(name, layout, d)
        calls[name] = (lambda f=f, qkv=qkv: f(*qkv))
        for _ in range(3):
            calls[name]()
    torch.cuda.synchronize()
    clock = 1.98e9  # the gate's cycles a second: an H100's or H200's top SM clock
    timer = CallTimer(clock)
    for name, call in calls.items():
        got = [timer.measure(torch, name, call, 1e-3, 0.0).host_s for _ in range(args.rounds)]
        row(name, "timer alone", got)
    for mode, lead, margin in (("timer gate +5ms", LEAD, MARGIN + 5e-3),
                               ("timer lead 1", 1, MARGIN + 5e-3)):
        call_times.LEAD_CALLS, call_times.GATE_MARGIN_S = lead, margin
        timer = CallTimer(clock)
        for name, call in calls.items():
            got = [timer.measure(torch, name, call, 1e-3, 0.0).host_s
                   for _ in range(args.rounds)]
            row(name, mode, got)
    call_times.LEAD_CALLS, call_times.GATE_MARGIN_S = LEAD, MARGIN
    turns: dict[str, list[float]] = {nm: [] for nm in calls}
    timer = CallTimer(clock)
    for _ in range(args.rounds):
        for name, call in calls.items():
            for _ in range(args.between):
                call()
            torch.cuda.synchronize()
            turns[name].append(timer.measure(torch, name, call, 1e-3, 0.0).host_s)
    for name, got in turns.items():
        row(name, "timer in turn", got)
    del qkv, calls
    torch.cuda.empty_cache()

    words = dict(REFERENCE_SHAPE) if args.shape == "reference" else dict(
        batch=b, heads=h, q_len=n, head_dim=d, dtype="bf16", layout=layout)
    config = RunConfig(shape=Shape(**words), variants=[VariantSpec.parse(x) for x in args.variants],
                       device="cuda", affinity=args.cpu)
    got: dict[str, list[float]] = {nm: [] for nm in args.variants}

    def emit(event: object) -> None:
        s = getattr(event, "host_call_s", None)
        if s is not None:
            got[event.variant].append(s)  # type: ignore[attr-defined]

    engine = new_engine(config, emit, StatusBoard(None), threading.Event())
    for name in args.variants:
        engine.warmup(name, config.warmup)
    r0 = 0
    for mode, lead, long_s, margin in (
            ("engine", LEAD, LONG, MARGIN), ("engine lead 1", 1, LONG, MARGIN),
            ("engine 3 blocks", LEAD, float("inf"), MARGIN),
            ("engine gate +2ms", LEAD, LONG, MARGIN + 2e-3)):
        call_times.LEAD_CALLS, call_times.LONG_CALL_S, call_times.GATE_MARGIN_S = \
            lead, long_s, margin
        for name in args.variants:
            got[name] = []
        for r in range(args.rounds):
            for name, half, iters in round_order(args.variants, r0 + r, config.iterations):
                engine.block(name, r0 + r, half, iters)
        r0 += args.rounds
        for name in args.variants:
            row(name, mode, got[name])
    call_times.LEAD_CALLS, call_times.LONG_CALL_S, call_times.GATE_MARGIN_S = LEAD, LONG, MARGIN
    for name in args.variants:
        got[name] = []
        for r in range(args.rounds):
            engine.block(name, r0 + r, 0, config.iterations // 2)
        row(name, "engine alone", got[name])
    return 0


if __name__ == "__main__":
    sys.exit(main())
