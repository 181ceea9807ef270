"""The console's words for adaptive stopping (`u`); numbers are core/format.py's."""

from __future__ import annotations

from sagetui.core.config import RunConfig


def until_ci_line(config: RunConfig, running: bool) -> str:
    """What `u` set, said for a running session or for the next run."""
    target = config.until_ci_percent
    if target is None:
        return f"adaptive stopping off: a run makes {config.rounds} rounds"
    limit = f"at least 2 rounds, at most {config.round_limit}"
    if running:
        return (f"running until every 95 % interval is narrower than {target:g} % (from the "
                f"next round; {limit})")
    return (f"the next run (r) stops once every 95 % interval is narrower than {target:g} % "
            f"({limit})")


def parse_until_ci(value: str) -> float | None:
    """The `u` dialog's value: a width in percent, or None for off (ValueError if neither)."""
    target = None if value.lower() in ("off", "0", "none") else float(value)
    if target is not None and not 0 < target <= 100:
        raise ValueError(value)
    return target


def until_ci_problem(value: str) -> str | None:
    try:
        parse_until_ci(value)
    except ValueError:
        return f"not a width in percent (0 < width <= 100, or off): {value!r}"
    return None
