"""The late figures (docs/architecture.md, "Late figures"): the verdicts as soon as the last round
is in, then each variant's accuracy, the decomposition check and the inputs' sha256, as they are
computed; a run stopped or whose runner dies while they compute keeps every round and names what is
missing.

Real runner processes on the CPU; `stall@VARIANT:late` (runner/fault_injection.py) holds the runner
in the late figures until it is cancelled, standing in for a long fp32 reference on a GPU."""

from __future__ import annotations

import hashlib
import threading

import pytest

from sagetui.core import events as ev
from sagetui.core.run.status import exit_status
from sagetui.core.status_board import read_status
from sagetui.session.session import Session

from ..conftest import sagetui_here
from .conftest import env, tiny_config, wait_for


def run(cfg, **kw) -> tuple[list[ev.Event], Session]:
    events: list[ev.Event] = []
    s = Session(cfg, on_event=events.append, **kw)
    s.run()
    return events, s


def names(events: list[ev.Event]) -> list[str]:
    return [e.NAME for e in events]


def test_the_verdicts_come_first_and_every_late_figure_reaches_the_report():
    events, s = run(tiny_config("a=reference", "b=reference[slowdown=1.2]"))
    order = names(events)
    measured = order.index("measured")
    last_round = max(i for i, n in enumerate(order) if n == "analysis")
    # nothing is computed between the last round's verdicts and `measured`
    assert order[last_round + 1] == "measured"
    assert "late_facts" not in order[:measured] and "decomposition" not in order[:measured]
    m = events[measured]
    assert m.computing == ["accuracy:a", "accuracy:b", "decomposition", "input_sha256"]
    # nothing in front of the rounds: no accuracy rides a block, the inputs are not hashed
    assert all("accuracy" not in e.facts for e in events if isinstance(e, ev.BlockDone))
    assert next(e for e in events if isinstance(e, ev.Ready)).input_sha256 is None
    late = [e for e in events[measured:] if isinstance(e, ev.LateFacts)]
    assert [e.variant for e in late] == ["a", "b", None]
    report = s.report()
    assert report.status == "complete" and not report.status_detail
    # nothing left the report: the accuracy of each variant, the inputs' sha256 (the bytes
    # the runner made from the seed, hashed here independently), the decomposition check
    for name in ("a", "b"):
        acc = report.variant(name).accuracy
        assert acc is not None and acc.cosine_similarity > 0.99 and acc.rows == "all"
    import torch

    from sagetui.runner.inputs import build_inputs

    i = build_inputs(s.config, "cpu")
    h = hashlib.sha256()
    for t in (i.q, i.k, i.v):
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    assert {v.input_sha256 for v in report.variants} == {h.hexdigest()}
    # the reference backend has no public API of its own: its decomposition check is skipped
    assert any(isinstance(e, ev.Decomposition) and e.skipped for e in events)


def stop_in_the_late_figures(s: Session) -> None:
    """Stop the run once its runner is held in a's accuracy (the status board says so)."""
    status = wait_for(lambda: s.client and s.client.status_path, what="the runner")
    wait_for(lambda: read_status(status).get("phase") == "accuracy", what="the late figures")
    s.cancel()


@pytest.mark.parametrize("when", ["in the runner", "at once"])
def test_a_run_stopped_while_its_late_figures_compute_keeps_every_round_and_names_them(when):
    """Stopped as the verdicts arrive (before the runner is asked), or while the runner
    computes them: the same report, the same words."""
    cfg = tiny_config("a=reference", "b=reference")
    events: list[ev.Event] = []
    s: Session

    def on_event(e: ev.Event) -> None:
        events.append(e)
        if isinstance(e, ev.Measured):
            if when == "at once":
                s.cancel()
            else:
                threading.Thread(target=stop_in_the_late_figures, args=(s,), daemon=True).start()

    s = Session(cfg, on_event=on_event, runner_env={"SAGETUI_INJECT_FAULT": "stall@a:late"})
    report = s.run()
    assert report.status == "partial" and report.rounds == cfg.rounds
    assert report.round_numbers() == {"a": [0, 1, 2], "b": [0, 1, 2]}
    assert all(v.status == "ok" and v.accuracy is None for v in report.variants)
    assert report.status_detail == [
        "not computed: the accuracy of a, b; the decomposition check; the inputs' sha256",
        f"stopped by the user after {cfg.rounds} of {cfg.rounds} rounds, while computing the "
        "late figures"]
    assert exit_status(report.status, len(report.faults or [])) == 1
    assert any(isinstance(e, ev.LateDone) and e.cancelled for e in events) == (
        when == "in the runner")


def test_a_runner_dying_in_its_late_figures_loses_only_those_not_yet_computed():
    """b's accuracy is the second late figure: a's came, the runner exits before b's."""
    events, s = run(tiny_config("a=reference", "b=reference"),
                    runner_env={"SAGETUI_INJECT_FAULT": "exit@b:late"})
    report = s.report()
    assert report.status == "partial" and report.rounds == 3
    assert all(v.status == "ok" for v in report.variants)  # no variant failed
    assert report.variant("a").accuracy is not None and report.variant("b").accuracy is None
    assert report.status_detail == [
        "not computed: the accuracy of b; the decomposition check; the inputs' sha256"]
    assert [f.kind for f in report.faults] == ["died"]


def test_sagetui_run_prints_its_verdicts_before_the_late_figures(tmp_path):
    out = sagetui_here("run", "--variant", "a=reference", "--variant", "b=reference",
                       "--heads", "2", "--q-len", "256", "--head-dim", "64", "--warmup", "1",
                       "--rounds", "2", "--iterations", "3", "--json", tmp_path / "r.json",
                       cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    verdicts = text.index("Verdicts (final): 2 rounds measured; computing the accuracy of a, b;")
    final = text.index("Result: COMPLETE run, 2 rounds")
    assert verdicts < final and "rel L1 %" in text[final:]
    assert "measured: the verdicts are final; computing the accuracy of a, b" in out.stderr


def test_a_stalled_late_figure_is_stopped_by_ctrl_c_with_exit_1(tmp_path):
    """`sagetui run`, interrupted while its late figures compute: the rounds are written."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "sagetui", "run", "--variant", "a=reference", "--heads", "2",
         "--q-len", "256", "--head-dim", "64", "--warmup", "1", "--rounds", "2",
         "--iterations", "3", "--json", str(tmp_path / "r.json")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env(XDG_STATE_HOME=str(tmp_path / "state"), SAGETUI_INJECT_FAULT="stall@a:late"))
    seen: list[str] = []

    def measured() -> bool:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        seen.append(line)
        return "measured: the verdicts are final" in line

    wait_for(measured, what="the verdicts")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "Result: PARTIAL run, 2 rounds" in out
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "partial" and report["rounds"] == 2
    assert report["status_detail"][0] == ("not computed: the accuracy of a; the decomposition "
                                          "check; the inputs' sha256")
