"""Adding a per-variant fact (docs/architecture.md, "Adding a per-variant fact"): a runner's
fact taken as recorded and a fact that `check` re-derives each reach the console's Compare tab,
the CLI, the Markdown, the CSVs, `compare` and the JSON from the few source files the docs
count, and this test holds those counts to the code (the files each fact's name is in)."""

from __future__ import annotations

import re
from pathlib import Path

from sagetui.core.check.recorded import inventory
from sagetui.core.report.io import load_report

from .test_check_mutation import fresh  # noqa: F401  (the fresh CPU reports of every kind)

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "architecture.md"
GENERATED = "sagetui/core/report/schema.json"


def homes(name: str) -> list[str]:
    """The files of sagetui that name a fact (the generated schema among them)."""
    word = re.compile(rf"\b{name}\b")
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "sagetui").rglob("*")
                  if p.suffix in (".py", ".json") and word.search(p.read_text()))


def stated(name: str) -> int:
    """The source files docs/architecture.md says adding this fact took."""
    m = re.search(rf"`{name}`[^.]*?in (\d+) source files", DOCS.read_text().replace("\n", " "))
    assert m is not None, f"docs/architecture.md states no count for {name}"
    return int(m[1])


def _results(fresh) -> tuple[list, list]:  # noqa: F811
    """The fresh run's, sweep's and workload's reports, and every variant's result in them."""
    reports = [load_report(fresh[k]) for k in ("run", "sweep", "workload")]
    run, sweep, workload = reports
    points = [p for b in (sweep.sweep, workload.workload) for p in b.points]
    return reports, [*(run.variants or []), *(v for p in points for v in p.variants)]


def _tables(reports: list) -> dict[str, str]:
    """Every table a run's, a sweep's and a workload's variants are shown in, as text."""
    from rich.console import Console

    import sagetui.core.sweep.export
    import sagetui.core.workload.export
    from sagetui.cli.run import summary_table
    from sagetui.core.compare.comparison import compare_reports
    from sagetui.core.export.report import to_markdown

    run, sweep, workload = reports
    sweep_export, workload_export = sagetui.core.sweep.export, sagetui.core.workload.export
    console = Console(record=True, width=400)
    console.print(summary_table(run))
    return {"run": console.export_text(), "markdown": to_markdown(run),
            "compare": " | ".join(c.title for c in compare_reports([("a", run)]).columns),
            "sweep markdown": sweep_export.to_markdown(sweep),
            "sweep csv": sweep_export.to_csv(sweep).splitlines()[0],
            "workload markdown": workload_export.to_markdown(workload),
            "workload csv": workload_export.to_csv(workload).splitlines()[0]}


def test_a_recorded_runner_fact_reaches_every_table_from_four_source_files(fresh):  # noqa: F811
    """`load_s`, the runner's clock around loading a variant: its measurement
    (runner/engine.py), its field (blocks/result.RunnerFacts), its entry
    (core/variant_facts.py) and its rule (check/recorded.py)."""
    assert homes("load_s") == ["sagetui/core/blocks/result.py", "sagetui/core/check/recorded.py",
                               GENERATED, "sagetui/core/variant_facts.py",
                               "sagetui/runner/engine.py"]
    assert stated("load_s") == len(homes("load_s")) - 1 == 4
    reports, results = _results(fresh)
    assert len(results) > 6 and all(v.load_s is not None and v.load_s > 0 for v in results)
    for where, text in _tables(reports).items():
        assert "load ms" in text or "load_s" in text, where
    for r in reports:  # a clock reading: taken as recorded, in a run's variants and points
        data = r.to_json_dict()
        recorded = {x.path for x in inventory(data).recorded if x.path.endswith(".load_s")}
        assert recorded and recorded == {p for p in _leaves(data) if p.endswith(".load_s")}


def _leaves(data: dict) -> set[str]:
    from sagetui.core.check.recorded import leaves
    return {p for p, _ in leaves(data)}


def test_a_derived_fact_that_check_recomputes_takes_six_source_files():
    """`host_share`, a call's host time over its GPU time: its formula (core/host_time.py), its
    field (blocks/result.HostTimes), the live figures that compute it (run/figures.py), its entry
    (core/variant_facts.py), its check (run/check_host.py) and the schema that first owes it
    (report/envelope.py). tests/test_host_time.py shows it in every table and `check` catching
    it edited or deleted."""
    assert homes("host_share") == [
        "sagetui/core/blocks/result.py", "sagetui/core/host_time.py",
        "sagetui/core/report/envelope.py", GENERATED, "sagetui/core/run/check_host.py",
        "sagetui/core/run/figures.py", "sagetui/core/variant_facts.py"]
    assert stated("host_share") == len(homes("host_share")) - 1 == 6
