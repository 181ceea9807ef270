"""`sagetui swap --variant NAME=SPEC ... -- python SCRIPT ARGS`: the user's own program run in
rounds of fresh processes, one per arm (the program unchanged, and each variant with the
attention calls it can run sent to its backend: sagetui/swap), in ABBA order
(session/swap.py); the step it marks, its attention time and its outputs measured; per variant
the step's change against the baseline arm with a paired interval and a verdict
(core/swap/derive.py). With `--workload DIR` (a capture of the same program) the capture is
replayed (`sagetui run --workload`) and its predicted change of the attention time is shown
beside the one measured in the model.

Bad input is one line and exit status 2 before any process starts. Exit 0: every arm ran every
round; 1: an arm failed, Ctrl-C, or the report could not be written (the rounds done are
kept in the report)."""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
import tempfile
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from sagetui.cli.capture import _command
from sagetui.cli.errors import UsageError, stdout_console
from sagetui.cli.options import default_report_path
from sagetui.cli.outputs import check_outputs, write_files
from sagetui.core.blocks.swap import UNCHANGED, ArmSpec, Replay, Swap
from sagetui.core.capture.loaded import WorkloadError, load_workload
from sagetui.core.capture.selection import Selection
from sagetui.core.config import VariantSpec
from sagetui.core.environment import environment_block, host_facts
from sagetui.core.report.io import (
    ReportError,
    iter_report_json,
    load_report,
    validation_line,
)
from sagetui.core.report.model import Report, Tool
from sagetui.core.statistics.threshold import resolve_threshold
from sagetui.core.swap import derive, view
from sagetui.core.version import VERSION
from sagetui.session.swap import Arm, SwapRounds


def _arms(args: argparse.Namespace) -> list[Arm]:
    if not args.variant:
        raise UsageError("give at least one --variant NAME=SPEC (sage2-sm90, "
                         "reference[slowdown=2])")
    arms = [] if args.no_unchanged else [Arm(UNCHANGED, None)]
    for text in args.variant:
        try:
            spec = VariantSpec.parse(text)
        except ValidationError as exc:
            raise UsageError(f"--variant {text}: {validation_line(exc)}") from None
        except ValueError as exc:
            raise UsageError(f"--variant {text}: {exc}") from None
        if spec.source is not None:
            raise UsageError(f"--variant {text}: build the tree first (sagetui build) and give "
                             "the build's path")
        if spec.name == UNCHANGED:
            raise UsageError(f"--variant {text}: {UNCHANGED!r} is the program as it is; name "
                             "the variant otherwise")
        if any(a.name == spec.name for a in arms):
            raise UsageError(f"--variant {text}: the name {spec.name} is given twice")
        arms.append(Arm(spec.name, spec))
    if len(arms) < 2:
        raise UsageError("--no-unchanged needs two --variant arms to compare")
    if args.baseline not in [a.name for a in arms]:
        raise UsageError(f"--baseline {args.baseline}: no such arm (arms: "
                         f"{', '.join(a.name for a in arms)})")
    return arms


