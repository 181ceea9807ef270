"""The host time `sagetui swap`'s wrapper adds to one attention call in a step round, per call:
the interleaved swapper's wrapper around a function, called the way a program calls SDPA
(q, k, v, is_causal=True), with its lean path (the unchanged arm's, a planned call) against
the same wrapper passing the call straight through (the unwrapped arm's). The wrapped function
is torch's own SDPA on tiny tensors of the device (cuda where there is one): its own host time
is in both, so the difference is the wrapper's.

    python benchmarks/swap_lean_call.py [--calls N] [--repeats R]

Prints the median and the least over the repeats, in microseconds per call. Run it with
PYTHONPATH set to another checkout to compare two versions on one machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from sagetui.core.blocks.swap import ArmSettings, Interleave, ProcessSettings
from sagetui.recorder.install import _Inside
from sagetui.recorder.targets import SDPA
from sagetui.swap.interleaved import InterleavedSwapper


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tmp = Path(tempfile.mkdtemp(prefix="sagetui-lean-"))
    settings = ProcessSettings(arm="every arm", result=str(tmp / "r.json"),
                               outputs=str(tmp / "o.safetensors"),
                               interleave=Interleave(arms=[ArmSettings(name="unchanged"),
                                                           ArmSettings(name="unwrapped")],
                                                     reference="unchanged"))
    sw = InterleavedSwapper(settings, None)
    original = F.scaled_dot_product_attention
    wrapped = sw.wrap(SDPA, original, lambda *_: None, _Inside())
    q, k, v = (torch.zeros(1, 1, 16, 16, device=device, dtype=torch.bfloat16)
               for _ in range(3))

    def per_call(fn) -> float:  # noqa: ANN001
        t = time.perf_counter()
        for _ in range(a.calls):
            fn(q, k, v, is_causal=True)
        if device == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t) / a.calls * 1e6

    with torch.inference_mode():
        sw.current = (0, "unchanged", "step")  # a step round of the unchanged arm
        if hasattr(sw, "_arm_plans"):  # the plans by arm (older versions: one dict)
            sw._arm_plans = sw._plans.setdefault("unchanged", {})
        sw.lean = True
        wrapped(q, k, v, is_causal=True)  # its first call: planned
        raw, bare, lean = [], [], []
        for _ in range(a.repeats):
            sw.bare, sw.lean = True, False
            bare.append(per_call(wrapped))
            sw.bare, sw.lean = False, True
            lean.append(per_call(wrapped))
            sw.calls.clear()
            raw.append(per_call(original))
    diff = [x - y for x, y in zip(lean, bare, strict=True)]
    med = statistics.median
    print(f"device {device}; {a.repeats} repeats of {a.calls} calls; us per call, median (least)")
    print(f"  SDPA itself           {med(raw):6.2f} ({min(raw):.2f})")
    print(f"  wrapped, bare         {med(bare):6.2f} ({min(bare):.2f})")
    print(f"  wrapped, lean         {med(lean):6.2f} ({min(lean):.2f})")
    print(f"  lean - bare: the wrapper's cost per call {med(diff):.2f} ({min(diff):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
