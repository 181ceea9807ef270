"""One job of a `sagetui sweep --slurm` array: some of the sweep's points, measured on the
job's node by the same pool as `--gpus` (every GPU Slurm gave the job, or a CPU runner where
it gave none), written as a sweep report of its own. `sagetui merge` joins the jobs' reports.

submitit pickles this function and runs it in the job; it imports nothing of the UI.
"""

from __future__ import annotations

from typing import Any

from sagetui.core.config import RunConfig
from sagetui.core.gpus import node_gpus, parse_gpus
from sagetui.core.report.io import save_report
from sagetui.core.sweep.plan import Axes


def job_points(total: int, jobs: int) -> list[list[int]]:
    """The points of each job: dealt round-robin, so that every job gets small and large
    shapes alike (a sweep's points ascend in length within a series)."""
    jobs = max(1, min(jobs, total))
    return [list(range(j, total, jobs)) for j in range(jobs)]


def run_job(config: dict[str, Any], axes: dict[str, Any], indices: list[int], out: str,
            gpus: str | None = None) -> str:
    """Measure `indices` of the sweep; the report's path."""
    from sagetui.session.pool import PoolSweep

    cfg = RunConfig.model_validate(config)
    slots = parse_gpus(gpus or ("all" if node_gpus() else "cpu:1"))
    report = PoolSweep(cfg, Axes(**axes), slots, indices=indices).run()
    save_report(report, out, overwrite=True)
    return out
