"""Everything a run has measured so far, and the report built from it.

The collector is fed protocol events; `report()` can be called at any time (after every round
for the recovery file, at the end for the final report) and always gives a valid Report.
"""

from __future__ import annotations

import datetime as _dt
import platform
from array import array
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sagetui import __version__
from sagetui.core import verdict as vd
from sagetui.core.config import RunConfig
from sagetui.core.report import SCHEMA_VERSION, Fault, Report
from sagetui.core.stats import speedup_percent, summarize
from sagetui.core.telemetry import merge_blocks

FUSED_MAINLOOP_PHASES = {
    "int8_qk": "fused inside qk_int_sv_f8_attn_kernel",
    "scale_application": "fused inside qk_int_sv_f8_attn_kernel",
    "online_softmax": "fused inside qk_int_sv_f8_attn_kernel",
    "pv_accumulation": "fused inside qk_int_sv_f8_attn_kernel",
    "final_normalization_and_output": "fused inside qk_int_sv_f8_attn_kernel",
    "timing_policy": "Do not assign independent wall time without changing the exact kernel "
                     "schedule; use source-correlated hardware counters.",
}


@dataclass
class VariantData:
    name: str
    backend: str
    spec: str
    path: str | None
    status: str = "pending"  # pending, ok, failed, excluded
    error: str | None = None
    kernel: str | None = None
    phases: list[tuple[str, str | None]] = field(default_factory=list)
    # samples[phase][round] -> seconds per iteration, "total" included; arrays of doubles
    # (8 bytes a sample, not a 32-byte float object and its pointer: 10^6 iterations of 8
    # phases are 72 MB, not 290)
    samples: dict[str, dict[int, array]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(lambda: array("d"))))
    blocks: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    hashes: list[str] = field(default_factory=list)

    def leaves(self) -> list[str]:
        parents = {p for _, p in self.phases if p}
        return [n for n, _ in self.phases if n not in parents]

    def children(self, parent: str) -> list[str]:
        return [n for n, p in self.phases if p == parent]

    def rounds_done(self) -> list[int]:
        return sorted(self.samples["total"]) if "total" in self.samples else []

    def round_medians(self) -> dict[int, float]:
        return {r: float(np.median(x)) for r, x in self.samples["total"].items() if x}


