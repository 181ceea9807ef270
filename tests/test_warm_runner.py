"""A warm runner kept between the console's runs, and a stopped run resumed: real runner
processes on the CPU."""

import hashlib

import pytest
import torch

from sagetui.core import events as ev
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.provenance import file_facts
from sagetui.runner.output_checks import OutputChecks
from sagetui.session.session import Session
from sagetui.session.warm import WarmRunner

SHAPE = Shape(heads=2, q_len=128, head_dim=64)


def config(*variants: str, shape: Shape = SHAPE, **kw) -> RunConfig:
    return RunConfig(shape=shape, variants=[VariantSpec.parse(v) for v in variants],
                     **{"warmup": 1, "rounds": 2, "iterations": 3, **kw})


def run(cfg: RunConfig, warm: WarmRunner | None, **kw) -> tuple[list[ev.Event], Session]:
    events: list[ev.Event] = []
    s = Session(cfg, on_event=events.append, warm=warm, **kw)
    s.run()
    return events, s


def first(events: list[ev.Event], kind: type) -> ev.Event:
    return next(e for e in events if isinstance(e, kind))


@pytest.fixture
def warm():
    keeper = WarmRunner()
    yield keeper
    keeper.close()


def test_a_second_run_on_the_same_inputs_reuses_the_runner_and_its_inputs(warm):
    a, _ = run(config("a=reference", "b=reference"), warm)
    pid = warm.pid
    assert pid is not None and not first(a, ev.Ready).reused_inputs
    # same shape, a variant renamed and one added: same process, inputs kept
    b, s = run(config("x=reference", "c=sdpa", rounds=1), warm)
    assert first(b, ev.Hello).pid == pid and warm.pid == pid
    ready = first(b, ev.Ready)
    # the first run hashed its inputs after its last round (a late figure): the
    # second knows the hash at once
    hashed = next(e for e in a if isinstance(e, ev.LateFacts) and e.variant is None)
    assert ready.reused_inputs and ready.input_sha256 == hashed.facts["input_sha256"]
    assert not any(isinstance(e, ev.LateFacts) and e.variant is None for e in b)
    report = s.report()
    assert [v.name for v in report.variants] == ["x", "c"]
    # c (sdpa) cannot run on this CPU: the run is partial and says why
    assert report.status == "partial" and report.variant("c").status == "failed"
    assert report.status_detail and report.status_detail[0].startswith("variant c failed")
    # the renamed variant's output is byte for byte the first run's, its facts carried again
    done_a = [e for e in a if isinstance(e, ev.BlockDone) and e.variant == "a"]
    done_x = [e for e in b if isinstance(e, ev.BlockDone) and e.variant == "x"]
    assert {e.output_sha256 for e in done_x} == {done_a[0].output_sha256}
    accuracy = {e.variant: e.facts["accuracy"] for run_ in (a, b) for e in run_
                if isinstance(e, ev.LateFacts) and e.variant}
    assert accuracy["x"] == accuracy["a"]  # the same output: the same figures, kept


def test_another_shape_reuses_the_process_but_builds_new_inputs(warm):
    a, _ = run(config("a=reference"), warm)
    b, _ = run(config("a=reference", shape=Shape(heads=2, q_len=64, head_dim=64)), warm)
    assert first(b, ev.Hello).pid == first(a, ev.Hello).pid
    assert not first(b, ev.Ready).reused_inputs
    hashes = [e.facts["input_sha256"] for run_ in (a, b) for e in run_
              if isinstance(e, ev.LateFacts) and e.variant is None]
    assert len(hashes) == 2 and hashes[0] != hashes[1]


def test_a_runner_started_otherwise_or_stopped_is_not_reused(warm):
    a, _ = run(config("a=reference"), warm)
    b, _ = run(config("a=reference"), warm, runner_env={"SAGETUI_CPU_THREADS": "1"})
    assert first(b, ev.Hello).pid != first(a, ev.Hello).pid
    assert any(isinstance(e, ev.LogMessage) and "another interpreter or environment"
               in e.message for e in b)
    warm.close()
    assert warm.pid is None
    c, _ = run(config("a=reference"), warm, runner_env={"SAGETUI_CPU_THREADS": "1"})
    assert first(c, ev.Hello).pid != first(b, ev.Hello).pid


