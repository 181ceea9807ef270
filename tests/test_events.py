"""The typed event stream: the codec's round trip and refusals, the one log-line function, and
the rule that a display's `match` never drops an event silently."""

from __future__ import annotations

import math
import typing

import pytest

from sagetui.core import events as ev
from sagetui.core import protocol
from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.eventlog import log_line
from sagetui.core.report.io import load_report
from sagetui.core.report.model import Fault, Report
from sagetui.core.sweep import collect
from sagetui.core.sweep.plan import Axes

from .conftest import SAMPLES as REPORTS
from .test_check import _made_report

SAMPLES: list[ev.RunnerEvent | ev.Command] = [
    ev.Hello(protocol=2, pid=1, python="3.11", torch="2.4", device="cpu",
             backends={"reference": None, "sdpa": "needs a CUDA device"}),
    ev.VariantLoaded(name="a", backend="reference", status="ok",
                     phases=[("qk", None), ("q", "qk")],
                     facts={"provenance": {"files": [{"module": "m", "path": "/x.so",
                                                      "sha256": "0" * 64, "size_bytes": 10,
                                                      "mtime_utc": "2026"}]}}),
    ev.Ready(input_sha256="0" * 64, device="cpu", gpu={"name": "H200"}),
    ev.WarmupDone(variant="a", calls=3, seconds=0.5),
    ev.Iterations(variant="a", round=1, half=0, start=4, phases={"q": [1e-3, 2e-3]},
                  total_s=[1e-3, 2e-3]),
    ev.BlockDone(variant="a", round=1, half=0, iterations=2, cancelled=False,
                 output_sha256="ab" * 32, checksum=1.5, host={"enqueue_s": 0.1},
                 facts={"sdpa_backend": "flash", "sdpa_backend_method": "torch._fused_sdp_choice"}),
    ev.Decomposition(variant="a", skipped="no public API"),
    ev.LateFacts(variant="a", facts={"accuracy": {"cosine_similarity": 0.99, "rows": 4,
                                                  "reference": "fp32"}}),
    ev.LateFacts(facts={"input_sha256": "0" * 64}),
    ev.LateDone(cancelled=True),
    ev.PhaseStarted(variant="a", phase="q"),
    ev.RunnerError(kind="oom", message="CUDA out of memory", variant="a", fatal=False),
    ev.Bye(),
    ev.Setup(config={"rounds": 3}), ev.Warmup(variant="a", calls=2),
    ev.Block(variant="a", round=0, half=1, iterations=5), ev.Late(accuracy=["a"], decompose="a"),
    ev.Cancel(), ev.Quit(),
]


def test_every_message_has_a_sample_and_a_unique_name():
    kinds = {type(m) for m in SAMPLES}
    assert kinds == set(typing.get_args(ev.RunnerEventT)) | set(typing.get_args(ev.CommandT))
    assert len(protocol.EVENTS) == len(typing.get_args(ev.RunnerEventT))
    assert len(protocol.COMMANDS) == len(typing.get_args(ev.CommandT))


@pytest.mark.parametrize("msg", SAMPLES, ids=lambda m: m.NAME)
def test_round_trip(msg):
    line = protocol.encode(msg)
    assert line.endswith("\n") and line.count("\n") == 1
    decode = protocol.decode_event if isinstance(msg, ev.RunnerEvent) else \
        protocol.decode_command
    assert decode(line) == msg