class Collector:
    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.variants: dict[str, VariantData] = {
            v.name: VariantData(v.name, v.backend, v.spec, v.path) for v in config.variants}
        self.baseline = config.baseline_name
        self.hello: dict[str, Any] = {}
        self.ready: dict[str, Any] = {}
        self.schedule: list[dict[str, Any]] = []
        self.decomposition: dict[str, Any] | None = None
        self.tail_rows: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.completed_rounds: list[int] = []
        self.warmups: dict[str, int] = {}
        self.created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        self.status = "partial"

    # -- events ------------------------------------------------------------------------------
    def on_variant(self, ev: dict[str, Any]) -> None:
        v = self.variants[ev["name"]]
        if ev["status"] == "ok":
            v.status, v.kernel = "ok", ev.get("kernel")
            v.phases = [(n, p) for n, p in ev.get("phases", [])]
        else:
            v.status, v.error = "failed", ev.get("error")

    def on_iteration(self, ev: dict[str, Any]) -> None:
        v = self.variants[ev["variant"]]
        r = ev["round"]
        for leaf, s in ev["phases"].items():
            v.samples[leaf][r].append(s)
        for n, p in v.phases:
            if n in ev["phases"] or p is not None:
                continue
            kids = v.children(n)
            if kids and all(k in ev["phases"] for k in kids):
                v.samples[n][r].append(sum(ev["phases"][k] for k in kids))
        v.samples["total"][r].append(ev["total_s"])

    def on_block(self, ev: dict[str, Any]) -> None:
        v = self.variants[ev["variant"]]
        v.blocks[(ev["round"], ev["half"])] = ev
        if ev.get("output_sha256"):
            v.hashes.append(ev["output_sha256"])
        self.schedule.append({"round": ev["round"], "variant": ev["variant"], "half": ev["half"],
                              "iterations": ev["iterations"]})

    def on_tail_row(self, ev: dict[str, Any]) -> None:
        self.tail_rows.append(ev)

    def drop_round(self, variant: str, round_: int) -> None:
        """Forget a variant's incomplete round (the runner died inside it)."""
        v = self.variants[variant]
        for per_round in v.samples.values():
            per_round.pop(round_, None)

    # -- derived ------------------------------------------------------------------------------
    def active(self) -> list[str]:
        return [n for n, v in self.variants.items() if v.status == "ok"]

    def verdicts(self) -> dict[str, vd.Verdict]:
        base = self.variants.get(self.baseline)
        if base is None or base.status not in ("ok", "excluded"):
            return {}
        bm = base.round_medians()
        out = {}
        for name, v in self.variants.items():
            if name == self.baseline:
                continue
            vm = v.round_medians()
            common = sorted(set(bm) & set(vm) & set(self.completed_rounds))
            if not common:
                continue
            out[name] = vd.paired_speedup([bm[r] for r in common], [vm[r] for r in common],
                                          threshold_percent=self.threshold_percent())
        return out

    def threshold_percent(self) -> float:
        if self.config.threshold_percent is not None:
            return self.config.threshold_percent
        return vd.default_threshold_percent(self.config.noise_floor_percent)

    # -- the report ---------------------------------------------------------------------------
    def report(self) -> Report:
        cfg = self.config
        shape = cfg.shape
        rounds_done = sorted(self.completed_rounds)
        verdicts = self.verdicts()
        variants = []
        samples: dict[str, dict[str, list[list[float]]]] = {}
        base = self.variants.get(self.baseline)
        base_sha = base.hashes[0] if base and base.hashes else None
        base_timing = None
        for name, v in self.variants.items():
            entry: dict[str, Any] = {"name": name, "path": v.path, "backend": v.backend,
                                     "spec": v.spec, "status": v.status if v.status != "pending"
                                     else "failed", "error": v.error}
            rs = [r for r in v.rounds_done() if r in rounds_done]
            if rs:
                totals = [v.samples["total"][r] for r in rs]
                flat = np.concatenate([np.frombuffer(t) for t in totals])
                entry["rounds"] = [summarize(t) for t in totals]
                entry["timing"] = summarize(flat)
                if name == self.baseline:
                    base_timing = entry["timing"]
                entry["phase_timings"] = {
                    p: summarize(np.concatenate([np.frombuffer(v.samples[p][r]) for r in rs]))
                    for p, _ in v.phases if any(v.samples[p].get(r) for r in rs)}
                samples[name] = {p: [v.samples[p][r].tolist() for r in rs]
                                 for p in [*(n for n, _ in v.phases), "total"]
                                 if all(v.samples[p].get(r) for r in rs)}
                z_flags = vd.outliers(flat)
                where, offsets = [], np.cumsum([0] + [len(t) for t in totals])
                for i in z_flags:
                    r_i = int(np.searchsorted(offsets, i, side="right") - 1)
                    where.append((rs[r_i], int(i - offsets[r_i])))
                entry["outliers"] = {"count": len(z_flags), "where": where}
                if len(rs) >= 2:
                    medians = v.round_medians()  # once, not once per round
                    entry["drift"] = vd.drift([medians[r] for r in rs]).to_dict()
                by_round: dict[int, list[dict[str, Any]]] = defaultdict(list)
                for (r, _), b in sorted(v.blocks.items()):  # once, not once per round
                    by_round[r].append(b.get("telemetry") or {})
                tel = [merge_blocks(by_round.get(rr, [])) for rr in rs]
                entry["telemetry"] = tel
                ops = _ops(shape)
                entry["achieved"] = _achieved(ops, entry["phase_timings"], entry["timing"],
                                              self.ready.get("gpu"))
            if v.hashes:
                entry["output_sha256"] = v.hashes[-1]
                entry["deterministic"] = len(set(v.hashes)) == 1
                if base_sha:
                    entry["byte_exact"] = v.hashes[-1] == base_sha
                last = v.blocks[max(v.blocks)]
                for k in ("checksum", "max_abs_diff", "mean_abs_diff"):
                    if last.get(k) is not None:
                        entry[k] = last[k]
            entry["input_sha256"] = self.ready.get("input_sha256")
            if name in verdicts:
                entry["verdict"] = verdicts[name].to_dict()
            variants.append(entry)
        for entry in variants:
            if base_timing and entry.get("timing"):
                entry["speedup_vs_baseline_percent"] = speedup_percent(
                    base_timing["p50_s"], entry["timing"]["p50_s"])
        data: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "sagetui", "version": __version__},
            "created_utc": self.created,
            "status": self.status,
            "environment": self._environment(),
            "config": cfg.model_dump(mode="json"),
            "metadata": cfg.metadata or None,
            "layout": shape.layout,
            **shape.tensor_shapes(),
            "warmup": cfg.warmup,
            "iterations": cfg.iterations,
            "iterations_per_round": cfg.iterations,
            "rounds": len(rounds_done),
            "baseline": self.baseline,
            "reference_output_sha256": base_sha,
            "variants": variants,
            "schedule": [s for s in self.schedule if s["round"] in rounds_done],
            "samples": samples or None,
            "faults": [f.model_dump() for f in self.faults] or None,
        }
        if self.ready.get("scheduler"):
            data["scheduler"] = self.ready["scheduler"]
        base_entry = _entry(variants, base.name) if base else {}
        if base and base.status in ("ok", "excluded") and "phase_timings" in base_entry:
            data["phase_timings"] = _entry(variants, base.name)["phase_timings"]
            if base.kernel and any(n == "fused_mainloop" for n, _ in base.phases):
                data["fused_mainloop_phases"] = FUSED_MAINLOOP_PHASES
            data["achieved"] = _entry(variants, base.name).get("achieved")
        d = self.decomposition
        if d and "equal" in d:
            data["manual_decomposition_vs_public_sage2"] = {
                k: d[k] for k in ("equal", "max_abs", "mean_abs", "decomposed_sha256",
                                  "public_sha256", "variant")}
            data["manual_checksum"] = d["manual_checksum"]
            data["reference_checksum"] = d["reference_checksum"]
        if self.tail_rows:
            data["tail_study"] = [_tail(row, self.ready.get("scheduler")) for row in self.tail_rows]
        if not variants or not any(e.get("timing") for e in variants):
            data.setdefault("variants", variants)
        return Report.model_validate(_drop_none(data))

    def _environment(self) -> dict[str, Any]:
        h = self.hello
        return _drop_none({"python": h.get("python"), "torch": h.get("torch"),
                           "device": self.ready.get("device") or h.get("device"),
                           "gpu": self.ready.get("gpu"), "platform": platform.platform(),
                           "host": platform.node(), "protocol": h.get("protocol")})


