"""`sagetui swap --variant NAME=SPEC ... -- python SCRIPT ARGS`: the user's own program with its
attention calls sent to each arm's backend (sagetui/swap): every arm in one process, switched
step by step (the default), or a fresh process per arm and round in ABBA order
(`--processes`) (session/swap.py); the step it marks, its attention time, the GPU's clocks and
its outputs measured; per variant the step's change against the baseline arm with a paired
interval and a verdict (core/swap/derive.py). With `--workload DIR` (a capture of the same
program) the capture is replayed (`sagetui run --workload`) and its predicted change of the
attention time is shown beside the one measured in the model.

Bad input is one line and exit status 2 before the program starts; so is a program that made
no attention call. Exit 0: complete; 1: an arm failed, a stop (Ctrl-C, SIGTERM, SIGHUP: what
was measured is kept in the report), or the report could not be written (it is then kept as a
recovery file, `sagetui view --recover list`)."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console

from sagetui.cli.capture import _command
from sagetui.cli.errors import UsageError, stdout_console
from sagetui.cli.outputs import check_outputs, write_files
from sagetui.cli.run_options import default_report_path, no_cuda_here, recovery_file
from sagetui.core import affinity
from sagetui.core.blocks.swap import UNCHANGED, UNWRAPPED, ArmSpec, Interleave, Replay
from sagetui.core.capture.loaded import WorkloadError, load_workload
from sagetui.core.capture.selection import Selection
from sagetui.core.config import VariantSpec
from sagetui.core.file_writes import atomic_write_text
from sagetui.core.options import CPU_BACKENDS, missing_module
from sagetui.core.report.io import (
    ReportError,
    iter_report_json,
    load_report,
    validation_line,
)
from sagetui.core.report.model import Report
from sagetui.core.statistics.threshold import resolve_threshold
from sagetui.core.swap import derive, view
from sagetui.core.swap.swap_report import swap_report
from sagetui.session.swap import Arm, Interleaved, SwapRounds, interleave_arms
from sagetui.tui.fitted_tables import swap_table


def _arms(args: argparse.Namespace) -> list[Arm]:
    if not args.variant:
        raise UsageError("give at least one --variant NAME=SPEC (sage2-sm90, "
                         "reference[slowdown=2])")
    arms = [] if args.no_unchanged else [Arm(UNCHANGED, None)]
    for text in args.variant:
        name, _, rest = text.partition("=")
        if rest == UNCHANGED:  # the program as it is a second time: an A/A check
            if name in (UNCHANGED, UNWRAPPED) or any(a.name == name for a in arms):
                raise UsageError(f"--variant {text}: name the second unchanged arm otherwise")
            arms.append(Arm(name, None))
            continue
        try:
            spec = VariantSpec.parse(text)
        except ValidationError as exc:
            raise UsageError(f"--variant {text}: {validation_line(exc)}") from None
        except ValueError as exc:
            raise UsageError(f"--variant {text}: {exc}") from None
        if spec.source is not None:
            raise UsageError(f"--variant {text}: build the tree first (sagetui build) and give "
                             "the build's path")
        if spec.name in (UNCHANGED, UNWRAPPED):
            raise UsageError(f"--variant {text}: {spec.name!r} is the program as it is; name "
                             "the variant otherwise")
        if spec.path is not None and not os.path.exists(spec.path):
            raise UsageError(f"--variant {text}: {spec.path} does not exist")
        why = missing_module(spec.backend, spec.options)
        if why:
            raise UsageError(f"--variant {text}: {why}")
        if spec.backend not in CPU_BACKENDS:
            why = no_cuda_here("cuda")
            if why:
                raise UsageError(f"--variant {text}: {spec.backend} {why}; the reference "
                                 "backend runs on the CPU (reference, reference[slowdown=2])")
        if any(a.name == spec.name for a in arms):
            raise UsageError(f"--variant {text}: the name {spec.name} is given twice")
        arms.append(Arm(spec.name, spec))
    if len(arms) < 2:
        raise UsageError("--no-unchanged needs two --variant arms to compare")
    if args.baseline not in [a.name for a in arms]:
        raise UsageError(f"--baseline {args.baseline}: no such arm (arms: "
                         f"{', '.join(a.name for a in arms)})")
    return arms


def _settings(args: argparse.Namespace) -> tuple[float, Interleave | None]:
    """The threshold and the interleaved mode's settings, refused one line at a time."""
    if args.threshold is not None and not (math.isfinite(args.threshold)
                                           and args.threshold > 0):
        raise UsageError(f"--threshold {args.threshold}: give a percentage above 0")
    try:
        Selection.parse(args.calls)
        threshold = resolve_threshold(args.threshold)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.affinity is not None and (why := affinity.refusal(args.affinity)) is not None:
        raise UsageError(why)  # both modes pin the program (swap/__main__.py)
    if args.processes:
        if args.rounds is not None and args.rounds < 1:
            raise UsageError(f"--rounds {args.rounds}: give a whole number >= 1")
        if args.until_ci is not None:
            raise UsageError("--until-ci is for the interleaved mode; --processes runs "
                             "--rounds rounds")
        return threshold.percent, None
    if args.rounds is not None:
        raise UsageError("--rounds is for --processes; the interleaved mode measures --steps "
                         "steps per arm")
    if args.steps < 2:
        raise UsageError(f"--steps {args.steps}: give a whole number >= 2 (an interval needs "
                         "two)")
    if not 1 <= args.warmup <= 10:
        raise UsageError(f"--warmup {args.warmup}: give a whole number from 1 to 10")
    if not (math.isfinite(args.max_seconds) and args.max_seconds > 0):
        raise UsageError(f"--max-seconds {args.max_seconds}: give a number of seconds above 0")
    if args.until_ci is not None and not (math.isfinite(args.until_ci)
                                          and 0 < args.until_ci <= 100):
        raise UsageError(f"--until-ci {args.until_ci}: give percentage points above 0, 100 at "
                         "most")
    return threshold.percent, Interleave(arms=[], warmup=args.warmup,
                                         max_warmup=max(10, args.warmup), steps=args.steps,
                                         max_seconds=args.max_seconds,
                                         until_ci_percent=args.until_ci)


