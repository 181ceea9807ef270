"""`sagetui node-check` (docs/running-and-comparing.md, "A whole node, and a cluster"). The flagging
rule on chosen numbers (every branch of it), then real CPU runners as stand-ins for a node's
GPUs."""

import json
import math
from pathlib import Path

import pytest

from sagetui.core import node_check
from sagetui.core.statistics.intervals import half_percent


def _gpu(name: str, rounds_ms: list[float]) -> node_check.GpuResult:
    s = [x / 1e3 for x in rounds_ms]
    return node_check.GpuResult(name, p50_s=sorted(s)[len(s) // 2], ci_percent=half_percent(s),
                        round_p50s=s)


def test_interval_is_the_p50s_t_interval_in_log():
    g = _gpu("gpu 0", [1.0, 1.02, 0.98, 1.01, 0.99])
    lo, hi = g.interval
    assert math.isclose(math.log(hi / g.p50_s), -math.log(lo / g.p50_s))
    assert math.isclose(hi / g.p50_s - 1, g.ci_percent / 100)


def test_a_slow_gpu_among_alike_ones_is_flagged_and_only_it():
    alike = [_gpu(f"gpu {i}", [1.0 + 0.002 * i, 1.01, 0.99, 1.0, 1.005]) for i in range(7)]
    slow = _gpu("gpu 7", [1.10, 1.11, 1.09, 1.10, 1.12])
    notes = node_check.flag([*alike, slow])
    assert [g.runner for g in [*alike, slow] if g.flagged] == ["gpu 7"]
    assert "slower than the others" in slow.why and notes == [f"gpu 7: {slow.why}"]


def test_a_fast_outlier_is_flagged_too_and_the_floor_widens_the_spread():
    gpus = [_gpu("a", [1.0, 1.0, 1.0]), _gpu("b", [1.0, 1.0, 1.0]), _gpu("c", [0.985] * 3)]
    node_check.flag(gpus, floor_percent=1.0)  # zero-width intervals: the floor alone decides
    assert [g.flagged for g in gpus] == [False, False, True]
    assert "faster" in gpus[2].why
    for g in gpus:
        g.flagged, g.why = False, None
    assert node_check.flag(gpus, floor_percent=2.0)[0].endswith("inside the others' spread")
    assert not any(g.flagged for g in gpus)


def test_one_gpu_or_failed_ones_have_nothing_to_compare():
    one = [_gpu("gpu 0", [1.0, 1.1, 0.9]), node_check.GpuResult("gpu 1", error="died")]
    assert node_check.flag(one) == ["1 GPU measured: nothing to compare it with"]
    assert not one[0].flagged


def test_cli_node_check_on_two_cpu_runners(cli_here, tmp_path):
    out = cli_here("node-check", "--backend", "reference", "--heads", "2", "--q-len", "128",
                   "--rounds", "3", "--iterations", "3", "--warmup", "1", "--gpus", "cpu:2",
                   "--json", "node_check.json")
    data = json.loads((tmp_path / "node_check.json").read_text())
    assert [g["runner"] for g in data["gpus"]] == ["cpu 0", "cpu 1"]
    assert all(len(g["round_p50s"]) == 3 and g["p50_s"] > 0 for g in data["gpus"])
    flagged = any(g["flagged"] for g in data["gpus"])
    # 2 shared cores: the two may or may not agree; the exit status must say which
    assert out.returncode == (1 if flagged else 0), out.stderr
    rows = [node_check.GpuResult(**{k: v for k, v in g.items() if k not in ("flagged", "why")})
            for g in data["gpus"]]
    assert [n for n in node_check.flag(rows, data["noise_floor_percent"])] == data["notes"]
    assert "rule: flag a GPU" in out.stdout and "cpu 1" in out.stdout
    env = data["environment"]  # where it ran, as every report says it
    assert env["device"] == "cpu" and env["torch"] and env["python"] and env["host"]
    assert [r["runner"] for r in env["runners"]] == ["cpu 0", "cpu 1"]


def test_the_environment_lists_every_gpu_and_the_runs_software():
    from sagetui.core.report.io import load_report

    root = Path(__file__).resolve().parents[1] / "sample_results"
    kernels, small = (load_report(root / f) for f in ("h200_kernels.json",
                                                      "h200_sm80_small.json"))
    env = node_check.environment([("gpu 0", kernels), ("gpu 1", small), ("gpu 2", None)])
    assert env["torch"] == kernels.environment["torch"]
    assert env["gpu"] == kernels.environment["gpu"]
    assert [(r["runner"], (r["gpu"] or {}).get("uuid"), (r["gpu"] or {}).get("driver"))
            for r in env["runners"]] == [
        ("gpu 0", kernels.environment["gpu"]["uuid"], kernels.environment["gpu"]["driver"]),
        ("gpu 1", small.environment["gpu"].get("uuid"), small.environment["gpu"]["driver"]),
        ("gpu 2", None, None)]


def test_a_gpu_whose_runner_dies_fails_alone():
    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.core.gpus import Slot
    from sagetui.session.node_check import run_node_check

    cfg = RunConfig(shape=Shape(heads=2, q_len=128, head_dim=64),
                    variants=[VariantSpec.parse("k=reference")], warmup=1, rounds=2,
                    iterations=2)
    runs = run_node_check(cfg, [Slot("cpu 0", "cpu", env={"SAGETUI_INJECT_FAULT": "exit@k"}),
                                Slot("cpu 1", "cpu")])
    rows = [node_check.gpu_result(s.label, rep, why) for s, rep, why in runs]
    assert rows[0].p50_s is None and rows[0].error
    assert rows[1].p50_s is not None and len(rows[1].round_p50s) == 2


@pytest.mark.parametrize("args,needle", [(["--gpus", "x"], "--gpus"),
                                         (["--backend", "reference", "--backend", "sdpa"],
                                          "one kernel")])
def test_bad_node_check_input_is_one_line_exit_2(cli_here, args, needle):
    # in this process (main() as `python -m sagetui` calls it, its exit status and stderr):
    # a refusal needs no interpreter of its own; test_cli's refusals run as a child process
    out = cli_here("node-check", *args, "--gpus" if "--gpus" not in args else "--quiet",
                   *(["cpu:1"] if "--gpus" not in args else []))
    assert out.returncode == 2 and needle in out.stderr and out.stderr.count("\n") == 1


def test_a_gpus_row_shows_its_runs_own_p50_and_interval():
    """node-check reads a GPU's run figures as its report holds them (core/run/figures.py),
    never a p50 or an interval of its own: the same numbers `run` and the report show."""
    from sagetui.core.report.io import load_report

    report = load_report(Path(__file__).resolve().parents[1] / "sample_results"
                         / "h200_kernels.json")
    row = node_check.gpu_result("gpu 0", report)
    v = report.variants[0]
    assert v.timing is not None and v.intervals
    assert row.p50_s == v.timing.p50_s and row.ci_percent == v.intervals["total"]
    assert row.round_p50s == [r.p50_s for r in v.rounds or []]
