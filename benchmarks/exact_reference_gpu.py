"""How long the fp32 reference (runner/exact_reference.py) takes at the reference shape on a GPU,
by the size of its score blocks: the late figures' longest part (docs/h200-results.md).

    python benchmarks/exact_reference_gpu.py [--chunks 28 25 23 22] [--repeats 2]

Each `--chunks N` is a score block of 2^N fp32 elements (the product's CHUNK_ELEMENTS is 2^28,
1 GiB); the output of each is compared with the first's (max |difference|), and the median of
`--repeats` runs is printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from sagetui.core.config import RunConfig, Shape, VariantSpec  # noqa: E402
from sagetui.runner import exact_reference  # noqa: E402
from sagetui.runner.inputs import build_inputs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, nargs="+", default=[28, 25, 23, 22])
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    inputs = build_inputs(RunConfig(shape=Shape(heads=56, q_len=37810, head_dim=128),
                                    variants=[VariantSpec.parse("sdpa")]), "cuda")
    first = None
    for n in args.chunks:
        exact_reference.CHUNK_ELEMENTS = 1 << n
        times = []
        for _ in range(args.repeats):
            torch.cuda.synchronize()
            t = time.perf_counter()
            ref = exact_reference.ExactReference(inputs)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
        diff = 0.0 if first is None else float((ref.out - first).abs().max())
        first = ref.out if first is None else first
        print(f"chunk 2^{n} ({(1 << n) * 4 / 2**20:,.0f} MiB): "
              f"{statistics.median(times):.3f} s median of {times}; "
              f"max |out - 2^{args.chunks[0]}'s| {diff:.3g}", flush=True)
        del ref
    return 0


if __name__ == "__main__":
    sys.exit(main())
