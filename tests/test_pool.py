"""One runner per GPU. CPU runners (the reference backend) stand in for GPUs, so the
split, the merged report and a fault on one runner are tested for real on this machine."""

import pytest

from sagetui.core import events as ev
from sagetui.core.check.report import check_report
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.gpus import Slot, measured_on, parse_gpus
from sagetui.core.protocol import PROTOCOL_VERSION
from sagetui.core.report.io import load_report
from sagetui.core.report.model import Report
from sagetui.core.sweep import plan

AXES = plan.Axes(q_lens=[128, 256], head_dims=[64], causal=[False, True])


def _cfg() -> RunConfig:
    return RunConfig(shape=Shape(heads=2, q_len=128, head_dim=64), device="cpu",
                     variants=[VariantSpec.parse("a=reference"),
                               VariantSpec.parse("b=reference[slowdown=2]")],
                     warmup=1, rounds=2, iterations=3)


def test_gpus_lists_parse_and_bad_ones_say_why():
    node = ["0", "1", "2", "3"]
    assert [s.visible for s in parse_gpus("all", node)] == node
    picked = parse_gpus("1,3", node)
    assert [(s.label, s.visible, s.device) for s in picked] == [("gpu 1", "1", "cuda:0"),
                                                                ("gpu 3", "3", "cuda:0")]
    assert picked[0].runner_env()["CUDA_VISIBLE_DEVICES"] == "1"
    cpus = parse_gpus("cpu:3", [])
    assert [s.label for s in cpus] == ["cpu 0", "cpu 1", "cpu 2"]
    assert cpus[0].runner_env()["CUDA_VISIBLE_DEVICES"] == ""  # a stand-in sees no GPU
    for bad, why in [("all", "no GPU found"), ("0,0", "twice"), ("7", "no GPU 7"),
                     ("a,b", "want 'all'"), ("cpu:0", "cpu:N"), ("", "want 'all'")]:
        with pytest.raises(ValueError, match=why):
            parse_gpus(bad, node if bad != "all" else [])


def test_measured_on_names_the_slot_or_the_device():
    gpu = {"name": "NVIDIA H200", "uuid": "GPU-1234", "index": 0}
    assert measured_on("gpu 3", "cuda:0", gpu) == {"runner": "gpu 3", "name": "NVIDIA H200",
                                                   "uuid": "GPU-1234"}
    assert measured_on(None, "cuda:1", gpu)["runner"] == "gpu 1"
    assert measured_on(None, "cpu", None) == {"runner": "cpu", "name": None, "uuid": None}


@pytest.mark.parametrize("value,needle", [("0,0", "twice"), ("cpu:0", "cpu:N"),
                                          ("x", "want 'all'"), ("all", "no GPU found"),
                                          ("3", "no GPU 3")])
def test_bad_gpus_is_one_line_and_exit_2(cli_here, monkeypatch, value, needle):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    out = cli_here("sweep", "--backend", "reference", "--q-len", "128", "--gpus", value)
    assert out.returncode == 2, out.stderr
    assert needle in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert "runner up" not in out.stderr  # refused before any runner started


def test_gpus_and_device_or_console_together_are_refused(cli_here):
    out = cli_here("sweep", "--backend", "reference", "--gpus", "cpu:2", "--device", "cpu")
    assert out.returncode == 2 and "--device" in out.stderr
    out = cli_here("sweep", "--backend", "reference", "--gpus", "cpu:2", "--console")
    assert out.returncode == 2 and "--console runs one runner" in out.stderr


@pytest.fixture(scope="module")
def single() -> Report:
    from sagetui.session.sweep import SweepSession

    return SweepSession(_cfg(), AXES).run()


@pytest.fixture(scope="module")
def pooled() -> tuple[Report, list]:
    from sagetui.session.pool import PoolSweep

    events: list = []
    report = PoolSweep(_cfg(), AXES, parse_gpus("cpu:2", []), on_event=events.append).run()
    return report, events


def _keys(p) -> tuple:
    d = p.model_dump(exclude_none=True)
    return (tuple(sorted(k for k in d if k != "elapsed_s")),
            [tuple(sorted(v)) for v in d["variants"]])


