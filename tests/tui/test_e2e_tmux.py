"""End to end in a real terminal: `sagetui` in tmux at 160x48 as over SSH (TERM=xterm-256color,
no COLORTERM), run, wait for a round, export the JSON (key + confirm), quit, then read the
screen and the exported file.

Every wait is on a condition (the screen's contents, a file, a process), never a fixed sleep, and
a layout is read only once the pane has its size and the console has drawn at that size: these
tests also pass on a loaded machine (`pytest --busy-loops 2`, see tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from sagetui.core.report.io import load_report

from .conftest import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.loaded,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")]

T = TypeVar("T")
# A wait returns as soon as its condition holds: the limits are generous so that a loaded
# machine (a console's start takes seconds there, not half of one) fails none of them.
START_S = 90.0  # from the pane's creation to a console drawn at the pane's size
STEP_S = 30.0  # a key's answer on screen
RUN_S = 180.0  # a tiny run of a few rounds, or a console's exit


def until(predicate: Callable[[], T], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


class Tmux:
    """A private tmux server (its own socket), so nothing else's sessions are touched."""

    def __init__(self, name: str) -> None:
        self.socket = f"sagetui-e2e-{os.getpid()}-{name}"
        self.target = name
        self.size = (160, 48)

    def __call__(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                             capture_output=True,
                             text=True, timeout=60, check=False)
        return out.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", self.target)

    def keys(self, *keys: str) -> None:
        self("send-keys", "-t", self.target, *keys)

    def start_console(self, cwd: Path, args: str, env: str = "",
                      size: tuple[int, int] = (160, 48)) -> None:
        """`sagetui ARGS` in a new pane of `size` (columns, lines). tmux may create the pane at
        80x24 and resize it a moment later, and the pane's shell (or the environment tmux
        inherited) may hold COLUMNS/LINES of another size (Python prefers them to the tty's):
        wait for the real size and drop them, so that the console paints at `size`."""
        self.size = size
        width, height = size
        command = (f"while [ \"$(stty size)\" != '{height} {width}' ]; do sleep 0.05; done; "
                   f"cd {cwd} && env -u COLORTERM -u COLUMNS -u LINES TERM=xterm-256color "
                   f"{env} PYTHONPATH={ROOT} {sys.executable} -m sagetui.cli.main {args}; "
                   f"echo SAGETUI-EXIT=$?; sleep 60")
        self("new-session", "-d", "-s", self.target, "-x", str(width), "-y", str(height),
             command)

    def pane_size(self) -> tuple[int, int] | None:
        out = self("display-message", "-p", "-t", self.target, "#{pane_width} #{pane_height}")
        try:
            width, height = (int(n) for n in out.split())
        except ValueError:
            return None
        return width, height

    def wait_for(self, needle: str, timeout: float = STEP_S) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if needle in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{needle!r} never appeared in {timeout:g} s; the pane "
                             f"{self.pane_size()}, the screen:\n{self.screen()}")

    def drawn_at_size(self) -> str | None:
        """The screen, once the pane has its size and the console has drawn a whole frame at
        it: the tabs on the first line, the footer ("? Help") on the last, and nothing past
        the width (a frame of an earlier size leaves its footer higher up, or its lines cut)."""
        if self.pane_size() != self.size:
            return None
        screen = self.screen()
        lines = screen.rstrip("\n").split("\n")
        if len(lines) != self.size[1] or "1 Overview" not in lines[0] or \
                "Help" not in lines[-1] or sum("Help" in line for line in lines) != 1:
            return None
        return screen

    def wait_ready(self, timeout: float = START_S) -> str:
        """The console up and idle ("press r to run"), drawn at the pane's size."""
        self.wait_for("press r to run", timeout)
        try:
            return until(self.drawn_at_size, timeout, "a frame at the pane's size")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the pane {self.pane_size()}, the screen:\n"
                                 f"{self.screen()}") from None

    def export_json_and_quit(self) -> str:
        """e, the default path accepted, then q (the run exported: no question); the prompt's
        screen."""
        self.keys("e")
        prompt = self.wait_for("Export the report JSON to:")
        self.keys("Enter")
        self.wait_for("Wrote the report JSON")
        self.keys("q")
        self.wait_for("SAGETUI-EXIT=0")
        return prompt


def test_run_export_and_quit_in_tmux(tmp_path: Path) -> None:
    tmux = Tmux("console")
    tmux.start_console(tmp_path, "--heads 2 --q-len 256 --head-dim 64 --rounds 2 --iterations 3 "
                                 f"--warmup 1 --recovery-dir {tmp_path / 'recovery'}")
    try:
        tmux.wait_ready()
        tmux.keys("r")
        screen = tmux.wait_for("COMPLETE", timeout=RUN_S)  # both rounds done
        assert "2/2 rounds" in screen
        assert "fused_mainloop" in screen  # the phase table has data
        assert "telemetry unavailable" in screen
        # no COLORTERM: the console chose the 256-colour theme, and it emits palette colours
        styled = tmux("capture-pane", "-p", "-e", "-t", tmux.target)
        assert "38;5;" in styled and "38;2;" not in styled
        prompt = tmux.export_json_and_quit()
        # a default path, ready to accept, named by backend, shape and dtype
        assert "reference_1x256x2x64_" in prompt and ".json" in prompt
    finally:
        tmux("kill-server")
    exported = list(tmp_path.glob("reference_*.json"))
    assert len(exported) == 1
    report = load_report(exported[0])
    assert report.rounds == 2 and report.status == "complete"
    assert report.samples and len(report.samples["reference"]["total"]) == 2


