"""The tail study's table, written once for the console's Scheduler tab and `sagetui run`'s
summary: each row's geometry (its kernel's tiles) and its main loop's p50 and p90, and the p50's
change against the first row of its sweep."""

from __future__ import annotations

from typing import Any

from sagetui.core.derived import change_percent
from sagetui.core.format import fraction_pct, ms, pct

COLUMNS = ("sweep", "q_len", "kv_len", "Q CTAs/h", "K it/CTA", "Q tail", "K tail", "Q rows",
           "row eff", "p50 ms", "p90 ms", "Δ p50 %", "checksum")
NOTE = "Δ: vs the sweep's first row"


def cells(rows: list[dict[str, Any]]) -> list[list[str]]:
    """A line of text cells per row (figures.tail_rows)."""
    first: dict[str, float] = {}
    out = []
    for row in rows:
        ml = row.get("mainloop") or {}
        p50 = ml.get("p50_s")
        base = first.setdefault(row["sweep"], p50) if p50 else None
        sweep = "q tail" if row["sweep"].startswith("q_") else "kv tail"
        out.append([sweep, str(row["q_len"]), str(row["kv_len"]),
                    str(row.get("q_ctas_per_head", "")),
                    str(row.get("k_iterations_per_cta", "")),
                    str(row.get("q_tail_rows", "")), str(row.get("k_tail_rows", "")),
                    str(row.get("scheduled_q_rows", "")),
                    f"{fraction_pct(row.get('q_row_efficiency'))} %"
                    if row.get("q_row_efficiency") is not None else "",
                    ms(p50), ms(ml.get("p90_s")), pct(change_percent(p50, base)),
                    str(row.get("checksum", ""))])
    return out
