"""Where a call's host time goes, on a GPU: the independent loop of host_time_gpu.py taken apart.

Written apart from sagetui's runner (no sagetui import; the public calls are host_time_gpu's).
The thread is pinned to one CPU (--cpu) throughout. For each variant and shape it prints, over
REPEATS gated blocks (a sleep kernel holds the GPU while the host enqueues, as the loop does):

- **per position**: each call's own enqueue time by its place in the block (perf_counter
  stamped after every call), medians; does the block's first call carry a cost of its own?
- **by block size**: the block's host time over its calls at several sizes;
- **after what**: the same block after the thread waited on the GPU (synchronize on a 100 ms
  sleep kernel), after it spun in Python for 100 ms, after it slept 100 ms (an idle vCPU);
- **interleaved**: each round every variant's two untimed calls, then its gated block of two,
  as sagetui's rounds do; with the caching allocator's device allocations inside the block;
- **beside a busy CPU** (--contend): the first variant's block of 20 while a spinning process
  holds one other CPU, for each CPU in turn, then all of them, then a process hashing 256 MB
  over and over (sha256, as the runner's output checks do): which of the VM's CPUs, if any,
  share the timing CPU's core or its memory; then beside a thread of this process (on the
  other CPUs) polling NVML every 20 ms as the runner's telemetry does, a thread hashing 8 MB
  over and over, a thread waking every millisecond: each takes the GIL whenever a torch call
  lets it go.

    python benchmarks/host_noise_gpu.py [--cpu 8] [--shapes 1x8 reference]
        [--variants sdpa sage2-sm80 sage2-sm90] [--contend]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from host_time_gpu import SHAPE_DIMS, public_call  # noqa: E402

REPEATS = 5
IDLE_S = 0.1


def inputs(dims: tuple) -> tuple:
    b, h, n, d, layout = dims
    shape = (b, h, n, d) if layout == "HND" else (b, n, h, d)
    g = torch.Generator(device="cuda").manual_seed(0)
    return tuple(torch.randn(shape, dtype=torch.bfloat16, device="cuda", generator=g)
                 for _ in range(3))


def device_allocs() -> int:
    return int(torch.cuda.memory_stats().get("num_device_alloc", 0))


def block(call: Callable[[], object], n: int, gate_s: float) -> tuple[list[float], float, bool,
                                                                        int]:
    """One gated block: each call's enqueue seconds, GPU seconds a call, whether the GPU left
    the gate before the host was done, and device allocations during the enqueue."""
    torch.cuda._sleep(int(2e9 * gate_s))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a0 = device_allocs()
    start.record()
    stamps = [time.perf_counter()]
    for _ in range(n):
        call()
        stamps.append(time.perf_counter())
    waited = start.query()
    end.record()
    torch.cuda.synchronize()
    each = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    return each, start.elapsed_time(end) * 1e-3 / n, waited, device_allocs() - a0


def before(how: str) -> None:
    torch.cuda.synchronize()
    if how == "gpu-wait":  # the thread waits in synchronize while the GPU sleeps
        torch.cuda._sleep(int(2e9 * IDLE_S))
        torch.cuda.synchronize()
    elif how == "spin":
        t = time.perf_counter() + IDLE_S
        while time.perf_counter() < t:
            pass
    elif how == "sleep":
        time.sleep(IDLE_S)


def us(x: float) -> str:
    return f"{x * 1e6:7.1f}"


def one_variant(name: str, dims: tuple, qkv: tuple, sizes: list[int]) -> None:
    f = public_call(name, dims[4], dims[3])
    call = lambda: f(*qkv)  # noqa: E731
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    t = time.perf_counter()
    call()
    torch.cuda.synchronize()
    one = time.perf_counter() - t
    gate = 2 * max(sizes) * 1e-3 + 2e-3  # 1 ms a call of enqueue is far more than any takes
    print(f"  {name}: one call synchronised {one * 1e3:.3f} ms; host time a call, us")
    for n in sizes:
        per_pos: list[list[float]] = [[] for _ in range(n)]
        means, allocs, waited = [], 0, 0
        for _ in range(REPEATS):
            before("none")
            each, _gpu, w, a = block(call, n, gate)
            waited += w
            allocs += a
            means.append(sum(each) / n)
            for i, x in enumerate(each):
                per_pos[i].append(x)
        shown = per_pos if n <= 6 else per_pos[:3] + [per_pos[-1]]
        print(f"    block {n:3}: mean {us(statistics.median(means))}  spread "
              f"{us(min(means))}-{us(max(means)).strip()}  by position "
              + " ".join(us(statistics.median(p)).strip() for p in shown)
              + ("" if n <= 6 else " (first three, last)")
              + f"  device allocs {allocs}" + (f"  GATE LEFT {waited}" if waited else ""))
    n = 3
    for how in ("gpu-wait", "spin", "sleep"):
        means, firsts = [], []
        for _ in range(REPEATS):
            before(how)
            each, _gpu, _w, _a = block(call, n, gate)
            means.append(sum(each) / n)
            firsts.append(each[0])
        print(f"    after {how:8} block 3: mean {us(statistics.median(means))}  first call "
              f"{us(statistics.median(firsts))}  spread {us(min(means))}-{us(max(means)).strip()}")


def interleaved(names: list[str], dims: tuple, qkv: tuple) -> None:
    calls = {}
    for name in names:
        f = public_call(name, dims[4], dims[3])
        calls[name] = (lambda f=f: f(*qkv))
    hosts: dict[str, list[float]] = {n: [] for n in names}
    allocs: dict[str, int] = {n: 0 for n in names}
    for _ in range(REPEATS):
        for name, call in calls.items():
            call()  # the round's instrumented calls, untimed here
            call()
            torch.cuda.synchronize()
            each, _gpu, _w, a = block(call, 2, 6e-3)
            hosts[name].append(sum(each) / 2)
            allocs[name] += a
    print("  interleaved, block 2 after two untimed calls of its own (as sagetui's rounds):")
    for name in names:
        print(f"    {name:11} host {us(statistics.median(hosts[name]))} us  rounds "
              + " ".join(us(x).strip() for x in hosts[name]) + f"  device allocs {allocs[name]}")


SPIN = "while True: pass"
HASH = ("import hashlib; b = bytes(256 << 20)\n"
        "while True: hashlib.sha256(b).digest()")


def beside(cpus: list[int], code: str) -> list[subprocess.Popen]:
    procs = [subprocess.Popen([sys.executable, "-c", code],
                              preexec_fn=lambda c=c: os.sched_setaffinity(0, {c}))
             for c in cpus]
    time.sleep(0.3)  # started and spinning
    return procs


def contend(name: str, dims: tuple, qkv: tuple, mine: int) -> None:
    f = public_call(name, dims[4], dims[3])
    call = lambda: f(*qkv)  # noqa: E731
    for _ in range(3):
        call()

    def host() -> float:
        means = []
        for _ in range(REPEATS):
            before("none")
            each, _gpu, _w, _a = block(call, 20, 0.05)
            means.append(sum(each) / 20)
        return statistics.median(means)

    others = sorted(set(range(os.cpu_count() or 1)) - {mine})
    print(f"  {name}, block 20, host us a call, beside a spinning process on CPU ...")
    cells = [f"none {us(host()).strip()}"]
    for c in others:
        procs = beside([c], SPIN)
        try:
            cells.append(f"{c} {us(host()).strip()}")
        finally:
            for p in procs:
                p.kill()
    for label, cpus, code in (("all", others, SPIN), ("sha256 x1", others[:1], HASH),
                              ("sha256 x4", others[:4], HASH)):
        procs = beside(cpus, code)
        try:
            cells.append(f"{label} {us(host()).strip()}")
        finally:
            for p in procs:
                p.kill()
    cells.append(f"none {us(host()).strip()}")
    print("    " + "; ".join(cells))
    cells = []
    for label, work in (("NVML 20 ms", nvml_poll), ("sha256 8 MB", hash_loop),
                        ("1 ms wake", wake_loop)):
        stop = threading.Event()
        t = threading.Thread(target=work, args=(stop, others), daemon=True)
        t.start()
        time.sleep(0.2)
        try:
            cells.append(f"{label} {us(host()).strip()}")
        finally:
            stop.set()
            t.join()
    cells.append(f"none {us(host()).strip()}")
    print("    beside a thread of this process: " + "; ".join(cells))


def nvml_poll(stop: threading.Event, cpus: list[int]) -> None:
    import pynvml

    os.sched_setaffinity(0, set(cpus))  # this thread only (Linux: per thread)
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    while not stop.wait(0.02):
        pynvml.nvmlDeviceGetPowerUsage(h)
        pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
        pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)
        pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
        pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)
    pynvml.nvmlShutdown()


def hash_loop(stop: threading.Event, cpus: list[int]) -> None:
    import hashlib

    os.sched_setaffinity(0, set(cpus))
    b = bytes(8 << 20)
    while not stop.is_set():
        hashlib.sha256(b).digest()


def wake_loop(stop: threading.Event, cpus: list[int]) -> None:
    os.sched_setaffinity(0, set(cpus))
    while not stop.is_set():
        time.sleep(0.001)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", type=int, default=8)
    ap.add_argument("--shapes", nargs="+", default=["1x8", "reference"])
    ap.add_argument("--variants", nargs="+", default=["sdpa", "sage2-sm80", "sage2-sm90"])
    ap.add_argument("--contend", action="store_true",
                    help="only the first variant at the first shape, beside busy CPUs")
    args = ap.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    idle = Path(f"/sys/devices/system/cpu/cpu{args.cpu}/cpuidle")
    states = [(s / "name").read_text().strip() for s in sorted(idle.glob("state*"))] \
        if idle.exists() else []
    driver = Path("/sys/devices/system/cpu/cpuidle/current_driver")
    print(f"CPU {args.cpu}; cpuidle driver "
          f"{driver.read_text().strip() if driver.exists() else '-'}, states {states}; "
          f"load {os.getloadavg()}; torch {torch.__version__}; {torch.cuda.get_device_name()}")
    gc.disable()
    for shape, dims in SHAPE_DIMS.items():
        if not any(shape.startswith(s) for s in args.shapes):
            continue
        print(f"\n{shape}")
        qkv = inputs(dims)
        if args.contend:
            contend(args.variants[0], dims, qkv, args.cpu)
            return 0
        sizes = [1, 2, 3, 6] if shape.startswith("reference") else [1, 2, 3, 20, 100]
        for name in args.variants:
            one_variant(name, dims, qkv, sizes)
        interleaved(args.variants, dims, qkv)
        del qkv
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
