"""A live run's events folded into the RunData the panels show (on the UI thread).

`apply` is the one `match` on the session's events for the console's model; the log lines are
core/eventlog.py's. Samples are folded in column by column, an array per phase, never sample by
sample: 10,000 iterations a second must not cost the UI thread a fifth of its time.
"""

from __future__ import annotations

import time

import numpy as np

from sagetui.core import events as ev
from sagetui.core.config import RunConfig
from sagetui.core.statistics.summary import summarize
from sagetui.core.statistics.threshold import Threshold
from sagetui.core.telemetry import merge_blocks
from sagetui.tui.phase_stats import PhaseStore
from sagetui.tui.progress import Progress
from sagetui.tui.run_data import RunData
from sagetui.tui.variant_view import VariantView


def live_source(config: RunConfig) -> RunData:
    """The live run's source before its first run: the configured variants, nothing measured."""
    data = RunData("live run", live=True)
    for spec in config.variants:
        v = data.variant(spec.name)
        v.backend, v.path = spec.backend, spec.path
    data.baseline = config.baseline_name
    data.shape = config.shape.describe()
    data.iterations_per_round = config.iterations
    data.warmup = config.warmup
    data.progress.rounds_planned = config.rounds
    return data


def show_pending(data: RunData, config: RunConfig) -> None:
    """`data` shows `config` as live_source's would, in place (the app, the run control and
    the sweep tab hold this object): everything of an earlier run is forgotten."""
    version = data.version
    vars(data).update(vars(live_source(config)))
    data.version = version + 1  # what the panels synced last is stale


def begin_run(data: RunData, rounds: int, iterations: int,
              variants: list[tuple[str, str]]) -> None:
    names = {n for n, _ in variants}
    for stale in [n for n in data.variants if n not in names]:
        del data.variants[stale]  # a variant of an earlier run (a calibration's copy, say)
    for v in list(data.variants.values()):
        data.variants[v.name] = VariantView(name=v.name, index=v.index, enabled=v.enabled,
                                            backend=v.backend)
    for name, backend in variants:
        data.variant(name).backend = backend
    data.status = "running"
    data.tail_rows, data.faults, data.decomposition = [], [], None
    data.decomposition_skipped = None
    data.rounds_done = 0
    data.progress = Progress(rounds_planned=rounds, iterations_per_round=iterations,
                             started=time.monotonic(), stage="starting")
    data.touch()


def apply(data: RunData, e: ev.Event) -> None:
    """Fold one event in. Iterations move `sample_version` (the iteration plot); every other
    event that changes what the panels show moves `version`."""
    match e:
        case ev.Iterations():
            fold_iterations(data, e)
            return
        case ev.Hello():
            data.device, data.torch = e.device, e.torch
        case ev.VariantLoaded():
            v = data.variant(e.name)
            v.backend, v.path, v.kernel = e.backend, e.path, e.kernel
            v.status = "ok" if e.status == "ok" else "failed"
            v.error = e.error
            v.phases = list(e.phases)
        case ev.Ready():
            _ready(data, e)
        case ev.WarmupDone():
            data.progress.stage = "warm-up"
        case ev.RoundStarted():
            p = data.progress
            p.round, p.iteration_in_round = e.round, 0
            p.variants_in_round = len(e.variants) or 1
            p.round_started, p.stage = time.monotonic(), "measuring"
        case ev.RoundDone():
            _round_done(data, e)
        case ev.BlockDone():
            v = data.variant(e.variant)
            v.block_telemetry[(e.round, e.half)] = e.telemetry or {}
            v.output_sha256 = e.output_sha256 or v.output_sha256
            v.accuracy = e.accuracy or v.accuracy  # a variant's first block carries them
            v.sdpa_backend = e.sdpa_backend or v.sdpa_backend
        case ev.TailRow():
            data.tail_rows.append({"sweep": e.sweep, "q_len": e.q_len, "kv_len": e.kv_len,
                                   "checksum": e.checksum, "variant": e.variant,
                                   "phase": e.phase,
                                   "mainloop": summarize(e.mainloop)})
            data.progress.stage = "tail study"
        case ev.Decomposition():
            data.progress.stage = "post-run"
            if e.equal is not None:
                data.decomposition = ev.to_dict(e)
            else:
                data.decomposition_skipped = e.skipped
        case ev.FaultRaised(fault=f):
            data.faults.append(f.model_dump())
            # these keep the variant running; every other fault means the session dropped it
            if f.variant in data.variants and f.kind not in ("session", "display", "nonfinite"):
                data.variants[f.variant].status = "failed"
                data.variants[f.variant].error = f.message
        case ev.Finished():
            data.status = e.status or "complete"
            data.progress.stage = "done"
            data.progress.finished = time.monotonic()
        case ev.PointStarted() | ev.PointDone():
            return  # the sweep tab's (sweep_tab.py)
        case ev.FromRunner():
            apply(data, e.event)  # the console runs one runner (--gpus is the CLI's)
            return
        case ev.LogMessage() | ev.PhaseStarted() | ev.RunnerError() | ev.Bye():
            return  # nothing the panels show
        case _:
            ev.unexpected(e)
            return
    data.touch()


