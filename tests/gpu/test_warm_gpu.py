"""The console's warm runner on a GPU: a second run on the same inputs keeps them and the
variants' first outputs; a rebuilt extension module is never run from the old process."""

import os
import shutil
import time

import pytest

from sagetui.core import events as ev
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.report.model import Report
from sagetui.session.session import Session
from sagetui.session.warm import WarmRunner

pytestmark = pytest.mark.gpu


def run(variants: list[str], warm: WarmRunner) -> tuple[Report, list[ev.Event]]:
    events: list[ev.Event] = []
    cfg = RunConfig(shape=Shape(heads=4, q_len=2048, head_dim=128),
                    variants=[VariantSpec.parse(v) for v in variants], warmup=2, rounds=2,
                    iterations=3)
    return Session(cfg, on_event=events.append, warm=warm).run(), events


def first(events: list[ev.Event], kind: type) -> ev.Event:
    return next(e for e in events if isinstance(e, kind))


def test_a_warm_runner_keeps_inputs_and_outputs_and_never_runs_a_rebuilt_module(tmp_path):
    import sageattention._qattn_sm89 as installed

    so = tmp_path / os.path.basename(str(installed.__file__))
    shutil.copy2(str(installed.__file__), so)  # a build of the user's own, at its own path
    variants = ["stock=sage2-sm89", f"mine=sage2-sm89@{so}"]
    warm = WarmRunner()
    try:
        one, e1 = run(variants, warm)
        two, e2 = run(variants, warm)
        assert one.status == two.status == "complete", (one.faults, two.faults)
        assert first(e2, ev.Hello).pid == first(e1, ev.Hello).pid
        ready = first(e2, ev.Ready)
        # the first run hashed its inputs after its last round (a late figure); the second knows
        assert ready.reused_inputs and ready.input_sha256 == one.variants[0].input_sha256
        assert ready.input_sha256 is not None
        for a, b in zip(one.variants, two.variants, strict=True):
            assert a.output_sha256 == b.output_sha256 and b.byte_exact and b.deterministic
            assert b.accuracy is not None and b.accuracy == a.accuracy
        assert {f.module for f in two.variant("mine").provenance.files} >= {"_qattn_sm89"}
        stamp = time.time() + 5  # "rebuilt": the file's modification time moves
        os.utime(so, (stamp, stamp))
        three, e3 = run(variants, warm)
        assert three.status == "complete"
        assert first(e3, ev.Hello).pid != first(e2, ev.Hello).pid
        assert any(isinstance(e, ev.LogMessage) and f"{so} changed since it was loaded"
                   in e.message for e in e3)
        assert not first(e3, ev.Ready).reused_inputs
    finally:
        warm.close()
