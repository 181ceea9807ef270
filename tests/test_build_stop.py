"""A build stops clean (docs/faults.md, "A stopped or odd build"): real `sagetui build` and `sagetui
run ... @src:` processes, real signals, the tests' tiny tree (build_tree.py) with a setup.py that
says when it has started and waits on a FIFO (HOOKS). Each test waits on conditions (the marker
setup.py writes, a line on stderr, a pid gone), never a fixed sleep, and checks that no process and
no staging folder is left."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sagetui.core.paths import pid_alive

from .build_tree import DEAF, GATE, STARTED, write_tree
from .conftest import TINY_ARCH

pytestmark = pytest.mark.skipif(shutil.which("c++") is None or shutil.which("ninja") is None,
                                reason="needs a C++ compiler and ninja")
TIMEOUT_S = 120  # a condition not met by then is a failure (a loaded machine is slow)


def wait_for(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


_started: list[subprocess.Popen[str]] = []  # every sagetui a test started: none may outlive it


class Sagetui:
    """A `python -m sagetui ...` process, its stderr read line by line as it comes."""

    def __init__(self, argv: list[str], xdg: Path) -> None:
        env = dict(os.environ, XDG_CACHE_HOME=str(xdg), XDG_STATE_HOME=str(xdg / "state"),
                   TORCH_CUDA_ARCH_LIST=TINY_ARCH)  # `run` has no --arch
        self.proc = subprocess.Popen([sys.executable, "-m", "sagetui", *argv], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err: list[str] = []
        _started.append(self.proc)

    def wait_line(self, part: str) -> str:
        """The first stderr line holding `part` (read until it comes)."""
        assert self.proc.stderr is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + TIMEOUT_S
        while not any(part in ln for ln in self.err):
            if time.monotonic() > deadline or not sel.select(deadline - time.monotonic()):
                pytest.fail(f"no line with {part!r} on stderr: {self.err}")
            line = self.proc.stderr.readline()
            if not line:
                pytest.fail(f"stderr ended without {part!r}: {self.err}")
            self.err.append(line.rstrip("\n"))
        return next(ln for ln in self.err if part in ln)

    def finish(self) -> tuple[int, str, list[str]]:
        out, err = self.proc.communicate(timeout=TIMEOUT_S)
        return self.proc.returncode, out, self.err + err.splitlines()


@pytest.fixture
def hooked(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(a tree whose setup.py runs the tests' hooks, XDG_CACHE_HOME); on leaving, every
    process the tree's setup.py said it started is gone."""
    tree = write_tree(tmp_path / "tree", hooks=True)
    yield tree, tmp_path / "xdg"
    left = [p.pid for p in _started if p.poll() is None] + \
        [pid for pid in started_pids(tree) if pid_alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    for p in _started:
        p.communicate()
    _started.clear()
    assert not left, f"processes {left} outlived the test"


def started_pids(tree: Path) -> list[int]:
    """setup.py's pid and its child's (0: none), from the marker it writes when it starts."""
    marker = tree / STARTED
    return [int(p) for p in marker.read_text().split() if int(p)] if marker.exists() else []


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux: /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def running(pid: int) -> bool:
    """Alive and not a zombie (a child its blocked parent has not reaped yet is one)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def builds(xdg: Path) -> Path:
    return xdg / "sagetui" / "builds"


def staging(xdg: Path) -> list[Path]:
    return sorted(builds(xdg).glob(".staging-*")) if builds(xdg).is_dir() else []


def entries(xdg: Path) -> list[Path]:
    return sorted(builds(xdg).glob("[0-9a-f]*")) if builds(xdg).is_dir() else []


def build_argv(tree: Path) -> list[str]:
    return ["build", str(tree), "--arch", TINY_ARCH, "--backend", "sage2-sm89"]


def blocked_build(tree: Path, xdg: Path, argv: list[str] | None = None) -> Sagetui:
    """A sagetui whose build is inside setup.py, held there on the FIFO, with a child of
    setup.py beside it in the build's group."""
    os.mkfifo(tree / GATE)
    (tree / "spawn-child").touch()
    started = Sagetui(argv or build_argv(tree), xdg)
    wait_for(lambda: len(started_pids(tree)) == 2 or started.proc.poll() is not None,
             "setup.py to start")
    assert started.proc.poll() is None, started.finish()
    return started


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_sagetui_build_ends_the_build_and_its_staging(hooked, sig) -> None:
    tree, xdg = hooked
    build = blocked_build(tree, xdg)
    pids = started_pids(tree)
    assert len(staging(xdg)) == 1
    build.proc.send_signal(sig)
    rc, out, err = build.finish()
    assert rc == (130 if sig == signal.SIGINT else 128 + sig), err
    # one line after the progress: what it stopped, and that nothing was cached
    assert err[-1].startswith(f"sagetui: {signal.Signals(sig).name}: stopped the build of "), err
    assert "nothing of it was cached" in err[-1] and "Traceback" not in "\n".join(err)
    assert out == ""
    assert not any(pid_alive(pid) for pid in pids)  # setup.py and its child: waited for
    assert staging(xdg) == [] and entries(xdg) == []


def test_a_second_signal_kills_a_build_deaf_to_the_first(hooked) -> None:
    """setup.py ignores SIGTERM: the first SIGTERM ends the rest of its group (its child) and
    sagetui waits for setup.py; a second one kills the group at once."""
    tree, xdg = hooked
    (tree / DEAF).touch()
    build = blocked_build(tree, xdg)
    setup_pid, kid = started_pids(tree)
    build.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: not running(kid), "setup.py's child to end on the first SIGTERM")
    assert pid_alive(setup_pid) and build.proc.poll() is None  # waiting for setup.py
    build.proc.send_signal(signal.SIGTERM)
    rc, _, err = build.finish()
    assert rc == 128 + signal.SIGTERM and err[-1].startswith("sagetui: SIGTERM: stopped"), err
    assert not pid_alive(setup_pid) and staging(xdg) == []


