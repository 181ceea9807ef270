"""`--affinity CPUS`: the CPUs a timed thread runs on (pyperf's option, its list syntax).

A call's host time depends on the CPU that enqueues it. On the H100 machine the device lends,
the same sm90 call's enqueue read 0.159 ms on CPU 8 and 0.257 ms on CPU 0
(benchmarks/results/h100_host_time_by_cpu_20261206.txt), and a thread the scheduler moves
between such CPUs reads both within one run. Pinned, the runner's timed blocks
(runner/engine.py) and a swap's program (swap/__main__.py) run on the CPUs named, and two
measurements made on the same CPUs compare. Nothing is pinned unless asked: a CPU chosen by
default could be one that another process is pinned to.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence

SYNTAX = "give CPUs as 2, 0-3 or 0,2-3"


def parse_cpus(text: str) -> list[int]:
    """'0-3,8' -> [0, 1, 2, 3, 8]; ValueError (one line) for anything else."""
    cpus: set[int] = set()
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            first = int(lo)
            last = int(hi) if dash else first
        except ValueError:
            raise ValueError(f"--affinity {text!r}: {SYNTAX}") from None
        if first < 0 or last < first:
            raise ValueError(f"--affinity {text!r}: {SYNTAX}")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def cpus_text(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8': the canonical form a report and an option carry."""
    parts: list[str] = []
    run: list[int] = []
    for c in sorted(set(cpus)):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            parts.append(_span(run))
        run = [c]
    if run:
        parts.append(_span(run))
    return ",".join(parts)


def _span(run: list[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"


def refusal(text: str) -> str | None:
    """Why `--affinity text` cannot be taken on this machine (None: it can)."""
    try:
        cpus = parse_cpus(text)
    except ValueError as exc:
        return str(exc)
    if not hasattr(os, "sched_setaffinity"):
        return f"--affinity {text}: this system pins no thread (Linux's sched_setaffinity)"
    allowed = os.sched_getaffinity(0)
    missing = [c for c in cpus if c not in allowed]
    if missing:
        return (f"--affinity {text}: CPU {cpus_text(missing)} is not one this process may run "
                f"on ({cpus_text(sorted(allowed))})")
    return None


@contextlib.contextmanager
def pinned(text: str | None) -> Iterator[None]:
    """The calling thread on the CPUs of `text` (None: as it is) for the block, then back on
    the CPUs it had: the thread alone, so that threads started before it stay where they are
    (Linux applies sched_setaffinity(0) to the calling thread)."""
    if not text:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, parse_cpus(text))
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def pin_for_good(text: str | None) -> None:
    """The calling thread, and the threads it starts from now on, on the CPUs of `text`."""
    if text:
        os.sched_setaffinity(0, parse_cpus(text))
