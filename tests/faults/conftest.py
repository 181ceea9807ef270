"""Shared helpers of the fault tests: a tiny shape, the CLI as a subprocess, processes by pid,
and small shared libraries built with gcc."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
SAMPLE_001 = ROOT / "sample_results" / "001_c3fd8b591d904547.json"
SAMPLE_000 = ROOT / "sample_results" / "000_a7d5760a8f7ea9fe.json"

# A round of two reference variants takes a fraction of a second on two cores.
TINY = ["--heads", "2", "--q-len", "256", "--head-dim", "64", "--warmup", "1"]

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build a .so")


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k != "SAGETUI_INJECT_FAULT"}
    e.update(PYTHONPATH=str(ROOT), **extra)
    return e


def sagetui(*args: object, cwd: Path, timeout: float = 120,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`sagetui ARGS` as a user runs it, to completion."""
    return subprocess.run([sys.executable, "-m", "sagetui", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env=env(XDG_STATE_HOME=str(cwd / "state"), **(extra_env or {})))


def start_sagetui(*args: object, cwd: Path, **kw) -> subprocess.Popen:
    """`sagetui ARGS` started in a session (and process group) of its own, as a shell starts a
    foreground job: signals can go to it alone or to its whole group."""
    return subprocess.Popen([sys.executable, "-m", "sagetui", *map(str, args)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env(XDG_STATE_HOME=str(cwd / "state")), start_new_session=True,
                            **kw)


def children(pid: int, module: str | None = None) -> list[int]:
    """The child processes of `pid`; with `module`, only those running `python -m module`
    (the runner is sagetui.runner; the recovery file's writer is another child)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and (
                module is None or module in _argv(int(d))):
            out.append(int(d))
    return out


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, dead but not reaped, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(predicate, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def build_so(tmp_path: Path, name: str, source: str, *flags: str) -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / f"{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src), *flags], check=True,
                   capture_output=True)
    return out


def no_traceback(text: str) -> bool:
    """No traceback of sagetui's own (a runner's last stderr lines, shown indented under a
    fault, may hold one: that is the runner's, and the point)."""
    return not any(line.startswith(("Traceback (most recent call last)", '  File "'))
                   for line in text.splitlines())


@pytest.fixture(scope="session")
def fresh_report(tmp_path_factory) -> dict:
    """A report of a real tiny run (two reference variants, samples, tail study) as JSON."""
    from sagetui.core.config import RunConfig, Shape, VariantSpec
    from sagetui.session.session import Session

    config = RunConfig(shape=Shape(heads=2, q_len=200, head_dim=64),
                       variants=[VariantSpec.parse("a=reference"),
                                 VariantSpec.parse("b=reference[slowdown=1.1]")],
                       warmup=1, rounds=2, iterations=3, tail_study=True, tail_iterations=2)
    report = Session(config).run()
    assert report.status == "complete", report.faults
    return report.to_json_dict()


def tiny_config(*variants: str, **kw):
    from sagetui.core.config import RunConfig, Shape, VariantSpec

    fields = {"warmup": 1, "rounds": 3, "iterations": 3, **kw}
    return RunConfig(shape=Shape(heads=2, q_len=256, head_dim=64),
                     variants=[VariantSpec.parse(v) for v in variants], **fields)


def session_events(session) -> list:
    """Collect a Session's events (set before run())."""
    events: list = []
    session.on_event = events.append
    return events


def status_file_of(runner_pid: int) -> str | None:
    """The runner's status board, from its environment (SAGETUI_STATUS_FILE)."""
    try:
        raw = Path(f"/proc/{runner_pid}/environ").read_bytes()
    except OSError:
        return None
    for item in raw.split(b"\0"):
        if item.startswith(b"SAGETUI_STATUS_FILE="):
            return item.split(b"=", 1)[1].decode()
    return None


def freeze_in(pid: int, status_path: str, variant: str, round_: int,
              timeout: float = 60.0) -> dict:
    """Wait until the runner `pid` times a leaf phase of `variant` in `round_`, then SIGSTOP it
    there; returns its status board (still, since the runner is stopped)."""
    import signal

    from sagetui.core.status_board import read_status

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = read_status(status_path)
        if st and st["variant"] == variant and st["round"] == round_ and st["phase"] not in (
                "warmup", "checking output"):
            os.kill(pid, signal.SIGSTOP)
            st = read_status(status_path)
            if st and st["variant"] == variant and st["round"] == round_:
                return st
            os.kill(pid, signal.SIGCONT)  # it moved on between the two reads: try again
        time.sleep(0.001)
    raise AssertionError(f"the runner never ran {variant} in round {round_}")
