"""`sagetui check` re-derives every claim (docs/reports.md): mutation coverage over sample_results/
(a seeded sample here; benchmarks/check_mutation.py tries every mutation), every leaf recomputed or
taken as recorded, the verdicts, drift and outlier flags from the raw samples, and the status from
the variants through the one state machine, which the session's reports pass."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from sagetui.core import events as ev
from sagetui.core.build_facts import LeftOut
from sagetui.core.check import mutation
from sagetui.core.check.report import audit, check_report
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.report.model import Fault, Report
from sagetui.core.run import late
from sagetui.core.run.assemble import build_report, with_left_out
from sagetui.core.run.fold import apply, new_model
from sagetui.core.run.model import RunModel
from sagetui.core.run.status import final_status
from sagetui.core.statistics.threshold import Threshold

from .conftest import SAMPLES

REPORTS = sorted(SAMPLES.glob("*.json"))
WORD_PATHS = ("verdict.state", "status")
NUMBERS_PER_FILE = 10  # a seeded sample of each file's numeric mutations: the benchmark does all


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _paths(data: dict) -> list[str]:
    return [m.path for m in check_report(Report.model_validate(data))]


@pytest.mark.parametrize("path", REPORTS, ids=[p.name for p in REPORTS])
def test_every_leaf_of_a_sample_report_is_recomputed_or_taken_as_recorded(path):
    a = audit(Report.model_validate(_load(path)))
    assert a.mismatches == []
    assert a.unaccounted() == []
    assert a.recomputed > 0


def test_seeded_mutations_of_every_sample_report_are_caught():
    """Every verdict state and status flipped to each other valid word, and a seeded sample of
    the numbers, flags and words of each report: check catches every one (the raw samples and
    the facts taken as recorded aside)."""
    rng = random.Random(28)
    tried, missed = 0, []
    for path in REPORTS:
        data = _load(path)
        todo = mutation.mutations(data)
        words = [m for m in todo if m.path.endswith(WORD_PATHS)]
        if len(words) > 2 * NUMBERS_PER_FILE:
            words = rng.sample(words, 2 * NUMBERS_PER_FILE)
        rest = [m for m in todo if not m.path.endswith(WORD_PATHS)]
        sample = words + rng.sample(rest, min(NUMBERS_PER_FILE, len(rest)))
        out = mutation.run(data, sample)
        tried += out.tried
        missed += [(path.name, m) for m in out.missed]
    assert tried > 200
    assert missed == []


def test_a_mutation_changes_one_leaf_meaningfully():
    data = _load(SAMPLES / "h200_backends.json")
    ms = {m.path: m for m in mutation.mutations(data)}
    assert not any(p.startswith(("$.samples", "$.environment", "$.config")) for p in ms)
    # variants[2] (sdpa): SLOWER in the recording (sage2-auto, [1], is now INCONCLUSIVE)
    m = ms["$.variants[2].verdict.estimate_percent"]
    assert m.new == pytest.approx(m.old * 1.07 + 1e-3)
    states = [x.new for x in mutation.mutations(data)
              if x.path == "$.variants[2].verdict.state"]
    assert sorted(states) == ["FASTER", "INCONCLUSIVE", "SAME"]
    assert mutation.caught(mutation.apply(data, m)) == "mismatch"


# -- the cases ---------------------------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [
    ("state", "FASTER"), ("estimate_percent", 5.0), ("ci_low_percent", -1.0),
    ("ci_high_percent", 0.5), ("threshold_percent", 3.0), ("rounds", 2),
])
def test_an_edited_verdict_fails_check(field, value):
    data = _load(SAMPLES / "h200_backends.json")  # variants[2]: sdpa, a decided verdict
    assert data["variants"][2]["verdict"]["state"] == "SLOWER"
    data["variants"][2]["verdict"][field] = value
    assert f"$.variants[2].verdict.{field}" in _paths(data)


@pytest.mark.parametrize(("field", "value"), [
    ("flagged", True), ("slope_percent_per_round", 0.0), ("first_to_last_percent", 9.0),
    ("trend_p_value", 0.5)])
def test_an_edited_drift_fails_check(field, value):
    data = _load(SAMPLES / "h200_backends.json")
    data["variants"][0]["drift"][field] = value
    assert f"$.variants[0].drift.{field}" in _paths(data)


def test_edited_outlier_flags_fail_check():
    data = _load(SAMPLES / "cpu_reference_default.json")
    data["variants"][0]["outliers"]["count"] += 1
    assert "$.variants[0].outliers.count" in _paths(data)
    data = _load(SAMPLES / "cpu_reference_default.json")
    data["variants"][0]["outliers"]["where"][0][1] += 1
    assert "$.variants[0].outliers.where" in _paths(data)


def _config(rounds: int = 3) -> RunConfig:
    return RunConfig(shape=Shape(heads=2, q_len=256, head_dim=64),
                     variants=[VariantSpec(name="a", backend="reference"),
                               VariantSpec(name="b", backend="reference")],
                     rounds=rounds, iterations=4)


def _model(rounds: int, *, fail_b_in: int | None = None, stop_in: int | None = None,
           lose_b_in: int | None = None, computing: list[str] | None = None) -> RunModel:
    """A run model fed synthetic events through the one fold (no runner): `b` fails in a
    round, the run is stopped in a round (its samples dropped), `b` loses a round, or late
    figures are left uncomputed."""
    m = new_model()
    apply(m, ev.RunStarted(config=_config(), created_utc="2026-01-01T00:00:00+00:00"))
    for n in ("a", "b"):
        apply(m, ev.VariantLoaded(name=n, backend="reference", status="ok", kernel="sm89",
                                  phases=[("fused_mainloop", None)]))
    apply(m, ev.Ready(input_sha256="0" * 64, device="cpu"))
    apply(m, ev.ThresholdResolved(threshold=Threshold(1.0).fields()))  # as the session does
    t = 0.01
    for r in range(rounds):
        names = ["a", "b"] if m.variants["b"].status == "ok" else ["a"]
        apply(m, ev.RoundStarted(round=r, variants=names))
        if r == stop_in:
            break
        for n in names:
            if n == "b" and r == fail_b_in:
                apply(m, ev.FaultRaised(fault=Fault(kind="variant", message="it died",
                                                    variant="b", round=r), failed="b"))
                continue
            for i in range(4):
                t += 0.0001 * (1 + (i * 7 + r * 3) % 5)
                apply(m, ev.Iterations(variant=n, round=r, half=0, start=i, total_s=[t],
                                       phases={"fused_mainloop": [t * 0.9]}))
            apply(m, ev.BlockDone(variant=n, round=r, half=0, iterations=4, cancelled=False,
                                  output_sha256="a" * 64, checksum=1.0, telemetry={}))
        done = [n for n in names if m.variants[n].status == "ok"
                and not (n == "b" and r == lose_b_in)]
        apply(m, ev.RoundDone(round=r, completed=done))
    if computing:
        apply(m, ev.Measured(computing=computing))
    return m


ENDINGS = {
    "complete": (dict(rounds=3), {}),
    "b fails in round 1": (dict(rounds=3, fail_b_in=0), {}),
    "b fails in round 2": (dict(rounds=3, fail_b_in=1), {}),
    "stopped mid-round": (dict(rounds=3, stop_in=2), {"stopped_by": "the user"}),
    "stopped before any": (dict(rounds=3, stop_in=0), {"stopped_by": "SIGTERM"}),
    "cut short": (dict(rounds=2), {}),
    "session failed": (dict(rounds=2), {"error": "RuntimeError: boom"}),
    "b lost a round": (dict(rounds=3, lose_b_in=1), {}),
    "late figures lost": (dict(rounds=3, computing=[late.accuracy_key("b"), late.INPUT_SHA256]),
                          {"stopped_by": "the user"}),
}


@pytest.mark.parametrize("name", list(ENDINGS))
def test_the_status_the_session_decides_is_the_one_check_derives(name):
    """One authority: the session's final_status and check's re-derivation, through
    status.decide, agree on every ending; and the status relabelled fails check."""
    kw, ending = ENDINGS[name]
    m = _model(**kw)
    if "error" in ending:
        m.faults.append(Fault(kind="session", message=ending["error"]))
    report = build_report(m, final_status(m, rounds_planned=3, **ending))
    assert check_report(report) == [], name
    data = report.to_json_dict()
    for other in ("complete", "partial", "cancelled", "failed"):
        if other != data["status"]:
            assert "$.status" in _paths({**data, "status": other}), (name, other)


def test_a_partial_run_relabelled_complete_fails_check():
    """The issue's case: one variant failed, 1 of 3 rounds kept; relabelled complete with its
    detail removed, or its rounds asked edited, check says so."""
    m = _model(3, fail_b_in=1)
    report = build_report(m, final_status(m, rounds_planned=3))
    data = report.to_json_dict()
    assert data["status"] == "partial"
    assert data["status_detail"] == ["variant b failed in round 2: it died; 1 of 2 rounds kept"]
    assert check_report(report) == []
    relabelled = {k: v for k, v in data.items() if k != "status_detail"} | {"status": "complete"}
    assert {"$.status", "$.status_detail"} <= set(_paths(relabelled))
    data["variants"][1]["rounds_asked"] = 3
    assert "$.status_detail" in _paths(data)
    data = report.to_json_dict()
    data["variants"][0]["rounds_asked"] = 2
    assert "$.variants[0].rounds_asked" in _paths(data)


def test_a_left_out_variant_keeps_the_run_partial():
    m = _model(3)
    report = with_left_out(build_report(m, final_status(m, rounds_planned=3)),
                           {"c": LeftOut(backend="sage2-sm89", spec="sage2-sm89@src:/x",
                                         why="nvcc failed")})
    assert report.status == "partial" and check_report(report) == []
    data = report.to_json_dict()
    assert "$.status" in _paths({**data, "status": "complete"})
    assert "$.status_detail" in _paths({**data, "status_detail": data["status_detail"][:-1]})


def test_check_cli_counts_and_lists_what_it_took_as_recorded(cli_here):
    path = SAMPLES / "h200_sm80_small.json"
    a = audit(Report.model_validate(_load(path)))
    out = cli_here("check", path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (f"{path}: ok: {a.recomputed:,} figures recomputed from 42 raw "
                                  f"samples, {len(a.recorded):,} taken as recorded")
    assert a.recomputed > 150 and len(a.recorded) > 50
    listed = cli_here("check", "--recorded", path).stdout.splitlines()
    recorded = [x for x in listed if ": taken as recorded: " in x]
    assert len(recorded) == len(a.recorded)
    assert any("$.environment.gpu.name (the machine it ran on" in x for x in recorded)
    assert any(".telemetry[0].sm_clock_mhz.mean (NVML's readings" in x for x in recorded)
