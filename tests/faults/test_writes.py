"""Writes: exports are atomic (a temporary file in the same directory, then a rename). A full
disk or a read-only directory leaves the old file intact and no temporary file behind, and
`sagetui run` says so in one line per file and exits 1, with the report still in the recovery
file (or, when that could not be written either, says that too).

Root ignores permissions, so "full" and "read-only" are made real: RLIMIT_FSIZE in a child
process (writes fail with EFBIG, SIGXFSZ ignored), a 64 KiB tmpfs (ENOSPC) and a read-only bind
mount (EROFS), both inside a private mount namespace (`unshare -m`) that vanishes with the test.
"""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, TINY, env, no_traceback

OLD = '{"old": "report, kept whole"}\n'
RUN = ["run", "--variant", "a=reference", *TINY, "--rounds", "2", "--iterations", "3",
       "--quiet", "--force"]


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    p = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
                       capture_output=True)
    return p.returncode == 0


needs_mount_ns = pytest.mark.skipif(not _can_unshare(),
                                    reason="needs a private mount namespace (unshare -m)")


def _limit_file_size(limit: int):
    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return pre


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_on_a_full_disk_keeps_the_old_file(tmp_path):
    target = tmp_path / "report.json"
    target.write_text(OLD)
    code = (
        "import sys\n"
        "from sagetui.core.report.io import atomic_write_text\n"
        "try:\n"
        f"    atomic_write_text({str(target)!r}, 'x' * 200_000, overwrite=True)\n"
        "except OSError as exc:\n"
        "    print(exc.strerror)\n")
    p = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True,
                       preexec_fn=_limit_file_size(64 * 1024), timeout=60)
    assert p.stdout.strip() == "File too large", p.stderr
    assert target.read_text() == OLD and _leftovers(tmp_path) == []


def test_atomic_write_never_overwrites_without_being_asked(tmp_path):
    from sagetui.core.report.io import atomic_write_text

    target = tmp_path / "report.json"
    target.write_text(OLD)
    with pytest.raises(FileExistsError):
        atomic_write_text(target, "new")
    assert target.read_text() == OLD and _leftovers(tmp_path) == []


def test_run_on_a_full_disk_says_nothing_was_kept_when_nothing_was(tmp_path):
    """RLIMIT_FSIZE hits the recovery file and the export alike: the message must not claim
    the report is in a recovery file."""
    (tmp_path / "r.json").write_text(OLD)
    p = subprocess.run([sys.executable, "-m", "sagetui", *RUN, "--json", "r.json",
                        "--recovery-dir", "rec"], cwd=tmp_path, capture_output=True, text=True,
                       env=env(), preexec_fn=_limit_file_size(8 * 1024), timeout=120)
    assert p.returncode == 1 and no_traceback(p.stderr), p.stderr
    assert ("could not write r.json: File too large; the recovery file could not be written "
            "either: nothing of this run is on disk") in p.stderr.splitlines()
    assert "could not write the recovery file" in p.stderr
    assert (tmp_path / "r.json").read_text() == OLD
    assert _leftovers(tmp_path) == [] and _leftovers(tmp_path / "rec") == []


def _in_namespace(tmp_path: Path, script: str) -> subprocess.CompletedProcess:
    e = env(PY=sys.executable, OUT=str(tmp_path / "out"), REC=str(tmp_path / "rec"),
            T=str(tmp_path), ARGS=" ".join(RUN))
    (tmp_path / "out").mkdir()
    return subprocess.run(["unshare", "-m", "sh", "-ec", script], cwd=tmp_path, env=e,
                          capture_output=True, text=True, timeout=180)


@needs_mount_ns
def test_run_with_its_export_on_a_full_disk_keeps_the_report_in_the_recovery_file(tmp_path):
    p = _in_namespace(tmp_path, """
        mount -t tmpfs -o size=64k tmpfs "$OUT"
        printf '%s\\n' '{"old": "report, kept whole"}' > "$OUT/r.json"
        dd if=/dev/zero of="$OUT/filler" bs=1k count=1000 2>/dev/null || true
        set +e
        "$PY" -m sagetui $ARGS --json "$OUT/r.json" --recovery-dir "$REC" 2> "$T/stderr"
        echo $? > "$T/rc"
        cat "$OUT/r.json" > "$T/after"
        ls -a "$OUT" > "$T/listing"
    """)
    assert p.returncode == 0, p.stderr
    err = (tmp_path / "stderr").read_text()
    (recovery,) = (tmp_path / "rec").glob("*.json")
    assert (tmp_path / "rc").read_text().strip() == "1" and no_traceback(err)
    assert (f"could not write {tmp_path}/out/r.json: No space left on device; the report is "
            f"kept in the recovery file {recovery}") in err.splitlines()
    assert (tmp_path / "after").read_text() == OLD  # the old file, whole
    assert (tmp_path / "listing").read_text().split() == [".", "..", "filler", "r.json"]
    report = json.loads(recovery.read_text())
    assert report["status"] == "complete" and report["rounds"] == 2
    check = subprocess.run([sys.executable, "-m", "sagetui", "check", str(recovery)], env=env(),
                           capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert check.returncode == 0, check.stdout + check.stderr


@needs_mount_ns
def test_run_whose_export_directory_turns_read_only_mid_run(tmp_path):
    p = _in_namespace(tmp_path, """
        mount --bind "$OUT" "$OUT"
        printf '%s\\n' '{"old": "report, kept whole"}' > "$OUT/r.json"
        "$PY" -m sagetui $ARGS --rounds 6 --json "$OUT/r.json" --recovery-dir "$REC" \
            2> "$T/stderr" &
        pid=$!
        while [ -z "$(ls "$REC" 2>/dev/null)" ]; do sleep 0.02; done
        mount -o remount,ro,bind "$OUT"
        set +e
        wait $pid
        echo $? > "$T/rc"
    """)
    assert p.returncode == 0, p.stderr
    err = (tmp_path / "stderr").read_text()
    (recovery,) = (tmp_path / "rec").glob("*.json")
    assert (tmp_path / "rc").read_text().strip() == "1" and no_traceback(err)
    assert (f"could not write {tmp_path}/out/r.json: Read-only file system; the report is kept "
            f"in the recovery file {recovery}") in err.splitlines()
    assert (tmp_path / "out" / "r.json").read_text() == OLD
    assert _leftovers(tmp_path / "out") == []
    assert json.loads(recovery.read_text())["rounds"] == 6


@needs_mount_ns
def test_a_read_only_directory_is_refused_before_the_run(tmp_path):
    p = _in_namespace(tmp_path, """
        mount --bind "$OUT" "$OUT"
        mount -o remount,ro,bind "$OUT"
        set +e
        "$PY" -m sagetui $ARGS --json "$OUT/r.json" --recovery-dir "$REC" 2> "$T/stderr"
        echo $? > "$T/rc"
    """)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "rc").read_text().strip() == "2"
    assert (tmp_path / "stderr").read_text().splitlines() == [
        f"sagetui: error: --json {tmp_path}/out/r.json: directory {tmp_path}/out is not "
        "writable"]
    assert not (tmp_path / "rec").exists()  # nothing ran
