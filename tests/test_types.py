"""mypy over sagetui/ (pyproject's [tool.mypy], pydantic's plugin) and ruff over the code and
the tests (pyproject's [tool.ruff]): no error. The events' exhaustive `match`es rest on mypy: a
new event without an arm is a type error there."""

import subprocess
import sys

from .conftest import ROOT


def test_mypy_finds_no_error_in_sagetui():
    out = subprocess.run([sys.executable, "-m", "mypy", "sagetui"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert "Success: no issues found" in out.stdout, out.stdout[-2000:]


def test_mypy_would_report_a_missing_match_arm(tmp_path):
    """The check above can fail: a display whose match lacks an event's arm is an error."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from sagetui.core import events as ev\n\n\n"
        "def show(e: ev.Event) -> None:\n"
        "    match e:\n"
        "        case ev.Hello():\n"
        "            pass\n"
        "        case _:\n"
        "            ev.unexpected(e)\n")
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", str(probe)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 1 and "unexpected" in out.stdout, out.stdout[-2000:]


def test_ruff_finds_nothing() -> None:
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "sagetui", "tests",
                          "benchmarks"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
