"""`sagetui node-check`: the same kernel on every GPU of a node, side by side, and which GPU is
unlike the others. Pure: it reads the runs' reports (one per GPU), runs nothing.

The rule (FLAG_RULE), for each GPU g with the others j:

    flag g  when  p50_g  lies outside  [ min_j lo_j · (1 − f),  max_j hi_j · (1 + f) ]

where p50_g is GPU g's run's p50 and [lo_j, hi_j] GPU j's 95 % interval of its p50 (the
Student-t interval of its log round medians, its run's `intervals`:
core/statistics/intervals.py, the round as the unit of inference as everywhere in sagetui:
docs/statistics.md) and f is the noise floor (default 1 %, the smallest SAME threshold).

Why this and not a robust z over GPUs (|x − median| / (1.4826 · MAD) > 3.5): a node has 2 to
8 GPUs, and with so few the MAD is itself one or two of the values (with 2 GPUs every z is
±0.67, nothing is ever flagged; with identical GPUs MAD → 0 and every GPU is flagged), and it
ignores how noisy each GPU's own measurement is. The interval rule uses each GPU's measured
uncertainty, holds from 2 GPUs up, and never flags GPUs that agree within noise. With 2 GPUs
a GPU is flagged when it lies outside the other's interval: a noisy GPU (wide interval) is
flagged only when the steady one lies outside that noise too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sagetui.core import format as fmt
from sagetui.core.derived import ratio_percent
from sagetui.core.report.model import Report
from sagetui.core.statistics.intervals import around
from sagetui.core.telemetry import merge_blocks

FLAG_RULE = ("flag a GPU whose p50 lies outside [min lo, max hi] of the other GPUs' 95 % p50 "
             "intervals (t over log round medians), widened by the noise floor on each side")
DEFAULT_FLOOR_PERCENT = 1.0


@dataclass
class GpuResult:
    runner: str
    name: str | None = None
    uuid: str | None = None
    error: str | None = None
    p50_s: float | None = None
    ci_percent: float | None = None  # half-width of the p50's 95 % interval
    round_p50s: list[float] = field(default_factory=list)
    telemetry: dict[str, Any] | None = None  # core/telemetry's summary over every round
    flagged: bool = False
    why: str | None = None

    @property
    def interval(self) -> tuple[float, float] | None:
        if self.p50_s is None:
            return None
        return around(self.p50_s, self.ci_percent)


def gpu_result(runner: str, report: Report | None, error: str | None = None) -> GpuResult:
    """One GPU's row from its run's report (its first variant: the kernel checked)."""
    if report is None or not report.variants:
        return GpuResult(runner, error=error or "no report")
    gpu = (report.environment or {}).get("gpu") or {}
    v = report.variants[0]
    out = GpuResult(runner, name=gpu.get("name"), uuid=gpu.get("uuid"))
    if v.status not in ("ok", "partial") or not v.rounds:
        out.error = v.error or error or "the kernel did not run"
        return out
    out.round_p50s = [r.p50_s for r in v.rounds]
    # the run's own figures (core/run/figures.py), as its report and `run` show them
    out.p50_s = v.timing.p50_s if v.timing is not None else None
    out.ci_percent = (v.intervals or {}).get("total")
    out.telemetry = merge_blocks(t.model_dump() for t in v.telemetry or [])
    return out


def flag(results: list[GpuResult], floor_percent: float = DEFAULT_FLOOR_PERCENT) -> list[str]:
    """Apply the rule to every measured GPU (marks `flagged` and `why`); the notes to show."""
    ok = [r for r in results if r.p50_s is not None]
    if len(ok) < 2:
        return [f"{len(ok)} GPU measured: nothing to compare it with"]
    f = floor_percent / 100.0
    notes = []
    for g in ok:
        others = [r.interval for r in ok if r is not g]
        lo = min(i[0] for i in others if i) * (1 - f)
        hi = max(i[1] for i in others if i) * (1 + f)
        assert g.p50_s is not None
        if not lo <= g.p50_s <= hi:
            side = "slower" if g.p50_s > hi else "faster"
            edge = hi if g.p50_s > hi else lo
            g.flagged = True
            g.why = (f"{side} than the others: p50 {fmt.ms_significant(g.p50_s)} ms, "
                     f"{fmt.percent(abs(ratio_percent(g.p50_s, edge)), 1)} past their spread "
                     f"[{fmt.ms_significant(lo)}, {fmt.ms_significant(hi)}] ms")
            notes.append(f"{g.runner}: {g.why}")
    return notes or [f"{len(ok)} GPUs alike: every p50 inside the others' spread"]


def environment(runs: list[tuple[str, Report | None]]) -> dict[str, Any]:
    """Where the check ran (core/environment.py's block): the first measured runner's
    environment (python, torch, device, its GPU, host), and every runner's GPU (name, uuid,
    driver...; None where its run never reported), as a `--gpus` sweep lists them."""
    envs = [(label, (rep.environment or {}) if rep else None) for label, rep in runs]
    out = dict(next((e for _, e in envs if e), {}))
    out["runners"] = [{"runner": label, "gpu": e.get("gpu") if e else None,
                       "device": e.get("device") if e else None} for label, e in envs]
    return out


def to_dict(results: list[GpuResult], notes: list[str], floor_percent: float,
            config: dict[str, Any], env: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"kind": "sagetui node-check", "rule": FLAG_RULE, "noise_floor_percent":
            floor_percent, "config": config, "environment": env or {}, "notes": notes,
            "gpus": [asdict(r) for r in results]}
