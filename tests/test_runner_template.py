"""The runner template (runner/template.py), a fork server for runners: a forked runner is
driven, ends and is reported as a started one is (session/forked_runner.py). Real processes:
a template of its own per test, a real runner forked from it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sagetui.core import events as ev
from sagetui.core import protocol
from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.runner_template import ENV
from sagetui.session.forked_runner import GONE_WITH_TEMPLATE, ForkedRunner, fork_runner
from sagetui.session.session import Session
from sagetui.session.spawn import spawn_runner


def _until(predicate, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_template(path: Path):
    proc = subprocess.Popen([sys.executable, "-m", "sagetui.runner", "--template", str(path)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc, str(path)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    proc, path = _start_template(tmp_path_factory.mktemp("template") / "runners")
    yield proc, path
    proc.kill()
    proc.wait()


def _hello(runner: ForkedRunner) -> ev.Hello:
    assert runner.stdout is not None
    event = protocol.decode_event(runner.stdout.readline())
    assert isinstance(event, ev.Hello), event
    return event


def test_a_forked_runner_says_hello_as_itself_and_quits_with_zero(template) -> None:
    _, path = template
    runner = fork_runner(path, dict(os.environ, SAGETUI_CPU_THREADS="1"))
    assert runner is not None
    hello = _hello(runner)
    assert hello.pid == runner.pid and hello.device == "cpu"
    assert os.getpgid(runner.pid) == runner.pid  # a process group of its own
    assert runner.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        runner.wait(timeout=0.05)
    assert runner.stdin is not None
    runner.stdin.write(protocol.encode(ev.Quit()))
    runner.stdin.flush()
    assert runner.wait(timeout=30) == 0


def test_a_forked_runner_killed_reads_as_killed_and_a_late_signal_reaches_nobody(
        template) -> None:
    _, path = template
    runner = fork_runner(path, dict(os.environ))
    assert runner is not None
    _hello(runner)
    runner.kill()
    assert runner.wait(timeout=30) == -signal.SIGKILL
    runner.terminate()  # after its end: a no-op, as Popen's
    assert runner.poll() == -signal.SIGKILL


def test_a_forked_runner_gets_the_requesters_environment_and_directory(
        template, tmp_path) -> None:
    _, path = template
    (tmp_path / "here").mkdir()
    cwd = os.getcwd()
    os.chdir(tmp_path / "here")
    try:
        runner = fork_runner(path, dict(os.environ, SAGETUI_TEST_MARK="m-123"))
    finally:
        os.chdir(cwd)
    assert runner is not None
    _hello(runner)
    # what the runner's Python sees (its /proc environ is the template's, from its exec)
    assert Path(f"/proc/{runner.pid}/cwd").resolve() == (tmp_path / "here").resolve()
    runner.kill()
    runner.wait(timeout=30)


def test_a_runner_ends_with_its_template_and_says_so(tmp_path) -> None:
    proc, path = _start_template(tmp_path / "runners")
    runner = fork_runner(path, dict(os.environ))
    assert runner is not None
    _hello(runner)
    proc.kill()
    proc.wait()
    assert runner.wait(timeout=30) == GONE_WITH_TEMPLATE
    _until(lambda: not _alive(runner.pid), what="the runner to end with its template")


def test_a_runner_ends_with_the_process_that_asked_for_it(template, tmp_path) -> None:
    """A requester (here a child Python) that dies leaves no runner behind, as a runner it
    started would die with it (PR_SET_PDEATHSIG)."""
    _, path = template
    code = ("import os, sys; from sagetui.session.forked_runner import fork_runner; "
            f"r = fork_runner({path!r}, dict(os.environ)); print(r.pid, flush=True); "
            "sys.stdin.read()")
    requester = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
    assert requester.stdout is not None
    pid = int(requester.stdout.readline())
    assert _alive(pid)
    requester.kill()
    requester.wait()
    _until(lambda: not _alive(pid), what="the runner to end with its requester")


def test_a_template_that_does_not_answer_is_passed_over(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(ENV, str(tmp_path / "nobody"))
    assert fork_runner(str(tmp_path / "nobody"), dict(os.environ)) is None
    spawned = spawn_runner()
    try:
        assert isinstance(spawned.proc, subprocess.Popen)
    finally:
        spawned.discard()


def test_a_session_on_a_forked_runner_runs_and_reports_as_on_a_started_one(
        template, monkeypatch) -> None:
    proc, path = template
    monkeypatch.setenv(ENV, path)
    config = RunConfig(shape=Shape(heads=2, q_len=128, head_dim=64),
                       variants=[VariantSpec.parse("a=reference")], warmup=1, rounds=2,
                       iterations=3)
    parents: list[int] = []

    def on_event(e: ev.Event) -> None:
        if isinstance(e, ev.Hello):  # the runner is up: who started it
            parents.append(_parent(e.pid))

    report = Session(config, on_event=on_event).run()
    assert report.status == "complete", report.faults
    assert parents == [proc.pid]


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_kill_is_never_held_up_by_a_wait_in_another_thread(template) -> None:
    """The session waits on its runner in one thread and kills it from another (the
    watchdog, a stop): as with Popen, the kill goes at once and the wait then returns."""
    import threading

    _, path = template
    runner = fork_runner(path, dict(os.environ))
    assert runner is not None
    _hello(runner)
    codes: list[int] = []
    waiter = threading.Thread(target=lambda: codes.append(runner.wait()), daemon=True)
    waiter.start()
    _until(lambda: _inside(waiter, "_ended"), what="the waiter inside wait()")
    killer = threading.Thread(target=runner.kill, daemon=True)
    killer.start()
    killer.join(timeout=10)
    assert not killer.is_alive(), "kill() waited behind wait()"
    waiter.join(timeout=30)
    assert codes == [-signal.SIGKILL]


def _inside(thread, function: str) -> bool:
    """`thread` is running `function` now (its stack, as Python sees it)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


