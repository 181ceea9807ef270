"""`sagetui run --workload DIR`: a capture's calls replayed, each a point measured as a sweep's
(session/workload.py); the per-call table and the totals printed, then every output written.
Bad input is one line and exit status 2 before any runner measures anything, and no output
file is written."""

from __future__ import annotations

import argparse
import copy

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sagetui.cli.errors import UsageError, stdout_console
from sagetui.cli.outputs import check_outputs, say
from sagetui.cli.run import outputs_kept, run_session, write_outputs
from sagetui.cli.run_options import (
    FIELDS,
    SHAPE_OPTIONS,
    config_from_args,
    shape_options_given,
)
from sagetui.cli.sweep_cli import SweepProgress
from sagetui.core.build_facts import LeftOut
from sagetui.core.capture.loaded import LoadedCapture, WorkloadCall, WorkloadError, load_workload
from sagetui.core.capture.selection import Selection
from sagetui.core.config import RunConfig
from sagetui.core.report.model import Report
from sagetui.core.run.status import exit_status
from sagetui.session.spawn import Spawned


def workload_input(args: argparse.Namespace, build_failed: dict[str, LeftOut] | None = None
                   ) -> tuple[RunConfig, LoadedCapture, list[WorkloadCall]]:
    """The capture (checked against its files, sha256 included), the selected calls and the
    base RunConfig (the first runnable call's shape and file, the run options as given), or
    UsageError with the one line to print; source variants whose build failed are left out,
    recorded in `build_failed`."""
    if not args.workload:
        raise UsageError("--calls selects a workload's calls: give --workload DIR")
    if args.inputs:
        raise UsageError("--workload replays each call's own q/k/v: drop --inputs")
    given = shape_options_given(args)
    cast_to = given.pop("dtype", None)  # float32 calls replayed cast to it
    if given:
        raise UsageError(f"--workload: each call brings its own shape; drop "
                         f"{', '.join(SHAPE_OPTIONS[f] for f in given)}")
    if args.tail_study:
        raise UsageError("--tail-study: a workload has no tail study (run a call with "
                         "`sagetui run --inputs FILE`)")
    try:
        selection = Selection.parse(args.calls)
        capture = load_workload(args.workload, hashes=True, cast_to=cast_to)
    except (ValueError, WorkloadError) as exc:
        raise UsageError(str(exc)) from None
    calls = [c for c in capture.calls if selection.matches(c.index, c.module)]
    if not calls:  # load_workload refuses a capture of no saved call: --calls was given
        raise UsageError(f"--calls {args.calls}: no saved call of {args.workload} matches "
                         f"(saved: {', '.join(str(c.index) for c in capture.calls)})")
    if cast_to is not None and not any(c.cast for c in calls):
        raise UsageError(f"--dtype {cast_to} casts float32 calls: {args.workload} has none "
                         "among the calls selected (the others replay as they were passed; "
                         "drop --dtype)")
    runnable = [c for c in calls if c.shape is not None]
    if not runnable:
        raise UsageError(f"{args.workload}: no call to replay: " + "; ".join(
            f"call {c.index} {c.unfit}" for c in calls))
    first = copy.copy(args)  # the run options' checks, at the first call's shape and file
    first.inputs = str(runnable[0].file)
    shape = runnable[0].shape
    assert shape is not None
    for field, o in FIELDS.items():
        if o.shape:
            setattr(first, o.dest, getattr(shape, field))
    return config_from_args(first, build_failed=build_failed), capture, calls


def cmd_workload(args: argparse.Namespace, prestarted: Spawned | None = None) -> int:
    build_failed: dict[str, LeftOut] = {}  # source variants whose build failed: never ran
    try:
        config, capture, calls = workload_input(args, build_failed)
        check_outputs(args)
    except BaseException:
        if prestarted is not None:
            prestarted.discard()  # bad input: no runner is left behind
        raise
    err = Console(stderr=True, soft_wrap=True)
    runnable = [c for c in calls if c.shape is not None]
    err.print(f"workload: {len(runnable)} of {len(calls)} calls x {len(config.variants)} "
              f"variants from {escape(str(capture.directory))}", highlight=False)
    for c in calls:
        where = f"call {c.index}{f' {c.module}' if c.module else ''}"
        if c.unfit:
            err.print(escape(f"skipped {where}: {c.unfit}"), highlight=False)
        elif c.cast and c.shape is not None:
            err.print(escape(f"cast {where}: float32 replayed in {c.shape.dtype}"),
                      highlight=False)

    def make(cfg: RunConfig, **kw):
        from sagetui.session.workload import WorkloadSession

        return WorkloadSession(cfg, capture, calls, selection=args.calls, **kw)

    report, recovery, _ = run_session(config, args, err, make_session=make,
                                      progress=SweepProgress, prestarted=prestarted,
                                      left_out=build_failed)
    print_workload(report)
    if not outputs_kept(write_outputs(report, args, err, recovery=recovery), recovery,
                        err):
        return 1
    return exit_status(report.status, len(report.faults or []))


def print_workload(report: Report) -> None:
    """The per-call table, the totals and the worst call and head, on stdout."""
    from sagetui.core.workload import export
    if report.workload is None:  # the session failed before its first point
        return
    wl, out = report.workload, stdout_console()
    for title, columns, rows in (
            (f"sagetui workload: {export.summary_line(report)}", export.call_columns(wl),
             export.call_rows(wl)),
            ("total attention time", export.total_columns(wl), export.total_rows(wl))):
        t = Table(title=escape(title))
        for col in columns:
            t.add_column(col, justify="right" if "ms" in col or "weight" in col else "left")
        for row in rows:
            t.add_row(*(escape(x) for x in row))
        say(out, t)
    for line in [*(report.status_detail or []), *export.notes(wl), *export.worst_lines(wl)]:
        say(out, escape(line))
