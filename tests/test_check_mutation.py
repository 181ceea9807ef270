"""`sagetui check` re-derives every claim (docs/reports.md): mutation coverage over sample_results/
and over fresh reports of every kind made here on the CPU by the product's own commands (a run, a
sweep, a sweep merged from two runners, a workload replay, a swap: a seeded sample of each one's
edits and deletions here; benchmarks/check_mutation.py tries every one), every leaf recomputed or
taken as recorded, the one envelope, the verdicts, drift and outlier flags from the raw samples,
the status from the variants through the one state machine, which the session's reports pass,
and what a careful liar would try (issue 41's list)."""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from sagetui.core import events as ev
from sagetui.core.build_facts import LeftOut
from sagetui.core.check import mutation
from sagetui.core.check.report import audit, check_report
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.report.envelope import SCHEMA_VERSION, created_format_ok
from sagetui.core.report.io import ReportError, load_report
from sagetui.core.report.model import Fault, Report
from sagetui.core.run import late
from sagetui.core.run.assemble import build_report, with_left_out
from sagetui.core.run.fold import apply, new_model
from sagetui.core.run.model import RunModel
from sagetui.core.run.status import final_status
from sagetui.core.statistics.threshold import Threshold
from sagetui.core.swap import derive

from .conftest import ROOT, SAMPLES, made_once_per_run

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
    status.terminal_status, agree on every ending; and the status relabelled fails check."""
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


# -- fresh reports of every kind, made here by the product's commands ------------------------

FRESH = ("run", "sweep", "merged", "workload", "workload_console_stopped", "swap",
         "swap_processes")
EDITS_PER_KIND = 40  # a seeded sample of each fresh report's changes, and as many deletions


def held_whole(data: dict) -> None:
    """`check` passes the report, every leaf of it recomputed or taken as recorded, and catches
    each of a seeded sample of its edits and deletions (every verdict state and status flipped,
    a sample where there are many; numbers, flags and words; derived figures left out)."""
    a = audit(Report.model_validate(data))
    assert a.mismatches == [] and a.unaccounted() == [] and a.recomputed > 30
    rng = random.Random(41)
    todo = mutation.mutations(data)
    words = [m for m in todo if m.path.endswith(WORD_PATHS)]
    rest = [m for m in todo if not m.path.endswith(WORD_PATHS)]
    gone = mutation.deletions(data)
    sample = (rng.sample(words, min(EDITS_PER_KIND // 2, len(words)))
              + rng.sample(rest, min(EDITS_PER_KIND, len(rest)))
              + rng.sample(gone, min(EDITS_PER_KIND, len(gone))))
    out = mutation.run(data, sample)
    assert out.tried > EDITS_PER_KIND
    assert out.missed == []


def _make_fresh(base: Path) -> None:
    """Each kind's report from a real run of `sagetui` on the CPU's reference backend, small:
    two variants (one slowed), 3 rounds of 2 iterations."""
    env = dict(os.environ, XDG_STATE_HOME=str(base / "state"))

    def sagetui(*args: object) -> None:
        subprocess.run([sys.executable, "-m", "sagetui", *map(str, args)], cwd=base, env=env,
                       check=True, capture_output=True, text=True, timeout=300)

    two = ["--variant", "a=reference", "--variant", "b=reference[slowdown=1.2]", "--heads", "2",
           "--head-dim", "64", "--rounds", "3", "--iterations", "2", "--warmup", "1", "--quiet"]
    sagetui("run", *two, "--q-len", "64", "--json", "run.json")
    sagetui("sweep", *two, "--q-len", "64,128", "--json", "sweep.json")
    sagetui("sweep", *two, "--q-len", "64,128,256", "--gpus", "cpu:2", "--json", "merged.json")
    sagetui("capture", "--out", "cap", "--calls", "0-1", "--", sys.executable,
            ROOT / "tests" / "capture_model.py", "--steps", "1", "--record", "own.json")
    sagetui("run", "--workload", "cap", "--variant", "a=reference", "--variant",
            "b=reference[slowdown=2]", "--rounds", "3", "--iterations", "2", "--warmup", "1",
            "--quiet", "--json", "workload.json")
    sagetui("swap", "--variant", "ref=reference", "--variant", "slow=reference[slowdown=2]",
            "--baseline", "ref", "--steps", "2", "--warmup", "1", "--json", "swap.json", "--",
            sys.executable, ROOT / "tests" / "swap_model.py", "--tokens", "64", "--steps", "400")
    sagetui("swap", "--processes", "--rounds", "2", "--no-unchanged", "--variant",
            "ref=reference", "--variant", "slow=reference[slowdown=2]", "--baseline", "ref",
            "--json", "swap_processes.json", "--", sys.executable,
            ROOT / "tests" / "swap_model.py", "--tokens", "64", "--steps", "2")
    _console_stopped(base)


def _console_stopped(base: Path) -> None:
    """The capture replayed in the console (`sagetui --workload cap`), stopped by `r` once
    both calls have taken a turn (the calls are taken in turn, a round at a time), and
    exported by `e`: what the console writes. 300 rounds a call, so that the replay is still
    running when the `r` lands (at 30 a replay once finished first on this machine: a
    complete report where a stopped one was meant)."""
    from sagetui.cli.console import console_app
    from sagetui.cli.main import build_parser
    from sagetui.tui.modals import PathPromptScreen

    from .tui.conftest import aio, wait_for

    args = build_parser().parse_args(["--workload", str(base / "cap"), "--variant",
                                      "a=reference", "--variant", "b=reference[slowdown=2]",
                                      "--rounds", "300", "--iterations", "1", "--warmup", "1"])
    app = console_app(args)
    app.run_control.recovery_path = base / "console_recovery.json"
    out = base / "workload_console_stopped.json"

    @aio
    async def replay_and_stop() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.press("r")
            # the calls are taken in turn, a round at a time: stopped once both have rounds
            await wait_for(pilot, lambda: _calls_reached(app) >= 2, what="both calls' turns")
            await pilot.press("r")
            await wait_for(pilot, lambda: not app.running
                           and app.run_control.final_report is not None, what="the stop")
            await pilot.press("e")
            await wait_for(pilot, lambda: isinstance(app.screen, PathPromptScreen),
                           what="the export's prompt")
            app.screen.query_one("Input").value = str(out)
            await pilot.press("enter")
            await wait_for(pilot, out.exists, what="the export")

    replay_and_stop()


def _calls_reached(app) -> int:
    """The calls of the console's replay with a round measured (its report now)."""
    session = app.run_control.session
    wl = session.report().workload if session is not None else None
    return len(wl.points) if wl is not None else 0


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> dict[str, Path]:
    folder = made_once_per_run(tmp_path_factory, "fresh_reports", _make_fresh)
    return {k: folder / f"{k}.json" for k in FRESH}