def test_sigterm_to_run_mid_build_is_one_line_and_its_status(hooked, started_runners) -> None:
    tree, xdg = hooked
    run = blocked_build(tree, xdg, ["run", "--variant", f"mine=sage2-sm89@src:{tree}",
                                    "--device", "cpu", "--json", str(tree.parent / "r.json")])
    pids = started_pids(tree) + children(run.proc.pid)  # setup.py's, and the runner run starts
    assert len(set(pids)) == 3
    run.proc.send_signal(signal.SIGTERM)
    rc, _, err = run.finish()
    assert rc == 128 + signal.SIGTERM, err
    assert err[-1].startswith("sagetui: SIGTERM: stopped the build of ")
    assert err[-1].endswith("the run never started")
    assert not any(pid_alive(pid) for pid in pids)
    assert staging(xdg) == [] and not (tree.parent / "r.json").exists()


def test_staging_of_a_killed_sagetui_is_swept_by_the_next_build(hooked) -> None:
    tree, xdg = hooked
    build = blocked_build(tree, xdg)
    pids = started_pids(tree)
    [left] = staging(xdg)
    build.proc.kill()  # SIGKILL: nothing can be forwarded or removed
    build.finish()
    # setup.py ends its own group when its parent dies (PR_SET_PDEATHSIG)
    wait_for(lambda: not any(pid_alive(pid) for pid in pids), "the build's processes to end")
    assert left.exists()
    (tree / GATE).unlink()
    (tree / "spawn-child").unlink()
    again = Sagetui(build_argv(tree), xdg)
    rc, out, err = again.finish()
    assert rc == 0, err
    swept = [ln for ln in err if "staging folder" in ln]
    assert len(swept) == 1, err
    assert f"pid {build.proc.pid}" in swept[0] and "removed 1 staging folder" in swept[0]
    assert not left.exists() and staging(xdg) == [] and len(entries(xdg)) == 1
    assert out.startswith("sage2-sm89@")


def test_a_second_build_of_the_tree_waits_for_the_first(hooked) -> None:
    tree, xdg = hooked
    first = blocked_build(tree, xdg)
    second = Sagetui(build_argv(tree), xdg)
    line = second.wait_line("waiting")
    assert f"another build of {tree} is using its build folder (pid {first.proc.pid})" in line
    assert second.proc.poll() is None
    fd = os.open(tree / GATE, os.O_WRONLY | os.O_NONBLOCK)  # setup.py holds it open to read
    os.close(fd)  # end of file: the first build goes on
    rc1, out1, err1 = first.finish()
    rc2, out2, err2 = second.finish()
    assert rc1 == 0 and rc2 == 0, (err1, err2)
    assert out1 == out2  # the same entry: the second found what the first built
    assert any("built in" in ln for ln in err1) and any("cache hit" in ln for ln in err2)
    assert staging(xdg) == [] and len(entries(xdg)) == 1


def test_a_signal_while_waiting_for_the_tree_ends_the_wait(hooked) -> None:
    tree, xdg = hooked
    first = blocked_build(tree, xdg)
    second = Sagetui(build_argv(tree), xdg)
    second.wait_line("waiting")
    second.proc.send_signal(signal.SIGTERM)
    rc2, _, err2 = second.finish()
    assert rc2 == 128 + signal.SIGTERM and "stopped waiting for another build" in err2[-1]
    first.proc.send_signal(signal.SIGTERM)
    rc1, _, _ = first.finish()
    assert rc1 == 128 + signal.SIGTERM and staging(xdg) == []
