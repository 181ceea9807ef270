"""Test-only fault injection: CUDA errors and out-of-memory cannot happen on a CPU runner, so
the fault tests ask for them through SAGETUI_INJECT_FAULT=KIND@VARIANT[:ROUND], KIND one of
oom, cuda, exception, exit, stall. The injected fault is raised at the start of that variant's
block (in that round, or any), exactly where a real one would surface; ROUND `warmup` raises it
in the variant's warm-up, its first call (where an out-of-memory variant fails on a GPU); ROUND
`late` before its accuracy after the last round (engine.late). `stall` holds the runner there
until it is cancelled (at most a minute): a long late figure, on a CPU.
`oom@setup:N` makes every setup at q_len >= N run out of memory while building its inputs (a
sweep's large points). `oom@held` makes a workload's new set-up run out of memory while other
calls' set-ups are held in the runner (runner/main.set_up_held).
Signals and hangs need no injection: the tests send real SIGKILL / SIGSTOP to the runner.
"""

from __future__ import annotations

import os
import threading

ENV = "SAGETUI_INJECT_FAULT"


WARMUP = -1  # the round number of a warm-up
LATE = -2  # ... and of the late figures
STALL_S = 60.0


def _parse() -> tuple[str, str, int | None] | None:
    spec = os.environ.get(ENV)
    if not spec or "@" not in spec:
        return None
    kind, _, where = spec.partition("@")
    variant, _, rnd = where.partition(":")
    named = {"warmup": WARMUP, "late": LATE}
    return kind, variant, (named[rnd] if rnd in named else int(rnd)) if rnd else None


def maybe_inject(variant: str, round_: int, cancel: threading.Event | None = None) -> None:
    spec = _parse()
    if spec is None:
        return
    kind, target, rnd = spec
    if target != variant or (rnd is not None and rnd != round_) \
            or (rnd is None and round_ in (WARMUP, LATE)):
        return
    if kind == "stall":
        if cancel is not None:
            cancel.wait(STALL_S)
        return
    if kind == "oom":
        import torch

        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB "
                                     "(injected by SAGETUI_INJECT_FAULT)")
    if kind == "cuda":
        raise RuntimeError("CUDA error: an illegal memory access was encountered "
                           "(injected by SAGETUI_INJECT_FAULT)")
    if kind == "exception":
        raise ValueError("kernel failed (injected by SAGETUI_INJECT_FAULT)")
    if kind == "exit":
        os._exit(7)


def maybe_inject_setup(q_len: int) -> None:
    spec = _parse()
    if spec is None or spec[1] != "setup" or spec[2] is None or q_len < spec[2]:
        return
    if spec[0] == "oom":
        import torch

        raise torch.OutOfMemoryError(f"CUDA out of memory building inputs at q_len {q_len} "
                                     "(injected by SAGETUI_INJECT_FAULT)")


def maybe_inject_held(held: int) -> None:
    """`oom@held`: out of memory making a call's set-up beside `held` kept ones (none: none)."""
    spec = _parse()
    if spec is None or spec[:2] != ("oom", "held") or not held:
        return
    import torch

    raise torch.OutOfMemoryError(f"CUDA out of memory building a call's inputs beside {held} "
                                 "held set-ups (injected by SAGETUI_INJECT_FAULT)")
