"""`check` of the kernels' accuracy and throughput fields: accuracy ranges; per query head,
each head's metrics from its sums, the whole output's metrics from all heads' sums, the largest
error, the element count, the heads compared and the worst heads; the inputs block against the
configuration; and the share of peak recomputed from the shape, the p50 and the kernel's own
datasheet peak."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sagetui.core import accuracy, distributions
from sagetui.core.config import shape_of
from sagetui.core.derived import OPS_FORMULA, attention_ops, call_and_mainloop
from sagetui.core.peaks import kernel_peak
from sagetui.core.run.figures import MAINLOOP

if TYPE_CHECKING:
    from sagetui.core.report.mismatch import MismatchCollector
    from sagetui.core.report.model import Accuracy, Report


def _specs(report: Report) -> dict[str, dict[str, Any]]:
    variants = (report.config or {}).get("variants")
    return {v["name"]: v for v in variants if isinstance(v, dict)
            and isinstance(v.get("name"), str)} if isinstance(variants, list) else {}


def check_kernel_fields(c: MismatchCollector, report: Report) -> None:
    from sagetui.core.report.mismatch import Mismatch

    env_gpu = (report.environment or {}).get("gpu")
    gpu = env_gpu.get("name") if isinstance(env_gpu, dict) else None
    shape = shape_of((report.config or {}).get("shape"))
    specs = _specs(report)
    _check_inputs(c, report)
    for i, v in enumerate(report.variants or []):
        p = f"$.variants[{i}]"
        if v.accuracy is not None:
            for why in accuracy.problems(v.accuracy.model_dump()):
                c.out.append(Mismatch(f"{p}.accuracy", why.split()[1], "in range", why))
            _check_heads(c, f"{p}.accuracy", v.accuracy, shape.heads if shape else None)
        ach = v.achieved or {}
        if not ach or not shape or not v.timing:
            continue
        ops = attention_ops(batch=shape.batch, heads=shape.heads, q_len=shape.q_len,
                            kv_len=shape.n_kv_len, head_dim=shape.head_dim, causal=shape.causal,
                            seqlens=shape.seqlens, kv_seqlens=shape.kv_seqlens)
        owe = c.owed if report.tool is not None else c.eq  # sagetui's achieved has them all
        owe(f"{p}.achieved.call_tops", ach.get("call_tops"), ops / v.timing.p50_s / 1e12,
            f"{OPS_FORMULA} / p50")
        options = specs.get(v.name, {}).get("options")
        peak = kernel_peak(gpu if isinstance(gpu, str) else None, v.backend or "",
                           options if isinstance(options, dict) else {}, shape.dtype)
        if peak is not None and v.peak is not None:  # reports before the per-type peaks: no
            c.eq(f"{p}.peak.qk_type", v.peak.qk_type, peak["qk_type"], "the kernel's QK type")
            c.eq(f"{p}.peak.pv_type", v.peak.pv_type, peak["pv_type"], "the kernel's PV type")
            c.eq(f"{p}.achieved.peak_tops", ach.get("peak_tops"), peak["peak_tops"],
                 f"datasheet peak of {peak['qk_type']} QK and {peak['pv_type']} PV on {gpu}")
        tops, top = ach.get("call_tops"), ach.get("peak_tops")
        if tops is not None and top:
            c.eq(f"{p}.achieved.call_share_of_peak", ach.get("call_share_of_peak"),
                 tops / top, "call_tops / peak_tops")
        ml = (v.phase_timings or {}).get(MAINLOOP)
        if ml is not None:
            want = call_and_mainloop(ops, v.timing.p50_s, ml.p50_s, top)
            for key in ("mainloop_tops", "mainloop_share_of_peak"):
                owe(f"{p}.achieved.{key}", ach.get(key), want.get(key),
                    f"{OPS_FORMULA} / p50 of {MAINLOOP}"
                    + (", over peak_tops" if "share" in key else ""))


METRICS = ("cosine_similarity", "relative_l1", "rmse")  # from the sums (max_abs_error is not)


def _check_heads(c: MismatchCollector, p: str, a: Accuracy, total_heads: int | None) -> None:
    """Per-head accuracy: what its sums and the heads compared imply."""
    from sagetui.core.report.mismatch import MISSING, Mismatch

    if not a.per_head:
        if a.heads is not None:  # it says which heads it compared: their entries are gone
            c.out.append(Mismatch(f"{p}.per_head", MISSING, f"heads {a.heads}",
                                  "one entry per head compared (accuracy.heads)"))
        return
    heads = [h.head for h in a.per_head]
    compared = list(range(total_heads)) if a.heads == "all" and total_heads else a.heads
    c.recomputed.update(f"{p}.per_head[{j}].head" for j in range(len(heads)))
    if isinstance(compared, list) and heads != compared:
        c.out.append(Mismatch(f"{p}.per_head", heads, compared, "one entry per head compared "
                              "(accuracy.heads), in head order"))
    entries = [h.model_dump() for h in a.per_head]
    finite = all(v is not None for e in entries for v in (*e["sums"].values(),
                                                           e["max_abs_error"]))
    for j, e in enumerate(entries):
        if all(v is not None for v in e["sums"].values()):
            want = accuracy.from_sums(e["sums"], 0.0, e["elements"])
            for key in METRICS:
                c.owed(f"{p}.per_head[{j}].{key}", e[key], want[key], "from the head's sums")
    c.owed(f"{p}.elements", a.elements, sum(e["elements"] for e in entries),
         "the heads' elements added")
    if finite:
        want = accuracy.combine(entries)
        for key in (*METRICS, "max_abs_error"):
            c.owed(f"{p}.{key}", getattr(a, key), want[key],
                   "the largest of the heads'" if key == "max_abs_error"
                   else "from the heads' sums added")
    worst = accuracy.worst_heads({e["head"]: e["relative_l1"] for e in entries})
    c.recomputed.update(f"{p}.worst_heads[{j}]" for j in range(len(a.worst_heads or [])))
    if a.worst_heads is not None and a.worst_heads != worst:
        c.out.append(Mismatch(f"{p}.worst_heads", a.worst_heads, worst,
                              f"the {accuracy.WORST_HEADS} largest relative L1, worst first"))


def _check_inputs(c: MismatchCollector, report: Report) -> None:
    """The inputs block names the distribution (or file) and seed the configuration ran."""
    from sagetui.core.report.mismatch import Mismatch

    cfg, block = report.config or {}, report.inputs
    shape = cfg.get("shape")
    if block is None or not isinstance(shape, dict):
        return
    want: list[tuple[str, Any, Any, str]]
    if block.file is not None or cfg.get("inputs_path"):
        want = [("file", block.file, cfg.get("inputs_path"), "config.inputs_path")]
    else:
        want = [("distribution", block.distribution,
                 shape.get("distribution", distributions.DEFAULT), "config.shape.distribution"),
                ("seed", block.seed, cfg.get("seed"), "config.seed")]
        drawn = distributions.TABLE.get(block.distribution or "")
        if drawn is not None:  # its parameters are the distribution's own (a left-out one too)
            want.append(("parameters", block.parameters, drawn.block().get("parameters"),
                         f"the {block.distribution} distribution's parameters"))
    for key, recorded, expected, why in want:
        c.recomputed.add(f"$.inputs.{key}")
        if recorded != expected:
            c.out.append(Mismatch(f"$.inputs.{key}", recorded, expected, why))
