"""A bare CUDA-event loop over two builds of `_qattn_sm89`'s main loop, interleaved ABBA, written
apart from sagetui to check its A/B verdicts on builds (issue 24): no sagetui import, the inputs
quantized once by the installed SageAttention, each build's module loaded from its own file.

    python benchmarks/abba_mainloop.py A_DIR B_DIR [--rounds 6 --calls 6 --shape 1,37810,56,128]

Prints each round's median per build, B against A per round, and the median and a t interval
(95 %) of the per-round log ratios. A_DIR/B_DIR: folders holding a `_qattn_sm89*.so`.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.machinery
import importlib.util
import math
import statistics
from pathlib import Path

import torch
from scipy import stats

KERNEL = "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf"  # sm89's fp32+fp32 main loop


def load(folder: str):
    path = next(Path(folder).rglob("_qattn_sm89*.so"))
    loader = importlib.machinery.ExtensionFileLoader("_qattn_sm89", str(path))
    spec = importlib.util.spec_from_file_location("_qattn_sm89", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--shape", default="1,37810,56,128")
    args = ap.parse_args()
    from sageattention.quant import per_channel_fp8, per_warp_int8

    b, n, h, d = (int(x) for x in args.shape.split(","))
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    km = k.mean(dim=1, keepdim=True)
    q8, qs, k8, ks = per_warp_int8(q, k, km, tensor_layout="NHD", BLKQ=128, WARPQ=32, BLKK=64)
    v8, vs, _ = per_channel_fp8(v, tensor_layout="NHD", scale_max=448.0, smooth_v=False)
    builds = {"A": load(args.a), "B": load(args.b)}
    out = {name: torch.empty_like(q) for name in builds}

    def call(name: str) -> None:
        getattr(builds[name], KERNEL)(q8, k8, v8, out[name], qs, ks, vs, 0, 0, 2, d ** -0.5, 0)

    def block(name: str) -> float:
        start = [torch.cuda.Event(enable_timing=True) for _ in range(args.calls)]
        end = [torch.cuda.Event(enable_timing=True) for _ in range(args.calls)]
        torch.cuda._sleep(10_000_000)  # the queue stays ahead of the host
        for s, e in zip(start, end, strict=True):
            s.record()
            call(name)
            e.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(start, end, strict=True))

    for name in builds:  # warm-up, and the outputs' bytes
        call(name)
    torch.cuda.synchronize()
    digest = {n: hashlib.sha256(o.view(torch.uint8).cpu().numpy().tobytes()).hexdigest()[:16]
              for n, o in out.items()}
    print(f"shape {args.shape} bf16 NHD; outputs A {digest['A']} B {digest['B']} "
          f"({'byte-exact' if digest['A'] == digest['B'] else 'differ'})")
    logs = []
    for r in range(args.rounds):
        got: dict[str, list[float]] = {"A": [], "B": []}
        for name in ("A", "B", "B", "A"):
            got[name].append(block(name))
        a, bb = statistics.median(got["A"]), statistics.median(got["B"])
        logs.append(math.log(bb / a))
        print(f"round {r + 1}: A {a:.3f} ms  B {bb:.3f} ms  B/A {bb / a - 1:+.2%}")
    m = statistics.mean(logs)
    half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    print(f"B vs A: median {math.exp(statistics.median(logs)) - 1:+.2%}, mean "
          f"{math.exp(m) - 1:+.2%} [{math.exp(m - half) - 1:+.2%}, {math.exp(m + half) - 1:+.2%}]"
          f" over {args.rounds} rounds of {args.calls} calls (ABBA)")


if __name__ == "__main__":
    main()
