"""Scheduler grid facts, the variants' kernel facts, the decomposition check and the tail
study."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from sagetui.core import format as fmt
from sagetui.core.export import tail_study_rows
from sagetui.core.export.kernel_facts_rows import DIFFERS, comparison_rows
from sagetui.core.export.report import sol_cells
from sagetui.core.report.model import SpeedOfLight
from sagetui.core.run import figures
from sagetui.tui.source import Source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.folded_columns import fold
from sagetui.tui.widgets.mainloop_panel import mainloop_text
from sagetui.tui.widgets.steady_static import SteadyStatic
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.vim_keys import VIM_KEYS

FACTS: tuple[tuple[str, str], ...] = (
    ("kernel", "kernel"), ("cta_q", "CTA_Q"), ("cta_k", "CTA_K"), ("warp_q", "WARP_Q"),
    ("warp_k", "WARP_K"), ("warps_per_cta", "warps / CTA"), ("threads_per_cta", "threads / CTA"),
    ("dynamic_shared_memory_bytes", "shared memory B"), ("q_ctas_per_head", "Q CTAs / head"),
    ("heads", "heads"), ("batch", "batch"), ("grid_ctas", "grid CTAs"),
    ("k_iterations_per_cta", "K iterations / CTA"), ("k_iterations_total", "K iterations"),
    ("q_tail_rows", "Q tail rows"), ("k_tail_rows", "K tail rows"),
    ("scheduled_q_rows", "scheduled Q rows"), ("q_row_efficiency", "Q row efficiency"),
    ("explicit_pipeline_stages", "pipeline stages"), ("sm_count", "SMs"),
    ("ctas_per_sm", "CTAs / SM"), ("waves", "waves"),
)


def _fact(key: str, value: Any) -> str:
    if key == "q_row_efficiency":
        return fmt.share(value, 2)
    if key == "waves":
        return f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


class SchedulerFacts(SteadyTable):
    """Two facts per row: the grid fits an 80x24 terminal beside nothing else."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="none", show_header=False, **kwargs)

    def sync(self, data: Source, ctx: ViewContext) -> None:
        """The selected variant's own grid and throughput (a report without variants: its
        own scheduler block, the phase-breakdown report)."""
        self.clear(columns=True)  # columns too: their widths would keep an old row's
        for key in ("fact1", "value1", "fact2", "value2"):
            self.add_column(key, key=key)
        v = data.variants.get(ctx.selected or "")
        report = data.report
        f = figures.of(data.model, v) if v is not None else None
        if f is not None:
            s = f.scheduler or {}
            achieved = f.achieved or {}
        else:
            s = report.scheduler.model_dump(exclude_none=True) if report is not None \
                and report.scheduler else {}
            achieved = (report.achieved or {}) if report is not None else {}
        self.border_title = Text(f"Scheduler grid · {v.name}" if v is not None
                                 else "Scheduler grid")
        facts: list[tuple[str, Text]] = [
            (label, Text(_fact(key, s[key]), justify="right"))
            for key, label in FACTS if s.get(key) is not None]
        for key, value in achieved.items():
            if value is not None:
                text = fmt.share(value, 2) if "share" in key else f"{value:.3f}"
                facts.append((key.replace("_", " "), Text(text, justify="right")))
        sol = f.sol if f is not None else None
        if sol is not None and sol.get("tops") is not None:
            facts += [(label, Text(text, justify="right"))
                      for label, text in sol_cells(SpeedOfLight.model_validate(sol))]
        peak = v.facts.peak_memory_bytes if v is not None else None
        if peak is not None:
            facts.append(("call's peak memory", Text(f"{peak / 2**20:,.1f} MiB", justify="right")))
        cells = [(Text(label), value) for label, value in facts]  # report keys: never markup
        half = (len(cells) + 1) // 2
        for left, right in zip(cells[:half], [*cells[half:], (Text(""), Text(""))],
                               strict=False):
            self.add_row(left[0], left[1], right[0], right[1])
        if not cells:
            self.add_row(Text("no scheduler facts", style="dim"), "", "", "")


