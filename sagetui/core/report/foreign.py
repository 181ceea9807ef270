"""What a JSON file is when it is not a sagetui report: another benchmark tool's output, or a
capture's manifest. One line that says so replaces the first unknown field's JSON path."""

from __future__ import annotations

from typing import Any


def capture_hint(folder: str) -> str:
    return f"check a capture with `sagetui capture --verify {folder}`"


def _has(data: dict[str, Any], *keys: str) -> bool:
    return all(k in data for k in keys)


def _first(data: dict[str, Any], key: str) -> dict[str, Any]:
    items = data.get(key)
    return items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}


def foreign_kind(data: dict[str, Any], report_fields: set[str], folder: str = "DIR"
                 ) -> str | None:
    """The one-line problem of a JSON object that is no sagetui report (None: it may be one, to
    be validated as such). Recognised by the fields each tool writes at its top level; `folder`:
    the file's, named in a capture's way out."""
    if _has(data, "calls", "calls_seen"):
        return f"a capture's manifest, not a report: {capture_hint(folder)}"
    bench = _first(data, "benchmarks")
    looks = None
    if _has(data, "machine_info", "commit_info", "benchmarks"):
        looks = "a pytest-benchmark file"
    elif _has(data, "context", "benchmarks") and ("real_time" in bench or "cpu_time" in bench
                                                  or isinstance(data["context"], dict)):
        looks = "a Google Benchmark file"
    elif _has(data, "benchmarks") and ("runs" in bench or "pyperf" in str(data.get("metadata"))
                                       or _has(data, "version")):
        looks = "a pyperf file"
    elif _has(data, "benchmarks") and ("devices" in data or "meta" in data):
        looks = "an nvbench file"
    if looks:
        return f"not a sagetui report (it looks like {looks})"
    if data and not set(data) & report_fields:
        keys = ", ".join(list(data)[:4])
        return f"not a sagetui report (none of its top-level fields is a report's: {keys})"
    return None
