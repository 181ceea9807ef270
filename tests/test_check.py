"""`sagetui check`: the reference reports pass unchanged, and changing any one derived number
fails, naming the field."""

import copy
import json

import pytest

from sagetui.core.check.report import check_report
from sagetui.core.report.model import Report

from .conftest import TWO_BUILDS, VIDEO_CALL_PHASES


def load(path):
    return json.loads(path.read_text())


def mismatches(data):
    return [m.path for m in check_report(Report.model_validate(data))]


def test_reference_reports_pass_unchanged():
    assert mismatches(load(VIDEO_CALL_PHASES)) == []
    assert mismatches(load(TWO_BUILDS)) == []


# (report, JSON path as a list of keys, the path `check` must name)
DERIVED_000 = [
    (["scheduler", "q_ctas_per_head"], "$.scheduler.q_ctas_per_head"),
    (["scheduler", "heads"], "$.scheduler.heads"),
    (["scheduler", "grid_ctas"], "$.scheduler.grid_ctas"),
    (["scheduler", "k_iterations_per_cta"], "$.scheduler.k_iterations_per_cta"),
    (["scheduler", "q_tail_rows"], "$.scheduler.q_tail_rows"),
    (["scheduler", "k_tail_rows"], "$.scheduler.k_tail_rows"),
    (["scheduler", "warps_per_cta"], "$.scheduler.warps_per_cta"),
    (["scheduler", "threads_per_cta"], "$.scheduler.threads_per_cta"),
    (["scheduler", "dynamic_shared_memory_bytes"], "$.scheduler.dynamic_shared_memory_bytes"),
    (["reference_checksum"], "$.reference_checksum"),
    (["manual_decomposition_vs_public_sage2", "equal"],
     "$.manual_decomposition_vs_public_sage2.equal"),
] + [
    (["tail_study", i, field], f"$.tail_study[{i}].{field}")
    for i in range(6)
    for field in ("q_ctas_per_head", "k_iterations_per_cta", "q_tail_rows", "k_tail_rows",
                  "scheduled_q_rows", "q_row_efficiency")
] + [
    (["tail_study", i, "mainloop", p], f"$.tail_study[{i}].mainloop.{p}")
    for i in range(6) for p in ("p90_s", "p95_s", "p99_s")
] + [
    (["phase_timings", "fused_mainloop", p], f"$.phase_timings.fused_mainloop.{p}")
    for p in ("p90_s", "p95_s", "p99_s", "count")
]

DERIVED_001 = [
    (["scheduler", "grid_ctas"], "$.scheduler.grid_ctas"),
    (["scheduler", "threads_per_cta"], "$.scheduler.threads_per_cta"),
    (["scheduler", "dynamic_shared_memory_bytes"], "$.scheduler.dynamic_shared_memory_bytes"),
] + [
    (["variants", v, "timing", f], f"$.variants[{v}].timing.{f}")
    for v in (0, 1) for f in ("count", "mean_s", "min_s", "max_s")
] + [
    (["variants", 1, "speedup_vs_baseline_percent"], "$.variants[1].speedup_vs_baseline_percent"),
    (["variants", 0, "speedup_vs_baseline_percent"], "$.variants[0].speedup_vs_baseline_percent"),
    (["variants", 1, "byte_exact"], "$.variants[1].byte_exact"),
    (["variants", 0, "rounds", 2, "p95_s"], "$.variants[0].rounds[2].p95_s"),
    (["variants", 1, "rounds", 4, "p99_s"], "$.variants[1].rounds[4].p99_s"),
    (["variants", 0, "rounds", 0, "count"], "$.variants[0].rounds[0].count"),
]


def _mutate(data, keys):
    node = data
    for k in keys[:-1]:
        node = node[k]
    old = node[keys[-1]]
    if isinstance(old, bool):
        node[keys[-1]] = not old
    elif isinstance(old, int):
        node[keys[-1]] = old + 1
    elif keys[-1] in ("speedup_vs_baseline_percent",):
        node[keys[-1]] = old + 0.01
    else:
        node[keys[-1]] = old * 0.999 if old else 1.0


@pytest.mark.parametrize(("keys", "path"), DERIVED_000, ids=[p for _, p in DERIVED_000])
def test_000_any_changed_derived_number_fails_naming_it(keys, path):
    data = load(VIDEO_CALL_PHASES)
    _mutate(data, keys)
    assert path in mismatches(data)


@pytest.mark.parametrize(("keys", "path"), DERIVED_001, ids=[p for _, p in DERIVED_001])
def test_001_any_changed_derived_number_fails_naming_it(keys, path):
    data = load(TWO_BUILDS)
    _mutate(data, keys)
    assert path in mismatches(data)


def test_tail_sweep_points_are_checked():
    data = load(VIDEO_CALL_PHASES)
    data["tail_study"][1]["q_len"] = 37762  # not the tile boundary + 1
    found = mismatches(data)
    assert any(p.startswith("$.tail_study[") and p.endswith(".q_len") for p in found)


