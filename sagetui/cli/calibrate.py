"""`sagetui calibrate`: the baseline against itself (an A/A run), and the stored floors.

Storing, keys and the rule are session/calibration.py's and core/analysis.py's; this is the
command line around them: --list, --clear, and a run that refuses to replace an earlier
calibration without --force.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sagetui.cli.errors import UsageError, stdout_console
from sagetui.cli.outputs import check_outputs
from sagetui.cli.run_options import SHAPE_OPTIONS, config_from_args
from sagetui.core.config import VariantSpec
from sagetui.session import calibration


def list_table() -> Table:
    t = Table(title=f"sagetui calibrations ({calibration.calibration_path()})")
    for col in ("host", "gpu", "backend", "build", "shape", "noise floor, age"):
        t.add_column(col)
    for k, e in calibration.entries().items():
        if not e.get("host"):  # before keys named the host: never used, --clear removes it
            t.add_row("-", "-", escape(k), "-", "-", escape(calibration.describe_entry(e)))
            continue
        t.add_row(*(escape(str(e.get(n, "-"))) for n in ("host", "gpu", "backend", "build",
                                                          "shape")),
                  escape(calibration.describe_entry(e)))
    return t


def _filters(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """--clear's backend spec and shape, from the options given (None: any)."""
    backend = None
    if args.variant:
        try:
            backend = VariantSpec.parse(args.variant[0]).spec
        except ValueError as exc:
            raise UsageError(f"--variant: {exc}") from None
    elif args.backend:
        backend = args.backend[0]
    shape = None
    if any(getattr(args, k, None) not in (None, False) for k in SHAPE_OPTIONS):
        shape = config_from_args(args).shape.describe()
    return backend, shape


def cmd_calibrate(args: argparse.Namespace) -> int:
    if args.list:
        stdout_console().print(list_table() if calibration.entries()
                               else "no calibration is stored")
        return 0
    if args.clear:
        gone = calibration.clear(*_filters(args))
        stdout_console().print(f"removed {len(gone)} calibration{'s' * (len(gone) != 1)}",
                               highlight=False)
        return 0
    from sagetui.cli.run import outputs_kept, print_summary, run_session, write_outputs

    config = config_from_args(args)
    check_outputs(args)
    err = Console(stderr=True, soft_wrap=True)
    if config.auto or config.auto_shape:  # resolve first, so both copies are the same one
        from sagetui.core.config import resolve_auto
        from sagetui.session.probe import probe

        info = probe()
        config = resolve_auto(config, info["device"], info["backends"])
    found = calibration.earlier(config)
    if found is not None and not args.force:
        base = next(v for v in config.variants if v.name == config.baseline_name)
        raise UsageError(f"a calibration of {base.spec} at {config.shape.describe()} on this "
                         f"host is stored ({calibration.describe_entry(found[1])}); pass --force "
                         "to replace it (sagetui calibrate --list shows them all)")
    config = calibration.aa_config(config)
    report, recovery, shown = run_session(config, args, err)
    threshold, line = calibration.conclude(config, report)
    print_summary(report, verdicts_shown=shown)
    (stdout_console() if threshold else err).print(escape(line), highlight=False)
    if not outputs_kept(write_outputs(report, args, err, recovery=recovery), recovery,
                        err):
        return 1
    return 0 if threshold is not None else 1