def cmd_swap(args: argparse.Namespace) -> int:
    if not args.program:
        raise UsageError("no program given: sagetui swap --variant NAME=SPEC -- python SCRIPT "
                         "[ARGS]")
    arms = _arms(args)
    command = _command(args.program)
    threshold, interleave = _settings(args)
    rounds_asked = args.rounds or 4
    unchanged_as = None
    if args.workload:
        try:
            capture = load_workload(args.workload, hashes=False)
        except WorkloadError as exc:
            raise UsageError(f"--workload: {exc}") from None
        unchanged_as = replayed_as(capture.manifest.calls[0].function if capture.calls
                                   else None)
    asked = args.json is not None  # else a failed swap's report stays in its recovery file
    out = args.json = args.json or default_report_path()
    check_outputs(args, ("json",))
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    listed = ", ".join(a.name + ("" if a.variant is None else "=" + a.variant.spec)
                       for a in arms)
    recovery = recovery_file(args)
    output_processes: list = []
    if interleave is not None:
        if any(a.name == UNCHANGED for a in arms) and not args.no_wrapper_cost:
            arms = [*arms, Arm(UNWRAPPED, None)]
        interleave.arms = interleave_arms(arms)
        interleave.reference = derive.reference_arm([a.name for a in arms], args.baseline)
        interleave.baseline = args.baseline
        say(f"sagetui swap: {len(arms)} arms interleaved step by step in one process "
            f"({listed}{', unwrapped' if arms[-1].name == UNWRAPPED else ''}); at least "
            f"{interleave.warmup} warm-up rounds, then up to {interleave.steps} steps per arm")
        run = Interleaved(command, arms, interleave, args.calls, say=say,
                          affinity=args.affinity)
        processes = [run.run()]
        stopped_by = run.stopped_by
        result = processes[0].result
        if result is not None and result.repeatable is False and stopped_by is None:
            say(f"the step is not repeatable ({result.repeatable_note}): comparing the outputs "
                "from a process per arm")
            again = SwapRounds(command, [a for a in arms if a.name != UNWRAPPED], 1,
                               args.calls, say=say, affinity=args.affinity)
            output_processes = again.run()
            stopped_by = stopped_by or again.stopped_by
        interrupted = stopped_by is not None
    else:
        say(f"sagetui swap: {len(arms)} arms x {rounds_asked} rounds, a process each "
            f"({listed})")

        def progress(done: list) -> None:
            _keep(recovery, _report(args, command, arms, rounds_asked, threshold, None, done,
                                    None, None, [], interrupted=True))

        rounds = SwapRounds(command, arms, rounds_asked, args.calls, say=say, progress=progress,
                            affinity=args.affinity)
        processes = rounds.run()
        stopped_by, interrupted = rounds.stopped_by, rounds.interrupted
    results = [p.result for p in processes if p.result is not None]
    if results and all(not r.calls_seen and not r.forked_calls for r in results) \
            and not interrupted and all(p.status == "ok" for p in processes):
        with contextlib.suppress(OSError):
            recovery.unlink()
        raise UsageError(f"{derive.NO_ATTENTION}; no report was written")
    replay = None
    if args.workload and not interrupted:
        replay = _replay(args.workload, arms, args.baseline, unchanged_as or "sdpa", out)
    report = _report(args, command, arms, rounds_asked, threshold, interleave, processes,
                     stopped_by, replay, output_processes, interrupted)
    _keep(recovery, report)  # before the report is written where asked: it survives a failure
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # the outputs are written whole
        signal.signal(s, signal.SIG_IGN)
    console = stdout_console()
    console.print(swap_table(report, console.width))
    for line in view.notes(report):
        print(line)
    if report.status == "failed" and not asked and recovery.exists():  # as run's (run.py)
        print(f"the report of this failed swap is the recovery file {recovery} (--json PATH "
              "writes it where you ask)", file=sys.stderr)
        return 1
    written = write_files([(out, lambda: iter_report_json(report))], args,
                          Console(stderr=True, soft_wrap=True))
    for line in written.failed:
        print(f"could not write {line}", file=sys.stderr)
    if written.kept_all:
        with contextlib.suppress(OSError):
            recovery.unlink()
    elif recovery.exists():
        print(f"the report is kept in {recovery} (sagetui view --recover list)",
              file=sys.stderr)
    return 0 if report.status == "complete" and written.kept_all else 1


