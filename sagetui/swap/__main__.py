"""`python -m sagetui.swap SETTINGS PROGRAM...`: the process of `sagetui swap` that runs the
program: every arm interleaved (interleaved.py), or one arm of one round (--processes).

SETTINGS is a core/blocks/swap.ProcessSettings as JSON; PROGRAM runs as `python PROGRAM...`
would (recorder/__main__.run_program) with its attention calls wrapped (inside.py). SIGTERM and
SIGHUP stop the program as Ctrl-C does (a KeyboardInterrupt in it); the interleaved process then
still writes the steps it measured. Exit status: the program's (0 where the swap ended it, having
what it needed); 3 where an arm's backend cannot be loaded here (the line says why)."""

from __future__ import annotations

import signal
import sys
import traceback
from types import FrameType

from sagetui.core import affinity
from sagetui.core.blocks.swap import ProcessSettings
from sagetui.recorder.__main__ import run_program
from sagetui.recorder.install import Installed
from sagetui.runner.telemetry import TelemetrySampler
from sagetui.swap import api
from sagetui.swap.inside import Swapper

CANNOT_LOAD = 3


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: list[str]) -> int:
    settings, program = ProcessSettings.model_validate_json(argv[0]), argv[1:]
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _interrupt)
    sampler = _sampler()
    try:
        if settings.interleave is not None:
            from sagetui.swap.interleaved import InterleavedSwapper

            swapper: Swapper = InterleavedSwapper(settings, sampler)
        else:
            swapper = Swapper(settings, sampler)
    except Exception as exc:
        print(f"sagetui swap: arm {settings.arm}: cannot load its backend: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return CANNOT_LOAD
    if sampler is not None:
        sampler.start()
    installed = Installed(lambda *_: None, wrap=swapper.wrap)
    api.active.marks = swapper
    # the program on --affinity's CPUs, with the threads it starts (the sampler's, started
    # above, stays off them)
    affinity.pin_for_good(settings.affinity)
    try:
        status = run_program(program)
    finally:
        installed.remove()
        api.active.marks = None
        if sampler is not None:
            swapper.telemetry = sampler.stop()
            sampler.close()
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # the steps are written whole
        signal.signal(s, signal.SIG_IGN)
    # the interleaved process's steps are kept however the program ended (the session says
    # how); one arm's process of a round is of use only whole
    if status == 0 or settings.interleave is not None:
        try:
            swapper.finish()
        except Exception:
            traceback.print_exc()
            print("sagetui swap: the swap's own measurements failed after the program ended",
                  file=sys.stderr)
            return 1
    return status


def _sampler() -> TelemetrySampler | None:
    """NVML on the GPU the program runs on (none on a CPU)."""
    import torch

    if not torch.cuda.is_available():  # asks the driver; makes no CUDA context
        return None
    return TelemetrySampler(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
