"""The console's heap: freed memory given back to the operating system.

A run streams its samples through short-lived objects (decoded events, their columns, a round's
unfinished samples, the arrays a report's summaries sort), and glibc's malloc keeps much of
what they free. Two causes, each measured with 10^6 samples (benchmarks/memory.py):

- its mmap threshold moves up each time a large block is freed, so later large temporaries
  come from the heap, where freeing them leaves holes the process keeps: fixing the threshold
  at MMAP_THRESHOLD (glibc's own default before it moves) took the console from 207 to 191 MB;
- free heap the allocator holds on to: `malloc_trim` returns it (about 20 MB), as Dask's
  workers do; the session trims after a round at most every TRIM_EVERY_S, and when a run ends.

Where the C library is not glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from typing import Any

TRIM_EVERY_S = 1.0
M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)
MMAP_THRESHOLD = 128 * 1024


def _libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
        libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    except (OSError, AttributeError):
        return None  # not glibc
    return libc


class HeapTrimmer:
    _fixed = False  # the threshold is the process's: set once

    def __init__(self) -> None:
        self._libc = _libc()
        self._last = 0.0
        if self._libc is not None and not HeapTrimmer._fixed:
            self._libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            HeapTrimmer._fixed = True

    def maybe(self) -> None:
        """Trim, unless the last trim was less than TRIM_EVERY_S ago."""
        if self._libc is not None and time.monotonic() - self._last >= TRIM_EVERY_S:
            self.now()

    def now(self) -> None:
        if self._libc is not None:
            self._libc.malloc_trim(0)
            self._last = time.monotonic()