def decomposition_text(data: Source) -> Text:
    m = data.model
    d = m.decomposition
    t = Text()
    if d:
        ok = d.get("equal")
        t.append("manual decomposition vs public API: ")
        t.append("equal" if ok else "DIFFERENT", style="bold" if ok else "bold red")
        t.append(f" (max |Δ| {d.get('max_abs')}, mean |Δ| {d.get('mean_abs')})")
        manual, ref = d.get("manual_checksum"), d.get("reference_checksum")
        if manual is not None:
            t.append(f"\nchecksums: manual {manual} · reference {ref}")
    elif m.decomposition_skipped:
        t.append(f"manual decomposition check skipped: {m.decomposition_skipped}",
                 style="dim")
    elif not m.profiles:
        t.append("manual decomposition check: not in this report", style="dim")
    notes = figures.fused_notes(m)
    if m.profiles:  # measured shares replace the static note
        if t.plain:
            t.append("\n")
        t.append_text(mainloop_text(m.profiles, m.baseline))
    elif notes:
        fused = [k for k, v in notes.items() if k != "timing_policy"]
        t.append(f"\nfused inside the main loop: {', '.join(fused)}", style="dim")
        if notes.get("timing_policy"):
            t.append(f"\n{notes['timing_policy']}", style="dim italic")
    return t


def decomposition_title(data: Source) -> str:
    """What the box holds: the correctness check, the main loop's profiles, or both."""
    m = data.model
    checked = m.decomposition is not None or m.decomposition_skipped is not None
    if m.profiles:
        return "Correctness · inside the main loop" if checked else \
            "Inside the main loop (Nsight Compute)"
    return "Correctness"


class DecompositionInfo(SteadyStatic):
    def sync(self, data: Source, ctx: ViewContext) -> None:
        self.border_title = decomposition_title(data)
        self.show(decomposition_text(data))


class KernelFactsTable(SteadyTable):
    """The variants' main-loop kernel facts side by side, one column per variant;
    a fact they do not all share is marked and bold. Hidden when no variant has them."""

    BINDINGS = VIM_KEYS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", **kwargs)

    def sync(self, data: Source, ctx: ViewContext) -> None:
        self.clear(columns=True)  # columns too: the variants may have changed
        names = list(data.variants)
        rows = comparison_rows([data.variants[n].facts.kernel_facts for n in names])
        self.display = bool(rows)
        if not rows:
            return
        self.add_column("", key="mark")
        self.add_column("kernel fact", key="fact")
        for n in names:
            self.add_column(Text(n), key=f"v:{n}")  # a variant's name: never markup
        for r in rows:
            style = "bold" if r.differs else ""
            self.add_row(Text(DIFFERS if r.differs else "", style="bold"), Text(r.label),
                         *[Text(c, style=style, justify="right") for c in r.cells], key=r.key)
        marked = sum(r.differs for r in rows)
        self.border_subtitle = (f"{DIFFERS}: {marked} facts differ" if marked
                                else "the variants share every fact")


class TailTable(SteadyTable):
    """The phase-breakdown report's rows: the largest tile multiple at or below N, that plus one,
    and N."""
    BINDINGS = VIM_KEYS


    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self._last: tuple[Source, ViewContext] | None = None
        self._width = 0

    def sync(self, data: Source, ctx: ViewContext) -> None:
        self._last, self._width = (data, ctx), self.size.width
        self.clear(columns=True)  # columns too: their widths would keep an old row's
        rows = figures.tail_rows(data.model)
        # none: a line that says so, not thirteen empty columns
        labels = tail_study_rows.COLUMNS if rows else ("",)
        cells: list[list[str | Text]] = [list(c) for c in tail_study_rows.cells(rows)] or [
            [Text("no tail study (run with --tail-study)", style="dim")]]
        folded = fold(labels, cells, self.size.width)  # in bands where they do not fit
        self.header_height = folded.header_height
        for i, label in enumerate(folded.headers):
            self.add_column(label, key=str(i))
        for row, height in zip(folded.rows, folded.heights, strict=True):
            self.add_row(*row, height=height)
        self.border_subtitle = tail_study_rows.NOTE if rows else None

    def on_resize(self) -> None:
        if self._last is not None and self.size.width != self._width:
            self.sync(*self._last)
