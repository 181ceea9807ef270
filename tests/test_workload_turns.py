"""A workload's calls taken in turn, a round at a time (session/workload.py): round r of every
call before round r + 1 of any, each call's set-up kept in the runner between its turns
(Setup.keep) and resumed there, the late figures after each call's last round. Real parts: the
model of tests/capture_model.py captured, a real runner process on the CPU reference
backend."""

from __future__ import annotations

import pytest

from sagetui.core import events as ev
from sagetui.core.capture.loaded import load_workload
from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, VariantSpec
from sagetui.core.report.model import Report
from sagetui.session.workload import ORDER, WorkloadSession

from .test_capture import captured

ROUNDS = 3


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """Three calls of the capture replayed: (the session, its events, its report)."""
    cap = tmp_path_factory.mktemp("turns") / "cap"
    captured(cap, steps=1, calls="0-2")
    capture = load_workload(cap)
    first = capture.calls[0]
    assert first.shape is not None
    cfg = RunConfig(shape=first.shape, inputs_path=str(first.file), warmup=2, rounds=ROUNDS,
                    iterations=2, variants=[VariantSpec.parse("a=reference"),
                                            VariantSpec.parse("b=reference[slowdown=1.2]")])
    events: list[ev.Event] = []
    midway: list[Report] = []

    def on_event(e: ev.Event) -> None:
        events.append(e)
        if isinstance(e, ev.PointStarted) and (e.index, e.round) == (0, 1):
            midway.append(session.report())  # what a recovery file holds now

    session = WorkloadSession(cfg, capture, capture.calls, on_event=on_event)
    emit = session.emit

    def every(e: ev.Event) -> None:  # the points' own events too (the display gets none)
        if isinstance(e, ev.WarmupDone):
            warmups.append((session.model.config.inputs_path, e.variant, e.calls))
        emit(e)

    warmups: list[tuple] = []
    session.emit = every  # type: ignore[method-assign]
    report = session.run()
    session.warmups = warmups  # type: ignore[attr-defined]
    return session, events, report, midway


def test_each_round_of_every_call_before_the_next_round_of_any(replayed):
    _, events, report, _ = replayed
    turns = [(e.index, e.round) for e in events if isinstance(e, ev.PointStarted)]
    assert turns == [(i, r) for r in range(ROUNDS) for i in range(3)]
    # each call is kept after its last round (and its late figures), in the last pass
    done = [i for i, e in enumerate(events) if isinstance(e, ev.PointDone)]
    last_pass = [i for i, e in enumerate(events) if isinstance(e, ev.PointStarted)
                 and e.round == ROUNDS - 1]
    assert len(done) == 3 and min(done) > min(last_pass)
    wl = report.workload
    assert report.status == "complete" and wl is not None and wl.order == ORDER
    assert all(v.round_count == ROUNDS for p in wl.points for v in p.variants)
    assert all(v.accuracy_brief is not None and v.accuracy_brief.relative_l1 is not None
               for p in wl.points for v in p.variants)  # the late figures came for each
    assert check_report(report) == []


def test_the_runner_resumes_each_calls_set_up(replayed):
    """Every turn after a call's first resumed the set-up the runner kept for it (its ready
    says its inputs were reused); a call set up afresh each turn would say they were not."""
    session, _, report, _ = replayed
    models = [turns.model for _, _, turns in session._calls]
    assert len(models) == 3 and all(m is not None for m in models)
    assert all(m.ready.get("reused_inputs") is True for m in models if m is not None)
    # the inputs each call's rounds ran on are its own: three files, three hashes
    assert len({p.input_sha256 for p in report.workload.points} - {None}) == 3
    # a call's first turn warms each variant up whole (--warmup 2), a resumed one with a call
    per_call: dict = {}
    for path, variant, calls in session.warmups:
        per_call.setdefault((path, variant), []).append(calls)
    assert len(per_call) == 6 and all(c == [2] + [1] * (ROUNDS - 1) for c in per_call.values())


def test_a_schema_version_edited_below_the_order_is_caught(replayed):
    """`order` was first written in schema 8: a report that holds it and says 7 is refused."""
    _, _, report, _ = replayed
    raw = report.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw["schema_version"] = 7
    found = check_report(Report.model_validate(raw))
    assert [m.path for m in found] == ["$.schema_version"]
    assert found[0].why == "$.workload.order is there, first written in schema 8"


def test_between_turns_the_recovery_file_holds_every_call_reached(replayed):
    """Midway (every call has its first round, none its last) the report a recovery file
    gets holds each call with its round, partial, and passes `check`."""
    _, _, _, midway = replayed
    (snapshot,) = midway
    wl = snapshot.workload
    assert snapshot.status == "partial" and wl is not None
    assert [p.index for p in wl.points] == [0, 1, 2]
    assert all(v.round_count == 1 for p in wl.points for v in p.variants)
    assert check_report(snapshot) == []


def test_a_set_up_out_of_memory_beside_the_held_ones_drops_them_and_goes_on(tmp_path):
    """Where the held set-ups leave too little memory for a call's new one (injected: a CPU
    has no GPU memory to run out of), the runner drops them and makes it again: every call
    is measured, each set up afresh at its next turn (its ready says its inputs were not
    reused), and no variant fails."""
    cap = tmp_path / "cap"
    captured(cap, steps=1, calls="0-2")
    capture = load_workload(cap)
    first = capture.calls[0]
    assert first.shape is not None
    cfg = RunConfig(shape=first.shape, inputs_path=str(first.file), warmup=1, rounds=2,
                    iterations=2, variants=[VariantSpec.parse("a=reference")])
    session = WorkloadSession(cfg, capture, capture.calls,
                              runner_env={"SAGETUI_INJECT_FAULT": "oom@held"})
    report = session.run()
    assert report.status == "complete", report.status_detail
    assert not report.faults and check_report(report) == []
    models = [t.model for _, _, t in session._calls]
    assert all(m is not None and m.ready.get("reused_inputs") is False for m in models)
