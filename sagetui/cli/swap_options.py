"""`sagetui swap`'s options (cli/swap.py runs it): here, so that building the parser imports
nothing of the swap itself."""

from __future__ import annotations

import argparse

UNCHANGED = "unchanged"  # core/blocks/swap.UNCHANGED: the program as it is


def add_swap_command(sub: argparse._SubParsersAction, full: bool) -> None:  # type: ignore[type-arg]
    sw = sub.add_parser(
        "swap", help="swap the attention inside your own program and measure the whole step",
        description="Runs the program once with every arm loaded (the program unchanged, the "
        "same with the wrapper passing calls straight through, and each --variant with the "
        "attention calls its backend can run sent to it), switching the arm at each step the "
        "program marks (with sagetui.region(\"step\"): ...), round by round, so that each "
        "comparison pairs adjacent steps at the same clocks; the first rounds of steps are "
        "warm-up. Times each step, its attention calls and the GPU's clock, and compares the "
        "outputs (sagetui.output(NAME, value), else the last attention call's) with the "
        "unchanged program's. --processes runs a fresh process per arm and round instead (for "
        "a program that runs its step once, or for isolation).")
    if not full:
        return
    sw.add_argument("--variant", action="append", default=[], metavar="NAME=SPEC",
                    help="an arm: a backend as `sagetui run` takes it (sage2-sm90, "
                    "reference[slowdown=2]), or `unchanged` (the program as it is once more: an "
                    "A/A check); repeat for more")
    sw.add_argument("--baseline", metavar="NAME", default=UNCHANGED,
                    help=f"the arm the others are judged against (default {UNCHANGED}: the "
                    "program as it is)")
    sw.add_argument("--steps", type=int, default=30, metavar="N",
                    help="measured steps per arm at most (default 30; 2 at least), after the "
                    "warm-up and 2 rounds that time each attention call: the program is ended "
                    "at its next step once each arm has them")
    sw.add_argument("--warmup", type=int, default=2, metavar="N",
                    help="warm-up rounds at least, each arm's step once a round (default 2); "
                    "more until every arm's step time settles (its last two within 10 %% of "
                    "each other), 10 at most")
    sw.add_argument("--max-seconds", type=float, default=60.0, metavar="S",
                    help="end the measurement S seconds after its first measured step "
                    "(default 60)")
    sw.add_argument("--until-ci", type=float, metavar="PCT",
                    help="end the measurement once every arm's interval (and the wrapper's "
                    "cost's) is narrower than PCT percentage points, from 10 measured steps "
                    "on; --steps and --max-seconds stay the limits")
    sw.add_argument("--affinity", metavar="CPUS",
                    help="run the program's thread (and the threads it starts) on these CPUs "
                    "(2, 0-3, 0,2-3; default: not pinned): a launch-bound step's time depends "
                    "on its CPU, and swaps on the same CPUs compare")
    sw.add_argument("--no-wrapper-cost", action="store_true",
                    help="run no unwrapped arm (the unchanged program with the wrapper passing "
                    "calls straight through, for the wrapper's own cost)")
    sw.add_argument("--processes", action="store_true",
                    help="a fresh process per arm and round instead of every arm in one "
                    "process (the GPU brought to its clocks before each one's first step)")
    sw.add_argument("--rounds", type=int, metavar="N",
                    help="with --processes: rounds, each running every arm once (default 4; 2 "
                    "at least for an interval)")
    sw.add_argument("--calls", metavar="SELECT", help="which calls may be swapped (default "
                    "all): as capture's --calls (0,3,5-9, every:N, module:GLOB)")
    sw.add_argument("--no-unchanged", action="store_true",
                    help="run no unchanged arm (the variants against each other)")
    sw.add_argument("--workload", metavar="DIR", help="a capture of the same program: replay "
                    "it and show its predicted change of the attention time beside the "
                    "measured one")
    sw.add_argument("--threshold", type=float, metavar="PCT",
                    help="the SAME threshold in percent (default 1)")
    sw.add_argument("--json", metavar="FILE", help="where the report goes (default "
                    "sagetui-report-TIME.json)")
    sw.add_argument("--force", action="store_true", help="overwrite --json")
    sw.add_argument("program", nargs="*", metavar="-- python SCRIPT [ARGS]",
                    help="the program, after --: python SCRIPT [ARGS], python -m MODULE [ARGS] "
                    "or SCRIPT.py [ARGS]")
