"""`check` of each variant's speed of light (core/sol.py): the copy bandwidth from its raw
repeats, and every figure of a variant's `sol` block recomputed from the report's raw fields:
the shape, the options and kernel it ran, its phase p50s, its rounds' telemetry, the GPU's max
SM clock and its datasheet peak. A figure recorded that the report's fields cannot give is a
mismatch too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sagetui.core import scheduler, sol
from sagetui.core.config import shape_of
from sagetui.core.derived import shape_ops
from sagetui.core.options import with_defaults
from sagetui.core.peaks import kernel_peak
from sagetui.core.report.mismatch import Mismatch

if TYPE_CHECKING:
    from sagetui.core.report.mismatch import MismatchCollector
    from sagetui.core.report.model import Report, Variant

WHY = "core/sol.py, from the report's raw fields"


def _configured(report: Report, name: str) -> dict[str, Any]:
    """The options the configuration gave a variant (what figures.peak reads)."""
    for spec in (report.config or {}).get("variants") or []:
        if isinstance(spec, dict) and spec.get("name") == name \
                and isinstance(spec.get("options"), dict):
            return dict(spec["options"])
    return {}


def expected_sol(report: Report, v: Variant) -> dict[str, Any] | None:
    """What core/sol.speed_of_light gives for this variant from the report's fields."""
    shape = shape_of((report.config or {}).get("shape"))
    gpu = (report.environment or {}).get("gpu")
    gpu = gpu if isinstance(gpu, dict) else {}
    if shape is None or not v.backend:
        return None
    configured = _configured(report, v.name)
    options = v.options if v.options is not None else with_defaults(v.backend, configured)
    kernel = v.kernel or scheduler.kernel_of(v.backend, options, gpu.get("capability"))
    name = gpu.get("name")
    pk = kernel_peak(name if isinstance(name, str) else None, v.backend, configured,
                     shape.dtype)
    p50s = {n: s.p50_s for n, s in (v.phase_timings or {}).items()}
    return sol.speed_of_light(
        sol.phase_traffic(v.backend, kernel, options, shape.model_dump()), p50s,
        sol.gpu_copy_gbps(gpu), ops=shape_ops(shape), compute_phase=sol.compute_phase(p50s),
        peak_tops=pk["peak_tops"] if pk else None,
        mean_clock_mhz=sol.mean_sm_clock(t.model_dump() for t in v.telemetry or []),
        max_clock_mhz=sol.max_clock(gpu))


def _same(c: MismatchCollector, path: str, recorded: dict[str, Any],
          want: dict[str, Any]) -> None:
    for key in dict.fromkeys([*recorded, *want]):  # one left out: a finding (from schema 5)
        value = recorded.get(key)
        if isinstance(value, dict):
            _same(c, f"{path}.{key}", value, want.get(key) or {})
        elif value is not None and want.get(key) is None:
            c.out.append(Mismatch(f"{path}.{key}", value, None,
                                  "not derivable from the report's fields (" + WHY + ")"))
        else:
            c.eq(f"{path}.{key}", value, want.get(key), WHY)


def check_sol(c: MismatchCollector, report: Report) -> None:
    gpu = (report.environment or {}).get("gpu")
    block = gpu.get("copy_bandwidth") if isinstance(gpu, dict) else None
    if isinstance(block, dict) and block.get("gbps") is not None:
        want = sol.gpu_copy_gbps(gpu)
        if want is None:
            c.out.append(Mismatch("$.environment.gpu.copy_bandwidth.gbps", block["gbps"], None,
                                  "no repeats (seconds, moved_bytes) to recompute it from"))
        c.eq("$.environment.gpu.copy_bandwidth.gbps", block["gbps"], want,
             "median over the repeats of moved_bytes / seconds / 1e9")
    for i, v in enumerate(report.variants or []):
        if v.sol is not None:
            _same(c, f"$.variants[{i}].sol", v.sol.model_dump(exclude_none=True),
                  expected_sol(report, v) or {})
