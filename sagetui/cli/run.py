"""`sagetui run`: a headless run with a progress display (calibrate.py runs one too)."""

from __future__ import annotations

import argparse
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.markup import escape
from rich.text import Text

from sagetui.cli.errors import UsageError, stdout_console
from sagetui.cli.outputs import MakeText, Written, check_outputs, may_replace, say, write_files
from sagetui.cli.run_options import config_from_args, default_report_path, recovery_file
from sagetui.core import variant_facts
from sagetui.core.compare.table import Column
from sagetui.core.config import RunConfig
from sagetui.core.event_record import Recorder
from sagetui.core.eventlog import log_line
from sagetui.core.events import Event, Measured
from sagetui.core.export import tail_study_rows
from sagetui.core.export.report import (
    kernel_facts_csv,
    kernel_rows,
    to_csv,
    to_markdown,
)
from sagetui.core.report.io import iter_report_json
from sagetui.core.report.model import Report
from sagetui.core.run import late
from sagetui.core.run.status import exit_status
from sagetui.session.errors import NotRunnable
from sagetui.session.session import Session
from sagetui.session.spawn import Spawned
from sagetui.tui.fitted_tables import fitted_tables

if TYPE_CHECKING:
    from sagetui.core.build_facts import LeftOut


class Progress:
    """The session's log lines (core/eventlog.py, the console's too) on stderr, each after the
    seconds since the start; faults only with --quiet. Text from the runner (error messages,
    stderr lines) is printed as it is, never read as markup."""

    def __init__(self, console: Console, quiet: bool) -> None:
        self.c = console
        self.quiet = quiet
        self.total_rounds = 0
        self.t0 = time.monotonic()
        self.session: Session | None = None  # whose verdicts are printed at `measured`
        self.verdicts_shown = False

    def __call__(self, e: Event) -> None:
        try:
            self._show(e)
        except OSError:  # the terminal is gone: stay quiet, the session goes on
            self.quiet = True

    def _show(self, e: Event) -> None:
        if isinstance(e, Measured) and self.session is not None:
            print_verdicts(self.session.report(), e.computing)
            self.verdicts_shown = True
        line = log_line(e)
        if line is None or (self.quiet and line.severity != "error"):
            return  # --quiet: faults only
        style = {"error": "red", "warning": "yellow"}.get(line.severity, "")
        self.c.print(Text(f"{time.monotonic() - self.t0:7.1f} s  ", style="dim")
                     + Text(line.text, style=style))
        for detail in line.detail:
            self.c.print(f"    {detail}", markup=False, highlight=False, style="dim")


# the run's speed columns, said as compare, sweep, workload and swap say theirs
SIGN_NOTE = "p50 speedup %, verdict: paired %: + = faster than the baseline, {baseline}"


def summary_table(report: Report, title: str | None = None, width: int | None = None) -> Group:
    """The two speedups labelled apart: the two-build report's from the p50s, and the verdict's
    paired estimate with its interval (core.analysis); the threshold with where it came from.
    As wide as `width` allows, no word or number cut (tui/fitted_tables.py)."""
    notes = variant_facts.clock_notes(report)
    if len(report.variants or []) > 1 and report.baseline:
        notes.insert(0, SIGN_NOTE.format(baseline=report.baseline))
    cols = variant_facts.columns(variant_facts.RUN, report.variants)
    called = variant_facts.timed_call_note((v.name, v.timed_call) for v in report.variants or [])\
        if any(f.group == variant_facts.HOST for f in cols) else None
    notes += [called] if called else []
    at = variant_facts.At(report.baseline, report.created_utc)
    rows = [[v.name + ("" if v.status in (None, "ok") else f" ({v.status})"),
             *variant_facts.cells(v, cols, at)] for v in report.variants or []]
    return _fitted(title or status_title(report), cols, rows, width, "\n".join(notes) or None)


