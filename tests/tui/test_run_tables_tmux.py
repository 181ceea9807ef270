"""`sagetui run`'s tables in a real terminal of 80 columns: every word and number whole. They
once cut their words to the width ("verdic…", "INCONC…")."""

from __future__ import annotations

from pathlib import Path

from sagetui.core import variant_facts
from sagetui.core.export.report import kernel_rows
from sagetui.core.report.io import load_report

from .test_e2e_tmux import (  # noqa: F401  (pytestmark: tmux needed, e2e, loaded)
    RUN_S,
    Tmux,
    pytestmark,
)


def test_run_prints_its_tables_whole_at_80_columns(tmp_path: Path) -> None:
    tmux = Tmux("run-80")
    tmux.start_console(tmp_path, "run --variant a=reference --variant "
                       "'b=reference[smooth_k=false]' --heads 2 --q-len 256 --head-dim 64 "
                       "--warmup 1 --rounds 3 --json r.json",
                       env=f"XDG_STATE_HOME={tmp_path / 'state'}", size=(80, 24))
    try:
        tmux.wait_for("SAGETUI-EXIT=0", timeout=RUN_S)
        printed = tmux("capture-pane", "-p", "-S", "-", "-t", tmux.target)
    finally:
        tmux("kill-server")
    assert "…" not in printed
    report = load_report(tmp_path / "r.json")
    at = variant_facts.At(report.baseline, report.created_utc)
    run = variant_facts.columns(variant_facts.RUN, report.variants)
    kernel = variant_facts.columns(variant_facts.KERNEL, kernel_rows(report))
    cells = [*variant_facts.headers(run), *variant_facts.headers(kernel)]
    for v in report.variants:
        cells += variant_facts.cells(v, run, at)
    for v in kernel_rows(report):
        cells += variant_facts.cells(v, kernel)
    words = set(printed.split())
    missing = [w for c in cells for w in c.split() if w not in words]
    assert not missing, f"{missing} not whole in:\n{printed}"
    assert "+ = faster than the baseline, a" in " ".join(printed.split())
