"""The report model: reference reports round-trip unchanged; sagetui's reports carry the
envelope; the JSON Schema in the repository is the one the model generates."""

import json
from pathlib import Path

from sagetui.core.report.io import load_report, save_report
from sagetui.core.report.model import Report

from .conftest import ROOT, TWO_BUILDS, VIDEO_CALL_PHASES


def _leaf_paths(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaf_paths(v, f"{prefix}.{k}")
    elif isinstance(obj, list) and obj and isinstance(obj[0], (dict, list)):
        for i, v in enumerate(obj):
            yield from _leaf_paths(v, f"{prefix}[{i}]")
    else:
        yield prefix, obj


def test_reference_reports_round_trip_byte_for_byte_in_meaning(tmp_path):
    for ref in (VIDEO_CALL_PHASES, TWO_BUILDS):
        original = json.loads(ref.read_text())
        out = tmp_path / ref.name
        save_report(load_report(ref), out)
        again = json.loads(out.read_text())
        assert again == original
        # every field, with the same name and value (and so the same unit: seconds)
        assert dict(_leaf_paths(again)) == dict(_leaf_paths(original))


def test_written_report_reads_back_equal(tmp_path):
    from .test_check import _made_report

    report = _made_report()
    path = tmp_path / "r.json"
    save_report(report, path)
    back = load_report(path)
    assert back == report
    d = back.to_json_dict()
    for key in ("schema_version", "tool", "environment", "config", "samples", "schedule",
                "q_shape", "variants", "rounds", "iterations_per_round"):
        assert key in d, key
    # a variant's own facts sit on it (schema 3), never copied to the top level
    assert "phase_timings" not in d and "scheduler" not in d and "achieved" not in d
    assert set(d["variants"][0]["phase_timings"]) == {"k_mean_and_smoothing_preparation",
                                                      "fused_mainloop"}
    assert set(d["samples"]["a"]) == {"k_mean_and_smoothing_preparation", "fused_mainloop",
                                      "total"}
    assert len(d["samples"]["a"]["total"]) == 3 and len(d["samples"]["a"]["total"][0]) == 4


def test_schema_file_is_the_generated_one():
    kept = json.loads((ROOT / "sagetui" / "core" / "report" / "schema.json").read_text())
    assert kept == Report.model_json_schema(), (
        "regenerate it: sagetui schema > sagetui/core/report/schema.json")


def test_save_never_overwrites_without_asking(tmp_path):
    import pytest

    path = tmp_path / "r.json"
    save_report(load_report(TWO_BUILDS), path)
    with pytest.raises(FileExistsError):
        save_report(load_report(VIDEO_CALL_PHASES), path)
    assert json.loads(path.read_text()) == json.loads(TWO_BUILDS.read_text())
    assert not [p for p in Path(tmp_path).iterdir() if p.name.endswith(".tmp")]


def test_saved_reports_get_the_usual_file_mode(tmp_path):
    import os

    umask = os.umask(0o022)
    try:
        path = tmp_path / "r.json"
        save_report(load_report(TWO_BUILDS), path)
        assert path.stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(umask)