@pytest.mark.parametrize("line, why", [
    ('{"event": "iteration", "variant": "a"}', "not a known event"),  # protocol 1's name
    ('{"variant": "a"}', "not a known event"),
    ('[1, 2]', "not a known event"),
    ('{"event": ["hello"]}', "not a known event"),
    ("not json", "not a JSON line"),
    ('{"event": "tail_done", "variant": "a"}', "not a known event"),  # a sweep point now
    ('{"event": "phase", "variant": "a"}', "a malformed phase"),  # a field missing
    ('{"event": "phase", "variant": "a", "phase": "q", "extra": 1}', "a malformed phase"),
    ('{"event": "warmup_done", "variant": "a", "calls": "3", "seconds": 1}',
     "a malformed warmup_done"),  # "3" is not 3
    ('{"event": "iterations", "variant": "a", "round": 0, "half": 0, "start": 0, '
     '"phases": {"q": [1, "x"]}, "total_s": [1]}', "a malformed iterations"),
])
def test_unknown_or_malformed_lines_are_protocol_errors(line, why):
    with pytest.raises(protocol.ProtocolError, match=why):
        protocol.decode_event(line)


def test_a_command_is_not_an_event():
    with pytest.raises(protocol.ProtocolError, match="not a known event"):
        protocol.decode_event(protocol.encode(ev.Quit()))
    with pytest.raises(protocol.ProtocolError, match="not a known cmd"):
        protocol.decode_command(protocol.encode(ev.Bye()))


def test_numbers_json_cannot_hold_travel_as_null_with_their_paths():
    e = ev.BlockDone(variant="a", round=0, half=0, iterations=1, cancelled=False,
                     checksum=math.nan, telemetry={"power_w": {"max": math.inf}})
    back = protocol.decode_event(protocol.encode(e))
    assert isinstance(back, ev.BlockDone)
    assert back.checksum is None and back.telemetry == {"power_w": {"max": None}}
    assert sorted(back.nonfinite or []) == ["checksum", "telemetry.power_w.max"]


def _point() -> SweepPoint:
    """A point whose setup failed (no report)."""
    shape = Shape(heads=2, q_len=128, kv_len=256, head_dim=64)
    axes = Axes(q_lens=[128], head_dims=[64], causal=[False])
    return collect.point(2, shape, axes, None, error="CUDA out of memory", fault_kind="oom")


def _session_samples() -> list[ev.Event]:
    report = _made_report()
    cfg = RunConfig(shape=Shape(heads=2, q_len=128, head_dim=64),
                    variants=[VariantSpec(name="a", backend="reference")])
    return [ev.RunStarted(config=cfg, created_utc="2026-01-01T00:00:00+00:00"),
            ev.ConfigResolved(config=cfg),
            ev.ThresholdResolved(threshold={"threshold_percent": 2.0,
                                            "threshold_source": "calibration"}),
            ev.BaselineChanged(baseline="b"),
            ev.ProfilesAdded(profiles=load_report(
                REPORTS / "h200_profile_sm90_reference_shape.json").mainloop_profiles or []),
            ev.Resumed(),
            ev.RoundStarted(round=0, variants=["a", "b"]),
            ev.RoundDone(round=0, completed=["a", "b"]),
            ev.AnalysisDone(round=0, verdicts={"b": {"state": "SAME", "ci_low_percent": -1.0,
                                                     "ci_high_percent": 1.0}}),
            ev.Measured(computing=["accuracy:a", "accuracy:b", "decomposition",
                                   "input_sha256"]),
            ev.TailRow(variant="a", sweep="q_len", q_len=128, kv_len=256, mainloop=[1e-4],
                       phase="fused_mainloop", checksum=2.0),
            ev.PointStarted(index=2, total=4, shape="1x1x128x256x64"),
            ev.PointDone(index=2, total=4, point=_point()),
            ev.FaultRaised(fault=Fault(kind="died", message="gone", variant="b", round=1,
                                       stderr_tail=["x"])),
            ev.LogMessage(message="hello"),
            ev.FromRunner(runner="gpu 1", event=ev.FaultRaised(fault=Fault(kind="died",
                                                                           message="gone"))),
            ev.Finished(status="partial", report=report, detail=["variant b failed"])]