def _fresh(fresh: dict[str, Path], kind: str) -> dict:
    return _load(fresh[kind])


STOPPED = {"workload_console_stopped"}  # stopped after its first call: partial


@pytest.mark.parametrize("kind", FRESH)
def test_a_fresh_report_of_every_kind_is_whole_in_one_envelope(fresh, kind):
    data = _fresh(fresh, kind)
    a = audit(Report.model_validate(data))
    assert a.mismatches == [] and a.unaccounted() == [] and a.recomputed > 30
    assert data["schema_version"] == SCHEMA_VERSION and data["tool"]["name"] == "sagetui"
    assert created_format_ok(data["created_utc"]) and data["created_utc"].endswith("+00:00")
    assert data["status"] == ("partial" if kind in STOPPED else "complete")
    assert data["environment"]


@pytest.mark.parametrize("kind", FRESH)
def test_sampled_edits_and_deletions_of_a_fresh_report_are_caught(fresh, kind):
    held_whole(_fresh(fresh, kind))


def test_a_deletion_mutation_removes_the_member_and_puts_it_back(fresh):
    data = _fresh(fresh, "run")
    before = copy.deepcopy(data)
    gone = {m.path: m for m in mutation.deletions(data)}
    m = gone["$.variants[1].timing"]
    assert "timing" not in mutation.apply(data, m)["variants"][1]
    assert mutation.caught(mutation.apply(data, m)) == "mismatch"
    mutation.run(data, [m, gone["$.status"]])
    assert data == before and list(data["variants"][1]) == list(before["variants"][1])


# -- what a careful liar would try (issue 41, item 5): each passed `check` before ------------

