"""What a program hands over with `sagetui.output(NAME, value)`, made comparable: a tensor, or a
tuple, list or dict of them (as models return), flattened to `NAME[0]`, `NAME.logits`...; any
other value is named as not comparable, never dropped. And one output against the reference
arm's, in chunks on the output's own device, so that a large output costs a few chunks beyond
the reference's copy, not several whole copies in float64."""

from __future__ import annotations

from typing import Any

import torch

from sagetui.core.blocks.swap import OutputSums

CHUNK = 1 << 22  # elements per chunk: 32 MiB of float64 per array


def flatten(name: str, value: Any) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """(tensors by name, problems by name) of one handed-over value."""
    tensors: dict[str, torch.Tensor] = {}
    problems: dict[str, str] = {}

    def walk(n: str, v: Any) -> None:
        if isinstance(v, torch.Tensor):
            tensors[n] = v.detach()
        elif isinstance(v, tuple | list):
            for i, x in enumerate(v):
                walk(f"{n}[{i}]", x)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(f"{n}.{k}", x)
        elif hasattr(v, "to_tuple") and callable(v.to_tuple):  # transformers' ModelOutput
            for k, x in v.items():
                walk(f"{n}.{k}", x)
        else:
            problems[n] = f"not a tensor ({type(v).__name__}): not compared"

    walk(name, value)
    return tensors, problems


def compare(out: torch.Tensor | None, ref: torch.Tensor | None) -> OutputSums:
    """core/accuracy's sums of `out` against `ref` (the reference arm's), or the problem."""
    if out is None or ref is None:
        return OutputSums(problem="the reference arm has no such output" if ref is None
                          else "this arm has no such output")
    if out.shape != ref.shape:
        return OutputSums(problem=f"shape {list(out.shape)} against the reference arm's "
                          f"{list(ref.shape)}")
    o, r = out.reshape(-1), ref.to(out.device).reshape(-1)
    if o.dtype.is_complex or r.dtype.is_complex:
        return OutputSums(problem=f"a complex output ({o.dtype}): not compared")
    sums = dict.fromkeys(("dot", "out_sq", "ref_sq", "abs_diff", "ref_abs", "sq_diff"), 0.0)
    max_abs = 0.0
    bad = {"out": 0, "ref": 0}
    for i in range(0, o.numel(), CHUNK):
        a, b = o[i:i + CHUNK].double(), r[i:i + CHUNK].double()
        bad["out"] += int((~torch.isfinite(a)).sum())
        bad["ref"] += int((~torch.isfinite(b)).sum())
        if bad["out"] or bad["ref"]:
            continue
        d = a - b
        sums["dot"] += float((a * b).sum())
        sums["out_sq"] += float((a * a).sum())
        sums["ref_sq"] += float((b * b).sum())
        sums["abs_diff"] += float(d.abs().sum())
        sums["ref_abs"] += float(b.abs().sum())
        sums["sq_diff"] += float((d * d).sum())
        if d.numel():
            max_abs = max(max_abs, float(d.abs().max()))
    if bad["out"] or bad["ref"]:
        whose = "this arm's" if bad["out"] else "the reference arm's"
        n = bad["out"] or bad["ref"]
        return OutputSums(elements=int(o.numel()), problem=f"NaN or inf in {whose} output "
                          f"({n:,} of {o.numel():,} elements): not compared")
    return OutputSums(sums=sums, max_abs=max_abs, elements=int(o.numel()))


def compare_all(out: dict[str, torch.Tensor], ref: dict[str, torch.Tensor],
                problems: dict[str, str] | None = None) -> dict[str, OutputSums]:
    """Each named output against the reference arm's (names from either side)."""
    result = {name: compare(out.get(name), ref.get(name)) for name in sorted(set(out) | set(ref))}
    for name, why in (problems or {}).items():
        result[name] = OutputSums(problem=why)
    return result