def _marked(pattern: str, marker: str) -> list[int]:
    """The processes whose command line has `pattern` and whose environment has `marker`."""
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    found = []
    for pid in (int(p) for p in out.stdout.split()):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="ignore")
        except OSError:
            continue  # gone meanwhile
        if marker in environ:
            found.append(pid)
    return found


def _gone(pid: int) -> bool:
    """Ended (a zombie not yet reaped by its parent counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("sig", ["HUP", "TERM", "drop"])
def test_a_dying_console_keeps_what_was_measured(tmp_path: Path, sig: str) -> None:
    """SIGHUP, SIGTERM, or the terminal itself gone (tmux kills the pane: the pty closes and
    the console gets SIGHUP, as when an SSH connection drops) mid-run: the runner stops, the
    rounds measured so far are in the recovery file, `view --recover` finds it, and the
    console exits."""
    tmux = Tmux(f"dying-{sig}")
    recovery = tmp_path / "recovery"
    marker = f"sagetui-dying-{os.getpid()}-{sig}"
    tmux.start_console(tmp_path, "--heads 2 --q-len 256 --head-dim 64 --rounds 500 "
                                 f"--iterations 3 --warmup 1 --recovery-dir {recovery}",
                       # a runner started by the console, its child (not forked by the suite's
                       # runner template: tests/conftest.py)
                       f"SAGETUI_TEST_MARK={marker} SAGETUI_RUNNER_TEMPLATE=", size=(120, 40))
    try:
        tmux.wait_ready()
        tmux.keys("r")
        until(lambda: list(recovery.glob("*.json")), RUN_S, "the first round's autosave")
        (console,) = until(lambda: _marked(f"{sys.executable} -m sagetui.cli.main", marker),
                           STEP_S, "the console's process")
        runners = until(lambda: _marked("sagetui.runner", marker), STEP_S, "the runner")
        if sig == "drop":
            tmux("kill-server")
        else:
            subprocess.run(["kill", f"-{sig}", str(console)], check=True)
            tmux.wait_for("SAGETUI-EXIT=1", timeout=RUN_S)
        until(lambda: _gone(console), RUN_S, "the console to exit")
        assert all(_gone(pid) for pid in runners)  # no runner outlives the console
    finally:
        tmux("kill-server")
    (saved,) = recovery.glob("*.json")
    report = load_report(saved)
    assert report.status == "cancelled" and report.rounds >= 1
    from sagetui.cli.console import view_reports
    from sagetui.cli.main import build_parser

    paths = view_reports(build_parser().parse_args(["view", "--recover", "--recovery-dir",
                                                     str(recovery)]))
    assert [str(p) for p, _ in paths] == [str(saved)]


def test_a_new_user_edits_runs_compares_and_exports_in_tmux(tmp_path: Path) -> None:
    """The console end to end: `sagetui` (the embedded CPU default), the key the footer shows
    opens the run editor; add a second variant, a smaller q-len, 2 rounds of 3 iterations;
    apply, run, read the verdict of the second variant against the baseline, export the JSON.
    (`sdpa` needs CUDA here: the second variant is the reference backend slowed down.)"""
    tmux = Tmux("editor")
    home = tmp_path / "home"
    env = (f"HOME={home} XDG_STATE_HOME={home}/state XDG_CONFIG_HOME={home}/config "
           f"XDG_CACHE_HOME={home}/cache")
    home.mkdir()
    tmux.start_console(tmp_path, f"--recovery-dir {tmp_path / 'recovery'}", env)

    def field(place: str, text: str, then: str) -> None:
        """Once the hint line says the focus is on `place` (tab selected its text), type over
        that field's text and wait for the command line to show it. (Not End and C-u first:
        those are bindings, run after the typed characters when they come this fast.)"""
        tmux.wait_for(f"you are on the {place}")
        tmux("send-keys", "-t", tmux.target, "-l", text)
        tmux.wait_for(then)

    try:
        screen = tmux.wait_ready()
        assert "E Edit" in screen  # the footer names the editor's key
        tmux.keys("E")
        tmux.wait_for("Edit the next run")
        # the focus starts at the top, in the new variant field ("add NAME=SPEC")
        field("new variant field", "slow=reference[slowdown=1.5]",
              "slow=reference[slowdown=1.5]")
        tmux.keys("Enter")  # added: the command line names both variants
        tmux.wait_for("--variant reference --variant 'slow=reference[slowdown=1.5]'")
        tmux.keys(*["Tab"] * 6)  # Browse, Add, batch, heads, kv heads, q len
        field("q len field", "256", "--q-len 256")
        # kv len, seqlens, kv seqlens, head dim, dtype, layout, inputs, warm-up, rounds
        tmux.keys(*["Tab"] * 9)
        field("rounds field", "2", "--rounds 2")
        tmux.keys("Tab")
        field("iterations field", "3", "--iterations 3")
        tmux.keys("Enter")  # apply
        tmux.wait_for("shape 1x256x6x128")  # applied: the header has the new shape
        tmux.keys("r")
        screen = tmux.wait_for("COMPLETE", timeout=RUN_S)
        assert "2/2 rounds" in screen
        verdicts = [line for line in screen.splitlines() if " slow " in line]
        assert any(state in line for line in verdicts
                   for state in ("SLOWER", "FASTER", "SAME", "INCONCLUSIVE")), screen
        tmux.export_json_and_quit()
    finally:
        tmux("kill-server")
    (exported,) = tmp_path.glob("reference_*.json")
    report = load_report(exported)
    assert report.status == "complete" and report.rounds == 2
    assert report.config["shape"]["q_len"] == 256
    assert set(report.samples) == {"reference", "slow"}
    assert all(len(report.samples[n]["total"]) == 2 for n in report.samples)
    assert all(len(r) == 3 for n in report.samples for r in report.samples[n]["total"])
