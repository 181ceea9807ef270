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
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import sagetui_here
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
        "from sagetui.core.file_writes import atomic_write_text\n"
        "try:\n"
        f"    atomic_write_text({str(target)!r}, 'x' * 200_000, overwrite=True)\n"
        "except OSError as exc:\n"
        "    print(exc.strerror)\n")
    p = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True,
                       preexec_fn=_limit_file_size(64 * 1024), timeout=60)
    assert p.stdout.strip() == "File too large", p.stderr
    assert target.read_text() == OLD and _leftovers(tmp_path) == []


def test_atomic_write_never_overwrites_without_being_asked(tmp_path):
    from sagetui.core.file_writes import atomic_write_text

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
    check = sagetui_here("check", recovery, cwd=tmp_path)  # its output alone: in this process
    assert check.returncode == 0, check.stdout + check.stderr


@needs_mount_ns
def test_run_whose_export_directory_turns_read_only_mid_run(tmp_path):
    p = _in_namespace(tmp_path, """
        mount --bind "$OUT" "$OUT"
        printf '%s\\n' '{"old": "report, kept whole"}' > "$OUT/r.json"
        "$PY" -m sagetui $ARGS --rounds 100 --json "$OUT/r.json" --recovery-dir "$REC" \
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
    assert json.loads(recovery.read_text())["rounds"] == 100


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


# Outputs are never lost or replaced (docs/faults.md, "Writes"): a file that appears at an output's
# path while the run goes is kept, the output goes beside it; two outputs naming one file are
# refused.


def test_a_file_that_appears_while_the_text_is_written_is_never_replaced(tmp_path):
    """The check and the creation are one step: a file made at the target after the write
    began (here: between two pieces of the text) is kept whole."""
    from sagetui.core.file_writes import atomic_write_text

    target = tmp_path / "report.json"

    def pieces(theirs: str):
        yield '{"ours": '
        target.write_text(theirs)  # another program's file, made mid-write
        yield "1}\n"

    with pytest.raises(FileExistsError):
        atomic_write_text(target, pieces("first"))
    assert target.read_text() == "first" and _leftovers(tmp_path) == []
    target.unlink()
    at = atomic_write_text(target, pieces("second"), beside=True)
    assert at == tmp_path / "report.1.json" and at.read_text() == '{"ours": 1}\n'
    assert target.read_text() == "second" and _leftovers(tmp_path) == []
    assert atomic_write_text(target, "next", beside=True) == tmp_path / "report.2.json"
    # asked to replace: replaced whole, in one rename
    assert atomic_write_text(target, "mine", overwrite=True) == target
    assert target.read_text() == "mine" and _leftovers(tmp_path) == []


def test_without_hard_links_the_creation_is_still_one_step(tmp_path, monkeypatch):
    """A file system without hard links (some network and FUSE ones: EPERM): the name is
    taken by O_CREAT|O_EXCL, then the text renamed onto it. os.link is replaced here because
    no such file system can be mounted in a test (a mock, unavoidably)."""
    import errno

    from sagetui.core import file_writes

    def no_links(*_args, **_kw):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(file_writes.os, "link", no_links)
    target = tmp_path / "r.json"
    assert file_writes.atomic_write_text(target, "ours") == target and target.read_text() == "ours"
    with pytest.raises(FileExistsError):
        file_writes.atomic_write_text(target, "again")
    assert file_writes.atomic_write_text(target, "beside", beside=True) == tmp_path / "r.1.json"
    assert target.read_text() == "ours" and (tmp_path / "r.1.json").read_text() == "beside"
    assert _leftovers(tmp_path) == []


ROUNDS = 60  # 15 once ended between the recovery file's first write and the SIGSTOP (.ci/run)


def _run_until_stopped(tmp_path: Path, *extra: str) -> subprocess.Popen:
    """`sagetui run` with many rounds, stopped (SIGSTOP, a real signal) once its recovery file
    shows it is measuring: whatever is done to its outputs' paths now happens during the run."""
    import time

    p = subprocess.Popen([sys.executable, "-m", "sagetui", *RUN[:-1], "--rounds", str(ROUNDS),
                          "--json", "r.json", "--csv", "r.csv", "--recovery-dir", "rec",
                          *extra], cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list((tmp_path / "rec").glob("*.json")):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.02)
    p.send_signal(signal.SIGSTOP)
    assert p.poll() is None and not (tmp_path / "r.json").exists(), "the run ended first"
    return p


def test_a_report_file_that_appears_during_the_run_is_kept_and_the_report_goes_beside(
        tmp_path):
    p = _run_until_stopped(tmp_path)
    with open(tmp_path / "r.json", "x") as f:  # another program's file, made mid-run
        f.write(OLD)
    p.send_signal(signal.SIGCONT)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 1 and no_traceback(err), err
    assert (tmp_path / "r.json").read_text() == OLD
    assert ("r.json appeared during the run and is kept; wrote r.1.json beside it"
            in err.splitlines()), err
    assert "wrote r.csv" in err.splitlines()  # the other output, where it was asked for
    report = json.loads((tmp_path / "r.1.json").read_text())
    assert report["status"] == "complete" and report["rounds"] == ROUNDS
    assert _leftovers(tmp_path) == []


def test_with_force_a_file_that_appears_during_the_run_is_replaced(tmp_path):
    p = _run_until_stopped(tmp_path, "--force")
    (tmp_path / "r.json").write_text(OLD)
    p.send_signal(signal.SIGCONT)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    assert json.loads((tmp_path / "r.json").read_text())["rounds"] == ROUNDS
    assert not (tmp_path / "r.1.json").exists()


@pytest.mark.parametrize(("command", "outputs", "line"), [
    ("run", ["--json", "x", "--csv", "x"], "--json and --csv name one file (x)"),
    ("run", ["--json", "x", "--markdown", "./x"], "--json and --markdown name one file "
                                                  "(x and ./x)"),
    ("run", ["--csv", "d/../x.csv", "--record-events", "x.csv"],
     "--csv and --record-events name one file (d/../x.csv and x.csv)"),
    ("run", ["--json", "r.json", "--kernel-facts-csv", "link"],
     "--json and --kernel-facts-csv name one file (r.json and link)"),
    ("sweep", ["--json", "s.json", "--svg", "s.json"], "--json and --svg name one file"),
    ("calibrate", ["--csv", "c", "--markdown", "c"], "--csv and --markdown name one file"),
    ("profile", ["--json", "p", "--markdown", "p"], "--json and --markdown name one file"),
])
def test_two_outputs_naming_one_file_are_refused_before_anything_runs(
        cli_here, tmp_path, command, outputs, line):
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "r.json")  # to a file not there yet
    out = cli_here(command, "--backend", "reference", *TINY, *outputs)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"sagetui: error: {line}")
    assert out.stderr.rstrip().endswith(": give each output its own path")
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").rglob("*.json"))
    assert sorted(q.name for q in tmp_path.iterdir()) == ["d", "link"]  # nothing written


