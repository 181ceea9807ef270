"""Round schedules: variants interleaved in every round, ABBA then BAAB.

Each variant's iterations in a round are split into two halves. In an even round the variants run
forward for the first half and backward for the second (A B | B A); in an odd round the other way
round (B A | A B). A linear drift within a round then hits every variant equally, and paired
comparisons of round medians cancel it.
"""

from __future__ import annotations

from collections.abc import Callable

from sagetui.core.config import RunConfig
from sagetui.core.statistics.verdict import Verdict, should_stop


def halves(iterations: int) -> tuple[int, int]:
    first = (iterations + 1) // 2
    return first, iterations - first


def round_order(variants: list[str], round_index: int,
                iterations: int) -> list[tuple[str, int, int]]:
    """[(variant, half, iterations)] in execution order for one round."""
    first, second = halves(iterations)
    fwd = list(variants) if round_index % 2 == 0 else list(reversed(variants))
    order = [(v, 0, first) for v in fwd] + [(v, 1, second) for v in reversed(fwd)]
    return [o for o in order if o[2] > 0]


def more_rounds(cfg: RunConfig, r: int, verdicts: Callable[[], list[Verdict]]) -> bool:
    """Whether round r runs. With --until-ci: at least 2 rounds (an interval needs them), at
    most cfg.round_limit, and none once every interval is narrow enough."""
    if cfg.until_ci_percent is None:
        return r < cfg.rounds
    if r >= cfg.round_limit:
        return False
    if r < 2:
        return True
    now = verdicts()
    return not (now and should_stop(now, cfg.until_ci_percent))
