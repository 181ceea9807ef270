"""Every report says where it ran (core/environment.py's block): a profile report its GPU,
torch, ncu and each profiled build; a sweep point its variants' builds; node-check its GPUs.

No GPU or Nsight Compute here: the profile pass runs with the fake tools of
tests/test_profile_failures.py on the toy kernel recorded on the H200, and the profiled "call"
writes what runner/profile_child.py's child_info writes, computed by child_info itself on the
CPU reference backend (so the module list names the toy kernel's module, and the build hashed
is the toy kernel's source standing in for a .so)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from sagetui.core.config import VariantSpec
from sagetui.core.profile.rules import FAMILIES
from sagetui.core.report.io import load_report, save_report
from sagetui.core.run.assemble import profile_report
from sagetui.session.profile_pass import Pass, profile_target
from tests.test_profile_failures import FIX, fake_tools

ROOT = Path(__file__).resolve().parents[1]
H200_KERNELS = ROOT / "sample_results" / "h200_kernels.json"
TOY_SOURCE = FIX / "toy_attention.cu"

CHILD = """
import json, sys
from sagetui.core.config import VariantSpec
from sagetui.runner.backends import backend_class
from sagetui.runner.profile_child import child_info
be = backend_class("reference")(variant_name="toy")
be.provenance_files = lambda: {"toy_attention": sys.argv[2]}
info = child_info(VariantSpec(name="toy", backend="reference"), be, "cpu")
info["files"] = {"toy_attention": sys.argv[3]}
if len(sys.argv) > 4:  # what a runner on a GPU says of its GPU (engine.gpu_info)
    info["environment"].update(device="cuda:0", gpu=json.loads(sys.argv[4]))
json.dump(info, open(sys.argv[1], "w"))
"""
GPU = {"name": "NVIDIA H200", "uuid": "GPU-9584d760-8db7-d92c-f1cc-850d54c3d7a5",
       "driver": "580.159.04", "cuda": "13.0", "capability": "sm_90"}


def _profiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    tools = fake_tools(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_MODE", "ok")
    work = tmp_path / "work"
    work.mkdir()

    def go(*gpu: str) -> Pass:
        info = work / "info.json"
        target = [sys.executable, "-c", CHILD, str(info), str(TOY_SOURCE),
                  str(tmp_path / "toy_attention"), *gpu]
        p = Pass(workdir=work, tools=tools, source_dirs=[str(FIX)])
        p.profiles = [profile_target(p, target, fam=FAMILIES["toy"], nvtx="toy",  # type: ignore
                                     variant="toy", backend=None, info_path=info)]
        return p
    return go


@pytest.fixture
def profiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    return _profiler(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def profiled_on_gpu(tmp_path_factory: pytest.TempPathFactory) -> Pass:
    """One pass of the fake tools over a child that says it ran on the H200 (GPU), made once:
    the three tests below only read it (its environment, its profile)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _profiler(tmp_path_factory.mktemp("profiled"), monkeypatch)(json.dumps(GPU))


def test_child_info_says_where_the_call_ran_and_which_build() -> None:
    from sagetui.runner.backends import backend_class
    from sagetui.runner.profile_child import child_info

    be = backend_class("reference")(variant_name="toy")
    info = child_info(VariantSpec(name="toy", backend="reference"), be, "cpu")
    env = info["environment"]
    assert env["device"] == "cpu" and env["torch"] and env["python"] and env["gpu"] is None
    assert info["provenance"] is None  # the reference backend calls no library of its own
    be.provenance_files = lambda: {"toy_attention": str(TOY_SOURCE)}  # type: ignore[method-assign]
    (f,) = child_info(VariantSpec(name="toy", backend="reference"), be, "cpu")[
        "provenance"]["files"]
    assert f["sha256"] == hashlib.sha256(TOY_SOURCE.read_bytes()).hexdigest()


def test_a_profile_report_carries_gpu_torch_ncu_and_the_profiled_build(profiled_on_gpu,
                                                                       tmp_path) -> None:
    p = profiled_on_gpu
    report = profile_report({}, p.profiles, "complete", environment=p.environment)
    back = load_report(save_report(report, tmp_path / "p.json"))
    env = back.environment
    assert {k: env["gpu"][k] for k in ("name", "uuid", "driver")} == {
        k: GPU[k] for k in ("name", "uuid", "driver")}
    assert env["device"] == "cuda:0" and env["torch"] and env["python"] and env["host"]
    # ncu's own version line, as `ncu --version` printed it (the fake prints ncu 2025.3's)
    assert env["ncu"]["version"] == "2025.3.1.0"
    assert env["ncu"]["version_line"] == "Version 2025.3.1.0 (build 1)"
    (prof,) = back.mainloop_profiles
    (f,) = prof.provenance.files
    assert f.module == "toy_attention" and f.path == str(TOY_SOURCE)
    assert f.sha256 == hashlib.sha256(TOY_SOURCE.read_bytes()).hexdigest()