def cmd_swap(args: argparse.Namespace) -> int:
    if not args.program:
        raise UsageError("no program given: sagetui swap --variant NAME=SPEC -- python SCRIPT "
                         "[ARGS]")
    arms = _arms(args)
    command = _command(args.program)
    if args.rounds < 1:
        raise UsageError(f"--rounds {args.rounds}: give a whole number >= 1")
    try:
        Selection.parse(args.calls)
        threshold = resolve_threshold(args.threshold)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    unchanged_as = None
    if args.workload:
        try:
            capture = load_workload(args.workload, hashes=False)
        except WorkloadError as exc:
            raise UsageError(f"--workload: {exc}") from None
        unchanged_as = replayed_as(capture.manifest.calls[0].function if capture.calls
                                   else None)
    out = args.json = args.json or default_report_path()
    check_outputs(args, ("json",))

    listed = ", ".join(a.name + ("" if a.variant is None else "=" + a.variant.spec)
                       for a in arms)
    print(f"sagetui swap: {len(arms)} arms x {args.rounds} rounds, a process each ({listed})",
          file=sys.stderr)
    rounds = SwapRounds(command, arms, args.rounds, args.calls,
                        say=lambda line: print(line, file=sys.stderr, flush=True))
    processes = rounds.run()
    replay = None
    if args.workload and not rounds.interrupted:
        replay = _replay(args.workload, arms, args.baseline, unchanged_as or "sdpa")
    names = [a.name for a in arms]
    status, detail = derive.status_of(processes, names, args.rounds, rounds.interrupted)
    results = [p.result for p in processes if p.result is not None]
    swap = Swap(argv=command, arms=[ArmSpec(name=a.name, spec=a.variant.spec if a.variant
                                            else None) for a in arms],
                baseline=args.baseline, calls=args.calls, rounds_asked=args.rounds,
                step=derive.step_of(results), clock=derive.clock_of(results),  # type: ignore[arg-type]
                threshold_percent=threshold.percent, processes=processes,
                figures=derive.arm_figures(processes, names, args.baseline, threshold.percent,
                                           replay),
                replay=replay)
    report = Report(schema_version=None, tool=Tool(name="sagetui", version=VERSION),
                    created_utc=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    status=status, status_detail=detail or None,  # type: ignore[arg-type]
                    environment=environment_block(host=host_facts(), device=next(
                        (r.device for r in results if r.device), None)), swap=swap)
    stdout_console().print(swap_table(report))
    for line in view.notes(report):
        print(line)
    written = write_files([(out, lambda: iter_report_json(report))], args,
                          Console(stderr=True, soft_wrap=True))
    for line in written.failed:
        print(f"could not write {line}", file=sys.stderr)
    return 0 if status == "complete" and written.kept_all else 1


# the backend that runs what the program's own function runs, for the unchanged arm's replay
REPLAYED_AS = {"torch.nn.functional.scaled_dot_product_attention": "sdpa",
               "sageattention.sageattn": "sage2-auto",
               "sageattention.sageattn_qk_int8_pv_fp16_triton": "sage-triton",
               "sageattention.sageattn_qk_int8_pv_fp16_cuda": "sage2-sm80",
               "sageattention.sageattn_qk_int8_pv_fp8_cuda": "sage2-sm89",
               "sageattention.sageattn_qk_int8_pv_fp8_cuda_sm90": "sage2-sm90",
               "sageattention.sageattn_varlen": "sage2-varlen"}


def replayed_as(function: str | None) -> str:
    """The backend the unchanged arm is replayed as: the one of the function the capture's
    first call was made with (SDPA where it has none)."""
    return REPLAYED_AS.get(function or "", "sdpa")


def _replay(directory: str, arms: list[Arm], baseline: str, unchanged_as: str) -> Replay:
    """The capture replayed by `sagetui run --workload` (a process of its own, as a user would
    run it), each variant arm as itself and the unchanged arm as the backend of the function
    the program called (replayed_as); each arm's total Σ weight x p50 from its report."""
    with tempfile.TemporaryDirectory(prefix="sagetui-swap-replay-") as tmp:
        path = str(Path(tmp) / "replay.json")
        argv = ["run", "--workload", directory, "--baseline", baseline]
        for a in arms:
            argv += ["--variant", f"{a.name}={a.variant.spec if a.variant else unchanged_as}"]
        print(f"replaying {directory}: sagetui {' '.join(argv)}", file=sys.stderr, flush=True)
        status = subprocess.call([sys.executable, "-m", "sagetui", *argv, "--json", path],
                                 stdout=sys.stderr)
        try:
            report = load_report(path)
        except ReportError as exc:
            return Replay(directory=directory, unchanged_as=unchanged_as,
                          problem=f"the replay wrote no report (exit status {status}): {exc}")
    w = report.workload
    totals = {t.variant: t.seconds for t in (w.totals if w else []) if t.seconds}
    return Replay(directory=directory, unchanged_as=unchanged_as, totals_s=totals,
                  problem=None if totals else f"the replay gave no totals (exit status {status})")


def swap_table(report: Report) -> Table:
    """The swap's table (core/swap/view.py's cells, as the console shows them)."""
    s = report.swap
    assert s is not None
    t = Table(title=view.title(s))
    for name, numeric in view.COLUMNS:
        t.add_column(name, justify="right" if numeric else "left")
    for row in view.rows(s):
        t.add_row(*(Text(x) for x in row))
    return t
