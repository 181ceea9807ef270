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

from sagetui.core.run import late
from sagetui.core.run.model import RunModel

PENDING = "pending"
RUNNING = "running"
COMPLETE = "complete"
PARTIAL = "partial"
CANCELLED = "cancelled"
FAILED = "failed"
TERMINAL = (COMPLETE, PARTIAL, CANCELLED, FAILED)


def final_status(m: RunModel, *, stopped_by: str | None = None, error: str | None = None,
                 rounds_planned: int | None = None) -> tuple[str, list[str]]:
    """The terminal state of a run that ended, and why it is not complete (one line each).
    stopped_by: who stopped it early ("the user", "SIGTERM", "every variant turned off");
    error: the session's own failure; rounds_planned: the rounds it meant to make (None: as
    many as it made, e.g. adaptive stopping that stopped itself)."""
    detail: list[str] = []
    kept_any = False
    trouble = error is not None
    last = max((r for v in m.variants.values() for r in v.asked), default=None)
    for v in m.variants.values():
        kept = v.completed_rounds
        kept_any = kept_any or bool(kept)
        asked = [r for r in v.asked if not (stopped_by and r == last)]  # the round cut short
        if v.status == "failed":
            trouble = True
            when = (f"in round {v.failed_round + 1}" if v.failed_round is not None
                    else "before its first round")
            kept_text = f"{len(kept)} of {len(v.asked)} rounds kept" if v.asked \
                else "no round kept"
            why = (v.error or "no reason given").rstrip(".")  # a sentence, then "; kept"
            detail.append(f"variant {v.name} failed {when}: {why}; {kept_text}")
        elif missing := [r for r in asked if r not in kept]:
            trouble = True
            detail.append(f"variant {v.name} lost round{'s' * (len(missing) > 1)} "
                          f"{', '.join(str(r + 1) for r in missing)}")
    done = len(m.completed_rounds)
    if m.measured and m.computing and kept_any:  # stopped or lost after its last round
        trouble = True
        detail.append(f"not computed: {late.describe(m.computing)}")
    if error is not None:
        detail.append(f"the session failed: {error}")
    if stopped_by is not None:
        of = f" of {rounds_planned}" if rounds_planned else ""
        late_part = ", while computing the late figures" if m.measured and m.computing else ""
        detail.append(f"stopped by {stopped_by} after {done}{of} rounds{late_part}")
    elif rounds_planned is not None and done < rounds_planned and m.active():
        trouble = True
        detail.append(f"{done} of {rounds_planned} rounds ran")
    if not kept_any:
        status = CANCELLED if stopped_by is not None and not trouble else FAILED
    elif trouble:
        status = PARTIAL
    elif stopped_by is not None:
        status = CANCELLED
    else:
        status = COMPLETE
    return status, detail


def exit_status(status: str | None, faults: int) -> int:
    """`sagetui run`'s exit status: 0 complete and clean, 1 anything else that ran."""
    return 0 if status == COMPLETE and not faults else 1
