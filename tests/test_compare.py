"""`sagetui compare`: the comparison in core (no console imported), a verdict of B against A
where both runs have rounds, the refusal rule, the gates, sweeps point by point and profiles
phase by phase."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sagetui.core.compare.build import Comparison, compare_reports
from sagetui.core.report.io import load_report

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_results"
REF_000 = SAMPLES / "000_a7d5760a8f7ea9fe.json"
REF_001 = SAMPLES / "001_c3fd8b591d904547.json"
SM89_VARIANTS = SAMPLES / "h200_sm89_variants.json"
SM89_TWICE = SAMPLES / "h200_sm89_same_build_twice.json"
SM89 = SAMPLES / "h200_sm89_reference_shape.json"
SM90 = SAMPLES / "h200_sm90_reference_shape.json"


def compared(*paths: Path) -> Comparison:
    return compare_reports([(p.name, load_report(p)) for p in paths])


def column(c: Comparison, title: str, variant: str, phase: str = "total") -> str:
    """The cell of `title` on the row of `variant` (its label holds the name) and `phase`."""
    i = [col.title for col in c.columns].index(title)
    row = next(line for line in c.lines
               if variant in line.cells[0].split(" / ") and line.cells[1] == phase)
    return row.cells[i]


def test_sagetui_compare_imports_no_console() -> None:
    """The command's path imports neither textual nor any of sagetui.tui: the comparison is
    core's (core/compare), on Report objects."""
    code = ("import io, sys, contextlib\n"
            "from sagetui.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['compare', {str(SM89_VARIANTS)!r}, {str(SM89_TWICE)!r}])\n"
            "print(rc, 'textual' in sys.modules,\n"
            "      sorted(m for m in sys.modules if m.startswith('sagetui.tui')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == "0 False []", out.stdout + out.stderr


def test_a_report_against_itself_is_same_with_an_interval_around_zero() -> None:
    c = compared(SM89_VARIANTS, SM89_VARIANTS)
    cell = column(c, "B vs A: verdict % [95% CI]", "lineinfo")
    assert cell.startswith("SAME +0.00 [-"), cell
    assert column(c, "B faster %", "lineinfo") == "+0.00"
    assert {d.what for d in c.deltas} == {"stock", "lineinfo"}


def test_the_cross_verdict_needs_rounds_on_both_sides() -> None:
    """000 is a phase breakdown without rounds: its rows have no verdict against A."""
    c = compared(SM89, SM90)
    assert column(c, "B vs A: verdict % [95% CI]", "sage2-sm89").startswith("FASTER ")
    c = compared(REF_000, REF_001)
    assert column(c, "B vs A: verdict % [95% CI]", "baseline") == ""
