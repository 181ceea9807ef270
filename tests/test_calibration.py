"""Calibration you can trust (docs/statistics.md, "Threshold and noise floor"): the refusal rule,
keys, list and clear, the threshold's source in every report, and a 2x slower copy that is SLOWER
after a noisy calibration."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.report.io import load_report
from sagetui.core.statistics import threshold
from sagetui.session import calibration

from .conftest import TINY, fake_noise_floor

SHAPE = Shape(heads=2, q_len=256, head_dim=64)
GPU = {"name": "NVIDIA H200", "uuid": "GPU-1111"}


def cfg(spec: str = "reference", **kw) -> RunConfig:
    return RunConfig(shape=SHAPE, variants=[VariantSpec.parse(f"a={spec}")], **kw)


def test_the_rule_refuses_a_floor_whose_threshold_is_over_5_percent():
    assert threshold.check_noise_floor(2.5) == 2.5  # threshold exactly 5 %
    with pytest.raises(threshold.NoiseTooLarge) as exc:
        threshold.check_noise_floor(30.399)
    msg = str(exc.value)
    assert "too noisy" in msg and "--iterations" in msg and "--cold" in msg and "60.80" in msg
    with pytest.raises(threshold.NoiseTooLarge):
        calibration.store_noise_floor(cfg(), 30.399, GPU)
    assert not calibration.calibration_path().exists()  # nothing stored
    with pytest.raises(threshold.NoiseTooLarge):
        threshold.resolve_threshold(noise_floor_percent=3.0)
    assert threshold.resolve_threshold(threshold_percent=8.0).source == "--threshold"  # asked for


def test_a_calibration_is_keyed_by_host_gpu_backend_build_and_shape(tmp_path, monkeypatch):
    calibration.store_noise_floor(cfg(), 1.25, GPU, "cuda")
    t = calibration.stored_threshold(cfg(), GPU, "cuda")
    assert t is not None and t.source == "calibration" and t.percent == 2.5
    assert t.noise_floor_percent == 1.25 and t.calibrated_utc and "GPU-1111" in t.calibration_key
    assert calibration.stored_threshold(cfg(), {**GPU, "uuid": "GPU-2222"}, "cuda") is None
    assert calibration.stored_threshold(cfg(), None, "cpu") is None
    assert calibration.stored_threshold(cfg("reference[slowdown=2]"), GPU, "cuda") is None
    other = RunConfig(shape=Shape(heads=2, q_len=512, head_dim=64),
                      variants=[VariantSpec.parse("a=reference")])
    assert calibration.stored_threshold(other, GPU, "cuda") is None
    with monkeypatch.context() as mp:  # not monkeypatch.undo(): it undid the private state
        mp.setattr("platform.node", lambda: "another-host")  # folder too, and the rest of the
        # test wrote into the user's own calibration file
        # a home shared between machines
        assert calibration.stored_threshold(cfg(), GPU, "cuda") is None
    so = tmp_path / "_qattn_sm90.so"
    so.write_bytes(b"one build")
    built = cfg(f"sage2-sm90@{so}")
    calibration.store_noise_floor(built, 0.5, GPU, "cuda")
    assert calibration.stored_threshold(built, GPU, "cuda") is not None
    so.write_bytes(b"a rebuilt one")  # another size, another mtime: another build
    os.utime(so, (1, 1))
    assert calibration.stored_threshold(built, GPU, "cuda") is None


def test_an_unkeyed_entry_of_an_older_sagetui_is_never_used():
    path = calibration.calibration_path()
    path.parent.mkdir(parents=True)
    old = {"reference | 1x256x2x64 bf16 NHD | auto": {"noise_floor_percent": 1.0, "gpu": None}}
    path.write_text(json.dumps(old))
    assert calibration.stored_threshold(cfg()) is None
    assert "unused" in calibration.describe_entry(next(iter(calibration.entries().values())))


def test_list_and_clear_from_the_command_line(cli_here):
    calibration.store_noise_floor(cfg(), 1.0, None, "cpu")
    calibration.store_noise_floor(RunConfig(shape=Shape(heads=2, q_len=512, head_dim=64),
                                    variants=[VariantSpec.parse("a=reference")]), 2.0, None, "cpu")
    out = cli_here("calibrate", "--list")
    assert out.returncode == 0 and "1x256x2x64" in out.stdout and "1x512x2x64" in out.stdout
    assert "noise floor 1.000 %, just measured" in out.stdout
    out = cli_here("calibrate", "--clear", "--backend", "reference", "--heads", "2",
                   "--q-len", "512", "--head-dim", "64")
    assert out.returncode == 0 and "removed 1 calibration" in out.stdout
    assert [e["shape"] for e in calibration.entries().values()] == [SHAPE.describe()]
    out = cli_here("calibrate", "--clear")
    assert "removed 1 calibration" in out.stdout and calibration.entries() == {}


def test_calibrating_again_needs_force(cli_here, tmp_path, monkeypatch):
    calibration.store_noise_floor(cfg(), 1.0, None, "cpu")
    out = cli_here("calibrate", "--backend", "reference", *TINY, "--json", "cal.json")
    assert out.returncode == 2
    assert "--force" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "cal.json").exists()
    assert not (tmp_path / "state" / "sagetui" / "recovery").exists()  # nothing ran
    fake_noise_floor(monkeypatch, 0.9)
    out = cli_here("calibrate", "--backend", "reference", *TINY, "--json", "cal.json", "--force")
    assert out.returncode == 0, out.stderr
    (entry,) = calibration.entries().values()
    assert entry["noise_floor_percent"] == 0.9


def test_a_noisy_calibration_is_refused_and_a_2x_slower_copy_is_slower(cli_here, tmp_path,
                                                                      monkeypatch):
    """The issue's case: a floor of 30.399 % made SAME ±60.80 %, and `reference[slowdown=2]`
    read SAME -47 %. Now the calibration is refused and the copy is SLOWER."""
    fake_noise_floor(monkeypatch, 30.399)
    out = cli_here("calibrate", "--backend", "reference", *TINY, "--iterations", "3",
                   "--json", "cal.json")
    assert out.returncode == 1 and "too noisy" in out.stderr
    assert calibration.entries() == {}
    run = cli_here("run", "--variant", "a=reference", "--variant", "b=reference[slowdown=2]",
                   *TINY, "--rounds", "10", "--iterations", "20", "--json", "r.json")
    assert run.returncode == 0, run.stderr
    v = load_report(tmp_path / "r.json").variant("b").verdict
    assert v.state == "SLOWER", v
    assert v.threshold_percent == 1.0 and v.threshold_source == "default"
    assert "from default" in run.stdout  # the summary table says where the threshold came from


def test_every_report_says_where_its_threshold_came_from(cli_here, tmp_path, monkeypatch):
    def verdict(*extra):
        out = cli_here("run", "--variant", "a=reference", "--variant", "b=reference", *TINY,
                       "--rounds", "2", "--iterations", "2", "--json", "r.json", "--force",
                       "--markdown", "r.md", *extra)
        assert out.returncode == 0, out.stderr
        return load_report(tmp_path / "r.json").variant("b").verdict, out.stdout
    v, _ = verdict("--threshold", "3")
    assert (v.threshold_percent, v.threshold_source) == (3.0, "--threshold")
    v, _ = verdict("--noise-floor", "1.5")
    assert (v.threshold_percent, v.threshold_source, v.noise_floor_percent) == (
        3.0, "--noise-floor", 1.5)
    calibration.store_noise_floor(cfg(), 2.0, None, "cpu")
    v, table = verdict()
    assert (v.threshold_percent, v.threshold_source, v.noise_floor_percent) == (
        4.0, "calibration", 2.0)
    assert v.calibration_key and v.calibrated_utc
    md = (tmp_path / "r.md").read_text()
    for text in (md, table):
        assert "±4.00 % from calibration (noise floor 2.000 %, just measured)" in text
        assert "p50 speedup %" in text and "paired %" in text


def test_a_noise_floor_too_large_on_the_command_line_is_refused(cli_here):
    out = cli_here("run", *TINY, "--noise-floor", "30")
    assert out.returncode == 2 and "too noisy" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_the_suite_keeps_to_its_own_state_and_cache_folders(tmp_path, monkeypatch) -> None:
    """Every test's state folder is its own (conftest's autouse fixture), and the session's
    are never the user's: the calibration test above once wrote into the user's file."""
    from sagetui.core import paths

    home = Path.home()
    assert not paths.state_dir().is_relative_to(home / ".local" / "state")
    assert paths.state_dir().is_relative_to(tmp_path)
    monkeypatch.undo()  # what a test that lost its own folder sees: the session's
    assert not paths.state_dir().is_relative_to(tmp_path)
    assert not paths.state_dir().is_relative_to(home / ".local" / "state")
    assert not paths.cache_dir().is_relative_to(home / ".cache")


def test_a_stopped_calibration_stores_nothing(cli_here, tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM after 3 of its rounds: the run ends "cancelled" and once stored a
    floor from those rounds for every later run (issue 43, item 3). The calibration's own
    report, as a stop leaves it, is concluded again here."""
    fake_noise_floor(monkeypatch, 0.9)  # a quiet machine: a floor the rule would store
    out = cli_here("calibrate", "--backend", "reference", *TINY, "--iterations", "3",
                   "--json", "cal.json")
    assert out.returncode == 0, out.stderr
    calibration.clear(None, None)
    report = load_report(tmp_path / "cal.json")
    stopped = report.model_copy(update={"status": "cancelled", "status_detail": [
        "stopped by SIGTERM after 3 of 5 rounds"]})
    config = RunConfig.model_validate(report.config)
    t, line = calibration.conclude(config, stopped)
    assert t is None and calibration.entries() == {}
    assert line == ("calibration did not complete (cancelled: stopped by SIGTERM after 3 of 5 "
                    "rounds): nothing was stored; the threshold is unchanged")