def _followed(data: dict, keep: tuple[str, ...] = (), rounds: int = 6) -> dict:
    """The edit followed by the values check says it recomputed, as the issue's liar did: a
    swap's figures derived again from its processes (core/swap/derive.py), then each number,
    flag and word check names written as it recomputed them (the status left as it was),
    until check says nothing more or nothing changes; `keep`: the liar's own edits, kept."""
    for _ in range(rounds):
        try:
            report = Report.model_validate(data)
        except ValueError:
            return data
        s = report.swap
        if s is not None:
            data["swap"]["figures"] = [f.model_dump(mode="json", exclude_none=True) for f in
                                       derive.arm_figures(s.processes, [a.name for a in s.arms],
                                                          s.baseline, s.threshold_percent,
                                                          s.replay, s.output_processes)]
        before = json.dumps(data, sort_keys=True)
        for m in check_report(Report.model_validate(data)):
            if m.path.startswith(keep) and keep:
                continue
            try:
                old = mutation._get(data, m.path)
            except (KeyError, IndexError, TypeError):
                continue  # a member left out: no value to write back
            scalar = isinstance(old, int | float) and isinstance(m.expected, int | float)
            word = m.path.endswith(("].status", ".state")) and isinstance(m.expected, str)
            if scalar or word:
                mutation._set(data, m.path, m.expected)
        if json.dumps(data, sort_keys=True) == before:
            break
    return data


def _caught(data: dict, keep: tuple[str, ...] = ()) -> list[str]:
    """The paths check names of an edited report, once the liar has followed the edit (a
    report the model refuses: ["refused"])."""
    data = _followed(data, keep)
    how = mutation.caught(data)
    return ["refused"] if how == "refused" else _paths(data) if how else []


@pytest.mark.parametrize("key", ["timing", "speedup_vs_baseline_percent", "accuracy",
                                 "outliers", "intervals", "achieved", "byte_exact", "verdict",
                                 "options", "rounds_asked", "phase_timings", "drift"])
def test_a_derived_figure_deleted_from_a_run_is_a_finding(fresh, key):
    data = _fresh(fresh, "run")
    del data["variants"][1][key]
    assert any(p.startswith(f"$.variants[1].{key}") for p in _caught(data)), key


def test_an_option_as_ran_deleted_is_a_finding(fresh):
    data = _fresh(fresh, "run")
    del data["variants"][1]["options"]["smooth_k"]
    assert "$.variants[1].options.smooth_k" in _caught(data)


def test_status_deleted_from_a_partial_run_and_from_a_swap_is_a_finding(fresh):
    m = _model(3, fail_b_in=1)
    data = build_report(m, final_status(m, rounds_planned=3)).to_json_dict()
    assert data["status"] == "partial" and _caught(data) == []
    del data["status"]
    assert "$.status" in _caught(data)
    swap = _fresh(fresh, "swap")
    del swap["status"]
    assert "$.status" in _caught(swap)


@pytest.mark.parametrize("key", ["verdict", "kernel_tops", "accuracy", "rounds"])
def test_a_points_figure_deleted_is_a_finding(fresh, key):
    for kind, block in (("sweep", "sweep"), ("workload", "workload")):
        data = _fresh(fresh, kind)
        v = data[block]["points"][1]["variants"][1]
        assert key in v, (kind, key)
        del v[key]
        assert any(p.startswith(f"$.{block}.points[1].variants[1].{key}")
                   for p in _caught(data)), (kind, key)


def test_a_run_with_the_consoles_profiles_is_whole(fresh):
    """A fresh run given profiles after it (the console's p: run/assemble.with_profiles), the
    toy kernel's recorded on the H200 (ncu cannot run here)."""
    from sagetui.core.profile.shares import to_profile
    from sagetui.core.run.assemble import with_profiles

    from .test_profile_toy import run as attributed

    profiles = [to_profile(attributed(build), variant=name, family="toy")
                for name, build in (("a", "toy_attention"), ("b", "toy_attention_shifted"))]
    report = with_profiles(Report.model_validate(_fresh(fresh, "run")), profiles)
    held_whole(report.to_json_dict())
    data = report.to_json_dict()
    del data["variants"]  # it then read as a profile pass's report, its rounds unaccounted
    assert "$.variants" in _caught(data)


def _profile(edit) -> list[str]:
    data = _load(SAMPLES / "h200_profile_sm89_reference_shape.json")
    edit(data["mainloop_profiles"][0])
    return _paths(data)