def test_the_doctor_forked_from_the_template_answers_as_a_started_one(
        template, monkeypatch) -> None:
    """`sagetui doctor`, `run`'s list of backends: the doctor's answer (session/probe.py) from
    a process the template forks, the same as from one started; a template is never asked
    for a template, and its runner's timeout leaves nothing running."""
    from sagetui.core.runner_template import Request
    from sagetui.session.probe import probe

    _, path = template
    monkeypatch.delenv(ENV, raising=False)
    started = probe()
    monkeypatch.setenv(ENV, path)
    doctor = spawn_runner(args=["--doctor"])
    assert isinstance(doctor.proc, ForkedRunner) and "--doctor" in doctor.proc.args
    out, err = doctor.proc.communicate(timeout=60)
    doctor.discard()
    assert doctor.proc.returncode == 0, err
    assert json.loads(out) == started == probe()
    with pytest.raises(ValueError, match="not templates"):
        Request.decode(Request(env={}, cwd="/", requester=1, args=("--template", "x")).encode())
    slow = spawn_runner(args=["--doctor"])  # a timeout: TimeoutExpired, as Popen's
    with pytest.raises(subprocess.TimeoutExpired):
        slow.proc.communicate(timeout=0)
    slow.discard()
    assert slow.proc.poll() is not None and not _alive(slow.proc.pid)


def test_a_bad_request_is_answered_with_why_and_its_descriptors_are_not_kept(template) -> None:
    """A request the template cannot take (not JSON, a template asked for, too few
    descriptors) gets an error line, and the descriptors that came with it are closed: a
    template serving a whole test run keeps none of them."""
    import socket

    from sagetui.core import runner_template

    proc, path = template

    def ask(data: bytes, n: int) -> str:
        pipes = [os.pipe() for _ in range(n)]
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                s.settimeout(10.0)
                s.connect(path)
                socket.send_fds(s, [data], [w for _, w in pipes])
                return s.recv(256).decode()
        finally:
            for r, w in pipes:
                os.close(r)
                os.close(w)

    def held() -> int:
        return len(os.listdir(f"/proc/{proc.pid}/fd"))

    def settled() -> int:
        """The count once two looks 0.1 s apart agree (5 s at most): the template closes a
        request's descriptors after it answers, so one look may come before that (.ci/run saw
        7 against 8, and 8 against 7)."""
        import time

        last, deadline = held(), time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = held()
            if now == last:
                return now
            last = now
        return last

    ask(b"{", runner_template.FDS)  # the first answer may open what the template keeps
    before = settled()
    template_asked = runner_template.Request(env={}, cwd="/", requester=os.getpid(),
                                             args=("--template", "x")).encode()
    for data, n in ((b"{", runner_template.FDS), (template_asked, runner_template.FDS),
                    (b"{}", 2)):
        assert ask(data, n).startswith("error: ")
    assert settled() == before
