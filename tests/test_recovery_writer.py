"""The recovery file's writer process writes what save_report writes, byte for byte, says why
when it cannot, and when it is gone the session writes the file itself."""

import os

import pytest

from sagetui.core.report.io import load_report, save_report
from sagetui.session.recovery_writer import RecoveryWriter

from .conftest import TWO_BUILDS


def test_the_writer_writes_what_save_report_writes(tmp_path):
    from .test_check import _made_report

    writer = RecoveryWriter()
    try:
        for name, report in (("made", _made_report()), ("ref", load_report(TWO_BUILDS))):
            save_report(report, tmp_path / f"{name}.here.json")
            assert writer.save(report, tmp_path / f"{name}.child.json")
            assert (tmp_path / f"{name}.child.json").read_bytes() == \
                (tmp_path / f"{name}.here.json").read_bytes()
        report = _made_report()
        assert writer.save(report, tmp_path / "made.child.json")  # again, over it
        assert load_report(tmp_path / "made.child.json") == report
    finally:
        writer.close()


def test_the_writer_says_why_it_could_not_write(tmp_path):
    from .test_check import _made_report

    writer = RecoveryWriter()
    try:
        with pytest.raises(OSError) as e:
            writer.save(_made_report(), tmp_path / "no-such-dir" / "r.json")
        assert e.value.strerror == "No such file or directory"
        assert writer.save(_made_report(), tmp_path / "r.json")  # and goes on
    finally:
        writer.close()


def test_a_dead_writer_is_reported_not_raised(tmp_path):
    from .test_check import _made_report

    writer = RecoveryWriter()
    assert writer.proc is not None
    os.kill(writer.proc.pid, 9)
    writer.proc.wait()
    assert writer.save(_made_report(), tmp_path / "r.json") is False
    assert writer.proc is None and not (tmp_path / "r.json").exists()


def test_the_session_writes_itself_when_the_writer_is_gone(tmp_path, monkeypatch):
    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.session import recovery_writer, session

    class Dead(RecoveryWriter):
        def __init__(self) -> None:
            super().__init__()
            self.close()

    monkeypatch.setattr(recovery_writer, "shared", Dead)
    cfg = RunConfig(shape=Shape(heads=1, q_len=64, head_dim=64),
                    variants=[VariantSpec(name="ref", backend="reference")], rounds=2,
                    iterations=2, warmup=1)
    s = session.Session(cfg, recovery_path=tmp_path / "rec.json")
    report = s.run()
    assert s.recovery_error is None and load_report(tmp_path / "rec.json") == report


def test_one_writer_serves_every_run_of_a_process_and_a_dead_one_is_replaced(tmp_path):
    """A console runs many times and a sweep's pool runs sessions at once: they share the
    process's writer (no process start a run); one that died is replaced at the next ask."""
    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.session import recovery_writer, session

    cfg = RunConfig(shape=Shape(heads=1, q_len=64, head_dim=64),
                    variants=[VariantSpec(name="ref", backend="reference")], rounds=2,
                    iterations=2, warmup=1)
    first = session.Session(cfg, recovery_path=tmp_path / "a.json").run()
    writer = recovery_writer.shared()
    assert writer.proc is not None and writer.proc.poll() is None  # kept after the run
    second = session.Session(cfg, recovery_path=tmp_path / "b.json").run()
    assert recovery_writer.shared() is writer
    assert load_report(tmp_path / "a.json") == first and load_report(tmp_path / "b.json") == second
    os.kill(writer.proc.pid, 9)
    writer.proc.wait()
    assert writer.save(second, tmp_path / "c.json") is False  # the session then writes itself
    again = recovery_writer.shared()
    assert again is not writer and again.proc is not None
    assert again.save(second, tmp_path / "c.json") and load_report(tmp_path / "c.json") == second
