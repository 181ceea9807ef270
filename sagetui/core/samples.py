"""Raw samples held compactly: arrays of doubles, never one Python float per sample.

A run of 10^6 iterations of 8 phases is 9 x 10^6 samples: as Python floats in lists that is
about 290 MB, and every report built from them (one per round for the recovery file) makes
them again; as arrays it is 72 MB, and a report shares the arrays of whoever built it.

`RoundSeries` is one phase of one variant: every round's samples in one array, with where each
round starts. `Samples` maps variant -> phase -> RoundSeries (Report.samples).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import numpy as np


class GrowableArray:
    """A 1-D numpy array that doubles its capacity as it grows. A view of the filled part
    stays valid across appends: they only write past it, or into a new buffer."""

    __slots__ = ("_buf", "_n")

    def __init__(self, dtype: type | np.dtype = np.float64, capacity: int = 64) -> None:
        self._buf = np.empty(max(1, capacity), dtype=dtype)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def _reserve(self, n: int) -> None:
        if n > self._buf.size:
            cap = self._buf.size
            while cap < n:
                cap *= 2
            buf = np.empty(cap, dtype=self._buf.dtype)
            buf[: self._n] = self._buf[: self._n]
            self._buf = buf

    def append(self, value: float) -> None:
        self._reserve(self._n + 1)
        self._buf[self._n] = value
        self._n += 1

    def extend(self, values: Iterable[float] | np.ndarray) -> None:
        arr = np.asarray(values if isinstance(values, np.ndarray) else list(values),
                         dtype=self._buf.dtype)
        if not arr.size:
            return
        self._reserve(self._n + arr.size)
        self._buf[self._n: self._n + arr.size] = arr
        self._n += arr.size

    def adopt(self, values: np.ndarray) -> None:
        """Hold `values` as the filled part of an empty array, without copying them (a
        report's samples, which the session's collector holds too); a later append copies
        them first, as any growth does, and never writes to them."""
        if self._n:
            raise ValueError("adopt() needs an empty array")
        self._buf, self._n = np.asarray(values, dtype=self._buf.dtype), len(values)

    @property
    def view(self) -> np.ndarray:
        """The filled part (a view: what is appended later is not in it)."""
        return self._buf[: self._n]


class RoundSeries:
    """Every round's samples of one phase: `values` (read-only) cut at `bounds` (round i is
    values[bounds[i]:bounds[i + 1]]). Indexing and iterating give each round as a view."""

    __slots__ = ("values", "bounds")

    def __init__(self, values: np.ndarray, bounds: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64).view()
        values.flags.writeable = False
        self.values, self.bounds = values, np.asarray(bounds, dtype=np.int64)

    @classmethod
    def from_rounds(cls, rounds: Iterable[Iterable[float] | np.ndarray]) -> RoundSeries:
        arrays = [np.asarray(r, dtype=np.float64) for r in rounds]
        bounds = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([a.size for a in arrays], out=bounds[1:])
        return cls(np.concatenate(arrays) if arrays else np.empty(0), bounds)

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        return self.values[self.bounds[i]: self.bounds[i + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RoundSeries):
            return NotImplemented
        return np.array_equal(self.bounds, other.bounds) and \
            np.array_equal(self.values, other.values)

    __hash__ = None  # type: ignore[assignment]  # compared by value (==): unhashable

    def __repr__(self) -> str:
        return f"RoundSeries({len(self)} rounds, {self.values.size} samples)"

    def locate(self, i: int) -> tuple[int, int]:
        """(round index, iteration in it) of values[i]."""
        r = int(np.searchsorted(self.bounds, i, side="right") - 1)
        return r, i - int(self.bounds[r])

    def tolist(self) -> list[list[float]]:
        return [r.tolist() for r in self]

    def json_rounds(self) -> Iterator[str]:
        """Each round as a JSON array, encoded by the C encoder a round at a time: the GIL is
        never held for long, and no more than a round's floats exist at once."""
        for r in self:
            yield json.dumps(r.tolist(), allow_nan=False)


class Samples(dict[str, dict[str, RoundSeries]]):
    """variant -> phase -> RoundSeries; phase "total" is the whole call."""

    def tolist(self) -> dict[str, dict[str, list[list[float]]]]:
        return {v: {p: s.tolist() for p, s in phases.items()} for v, phases in self.items()}

    def count(self) -> int:
        return sum(s.values.size for phases in self.values() for s in phases.values())

    def bad_value(self, low: float, high: float) -> tuple[str, str, int, int, float] | None:
        """(variant, phase, round, iteration, value) of the first sample that is not finite
        or not in (low, high], else None: a vectorised check."""
        for v, phases in self.items():
            for p, s in phases.items():
                ok = np.isfinite(s.values) & (s.values > low) & (s.values <= high)
                if not ok.all():
                    i = int(np.argmin(ok))
                    return v, p, *s.locate(i), float(s.values[i])
        return None

    def iter_json(self, indent: int = 2, level: int = 1) -> Iterator[str]:
        """As json.dumps(self.tolist(), indent=indent) would put it at nesting `level`, except
        that each round's list is one line; in pieces of a round (see json_rounds), so that a
        writer never holds the whole text."""
        pad = [" " * (indent * k) for k in range(level + 4)]
        if not self:
            yield "{}"
            return
        for i, (v, phases) in enumerate(self.items()):
            yield f'{"," if i else "{"}\n{pad[level + 1]}{json.dumps(v)}: {{'
            for j, (p, s) in enumerate(phases.items()):
                yield f'{"," if j else ""}\n{pad[level + 2]}{json.dumps(p)}: ['
                for k, text in enumerate(s.json_rounds()):
                    yield f'{"," if k else ""}\n{pad[level + 3]}{text}'
                yield f"\n{pad[level + 2]}]" if len(s) else "]"
            yield f"\n{pad[level + 1]}}}" if phases else "}"
        yield f"\n{pad[level]}}}"