def _fitted(title: str, facts: list[variant_facts.Fact], rows: list[list[str]],
            width: int | None, caption: str | None = None) -> Group:
    """A variant's row of facts per variant, fitted to `width` (None: not cut at all)."""
    columns = [Column("variant"), *(Column(f.header(), not f.left) for f in facts)]
    return Group(*fitted_tables(title, columns, rows, width or 10**6, caption=caption))


def kernel_table(report: Report, width: int | None = None) -> Group | None:
    """Throughput against each kernel's own peak, and accuracy against fp32 attention: a
    table of its own, so that neither it nor the speed table is squeezed in 80 columns."""
    rows = kernel_rows(report)
    if not rows:
        return None
    cols = variant_facts.columns(variant_facts.KERNEL, rows)
    return _fitted("throughput and accuracy against fp32 attention", cols,
                   [[v.name, *variant_facts.cells(v, cols)] for v in rows], width)


def status_title(report: Report) -> str:
    """The summary's title: the run's result, not another progress line."""
    n = report.rounds or 0
    return f"Result: {(report.status or 'unknown').upper()} run, {n} round{'' if n == 1 else 's'}"


def print_verdicts(report: Report, computing: list[str]) -> None:
    """The verdicts as soon as the last round is in (`measured`), before the late figures."""
    what = late.describe(computing)
    out = stdout_console()
    say(out, summary_table(report, f"Verdicts (final): {report.rounds} rounds measured"
                           + (f"; computing {what}" if what else ""), out.width))


def print_summary(report: Report, verdicts_shown: bool = False) -> None:
    """The run's tables; after print_verdicts, its status and the late figures' table."""
    out = stdout_console()
    if verdicts_shown:
        say(out, Text(status_title(report), style="bold"))
    else:
        say(out, summary_table(report, width=out.width))
    kernels = kernel_table(report, out.width)
    if kernels is not None:
        say(out, kernels)
    tails = tail_table(report, out.width)
    if tails is not None:
        say(out, tails)


def tail_table(report: Report, width: int | None = None) -> Group | None:
    """The tail study's rows (--tail-study), as the console's Scheduler tab shows them."""
    rows = [r.model_dump() for r in report.tail_study or []]
    if not rows:
        return None
    columns = [Column(label, label != "sweep") for label in tail_study_rows.COLUMNS]
    return Group(*fitted_tables("tail study: the main loop against the length", columns,
                                tail_study_rows.cells(rows), width or 10**6,
                                caption=tail_study_rows.NOTE))


def run_session(config: RunConfig, args: argparse.Namespace, console: Console, *,
                make_session: Callable[..., Session] = Session,
                progress: type[Progress] = Progress,
                prestarted: Spawned | None = None,
                left_out: dict[str, LeftOut] | None = None) -> tuple[Report, Path | None, bool]:
    """Run to the end (or to a signal); the report, the recovery file if it holds it, and
    whether the verdicts were printed when the last round was in (print_verdicts).
    `make_session(config, on_event=, recovery_path=)`: a Session, or a SweepSession.
    `left_out`: source variants whose build failed, in the report as never run."""
    recovery = recovery_file(args)
    show = progress(console, args.quiet)
    events = getattr(args, "record_events", None)
    try:
        recorder = Recorder(events, show, replace=may_replace(args, events)) if events else None
    except FileExistsError:  # it appeared since check_outputs looked: kept
        if prestarted is not None:
            prestarted.discard()
        raise UsageError(f"--record-events {events} exists; pass --force to overwrite "
                         "it") from None
    early: dict[str, Any] = {"prestarted": prestarted} if prestarted is not None else {}
    if left_out:
        early["left_out"] = left_out
    session = make_session(config, on_event=recorder or show, recovery_path=recovery, **early)
    show.session = session
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["report"] = session.run()
        except Exception as exc:  # a bug; still keep and save what was measured
            result["error"] = exc

    worker = threading.Thread(target=work, name="sagetui-session")
    stops = {"n": 0}

    def on_signal(signum: int, _frame: Any) -> None:
        stops["n"] += 1
        session.cancel(signal.Signals(signum).name)  # first: printing may fail when the
        # terminal hung up
        if stops["n"] > 1:  # a second interrupt: stop waiting for the runner
            session.kill()
        say(console, f"[yellow]{signal.Signals(signum).name}: stopping; what was measured "
                      f"is kept[/]")

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    worker.start()
    while worker.is_alive():
        worker.join(timeout=0.2)
    # the run is over and saved: a late Ctrl-C (the second of a double press) must not kill
    # the process while it writes the outputs and exits
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    if recorder is not None:
        recorder.close()
    if isinstance(result.get("error"), NotRunnable):  # nothing ran: no report, exit 2
        raise UsageError(str(result["error"]))
    if "report" not in result:
        say(console, f"[red]the session failed[/]: {escape(repr(result.get('error')))}")
        report = session.save_recovery()
    else:
        report = result["report"]
    if session.recovery_error:
        say(console, f"[red]could not write the recovery file[/] {escape(str(recovery))}: "
                      f"{escape(session.recovery_error)}")
        return report, None, show.verdicts_shown
    if stays_in_recovery(report, args, recovery):
        say(console, f"the report of this failed run is the recovery file "
                     f"{escape(str(recovery))} (--json PATH writes it where you ask)")
    else:
        say(console, f"[dim]recovery file: {escape(str(recovery))}[/]")
    return report, recovery, show.verdicts_shown


