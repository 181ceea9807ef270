"""What a check collects: the mismatches between a report's recorded numbers and the ones
recomputed from its samples and facts (check/report.py and each kind's check: run/check.py,
sweep/check.py, ...)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sagetui.core.blocks.base import Summary
from sagetui.core.statistics.summary import summarize

REL_TOL = 1e-9


@dataclass(frozen=True)
class Mismatch:
    path: str
    recorded: Any
    expected: Any
    why: str

    def __str__(self) -> str:
        return f"{self.path}: recorded {self.recorded!r}, recomputed {self.expected!r} ({self.why})"


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) or isinstance(b, str):
        return a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):  # a shape's seqlens
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    try:
        return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=1e-15)
    except OverflowError:  # an integer beyond any float: only equality can hold
        return a == b
    except TypeError:  # not numbers (a mapping): equal or not
        return bool(a == b)


MISSING = "(missing)"


class MismatchCollector:
    """`complete`: the report is of the schema this sagetui writes, which records every figure
    it can derive: one recorded as absent where it is recomputed is a finding (an older
    report's absent figure was not made yet)."""

    def __init__(self, *, complete: bool = False) -> None:
        self.out: list[Mismatch] = []
        self.recomputed: set[str] = set()  # the paths of every figure held against its own
        self.complete = complete

    def eq(self, path: str, recorded: Any, expected: Any, why: str) -> None:
        if recorded is None and expected is not None and self.complete:
            self.out.append(Mismatch(path, MISSING, expected, why))
            return
        if recorded is None or expected is None:
            return
        self.recomputed.add(path)
        if not _close(recorded, expected):
            self.out.append(Mismatch(path, recorded, expected, why))

    def owed(self, path: str, recorded: Any, expected: Any, why: str) -> None:
        """As eq, in a report of any schema: a figure that follows from what the report holds
        (and that every writer of it wrote), left out, is a finding."""
        if recorded is None and expected is not None:
            self.out.append(Mismatch(path, MISSING, expected, why))
            return
        self.eq(path, recorded, expected, why)

    def same(self, path: str, recorded: Any, expected: Any, why: str) -> None:
        """Equal, None included (a figure recomputed as absent must be absent)."""
        self.recomputed.add(path)
        if recorded is None or expected is None:
            if recorded is not expected:
                self.out.append(Mismatch(path, recorded, expected, why))
        elif not _close(recorded, expected):
            self.out.append(Mismatch(path, recorded, expected, why))

    def summary_from_samples(self, path: str, s: Summary | None, samples: np.ndarray) -> None:
        if s is None or not len(samples):
            return
        want = summarize(samples)
        for k, v in want.items():
            self.eq(f"{path}.{k}", getattr(s, k), v, "from the raw samples")

    def summary_shape(self, path: str, s: Summary) -> None:
        order = [s.min_s, s.p50_s, s.p90_s, s.p95_s, s.p99_s, s.max_s]
        if any(a > b * (1 + REL_TOL) for a, b in zip(order, order[1:], strict=False)):
            self.out.append(Mismatch(path, "min..max out of order", "min<=p50<=p90<=p95<=p99<=max",
                                     "percentiles must be ordered"))
        if not (s.min_s * (1 - REL_TOL) <= s.mean_s <= s.max_s * (1 + REL_TOL)):
            self.out.append(Mismatch(f"{path}.mean_s", s.mean_s, "between min_s and max_s",
                                     "a mean lies between min and max"))
        if 2 <= s.count <= 10:
            self._top_interpolation(path, s)

    def _top_interpolation(self, path: str, s: Summary) -> None:
        # With n <= 10 the ranks (n-1)p of p90, p95 and p99 all lie in [n-2, n-1]: each is
        # x[n-2] + w (x[n-1] - x[n-2]) with w the rank's fraction, and max is w = 1.
        n = s.count
        w = {f"p{p}_s": (n - 1) * p / 100 - (n - 2) for p in (90, 95, 99)}
        if any(not 0 <= x <= 1 for x in w.values()):
            return
        w["max_s"] = 1.0
        vals = {k: getattr(s, k) for k in w}
        self.recomputed.update(f"{path}.{k}" for k in w)  # each from the other three

        def predict(known: list[str], target: str) -> float:
            (a, wa), (b, wb) = [(vals[k], w[k]) for k in known]
            if wa == wb:
                return vals[target]
            d = (b - a) / (wb - wa)
            return a + (w[target] - wa) * d

        def consistent(fields: list[str]) -> bool:
            return all(_close(vals[t], predict(fields[:2], t)) for t in fields[2:])

        names = list(w)
        if consistent(names):
            return
        for culprit in names:
            rest = [k for k in names if k != culprit]
            if consistent(rest):
                self.eq(f"{path}.{culprit}", vals[culprit], predict(rest[:2], culprit),
                        f"linear percentile of {n} samples, from the other top percentiles")
                return
        self.out.append(Mismatch(f"{path}", "p90/p95/p99/max", "linearly related",
                                 f"linear percentiles of {n} samples"))