def test_log_line_has_an_arm_for_every_event():
    """Each event writes its line or, on purpose, none; none reaches `unexpected`."""
    events = [m for m in SAMPLES if isinstance(m, ev.RunnerEvent)] + _session_samples()
    assert {type(e) for e in events} == set(typing.get_args(ev.Event))
    lines = {e.NAME: log_line(e) for e in events}  # raises under SAGETUI_STRICT_EVENTS
    assert lines["variant"].text == "variant a (reference): loaded"
    assert lines["analysis"].text == "round 1 done · b: SAME [-1.00, +1.00] %"
    assert lines["round_done"] is None  # the analysis after it says the round is done
    assert lines["threshold"].text == ("verdicts: SAME when the 95 % interval lies within "
                                       "±2.00 % (calibration)")
    assert lines["fault"].text == "FAULT died: gone (variant b, round 1)"
    assert lines["fault"].severity == "error" and lines["fault"].detail == ["x"]
    assert lines["finished"].text == "run partial: 3 rounds kept (variant b failed)"
    assert lines["iterations"] is None
    assert lines["block_done"].text == ("variant a: torch's SDPA ran the flash backend "
                                        "(torch._fused_sdp_choice)")
    assert lines["tail"].text == "tail study: q_len q_len 128 kv_len 256"
    # late figures: the verdicts as soon as the last round is in, then each late figure
    assert lines["measured"].text == ("measured: the verdicts are final; computing the "
                                      "accuracy of a, b; the decomposition check; the "
                                      "inputs' sha256")
    accuracy = next(e for e in events if isinstance(e, ev.LateFacts) and e.variant)
    assert log_line(accuracy).text.startswith("accuracy of a against fp32 attention: cos 0.99")
    assert lines["late_facts"].text == "inputs' sha256 000000000000"  # the run's, last
    assert lines["late_done"] is None
    assert lines["point_start"].text == "point 3/4: 1x1x128x256x64"
    assert lines["point"].text.startswith("sweep point 3/4: ")
    assert lines["point"].text.endswith("failed: CUDA out of memory")
    assert lines["point"].severity == "error"
    # a runner's event of several (--gpus): its own line, prefixed with the runner
    assert lines["from_runner"].text == "[gpu 1] FAULT died: gone"
    assert lines["from_runner"].severity == "error"


def test_an_event_no_match_handles_is_an_error_in_the_tests(monkeypatch):
    """`unexpected` ends every display's match: in the tests (SAGETUI_STRICT_EVENTS, set in
    conftest.py) it raises, outside them it lets the run go on."""

    class Stray:
        NAME = "stray"

    with pytest.raises(ev.UnexpectedEvent, match="Stray"):
        log_line(Stray())  # type: ignore[arg-type]
    from sagetui.core.run.fold import apply, new_model

    with pytest.raises(ev.UnexpectedEvent):
        apply(new_model(), Stray())  # type: ignore[arg-type]
    monkeypatch.delenv(ev.STRICT_ENV)
    assert log_line(Stray()) is None  # type: ignore[arg-type]


def test_finished_carries_the_report():
    e = _session_samples()[-1]
    assert isinstance(e, ev.Finished) and isinstance(e.report, Report)


def test_the_synthetic_runner_speaks_this_protocol():
    """benchmarks/synthetic_runner.py imports nothing of sagetui: its version is restated."""
    import ast
    from pathlib import Path

    from sagetui.core.protocol import PROTOCOL_VERSION

    tree = ast.parse((Path(__file__).parent.parent / "benchmarks/synthetic_runner.py").read_text())
    found = [n.value.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
             and any(getattr(t, "id", None) == "PROTOCOL" for t in n.targets)]
    assert found == [PROTOCOL_VERSION]


def test_a_runner_of_another_protocol_version_is_refused():
    import pytest

    from sagetui.core.config import default_config
    from sagetui.core.protocol import PROTOCOL_VERSION
    from sagetui.session.errors import NotRunnable, refuse_unrunnable

    old = ev.Hello(protocol=PROTOCOL_VERSION - 1, pid=1, python="3.12", torch="2.11",
                   device="cpu", backends={"reference": None})
    with pytest.raises(NotRunnable, match="another install"):
        refuse_unrunnable(default_config(), old)
