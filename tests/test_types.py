"""mypy over sagetui/ (pyproject's [tool.mypy], pydantic's plugin) and ruff over the code and
the tests (pyproject's [tool.ruff]): no error. The events' exhaustive `match`es rest on mypy: a
new event without an arm is a type error there."""

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

PROBE = (  # a display whose match lacks an event's arm: mypy must call it an error
    "from sagetui.core import events as ev\n\n\n"
    "def show(e: ev.Event) -> None:\n"
    "    match e:\n"
    "        case ev.Hello():\n"
    "            pass\n"
    "        case _:\n"
    "            ev.unexpected(e)\n")


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One mypy over sagetui/ and the probe beside it (one analysis of sagetui's modules,
    where two runs each paid for it): both tests below read it."""
    probe = tmp_path_factory.mktemp("mypy") / "mypy_probe.py"
    probe.write_text(PROBE)
    out = subprocess.run([sys.executable, "-m", "mypy", "sagetui", str(probe)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    return out, probe


def _error_lines(out: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in out.stdout.splitlines() if ": error: " in line]


def _in_probe(line: str) -> bool:
    """A line of the probe's: mypy's cache keeps a module's errors under the path it had when
    they were found (an earlier session's tmp path), so the probe is known by its file name
    (no file in sagetui/ has it)."""
    return line.split(":", 1)[0].endswith("/mypy_probe.py")


def test_mypy_finds_no_error_in_sagetui(mypy_run):
    out, _ = mypy_run
    assert out.returncode in (0, 1), out.stdout[-6000:] + out.stderr[-2000:]  # 2: mypy failed
    in_sagetui = [line for line in _error_lines(out) if not _in_probe(line)]
    assert in_sagetui == [], out.stdout[-6000:] + out.stderr[-2000:]
    # what is left is the probe's error alone (the summary counts every file mypy checked)
    assert "Found 1 error in 1 file" in out.stdout, out.stdout[-2000:]


def test_mypy_would_report_a_missing_match_arm(mypy_run):
    """The check above can fail: a display whose match lacks an event's arm is an error."""
    out, _ = mypy_run
    (error,) = _error_lines(out)
    assert out.returncode == 1 and _in_probe(error) and "unexpected" in error, \
        out.stdout[-2000:]


def test_ruff_finds_nothing() -> None:
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "sagetui", "tests",
                          "benchmarks"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
