"""Sweeps on a GPU: kernel-only TOPS agree with `sagetui run`'s main-loop TOPS, a second setup
gives the first point's memory back, and issue 14's H200 sweep finishes in five minutes."""

import threading
import time

import pytest

from sagetui.core.io import load_report

pytestmark = pytest.mark.gpu

SHAPE = ["--batch", "4", "--heads", "32", "--head-dim", "128", "--q-len", "4096"]


def test_kernel_tops_equal_the_runs_mainloop_tops_within_2_percent(cli, tmp_path):
    """The same shape, the same call of this test: the plain run's `achieved.mainloop_tops`
    and the sweep point's kernel TOPS (both ops / p50 of fused_mainloop)."""
    common = ["--backend", "sage2-sm90", *SHAPE, "--warmup", "5", "--rounds", "5",
              "--iterations", "20"]
    run = cli("run", *common, "--json", "run.json", timeout=600)
    assert run.returncode == 0, run.stderr
    sweep = cli("sweep", *common, "--json", "sweep.json", timeout=600)
    assert sweep.returncode == 0, sweep.stderr
    achieved = load_report(tmp_path / "run.json").achieved
    (point,) = load_report(tmp_path / "sweep.json").sweep.points
    (v,) = point.variants
    assert v.kernel_phase == "fused_mainloop"
    assert v.kernel_tops == pytest.approx(achieved["mainloop_tops"], rel=0.02)
    assert v.e2e_tops == pytest.approx(achieved["call_tops"], rel=0.02)
    assert cli("check", "sweep.json").returncode == 0


def test_a_second_setup_gives_the_first_points_memory_back():
    import torch

    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.core.status import StatusBoard
    from sagetui.runner.main import free_memory, new_engine

    def cfg(q):
        return RunConfig(shape=Shape(batch=4, heads=32, q_len=q, head_dim=128),
                         variants=[VariantSpec.parse("sage2-sm90")], device="cuda", warmup=1)

    def emit(event):  # a typed runner event (core/events.py); none is needed here
        pass

    engine = new_engine(cfg(16384), emit, StatusBoard(None), threading.Event())
    engine.warmup("sage2-sm90", 1)
    engine.block("sage2-sm90", 0, 0, 2)
    big = torch.cuda.memory_allocated()
    engine = None
    free_memory()
    assert torch.cuda.memory_allocated() < big / 100  # q, k, v, outputs: all gone
    engine = new_engine(cfg(1024), emit, StatusBoard(None), threading.Event())
    assert torch.cuda.memory_allocated() < big / 8


def test_issue_14_h200_sweep_under_five_minutes(cli, tmp_path):
    """1k..32k (6 points), B=4, H=32, D=128, causal and not, over sm90, sm89, sm80 and SDPA
    pinned to cuDNN and to FlashAttention (needs issue 13's sage2-sm80 and sdpa[backend=])."""
    t0 = time.monotonic()
    out = cli("sweep", "--variant", "sm90=sage2-sm90", "--variant", "sm89=sage2-sm89",
              "--variant", "sm80=sage2-sm80", "--variant", "cudnn=sdpa[backend=cudnn]",
              "--variant", "flash=sdpa[backend=flash]", "--batch", "4", "--heads", "32",
              "--head-dim", "128", "--q-len", "1k..32k", "--causal", "both", "--rounds", "3",
              "--iterations", "10", "--json", "sweep.json", "--svg", "sweep.svg",
              timeout=600)
    took = time.monotonic() - t0
    assert out.returncode == 0, out.stderr
    assert took < 300, took
    report = load_report(tmp_path / "sweep.json")
    assert len(report.sweep.points) == 12
    assert all(p.status == "ok" for p in report.sweep.points)
    assert cli("check", "sweep.json").returncode == 0
