"""A runner forked from a runner template on a GPU (runner/template.py): the template imports
torch without starting CUDA, so each forked runner makes its own context; its kernels run and
time as a started runner's do, byte for byte the same output."""

import os
import subprocess
import sys

import pytest

from sagetui.core import events as ev
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.runner_template import ENV
from sagetui.session.session import Session

pytestmark = pytest.mark.gpu

VARIANTS = ["sdpa=sdpa", "sm90=sage2-sm90", "sm89=sage2-sm89"]


def run(parents: list[int]):
    """The report, and (in `parents`) the parent of each runner as it said hello."""
    cfg = RunConfig(shape=Shape(heads=8, q_len=4096, head_dim=128),
                    variants=[VariantSpec.parse(v) for v in VARIANTS], warmup=2, rounds=2,
                    iterations=5)

    def on_event(e: ev.Event) -> None:
        if isinstance(e, ev.Hello):
            assert e.device == "cuda"
            stat = open(f"/proc/{e.pid}/stat").read()
            parents.append(int(stat.rsplit(")", 1)[1].split()[1]))

    return Session(cfg, on_event=on_event).run()


def test_a_forked_runner_runs_the_kernels_as_a_started_one(tmp_path, monkeypatch):
    path = tmp_path / "runners"
    template = subprocess.Popen([sys.executable, "-m", "sagetui.runner", "--template",
                                 str(path)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                text=True, start_new_session=True)
    try:
        assert template.stdout is not None and template.stdout.readline().strip() == "ready"
        monkeypatch.delenv(ENV, raising=False)
        started_parents: list[int] = []
        started = run(started_parents)
        monkeypatch.setenv(ENV, str(path))
        forked_parents: list[int] = []
        forked = run(forked_parents)
    finally:
        template.kill()
        template.wait()
    assert started.status == forked.status == "complete", (started.faults, forked.faults)
    assert started_parents == [os.getpid()] and forked_parents == [template.pid]
    for a, b in zip(started.variants or [], forked.variants or [], strict=True):
        assert a.status == b.status == "ok", (a.error, b.error)
        assert a.output_sha256 == b.output_sha256, a.name  # the same kernel, the same bytes
        assert a.timing is not None and b.timing is not None
        print(f"{a.name}: started p50 {a.timing.p50_s * 1e3:.3f} ms, "
              f"forked p50 {b.timing.p50_s * 1e3:.3f} ms")
