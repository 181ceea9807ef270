"""`sagetui`: argument parsing and dispatch. Usage errors exit 2 with one line."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from sagetui.cli.errors import UsageError
from sagetui.core.version import VERSION
from sagetui.kernel_build.errors import BuildFailed, BuildInterrupted

if TYPE_CHECKING:
    from sagetui.core.config import RunConfig


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line instead of usage + error
        self.exit(2, self.error_line(message) + "\n")

    command: str | None = None  # the command being parsed (build_parser's `only`)

    def error_line(self, message: str) -> str:
        hint = self.hint(message)
        # the top parser reports a command's unknown option: its help is the command's
        where = f"{self.prog} {self.command}" if self.command and self.prog == "sagetui" \
            else self.prog
        return f"{self.prog}: error: {message}" + (f"; {hint}" if hint else "") \
            + f" (see {where} --help)"

    def hint(self, message: str) -> str:
        """'did you mean ...?' for a mistyped choice (a command, --dtype's value) or option."""
        from sagetui.core.suggest import did_you_mean

        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            typed = choice.group(1)
            if message.startswith("argument COMMAND") and (
                    typed.endswith(".json") or os.path.isfile(typed)):
                return f"did you mean `{self.prog} view {typed}`?"  # a report, opened
            return did_you_mean(typed, re.findall(r"'([^']*)'", choice.group(2)))
        if message.startswith("unrecognized arguments:"):
            typed = [w for w in message.split(":", 1)[1].split() if w.startswith("--")]
            return did_you_mean(typed[0].split("=")[0], self.option_names()) if typed else ""
        return ""

    def option_names(self) -> list[str]:
        """Every long option of this parser and of its commands' (an unknown option is
        reported by the top parser, which does not know which command it was meant for)."""
        names: list[str] = []
        for action in self._actions:
            names += [o for o in action.option_strings if o.startswith("--")]
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    names += [o for a in sub._actions for o in a.option_strings
                              if o.startswith("--")]
        return list(dict.fromkeys(names))


def usage_line(exc: UsageError) -> str:
    """What a usage error prints (on stderr, before exit status 2)."""
    return f"sagetui: error: {exc}"


def _add_run_options(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    """The options of a run, each a field's of RunConfig or Shape: built from core/run_fields.py,
    the table that also gives the fields their defaults and help. `sweep`: lengths, head dim
    and causal are axes (sweep_args.py) in the place of their options."""
    from sagetui.cli.sweep_args import AXES, add_axes
    from sagetui.core.run_fields import CPU_DEFAULT_SHAPE, OPTIONS, REFERENCE_SHAPE, SHAPE, WHAT

    def short(s: dict[str, Any]) -> str:
        return f"{s['batch']}x{s['q_len']}x{s['heads']}x{s['head_dim']} {s['dtype']}"

    titles = {SHAPE: f"shape (default: {short(CPU_DEFAULT_SHAPE)} on the CPU, "
                     f"{short(REFERENCE_SHAPE)} on a GPU)"}
    groups: dict[str, argparse._ArgumentGroup] = {}
    for o in OPTIONS:
        if o.group not in groups:
            groups[o.group] = p.add_argument_group(titles.get(o.group, o.group))
        g = groups[o.group]
        if sweep and o.field in AXES:
            if o.field == AXES[0]:
                add_axes(g)
            continue
        text = o.text.replace("%", "%%") if o.text else None  # argparse formats help with %
        if o.kind == "flag":
            g.add_argument(o.flag, action="store_true", help=text)
        elif o.kind == "list":
            g.add_argument(o.flag, action="append", metavar=o.metavar, help=text)
        else:  # a shape's option stays unset (None) until given: the machine picks the shape
            g.add_argument(o.flag, type=said(o.parse), choices=o.choices, metavar=o.metavar,
                           default=None if o.shape else o.default, help=text)
    from sagetui.cli.build_options import add_arch_option

    # a `backend@src:PATH` variant's tree is built before the run, as `sagetui build` builds it
    add_arch_option(groups.get(WHAT) or p)


def said(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """A parser of run_fields' own (--seqlens') with its ValueError's text as argparse's
    error (argparse says only "invalid VALUE" for a ValueError); int and float as they are."""
    if isinstance(parse, type):
        return parse

    def typed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return typed


# the commands whose runs `refuse_predicted` can refuse before a runner starts (None: the
# console); `profile` checks its tools (ncu, cuobjdump) first, itself
PREDICTED = ("run", "sweep", "calibrate", "node-check", None)

COMMANDS = ("run", "view", "compare", "check", "doctor", "calibrate", "profile", "sweep",
            "capture", "swap", "schema", "merge", "node-check", "build")


RUN_EXIT = ("Exit 0: complete; 1: a variant failed (or its build did), a fault was recorded "
            "(a NaN output, say), the run was stopped, or an output could not be written (the "
            "report is then in the recovery file); 2: bad input, refused before anything runs.")

BUILD_HELP = "build a backend's extension modules from a SageAttention tree (cached)"


def build_parser(only: str | None = None, parser_class: type[Parser] = Parser) -> Parser:
    """The whole parser; `only`: the command being parsed, whose options alone are built
    (the others keep their name and help): `sagetui --help` need not build five option sets."""

    from sagetui.core.run_fields import CONSOLE_REFRESH_HZ

    def full(name: str) -> bool:
        return only is None or only == name

    p = parser_class(prog="sagetui", description="A live console for benchmarking "
                     "SageAttention kernels. With no command it opens the console.")
    p.command = only or None
    p.add_argument("--version", action="version", version=f"sagetui {VERSION}")
    p.add_argument("--no-mouse", action="store_true", help="do not capture the mouse")
    p.add_argument("--refresh", type=float, default=CONSOLE_REFRESH_HZ, metavar="HZ",
                   help=f"plot redraws per second, at most ({CONSOLE_REFRESH_HZ:g})")
    p.add_argument("--theme", help="colour theme (see themes/)")
    p.add_argument("--recovery-dir", metavar="DIR", help="where runs autosave "
                   "(default: $XDG_STATE_HOME/sagetui/recovery)")
    p.add_argument("--watch", action="store_true", help="watch the trees of backend@src:PATH "
                   "variants: a change rebuilds its variant and runs the comparison again "
                   "(also the key w)")
    _add_run_options(p)
    _add_workload_options(p)  # the console's runs can replay a capture too
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)

    r = sub.add_parser("run", help="run headless with a progress display and a summary table",
                       description="Runs the variants interleaved in rounds (ABBA/BAAB) in a "
                       "runner process, prints the progress on stderr and the summary tables on "
                       "stdout, and writes the report (--json; CSV and Markdown on request). "
                       "With no option: the best backend here at the machine's default shape. "
                       f"{RUN_EXIT}")
    if full("run"):
        _add_run_options(r)
        _add_workload_options(r)
        _add_outputs(r)
        r.add_argument("--recovery-dir", metavar="DIR", help=argparse.SUPPRESS)

    v = sub.add_parser("view", help="open saved reports in the console (two or more: compare)",
                       description="Opens a report (a run, a sweep, a profile or a replayed "
                       "workload) in the console's panels, read-only; two or more open in the "
                       "Compare tab, B, C, ... against A. --recover reopens a run that did not "
                       "complete from its autosave. Exit 2: a file is not a readable report.")
    v.add_argument("files", nargs="*", metavar="FILE", help="the reports to open (JSON)")
    v.add_argument("--recover", nargs="?", const="newest", metavar="N|list",
                   help="reopen a run from its recovery file: the newest that is not complete, "
                   "the N-th of `--recover list` (1: the newest), or list them")
    v.add_argument("--no-mouse", action="store_true", help=argparse.SUPPRESS)
    v.add_argument("--theme", help=argparse.SUPPRESS)
    v.add_argument("--recovery-dir", metavar="DIR", help=argparse.SUPPRESS)

    c = sub.add_parser("compare", help="print reports side by side (p50, p90, speedup, verdict)",
                       description="Reports B, C, ... against A (the first). Refused (exit 2) "
                       "when a report's workload (shape, layout, dtype, causal) or GPU model "
                       "differs from A's; builds and software versions may differ (they are "
                       "listed). Exit 0: compared; 1: a --fail-if gate tripped; 2: refused or "
                       "not a readable report.")
    c.add_argument("files", nargs="+", metavar="FILE", help="the reports: A first, then B, C, "
                   "...")
    c.add_argument("--force", action="store_true", help="compare reports that differ in "
                   "workload or GPU model anyway (one line says what differs)")
    c.add_argument("--fail-if-slower", type=_percent, metavar="PCT", help="exit 1 when a "
                   "matched variant (or sweep point) is slower than A's by more than PCT %% "
                   "with its whole 95 %% interval (the p50s alone where a side has under two "
                   "rounds)")
    c.add_argument("--fail-if-faster", type=_percent, metavar="PCT", help="exit 1 when one "
                   "is faster than A's by more than PCT %% in the same way (a change that "
                   "should not have sped anything up)")

    k = sub.add_parser("check", help="validate reports and recompute every derived number",
                       description="Validates each report against its schema and recomputes "
                       "every derived number it holds (summaries, intervals, verdicts, TOPS, "
                       "shares, accuracy, speed of light, statuses, ...) from its raw figures; "
                       "prints `FILE: ok` or one line per number that disagrees, then how many "
                       "figures it recomputed (from how many raw samples) and how many it took "
                       "as recorded (--recorded lists those). Exit 0: every file passes; 1: a "
                       "derived number disagrees; 2: a file is not a readable report (a capture "
                       "is checked by `sagetui capture --verify DIR`).")
    k.add_argument("files", nargs="+", metavar="FILE", help="the reports to check (JSON)")
    k.add_argument("--recorded", action="store_true", help="list every fact taken as "
                   "recorded (what no other figure of the report can re-derive), and why")

    doc = sub.add_parser("doctor", help="GPU, driver, CUDA, torch, SageAttention, NVML, "
                         "baselines, terminal",
                         description="Starts a runner and lists what this machine has and "
                         "what it can run: python, torch and its CUDA, the GPU, the driver "
                         "(NVML), each SageAttention module (or its real import error), each "
                         "backend and baseline (or why it cannot run here), the datasheet peak "
                         "and the terminal's colours. Exit 0; 1 when the runner cannot start.")
    doc.add_argument("--peak", action="store_true", help="also time a dense int8 and a bf16 "
                     "matmul here: the measured ceiling beside the datasheet peak")

    cal = sub.add_parser("calibrate", help="run the baseline against itself: the noise floor",
                         description="An A/A run of the baseline: its noise floor sets the SAME "
                         "threshold, max(1 %, 2 x floor), of later runs on this host, GPU, "
                         "backend, build and shape. A floor over 2.5 % (a threshold over 5 %) "
                         "is refused. --force also replaces an earlier calibration.")
    if full("calibrate"):
        _add_run_options(cal)
        _add_outputs(cal)
        cal.add_argument("--list", action="store_true", help="list the stored calibrations")
        cal.add_argument("--clear", action="store_true", help="remove the stored calibrations "
                         "(all, or those of the --backend/--variant and shape given)")

    pr = sub.add_parser("profile", help="where the fused main loop's time goes: each variant's "
                        "call once under Nsight Compute, shares of sampled warp time per phase",
                        description="Runs each variant's call once under Nsight Compute (ncu) "
                        "and places the kernel's warp-stall samples in the main loop's phases "
                        "by its source lines; with two variants or more, each against the "
                        "baseline (phases, stall reasons, hot lines). Needs ncu, cuobjdump and "
                        "nvdisasm, and a build with -lineinfo. Exit 0: profiled; 1: a variant "
                        "failed; 2: bad input.")
    if full("profile"):
        _add_run_options(pr)
        _add_outputs(pr)
        g = pr.add_argument_group("profile")
        g.add_argument("--source-dir", action="append", metavar="DIR", default=[],
                       help="where the kernel sources are when the paths that -lineinfo "
                            "recorded are gone (repeatable), e.g. a SageAttention checkout's csrc")
        g.add_argument("--keep", metavar="DIR", help="keep ncu's report, logs and listings in DIR")

    sw = sub.add_parser("sweep", help="TOPS against sequence length (and head dim, causal) "
                        "per backend: kernel-only and end to end",
                        description="Measures every variant at each point of the axes (q_len, "
                        "kv_len, head dim, causal), interleaved in rounds as a run is: per point "
                        "the p50 with its interval, kernel-only and end-to-end TOPS, share of "
                        "peak and accuracy, and where one variant's line overtakes another's. "
                        "Exit 0: every point measured; 1: a point or variant failed; 2: bad "
                        "input.")
    if full("sweep"):
        _add_run_options(sw, sweep=True)
        _add_outputs(sw)
        sw.add_argument("--svg", metavar="PATH", help="the TOPS plot as an SVG line chart")
        sw.add_argument("--console", action="store_true",
                        help="run it in the console's Sweep tab (r starts it), points streaming "
                             "in")
        from sagetui.cli.node_options import add_node_options

        add_node_options(sw)
        sw.add_argument("--no-mouse", action="store_true", help=argparse.SUPPRESS)
        sw.add_argument("--theme", help=argparse.SUPPRESS)
        sw.add_argument("--recovery-dir", metavar="DIR", help=argparse.SUPPRESS)

    cap = sub.add_parser("capture", help="run a Python program and save its attention calls "
                         "(q, k, v and a manifest): a workload of your own model",
                         description="Runs the program with torch's scaled_dot_product_attention "
                         "and SageAttention's public functions wrapped, and saves the selected "
                         "calls into DIR: one safetensors file per call (q, k, v) and "
                         "manifest.json. Refused with one line and exit status 2, nothing kept: "
                         "no program, a bad option, DIR not empty (--force), the program failing, "
                         "no call matched. --verify DIR checks a capture against its files.")
    if full("capture"):
        cap.add_argument("--out", metavar="DIR", help="where the capture goes: a new or empty "
                         "directory, `.` or a symlink to one (written beside or inside it, put "
                         "in place when whole, its files hashed again)")
        cap.add_argument("--calls", metavar="SELECT", help="which calls to save (default all): "
                         "indices and ranges (0,3,5-9; every call the program makes counts, "
                         "from 0), every:N, module:GLOB (module:blocks.*.attn), joined by commas "
                         "for their union")
        cap.add_argument("--max-calls", type=_whole, metavar="N", help="save the first N "
                         "selected calls at most")
        cap.add_argument("--max-bytes", type=_size, metavar="B", default=MAX_BYTES,
                         help="stop saving before the saved tensors pass B bytes (500M, 2G; "
                         f"default {MAX_BYTES}); the program runs to its end")
        cap.add_argument("--force", action="store_true", help="replace a DIR that is not empty")
        cap.add_argument("--verify", metavar="DIR", help="check a capture against its files "
                         "(shape, dtype, sha256 of each tensor) and list its calls")
        cap.add_argument("program", nargs="*", metavar="-- python SCRIPT [ARGS]",
                         help="the program, after --: python SCRIPT [ARGS], python -m MODULE "
                         "[ARGS] or SCRIPT.py [ARGS]")

    from sagetui.cli.swap_options import add_swap_command

    add_swap_command(sub, full("swap"))
    sch = sub.add_parser("schema", help="print the JSON Schema of a report (or of a capture's "
                         "manifest)", description="Prints the JSON Schema that reports (or, "
                         "with `capture`, a capture's manifest.json) are validated against, "
                         "for tools of your own. Exit 0.")
    sch.add_argument("what", nargs="?", choices=["report", "capture"], default="report",
                     help="report (the default) or capture")
    if full("build"):
        from sagetui.cli.build_options import add_build_command

        add_build_command(sub, BUILD_HELP)
    else:
        sub.add_parser("build", help=BUILD_HELP)
    from sagetui.cli.node_options import add_node_commands

    add_node_commands(sub, _add_run_options, _add_outputs, full)
    return p


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of percent") from None
    if not 0 <= value < 1e6:
        raise argparse.ArgumentTypeError(f"{text!r}: give a percentage >= 0")
    return value


MAX_BYTES = "4G"  # capture's default budget: a few calls of a large model, not a full disk


def _whole(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number >= 1")
    return int(text)


def _size(text: str) -> int:
    from sagetui.core.capture.selection import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_workload_options(p: argparse.ArgumentParser) -> None:
    w = p.add_argument_group("workload (a capture replayed: docs/workloads.md)")
    w.add_argument("--workload", metavar="DIR", help="replay the calls `sagetui capture` saved "
                   "in DIR, each a point at its own shape on its own q/k/v, every variant "
                   "measured on each; per call and in total (each call weighted by how often "
                   "the program made it). Takes no shape option nor --inputs")
    w.add_argument("--calls", metavar="SELECT", help="which saved calls to replay (default "
                   "all): as capture's --calls (0,3,5-9, every:N, module:GLOB)")


def _add_outputs(p: argparse.ArgumentParser) -> None:
    o = p.add_argument_group("outputs")
    o.add_argument("--json", metavar="PATH", help="the report (default: "
                   "./sagetui-report-<time>.json; a failed run's stays in its recovery file)")
    o.add_argument("--csv", metavar="PATH", help="raw per-iteration samples")
    o.add_argument("--markdown", metavar="PATH", help="a summary for a pull request")
    o.add_argument("--kernel-facts-csv", metavar="PATH",
                   help="each variant's main-loop kernel facts (registers, spills, shared "
                        "memory, occupancy), one row per variant")
    o.add_argument("--force", action="store_true", help="overwrite existing output files")
    o.add_argument("--quiet", action="store_true", help="no progress display")
    o.add_argument("--record-events", metavar="PATH",
                   help="also write every event of the run as JSON lines (a stream to replay: "
                        "docs/architecture.md, Events)")


class _Refused(UsageError):
    """An argument the parser refused: its text is the line `sagetui run` prints."""


class _RefusingParser(Parser):
    def error(self, message: str) -> NoReturn:  # raise: never print over the console's screen
        raise _Refused(self.error_line(message))


def run_config(argv: list[str]) -> RunConfig:
    """The console's run editor's configuration: `sagetui run ARGV` through that command's own
    parser and rules (one code path). A bad argument raises UsageError, its text the very line
    `sagetui run ARGV` prints before it exits with status 2. (Here, not in console.py: this
    module imports every command's, and an import back would be a cycle.)"""
    from sagetui.cli.run_options import config_from_args

    args = build_parser("run", parser_class=_RefusingParser).parse_args(["run", *argv])
    try:
        return config_from_args(args, build=False)
    except UsageError as exc:
        raise UsageError(usage_line(exc)) from None


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. A command may change how the process takes Ctrl-C (run, sweep and
    calibrate ignore it while they write their outputs and exit). Called with `argv`, by a
    caller in the same process (a test), the handlers are put back on return, so that it does
    not start its next children with Ctrl-C ignored, which Python would then never turn into
    KeyboardInterrupt. As the process's entry (no `argv`) they stay as the command left them:
    a late Ctrl-C, the second of a double press, once came after they were put back and ended
    the process by SIGINT instead of its exit status."""
    if argv is None:  # the process's own stdout: a closed pipe stops no measurement
        from sagetui.cli.errors import ClosedPipeSafe

        sys.stdout = ClosedPipeSafe(sys.stdout)  # type: ignore[assignment]
    if argv is None or threading.current_thread() is not threading.main_thread():
        return _command(argv)
    saved = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    try:
        return _command(argv)
    finally:
        for s, handler in saved.items():
            if handler is not None:
                signal.signal(s, handler)


def _command(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(next((w for w in words if w in COMMANDS), "")).parse_args(words)
    try:
        if args.command in PREDICTED:
            from sagetui.cli.run_options import refuse_predicted

            refuse_predicted(args)  # what needs no runner to know is refused before one starts
        if args.command == "run":
            # the runner first: its start-up (torch, CUDA) overlaps this process's imports
            from sagetui.session.spawn import spawn_runner

            early = spawn_runner()
            if args.workload or args.calls:  # a capture replayed, call by call
                from sagetui.cli.workload import cmd_workload

                return cmd_workload(args, early)
            from sagetui.cli.run import cmd_run

            return cmd_run(args, early)
        if args.command == "sweep":
            from sagetui.cli.sweep_cli import cmd_sweep

            return cmd_sweep(args)
        if args.command == "merge":
            from sagetui.cli.merge import cmd_merge

            return cmd_merge(args)
        if args.command == "node-check":
            from sagetui.cli.node_check import cmd_node_check

            return cmd_node_check(args)
        if args.command == "calibrate":
            from sagetui.cli.calibrate import cmd_calibrate

            return cmd_calibrate(args)
        if args.command == "profile":
            from sagetui.cli.profile import cmd_profile

            return cmd_profile(args)
        if args.command == "check":
            from sagetui.cli.reports import cmd_check

            return cmd_check(args)
        if args.command == "compare":
            from sagetui.cli.reports import cmd_compare

            return cmd_compare(args)
        if args.command == "capture":
            from sagetui.cli.capture import cmd_capture

            return cmd_capture(args)
        if args.command == "swap":
            from sagetui.cli.swap import cmd_swap

            return cmd_swap(args)
        if args.command == "schema":
            from sagetui.cli.reports import cmd_schema

            return cmd_schema(args)
        if args.command == "build":
            from sagetui.cli.build import cmd_build

            return cmd_build(args)
        if args.command == "doctor":
            from sagetui.cli.doctor import cmd_doctor

            return cmd_doctor(args)
        from sagetui.cli.console import cmd_console

        return cmd_console(args, build_config=run_config)
    except UsageError as exc:
        print(usage_line(exc), file=sys.stderr)
        return 2
    except BuildFailed as exc:  # a `backend@src:PATH` variant's build, before any runner
        from sagetui.cli.build import report_failure

        report_failure(exc)
        return 1
    except BuildInterrupted as exc:  # a signal during a `backend@src:PATH` variant's build
        with contextlib.suppress(OSError):  # a terminal that hung up takes no line
            print(f"sagetui: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
