"""The options and commands of a whole node and a cluster: `sweep --gpus/--slurm`, `merge`,
`node-check`. Kept apart from main.py so that building the parser imports nothing heavy."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `sagetui --help` builds these parsers: nothing heavy at import
    from sagetui.core.gpus import Slot

from sagetui.cli.errors import UsageError

SLURM_HELP = ("KEY=VALUE passed to submitit as slurm_KEY (repeatable): partition, time "
              "(minutes), gpus_per_node, cpus_per_task, mem_gb, account, qos, constraint, "
              "array_parallelism, additional_parameters ... (docs/running-and-comparing.md, Slurm)")


def add_node_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("several GPUs, several nodes")
    g.add_argument("--gpus", metavar="LIST|all", help="one runner per GPU, points spread over "
                   "them: all, or indices (0,1,3); cpu:N starts N CPU runners (a test of the "
                   "split on a machine without GPUs)")
    g.add_argument("--slurm", action="store_true", help="submit the points as a Slurm job "
                   "array through submitit (pip install 'sagetui[slurm]'); each job writes its "
                   "own report, merged into --json when every job is done")
    g.add_argument("--slurm-jobs", type=int, metavar="N", help="jobs in the array (default: "
                   "one per point)")
    g.add_argument("--slurm-opt", action="append", default=[], metavar="KEY=VALUE",
                   help=SLURM_HELP)
    g.add_argument("--slurm-folder", metavar="DIR", default="sagetui-slurm",
                   help="submitit's logs and each job's report (./sagetui-slurm)")
    g.add_argument("--slurm-cluster", default="slurm", choices=["slurm", "local"],
                   help=argparse.SUPPRESS)  # local: submitit's LocalExecutor (the CPU test)
    g.add_argument("--no-wait", action="store_true", help="with --slurm: submit and exit "
                   "(join the jobs' reports later with `sagetui merge`)")


def slots_from_args(args: argparse.Namespace) -> list[Slot] | None:
    """The runners of `--gpus`, checked before any starts; None without --gpus."""
    if getattr(args, "gpus", None) is None:
        return None
    if args.device not in ("auto", None):
        raise UsageError(f"--gpus picks each runner's device: drop --device {args.device}")
    try:
        from sagetui.core.gpus import parse_gpus

        return parse_gpus(args.gpus)
    except ValueError as exc:
        raise UsageError(f"--gpus {exc}") from None


def add_node_commands(sub: Any, add_run_options: Callable[..., None],
                      add_outputs: Callable[[argparse.ArgumentParser], None],
                      full: Callable[[str], bool] = lambda name: True) -> None:
    m = sub.add_parser("merge", help="join sweep reports (Slurm jobs', or runs of parts of "
                       "one sweep) into one report", description="Joins sweep reports that "
                       "are parts of one sweep (the same axes, variants, rounds, iterations, "
                       "warm-up and base shape; no point in two parts) into one report, built "
                       "as a single runner's and checked as `sagetui check` does. Exit 0: "
                       "merged and checked; 1: merged with failed points or a number that "
                       "disagrees; 2: not parts of one sweep, or a file not a readable report.")
    m.add_argument("files", nargs="+", metavar="FILE", help="the parts' reports (JSON)")
    m.add_argument("--json", metavar="PATH", required=True, help="the merged report")
    m.add_argument("--force", action="store_true", help="overwrite it if it exists")

    n = sub.add_parser("node-check", help="the same kernel on every GPU: per-GPU p50, clocks, "
                       "power, temperature, throttling; flags a GPU unlike the others",
                       description="Runs the same kernel on every GPU at once, one runner per "
                       "GPU, and prints per GPU the p50 with its 95 % interval, clocks, power, "
                       "temperature and throttle reasons; a GPU whose p50 lies outside the "
                       "others' intervals (widened by the noise floor) is flagged. Exit 0: "
                       "every GPU agrees; 1: a GPU is flagged or failed; 2: bad input.")
    if not full("node-check"):
        return
    add_run_options(n)
    add_outputs(n)
    n.add_argument("--gpus", metavar="LIST|all", default="all",
                   help="the GPUs to check (all); cpu:N: N CPU runners")
