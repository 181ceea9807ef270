"""A new user's first try, as the README's "Your first minute" tells it, in a real terminal at
80 x 24 and 160 x 50: `sagetui`, `?` for the keys, `r` to run, the run editor with its way
out in sight, the Phases tab, `e` to export the report, `q`; then the README's commands on
what was made: `sagetui check`, and a mistyped backend answered with what was meant."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT
from .test_e2e_tmux import (  # noqa: F401  (pytestmark: tmux needed, e2e, loaded)
    RUN_S,
    STEP_S,
    Tmux,
    pytestmark,
    until,
)


@pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_first_try_by_the_readme(tmp_path: Path, size: tuple[int, int]) -> None:
    tmux = Tmux(f"first-{size[0]}")
    # the README's `sagetui`, at 2 rounds of the tests' tiny shape so that the test stays
    # short (nothing here is about the shape: the README's default shape is timed whole by
    # tests/test_cli.py's default run, and opened in the console by test_e2e_tmux's editor test)
    tmux.start_console(tmp_path, "--heads 2 --q-len 256 --head-dim 64 --rounds 2 "
                       f"--recovery-dir {tmp_path / 'recovery'}", size=size)
    try:
        screen = tmux.wait_ready()
        footer = screen.rstrip("\n").split("\n")[-1]
        for key in ("r Run/Stop", "E Edit", "? Help", "q Quit", "Export", "o Open"):
            assert key in footer, footer
        tmux.keys("?")
        tmux.wait_for("Export JSON report")  # every key, the exports among them
        tmux.keys("Escape")
        until(lambda: "sagetui keys" not in tmux.screen(), STEP_S, "the help closed")
        tmux.keys("r")
        screen = tmux.wait_for("COMPLETE", timeout=RUN_S)
        assert "2/2 rounds" in screen
        tmux.keys("E")
        # the dialog is painted top down: its buttons, at the bottom, come last
        editor = tmux.wait_for("Apply (enter)")
        assert "Edit the next run" in editor and "Cancel (esc)" in editor  # in sight
        tmux.keys("Escape")
        until(lambda: "Edit the next run" not in tmux.screen(), STEP_S, "the editor closed")
        tmux.keys("4")
        # the table is painted top down: its last row, the total, comes last
        phases = tmux.wait_for("total (one call)")
        assert "mainloop" in phases
        tmux.keys("e")
        tmux.wait_for("Export the report JSON to:")
        tmux.keys("Enter")
        tmux.wait_for("Wrote the report JSON")
        tmux.keys("q")
        tmux.wait_for("SAGETUI-EXIT=0")
    finally:
        tmux("kill-server")
    (report,) = tmp_path.glob("reference_*.json")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    check = subprocess.run([sys.executable, "-m", "sagetui", "check", str(report)],
                           capture_output=True, text=True, timeout=120, env=env)
    assert check.returncode == 0 and ": ok: " in check.stdout and \
        check.stdout.strip().endswith("taken as recorded"), check  # and what it recomputed
    if size != (80, 24):
        return  # the mistyped backend's answer knows no terminal size: asked once, at 80 x 24
    typo = subprocess.run([sys.executable, "-m", "sagetui", "run", "--backend", "sage2-sm98"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert typo.returncode == 2 and len(typo.stderr.strip().splitlines()) == 1
    assert "did you mean sage2-sm90" in typo.stderr
