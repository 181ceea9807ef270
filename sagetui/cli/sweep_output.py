"""What a finished sweep prints and writes (`sagetui sweep`, its Slurm parts and merge): the
table, the crossovers and the largest fit on stdout, then every output file."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sagetui.cli.errors import stdout_console
from sagetui.cli.outputs import MakeText
from sagetui.cli.run import _say, outputs_kept, write_outputs
from sagetui.core.report.model import Report
from sagetui.core.run.status import exit_status


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def sweep_table(report: Report) -> Table:
    from sagetui.core.sweep.export import accuracy_text, p50_cell

    sw = report.sweep
    assert sw is not None
    t = Table(title=f"sagetui sweep: {report.status}, {len(sw.points)} points, "
                    f"{sw.rounds} rounds x {sw.iterations} iterations")
    for col in ("point", "backend", "p50 ms ± CI", "kernel TOPS", "e2e TOPS", "share of peak",
                "accuracy"):
        t.add_column(col, justify="left" if col in ("point", "backend", "accuracy") else "right")
    for p in sw.points:
        label = f"{p.x} {p.group}"
        if not p.variants:
            t.add_row(label, "-", f"failed: {p.error}", "", "", "", "")
        for v in p.variants:
            if v.status != "ok":
                t.add_row(label, v.name, f"failed: {v.error}", "", "", "", "")
                continue
            t.add_row(label, v.name, p50_cell(v), f"{v.kernel_tops:.3f}", f"{v.e2e_tops:.3f}",
                      _pct(v.kernel_share_of_peak), accuracy_text(v.accuracy))
    return t


def finish_sweep(report: Report, args: argparse.Namespace, err: Console, recovery) -> int:
    """The table, crossovers and largest fit on stdout, then every output written."""
    out = stdout_console()
    _say(out, sweep_table(report))
    assert report.sweep is not None
    from sagetui.core.sweep.export import noisy_note

    if note := noisy_note(report.sweep.points):
        _say(out, escape(note))
    for x in report.sweep.crossovers:
        what = "kernel" if x.metric == "kernel_tops" else "end-to-end"
        _say(out, escape(f"{what} crossover ({x.group}): {x.after} overtakes {x.before} at "
                         f"{report.sweep.x_axis} ~ {x.x:.0f} (between {x.x_low} and "
                         f"{x.x_high})"))
    if report.sweep.largest_fit:
        _say(out, escape(report.sweep.largest_fit.note))
    from sagetui.core.sweep.export import to_svg

    svg: list[tuple[str, MakeText]] = [(args.svg, lambda: to_svg(report))] if args.svg else []
    if not outputs_kept(write_outputs(report, args, err, svg), recovery, err):
        return 1
    return exit_status(report.status, len(report.faults or []))
