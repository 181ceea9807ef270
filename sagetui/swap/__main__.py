"""`python -m sagetui.swap SETTINGS PROGRAM...`: one process of one arm of `sagetui swap`.

SETTINGS is a core/blocks/swap.ProcessSettings as JSON; PROGRAM runs as `python PROGRAM...`
would (recorder/__main__.run_program) with its attention calls wrapped (inside.py). Exit
status: the program's; 3 where the arm's backend cannot be loaded here (the line says why)."""

from __future__ import annotations

import sys
import traceback

from sagetui.core.blocks.swap import ProcessSettings
from sagetui.recorder.__main__ import run_program
from sagetui.recorder.install import Installed
from sagetui.runner.telemetry import TelemetrySampler
from sagetui.swap import api
from sagetui.swap.inside import Swapper

CANNOT_LOAD = 3


def main(argv: list[str]) -> int:
    settings, program = ProcessSettings.model_validate_json(argv[0]), argv[1:]
    try:
        swapper = Swapper(settings)
    except Exception as exc:
        print(f"sagetui swap: arm {settings.arm}: cannot load its backend: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return CANNOT_LOAD
    sampler = _sampler()
    installed = Installed(lambda *_: None, wrap=swapper.wrap)
    api.active.marks = swapper
    try:
        status = run_program(program)
    finally:
        installed.remove()
        api.active.marks = None
        if sampler is not None:
            swapper.telemetry = sampler.stop()
            sampler.close()
    if status == 0:
        try:
            swapper.finish()
        except Exception:
            traceback.print_exc()
            print("sagetui swap: the swap's own measurements failed after the program ended",
                  file=sys.stderr)
            return 1
    return status


def _sampler() -> TelemetrySampler | None:
    """NVML on the GPU the program runs on, sampling while it runs (none on a CPU)."""
    import torch

    if not torch.cuda.is_available():  # asks the driver; makes no CUDA context
        return None
    sampler = TelemetrySampler(0)
    sampler.start()
    return sampler


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
