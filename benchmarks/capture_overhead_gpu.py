"""What a capture that selects no call costs a GPU model's forward pass.

The model: 8 pre-norm transformer blocks (LayerNorm, a fused q/k/v projection,
F.scaled_dot_product_attention with heads of 128, the output projection, an MLP of 4x), bf16,
batch 1, --width 1024, at each of --tokens (1,024 and 4,096). Rounds, interleaved: each round
times --passes forward passes without a capture and --passes inside
`sagetui.capture(DIR, calls="module:nomatch*")` (every call wrapped, its module and signature
counted, nothing saved), in an order that alternates from round to round (AB, BA, ...), each
pass timed on its own as synchronized wall time (synchronize, pass, synchronize: what a
program's step waits for, host and GPU alike), after --warmup passes. Per round: the median
pass of each side, and their ratio; over the rounds: the median of the ratios with a 95 %
bootstrap interval (resampling rounds: a round's two sides are paired), and the A/A ratio of
the plain side's first and second halves (the floor of this very measurement). The
targets: at most +3 % at 1,024 tokens, +1 % at 4,096.

    python benchmarks/capture_overhead_gpu.py                      # cuda if there is one
    python benchmarks/capture_overhead_gpu.py --device cpu --tokens 64 --width 128 --rounds 6

On the CPU (no GPU here) it runs at small sizes in float32 so that it can be tried; the
figures that count are the GPU's. Not a timed test: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import sagetui
from sagetui.core.capture.outcome import CaptureError

HEAD_DIM, BLOCKS = 128, 8
NOTHING = "module:nomatch*"
TARGETS = {1024: 3.0, 4096: 1.0}  # percent


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.heads = max(1, width // HEAD_DIM)
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, w = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, w // self.heads).permute(
            2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(y.transpose(1, 2).reshape(b, n, w))
        return x + self.mlp(self.norm2(x))


class Model(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(BLOCKS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def timed_passes(model: Model, x: torch.Tensor, n: int, sync) -> list[float]:
    """n forward passes, each its synchronized wall time in seconds."""
    out = []
    for _ in range(n):
        sync()
        t0 = time.perf_counter()
        model(x)
        sync()
        out.append(time.perf_counter() - t0)
    return out


def capturing(model: Model, x: torch.Tensor, n: int, sync, where: Path) -> list[float]:
    """The same inside a capture that selects nothing (refused at its end: nothing kept)."""
    try:
        with sagetui.capture(where, calls=NOTHING):
            got = timed_passes(model, x, n, sync)
    except CaptureError:
        return got
    raise AssertionError("a capture that selects nothing kept something")


def bootstrap(ratios: list[float], n: int = 4000, seed: int = 0) -> tuple[float, float]:
    """95 % interval of the median ratio, resampling rounds."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(n))
    return medians[int(0.025 * n)], medians[int(0.975 * n) - 1]


def measure(model: Model, tokens: int, width: int, a: argparse.Namespace, device: str,
            dtype: torch.dtype, tmp: Path) -> tuple[float, float, float, float, float]:
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    x = torch.randn(1, tokens, width, device=device, dtype=dtype)
    timed_passes(model, x, a.warmup, sync)
    capturing(model, x, a.warmup, sync, tmp / f"warm-{tokens}")
    ratios, floors, plains = [], [], []
    for r in range(a.rounds):
        if r % 2 == 0:
            plain = timed_passes(model, x, a.passes, sync)
            during = capturing(model, x, a.passes, sync, tmp / f"c-{tokens}-{r}")
        else:
            during = capturing(model, x, a.passes, sync, tmp / f"c-{tokens}-{r}")
            plain = timed_passes(model, x, a.passes, sync)
        p50 = statistics.median(plain)
        ratios.append(statistics.median(during) / p50)
        half = len(plain) // 2
        floors.append(statistics.median(plain[half:]) / statistics.median(plain[:half]))
        plains.append(p50)
    lo, hi = bootstrap(ratios)
    return (statistics.median(plains), statistics.median(ratios), lo, hi,
            statistics.median(floors))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tokens", default=None, help="comma list (default 1024,4096; the CPU "
                    "64)")
    ap.add_argument("--width", type=int, default=None, help="default 1024 (the CPU 128)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--passes", type=int, default=30, help="passes per side per round")
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    gpu = a.device.startswith("cuda")
    tokens = [int(t) for t in (a.tokens or ("1024,4096" if gpu else "64")).split(",")]
    width = a.width or (1024 if gpu else 128)
    dtype = torch.bfloat16 if gpu else torch.float32
    if not gpu:
        torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Model(width).to(a.device, dtype).eval()
    name = torch.cuda.get_device_name(a.device) if gpu else "CPU"
    print(f"capture overhead, GPU model: {BLOCKS} blocks, width {width} ({width // HEAD_DIM or 1}"
          f" heads of {HEAD_DIM}), {str(dtype).removeprefix('torch.')}, batch 1, on {name}; "
          f"torch {torch.__version__}; {a.rounds} rounds x {a.passes} passes a side, "
          f"alternating order; capture --calls {NOTHING}")
    worst = 0
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        for n in tokens:
            plain, ratio, lo, hi, floor = measure(model, n, width, a, a.device, dtype, Path(tmp))
            pct = (ratio - 1) * 100
            target = TARGETS.get(n) if gpu else None
            verdict = "" if target is None else (
                f"; target <= +{target:g} %: {'met' if (hi - 1) * 100 <= target else 'not met'}"
                f"{'' if (hi - 1) * 100 <= target or pct > target else ' (interval too wide)'}")
            print(f"  {n:5d} tokens: a pass {plain * 1e3:.3f} ms without capture; with: "
                  f"{pct:+.2f} % [{(lo - 1) * 100:+.2f}, {(hi - 1) * 100:+.2f}] "
                  f"({(ratio - 1) * plain / BLOCKS * 1e6:+.1f} us a call); "
                  f"A/A floor {(floor - 1) * 100:+.2f} %{verdict}")
            if target is not None and (hi - 1) * 100 > target:
                worst = 1
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