def test_check_cli_exit_codes_and_names_the_field(cli_here, tmp_path):
    good = cli_here("check", VIDEO_CALL_PHASES, TWO_BUILDS)
    assert good.returncode == 0, good.stderr
    data = load(TWO_BUILDS)
    data["variants"][0]["timing"]["mean_s"] *= 1.01
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    out = cli_here("check", bad)
    assert out.returncode == 1
    assert "$.variants[0].timing.mean_s" in out.stdout
    missing = cli_here("check", tmp_path / "nope.json")
    assert missing.returncode == 2
    assert "nope.json" in missing.stderr and "Traceback" not in missing.stderr


def test_sagetui_report_every_summary_is_recomputed_from_samples(tmp_path):
    """A report sagetui writes keeps raw samples: every summary must follow from them."""
    from sagetui.core.report.io import load_report

    report = _made_report()
    data = report.to_json_dict()
    assert check_report(report) == []
    mutated = copy.deepcopy(data)
    mutated["variants"][0]["rounds"][1]["p50_s"] *= 1.0001
    assert "$.variants[0].rounds[1].p50_s" in mismatches(mutated)
    mutated = copy.deepcopy(data)
    mutated["variants"][1]["phase_timings"]["fused_mainloop"]["mean_s"] *= 1.0001
    assert "$.variants[1].phase_timings.fused_mainloop.mean_s" in mismatches(mutated)
    assert load_report  # imported for its side effect of validating the module


def _made_report():
    """A report built by the session's code (the fold and the build) from synthetic events
    (no runner)."""
    from sagetui.core.run.assemble import build_report
    from sagetui.core.run.status import final_status

    m = _made_model()
    return build_report(m, final_status(m, rounds_planned=3))


def _made_model():
    """A run model fed synthetic events through the one fold (no runner)."""
    from sagetui.core import events as ev
    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.core.run.fold import apply, new_model
    from sagetui.core.statistics.threshold import Threshold

    cfg = RunConfig(shape=Shape(heads=2, q_len=256, head_dim=64),
                    variants=[VariantSpec(name="a", backend="reference"),
                              VariantSpec(name="b", backend="reference")], rounds=3, iterations=4)
    m = new_model()
    apply(m, ev.RunStarted(config=cfg, created_utc="2026-01-01T00:00:00+00:00"))
    phases = [("k_mean_and_smoothing_preparation", None), ("fused_mainloop", None)]
    for n in ("a", "b"):
        apply(m, ev.VariantLoaded(name=n, backend="reference", status="ok", kernel="sm89",
                                  phases=phases))
    apply(m, ev.Ready(input_sha256="0" * 64, device="cpu"))
    apply(m, ev.ThresholdResolved(threshold=Threshold(1.0).fields()))  # as the session does
    t = 0.01
    for r in range(3):
        apply(m, ev.RoundStarted(round=r, variants=["a", "b"]))
        for n in ("a", "b"):
            for i in range(4):
                t += 0.0001
                ph = {"k_mean_and_smoothing_preparation": t / 10, "fused_mainloop": t}
                apply(m, ev.Iterations(variant=n, round=r, half=0, start=i,
                                       total_s=[sum(ph.values())],
                                       phases={k: [x] for k, x in ph.items()}))
            apply(m, ev.BlockDone(variant=n, round=r, half=0, iterations=4, cancelled=False,
                                  output_sha256="a" * 64, checksum=1.0, telemetry={}))
        apply(m, ev.RoundDone(round=r, completed=["a", "b"]))
    return m


def test_a_tail_study_is_checked_at_its_own_variants_tiles() -> None:
    """The H200 stream's tail study timed its baseline, sm90 (CTA_Q 64, CTA_K 128): check used
    to recompute its rows at sm89's tiles and flagged five figures of a correct report."""
    from sagetui.core.run.assemble import build_report

    from .test_parity import STREAMS, folded, replay

    events, _ = replay(next(p for p in STREAMS if p.stem == "h200_sm90_sm89_sdpa"))
    report = build_report(folded(events))
    assert report.tail_study and report.tail_study[0].variant == "sm90"
    assert check_report(report) == []
    row = report.tail_study[0]
    bad = report.model_copy(update={"tail_study": [
        row.model_copy(update={"q_ctas_per_head": row.q_ctas_per_head + 1}),
        *report.tail_study[1:]]})
    assert [m.path for m in check_report(bad)] == ["$.tail_study[0].q_ctas_per_head"]


@pytest.mark.parametrize(("sample", "down_to", "member"), [
    ("h100_workload_replay.json", 5, "timed_call"),  # schema 6's call the user makes
    ("cpu_swap_processes.json", 6, "ran"),  # schema 7's record of what a swap process ran
])
def test_a_schema_version_edited_down_is_held_to_the_members_the_report_holds(
        sample, down_to, member) -> None:
    """A schema_version edited down would turn the later schemas' rules off (a derived figure
    deleted then passed): the report's own members say which schema wrote it."""
    from pathlib import Path

    raw = json.loads((Path(__file__).parent.parent / "sample_results" / sample).read_text())
    assert not check_report(Report.model_validate(raw))
    raw["schema_version"] = down_to
    found = check_report(Report.model_validate(raw))
    assert [m.path for m in found] == ["$.schema_version"]
    assert found[0].why.endswith(f".{member} is there, first written in schema {down_to + 1}")
