"""Which arm runs the program's next step in the interleaved mode, and when the measurement
has what it needs. No torch: the swap process asks it at each step's start and tells it each
step's time at the step's end.

Steps go round the arms, one step each a round, so that each pair (the baseline's step and an
arm's in the same round) is of nearby steps of the same program at the same clocks. The order
within a round follows the rows of a Williams square (`williams_rows`): over a cycle of rounds
each arm takes each place once and follows each other arm equally often, and no step follows
a step of its own arm. ABBA (forward, then backward) did not do that: measured on an H100, a
launch-bound model's step ran 2-8 % faster after a step of its own arm (its host code warm),
and ABBA gives that to the first arm of every round, the same two arms always.

The first rounds are warm-up: at least `warmup`, then until every arm's last two warm-up steps
are within SETTLED of each other (its first call loads modules and compiles, and the GPU's
clocks rise: the early steps are the slow ones, each faster than the one before), and at most
`max_warmup`. Then
ATTENTION_ROUNDS attention rounds, whose steps time each attention call (CUDA events around
it: the attention's time, its share of the step, the figures per call), then step rounds,
whose calls are only dispatched: a step round's time carries none of the timing's own cost,
and it alone makes the paired comparison of the steps. Step rounds go on until each arm has
`steps` of them, or `max_seconds` have passed since the first measured round, or (`until_ci`,
from UNTIL_CI_MIN step rounds on) every paired comparison's interval is narrower than asked:
each arm's against the baseline, and the unchanged arm's against the unwrapped one (the
wrapper's cost), by the interval the report gives them (statistics/verdict.paired_speedup).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from sagetui.core.blocks.swap import UNCHANGED, UNWRAPPED
from sagetui.core.statistics.verdict import ci_width_percent, paired_speedup

T = TypeVar("T")

SETTLED = 0.10  # an arm's last two warm-up steps within 10 % of each other
MIN_MEASURED = 2  # step rounds: fewer give no interval
ATTENTION_ROUNDS = 2
UNTIL_CI_MIN = 10  # step rounds before --until-ci may end the measurement: a t-interval of
# fewer is wide by its t and can look narrow by chance
WARMUP_ROUND, ATTENTION_ROUND, STEP_ROUND = "warmup", "attention", "step"  # kinds


def round_order(arms: Sequence[T], round_index: int) -> list[T]:
    """ABBA over the rounds (the processes mode): forward in even rounds, backward in odd
    ones."""
    return list(arms) if round_index % 2 == 0 else list(reversed(arms))


def williams_rows(n: int) -> list[list[int]]:
    """The rows of a Williams square of n: each place holds each of 0..n-1 once over the rows,
    and each ordered pair of neighbours occurs once (n even) or twice (n odd, where the rows
    are followed by their mirrors). Rows in this order never start with the arm the one before
    ended with."""
    if n <= 2:  # AB AB ...: each arm always follows the other (places cannot be balanced too)
        return [list(range(n))]
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return _chained(rows)


def _chained(rows: list[list[int]]) -> list[list[int]]:
    """The rows in an order where none starts with the arm the one before ended with, the last
    included (the cycle repeats): a depth-first search, small for the arms a swap has."""
    def walk(path: list[int], left: set[int]) -> list[int] | None:
        if not left:
            return path if rows[path[-1]][-1] != rows[path[0]][0] else None
        for i in sorted(left):
            if rows[i][0] != rows[path[-1]][-1]:
                found = walk([*path, i], left - {i})
                if found:
                    return found
        return None

    order = walk([0], set(range(1, len(rows))))
    return [rows[i] for i in order] if order else rows


def interleaved_order(arms: Sequence[T], round_index: int) -> list[T]:
    """The arms of the interleaved mode's round `round_index`: a Williams square's row."""
    rows = williams_rows(len(arms))
    return [arms[i] for i in rows[round_index % len(rows)]]


def compared_pairs(arms: Sequence[str], baseline: str | None) -> list[tuple[str, str]]:
    """The (baseline, arm) pairs a swap reports an interval of: each arm against the baseline,
    and the unchanged arm against the unwrapped one (the wrapper's cost)."""
    pairs = [(baseline, a) for a in arms if baseline is not None
             and a not in (baseline, UNWRAPPED)]
    if UNCHANGED in arms and UNWRAPPED in arms:
        pairs.append((UNWRAPPED, UNCHANGED))
    return pairs


def steps_needed(arms: int, warmup: int, measured: int = MIN_MEASURED) -> int:
    """The program's steps the swap needs at the least: the warm-up rounds, the attention
    rounds and `measured` step rounds."""
    return arms * (warmup + ATTENTION_ROUNDS + measured)


@dataclass
class Schedule:
    arms: list[str]
    warmup: int = 2
    max_warmup: int = 10
    steps: int = 20
    max_seconds: float = 60.0
    until_ci: float | None = None  # --until-ci, percentage points (full width)
    pairs: Sequence[tuple[str, str]] = ()  # (baseline, arm) the intervals of which until_ci holds
    clock: Callable[[], float] = time.monotonic
    started: int = 0  # steps begun
    warm_rounds: int | None = None  # once the warm-up has ended: how many rounds it took
    ended: str | None = None  # why no further step is measured
    _last: dict[str, list[float]] = field(default_factory=dict)  # an arm's warm-up steps
    _measured: dict[str, list[float]] = field(default_factory=dict)  # its step rounds' steps
    _measuring_since: float | None = None

    def round_of(self, step: int) -> int:
        return step // len(self.arms)

    def arm_of(self, step: int) -> str:
        return interleaved_order(self.arms, self.round_of(step))[step % len(self.arms)]

    def is_warmup(self, round_index: int) -> bool:
        return self.warm_rounds is None or round_index < self.warm_rounds

    def kind(self, round_index: int) -> str:
        if self.warm_rounds is None or round_index < self.warm_rounds:
            return WARMUP_ROUND
        if round_index < self.warm_rounds + ATTENTION_ROUNDS:
            return ATTENTION_ROUND
        return STEP_ROUND

    def begin(self) -> tuple[int, str, str] | None:
        """The next step's (round, arm, the round's kind); None when the measurement is over."""
        if self.ended is not None:
            return None
        k = self.started
        self.started += 1
        r = self.round_of(k)
        if not self.is_warmup(r) and self._measuring_since is None:
            self._measuring_since = self.clock()
        return r, self.arm_of(k), self.kind(r)

    def end(self, round_index: int, arm: str, seconds: float) -> None:
        """A step has ended: its time, for the warm-up's rule; at a round's end, whether the
        warm-up or the measurement is over."""
        if self.is_warmup(round_index):
            self._last.setdefault(arm, []).append(seconds)
        elif self.kind(round_index) == STEP_ROUND:
            self._measured.setdefault(arm, []).append(seconds)
        if self.started % len(self.arms):
            return  # within a round
        done = round_index + 1
        if self.warm_rounds is None:
            if done >= self.max_warmup or (done >= self.warmup and self._settled()):
                self.warm_rounds = done
            return
        measured = done - self.warm_rounds - ATTENTION_ROUNDS
        if measured >= self.steps:
            self.ended = f"each arm has {measured} measured steps (--steps {self.steps})"
        elif self.until_ci is not None and measured >= UNTIL_CI_MIN and self._narrow():
            self.ended = f"every interval narrower than {self.until_ci:g} points after " \
                         f"{measured} step rounds (--until-ci)"
        elif self._measuring_since is not None and \
                self.clock() - self._measuring_since >= self.max_seconds:
            self.ended = f"--max-seconds {self.max_seconds:g} spent after {max(0, measured)} " \
                         "step rounds"

    def _narrow(self) -> bool:
        """Whether every pair's paired interval is narrower than until_ci."""
        assert self.until_ci is not None
        for base, arm in self.pairs:
            b, v = self._measured.get(base, []), self._measured.get(arm, [])
            n = min(len(b), len(v))
            if n < 2 or min(b[:n] + v[:n]) <= 0:
                return False
            verdict = paired_speedup(b[:n], v[:n], threshold_percent=1.0)
            if not ci_width_percent(verdict) < self.until_ci:
                return False
        return True

    def settled(self) -> bool:
        return self.warm_rounds is not None and self._settled()

    def _settled(self) -> bool:
        for times in self._last.values():
            if len(times) < 2:
                return False
            a, b = times[-2], times[-1]
            if min(a, b) <= 0 or max(a, b) > min(a, b) * (1 + SETTLED):
                return False
        return True