def _entry(variants: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(e for e in variants if e["name"] == name)


def _ops(shape) -> float:
    from sagetui.core.scheduler import attention_ops

    return attention_ops(batch=shape.batch, heads=shape.heads, q_len=shape.q_len,
                         kv_len=shape.n_kv_len, head_dim=shape.head_dim, causal=shape.causal)


def _achieved(ops: float, phases: dict, timing: dict, gpu: dict | None) -> dict[str, Any]:
    from sagetui.core.scheduler import achieved

    name = (gpu or {}).get("name")
    whole = achieved(ops, timing["p50_s"], name)
    out = {"call_tops": whole["tops"], "peak_tops": whole["peak_tops"],
           "call_share_of_peak": whole["share_of_peak"]}
    if "fused_mainloop" in phases:
        ml = achieved(ops, phases["fused_mainloop"]["p50_s"], name)
        out.update(mainloop_tops=ml["tops"], mainloop_share_of_peak=ml["share_of_peak"])
    return out


def _tail(row: dict[str, Any], sched: dict[str, Any] | None) -> dict[str, Any]:
    from sagetui.core.scheduler import tail_row

    kernel = (sched or {}).get("kernel", "sm89")
    geo = tail_row(row["sweep"], kernel, row["q_len"], row["kv_len"])
    return {**geo, "mainloop": summarize(row["mainloop"]), "checksum": row["checksum"],
            "variant": row["variant"], "phase": row["phase"]}


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}
