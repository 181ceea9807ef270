"""What a finished sweep prints and writes (`sagetui sweep`, its Slurm parts and merge): the
table, the crossovers and the largest fit on stdout, then every output file."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sagetui.cli.errors import stdout_console
from sagetui.cli.outputs import MakeText, say
from sagetui.cli.run import outputs_kept, write_outputs
from sagetui.core import variant_facts
from sagetui.core.report.model import Report
from sagetui.core.run.status import exit_status


def sweep_table(report: Report) -> Table:
    """A row per point and variant; its columns are core/variant_facts.py's SWEEP_MD facts, as
    in the sweep's Markdown."""
    sw = report.sweep
    assert sw is not None
    cols = variant_facts.columns(variant_facts.SWEEP_MD, [v for p in sw.points
                                                          for v in p.variants])
    blank = [""] * (len(cols) - 1)
    t = Table(title=f"sagetui sweep: {report.status}, {len(sw.points)} points, "
                    f"{sw.rounds} rounds x {sw.iterations} iterations")
    t.add_column("point")
    t.add_column("backend")
    for f in cols:
        t.add_column(f.header(), justify="left" if f.left else "right")
    for p in sw.points:
        label = f"{p.x} {p.group}"
        if not p.variants:
            t.add_row(label, "-", f"failed: {p.error}", *blank)
        for v in p.variants:
            t.add_row(label, v.name, *(variant_facts.cells(v, cols) if v.status == "ok"
                                       else (f"failed: {v.error}", *blank)))
    return t


def finish_sweep(report: Report, args: argparse.Namespace, err: Console, recovery) -> int:
    """The table, crossovers and largest fit on stdout, then every output written."""
    out = stdout_console()
    say(out, sweep_table(report))
    assert report.sweep is not None
    from sagetui.core.sweep.export import noisy_note

    if note := noisy_note(report.sweep.points):
        say(out, escape(note))
    for x in report.sweep.crossovers:
        what = "kernel" if x.metric == "kernel_tops" else "end-to-end"
        say(out, escape(f"{what} crossover ({x.group}): {x.after} overtakes {x.before} at "
                         f"{report.sweep.x_axis} ~ {x.x:.0f} (between {x.x_low} and "
                         f"{x.x_high})"))
    if report.sweep.largest_fit:
        say(out, escape(report.sweep.largest_fit.note))
    from sagetui.core.sweep.export import to_svg

    svg: list[tuple[str, MakeText]] = [(args.svg, lambda: to_svg(report))] if args.svg else []
    if not outputs_kept(write_outputs(report, args, err, svg, recovery), recovery, err):
        return 1
    return exit_status(report.status, len(report.faults or []))
