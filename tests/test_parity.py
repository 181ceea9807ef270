"""One run, one model (docs/architecture.md, "The run model"): event streams recorded from real runs
(`sagetui run --record-events`: tests/data/events/, one on this CPU, one on an H200), replayed. The
report built from the replayed model is the session's own (the `finished` event's), to the last
sample; and a report saved and loaded again into the model gives the same figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from sagetui.core import events as ev
from sagetui.core.event_record import decode, encode, read_events
from sagetui.core.report.envelope import SCHEMA_VERSION
from sagetui.core.run import figures
from sagetui.core.run.assemble import build_report
from sagetui.core.run.fold import apply, new_model
from sagetui.core.run.load import from_report
from sagetui.core.run.model import RunModel

STREAMS = sorted((Path(__file__).parent / "data" / "events").glob("*.jsonl"))


def replay(path: Path) -> tuple[list[ev.Event], ev.Finished]:
    events = list(read_events(path.read_text().splitlines()))
    finished = events[-1]
    assert isinstance(finished, ev.Finished), "a recorded run ends with its finished event"
    return events, finished


def folded(events: list[ev.Event]) -> RunModel:
    """A new model with every event applied, as the session and the console fold them."""
    m = new_model()
    for e in events:
        apply(m, e)
    return m


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_the_replayed_models_report_is_the_sessions(path: Path) -> None:
    events, finished = replay(path)
    rebuilt, recorded = build_report(folded(events)).to_json_dict(), finished.report.to_json_dict()
    # written now, in this sagetui's schema; the stream's report in the one it was recorded in
    assert rebuilt.pop("schema_version") == SCHEMA_VERSION >= recorded.pop("schema_version")
    if not any("sol" in v for v in recorded.get("variants", [])):
        # recorded before the speed of light: test_sol.py checks the rebuilt block
        for v in rebuilt.get("variants", []):
            v.pop("sol", None)
    if not any("clocks" in v for v in recorded.get("variants", [])):
        # recorded before verdicts named their clocks: test_host_time.py checks the block
        for v in rebuilt.get("variants", []):
            v.pop("clocks", None)
    if not any("host_share" in v for v in recorded.get("variants", [])):
        # recorded before schema 7's host share: test_host_time.py checks it
        for v in rebuilt.get("variants", []):
            v.pop("host_share", None)
    if "affinity" not in recorded.get("config", {}):
        # recorded before --affinity (None unless given): test_affinity.py checks the field
        rebuilt["config"].pop("affinity", None)
    assert rebuilt == recorded


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_every_recorded_event_reads_back_as_it_was(path: Path) -> None:
    for line in path.read_text().splitlines():
        assert encode(decode(line)) == line + "\n"


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_a_saved_report_loads_into_a_model_with_the_same_figures(path: Path) -> None:
    """The live model and the model of its saved report: every figure a panel reads."""
    events, finished = replay(path)
    live = folded(events)
    saved = from_report(finished.report)
    assert list(saved.variants) == list(live.variants)
    assert saved.status == live.status and saved.status_detail == live.status_detail
    assert saved.baseline == live.baseline and saved.threshold == live.threshold
    for name, v in live.variants.items():
        s = saved.variants[name]
        for fig in (figures.timing, figures.rounds, figures.phase_timings, figures.intervals,
                    figures.telemetry):
            assert fig(s) == fig(v), (name, fig.__name__)
        for fig2 in (figures.scheduler, figures.achieved, figures.kernel):
            assert fig2(saved, s) == fig2(live, v), (name, fig2.__name__)
        got, want = figures.of(saved, s), figures.of(live, v)  # the one object, either way
        assert type(got) is type(want) and figures.of(saved, s) is got  # once per version
        for field in ("timing", "p50_s", "rounds", "phase_timings", "intervals", "telemetry",
                      "outputs", "options", "kernel", "scheduler", "peak", "achieved", "sol"):
            assert getattr(got, field) == getattr(want, field), (name, field)
        # a report saved before schema 7 keeps no host share, and its model shows none
        assert got.host == {k: x for k, x in want.host.items()
                            if k != "host_share" or "host_share" in got.host}, name
        assert (s.verdict, s.drift, s.speedup_percent) == (v.verdict, v.drift,
                                                           v.speedup_percent), name
        assert s.facts == v.facts and s.status == v.status, name
    assert figures.tail_rows(saved) == figures.tail_rows(live)


def test_the_streams_cover_every_event_a_run_folds() -> None:
    """The recordings exercise the fold: a run start, variants, rounds, analyses, the end
    (the H200 one: a GPU, its telemetry, accuracy)."""
    names = set()
    for path in STREAMS:
        names |= {e.NAME for e in replay(path)[0]}
    assert {"run_started", "hello", "variant", "ready", "threshold", "round_started",
            "iterations", "block_done", "round_done", "analysis", "measured", "late_facts",
            "decomposition", "late_done", "tail", "finished"} <= names
    assert len(STREAMS) >= 1
