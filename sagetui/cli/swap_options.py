"""`sagetui swap`'s options (cli/swap.py runs it): here, so that building the parser imports
nothing of the swap itself."""

from __future__ import annotations

import argparse

UNCHANGED = "unchanged"  # core/blocks/swap.UNCHANGED: the program as it is


def add_swap_command(sub: argparse._SubParsersAction, full: bool) -> None:  # type: ignore[type-arg]
    sw = sub.add_parser(
        "swap", help="swap the attention inside your own program and measure the whole step",
        description="Runs the program in rounds of fresh processes, one per arm (the program "
        "unchanged, and each --variant with the attention calls its backend can run sent to "
        "it), interleaved ABBA; times the step the program marks (with "
        "sagetui.region(\"step\"): ..., else its first attention call to its last), the "
        "attention time, and compares its outputs (sagetui.output(NAME, tensor), else the last "
        "attention call's) with the unchanged program's.")
    if not full:
        return
    sw.add_argument("--variant", action="append", default=[], metavar="NAME=SPEC",
                    help="an arm: a backend as `sagetui run` takes it (sage2-sm90, "
                    "reference[slowdown=2]); repeat for more")
    sw.add_argument("--baseline", metavar="NAME", default=UNCHANGED,
                    help=f"the arm the others are judged against (default {UNCHANGED}: the "
                    "program as it is)")
    sw.add_argument("--rounds", type=int, default=4, metavar="N",
                    help="rounds, each running every arm once (default 4; 2 at least for an "
                    "interval)")
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
