"""End to end in a real terminal: `sagetui` in tmux at 160x48 as over SSH (TERM=xterm-256color,
no COLORTERM), run, wait for a round, export the JSON (key + confirm), quit, then read the
screen and the exported file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sagetui.core.report.io import load_report

from .conftest import ROOT

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")]


class Tmux:
    """A private tmux server (its own socket), so nothing else's sessions are touched."""

    def __init__(self, name: str) -> None:
        self.socket = f"sagetui-e2e-{os.getpid()}-{name}"
        self.target = name

    def __call__(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                             capture_output=True,
                             text=True, timeout=20, check=False)
        return out.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", self.target)

    def keys(self, *keys: str) -> None:
        self("send-keys", "-t", self.target, *keys)

    def start_console(self, cwd: Path, args: str, env: str = "") -> None:
        """`sagetui ARGS` in a new 160x48 pane. tmux may create the pane at 80x24 and resize it
        a moment later, and the pane's shell may have exported COLUMNS/LINES from that first
        size (Python prefers them to the tty's): wait for the real size and drop them, so that
        the console paints at 160x48."""
        command = (f"while [ \"$(stty size)\" != '48 160' ]; do sleep 0.05; done; "
                   f"cd {cwd} && env -u COLORTERM -u COLUMNS -u LINES TERM=xterm-256color "
                   f"{env} PYTHONPATH={ROOT} {sys.executable} -m sagetui.cli.main {args}; "
                   f"echo SAGETUI-EXIT=$?; sleep 60")
        self("new-session", "-d", "-s", self.target, "-x", "160", "-y", "48", command)

    def wait_for(self, needle: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if needle in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{needle!r} never appeared; the screen:\n{self.screen()}")

    def export_json_and_quit(self) -> str:
        """e, the default path accepted, then q (the run exported: no question); the prompt's
        screen."""
        self.keys("e")
        prompt = self.wait_for("Export the report JSON to:", timeout=10)
        self.keys("Enter")
        self.wait_for("Wrote the report JSON", timeout=10)
        self.keys("q")
        self.wait_for("SAGETUI-EXIT=0", timeout=15)
        return prompt


def test_run_export_and_quit_in_tmux(tmp_path: Path) -> None:
    tmux = Tmux("console")
    tmux.start_console(tmp_path, "--heads 2 --q-len 256 --head-dim 64 --rounds 2 --iterations 3 "
                                 f"--warmup 1 --recovery-dir {tmp_path / 'recovery'}")
    try:
        tmux.wait_for("press r to run", timeout=30)
        tmux.keys("r")
        screen = tmux.wait_for("COMPLETE", timeout=60)  # both rounds done
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


def _pids_of(pattern: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


@pytest.mark.parametrize("sig", ["HUP", "TERM", "drop"])
def test_a_dying_console_keeps_what_was_measured(tmp_path: Path, sig: str) -> None:
    """SIGHUP, SIGTERM, or the terminal itself gone (tmux kills the pane: the pty closes and
    the console gets SIGHUP, as when an SSH connection drops) mid-run: the runner stops, the
    rounds measured so far are in the recovery file, `view --recover` finds it, and the
    console exits."""
    tmux = Tmux(f"dying-{sig}")
    recovery = tmp_path / "recovery"
    marker = f"sagetui-dying-{os.getpid()}-{sig}"
    command = (f"cd {tmp_path} && env -u COLORTERM TERM=xterm-256color PYTHONPATH={ROOT} "
               f"SAGETUI_TEST_MARK={marker} {sys.executable} -m sagetui.cli.main "
               f"--heads 2 --q-len 256 --head-dim 64 --rounds 500 --iterations 3 --warmup 1 "
               f"--recovery-dir {recovery}; echo SAGETUI-EXIT=$?; sleep 60")
    tmux("new-session", "-d", "-s", tmux.target, "-x", "120", "-y", "40", command)
    try:
        tmux.wait_for("press r to run", timeout=30)
        tmux.keys("r")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(recovery.glob("*.json")):
            time.sleep(0.1)  # the first round's autosave
        time.sleep(0.5)
        console = [p for p in _pids_of(f"{sys.executable} -m sagetui.cli.main")
                   if marker in Path(f"/proc/{p}/environ").read_bytes().decode(errors="ignore")]
        assert len(console) == 1
        runners = [p for p in _pids_of("sagetui.runner")
                   if marker in Path(f"/proc/{p}/environ").read_bytes().decode(errors="ignore")]
        assert runners
        if sig == "drop":
            tmux("kill-server")
        else:
            subprocess.run(["kill", f"-{sig}", str(console[0])], check=True)
            tmux.wait_for("SAGETUI-EXIT=1", timeout=15)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and Path(f"/proc/{console[0]}").exists() and \
                "Z" not in Path(f"/proc/{console[0]}/stat").read_text().split()[2]:
            time.sleep(0.1)
        assert not Path(f"/proc/{console[0]}").exists() or \
            "Z" in Path(f"/proc/{console[0]}/stat").read_text().split()[2], "console still up"
        for pid in runners:  # no runner outlives the console
            assert not Path(f"/proc/{pid}").exists() or \
                "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
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
    """Issue 15's "must hold": `sagetui` (the embedded CPU default), the key the footer shows
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
        tmux.wait_for(f"here: {place} ", timeout=10)
        tmux("send-keys", "-t", tmux.target, "-l", text)
        tmux.wait_for(then, timeout=10)

    try:
        tmux.wait_for("press r to run", timeout=30)
        tmux.wait_for("E Edit run", timeout=10)  # the footer names the editor's key
        tmux.keys("E")
        tmux.wait_for("Edit the next run", timeout=10)
        # the focus starts in q len; six fields back is "add NAME=SPEC"
        tmux.keys(*["BTab"] * 6)
        field("add a variant", "slow=reference[slowdown=1.5]", "slow=reference[slowdown=1.5]")
        tmux.keys("Enter")  # added: the command line names both variants
        tmux.wait_for("--variant reference --variant 'slow=reference[slowdown=1.5]'", timeout=10)
        tmux.keys(*["Tab"] * 6)  # Browse, Add, batch, heads, kv heads, q len
        field("q len", "256", "--q-len 256")
        tmux.keys(*["Tab"] * 7)  # kv len, head dim, dtype, layout, inputs, warm-up, rounds
        field("rounds", "2", "--rounds 2")
        tmux.keys("Tab")
        field("iterations", "3", "--iterations 3")
        tmux.keys("Enter")  # apply
        tmux.wait_for("shape 1x256x6x128", timeout=30)  # applied: the header has the new shape
        tmux.keys("r")
        screen = tmux.wait_for("COMPLETE", timeout=60)
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