def test_two_outputs_naming_one_existing_file_by_a_hard_link_are_refused(cli_here, tmp_path):
    (tmp_path / "a.md").write_text(OLD)
    os.link(tmp_path / "a.md", tmp_path / "b.md")
    out = cli_here("run", "--backend", "reference", *TINY, "--markdown", "a.md", "--csv", "b.md",
                   "--force")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "--csv and --markdown name one file (b.md and a.md)" in out.stderr
    assert (tmp_path / "a.md").read_text() == OLD


def test_a_workload_replay_with_two_outputs_naming_one_file_is_refused(cli_here, tmp_path,
                                                                       replayed_workload):
    capture = replayed_workload.parent / "cap"
    out = cli_here("run", "--workload", capture, "--backend", "reference", "--json", "w",
                   "--markdown", "w")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "--json and --markdown name one file (w)" in out.stderr
    assert not (tmp_path / "w").exists()


@needs_mount_ns
def test_a_swap_on_a_full_disk_keeps_its_report_in_the_recovery_folder(tmp_path):
    """Issue 39: a full disk at the end lost every measurement of a swap (it had no recovery
    file). The report is now kept in the recovery folder before it is written where asked."""
    model = ROOT / "tests" / "swap_model.py"
    p = _in_namespace(tmp_path, f"""
        mount -t tmpfs -o size=64k tmpfs "$OUT"
        dd if=/dev/zero of="$OUT/filler" bs=1k count=1000 2>/dev/null || true
        set +e
        XDG_STATE_HOME="$T/state" "$PY" -m sagetui swap --variant ref=reference --steps 2 \\
            --json "$OUT/s.json" -- python {model} --steps 200 > "$T/stdout" 2> "$T/stderr"
        echo $? > "$T/rc"
    """)
    assert p.returncode == 0, p.stderr
    err = (tmp_path / "stderr").read_text()
    (recovery,) = (tmp_path / "state" / "sagetui" / "recovery").glob("*.json")
    assert (tmp_path / "rc").read_text().strip() == "1" and no_traceback(err), err
    assert f"could not write {tmp_path}/out/s.json: No space left on device" in err
    assert f"the report is kept in {recovery} (sagetui view --recover list)" in err
    report = json.loads(recovery.read_text())
    assert report["status"] == "complete" and report["swap"]["mode"] == "interleaved"
    check = sagetui_here("check", recovery, cwd=tmp_path)  # its output alone: in this process
    assert check.returncode == 0, check.stdout + check.stderr
