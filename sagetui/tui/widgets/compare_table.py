"""Reports side by side: per variant and phase, p50 and p90 in each report, speedup, verdict.

Rows line up across reports by (variant, phase). A report's phase breakdown (reference 000's
top-level phase_timings, or a sagetui report's baseline phases) goes under "(phases)", so a
new run of the same kernel lines up with the reference breakdown phase by phase.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from sagetui.core.export import paired_text

from ..formatting import ms, pct, short_phase
from ..run_data import RunData
from .variant_table import accuracy_cells

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
PHASES_GROUP = "(phases)"

Row = dict[str, object]


def rows_of(data: RunData) -> dict[tuple[str, str], Row]:
    """(variant, phase) -> cells; 'total' rows carry the speedup and the verdict."""
    out: dict[tuple[str, str], Row] = {}
    base = data.baseline if data.baseline in data.variants else None
    for name, v in data.variants.items():
        if v.p50_s() is None:
            continue
        vd = v.verdict
        verdict = "baseline" if name == base else (
            paired_text(vd).replace(vd["state"], vd["state"] + "*", 1) if vd and
            v.verdict_computed else paired_text(vd))
        out[(name, "total")] = {"p50": v.p50_s(), "p90": v.p90_s(),
                                "speedup": v.speedup_percent, "verdict": verdict,
                                "cos": accuracy_cells(v.accuracy)[0]}
    group_of = {base: PHASES_GROUP} if base else {}
    for name in [None, *data.variants] if not data.variants else list(data.variants):
        whose, rows = data.phase_rows(name)
        if name is not None and whose != name:
            continue  # no phases of its own: already listed under (phases) or nowhere
        group = PHASES_GROUP if name is None else group_of.get(name, name)
        for r in rows:
            if r.p50_s is not None:
                out[(group, r.name)] = {"p50": r.p50_s, "p90": r.p90_s}
    if not data.variants or not any(k[0] == PHASES_GROUP for k in out):
        _, rows = data.phase_rows(None)
        for r in rows:
            if r.p50_s is not None:
                out.setdefault((PHASES_GROUP, r.name), {"p50": r.p50_s, "p90": r.p90_s})
    return out


class CompareTable(DataTable):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, fixed_columns=2,
                         **kwargs)  # type: ignore[arg-type]
        self._columns_for = -1

    def _columns(self, n: int) -> None:
        if n == self._columns_for:
            self.clear()
            return
        self.clear(columns=True)
        self.add_column("variant", key="variant")
        self.add_column("phase", key="phase")
        for i in range(n):
            x = LETTERS[i % 26]
            self.add_column(f"{x} p50 ms", key=f"{i}p50")
            self.add_column(f"{x} p90 ms", key=f"{i}p90")
            if i:
                self.add_column(f"{x} vs A %", key=f"{i}delta")
            self.add_column(f"{x} p50 speedup %", key=f"{i}speedup")
            self.add_column(f"{x} verdict: paired % [CI]", key=f"{i}verdict")
            self.add_column(f"{x} cos sim", key=f"{i}cos")
        self._columns_for = n

    def show(self, sources: list[RunData]) -> None:
        self._columns(len(sources))
        tables = [rows_of(s) for s in sources]
        keys = list(dict.fromkeys(k for t in tables for k in t))
        keys.sort(key=lambda k: (k[0] != PHASES_GROUP, k[1] != "total"))  # stable otherwise
        for key in keys:
            total = key[1] == "total"
            cells: list[object] = [Text(key[0], style="bold" if total else ""),
                                   Text(short_phase(key[1], 16),
                                        style="bold" if total else "dim")]
            first = tables[0].get(key, {}).get("p50") if tables else None
            for i, t in enumerate(tables):
                row = t.get(key, {})
                p50 = row.get("p50")
                cells += [ms(p50), ms(row.get("p90"))]  # type: ignore[arg-type]
                if i:
                    delta = (p50 / first - 1) * 100 if p50 and first else None  # type: ignore
                    cells.append(pct(delta))
                cells.append(pct(row.get("speedup"), 3) if total else "")  # type: ignore
                cells.append(Text(str(row.get("verdict", ""))))
                cells.append(str(row.get("cos", "")))
            self.add_row(*cells)
        self.border_subtitle = Text("  ".join(f"{LETTERS[i % 26]} = {s.label}"
                                              for i, s in enumerate(sources)))
