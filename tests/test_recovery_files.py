"""Recovery files: pruned by age and count (the newest RECOVERY_KEEP, none
older than RECOVERY_MAX_AGE_DAYS, never a running run's), and `sagetui view --recover [N|list]`
lists the runs it can reopen and opens the newest that is not complete by default."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pytest

from sagetui.cli.console import view_reports
from sagetui.cli.errors import UsageError
from sagetui.cli.main import build_parser
from sagetui.cli.run_options import recovery_file
from sagetui.core.paths import RECOVERY_KEEP, RECOVERY_MAX_AGE_DAYS, prune_recovery

from .conftest import sagetui_here

ROOT = Path(__file__).resolve().parents[1]
COMPLETE = ROOT / "sample_results" / "cpu_reference_variants.json"  # a real CPU run, complete
DEAD = 999_999_999  # over any pid_max: no such process
DAY = 86400.0


def touch(path: Path, age_s: float, text: str = "{}") -> Path:
    path.write_text(text)
    t = time.time() - age_s
    os.utime(path, (t, t))
    return path


def test_pruning_keeps_the_newest_and_the_young_and_every_running_runs_file(tmp_path) -> None:
    n = RECOVERY_KEEP + 5
    files = [touch(tmp_path / f"run-20260101-0000{i:02d}-{DEAD}.json", 60.0 * i)
             for i in range(n)]  # files[0] is the newest
    old = touch(tmp_path / f"run-20250101-000000-{DEAD}-2.json", (RECOVERY_MAX_AGE_DAYS + 1) * DAY)
    running = touch(tmp_path / f"run-20250101-000001-{os.getppid()}.json", 400 * DAY)
    spare = touch(tmp_path / f"run-20250101-000002-{DEAD}.json", 400 * DAY)
    other = touch(tmp_path / "notes.json", 400 * DAY)  # not sagetui's name: never touched
    removed = prune_recovery(tmp_path, spare=spare)
    # the running run's file is among the newest by count only if it is young; it is not, and
    # stays anyway; of the dead ones, the RECOVERY_KEEP newest stay
    kept = {p for p in tmp_path.iterdir()}
    assert set(removed) == set(files[RECOVERY_KEEP:]) | {old}
    assert kept == set(files[:RECOVERY_KEEP]) | {running, spare, other}
    assert prune_recovery(tmp_path / "missing") == []  # never raises


def test_a_new_runs_recovery_file_prunes_its_folder(tmp_path) -> None:
    stale = touch(tmp_path / f"run-20250101-000000-{DEAD}.json", (RECOVERY_MAX_AGE_DAYS + 1) * DAY)
    young = touch(tmp_path / f"run-20261101-000000-{DEAD}.json", DAY)
    path = recovery_file(argparse.Namespace(recovery_dir=str(tmp_path)))
    assert path.parent == tmp_path and not stale.exists() and young.exists()


def recovery_folder(tmp_path: Path) -> Path:
    """Three runs: a cancelled one, a complete one after it, an unreadable file the newest."""
    rec = tmp_path / "rec"
    rec.mkdir()
    cancelled = json.loads(COMPLETE.read_text())
    cancelled["status"], cancelled["rounds"] = "cancelled", 3
    touch(rec / "run-20261201-100000-11.json", 300, json.dumps(cancelled))
    touch(rec / "run-20261201-110000-12.json", 200, COMPLETE.read_text())
    touch(rec / "run-20261201-120000-13.json", 100, "{")
    return rec


def opened(rec: Path, *recover: str) -> str:
    args = build_parser().parse_args(["view", "--recover", *recover, "--recovery-dir", str(rec)])
    ((path, _),) = view_reports(args)
    return Path(path).name


def test_recover_opens_the_newest_run_that_is_not_complete_or_the_nth(tmp_path) -> None:
    rec = recovery_folder(tmp_path)
    assert opened(rec) == "run-20261201-100000-11.json"  # not the newer, complete one
    assert opened(rec, "1") == "run-20261201-110000-12.json"
    assert opened(rec, "2") == "run-20261201-100000-11.json"
    with pytest.raises(UsageError, match="--recover 3: there are 2 runs to reopen"):
        opened(rec, "3")
    with pytest.raises(UsageError, match="takes a number"):
        opened(rec, "x")
    (rec / "run-20261201-100000-11.json").unlink()
    with pytest.raises(UsageError, match="every run in .* is complete"):
        opened(rec)


def test_recover_list_prints_the_runs_it_can_reopen(tmp_path) -> None:
    rec = recovery_folder(tmp_path)
    out = sagetui_here("view", "--recover", "list", "--recovery-dir", rec, cwd=tmp_path,
                       env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if "run-2026" in line]
    assert len(lines) == 2  # the unreadable one is not offered
    first, second = (line.split("│") for line in lines)
    assert first[1].strip() == "1" and first[2].strip() == "run-20261201-110000-12.json"
    assert [c.strip() for c in first[4:7]] == ["complete", "8", "ref, ref-again, slow"]
    assert [c.strip() for c in second[1:2] + second[4:6]] == ["2", "cancelled", "3"]
    assert "1 JSON file there could not be read as a report" in " ".join(out.stdout.split())


def test_recover_list_piped_keeps_whole_file_names(tmp_path) -> None:
    """Piped (`| cat`, a file) from an 80-column terminal: the names were cut to
    "run-20261201-11…"; a pipe's table is as wide as its cells need."""
    rec = recovery_folder(tmp_path)
    out = sagetui_here("view", "--recover", "list", "--recovery-dir", rec, cwd=tmp_path,
                       env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    assert "run-20261201-110000-12.json" in out.stdout and "…" not in out.stdout
