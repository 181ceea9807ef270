"""Calibration: the baseline against itself (an A/A run), and the noise floor it measures, kept
so that later runs of the same machine, GPU, backend, build and shape use it for the SAME
threshold (max(1 %, 2 x noise floor), core.analysis) without being told.

An entry's key names everything the floor depends on, so that a home directory shared between
machines, another GPU or a rebuilt kernel never borrows one measured elsewhere:

    host | gpu name [uuid] (or the device) | backend spec | build | shape

build: the variant's .so path with its size and mtime when it has a path, "stock" otherwise.
The file is a JSON object, key -> entry. Entries of sagetui before host-keying (no "host"
field) are never used; `sagetui calibrate --list` shows them and `--clear` removes them.
A floor over the rule's limit is refused (core.analysis.NoiseTooLarge), never stored.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from pathlib import Path
from typing import Any

from sagetui.core import format as fmt
from sagetui.core.blocks.sweep import SweepPoint
from sagetui.core.config import RunConfig, VariantSpec
from sagetui.core.file_writes import atomic_write_text
from sagetui.core.paths import calibration_file
from sagetui.core.report.model import Report
from sagetui.core.samples import Samples
from sagetui.core.statistics.threshold import (
    NoiseTooLarge,
    Threshold,
    age,
    calibrated,
    check_noise_floor,
)


def calibration_path() -> Path:
    return calibration_file()


def _baseline(config: RunConfig) -> VariantSpec:
    return next(v for v in config.variants if v.name == config.baseline_name)


def build_of(spec: VariantSpec) -> str:
    """The build a timing depends on: the .so's path, size and mtime, or "stock"."""
    if not spec.path:
        return "stock"
    try:
        st = os.stat(spec.path)
    except OSError:
        return f"{spec.path} (missing)"
    mtime = _dt.datetime.fromtimestamp(st.st_mtime, _dt.UTC).isoformat(timespec="seconds")
    return f"{spec.path} {st.st_size} B {mtime}"


def gpu_of(gpu: dict[str, Any] | None, device: str | None) -> str:
    """The GPU's name and UUID (when the runner knows one), else the device ("cpu")."""
    if gpu and gpu.get("name"):
        return f"{gpu['name']} {gpu['uuid']}" if gpu.get("uuid") else str(gpu["name"])
    return device or "unknown device"


def entry_fields(config: RunConfig, gpu: dict[str, Any] | None, device: str | None
                 ) -> dict[str, str]:
    base = _baseline(config)
    return {"host": platform.node(), "gpu": gpu_of(gpu, device), "backend": base.spec,
            "build": build_of(base), "shape": config.shape.describe()}


def key(config: RunConfig, gpu: dict[str, Any] | None = None, device: str | None = None) -> str:
    f = entry_fields(config, gpu, device)
    return " | ".join(f[k] for k in ("host", "gpu", "backend", "build", "shape"))


def _load() -> dict[str, Any]:
    try:
        data = json.loads(calibration_path().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(data: dict[str, Any]) -> Path:
    path = calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, json.dumps(data, indent=2) + "\n", overwrite=True)


def entries() -> dict[str, dict[str, Any]]:
    """Every stored entry, by key (old unkeyed ones too: they have no "host")."""
    return {k: e for k, e in _load().items() if isinstance(e, dict)}


def stored_threshold(config: RunConfig, gpu: dict[str, Any] | None = None,
                     device: str | None = None) -> Threshold | None:
    """The threshold of this machine's, GPU's, backend's, build's and shape's calibration;
    None without one, or when the stored floor breaks the rule (it is never used then)."""
    k = key(config, gpu, device)
    entry = entries().get(k)
    if not entry:
        return None
    value = entry.get("noise_floor_percent")
    if not isinstance(value, int | float) or isinstance(value, bool) or not entry.get("host"):
        return None
    try:
        return calibrated(float(value), k, entry.get("measured_utc"))
    except ValueError:  # NoiseTooLarge included: too noisy to judge with
        return None


