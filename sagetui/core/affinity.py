"""`--affinity CPUS`: the CPUs a timed thread runs on (pyperf's option, its list syntax).

A call's host time depends on the CPU that enqueues it. On the H100 machine the device lends,
the same sm90 call's enqueue read 0.159 ms on CPU 8 and 0.257 ms on CPU 0
(benchmarks/results/h100_host_time_by_cpu_20261206.txt), and a thread the scheduler moves
between such CPUs reads both within one run. Pinned, the runner's timing thread
(runner/engine.py) and a swap's program (swap/__main__.py) run on the CPUs named, and two
measurements made on the same CPUs compare. Nothing is pinned unless asked: a CPU chosen by
default could be one that another process is pinned to.

The runner's thread is pinned for the whole run, not block by block: pinned only while it
timed, its host time at the reference shape (a block of a few 50-130 ms calls) read 1.3-2.6
times that of a loop pinned throughout (benchmarks/results/h100_host_time_pinned_20261206.txt),
the thread arriving cold on its CPU at each block. The threads it starts afterwards (telemetry,
hashing, a public API's first call) call `release()` and run on the process's other CPUs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

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


def crowded(text: str) -> str | None:
    """A caution where `text` names every CPU this process may run on (a `taskset` around it
    named the same): the threads that release() moves off the timed CPUs then stay on them,
    hashing and polling beside the timed calls (sha256 of a 0.5 GB output holds a CPU for a
    second). None where other CPUs are left to them, or where nothing can be pinned."""
    if refusal(text) is not None or len(os.sched_getaffinity(0)) > len(parse_cpus(text)):
        return None
    return (f"--affinity {text}: these are all the CPUs this process may run on, so the "
            "runner's other threads (hashing, telemetry) share them with the timed calls; let "
            "the process run on more (taskset) than --affinity names")


def pin_for_good(text: str | None) -> None:
    """The calling thread, and the threads it starts from now on, on the CPUs of `text`."""
    if text:
        os.sched_setaffinity(0, parse_cpus(text))


_process_cpus: set[int] | None = None  # the process's CPUs before its first pin
_others: set[int] | None = None  # where release() puts a thread, while one is pinned


def pin_timing_thread(text: str | None) -> None:
    """The calling thread on the CPUs of `text` until called again (None: back on the CPUs the
    process had); a thread that calls release() meanwhile runs on the process's other CPUs
    (on all of them where `text` names every one)."""
    global _process_cpus, _others
    if not hasattr(os, "sched_setaffinity"):
        return  # refused before a runner starts (refusal)
    if _process_cpus is None:
        _process_cpus = set(os.sched_getaffinity(0))
    if not text:
        os.sched_setaffinity(0, _process_cpus)
        _others = None
        return
    cpus = set(parse_cpus(text))
    os.sched_setaffinity(0, cpus)
    _others = (_process_cpus - cpus) or _process_cpus


def release() -> None:
    """A thread started by the pinned one (it inherits the pin): onto the process's other
    CPUs, off the timed ones. Nothing while no thread is pinned."""
    if _others is not None:
        os.sched_setaffinity(0, _others)
