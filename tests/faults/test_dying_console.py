"""A dying console (the headless `sagetui run`; the TUI's own exits are the TUI suite's):
Ctrl-C (SIGINT to the foreground process group, once or twice), `kill` (SIGTERM to the process),
`kill -TERM -PGID` (to its group) and a real terminal hangup (the pty's master closed: SIGHUP,
then every write to the terminal fails). Each time the runner is stopped (no process left,
checked by pid), the rounds measured so far are in the recovery file, which `sagetui check`
passes and `sagetui view --recover` finds, and the JSON export is written too."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from sagetui.cli.console import view_reports
from sagetui.cli.main import build_parser, main
from sagetui.core.status_board import read_status

from .conftest import alive, children, env, no_traceback, status_file_of, wait_for

pytestmark = pytest.mark.loaded  # `pytest --busy-loops 2`: the same on a loaded machine

RUN = ["run", "--variant", "a=reference", "--variant", "b=reference", "--heads", "2",
       "--q-len", "256", "--head-dim", "64", "--warmup", "1", "--rounds", "500",
       "--iterations", "10", "--json", "r.json", "--recovery-dir", "rec"]


def _start(tmp_path: Path, tty: bool) -> tuple[subprocess.Popen, int | None]:
    """`sagetui run` as a shell's foreground job: its own session and process group; with
    tty, on a pseudo-terminal that is its controlling terminal."""
    argv = [sys.executable, "-m", "sagetui", *RUN]
    if not tty:
        return subprocess.Popen(argv, cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True), None
    master, slave = pty.openpty()

    def controlling_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(argv, cwd=tmp_path, env=env(TERM="xterm-256color"), stdin=slave,
                         stdout=slave, stderr=slave, preexec_fn=controlling_terminal)
    os.close(slave)
    os.set_blocking(master, False)
    return p, master


def _drain(master: int | None) -> None:
    if master is None:
        return
    try:
        while os.read(master, 65536):
            pass
    except (BlockingIOError, OSError):
        pass


@pytest.mark.parametrize("how", ["ctrl-c", "ctrl-c-twice", "kill", "kill-group", "hangup"])
def test_console_stopped_mid_run_keeps_what_was_measured(how, tmp_path, started_runners):
    p, master = _start(tmp_path, tty=how == "hangup")
    runners: set[int] = set()
    try:
        runner = wait_for(lambda: (_drain(master), children(p.pid, "sagetui.runner"))[1],
                          timeout=120, what="the runner")[0]
        runners.add(runner)
        status = wait_for(lambda: status_file_of(runner), what="the status file")
        # a round is saved, and the runner is inside round 1 or later: mid-run
        wait_for(lambda: (_drain(master), list((tmp_path / "rec").glob("*.json")))[1],
                 timeout=120, what="the first recovery file")
        wait_for(lambda: (st := read_status(status)) and st["round"] >= 1, timeout=120,
                 what="round 1")
        others = set(children(p.pid)) - runners  # the recovery file's writer
        if how in ("ctrl-c", "ctrl-c-twice"):
            os.killpg(p.pid, signal.SIGINT)  # what the terminal sends on Ctrl-C
            if how == "ctrl-c-twice":
                time.sleep(0.05)
                os.killpg(p.pid, signal.SIGINT)
        elif how == "kill":
            os.kill(p.pid, signal.SIGTERM)
        elif how == "kill-group":
            os.killpg(p.pid, signal.SIGTERM)
        else:
            os.close(master)  # the terminal goes away: SIGHUP, then EIO on every write
            master = None
        if how == "hangup":
            rc, err = p.wait(timeout=120), ""  # what it wrote went to the dead terminal
        else:
            err = p.communicate(timeout=120)[1]
            rc = p.returncode
    finally:
        if p.poll() is None:
            p.kill()
        if master is not None:
            os.close(master)
    assert rc == 1  # cancelled
    if how != "hangup":
        assert no_traceback(err) and "stopping; what was measured is kept" in err
    assert not any(alive(pid) for pid in runners)  # no orphan runner
    wait_for(lambda: not any(alive(pid) for pid in others), what="the writer to end")
    (recovery,) = (tmp_path / "rec").glob("*.json")
    saved = json.loads(recovery.read_text())
    assert saved["status"] == "cancelled" and saved["rounds"] >= 1
    assert not saved.get("faults")  # stopping is not a fault of the variant that was running
    assert [v["status"] for v in saved["variants"]] == ["ok", "ok"]
    assert all(len(r) == saved["rounds"] for r in saved["samples"]["a"].values())
    assert json.loads((tmp_path / "r.json").read_text()) == saved  # the export, written too
    # `sagetui check` passes it: main() in this process (the console's own exit above is the
    # child's; check's, as a child process, is test_dying_runner's and test_cli's)
    assert main(["check", str(recovery)]) == 0
    args = build_parser().parse_args(["view", "--recover", "--recovery-dir", str(tmp_path / "rec")])
    ((path, report),) = view_reports(args)
    assert path == str(recovery) and report.rounds == saved["rounds"]


def test_view_recover_finds_the_newest_and_says_when_there_is_none(tmp_path):
    from sagetui.cli.errors import UsageError

    rec = tmp_path / "rec"
    args = build_parser().parse_args(["view", "--recover", "--recovery-dir", str(rec)])
    with pytest.raises(UsageError, match=f"no recovery file in {rec}"):
        view_reports(args)
    rec.mkdir()
    sample = Path(__file__).resolve().parents[2] / "sample_results" / "001_c3fd8b591d904547.json"
    old, new = rec / "run-old.json", rec / "run-new.json"
    old.write_text(sample.read_text())
    new.write_text(sample.read_text())
    (rec / ".run-new.json.x1y2.tmp").write_text("{")  # an atomic write's leftover is ignored
    os.utime(old, (time.time() - 60, time.time() - 60))
    ((path, _),) = view_reports(args)
    assert path == str(new)