def _keep(path: Path, report: Report) -> None:
    """The report as it stands, in the recovery folder (never raises: it is the spare)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(str(path), "".join(iter_report_json(report)), overwrite=True)
    except OSError:
        pass


def _report(args: argparse.Namespace, command: list[str], arms: list[Arm], rounds_asked: int,
            threshold: float, interleave: Interleave | None, processes: list, stopped_by,
            replay: Replay | None, output_processes: list, interrupted: bool) -> Report:
    return swap_report(argv=command, arms=[ArmSpec(name=a.name, spec=a.variant.spec
                                                   if a.variant else None) for a in arms],
                       baseline=args.baseline, calls=args.calls, rounds_asked=rounds_asked,
                       threshold=threshold, interleave=interleave, processes=processes,
                       stopped_by=stopped_by, replay=replay, output_processes=output_processes,
                       interrupted=interrupted, affinity=args.affinity)


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


def _replay(directory: str, arms: list[Arm], baseline: str, unchanged_as: str,
            out: str) -> Replay:
    """The capture replayed by `sagetui run --workload` (a process of its own, as a user would
    run it), each variant arm as itself and the unchanged arm as the backend of the function
    the program called (replayed_as; not replayed where that backend cannot run here); each
    arm's total Σ weight x p50 from its report, which is kept beside the swap's."""
    path = str(Path(out).with_suffix("")) + ".replay.json"
    skipped = None
    replayed = []
    for a in arms:
        if a.name == UNWRAPPED:
            continue
        spec = a.variant.spec if a.variant else unchanged_as
        if a.variant is None and unchanged_as not in CPU_BACKENDS and no_cuda_here("cuda"):
            skipped = f"the unchanged arm is not replayed: {unchanged_as} {no_cuda_here('cuda')}"
            continue
        replayed.append((a.name, spec))
    names = [n for n, _ in replayed]
    base = baseline if baseline in names else (names[0] if names else baseline)
    argv = ["run", "--workload", directory, "--baseline", base, "--force"]
    for name, spec in replayed:
        argv += ["--variant", f"{name}={spec}"]
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
    problem = None if totals else f"the replay gave no totals (exit status {status})"
    if skipped and baseline not in totals:
        problem = f"{skipped}, and the baseline {baseline} is not in the replay: no prediction"
    return Replay(directory=directory, report=path, unchanged_as=unchanged_as,
                  totals_s=totals, problem=problem)
