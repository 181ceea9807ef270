"""A bare CUDA-event loop over two builds of `_qattn_sm89`'s main loop, interleaved ABBA, written
apart from sagetui to check its A/B verdicts on builds: no sagetui import, each build
in a process of its own (its module loaded from its own file; the inputs drawn from one seed and
quantized by the installed SageAttention), the two processes taking turns on the GPU.

One process holding both builds ran the first one's code for both (a -maxrregcount=128 build
timed as the stock one, 130 ms, where sagetui measured 646 ms): a process per build leaves no
doubt about which code ran.

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
import multiprocessing as mp
import statistics
from pathlib import Path

from scipy import stats

KERNEL = "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf"  # sm89's fp32+fp32 main loop


def worker(folder: str, shape: str, calls: int, conn) -> None:
    """One build: load it, quantize the inputs, then time a block of calls per request."""
    import torch
    from sageattention.quant import per_channel_fp8, per_warp_int8

    path = next(Path(folder).rglob("_qattn_sm89*.so"))
    loader = importlib.machinery.ExtensionFileLoader("_qattn_sm89", str(path))
    spec = importlib.util.spec_from_file_location("_qattn_sm89", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    b, n, h, d = (int(x) for x in shape.split(","))
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    km = k.mean(dim=1, keepdim=True)
    q8, qs, k8, ks = per_warp_int8(q, k, km, tensor_layout="NHD", BLKQ=128, WARPQ=32, BLKK=64)
    v8, vs, _ = per_channel_fp8(v, tensor_layout="NHD", scale_max=448.0, smooth_v=False)
    out = torch.empty_like(q)

    def call() -> None:
        getattr(module, KERNEL)(q8, k8, v8, out, qs, ks, vs, 0, 0, 2, d ** -0.5, 0)

    call()
    torch.cuda.synchronize()
    conn.send((str(path), hashlib.sha256(out.view(torch.uint8).cpu().numpy().tobytes())
               .hexdigest()[:16]))
    while conn.recv() == "block":
        start = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
        end = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
        torch.cuda._sleep(10_000_000)  # the queue stays ahead of the host
        for s, e in zip(start, end, strict=True):
            s.record()
            call()
            e.record()
        torch.cuda.synchronize()
        conn.send(statistics.median(s.elapsed_time(e) for s, e in zip(start, end, strict=True)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--shape", default="1,37810,56,128")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    pipes, procs = {}, []
    for name, folder in (("A", args.a), ("B", args.b)):
        mine, theirs = ctx.Pipe()
        p = ctx.Process(target=worker, args=(folder, args.shape, args.calls, theirs))
        p.start()
        pipes[name], procs = mine, procs + [p]
    facts = {name: pipe.recv() for name, pipe in pipes.items()}
    for name, (path, digest) in facts.items():
        print(f"{name}: {path} output {digest}")
    same = facts["A"][1] == facts["B"][1]
    print(f"shape {args.shape} bf16 NHD; outputs {'byte-exact' if same else 'differ'}")

    def block(name: str) -> float:
        pipes[name].send("block")
        return pipes[name].recv()

    logs = []
    for r in range(args.rounds):
        got: dict[str, list[float]] = {"A": [], "B": []}
        for name in ("A", "B", "B", "A") if r % 2 == 0 else ("B", "A", "A", "B"):
            got[name].append(block(name))
        a, bb = statistics.median(got["A"]), statistics.median(got["B"])
        logs.append(math.log(bb / a))
        print(f"round {r + 1}: A {a:.3f} ms  B {bb:.3f} ms  B/A {bb / a - 1:+.2%}")
    for pipe in pipes.values():
        pipe.send("stop")
    for p in procs:
        p.join()
    m = statistics.mean(logs)
    half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    print(f"B vs A time: median {math.exp(statistics.median(logs)) - 1:+.2%}, mean "
          f"{math.exp(m) - 1:+.2%} [{math.exp(m - half) - 1:+.2%}, {math.exp(m + half) - 1:+.2%}]"
          f" over {args.rounds} rounds of {args.calls} calls (ABBA, then BAAB)")


if __name__ == "__main__":
    main()
