"""Make docs/console.svg, the README's picture: the console's own SVG export (the key `s`
writes the same), after a real run on this machine's CPU. Run from the repository's root:

    python docs/screenshot.py [--size 160x44]

The run is the console's default on a CPU, with a second variant beside it: the reference
backend with and without K smoothing at 1 x 1024 x 6 x 128 bf16 on `synthetic:kbias` inputs
(K with a channel-wise bias, where smoothing matters), 4 rounds of 10.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from sagetui.core import distributions
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.tui.app import SageTUI

OUT = Path(__file__).with_name("console.svg")


async def shoot(size: tuple[int, int], out: Path) -> None:
    kbias = distributions.parse("synthetic:kbias")
    config = RunConfig(shape=Shape(heads=6, q_len=1024, head_dim=128, distribution=kbias),
                       rounds=4,
                       variants=[VariantSpec.parse("smooth=reference"),
                                 VariantSpec.parse("nosmooth=reference[smooth_k=false]")])
    with tempfile.TemporaryDirectory() as tmp:
        app = SageTUI(config=config, theme_name="sage-dark",
                      recovery_path=Path(tmp) / "recovery.json", export_dir=Path(tmp))
        async with app.run_test(size=size) as pilot:
            await pilot.press("r")
            deadline = time.monotonic() + 300
            while app.running or app.data.status != "complete":
                if time.monotonic() > deadline:
                    raise SystemExit("the run did not finish in 5 minutes")
                await pilot.pause(0.2)
            await pilot.pause(0.5)
            await app.workers.wait_for_complete()
            app.flush_redraws(force=True)
            await pilot.pause(0.5)
            out.write_text(app.export_screenshot(title="sagetui"))
    print(f"wrote {out}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="160x44", help="COLUMNSxROWS (160x44)")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    asyncio.run(shoot((w, h), args.out))


if __name__ == "__main__":
    main()
