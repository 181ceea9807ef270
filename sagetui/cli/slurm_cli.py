"""`sagetui sweep --slurm`: the sweep's points as a Slurm job array, submitted through
submitit (an optional extra: pip install 'sagetui[slurm]'). Each job writes its own report
under --slurm-folder; when they are all done (unless --no-wait) `merge` joins them into
--json, printed and checked as a one-node sweep is.

`--slurm-opt KEY=VALUE` becomes submitit's `slurm_KEY` (partition, time in minutes,
gpus_per_node, cpus_per_task, mem, account, qos, constraint, exclude, array_parallelism,
additional_parameters...): submitit checks the names before anything is submitted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from sagetui.cli.errors import UsageError
from sagetui.core.config import RunConfig
from sagetui.core.report.io import load_report
from sagetui.core.sweep.merge import merge
from sagetui.core.sweep.plan import Axes, plan
from sagetui.session.slurm import job_points, run_job


def slurm_parameters(opts: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` options as submitit's slurm_KEY parameters, numbers as numbers."""
    out: dict[str, Any] = {}
    for opt in opts:
        key, eq, value = opt.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--slurm-opt {opt!r}: want KEY=VALUE, e.g. partition=gpu")
        v: Any = value
        for cast in (int, float):
            try:
                v = cast(value)
                break
            except ValueError:
                continue
        out[f"slurm_{key.strip().removeprefix('slurm_')}"] = v
    return out


def executor(args: argparse.Namespace) -> Any:
    try:
        import submitit
    except ImportError:
        raise UsageError("--slurm needs submitit: pip install 'sagetui[slurm]'") from None
    params = slurm_parameters(args.slurm_opt)
    try:  # no sbatch/srun here: say so in one line rather than a traceback
        ex = submitit.AutoExecutor(folder=Path(args.slurm_folder) / "logs",
                                   cluster=args.slurm_cluster)
    except RuntimeError as exc:
        raise UsageError(f"--slurm: {str(exc).splitlines()[0]}") from None
    try:
        ex.update_parameters(name="sagetui-sweep", **params)
    except (NameError, ValueError, TypeError) as exc:
        raise UsageError(f"--slurm-opt: {str(exc).splitlines()[0]}") from None
    return ex


def cmd_slurm_sweep(args: argparse.Namespace, config: RunConfig, axes: Axes,
                    err: Console) -> int:
    from sagetui.cli.sweep_output import finish_sweep

    ex = executor(args)
    parts = job_points(len(plan(config.shape, axes)), args.slurm_jobs or 10 ** 6)
    folder = Path(args.slurm_folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    outs = [str(folder / f"part-{j:03d}.json") for j in range(len(parts))]
    cfg = config.model_dump(mode="json")
    jobs = ex.map_array(run_job, [cfg] * len(parts), [axes.to_dict()] * len(parts), parts,
                        outs, [args.gpus] * len(parts))
    err.print(f"submitted {len(jobs)} jobs ({jobs[0].job_id.split('_')[0]}): reports in "
              f"{escape(str(folder))}")
    if args.no_wait:
        err.print(escape(f"join them when done: sagetui merge {folder}/part-*.json --json "
                         "sweep.json"))
        return 0
    failed = []
    for job, out in zip(jobs, outs, strict=True):
        try:
            job.result()
        except Exception as exc:  # a job that failed: the others' points are still merged
            failed.append(out)
            err.print(escape(f"job {job.job_id} failed: {str(exc).splitlines()[-1][:300]}"))
    got = [(o, load_report(o)) for o in outs if o not in failed]
    if not got:
        return 1
    report = merge(got)
    return finish_sweep(report, args, err, None)
