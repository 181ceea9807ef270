"""Write synthetic_report.json: a small, fully deterministic sagetui report for the console's
snapshot tests. Run from the repository root:

    python tests/tui/data/make_synthetic.py

It folds seeded synthetic events into a run model with the one fold the session uses
(core/run/fold.py) and builds the report as the session does (core/run/assemble.py), so the
report has exactly the shape a real run writes (samples, verdicts, drift, outliers, telemetry,
tail study, a fault) without any live timing. Three variants on an "H200": a baseline that drifts
upward, a variant about 6 % faster with throttled rounds 4 and 5, and one that failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from sagetui.core import events as ev
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.report.io import save_report
from sagetui.core.report.model import Fault, Report
from sagetui.core.run.assemble import build_report
from sagetui.core.run.fold import apply, new_model
from sagetui.core.run.status import final_status
from sagetui.core.scheduler import tail_plan

OUT = Path(__file__).with_name("synthetic_report.json")
PHASES = [("k_mean_and_smoothing_preparation", None), ("qk_int8_quantization", None),
          ("q_int8_quantization", "qk_int8_quantization"),
          ("k_int8_subtract_mean_quantization", "qk_int8_quantization"),
          ("v_fp8_transpose_scale_quantization", None),
          ("v_transpose_pad_permute", "v_fp8_transpose_scale_quantization"),
          ("v_scale_fp8_quantization", "v_fp8_transpose_scale_quantization"),
          ("fused_mainloop", None)]
LEAF_MS = {"k_mean_and_smoothing_preparation": 0.24, "q_int8_quantization": 0.38,
           "k_int8_subtract_mean_quantization": 0.38, "v_transpose_pad_permute": 0.51,
           "v_scale_fp8_quantization": 0.55, "fused_mainloop": 4.1}
ROUNDS, ITERATIONS = 6, 12
SHA = {"base": "a" * 64, "fast": "a" * 64}


def telemetry(r: int, throttled: bool) -> dict:
    clock = 1980.0 - (45.0 * r if throttled else 0.0)
    return {"available": True, "reason": None, "samples": 20,
            "sm_clock_mhz": {"min": clock - 15, "mean": clock, "max": clock + 5},
            "mem_clock_mhz": {"min": 3201.0, "mean": 3201.0, "max": 3201.0},
            "temperature_c": {"min": 40.0 + r, "mean": 41.0 + r, "max": 42.0 + r},
            "power_w": {"min": 610.0, "mean": 640.0 + 5 * r, "max": 690.0},
            "throttle_reasons": ["sw_power_cap"] if throttled else []}


def build() -> Report:
    rng = np.random.default_rng(20260101)
    shape = Shape(batch=1, heads=24, q_len=4100, head_dim=128, dtype="bf16", layout="NHD")
    config = RunConfig(shape=shape, variants=[
        VariantSpec(name="base", backend="sage2-sm89"),
        VariantSpec(name="fast", backend="sage2-sm89", path="/variants/fast/_qattn_sm89.so"),
        VariantSpec(name="broken", backend="sage2-sm89",
                    path="/variants/broken/_qattn_sm89.so")],
        rounds=ROUNDS, iterations=ITERATIONS, warmup=3, tail_study=True, seed=0)
    m = new_model()
    events: list[ev.Event] = [
        ev.RunStarted(config=config, created_utc="2026-01-01T00:00:00+00:00",
                      host={"platform": "Linux", "host": "gpu-node"}),
        ev.Hello(protocol=4, pid=1, python="3.11.7", torch="2.5.1+cu124", device="cuda:0",
                 backends={})]
    events += [ev.VariantLoaded(name=n, backend="sage2-sm89", status="ok", kernel="sm89",
                                phases=PHASES) for n in ("base", "fast")]
    events += [ev.VariantLoaded(name="broken", backend="sage2-sm89", status="failed",
                                error="undefined symbol: qk_int8_sv_f8_accum_f32_attn"),
               ev.Ready(input_sha256="b" * 64, device="cuda:0",
                        gpu={"name": "NVIDIA H200", "sm_count": 132,
                             "smem_per_sm": 228 * 1024}),
               ev.ThresholdResolved(threshold={"threshold_percent": 1.0,
                                               "threshold_source": "default"})]
    for e in events:
        apply(m, e)
    for r in range(ROUNDS):
        apply(m, ev.RoundStarted(round=r, variants=["base", "fast"]))
        seen: set[str] = set()
        for name in ("base", "fast", "fast", "base") if r % 2 == 0 else \
                ("fast", "base", "base", "fast"):  # ABBA, then BAAB
            half = int(name in seen)
            seen.add(name)
            scale = 1.0 + 0.012 * r  # slow upward drift, both variants alike
            if name == "fast":
                scale *= 0.94
            for i in range(ITERATIONS // 2):
                leaves = {p: ms * scale * (1 + rng.normal(0, 0.004)) / 1e3
                          for p, ms in LEAF_MS.items()}
                if name == "base" and r == 2 and i == 0 and half == 0:
                    leaves["fused_mainloop"] *= 1.6  # one outlier, flagged, never dropped
                apply(m, ev.Iterations(variant=name, round=r, half=half, start=i,
                                       phases={k: [x] for k, x in leaves.items()},
                                       total_s=[sum(leaves.values()) * 1.002]))
            apply(m, ev.BlockDone(variant=name, round=r, half=half,
                                  iterations=ITERATIONS // 2, cancelled=False,
                                  output_sha256=SHA[name], checksum=123456.0,
                                  max_abs_diff=0.0, mean_abs_diff=0.0,
                                  telemetry=telemetry(r, throttled=name == "fast" and r >= 3)))
        apply(m, ev.RoundDone(round=r, completed=["base", "fast"]))
    apply(m, ev.Decomposition(variant="base", equal=True, max_abs=0.0, mean_abs=0.0,
                              decomposed_sha256="a" * 64, public_sha256="a" * 64,
                              manual_checksum=123456.0, reference_checksum=123456.0))
    for sweep, q, kv in tail_plan("sm89", 4100, 4100):
        base_ms = 4.1 * q / 4100 * kv / 4100
        apply(m, ev.TailRow(variant="base", sweep=sweep, q_len=q, kv_len=kv,
                            phase="fused_mainloop", checksum=float(q + kv),
                            mainloop=[base_ms * (1 + 0.002 * k) / 1e3 for k in range(5)]))
    m.faults[-1] = Fault(kind="variant", variant="broken", phase="load",
                         message="undefined symbol: qk_int8_sv_f8_accum_f32_attn",
                         stderr_tail=["ImportError: /variants/broken/_qattn_sm89.so: "
                                      "undefined symbol: qk_int8_sv_f8_accum_f32_attn"])
    return build_report(m, final_status(m, rounds_planned=ROUNDS))


def main() -> int:
    save_report(build(), OUT, overwrite=True)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
