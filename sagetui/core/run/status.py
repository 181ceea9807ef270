"""A run's status, as a state machine (docs/architecture.md, "Run status").

    pending ──RunStarted──> running ──Finished──> complete | partial | cancelled | failed
                               ^  |
                               └──┴── Resumed (a stopped run goes on: running again)

The terminal state is decided once, by `final_status`, from what the model holds and how the
run ended; the header, `sagetui run`'s summary and exit status, every export and
`view --recover list` read it from the report, never decide it again:

- complete:  every variant asked to run ran every round it was asked for, none failed, and the
             run was neither stopped nor cut short by an error;
- partial:   rounds were kept, but a variant failed (when, why and what was kept are in
             `status_detail`, and on the variant: status, error, failed_round), a variant lost
             a round it was asked for, a late figure was never computed (the run was stopped
             or its runner died after the last round: late.py), or the session hit an error;
- cancelled: stopped before its planned rounds (by the user, a signal, every variant turned
             off), with nothing else wrong: what was measured is kept and can be resumed;
- failed:    no round of any variant was kept.

`sagetui run` exits 0 only for complete without a fault (a NaN output is a fault: the timings
stand, the exit status says something went wrong), else 1; 2 is bad input refused before any
runner starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sagetui.core.run import late
from sagetui.core.run.model import RunModel

PENDING = "pending"
RUNNING = "running"
COMPLETE = "complete"
PARTIAL = "partial"
CANCELLED = "cancelled"
FAILED = "failed"
TERMINAL = (COMPLETE, PARTIAL, CANCELLED, FAILED)

BUILD_FAILED = "its build failed: "  # a left-out variant's error: its build's failure follows


@dataclass(frozen=True)
class VariantOutcome:
    """What the decision reads of one variant: the same facts from a live model
    (`final_status`) and from a saved report (`report_outcomes`, for `sagetui check`)."""

    name: str
    status: str  # ok, failed (excluded: turned off; the two-build report's partial)
    error: str | None
    failed_round: int | None  # the round it failed in (None: at set-up, or not failed)
    asked: int  # the rounds it was asked to run
    kept: int  # the rounds of it kept


@dataclass(frozen=True)
class Ending:
    """How a run ended, besides its variants: the facts no report field holds but its
    status_detail (so `sagetui check` takes them as recorded, `parse_ending`).
    stopped_by: who stopped it early ("the user", "SIGTERM", "every variant turned off");
    error: the session's own failure; rounds_planned: the rounds it meant to make (None: as
    many as it made, e.g. adaptive stopping that stopped itself); computing: the late figures
    never computed (late.describe), None when none was left."""

    stopped_by: str | None = None
    error: str | None = None
    rounds_planned: int | None = None
    computing: str | None = None


def final_status(m: RunModel, *, stopped_by: str | None = None, error: str | None = None,
                 rounds_planned: int | None = None) -> tuple[str, list[str]]:
    """The terminal state of a run that ended, and why it is not complete (one line each)."""
    outcomes = [VariantOutcome(v.name, v.status, v.error, v.failed_round, len(v.asked),
                               len(v.completed_rounds)) for v in m.variants.values()]
    computing = late.describe(m.computing) if m.measured and m.computing else None
    return terminal_status(outcomes, len(m.completed_rounds),
                  Ending(stopped_by, error, rounds_planned, computing))


def terminal_status(variants: Sequence[VariantOutcome], done: int,
                    ending: Ending) -> tuple[str, list[str]]:
    """The state machine's terminal decision (the module docstring's rules) from each variant's
    rounds asked and kept, how many rounds the run completed (`done`) and how it ended.
    A run that was stopped cut its last round short: a variant that kept one round fewer than
    it was asked to lost none (the round cut short is not lost)."""
    detail: list[str] = []
    kept_any = any(v.kept for v in variants)
    trouble = ending.error is not None
    stopped = ending.stopped_by is not None
    for v in variants:
        if v.status == "failed":
            trouble = True
            when = (f"in round {v.failed_round + 1}" if v.failed_round is not None
                    else "before its first round")
            kept_text = f"{v.kept} of {v.asked} rounds kept" if v.asked else "no round kept"
            why = (v.error or "no reason given").rstrip(".")  # a sentence, then "; kept"
            detail.append(f"variant {v.name} failed {when}: {why}; {kept_text}")
        elif (lost := v.asked - v.kept - (1 if stopped and v.asked > v.kept else 0)) > 0:
            trouble = True
            detail.append(f"variant {v.name} lost {lost} of the {v.asked} rounds it was asked "
                          "to run")
    if ending.computing is not None and kept_any:  # stopped or lost after its last round
        trouble = True
        detail.append(f"{NOT_COMPUTED}{ending.computing}")
    if ending.error is not None:
        detail.append(f"{SESSION_FAILED}{ending.error}")
    if ending.stopped_by is not None:
        of = f" of {ending.rounds_planned}" if ending.rounds_planned else ""
        late_part = LATE_PART if ending.computing is not None else ""
        detail.append(f"{STOPPED_BY}{ending.stopped_by} after {done}{of} rounds{late_part}")
    elif ending.rounds_planned is not None and done < ending.rounds_planned \
            and any(v.status == "ok" for v in variants):
        trouble = True
        detail.append(f"{done} of {ending.rounds_planned} rounds ran")
    if not kept_any:
        status = CANCELLED if stopped and not trouble else FAILED
    elif trouble:
        status = PARTIAL
    elif stopped:
        status = CANCELLED
    else:
        status = COMPLETE
    return status, detail


NOT_COMPUTED = "not computed: "
SESSION_FAILED = "the session failed: "
STOPPED_BY = "stopped by "
LATE_PART = ", while computing the late figures"
_STOP = re.compile(rf"^{STOPPED_BY}(?P<who>.*) after \d+(?: of \d+)? rounds(?P<late>{LATE_PART})?$")


def parse_ending(detail: Iterable[str], rounds_planned: int | None) -> Ending:
    """The Ending a status_detail says, for `sagetui check`: who stopped the run, the session's
    failure and the late figures never computed are the run's own facts (taken as recorded);
    every other line is decided again from the variants (`terminal_status`)."""
    stopped_by = error = computing = None
    for line in detail:
        if line.startswith(NOT_COMPUTED):
            computing = line.removeprefix(NOT_COMPUTED)
        elif line.startswith(SESSION_FAILED):
            error = line.removeprefix(SESSION_FAILED)
        elif m := _STOP.match(line):
            stopped_by = m["who"]
            if m["late"] and computing is None:
                computing = ""
    return Ending(stopped_by, error, rounds_planned, computing)


def recorded_lines(detail: Iterable[str]) -> list[int]:
    """The status_detail lines that carry what `parse_ending` takes as recorded."""
    return [i for i, line in enumerate(detail) if line.startswith((NOT_COMPUTED, SESSION_FAILED))
            or _STOP.match(line)]


def unfinished(rounds: int) -> tuple[str, list[str]]:
    """The status of a report written before its run ended (a recovery file)."""
    return PARTIAL, [f"{UNFINISHED}{rounds} rounds so far)"]


UNFINISHED = "the run had not ended when this was written ("


def left_out(name: str, why: str) -> str:
    """The status line of a variant asked for that never ran: its build failed."""
    return f"variant {name} never ran: {BUILD_FAILED.rstrip(': ')} ({why})"


def left_out_status(status: str, detail: list[str],
                    left: Iterable[tuple[str, str]]) -> tuple[str, list[str]]:
    """A status and its detail with the variants left out (name, why): a complete run is
    partial then, since complete means every variant asked for ran."""
    lines = [left_out(name, why) for name, why in left]
    if not lines:
        return status, detail
    return (PARTIAL if status == COMPLETE else status), [*detail, *lines]


def exit_status(status: str | None, faults: int) -> int:
    """The exit status of `sagetui run` (a run's, a sweep's, a workload's report): 0 complete
    and clean, 1 anything else that ran (a lost variant, a partial report, a fault)."""
    return 0 if status == COMPLETE and not faults else 1
