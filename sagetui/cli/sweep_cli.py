"""`sagetui sweep`: TOPS against sequence length per backend, points streaming in."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sagetui.core import events as ev
from sagetui.core.io import atomic_write_text
from sagetui.core.report import Report
from sagetui.core.sweep import plan
from sagetui.session.sweep import SweepSession

from .errors import UsageError, stdout_console
from .options import check_outputs
from .run import Progress, _say, report_write_failures, run_session, write_outputs
from .runner_lines import RunnerLines
from .sweep_options import sweep_config


class SweepProgress(Progress):
    """The common log lines (a runner's prefixed with its label), and with --gpus one status
    line per runner kept at the bottom of a terminal."""

    def __init__(self, console: Console, quiet: bool) -> None:
        super().__init__(console, quiet)
        self.runners = RunnerLines(console)

    def _show(self, e: ev.Event) -> None:
        if isinstance(e, ev.FromRunner) and not self.quiet:
            self.runners.update(e)
        if isinstance(e, ev.Finished):
            self.runners.stop()
        super()._show(e)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def sweep_table(report: Report) -> Table:
    from sagetui.core.sweep_export import accuracy_text, p50_text

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
            t.add_row(label, v.name, p50_text(v), f"{v.kernel_tops:.3f}", f"{v.e2e_tops:.3f}",
                      _pct(v.kernel_share_of_peak), accuracy_text(v.accuracy))
    return t


def cmd_sweep(args: argparse.Namespace) -> int:
    from .node_options import slots_from_args

    config, axes = sweep_config(args)
    # a job's GPUs are the ones Slurm gives it, on its node: not parsed on this (login) node
    slots = None if args.slurm else slots_from_args(args)
    if args.console:
        if slots or args.slurm:
            raise UsageError("--console runs one runner: drop --gpus/--slurm, or --console")
        return _console(args, config, axes)
    check_outputs(args, ("json", "csv", "markdown", "svg"))
    err = Console(stderr=True, soft_wrap=True)
    if args.slurm:
        from .slurm_cli import cmd_slurm_sweep

        return cmd_slurm_sweep(args, config, axes, err)
    err.print(f"sweep: {len(plan(config.shape, axes))} points x "
              f"{len(config.variants)} variants"
              + (f" on {len(slots)} runner{'s' * (len(slots) > 1)} "
                 f"({', '.join(s.label for s in slots)})"
                 if slots else ""))
    report, recovery = run_session(
        config, args, err, make_session=_maker(axes, slots), progress=SweepProgress)
    return finish_sweep(report, args, err, recovery)


def _maker(axes, slots):
    if not slots:
        return lambda cfg, **kw: SweepSession(cfg, axes, **kw)
    from sagetui.session.pool import PoolSweep

    return lambda cfg, **kw: PoolSweep(cfg, axes, slots, **kw)


def finish_sweep(report: Report, args: argparse.Namespace, err: Console, recovery) -> int:
    """The table, crossovers and largest fit on stdout, then every output written."""
    out = stdout_console()
    _say(out, sweep_table(report))
    assert report.sweep is not None
    for x in report.sweep.crossovers:
        what = "kernel" if x.metric == "kernel_tops" else "end-to-end"
        _say(out, escape(f"{what} crossover ({x.group}): {x.after} overtakes {x.before} at "
                         f"{report.sweep.x_axis} ~ {x.x:.0f} (between {x.x_low} and "
                         f"{x.x_high})"))
    if report.sweep.largest_fit:
        _say(out, escape(report.sweep.largest_fit.note))
    failed = write_outputs(report, args, err)
    if args.svg:
        from sagetui.core.sweep_export import to_svg

        try:
            atomic_write_text(args.svg, to_svg(report), overwrite=True)
            _say(err, f"wrote {escape(args.svg)}")
        except OSError as exc:
            failed.append(f"{args.svg}: {exc.strerror or exc}")
    if failed:
        report_write_failures(failed, recovery, err)
        return 1
    return 0 if report.status == "complete" and not report.faults else 1


def _console(args: argparse.Namespace, config, axes) -> int:
    """The console with its runs made sweeps: the Sweep tab shows the points as they finish;
    its exports (e c m) write the sweep report, CSV and Markdown."""
    from sagetui.tui.app import SageTUI

    from .options import recovery_file

    app = SageTUI(config=config, refresh_hz=getattr(args, "refresh", 2.0),
                  theme_name=args.theme, recovery_path=recovery_file(args), sweep_axes=axes)
    app.run(mouse=not args.no_mouse)
    return app.return_code or 0