def _ready(data: RunData, e: ev.Ready) -> None:
    # every variant event comes before "ready": one still pending was replaced by the
    # session's choice for this machine (an `auto` configuration), so forget it
    for name in [n for n, x in data.variants.items() if x.status == "pending"]:
        del data.variants[name]
    for i, x in enumerate(data.variants.values()):
        x.index = i
    if data.baseline not in data.variants and data.variants:
        data.baseline = next(iter(data.variants))
    data.device = e.device or data.device
    data.gpu_name = (e.gpu or {}).get("name")
    data.gpu_state = (e.gpu or {}).get("state")
    data.scheduler = e.scheduler
    data.progress.stage = "warm-up"


def _round_done(data: RunData, e: ev.RoundDone) -> None:
    p = data.progress
    if p.round_started is not None:
        p.measured_s += time.monotonic() - p.round_started
        p.round_started = None
    r = e.round
    data.rounds_done += 1
    for name, v in data.variants.items():
        if r in v.total.round_start and r not in v.completed_rounds:
            v.completed_rounds.append(r)
            # a round's blocks are its two halves (session/schedule.py): looked up, not
            # found by sorting every block of the run at every round
            blocks = [v.block_telemetry[k] for k in ((r, 0), (r, 1)) if k in v.block_telemetry]
            if blocks:
                v.round_telemetry[r] = merge_blocks(blocks)
        verdict = e.verdicts.get(name)
        if verdict is not None:
            v.verdict = verdict
        drift = e.drift.get(name)
        if drift is not None:
            v.drift = drift
    for name, v in data.variants.items():
        if e.speedups:  # the session's analysis (core.analysis), when it sent one
            v.speedup_percent = e.speedups.get(name)
        if v.verdict is not None:
            data.threshold = Threshold.from_fields(v.verdict) or data.threshold


def fold_iterations(data: RunData, e: ev.Iterations) -> None:
    """A parent phase gets the sum of its children (in their order) when all of them are in
    the event."""
    v = data.variant(e.variant)
    r, n = e.round, e.n
    cols = {leaf: np.asarray(col, dtype=np.float64) for leaf, col in e.phases.items()}
    stores = v.phase_store
    for leaf, col in cols.items():
        if leaf not in stores:
            stores[leaf] = PhaseStore()
        stores[leaf].add_many(r, col)
    for parent in dict.fromkeys(pp for _, pp in v.phases if pp):
        kids = [k for k, pp in v.phases if pp == parent]
        if all(k in cols for k in kids):
            acc = cols[kids[0]].copy()
            for k in kids[1:]:
                acc += cols[k]
            if parent not in stores:
                stores[parent] = PhaseStore()
            stores[parent].add_many(r, acc)
    v.total.add_many(r, np.asarray(e.total_s, dtype=np.float64))
    v.totals.sync()
    p = data.progress
    p.iteration_in_round += n
    p.iterations_done += n
    p.current_variant = v.name
    data.sample_version += 1
