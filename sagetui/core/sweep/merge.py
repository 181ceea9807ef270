"""Joining sweep reports (`sagetui merge`): the reports of one sweep's parts (Slurm jobs, or
runs of some of its points) become the report of the whole, built as a single runner's is
(sweep/collect.sweep_report), so `sagetui check` recomputes it the same way.

Parts join only when they are parts of the same sweep: the same axes, variants, rounds,
iterations and warmup, and the same base shape (heads, batch, dtype, layout). A point measured
in two parts is refused rather than one picked silently.
"""

from __future__ import annotations

from typing import Any

from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.config import RunConfig
from sagetui.core.report.model import Fault, Report
from sagetui.core.sweep.collect import points_status, sweep_report
from sagetui.core.sweep.plan import Axes, plan

SAME = ("x_axis", "axes", "variants", "baseline", "warmup", "rounds", "iterations")
SAME_SHAPE = ("batch", "heads", "kv_heads", "dtype", "layout")


class MergeError(ValueError):
    pass


def merge(reports: list[tuple[str, Report]]) -> Report:
    """The whole sweep from its parts (name, report); MergeError (one line) when they are not
    parts of one sweep."""
    if not reports:
        raise MergeError("nothing to merge")
    first_name, first = reports[0]
    for name, r in reports:
        if r.sweep is None:
            raise MergeError(f"{name}: not a sweep report")
    assert first.sweep is not None
    ref = first.sweep.model_dump()
    ref_shape = first.config.get("shape", {}) if isinstance(first.config, dict) else {}
    points: dict[int, tuple[str, SweepPoint]] = {}
    for name, r in reports:
        assert r.sweep is not None
        d = r.sweep.model_dump()
        for k in SAME:
            if d[k] != ref[k]:
                raise MergeError(f"{name}: its {k} and {first_name}'s differ: not parts "
                                 "of one sweep")
        shape = r.config.get("shape", {}) if isinstance(r.config, dict) else {}
        for k in SAME_SHAPE:
            if shape.get(k) != ref_shape.get(k):
                raise MergeError(f"{name}: its {k} and {first_name}'s differ")
        for p in r.sweep.points:
            if p.index in points:
                raise MergeError(f"point {p.index} is in {points[p.index][0]} and {name}")
            points[p.index] = (name, p)
    axes = Axes(**first.sweep.axes)
    base = RunConfig.model_validate(first.config)
    planned = len(plan(base.shape, axes))
    faults: list[Fault] = []
    for _, r in reports:
        faults += [f for f in r.faults or [] if f not in faults]
    status = points_status([p for _, p in points.values()], planned)
    if any(r.status == "cancelled" for _, r in reports) and status != "complete":
        status = "cancelled"
    return sweep_report(base, axes, [p for _, p in points.values()],
                        environment=_environment(reports), created=min(
                            r.created_utc or "" for _, r in reports), status=status, faults=faults)


def _environment(reports: list[tuple[str, Report]]) -> dict[str, Any]:
    """The first part's environment, with every part's runners (or its own GPU) listed."""
    env = dict(reports[0][1].environment or {})
    runners = []
    for name, r in reports:
        e = r.environment or {}
        for run in e.get("runners") or [{"gpu": e.get("gpu"), "host": e.get("host")}]:
            runners.append({**run, "part": name})
    env["runners"] = runners
    return env