@pytest.mark.parametrize(("what", "edit", "found"), [
    ("the hottest line", lambda p: p["hot_lines"].pop(0), "$.mainloop_profiles[0].hot_lines"),
    ("the coolest hot line", lambda p: p["hot_lines"].pop(), "$.mainloop_profiles[0].hot_lines"),
    ("a phase's top stall", lambda p: p["phases"]["pv_accumulation"]["top_stalls"].pop(0),
     "$.mainloop_profiles[0].stalls"),
    ("a stall reason a phase lists", lambda p: p["stalls"].pop(0),
     "$.mainloop_profiles[0].stalls"),
    ("every stall reason", lambda p: p.pop("stalls"), "$.mainloop_profiles[0].stalls"),
    ("hot lines out of order", lambda p: p["hot_lines"].reverse(),
     "$.mainloop_profiles[0].hot_lines"),
])
def test_a_profiles_lists_cut_short_are_a_finding(what, edit, found):
    """The H200 profile of sm89: its hot lines are the 10 most sampled (fewer would be every
    line, holding every sample but the unattributed), and each stall reason over the kernel is
    its phases' sum (deletions that passed before)."""
    assert found in _profile(edit), what


def test_a_profile_left_out_of_a_profile_report_is_a_finding():
    data = _load(SAMPLES / "h200_profile_sm89_reference_shape.json")
    del data["mainloop_profiles"][0]
    assert "$.mainloop_profiles" in _caught(data)


def _pop(*steps):
    def edit(data):
        for k in steps[:-1]:
            data = data[k]
        del data[steps[-1]]
    return edit


@pytest.mark.parametrize(("name", "edit", "found"), [
    ("cpu_reference_default.json", _pop("variants", 0, "timing"), "$.variants[0].timing"),
    ("cpu_reference_default.json", _pop("variants", 0, "phase_timings", "fused_mainloop"),
     "$.variants[0].phase_timings.fused_mainloop"),
    ("cpu_reference_default.json", _pop("phase_timings", "fused_mainloop"),
     "$.phase_timings.fused_mainloop"),
    ("cpu_reference_default.json", _pop("tail_study", 2), "$.tail_study[0].q_len"),
    ("cpu_reference_default.json", _pop("q_shape"), "$.q_shape"),
    ("cpu_reference_variants.json", _pop("variants", 1, "rounds"), "$.variants[1].rounds"),
    ("cpu_reference_kbias.json", _pop("variants", 1, "accuracy", "per_head", 0, "rmse"),
     "$.variants[1].accuracy.per_head[0].rmse"),
    ("cpu_reference_kbias.json", _pop("variants", 1, "accuracy", "worst_heads"),
     "$.variants[1].accuracy.worst_heads"),
    ("cpu_reference_kbias.json", _pop("variants", 0, "achieved", "call_tops"),
     "$.variants[0].achieved.call_tops"),
    ("cpu_reference_kbias.json", _pop("inputs"), "$.inputs"),
    ("cpu_reference_kbias.json", _pop("inputs", "parameters"), "$.inputs.parameters"),
    ("cpu_reference_kbias.json", _pop("variants", 1, "intervals"), "$.variants[1].intervals"),
    ("cpu_reference_kbias.json", _pop("variants", 1, "scheduler"), "$.variants[1].scheduler"),
    ("001_c3fd8b591d904547.json", _pop("variants", 1, "timing"), "$.variants[1].timing"),
    ("001_c3fd8b591d904547.json", _pop("scheduler", "grid_ctas"), "$.scheduler.grid_ctas"),
    ("001_c3fd8b591d904547.json", _pop("variants", 0, "rounds"), "$.variants[0].rounds"),
    ("sweep_cpu_reference.json", _pop("sweep", "points", 2, "variants", 1, "kernel_tops"),
     "$.sweep.points[2].variants[1].kernel_tops"),
    ("sweep_cpu_reference.json", _pop("sweep", "points", 2, "variants", 0, "p50_ci_percent"),
     "$.sweep.points[2].variants[0].p50_ci_percent"),
    ("sweep_cpu_reference.json", _pop("sweep", "points", 2, "scheduler", "grid_ctas"),
     "$.sweep.points[2].scheduler.grid_ctas"),
    ("sweep_cpu_reference.json", _pop("sweep", "points", 2, "variants", 1, "accuracy",
                                      "byte_exact"),
     "$.sweep.points[2].variants[1].accuracy.byte_exact"),
    ("h200_sm80_small.json", _pop("variants", 0, "sol", "clock_ceiling_tops"),
     "$.variants[0].sol.clock_ceiling_tops"),
    ("h200_sm80_small.json", _pop("variants", 0, "accuracy", "per_head"),
     "$.variants[0].accuracy.per_head"),
    ("h200_backends.json", _pop("variants", 2, "clocks"), "$.variants[2].clocks"),
])
def test_a_figure_deleted_from_an_older_report_is_a_finding(name, edit, found):
    """What every writer of that schema wrote (check/owed.py: sagetui's from schema 1, a
    sweep point's since the sweep's first, and the fields of the reports made elsewhere), and
    what follows from what the report holds (a head's sums and the heads it names, the shape
    and tiles, the run's own N, a variant's speed of light): deletions that passed before."""
    data = _load(SAMPLES / name)  # which check passes whole (the sample reports' test)
    edit(data)
    assert found in _paths(data)