def test_two_runners_split_the_points_into_a_single_runners_report(single, pooled):
    report, events = pooled
    assert report.status == single.status == "complete"
    a, b = single.sweep, report.sweep
    # the same points, in the same order, with the same fields
    assert [(p.index, p.x, p.group, p.shape) for p in a.points] == \
           [(p.index, p.x, p.group, p.shape) for p in b.points]
    assert [_keys(p) for p in a.points] == [_keys(p) for p in b.points]
    assert set(Report.model_fields) >= set(report.model_dump(exclude_none=True))
    assert sorted(report.model_dump(exclude_none=True)) == \
           sorted(single.model_dump(exclude_none=True))
    assert a.model_dump(exclude={"points"}).keys() == b.model_dump(exclude={"points"}).keys()
    # the work was split: both runners measured points, every point once, interleaved arms
    by = {p.index: p.measured_on.runner for p in b.points}
    assert set(by.values()) == {"cpu 0", "cpu 1"}, by
    assert {p.measured_on.runner for p in a.points} == {"cpu"}
    runners = report.environment["runners"]
    assert sorted(i for r in runners for i in r["points"]) == [0, 1, 2, 3]
    for p in b.points:  # a point's variants all ran on one runner, ABBA-interleaved there
        assert [v.name for v in p.variants] == ["a", "b"]
        assert all(v.round_count == 2 for v in p.variants)
    # each runner's events come wrapped with its label; one `finished`, the pool's, last
    starts = [e for e in events
              if isinstance(e, ev.FromRunner) and isinstance(e.event, ev.PointStarted)]
    assert {e.runner for e in starts} == {"cpu 0", "cpu 1"}
    assert sum(isinstance(e, ev.Finished) for e in events) == 1
    assert isinstance(events[-1], ev.Finished)
    assert check_report(report) == []


def test_a_runner_that_dies_leaves_the_other_going():
    """Runner cpu 0 exits (SAGETUI_INJECT_FAULT=exit, in its environment alone) in the second
    round of variant b at each of its points; cpu 1 measures its points untouched, and every
    point is in the report."""
    from sagetui.session.pool import PoolSweep

    slots = [Slot("cpu 0", "cpu", env={"SAGETUI_INJECT_FAULT": "exit@b:1"}), Slot("cpu 1", "cpu")]
    report = PoolSweep(_cfg(), AXES, slots).run()
    pts = report.sweep.points
    assert [p.index for p in pts] == [0, 1, 2, 3]
    hit = [p for p in pts if p.measured_on.runner == "cpu 0"]
    clean = [p for p in pts if p.measured_on.runner == "cpu 1"]
    assert hit and clean
    assert all(p.status == "ok" and not p.faults for p in clean)
    assert all(p.status == "partial" and any(f.variant == "b" for f in p.faults) for p in hit)
    assert report.status == "partial"
    assert check_report(report) == []


def test_cli_gpus_cpu_stand_ins_write_a_checked_report(cli_here, tmp_path):
    out = cli_here("sweep", "--backend", "reference", "--q-len", "128,256,512", "--heads", "2",
                   "--warmup", "1", "--rounds", "2", "--iterations", "2", "--gpus", "cpu:2",
                   "--json", "s.json")
    assert out.returncode == 0, out.stderr
    assert "on 2 runners (cpu 0, cpu 1)" in out.stderr
    assert "[cpu 0] point" in out.stderr and "[cpu 1] point" in out.stderr
    r = load_report(tmp_path / "s.json")
    assert [p.x for p in r.sweep.points] == [128, 256, 512]
    assert cli_here("check", "s.json").returncode == 0


def test_one_status_line_per_runner():
    import io

    from rich.console import Console

    from sagetui.cli.runner_lines import RunnerLines
    from sagetui.core.blocks.sweep import SweepPoint
    from sagetui.core.report.model import Fault

    def hello():
        return ev.Hello(protocol=PROTOCOL_VERSION, pid=1, python="3.12", torch="2.11",
                        device="cuda:0", backends={})

    def on(runner, e):
        return ev.FromRunner(runner=runner, event=e)

    lines = RunnerLines(Console(file=io.StringIO()))  # not a terminal: no Live, the lines kept
    for e in [on("gpu 0", hello()), on("gpu 1", hello()),
              on("gpu 0", ev.PointStarted(index=0, total=3, shape="1x128")),
              on("gpu 1", ev.PointStarted(index=1, total=3, shape="1x256")),
              on("gpu 1", ev.FaultRaised(fault=Fault(kind="died", message="died"))),
              on("gpu 0", ev.PointDone(index=0, total=3, point=SweepPoint.model_construct()))]:
        lines.update(e)
    assert lines.lines() == ["gpu 0: idle · 1 done",
                             "gpu 1: point 2/3: 1x256 · 0 done · 1 fault"]