def test_a_profile_on_the_cpu_stand_in_says_so(profiled) -> None:
    env = profiled().environment
    assert env["device"] == "cpu" and "gpu" not in env  # never guessed


def test_sagetui_profile_writes_the_environment(monkeypatch, tmp_path,
                                                profiled_on_gpu) -> None:
    """cmd_profile hands the pass's environment to the report it writes."""
    from sagetui.cli import profile
    from sagetui.cli.main import main

    done = profiled_on_gpu
    monkeypatch.setenv("FAKE_FIX", str(FIX))  # the fake tools' settings, as when it was made
    monkeypatch.setenv("FAKE_MODE", "ok")

    def fake_variant(config, spec, p):  # what profile_variant leaves in the pass it is given
        p.ran_on, p.ncu = done.ran_on, done.ncu
        return done.profiles[0]
    monkeypatch.setattr(profile, "profile_variant", fake_variant)
    monkeypatch.setattr(profile, "_resolved", lambda config: config)
    monkeypatch.setattr(profile.Tools, "find", classmethod(lambda cls: done.tools))

    out = tmp_path / "prof.json"
    assert main(["profile", "--backend", "sage2-sm89", "--json", str(out), "--quiet"]) == 0
    env = load_report(out).environment
    assert env["gpu"]["name"] == "NVIDIA H200" and env["ncu"]["version"] == "2025.3.1.0"


def test_a_sweep_point_keeps_each_variants_build() -> None:
    """A point is built from its run's report: the variants' provenance goes with it."""
    from sagetui.core.config import Shape
    from sagetui.core.sweep import plan
    from sagetui.core.sweep.collect import point

    rep = load_report(H200_KERNELS)
    shape = Shape.model_validate(rep.config["shape"])
    pt = point(0, shape, plan.Axes(q_lens=[shape.q_len], head_dims=[shape.head_dim],
                                 causal=[False]), rep)
    for v in pt.variants:
        assert v.provenance == rep.variant(v.name).provenance
    assert pt.variants[0].provenance.files[0].sha256  # sm80-fp16: _fused, _qattn_sm80


def test_compare_says_which_profiled_builds_and_ncu_differ(profiled_on_gpu, tmp_path,
                                                           capsys) -> None:
    from sagetui.cli.main import main

    p = profiled_on_gpu
    a = save_report(profile_report({}, p.profiles, "complete", environment=p.environment),
                    tmp_path / "a.json")
    d = json.loads(a.read_text())
    d["mainloop_profiles"][0]["provenance"]["files"][0]["sha256"] = "0" * 64
    d["environment"]["ncu"]["version"] = "2025.4.0.0"
    b = tmp_path / "b.json"
    b.write_text(json.dumps(d))
    assert main(["compare", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    sha = hashlib.sha256(TOY_SOURCE.read_bytes()).hexdigest()
    assert f"differs: B toy: another build (toy_attention {sha[:8]} vs 00000000)" in lines
    assert "differs: B: ncu 2025.3.1.0 vs 2025.4.0.0" in lines


def test_a_pooled_sweep_whose_every_point_failed_still_says_where_it_ran() -> None:
    """No point's report to take the block from: the runner's own hello and ready give it."""
    from sagetui.core.config import RunConfig, Shape
    from sagetui.core.gpus import Slot
    from sagetui.core.sweep import plan
    from sagetui.session.pool import PoolSweep

    cfg = RunConfig(shape=Shape(heads=2, q_len=128, head_dim=64), device="cpu",
                    variants=[VariantSpec.parse("a=reference")], warmup=1, rounds=2,
                    iterations=2)
    slot = Slot("cpu 0", "cpu", env={"SAGETUI_INJECT_FAULT": "oom@setup:1"})
    report = PoolSweep(cfg, plan.Axes(q_lens=[128], head_dims=[64], causal=[False]),
                       [slot]).run()
    assert report.status == "failed"
    env = report.environment
    assert env["device"] == "cpu" and env["torch"] and env["python"] and env["host"]
    assert [r["runner"] for r in env["runners"]] == ["cpu 0"]
