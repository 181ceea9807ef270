"""A sweep as a Slurm job array (docs/running-and-comparing.md, "A whole node, and a cluster";
submitit's LocalExecutor runs the jobs here, as subprocesses, exactly as sbatch would run them on
nodes), and `sagetui merge` joining the jobs' reports into one that `check` passes."""

import json

import pytest

from sagetui.core.report.io import load_report

SMALL = ["--backend", "reference", "--heads", "2", "--warmup", "1", "--rounds", "2",
         "--iterations", "2"]


def test_job_points_deal_round_robin():
    from sagetui.session.slurm import job_points

    assert job_points(5, 2) == [[0, 2, 4], [1, 3]]
    assert job_points(2, 10) == [[0], [1]]


def test_slurm_opts_map_to_submitit_parameters():
    from sagetui.cli.slurm_cli import slurm_parameters

    assert slurm_parameters(["partition=gpu", "time=30", "slurm_qos=high",
                             "mem_per_gpu=80G"]) == {
        "slurm_partition": "gpu", "slurm_time": 30, "slurm_qos": "high",
        "slurm_mem_per_gpu": "80G"}


def test_a_bad_slurm_opt_is_one_line_exit_2_before_submitting(cli_here, tmp_path):
    out = cli_here("sweep", *SMALL, "--q-len", "128", "--slurm", "--slurm-cluster", "local",
                   "--slurm-opt", "bogus=1")
    assert out.returncode == 2 and "Unknown argument 'bogus'" in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1
    assert cli_here("sweep", *SMALL, "--slurm", "--slurm-opt", "nokey").returncode == 2
    no_slurm = cli_here("sweep", *SMALL, "--slurm")  # this machine has no srun
    assert no_slurm.returncode == 2 and "srun" in no_slurm.stderr, no_slurm.stderr
    assert not (tmp_path / "sagetui-slurm" / "part-000.json").exists()


@pytest.fixture(scope="module")
def two_jobs(tmp_path_factory):
    """A three-point sweep as two jobs of an array through submitit's LocalExecutor."""
    import subprocess
    import sys

    d = tmp_path_factory.mktemp("slurm")
    out = subprocess.run([sys.executable, "-m", "sagetui", "sweep", *SMALL,
                          "--q-len", "128,256,512", "--slurm", "--slurm-cluster", "local",
                          "--slurm-jobs", "2", "--slurm-opt", "partition=gpu",
                          "--slurm-opt", "time=10", "--json", "s.json"],
                         cwd=d, capture_output=True, text=True, timeout=300)
    return d, out


def test_submitit_local_runs_two_jobs_and_their_reports_merge(two_jobs, cli_here):
    d, out = two_jobs
    assert out.returncode == 0, out.stderr
    assert "submitted 2 jobs" in out.stderr
    parts = sorted((d / "sagetui-slurm").glob("part-*.json"))
    assert len(parts) == 2
    per_job = [[p.index for p in load_report(p).sweep.points] for p in parts]
    assert per_job == [[0, 2], [1]]  # each job measured its own points
    joined = load_report(d / "s.json")
    assert [p.x for p in joined.sweep.points] == [128, 256, 512]
    assert joined.status == "complete"
    # `sagetui merge` joins the jobs' reports by hand too, and `check` passes the result
    m = cli_here("merge", *parts, "--json", d / "m.json")
    assert m.returncode == 0, m.stderr
    merged = json.loads((d / "m.json").read_text())
    assert [p["index"] for p in merged["sweep"]["points"]] == [0, 1, 2]
    assert [r["part"] for r in merged["environment"]["runners"]] == [str(p) for p in parts]
    assert cli_here("check", d / "m.json").returncode == 0
    assert merged["sweep"] == json.loads((d / "s.json").read_text())["sweep"]


def test_merge_refuses_parts_of_different_sweeps_and_twice_measured_points(two_jobs, cli_here):
    d, _ = two_jobs
    parts = sorted((d / "sagetui-slurm").glob("part-*.json"))
    twice = cli_here("merge", parts[0], parts[0], "--json", d / "x.json")
    assert twice.returncode == 2 and "point 0 is in" in twice.stderr
    other = json.loads(parts[1].read_text())
    other["sweep"]["iterations"] = 99
    (d / "other.json").write_text(json.dumps(other))
    bad = cli_here("merge", parts[0], d / "other.json", "--json", d / "y.json")
    assert bad.returncode == 2
    assert f"other.json: its iterations and {parts[0]}'s differ: not parts" in bad.stderr
    other["sweep"]["axes"]["head_dims"] = [64]  # a plural's verb agrees ("its axes differs")
    (d / "other.json").write_text(json.dumps(other))
    bad = cli_here("merge", parts[0], d / "other.json", "--json", d / "y.json")
    assert bad.returncode == 2 and f"its axes and {parts[0]}'s differ" in bad.stderr
    # one part alone: merged, but incomplete (a point is missing), exit 1
    one = cli_here("merge", parts[0], "--json", d / "z.json")
    assert one.returncode == 1 and load_report(d / "z.json").status == "partial"


def test_check_derives_each_parts_status_and_the_merged_sweeps(two_jobs):
    """A job's part (its points all ran: complete, fewer points than the plan) passes
    check; the merged report's status relabelled does not."""
    from sagetui.core.check.report import check_report
    from sagetui.core.report.model import Report

    d, _ = two_jobs
    parts = sorted((d / "sagetui-slurm").glob("part-*.json"))
    assert len(parts) == 2
    for p in parts:
        r = load_report(p)
        assert r.status == "complete" and len(r.sweep.points) < 3
        assert check_report(r) == [], p
    merged = json.loads((d / "s.json").read_text())
    assert check_report(Report.model_validate(merged)) == []
    for status in ("partial", "cancelled", "failed"):
        bad = Report.model_validate({**merged, "status": status})
        assert [m.path for m in check_report(bad)] == ["$.status"]
