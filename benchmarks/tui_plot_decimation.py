"""What a plot redraw reads as the run grows: the min/max pyramid's envelope at a plot width
of 200, for 1e3 to 1e7 samples, next to a full min/max pass over all samples.

    python benchmarks/tui_plot_decimation.py

Prints microseconds per envelope and the ratio to the smallest run: it stays about flat
(O(width + log n)), where the full pass grows with n.
"""

from __future__ import annotations

import time

import numpy as np

from sagetui.tui.series import MinMaxSeries

WIDTH = 200


def per_call(fn, repeat: int = 200) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    base_env = base_full = None
    for n in (10**3, 10**4, 10**5, 10**6, 10**7):
        s = MinMaxSeries()
        data = rng.random(n)
        for chunk in np.array_split(data, max(1, n // 1000)):  # as batches arrive in a run
            s.extend(chunk)
        env = per_call(lambda s=s: s.envelope(WIDTH))
        blocks = data.reshape(-1, max(1, n // WIDTH))
        full = per_call(lambda b=blocks: (b.min(1), b.max(1)), repeat=20)
        base_env, base_full = base_env or env, base_full or full
        print(f"n={n:>9,}  envelope {env:8.1f} us (x{env / base_env:5.2f})   "
              f"full min/max pass {full:10.1f} us (x{full / base_full:7.1f})")


if __name__ == "__main__":
    main()