def test_a_points_waves_deleted_is_a_finding():
    """A GPU point's waves follow from its grid and the GPU's SMs (the H200 sweep's)."""
    data = _load(SAMPLES / "h200_sweep.json")
    del data["sweep"]["points"][0]["scheduler"]["waves"]
    assert "$.sweep.points[0].scheduler.waves" in _caught(data)


@pytest.mark.parametrize("kind", ["sweep", "merged"])
def test_a_point_deleted_from_a_complete_sweep_is_a_finding(fresh, kind):
    data = _fresh(fresh, kind)
    del data["sweep"]["points"][1]
    assert {"$.status", "$.sweep.points"} & set(_caught(data))


def test_the_baseline_changed_in_the_configuration_is_a_finding(fresh):
    for kind in ("run", "sweep", "workload"):
        data = _fresh(fresh, kind)
        data["config"]["baseline"] = "b"  # the verdicts are against a
        assert _caught(data), kind


def test_rounds_asked_below_the_rounds_kept_is_a_finding(fresh):
    data = _fresh(fresh, "run")
    data["config"]["rounds"] = 2
    assert _caught(data)
    for kind, block in (("sweep", "sweep"), ("workload", "workload")):
        data = _fresh(fresh, kind)
        data[block]["rounds"] = data["config"]["rounds"] = 2
        assert any(p.endswith(".rounds") for p in _caught(data)), kind


def test_the_configured_backend_changed_is_a_finding(fresh):
    for kind in ("run", "sweep", "workload"):
        data = _fresh(fresh, kind)
        data["config"]["variants"][1]["backend"] = "sdpa"
        assert _caught(data), kind


def test_a_threshold_from_threshold_where_the_configuration_has_none_is_a_finding(fresh):
    data = _fresh(fresh, "run")
    for block in (data["threshold"], data["variants"][1]["verdict"]):
        block["threshold_source"] = "--threshold"
    assert "$.variants[1].verdict.threshold_percent" in _caught(data)
    for kind, block in (("sweep", "sweep"), ("workload", "workload")):
        data = _fresh(fresh, kind)
        data[block]["points"][0]["variants"][1]["verdict"]["threshold_source"] = "--threshold"
        assert f"$.{block}.points[0].variants[1].verdict.threshold_percent" in _caught(data)


def test_a_workloads_verdict_threshold_edited_is_a_finding(fresh):
    """The issue's case: the points' thresholds edited, their words left alone."""
    data = _fresh(fresh, "workload")
    for p in data["workload"]["points"]:
        for v in p["variants"]:
            if "verdict" in v:
                v["verdict"]["threshold_percent"] = 50.0
    kept = "$.workload.points[0].variants[1].verdict.threshold_percent"
    assert kept in _caught(data, keep=(kept,))


def test_a_variant_measured_on_other_inputs_is_a_finding(fresh):
    data = _fresh(fresh, "run")
    data["variants"][1]["input_sha256"] = "f" * 64
    assert "$.variants[1].input_sha256" in _caught(data)


def test_byte_exact_beside_a_difference_is_a_finding(fresh):
    data = _fresh(fresh, "run")
    v = data["variants"][1]
    assert v["byte_exact"] is True
    v["max_abs_diff"] = 0.5
    assert "$.variants[1].max_abs_diff" in _caught(data, keep=("$.variants[1].max_abs_diff",))
    data = _fresh(fresh, "sweep")
    data["sweep"]["points"][0]["variants"][1]["accuracy"]["max_abs_diff"] = 0.5
    kept = "$.sweep.points[0].variants[1].accuracy.max_abs_diff"
    assert kept in _caught(data, keep=(kept,))


