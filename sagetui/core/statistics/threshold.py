"""The SAME threshold a verdict is judged with, and where it came from (docs/statistics.md).

T = max(1 %, 2 x noise floor), the noise floor from a calibration (an A/A run) or
`--noise-floor`; `--threshold` sets T itself. A noise floor whose T would exceed
MAX_THRESHOLD_PERCENT is refused (NoiseTooLarge): SAME would then cover differences that
matter, so the machine is too noisy to judge anything and is told so.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sagetui.core import format as fmt
from sagetui.core.statistics import verdict

MAX_THRESHOLD_PERCENT = 5.0
# The largest noise floor accepted: its threshold 2 x floor is MAX_THRESHOLD_PERCENT.
MAX_NOISE_FLOOR_PERCENT = MAX_THRESHOLD_PERCENT / 2
QUIETING = ("stop other processes on this machine (and other jobs on this GPU), run more "
            "iterations per round (--iterations), leave --cold off, pin the GPU clocks "
            "(nvidia-smi -lgc), use a larger shape")
THRESHOLD_RULE = (f"threshold = max({verdict.MIN_THRESHOLD_PERCENT:g} %, 2 x noise floor); a noise "
                  f"floor over {MAX_NOISE_FLOOR_PERCENT:g} % (a threshold over "
                  f"{MAX_THRESHOLD_PERCENT:g} %) is refused")

SOURCE_DEFAULT = "default"
SOURCE_CALIBRATION = "calibration"
SOURCE_THRESHOLD = "--threshold"
SOURCE_NOISE_FLOOR = "--noise-floor"
SOURCE_RECORDED = "the report"  # a verdict of a report that predates threshold_source


class NoiseTooLarge(ValueError):
    """A noise floor too large to judge a difference with."""

    def __init__(self, noise_floor_percent: float) -> None:
        self.noise_floor_percent = noise_floor_percent
        super().__init__(
            f"{fmt.noise_floor(noise_floor_percent)} is too large: its SAME threshold would "
            f"be {fmt.percent(2 * noise_floor_percent)} (over {MAX_THRESHOLD_PERCENT:g} %), so "
            f"this machine is too noisy to judge a difference; to quiet it: {QUIETING}")


def check_noise_floor(noise_floor_percent: float) -> float:
    """The noise floor, or NoiseTooLarge (the rule in the module docstring)."""
    if not (math.isfinite(noise_floor_percent) and noise_floor_percent >= 0):
        raise ValueError(f"noise floor {noise_floor_percent!r} is not a percentage")
    if noise_floor_percent > MAX_NOISE_FLOOR_PERCENT:
        raise NoiseTooLarge(noise_floor_percent)
    return noise_floor_percent


@dataclass(frozen=True)
class Threshold:
    """The SAME threshold a verdict used, and where it came from."""

    percent: float
    source: str = SOURCE_DEFAULT  # default, calibration, --threshold, --noise-floor
    noise_floor_percent: float | None = None
    calibration_key: str | None = None  # source "calibration": the entry used
    calibrated_utc: str | None = None  # ... and when it was measured

    def fields(self) -> dict[str, Any]:
        """The report Verdict's threshold fields."""
        out: dict[str, Any] = {"threshold_percent": self.percent,
                               "threshold_source": self.source}
        for k in ("noise_floor_percent", "calibration_key", "calibrated_utc"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return out

    @classmethod
    def from_fields(cls, d: Mapping[str, Any]) -> Threshold | None:
        """Back from a verdict's fields (None when it has no threshold)."""
        pct = d.get("threshold_percent")
        if not isinstance(pct, int | float) or isinstance(pct, bool) or not pct > 0:
            return None
        return cls(float(pct), str(d.get("threshold_source") or SOURCE_RECORDED),
                   d.get("noise_floor_percent"), d.get("calibration_key"),
                   d.get("calibrated_utc"))

    def describe(self, now: _dt.datetime | None = None) -> str:
        """E.g. "±2.00 % from calibration (noise floor 1.000 %, 3 h old)"."""
        text = f"±{fmt.percent(self.percent)} from {self.source}"
        if self.noise_floor_percent is not None:
            text += f" ({fmt.noise_floor(self.noise_floor_percent)}"
            if self.calibrated_utc:
                text += f", {age(self.calibrated_utc, now)}"
            text += ")"
        return text


def describe_fields(v: Mapping[str, Any] | None, at: str | None = None) -> str:
    """Where a verdict's SAME threshold came from, with its calibration's age when the report
    was made (`at`, its created_utc: a saved report's calibration does not age)."""
    t = Threshold.from_fields(v) if v else None
    if t is None:
        return fmt.DASH
    try:
        now = _dt.datetime.fromisoformat(at) if at else None
    except ValueError:
        now = None
    return t.describe(now)


def age(utc_iso: str, now: _dt.datetime | None = None) -> str:
    """How long ago an ISO time was, in the largest whole unit ("3 h old")."""
    try:
        then = _dt.datetime.fromisoformat(utc_iso)
    except ValueError:
        return "age unknown"
    if then.tzinfo is None:
        then = then.replace(tzinfo=_dt.UTC)
    s = ((now or _dt.datetime.now(_dt.UTC)) - then).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{int(s // size)} {unit} old"
    return "just measured"


def resolve_threshold(threshold_percent: float | None = None,
                      noise_floor_percent: float | None = None,
                      calibration: Threshold | None = None) -> Threshold:
    """`--threshold`, else the calibration entry (unless `--noise-floor` gave another floor),
    else `--noise-floor`, else the default. `calibration` is a stored entry's Threshold."""
    if threshold_percent is not None:
        return Threshold(float(threshold_percent), SOURCE_THRESHOLD, noise_floor_percent)
    if calibration is not None and (noise_floor_percent is None
                                    or noise_floor_percent == calibration.noise_floor_percent):
        return calibration
    if noise_floor_percent is not None:
        check_noise_floor(noise_floor_percent)
        return Threshold(verdict.default_threshold_percent(noise_floor_percent), SOURCE_NOISE_FLOOR,
                         noise_floor_percent)
    return Threshold(verdict.default_threshold_percent(None))


def calibrated(noise_floor_percent: float, key: str, utc: str | None) -> Threshold:
    """The threshold of a stored calibration (NoiseTooLarge if its floor is over the rule)."""
    check_noise_floor(noise_floor_percent)
    return Threshold(verdict.default_threshold_percent(noise_floor_percent), SOURCE_CALIBRATION,
                     noise_floor_percent, key, utc)


def rule_percent(source: str | None, noise_floor_percent: float | None,
                 config: Mapping[str, Any] | None) -> float | None:
    """The threshold a verdict's source implies (`sagetui check`): the default's, twice a
    calibration's or --noise-floor's floor (at least 1 %), --threshold's as configured; a
    verdict that names no source (before schema 3) was judged with its configuration's."""
    cfg = config or {}
    if source == SOURCE_DEFAULT:
        return verdict.default_threshold_percent(None)
    if source in (SOURCE_CALIBRATION, SOURCE_NOISE_FLOOR):
        return verdict.default_threshold_percent(noise_floor_percent)
    if source == SOURCE_THRESHOLD:
        return _number(cfg.get("threshold_percent"))
    if source in (None, SOURCE_RECORDED):
        thr, noise = _number(cfg.get("threshold_percent")), _number(cfg.get("noise_floor_percent"))
        try:
            return resolve_threshold(thr, noise).percent
        except ValueError:
            return None
    return None


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) \
        and math.isfinite(x) else None


def config_threshold(cfg: Mapping[str, Any]) -> Threshold:
    """The threshold a configuration (free-form JSON, as a saved report keeps it) asks for,
    else the default; a noise floor over the rule gives the default (run/load.report_threshold
    asks here after the report's own and its verdicts')."""
    thr, noise = _number(cfg.get("threshold_percent")), _number(cfg.get("noise_floor_percent"))
    try:
        return resolve_threshold(thr if thr is not None and 0 < thr <= 100 else None, noise)
    except ValueError:
        return resolve_threshold()
