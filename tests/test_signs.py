"""One sign convention across the tables a user reads: + = faster, as run and compare say it,
and each table says so. A swap's table once said "step change %" with + = slower, beside run's
and compare's "+ = faster"."""

from __future__ import annotations

import io

from rich.console import Console

from sagetui.cli.swap import swap_table
from sagetui.core.report.io import load_report
from sagetui.core.swap import view

from .conftest import SAMPLES, TWO_BUILDS, VIDEO_CALL_PHASES

SWAP = SAMPLES / "h200_swap_blocks.json"  # every arm slower than the unchanged program's


def text(*renderables) -> str:
    out = Console(file=io.StringIO(), width=250, color_system=None)
    out.print(*renderables)
    return out.file.getvalue()


def test_a_swap_says_a_slower_arm_with_a_minus_as_run_and_compare_do() -> None:
    report = load_report(SWAP)
    s = report.swap
    f = {x.arm: x for x in s.figures}["sm89"]
    assert f.step.state == "SLOWER" and f.step_change_percent > 0  # its time grew
    names = [n for n, _ in view.COLUMNS]
    row = dict(zip(names, next(r for r in view.rows(s) if r[0] == "sm89"), strict=True))
    assert row["step faster %"] == f"{f.step.estimate_percent:+.1f}" == "-55.0"
    assert row["95% CI"] == "[-55.5, -54.5]"
    assert float(row["attn faster %"]) < 0
    printed = text(swap_table(report)) + "\n".join(view.notes(report))
    assert "+ = faster" in printed and "+ = slower" not in printed
    assert "change %" not in printed


def test_every_compare_table_says_plus_is_faster(cli_here) -> None:
    for pair in ((SWAP, SWAP), (SAMPLES / "h200_sweep.json",) * 2,
                 (VIDEO_CALL_PHASES, TWO_BUILDS)):
        out = cli_here("compare", *pair)
        assert out.returncode == 0, out.stderr
        assert "+ = faster" in out.stdout and "+ = slower" not in out.stdout, out.stdout
    swaps = cli_here("compare", SWAP, SWAP).stdout
    assert "B faster than A %" in swaps and "B step faster % [95% CI]" in swaps


def test_a_replays_tables_say_their_sign(replayed_workload, capsys) -> None:
    """`sagetui run --workload`'s tables (speedup %, verdicts) say + = faster as the others."""
    from sagetui.cli.workload import print_workload

    report = load_report(replayed_workload)
    print_workload(report)
    printed = capsys.readouterr().out
    assert "speedup % and verdicts: + = faster than the baseline, ref" in printed
    assert "+ = slower" not in printed