def store_noise_floor(config: RunConfig, noise_percent: float, gpu: dict[str, Any] | None,
                      device: str | None = None, rounds: int | None = None) -> Path:
    """Store a measured floor under its key; NoiseTooLarge (nothing stored) over the rule."""
    check_noise_floor(noise_percent)
    data = _load()
    data[key(config, gpu, device)] = {
        "noise_floor_percent": noise_percent, **entry_fields(config, gpu, device),
        "measured_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "rounds": rounds, "iterations_per_round": config.iterations}
    return _save(data)


def clear(backend: str | None = None, shape: str | None = None) -> list[str]:
    """Remove every entry, or those whose key names this backend spec and/or this shape (a
    key's parts, old keys' too); the keys removed."""
    data = _load()
    gone = [k for k in data if all(want is None or want in [p.strip() for p in k.split("|")]
                                   for want in (backend, shape))]
    if gone:
        _save({k: e for k, e in data.items() if k not in gone})
    return gone


def earlier(config: RunConfig) -> tuple[str, dict[str, Any]] | None:
    """An entry a calibration of this configuration may replace: this host's, of the same
    backend, build and shape, on any GPU (which GPU a run gets is known only once its runner
    is up; the question is asked before it starts)."""
    f = entry_fields(config, None, None)
    for k, e in entries().items():
        if all(e.get(n) == f[n] for n in ("host", "backend", "build", "shape")):
            return k, e
    return None


def describe_entry(e: dict[str, Any]) -> str:
    noise = e.get("noise_floor_percent")
    when = age(e["measured_utc"]) if isinstance(e.get("measured_utc"), str) else "age unknown"
    return (fmt.noise_floor(noise) if isinstance(noise, int | float) else "no floor") + (
        f", {when}" if e.get("host") else ", unkeyed (before sagetui keyed by host): unused")


def _incomplete(report: Report | None) -> str | None:
    """Why a stopped (Ctrl-C, SIGTERM) or failed A/A run stores nothing: the rounds done are
    no calibration of the floor."""
    if report is None or report.status in (None, "complete"):
        return None
    detail = "; ".join(report.status_detail or [])
    return (f"calibration did not complete ({report.status}" + (f": {detail}" if detail else "")
            + "): nothing was stored; the threshold is unchanged")


def conclude(config: RunConfig, report: Report | None) -> tuple[Threshold | None, str]:
    """Store an A/A run's noise floor: (its threshold, the line saying so), or (None, why the
    threshold is unchanged): an incomplete run, or a floor over the rule (never stored)."""
    why = _incomplete(report)
    if why is not None:
        return None, why
    noise = measured_noise_floor(report) if report is not None else None
    if report is None or noise is None:
        return None, "calibration did not complete: the threshold is unchanged"
    gpu, device = report_gpu(report)
    base = config.model_copy(update={"variants": [_baseline(config)], "baseline": None})
    try:
        where = store_noise_floor(base, noise, gpu, device, rounds=report.rounds)
    except NoiseTooLarge as exc:
        return None, f"calibration refused: {exc}. Nothing was stored; the threshold is unchanged"
    except OSError as exc:
        return None, f"could not store the calibration: {exc}; the threshold is unchanged"
    t = stored_threshold(base, gpu, device)
    assert t is not None
    return t, (f"{fmt.noise_floor(noise, ': ')} (round-to-round, paired); the SAME threshold is "
               f"now {fmt.percent(t.percent)} for {base.variants[0].spec} at "
               f"{config.shape.describe()} on "
               f"{gpu_of(gpu, device)} (stored in {where} for later runs of this host, GPU, "
               "backend, build and shape)")


def conclude_points(config: RunConfig, report: Report | None) -> tuple[int, str]:
    """Store an A/A sweep's (or replay's) noise floor point by point, each under its point's
    shape, the key each point of a later sweep or replay looks its threshold up by:
    (how many were stored, the line saying so). A point over the rule stores nothing."""
    why = _incomplete(report)
    if why is not None:
        return 0, why
    points = report.sweep.points if report is not None and report.sweep else []
    if report is None or not points:
        return 0, "calibration did not complete: the threshold is unchanged"
    gpu, device = report_gpu(report)
    base = config.model_copy(update={"variants": [_baseline(config)], "baseline": None})
    floors: list[float] = []
    refused: list[str] = []
    for p in points:
        noise = point_noise_floor(p)
        if noise is None:
            refused.append(f"{p.shape.describe()}: not measured")
            continue
        try:
            store_noise_floor(base.model_copy(update={"shape": p.shape}), noise, gpu, device,
                              rounds=p.variants[0].round_count)
            floors.append(noise)
        except NoiseTooLarge as exc:
            refused.append(f"{p.shape.describe()}: {exc}")
        except OSError as exc:
            return len(floors), f"could not store the calibration: {exc}"
    line = (f"noise floors of {len(floors)} of {len(points)} points"
            + (f" {fmt.percent(min(floors), 3)} to {fmt.percent(max(floors), 3)} (round-to-"
               f"round, paired), each stored for {base.variants[0].spec} at its shape on "
               f"{gpu_of(gpu, device)}: later sweeps and runs at these shapes judge with them"
               if floors else "")
            + (f"; not stored: {'; '.join(refused)}" if refused else ""))
    return len(floors), line


def point_noise_floor(point: SweepPoint) -> float | None:
    """The noise floor of an A/A sweep's point (None if either side has no rounds)."""
    from sagetui.core.statistics.verdict import noise_floor_percent
    from sagetui.core.sweep.collect import call_round_medians

    sides = [call_round_medians(v) for v in point.variants if v.status == "ok"]
    if len(sides) != 2 or not all(sides):
        return None
    return noise_floor_percent(*sides)


def aa_config(config: RunConfig) -> RunConfig:
    """The calibration run: the baseline and a copy of it, interleaved, at least 5 rounds."""
    base = _baseline(config)
    twin = VariantSpec(name=f"{base.name}-again", backend=base.backend, path=base.path,
                       options=dict(base.options))
    return config.model_copy(update={"variants": [base, twin], "baseline": base.name,
                                     "rounds": max(config.rounds, 5)})


def measured_noise_floor(report: Report) -> float | None:
    """The noise floor of an A/A report (None if either side has no rounds)."""
    from sagetui.core.statistics.summary import median
    from sagetui.core.statistics.verdict import noise_floor_percent

    names = [v.name for v in report.variants or []]
    samples = report.samples or Samples()
    if len(names) != 2 or not all(samples.get(n, {}).get("total") for n in names):
        return None
    a, b = ([median(r) for r in samples[n]["total"]] for n in names)
    return noise_floor_percent(a, b)


def report_gpu(report: Report) -> tuple[dict[str, Any] | None, str | None]:
    """The GPU facts and the device a report was measured on (its calibration key's)."""
    env = report.environment or {}
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else None
    return gpu, env.get("device")


