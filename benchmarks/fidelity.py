"""Fidelity on a GPU: sagetui's runner against a bare CUDA-event loop, side by side in one run.

The bare loop below is written independently of sagetui's timing code: it calls SageAttention's
own functions with an event pair around each call (sagetui shares one event between phases),
N calls back to back behind a sleep kernel long enough for the host to enqueue them all (so no
launch gap is timed), one synchronize at the end. `--mode sequence` (the default) runs the
phases in the order of one attention call; `--mode isolated` repeats each phase on its own,
which measures a phase in a GPU state it never meets in a real call. The public
`sageattn_qk_int8_pv_fp8_cuda` is timed the same way. sagetui then runs the
same backend through its runner process (one pass, one event between consecutive phases,
gated blocks). The bare loop runs before and after sagetui and their medians are averaged, so
slow drift does not bias the ratios.

Targets: main loop within 1 %, each phase of 0.1 ms or more within 3 %, and the sum
of sagetui's phases within 2 % of the public API call.

    python benchmarks/fidelity.py                      # the reference shape, sm89 fp32+fp32
    python benchmarks/fidelity.py --q-len 8192 --heads 16
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

TARGETS = {"fused_mainloop": 1.0}
PHASE_TARGET, SUM_TARGET, MIN_PHASE_S = 3.0, 2.0, 1e-4


def bare(q, k, v, iterations: int, mode: str = "sequence") -> dict[str, float]:
    """Median seconds per phase and for the public call, timed independently of sagetui.

    mode "isolated": each phase called N times back to back on its own; "sequence": the phases
    in the order of one attention call, N calls back to back, an event pair around each
    phase (so each phase meets the GPU state that the previous phase leaves, as in real use).
    """
    import torch
    from sageattention import _fused, _qattn_sm89
    from sageattention.core import sageattn_qk_int8_pv_fp8_cuda

    b, n, h, d = q.shape
    hk = k.shape[2]
    sm_scale = d ** -0.5
    padded = (n + 63) // 64 * 64
    q_i8 = torch.empty(q.shape, dtype=torch.int8, device=q.device)
    k_i8 = torch.empty(k.shape, dtype=torch.int8, device=q.device)
    q_s = torch.empty((b, h, (n + 127) // 128 * 4), dtype=torch.float32, device=q.device)
    k_s = torch.empty((b, hk, (n + 63) // 64), dtype=torch.float32, device=q.device)
    v_t = torch.empty((b, d, hk, padded), dtype=v.dtype, device=q.device)
    v_f8 = torch.empty(v_t.shape, dtype=torch.float8_e4m3fn, device=q.device)
    v_s = torch.empty((b, hk, d), dtype=torch.float32, device=q.device)
    o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    km = k.mean(dim=1, keepdim=True).squeeze(1)  # [B, H, D], as quant.py passes it

    calls = {
        "k_mean_and_smoothing_preparation": lambda: k.mean(dim=1, keepdim=True),
        "q_int8_quantization": lambda: _fused.quant_per_warp_int8_cuda(q, q_i8, q_s, 128, 32, 0),
        "k_int8_subtract_mean_quantization":
            lambda: _fused.quant_per_block_int8_fuse_sub_mean_cuda(k, km, k_i8, k_s, 64, 0),
        "v_transpose_pad_permute": lambda: _fused.transpose_pad_permute_cuda(v, v_t, 0),
        "v_scale_fp8_quantization":
            lambda: _fused.scale_fuse_quant_cuda(v_t, v_f8, v_s, n, 448.0, 0),
        "fused_mainloop": lambda: _qattn_sm89.qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf(
            q_i8, k_i8, v_f8, o, q_s, k_s, v_s, 0, 0, 2, sm_scale, 0),
        "public_api": lambda: sageattn_qk_int8_pv_fp8_cuda(
            q, k, v, tensor_layout="NHD", qk_quant_gran="per_warp", pv_accum_dtype="fp32+fp32"),
    }
    def timed(groups: list[list[str]]) -> dict[str, float]:
        """Run each group of calls in order, N times back to back, an event pair per call."""
        for group in groups:
            for name in group:
                calls[name]()
        torch.cuda.synchronize()
        ev = {n: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(iterations)] for g in groups for n in g}
        torch.cuda._sleep(int(2e-3 * iterations * 1.5e9))  # ~2 ms of host time per call
        for i in range(iterations):
            for group in groups:
                for name in group:
                    ev[name][i][0].record()
                    calls[name]()
                    ev[name][i][1].record()
        torch.cuda.synchronize()
        return {n: statistics.median(s.elapsed_time(e) / 1e3 for s, e in pairs)
                for n, pairs in ev.items()}

    out: dict[str, float] = {}
    phases = [n for n in calls if n != "public_api"]
    if mode == "isolated":
        for name in phases:
            out.update(timed([[name]]))
    else:
        out.update(timed([phases]))
    out.update(timed([["public_api"]]))
    return out


def via_sagetui(shape: dict, iterations: int, rounds: int) -> dict[str, float]:
    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.session.session import Session

    cfg = RunConfig(shape=Shape(**shape), variants=[VariantSpec.parse("sage2-sm89")],
                    warmup=3, rounds=rounds, iterations=iterations)
    report = Session(cfg).run()
    v = report.variants[0]
    if v.status != "ok" or not v.phase_timings:
        sys.exit(f"sagetui run failed: {v.error} {report.faults}")
    out = {k: s.p50_s for k, s in v.phase_timings.items()}
    out["total"] = v.timing.p50_s
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--q-len", type=int, default=37810)
    ap.add_argument("--heads", type=int, default=56)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--mode", choices=["sequence", "isolated"], default="sequence",
                    help="bare phases in call order (default) or each on its own")
    ap.add_argument("--json", help="write the figures here too")
    a = ap.parse_args()
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    shape = (a.batch, a.q_len, a.heads, a.head_dim)
    q, k, v = (torch.randn(shape, generator=g, device="cuda").to(torch.bfloat16) for _ in "qkv")
    before = bare(q, k, v, a.iterations, a.mode)
    del q, k, v
    torch.cuda.empty_cache()
    ours = via_sagetui(dict(batch=a.batch, q_len=a.q_len, heads=a.heads, head_dim=a.head_dim),
                       iterations=a.iterations // 2, rounds=2)
    q, k, v = (torch.randn(shape, generator=g, device="cuda").to(torch.bfloat16) for _ in "qkv")
    after = bare(q, k, v, a.iterations, a.mode)
    ref = {k: (before[k] + after[k]) / 2 for k in before}

    rows, ok = [], True
    print(f"{'phase':40s} {'bare ms':>10s} {'sagetui ms':>11s} {'ratio':>8s} {'target':>8s}")
    for name in ("k_mean_and_smoothing_preparation", "q_int8_quantization",
                 "k_int8_subtract_mean_quantization", "v_transpose_pad_permute",
                 "v_scale_fp8_quantization", "fused_mainloop"):
        r = ours[name] / ref[name]
        target = TARGETS.get(name, PHASE_TARGET if ref[name] >= MIN_PHASE_S else None)
        good = target is None or abs(r - 1) * 100 <= target
        ok &= good
        rows.append({"phase": name, "bare_s": ref[name], "sagetui_s": ours[name], "ratio": r,
                     "target_percent": target, "pass": good})
        print(f"{name:40s} {ref[name] * 1e3:10.4f} {ours[name] * 1e3:11.4f} {r:8.4f} "
              f"{'-' if target is None else f'{target:.0f} %':>8s} {'ok' if good else 'MISS'}")
    r = ours["total"] / ref["public_api"]
    good = abs(r - 1) * 100 <= SUM_TARGET
    ok &= good
    rows.append({"phase": "sum of phases vs public API", "bare_s": ref["public_api"],
                 "sagetui_s": ours["total"], "ratio": r, "target_percent": SUM_TARGET,
                 "pass": good})
    print(f"{'sum of phases vs public API':40s} {ref['public_api'] * 1e3:10.4f} "
          f"{ours['total'] * 1e3:11.4f} {r:8.4f} {SUM_TARGET:7.0f} % {'ok' if good else 'MISS'}")
    drift = {k: after[k] / before[k] for k in before}
    print("bare after/before (drift during the run): "
          + ", ".join(f"{k} {x:.4f}" for k, x in drift.items()))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"shape": shape, "mode": a.mode, "rows": rows, "bare_before": before,
                       "bare_after": after, "sagetui": ours}, fh, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