def test_a_json_key_given_twice_is_refused(fresh, tmp_path):
    """A first-wins reader would see `speedup_vs_baseline_percent` 999; sagetui reads neither."""
    text = fresh["run"].read_text()
    twice = text.replace('"speedup_vs_baseline_percent":',
                         '"speedup_vs_baseline_percent": 999, "speedup_vs_baseline_percent":', 1)
    assert twice != text
    path = tmp_path / "twice.json"
    path.write_text(twice)
    with pytest.raises(ReportError, match="given twice"):
        load_report(path)


def _exchanged(text: str, a: str, b: str) -> str:
    return text.replace(f'"{a}"', '"@@"').replace(f'"{b}"', f'"{a}"').replace('"@@"', f'"{b}"')


def test_a_swaps_arm_labels_exchanged_are_a_finding(fresh):
    """The processes' labels of the unchanged arm and a variant's exchanged, the figures
    derived again: "unchanged" then swapped calls, which the program as it is never does."""
    data = _fresh(fresh, "swap")
    a, b = [x["name"] for x in data["swap"]["arms"]][:2]
    assert a == "unchanged"
    data["swap"]["processes"] = json.loads(_exchanged(json.dumps(data["swap"]["processes"]),
                                                      a, b))
    assert "$.swap.figures[0].swapped" in _caught(data)


@pytest.mark.parametrize("kind", ["swap", "swap_processes"])
def test_two_variant_arms_labels_exchanged_are_a_finding(fresh, kind):
    """No unchanged arm among them: each process's record of the spec it loaded for each arm
    names the other arm's backend (before it recorded none, and the exchange passed)."""
    data = _fresh(fresh, kind)
    assert [(a["name"], a.get("spec")) for a in data["swap"]["arms"]
            if a.get("spec")] == [("ref", "reference"), ("slow", "reference[slowdown=2]")]
    data["swap"]["processes"] = json.loads(_exchanged(json.dumps(data["swap"]["processes"]),
                                                      "ref", "slow"))
    found = _caught(data)
    assert found and all(p.startswith("$.swap.processes[") and p.endswith(".result.ran")
                         for p in found), found


def test_what_a_swap_process_ran_deleted_is_a_finding(fresh):
    data = _fresh(fresh, "swap_processes")
    del data["swap"]["processes"][1]["result"]["ran"]
    assert _caught(data) == ["$.swap.processes[1].result.ran"]
    data = _fresh(fresh, "swap")  # interleaved: its process's settings held to the arms too
    data["swap"]["interleave"]["arms"][1]["variant"]["options"] = {"slowdown": 3}
    assert "$.swap.interleave.arms" in _caught(data)


def test_a_swaps_process_deleted_with_the_status_left_complete_is_a_finding(fresh):
    data = _fresh(fresh, "swap_processes")
    assert len(data["swap"]["processes"]) == 4 and data["status"] == "complete"
    del data["swap"]["processes"][1]
    assert "$.status" in _caught(data)


@pytest.mark.parametrize("kind", ["swap", "swap_processes"])
def test_a_swaps_baseline_that_is_no_arm_is_a_finding(fresh, kind):
    data = _fresh(fresh, kind)
    data["swap"]["baseline"] = "nobody"
    assert "$.swap.baseline" in _caught(data)


def test_a_swaps_rounds_asked_below_the_rounds_run_is_a_finding(fresh):
    data = _fresh(fresh, "swap_processes")
    data["swap"]["rounds_asked"] = 1
    assert "$.swap.rounds_asked" in _caught(data)


def test_an_interleaved_swaps_steps_asked_below_the_steps_run_is_a_finding():
    """The interleaved mode asks --steps (its rounds_asked is the processes mode's --rounds):
    sample_results' CPU swap ran 10 measured steps per arm."""
    data = _load(SAMPLES / "cpu_swap.json")
    assert data["swap"]["interleave"]["steps"] == 10 and _caught(data) == []
    data["swap"]["interleave"]["steps"] = 4
    assert "$.swap.interleave.steps" in _caught(data)


@pytest.mark.parametrize("kind", ["swap", "swap_processes"])
def test_a_swaps_arm_that_never_ran_is_a_finding(fresh, kind):
    data = _fresh(fresh, kind)
    data["swap"]["arms"].append({"name": "ghost", "spec": "reference"})
    assert "$.status" in _caught(data)