def test_a_rebuilt_library_is_never_run_from_the_old_process(tmp_path, warm):
    """The keeper checks the libraries the variants loaded (their provenance) before reuse:
    a process cannot load a changed .so again. (The CPU backends load none, so the recorded
    facts of a real file stand in for a variant's provenance here.)"""
    lib = tmp_path / "_qattn.so"
    lib.write_bytes(b"build one")
    _, s = run(config("a=reference"), None)
    kept = s._runners  # a fresh runner of this test's own, kept by hand with the file's facts
    client, _ = kept.start(lambda m: None)
    hello = client.take(60)
    assert isinstance(hello, ev.Hello)
    assert warm.keep(kept.key, client, hello, [file_facts("_qattn_sm89", str(lib))])
    assert warm.take(kept.key) is not None  # unchanged: reused
    assert warm.keep(kept.key, client, hello, [file_facts("_qattn_sm89", str(lib))])
    lib.write_bytes(b"build two, longer")
    assert warm.take(kept.key) is None
    assert warm.why_not == f"{lib} changed since it was loaded"
    assert not client.alive() or client.proc.wait(timeout=5) is not None


def test_an_idle_runner_is_stopped_after_idle_s():
    keeper = WarmRunner(idle_s=0.5)
    run(config("a=reference"), keeper)
    pid = keeper.pid
    assert pid is not None
    import time

    deadline = time.monotonic() + 10
    while keeper.pid is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert keeper.pid is None


def test_a_stopped_run_resumes_with_its_rounds_kept(warm):
    events: list[ev.Event] = []
    s: Session

    def on_event(e: ev.Event) -> None:
        events.append(e)
        if isinstance(e, ev.RoundDone) and e.round == 1 and not s.cancelled:
            s.cancel()

    s = Session(config("a=reference", "b=reference", rounds=4), on_event=on_event, warm=warm)
    stopped = s.run()
    assert stopped.status == "cancelled" and stopped.rounds in (2, 3)
    kept = stopped.samples["a"]["total"].values[:2 * 3].tolist()
    pid = warm.pid
    done = s.resume()
    assert done.status == "complete" and done.rounds == 4
    assert done.round_numbers() == {"a": [0, 1, 2, 3], "b": [0, 1, 2, 3]}
    assert done.samples["a"]["total"].values[:2 * 3].tolist() == kept
    assert len(done.samples["a"]["total"].values) == 4 * 3
    assert [e.round for e in done.schedule if e.variant == "a"].count(2) == 2  # two halves
    resumed = next(i for i, e in enumerate(events) if isinstance(e, ev.Resumed))
    assert first(events[resumed:], ev.Hello).pid == pid  # the warm runner went on


def test_output_checks_hash_once_and_reuse_the_first_outputs_facts():
    checks = OutputChecks()
    calls: list[int] = []

    def facts_of(out: torch.Tensor) -> dict:
        calls.append(1)
        return {"accuracy": {"rel_l2": 0.01}}

    key = ("reference", None, "{}")
    out = torch.arange(12, dtype=torch.float32)
    checks.remember(key, out, facts_of)
    one = checks.facts("a", key, out.clone(), None, facts_of)
    two = checks.facts("a", key, out.clone(), None, facts_of)
    assert one["output_sha256"] == hashlib.sha256(out.numpy().tobytes()).hexdigest()
    assert one["facts"]["accuracy"] == {"rel_l2": 0.01} and "facts" not in two
    assert two["output_sha256"] == one["output_sha256"] and len(calls) == 1
    other = out.clone()
    other[3] = 99.0  # different bytes: hashed on their own
    three = checks.facts("a", key, other, key, facts_of)
    assert three["output_sha256"] == hashlib.sha256(other.numpy().tobytes()).hexdigest()
    assert three["max_abs_diff"] == 96.0
    checks.new_run([key])  # the next run on these inputs: the facts are given again, once
    again = checks.facts("b", key, out.clone(), None, facts_of)
    assert again["facts"]["accuracy"] == {"rel_l2": 0.01}
    assert len(calls) == 1
    checks.new_run([])
    assert not checks.has_first(key)
