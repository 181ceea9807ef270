"""A node on the GPU machine: `--gpus all` on every GPU there (one on the H200 lent so far),
each point saying which GPU (name, UUID) measured it, and `node-check` over the same GPUs."""

import json
import subprocess

import pytest

from sagetui.core.report.io import load_report

pytestmark = pytest.mark.gpu


def _gpus() -> list[str]:
    out = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True)
    # torch's uuid lacks nvidia-smi's "GPU-" prefix
    return [ln.strip().removeprefix("GPU-") for ln in out.stdout.splitlines() if ln.strip()]


def test_sweep_on_all_gpus_says_which_gpu_measured_each_point(cli, tmp_path):
    uuids = _gpus()
    out = cli("sweep", "--gpus", "all", "--backend", "sage2-sm90", "--heads", "32",
              "--q-len", "1k,2k,4k", "--warmup", "2", "--rounds", "3", "--iterations", "10",
              "--json", "s.json", timeout=600)
    assert out.returncode == 0, out.stderr
    r = load_report(tmp_path / "s.json")
    assert [p.x for p in r.sweep.points] == [1024, 2048, 4096]
    assert len(r.environment["runners"]) == len(uuids)
    for p in r.sweep.points:
        assert p.measured_on.uuid.removeprefix("GPU-") in uuids and p.measured_on.name
        assert p.measured_on.runner.startswith("gpu ")
    assert cli("check", "s.json").returncode == 0


def test_node_check_measures_every_gpu(cli, tmp_path):
    uuids = _gpus()
    out = cli("node-check", "--backend", "sage2-sm90", "--heads", "32", "--q-len", "4096",
              "--rounds", "5", "--iterations", "20", "--json", "n.json", timeout=600)
    data = json.loads((tmp_path / "n.json").read_text())
    assert sorted(g["uuid"].removeprefix("GPU-") for g in data["gpus"]) == sorted(uuids)
    assert all(g["p50_s"] and g["telemetry"]["available"] for g in data["gpus"])
    assert out.returncode == (1 if any(g["flagged"] for g in data["gpus"]) else 0)
