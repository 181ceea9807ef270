"""`sagetui sweep`: TOPS against sequence length per backend, points streaming in."""

from __future__ import annotations

import argparse

from rich.console import Console

from sagetui.cli.errors import UsageError
from sagetui.cli.outputs import check_outputs
from sagetui.cli.run import Progress, run_session
from sagetui.cli.runner_lines import RunnerLines
from sagetui.cli.sweep_options import sweep_config
from sagetui.cli.sweep_output import finish_sweep
from sagetui.core import events as ev
from sagetui.core.build_facts import LeftOut
from sagetui.core.sweep.plan import plan
from sagetui.session.sweep import SweepSession


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


def cmd_sweep(args: argparse.Namespace) -> int:
    from sagetui.cli.node_options import slots_from_args

    if getattr(args, "seqlens", None):  # a sweep sets the lengths that packed ones fix
        raise UsageError("a sweep sets each point's lengths: --seqlens fixes them (give one "
                         "or the other)")
    # a job's GPUs are the ones Slurm gives it, on its node: not parsed on this (login) node;
    # checked before the variants' sources are built (bad input costs no build)
    slots = None if args.slurm else slots_from_args(args)
    build_failed: dict[str, LeftOut] = {}  # source variants whose build failed: never ran
    config, axes = sweep_config(args, build_failed)
    if args.console:
        if slots or args.slurm:
            raise UsageError("--console runs one runner: drop --gpus/--slurm, or --console")
        return _console(args, config, axes)
    check_outputs(args)
    err = Console(stderr=True, soft_wrap=True)
    if args.slurm:
        from sagetui.cli.slurm_cli import cmd_slurm_sweep

        return cmd_slurm_sweep(args, config, axes, err)
    err.print(f"sweep: {len(plan(config.shape, axes))} points x "
              f"{len(config.variants)} variants"
              + (f" on {len(slots)} runner{'s' * (len(slots) > 1)} "
                 f"({', '.join(s.label for s in slots)})"
                 if slots else ""))
    report, recovery, _ = run_session(
        config, args, err, make_session=_maker(axes, slots), progress=SweepProgress,
        left_out=build_failed)
    return finish_sweep(report, args, err, recovery)


def _maker(axes, slots):
    if not slots:
        return lambda cfg, **kw: SweepSession(cfg, axes, **kw)
    from sagetui.session.pool import PoolSweep

    return lambda cfg, **kw: PoolSweep(cfg, axes, slots, **kw)


def _console(args: argparse.Namespace, config, axes) -> int:
    """The console with its runs made sweeps: the Sweep tab shows the points as they finish;
    its exports (e c m) write the sweep report, CSV and Markdown."""
    from sagetui.cli.run_options import recovery_file, settled_here
    from sagetui.tui.app import SageTUI

    # settled as the console's own: its header names what `a` and `p` run, and they run it
    app = SageTUI(config=settled_here(config), refresh_hz=args.refresh,
                  theme_name=args.theme, recovery_path=recovery_file(args), sweep_axes=axes)
    app.run(mouse=not args.no_mouse)
    return app.return_code or 0