def stays_in_recovery(report: Report, args: argparse.Namespace, recovery: Path | None) -> bool:
    """A failed run's report not asked for (--json) is its recovery file alone: no
    sagetui-report-<time>.json is left in the working folder for each failed try."""
    return report.status == "failed" and not args.json and recovery is not None


def write_outputs(report: Report, args: argparse.Namespace, console: Console,
                  extra: list[tuple[str, MakeText]] | None = None,
                  recovery: Path | None = None) -> Written:
    """Write every output of the report (each atomically, none over a file that appeared
    during the run: cli/outputs.py), and `extra`'s (a sweep's SVG). The JSON report goes to
    --json, else to a new file here, unless it stays in `recovery` (stays_in_recovery)."""
    outputs: list[tuple[str, MakeText]] = []
    if not stays_in_recovery(report, args, recovery):
        outputs.append((args.json or default_report_path(), lambda: iter_report_json(report)))
    if args.csv:
        outputs.append((args.csv, lambda: to_csv(report)))
    if args.markdown:
        outputs.append((args.markdown, lambda: to_markdown(report)))
    if getattr(args, "kernel_facts_csv", None):
        outputs.append((args.kernel_facts_csv, lambda: kernel_facts_csv(report)))
    return write_files([*outputs, *(extra or [])], args, console)


def outputs_kept(written: Written, recovery: Path | None, console: Console) -> bool:
    """Every output written where it was asked for; else False (the command exits 1), each
    failure said with where the report is still kept."""
    kept = (f"the report is kept in the recovery file {recovery}" if recovery
            else "the recovery file could not be written either: nothing of this run is on disk")
    for why in written.failed:
        say(console, f"[red]could not write[/] {escape(why)}; {escape(kept)}")
    return written.kept_all


def cmd_run(args: argparse.Namespace, prestarted: Spawned | None = None) -> int:
    """`prestarted`: the runner main.py started before importing this module (spawn.py)."""
    build_failed: dict[str, LeftOut] = {}  # source variants whose build failed: never ran
    try:
        config = config_from_args(args, build_failed=build_failed)
        check_outputs(args)
    except BaseException:
        if prestarted is not None:
            prestarted.discard()  # bad input: no runner is left behind
        raise
    err = Console(stderr=True, soft_wrap=True)  # a log line stays one line in a file
    report, recovery, shown = run_session(config, args, err, prestarted=prestarted,
                                          left_out=build_failed)
    print_summary(report, verdicts_shown=shown)
    if not outputs_kept(write_outputs(report, args, err, recovery=recovery), recovery, err):
        return 1
    # 1 also when a variant failed (or its build did: the report is then partial) or anything
    # else went wrong: a script must not mistake a run that lost a variant for a clean one
    return exit_status(report.status, len(report.faults or []))
