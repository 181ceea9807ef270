"""Calibration: the baseline against itself (an A/A run), and the noise floor it measures, kept
so that later runs of the same backend and shape use it for the SAME threshold
(max(1 %, 2 x noise floor)) without being told. Used by `sagetui calibrate` and the console."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sagetui.core.config import RunConfig
from sagetui.core.io import atomic_write_text
from sagetui.core.paths import calibration_file
from sagetui.core.report import Report


def calibration_path() -> Path:
    return calibration_file()


def key(config: RunConfig) -> str:
    base = next(v for v in config.variants if v.name == config.baseline_name)
    return f"{base.spec} | {config.shape.describe()} | {config.device}"


def _load() -> dict[str, Any]:
    try:
        data = json.loads(calibration_path().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def stored_noise_floor(config: RunConfig) -> float | None:
    entry = _load().get(key(config))
    value = entry.get("noise_floor_percent") if isinstance(entry, dict) else None
    return float(value) if isinstance(value, (int, float)) and 0 <= value <= 100 else None


def store_noise_floor(config: RunConfig, noise_percent: float, gpu: str | None) -> Path:
    data = _load()
    data[key(config)] = {"noise_floor_percent": noise_percent, "gpu": gpu}
    path = calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, json.dumps(data, indent=2) + "\n", overwrite=True)


def aa_config(config: RunConfig) -> RunConfig:
    """The calibration run: the baseline and a copy of it, interleaved, at least 5 rounds."""
    from sagetui.core.config import VariantSpec

    base = next(v for v in config.variants if v.name == config.baseline_name)
    twin = VariantSpec(name=f"{base.name}-again", backend=base.backend, path=base.path,
                       options=dict(base.options))
    return config.model_copy(update={"variants": [base, twin], "baseline": base.name,
                                     "rounds": max(config.rounds, 5)})


def measured_noise_floor(report: Report) -> float | None:
    """The noise floor of an A/A report (None if either side has no rounds)."""
    import numpy as np

    from sagetui.core.verdict import noise_floor_percent

    names = [v.name for v in report.variants or []]
    samples = report.samples or {}
    if len(names) != 2 or not all(samples.get(n, {}).get("total") for n in names):
        return None
    a, b = ([float(np.median(r)) for r in samples[n]["total"]] for n in names)
    return noise_floor_percent(a, b)
