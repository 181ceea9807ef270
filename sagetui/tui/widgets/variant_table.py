"""Variant toggles: which variants run (or show), which one is the baseline."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from sagetui.core import format as fmt
from sagetui.core import variant_facts
from sagetui.core.blocks.sweep import Sweep
from sagetui.core.blocks.workload import Workload
from sagetui.core.format import ms, pct
from sagetui.core.report.model import Variant, VariantFacts
from sagetui.core.run import figures, late
from sagetui.core.workload import export
from sagetui.tui.source import Source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.folded_columns import fold
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.verdict_table import drift_cell
from sagetui.tui.widgets.vim_keys import VIM_KEYS

NONE_KEY = "__none__"


def _headers(cols: list[variant_facts.Fact], points: str | None,
             short: bool = False) -> tuple[str, ...]:
    """The columns' headers: a run's (its facts' `cols`; `short`: "Δ %", "drift", "cos",
    "L1 %"...), or a report of points' ("calls", "points": by variant)."""
    head = ("", "on", "variant", "role", "status")
    if points is not None:  # a workload's: its total
        return (*head, points, *(("total ms", "total Δ % [95% CI]") if points == "calls"
                                 else ()))
    # the two-build report's p50 speedup, not "paired %"
    return (*head, "p50 ms", "Δ %" if short else "p50 Δ %", "drift" if short else "drift %/rnd",
            *(f.short if short and f.short else f.header() for f in cols))


KEYS = 3  # the columns that name a row (its colour, its toggle, its name): never folded
STATUS_STYLE = {"ok": "", "failed": "bold red", "excluded": "yellow", "partial": "yellow",
                "pending": "dim"}


def _columns(host: bool, accuracy: bool, results: list[Variant]) -> list[variant_facts.Fact]:
    """Its facts' columns (core/variant_facts.py's TABLE): the host-time ones where a variant
    has a host time, the accuracy ones where a variant has or is computing one, every other
    where shown (an optional one where a variant's runner facts hold it)."""
    table = variant_facts.shown_in(variant_facts.TABLE)
    return [f for f in variant_facts.columns(variant_facts.TABLE, results)
            if f.group not in (variant_facts.HOST, variant_facts.ACCURACY)] \
        + [f for f in table if f.group == variant_facts.HOST and host] \
        + [f for f in table if f.group == variant_facts.ACCURACY and accuracy]


def _cells(cols: list[variant_facts.Fact], result: Variant, late_state: str | None) -> list[Any]:
    """A variant's facts' cells (a host-bound call marked); an accuracy still to come
    ("computing…") or that never came ("not computed", after the last round: core/run/late.py)
    says so once."""
    style = "bold reverse" if result.host_bound else ""
    out: list[Any] = []
    for f in cols:
        if f.group == variant_facts.HOST:
            out.append(Text(f.text(result), style=style if f.key == "host_bound" else ""))
        elif f.group == variant_facts.ACCURACY and result.accuracy is None \
                and late_state is not None:
            first = not any(g.group == variant_facts.ACCURACY for g in cols[:cols.index(f)])
            out.append(Text(late_state, style="dim italic") if first else "")
        else:
            out.append(f.text(result))
    return out


def _result(name: str, facts: VariantFacts, host: dict[str, Any]) -> Variant:
    """A live variant's result as its facts' getters read it (core/variant_facts.py): its
    runner's facts and its live host figures, both validated where they were made."""
    return Variant.model_construct(name=name, **dict(facts), **host)


