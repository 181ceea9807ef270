"""The CSV and Markdown exports say what a reader needs: rounds and iterations numbered from
1 as the console shows them (and the header says so), seconds without float noise yet exact
to the measurement, the baseline, the variants' specs and the dtype; and exports are named by
backend, shape and time, not by a bare timestamp."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from sagetui.core.export.report import export_stem, to_csv, to_markdown
from sagetui.core.report.io import load_report

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = load_report(ROOT / "sample_results" / "h200_sm89_variants.json")


def test_csv_numbers_from_one_and_writes_nine_significant_digits() -> None:
    rows = list(csv.reader(io.StringIO(to_csv(VARIANTS))))
    assert rows[0] == ["variant", "phase", "round (from 1)", "iteration (from 1)", "seconds"]
    first = rows[1]
    assert first[2] == "1" and first[3] == "1"
    rounds = {int(r[2]) for r in rows[1:]}
    assert rounds == set(range(1, VARIANTS.rounds + 1))
    raw = VARIANTS.samples[first[0]][first[1]][0].tolist()[0]
    assert first[4] == f"{raw:.9g}" and len(first[4].replace("0.", "").lstrip("0")) <= 9
    assert abs(float(first[4]) - raw) <= abs(raw) * 1e-8  # far below a CUDA event's 0.5 us
    assert all(len(r[4]) <= 15 for r in rows[1:])  # no 0.13042812347412109-style noise


def test_markdown_names_baseline_specs_and_dtype() -> None:
    md = to_markdown(VARIANTS)
    assert "baseline `stock`" in md
    assert "bf16" in md
    # the blank-lines build, by the build cache's entry it ran from
    assert "`blank` = `sage2-sm89@/tmp/xdg/sagetui/builds/08d61fc1f1334de37e8f3f90da02348b`" in md
    assert "`stock` = `sage2-sm89`" in md


def test_export_stem_names_backend_shape_and_time() -> None:
    stem = export_stem(VARIANTS, "20250101-120000")
    assert stem == "sage2-sm89_1x37810x56x128_bf16_20250101-120000"


def test_one_registry_entry_reaches_every_table_it_names(monkeypatch) -> None:
    """Adding a per-variant fact is one entry in core/variant_facts.py: a fact the report
    already keeps (peak_memory_bytes), registered for run's table, the Markdown's variant and
    kernel tables and compare, is in each of them, with no edit to any printer; a sweep's CSV
    takes one the same way."""
    from rich.console import Console

    from sagetui.cli.run import kernel_table, summary_table
    from sagetui.core import variant_facts as facts
    from sagetui.core.compare.runs import run_table
    from sagetui.core.sweep.export import to_csv as sweep_csv

    mib = facts.Fact("peak_memory_bytes", "peak", "MiB",
                     lambda x: "-" if x is None else f"{x / 2**20:.1f}",
                     frozenset({facts.RUN, facts.MARKDOWN, facts.KERNEL, facts.COMPARE,
                                facts.SWEEP_CSV}), optional=True)
    monkeypatch.setattr(facts, "FACTS", (*facts.FACTS, mib))
    cells = [f"{v.peak_memory_bytes / 2**20:.1f}" for v in VARIANTS.variants]
    md = to_markdown(VARIANTS)
    assert md.count("peak MiB |") == 2  # the variant table and the kernel table
    assert all(f"| {c} |" in md for c in cells)
    out = Console(file=io.StringIO(), width=400, color_system=None)
    out.print(summary_table(VARIANTS), kernel_table(VARIANTS))
    assert out.file.getvalue().count("peak MiB") == 2
    assert "A peak MiB" in [c.title for c in run_table([("A", VARIANTS)]).columns]
    sweep = load_report(ROOT / "sample_results" / "sweep_cpu_reference.json")
    assert "peak_memory_bytes" not in next(csv.reader(io.StringIO(sweep_csv(sweep))))  # none has it
