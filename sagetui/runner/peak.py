"""A measured ceiling beside the datasheet's: a dense int8 and a bf16 matrix product timed on
this GPU (`sagetui doctor --peak`). torch's own kernels (cuBLAS / cuBLASLt) on square
operands; median of the timed calls, CUDA events on the default stream, after warm-up. On a CPU
it runs a small product so that the path is exercised, not to say anything about a peak."""

from __future__ import annotations

import time
from typing import Any

import torch

from sagetui.core.statistics.summary import median


def _time(fn: Any, calls: int, gpu: bool) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(calls):
        if gpu:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e-3)
        else:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return median(times)


def measure(device: str, n: int | None = None, calls: int = 20) -> dict[str, Any]:
    gpu = device.startswith("cuda")
    n = n or (8192 if gpu else 256)
    out: dict[str, Any] = {"n": n, "calls": calls, "device": device,
                           "method": f"{n}x{n}x{n} matmul, median of {calls} calls"}
    a8 = torch.randint(-127, 128, (n, n), dtype=torch.int8, device=device)
    b8 = torch.randint(-127, 128, (n, n), dtype=torch.int8, device=device).t()  # column-major
    ab = torch.randn(n, n, device=device).to(torch.bfloat16)
    bb = torch.randn(n, n, device=device).to(torch.bfloat16)
    ops = 2.0 * n * n * n
    for name, fn in (("int8", lambda: torch._int_mm(a8, b8)), ("bf16", lambda: ab @ bb)):
        try:
            s = _time(fn, calls, gpu)
            out[f"{name}_tops"] = ops / s / 1e12
        except Exception as exc:  # e.g. _int_mm missing on this build
            out[f"{name}_error"] = f"{type(exc).__name__}: {exc}"[:200]
    return out
