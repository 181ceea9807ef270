"""`sagetui` and `sagetui view`: the Textual console."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from sagetui.cli.errors import UsageError

if TYPE_CHECKING:
    from sagetui.core.config import RunConfig
    from sagetui.core.report.model import Report
    from sagetui.tui.app import SageTUI


def view_reports(args: argparse.Namespace) -> list[tuple[str, Report]]:
    """What `sagetui view` opens: its FILEs, and with --recover [N] a recovery file (recover.py),
    each loaded and validated before the console starts (a bad one is a one-line usage error)."""
    from sagetui.cli.recover import chosen
    from sagetui.core.report.io import ReportError, load_report

    paths = list(args.files)
    if args.recover:
        paths.append(chosen(args))
    if not paths:
        raise UsageError("view needs a report FILE (or --recover)")
    reports = []
    for p in paths:
        try:
            reports.append((p, load_report(p)))
        except ReportError as exc:
            raise UsageError(str(exc)) from None
    return reports


def cmd_console(args: argparse.Namespace,
                build_config: Callable[[list[str]], RunConfig] | None = None) -> int:
    """The console; `build_config` (main.run_config) builds the run editor's configurations."""
    if args.command == "view" and args.recover == "list":
        from sagetui.cli.recover import print_list

        return print_list(args)
    app = console_app(args, build_config)  # bad input: one line, before the terminal check
    import sys

    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # full-screen needs a terminal
        raise UsageError("the console needs a terminal (stdin and stdout); for a run without "
                         "one use `sagetui run` (or run this inside tmux/screen)")
    app.run(mouse=not args.no_mouse)
    return app.return_code or 0


def console_app(args: argparse.Namespace,
                build_config: Callable[[list[str]], RunConfig] | None = None) -> SageTUI:
    """The console `sagetui [run options]`, `sagetui --workload DIR` or `sagetui view` opens,
    not yet running."""
    from sagetui.cli.run_options import config_from_args, recovery_file, settled_here

    reports = []
    workload = None
    if args.command == "view":
        reports = view_reports(args)
        config = None
    elif getattr(args, "workload", None) or getattr(args, "calls", None):
        # the console's runs replay a capture, call by call (the Sweep tab shows each call)
        from sagetui.cli.workload import workload_input
        from sagetui.tui.sweep_tab import WorkloadPlan

        config, capture, calls = workload_input(args)
        workload = WorkloadPlan(capture, calls, args.calls)
    else:  # source variants: their trees checked now, built in the console (watch_flow.py)
        config = settled_here(config_from_args(args, build="later"))
        if getattr(args, "watch", False) and not any(v.source for v in config.variants):
            raise UsageError("--watch needs a variant built from a tree: NAME=backend@src:PATH")
    from sagetui.tui.app import SageTUI  # after the input is checked: a refusal needs no TUI

    def edited(argv: list[str]) -> RunConfig:  # the run editor's, settled as the first
        assert build_config is not None
        return settled_here(build_config(argv))

    return SageTUI(config=config, reports=reports, refresh_hz=args.refresh,
                   theme_name=args.theme, recovery_path=recovery_file(args), workload=workload,
                   build_config=edited if config is not None and build_config else None,
                   watch=bool(getattr(args, "watch", False)),
                   arch=getattr(args, "arch", None))