class VariantTable(SteadyTable):
    """One row per variant; the cursor row is the selected variant."""
    BINDINGS = VIM_KEYS


    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._signature: tuple = ()
        self._headers: tuple[str, ...] = ()  # as shown: folded into bands where too wide
        self._header_height = 1
        self._last: tuple[Source, ViewContext] | None = None

    def on_mount(self) -> None:
        self._mode(_headers([], None), 1)

    def on_resize(self) -> None:
        if self._last is not None:
            self.sync(*self._last)  # the columns short or long for the new width

    def selected(self) -> str | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return None if key == NONE_KEY else key

    def select(self, name: str | None) -> None:
        if name is None:
            return
        try:
            self.move_cursor(row=self.get_row_index(name))
        except Exception:  # the name is not in this table (another source)
            pass

    def _mode(self, headers: tuple[str, ...], header_height: int) -> None:
        """The columns as shown (a band's headers a line each)."""
        if (headers, header_height) != (self._headers, self._header_height):
            self._headers, self._header_height = headers, header_height
            self.clear(columns=True)
            self.header_height = header_height
            for i, h in enumerate(headers):
                # the swatch and the toggle keep their widths; the rest fit their cells
                self.add_column(Text(h), key=str(i), width={0: 1, 1: 3}.get(i))
            self._signature = ()

    def _fitted(self, headers: tuple[str, ...], rows: list[tuple[str, list[Any]]],
                ctx: ViewContext) -> None:
        """The rows shown under `headers`, folded where they do not fit the terminal (the
        panel takes the table's own width, up to the terminal's, less its border)."""
        folded = fold(headers, [cells for _, cells in rows], self.app.size.width - 2, KEYS)
        self._mode(tuple(h.plain for h in folded.headers), folded.header_height)
        self._show([(key, cells) for (key, _), cells in zip(rows, folded.rows, strict=True)],
                   ctx, folded.heights)

    def sync(self, data: Source, ctx: ViewContext) -> None:
        self._last = (data, ctx)
        block = data.points_block()
        if block is not None:  # its variants are its points': none of the run's own
            points = "calls" if isinstance(block, Workload) else "points"
            self._fitted(_headers([], points), points_rows(data, block, ctx), ctx)
            return
        late_keys = set(data.model.computing)
        late_state = "computing…" if ctx.running else "not computed"
        accuracy = bool(any(v.facts.accuracy for v in data.variants.values())
                        or any(k.startswith(late.ACCURACY) for k in late_keys))
        figs = {n: figures.of(data.model, v) for n, v in data.variants.items()}
        p50s = {n: f.p50_s for n, f in figs.items()}
        host = {n: f.host for n, f in figs.items()}
        has_host = any(h.get("host_s") is not None for h in host.values())
        results = {n: _result(n, v.facts, host[n]) for n, v in data.variants.items()}
        cols = _columns(has_host, accuracy, list(results.values()))
        called = variant_facts.timed_call_note(
            ((n, v.facts.timed_call) for n, v in data.variants.items()), short=True)
        self.border_subtitle = Text(called if has_host and called else "")
        rows: list[tuple[str, list[Any]]] = []
        for name, v in data.variants.items():
            colour = ctx.colour(data, name)
            role = "baseline" if name == data.baseline else ""
            enabled = data.is_enabled(name)
            on = Text("[x]" if enabled else "[ ]", style="bold" if enabled else "dim")
            sdpa = v.facts.sdpa_backend
            label = name + (f" [{sdpa}]" if sdpa else "")
            rows.append((name, [
                Text("■", style=colour), on, Text(label, style=f"bold {colour}"), role,
                Text(v.status, style=STATUS_STYLE.get(v.status, "")), ms(p50s[name]),
                "" if name == data.baseline else pct(v.speedup_percent, 3),
                drift_cell(v.drift),
                *_cells(cols, results[name],
                        late_state if late.accuracy_key(name) in late_keys else None)]))
        headers = _headers(cols, None)
        if not rows:
            rows.append((NONE_KEY, ["", "", Text("(none)", style="dim"),
                                    *[""] * (len(headers) - 3)]))
        # short headers where the long ones would not fit the terminal side by side
        if fold(headers, [c for _, c in rows], self.app.size.width - 2, KEYS).header_height > 1:
            headers = _headers(cols, None, short=True)
            for _, cells in rows:
                cells[3] = "base" if cells[3] else ""
        self._fitted(headers, rows, ctx)

    def _show(self, rows: list[tuple[str, list[Any]]], ctx: ViewContext,
              heights: list[int]) -> None:
        """The rows in place: added anew when the variants (or their rows' heights) changed,
        else cell by cell."""
        signature = (tuple(r[0] for r in rows), tuple(heights))
        keep = self.selected() or ctx.selected
        if signature != self._signature:
            self.clear()
            for (key, cells), height in zip(rows, heights, strict=True):
                self.add_row(*cells, key=key, height=height)
            self._signature = signature
            self.select(keep)
            return
        for key, cells in rows:
            for col, value in zip(self.columns, cells, strict=True):
                self.update_cell(key, col, value, update_width=True)


def points_rows(data: Source, block: Workload | Sweep,
                ctx: ViewContext) -> list[tuple[str, list[Any]]]:
    """A row per variant of a report of points (a workload's calls, a sweep's points): its
    status over them (ok: a p50 on every one; partial: on some; failed: on none), how many it
    has a p50 of, and a workload's total with its speedup against the baseline (the cells
    `sagetui run --workload` prints: core/workload/export.total_rows)."""
    totals = {row[0]: row[1:] for row in export.total_rows(block)} \
        if isinstance(block, Workload) else None
    rows: list[tuple[str, list[Any]]] = []
    for i, name in enumerate(block.variants):
        colour = ctx.series[i % len(ctx.series)]  # the Sweep tab's colour of it
        enabled = data.is_enabled(name)
        measured = sum(any(v.name == name and v.status == "ok" and v.timing is not None
                           for v in p.variants) for p in block.points)
        status = "ok" if measured == len(block.points) else "failed" if measured == 0 \
            else "partial"
        cells = [Text("■", style=colour), Text("[x]" if enabled else "[ ]",
                                               style="bold" if enabled else "dim"),
                 Text(name, style=f"bold {colour}"), "baseline" if name == block.baseline else "",
                 Text(status, style=STATUS_STYLE.get(status, "")),
                 f"{measured} of {len(block.points)}"]
        if totals is not None:
            total, speedup = totals.get(name, (fmt.DASH, ""))[:2]  # in GPU time
            cells += [total, "" if name == block.baseline else speedup]
        rows.append((name, cells))
    return rows or [(NONE_KEY, ["", "", Text("(none)", style="dim"),
                                *[""] * (5 if totals is not None else 3)])]
