"""Mutation coverage, the measure of `sagetui check` (docs/reports.md, "`sagetui check`"): every
derived leaf of a report (recorded.py: outside the raw samples and the recorded facts) changed one
at a time, and whether `check` catches the change. tests/test_check_mutation.py and
benchmarks/check_mutation.py run it over sample_results/.

A change is meaningful: a number x becomes x * 1.07 + 1e-3 (an integer n, n + 1), a verdict
state or a status each other valid word, a flag its opposite. A change the report model refuses
(a share above 1, say) is caught at load, as `check` refuses the file (exit 2).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from sagetui.core.check.recorded import Json, inventory
from sagetui.core.check.report import check_report
from sagetui.core.report.model import Report

STATES = ("FASTER", "SLOWER", "SAME", "INCONCLUSIVE")
WORDS = {
    "verdict.state": STATES,
    "$.status": ("complete", "partial", "cancelled", "failed"),
    "variants[].status": ("ok", "failed", "excluded", "partial"),
    "points[].status": ("ok", "partial", "failed", "skipped"),
    "points[].variants[].status": ("ok", "failed"),
}
POINTS = ("$.sweep.points[", "$.workload.points[")  # a sweep's points and a workload's calls


@dataclass(frozen=True)
class Mutation:
    path: str
    old: Any
    new: Any


def _choices(path: str, value: Any) -> list[Any]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1]
    if isinstance(value, float):
        return [value * 1.07 + 1e-3]
    if isinstance(value, str):
        if path.endswith(".verdict.state"):
            words: tuple[str, ...] = WORDS["verdict.state"]
        elif path == "$.status":
            words = WORDS["$.status"]
        elif path.startswith(POINTS) and ".variants[" in path and path.endswith("].status"):
            words = WORDS["points[].variants[].status"]
        elif path.startswith(POINTS) and path.endswith("].status"):
            words = WORDS["points[].status"]
        elif path.startswith("$.variants[") and path.endswith("].status"):
            words = WORDS["variants[].status"]
        else:
            return []
        return [w for w in words if w != value]
    return []


class _Deleted:
    def __repr__(self) -> str:
        return "(deleted)"


DELETED = _Deleted()  # a Mutation's `new` that removes the member (a derived figure left out)


def mutations(data: Json) -> list[Mutation]:
    """Every change of a derived leaf: its numbers, flags, verdict states and statuses."""
    return [Mutation(path, value, new) for path in inventory(data).derived
            for value in [_get(data, path)] for new in _choices(path, value)]


def deletions(data: Json) -> list[Mutation]:
    """Every derived leaf deleted, and every member on the way to one (a variant's `timing`,
    its `verdict`, a point of a sweep, the report's `status`): what a report that leaves a
    figure out would be."""
    out: dict[str, None] = {}
    for path in inventory(data).derived:
        steps = _steps(path)
        for n in range(1, len(steps) + 1):
            out[_path(steps[:n])] = None
    return [Mutation(p, _get(data, p), DELETED) for p in out]


def _path(steps: list[str | int]) -> str:
    return "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in steps)


def _steps(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path[2:].replace("[", ".[").split("."):
        if part.startswith("["):
            out.append(int(part[1:-1]))
        elif part:
            out.append(part)
    return out


def _get(data: Any, path: str) -> Any:
    for k in _steps(path):
        data = data[k]
    return data


def apply(data: Json, m: Mutation) -> Json:
    """A copy of the report with the one change."""
    out = copy.deepcopy(data)
    _set(out, m.path, m.new)
    return out


def _set(data: Any, path: str, value: Any) -> None:
    steps = _steps(path)
    for k in steps[:-1]:
        data = data[k]
    if value is DELETED:
        del data[steps[-1]]
    else:
        data[steps[-1]] = value


def caught(data: Json) -> str | None:
    """How `check` catches a report (None: it passes): refused at load, or a mismatch."""
    try:
        report = Report.model_validate(data)
    except ValidationError:
        return "refused"
    return "mismatch" if check_report(report) else None


@dataclass(frozen=True)
class Outcome:
    tried: int
    missed: list[Mutation]  # check passed the changed report
    refused: int  # caught at load: the report model refuses the changed value


def run(data: Json, todo: list[Mutation] | None = None) -> Outcome:
    """Each change made in place, checked and undone. A deletion that leaves the report as
    read unchanged (the member held its field's default) is no edit: not counted."""
    todo = mutations(data) if todo is None else todo
    missed, refused, tried = [], 0, 0
    as_read: list[Report] = []  # the report unchanged, read once where a deletion needs it
    # the run's raw samples, which no edit touches, read once (the model takes them as read)
    work = {**data, "samples": Report.model_validate(data).samples} if data.get("samples") \
        else data
    for m in todo:
        parent = _parent(work, m.path)
        saved = copy.copy(parent)  # shallow: the change replaces or removes one member
        _set(work, m.path, m.new)
        try:
            how = caught(work)
            if how is None and m.new is DELETED:
                deleted = Report.model_validate(work)
                _restore(parent, saved)
                as_read = as_read or [Report.model_validate(work)]
                if deleted == as_read[0]:
                    continue
        finally:
            _restore(parent, saved)
        tried += 1
        if how is None:
            missed.append(m)
        refused += how == "refused"
    return Outcome(tried, missed, refused)


def _parent(data: Any, path: str) -> Any:
    for k in _steps(path)[:-1]:
        data = data[k]
    return data


def _restore(parent: Any, saved: Any) -> None:
    if isinstance(parent, list):
        parent[:] = saved
    else:
        parent.clear()
        parent.update(saved)
