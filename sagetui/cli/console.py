"""`sagetui` and `sagetui view`: the Textual console."""

from __future__ import annotations

import argparse

from .errors import UsageError


def cmd_console(args: argparse.Namespace) -> int:
    from sagetui.core.io import ReportError, load_report

    from .options import config_from_args, recovery_dir, recovery_file

    reports = []
    if args.command == "view":
        paths = list(args.files)
        if args.recover:
            found = sorted(recovery_dir(args).glob("*.json"), key=lambda p: p.stat().st_mtime)
            if not found:
                raise UsageError(f"no recovery file in {recovery_dir(args)}")
            paths.append(str(found[-1]))
        if not paths:
            raise UsageError("view needs a report FILE (or --recover)")
        for p in paths:
            try:
                reports.append((p, load_report(p)))
            except ReportError as exc:
                raise UsageError(str(exc)) from None
        config = None
    else:
        config = config_from_args(args)
    from sagetui.tui.app import SageTUI

    app = SageTUI(config=config, reports=reports, refresh_hz=getattr(args, "refresh", 2.0),
                  theme_name=args.theme, recovery_path=recovery_file(args))
    app.run(mouse=not args.no_mouse)
    return app.return_code or 0
