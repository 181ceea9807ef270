"""Harness overhead on a GPU: wall time of a run over the sum of its timed kernel time.

Two ratios, at the reference shape (1 x 37,810 x 56 x 128, bf16, NHD) by default:
- rounds: wall time from the first round's start to the last round's end, over the sum of
  every timed iteration (what the measurement itself costs: gating, events, streaming, output
  checks between blocks);
- whole run: the same over the wall time of the whole `Session.run()` (runner start, torch and
  CUDA initialisation, inputs, warm-up, decomposition check).
Target: rounds ratio under 1.10.

    python benchmarks/harness_overhead.py --backend sage2-sm89
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="sage2-sm89")
    ap.add_argument("--q-len", type=int, default=37810)
    ap.add_argument("--heads", type=int, default=56)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--json")
    a = ap.parse_args()
    from sagetui.core import events as ev
    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.session.session import Session

    marks: dict[str, float] = {}
    host: dict[str, float] = {}

    def on_event(e) -> None:
        match e:
            case ev.BlockDone():
                for k, v in e.host.items():
                    host[k] = host.get(k, 0.0) + v
            case ev.RoundStarted():
                marks.setdefault("first_round", time.perf_counter())
            case ev.RoundDone():
                marks["last_round"] = time.perf_counter()

    cfg = RunConfig(shape=Shape(q_len=a.q_len, heads=a.heads, head_dim=128),
                    variants=[VariantSpec.parse(a.backend)], warmup=3, rounds=a.rounds,
                    iterations=a.iterations)
    t0 = time.perf_counter()
    report = Session(cfg, on_event=on_event).run()
    whole = time.perf_counter() - t0
    samples = report.samples[report.variants[0].name]["total"]
    kernel = float(samples.values.sum())
    rounds = marks["last_round"] - marks["first_round"]
    print(f"{a.backend}, {report.rounds} rounds x {a.iterations}: timed kernel time "
          f"{kernel:.3f} s; rounds wall {rounds:.3f} s -> ratio {rounds / kernel:.4f} "
          f"(target < 1.10: {'ok' if rounds / kernel < 1.10 else 'MISS'}); whole run "
          f"{whole:.3f} s -> ratio {whole / kernel:.3f}")
    print("runner host time per part, summed over the blocks: "
          + ", ".join(f"{k} {v:.3f} s" for k, v in host.items()))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"backend": a.backend, "kernel_s": kernel, "rounds_wall_s": rounds,
                       "host_parts_s": host,
                       "whole_wall_s": whole, "rounds_ratio": rounds / kernel,
                       "whole_ratio": whole / kernel}, fh, indent=2)
    return 0 if rounds / kernel < 1.10 else 1


if __name__ == "__main__":
    sys.exit(main())
