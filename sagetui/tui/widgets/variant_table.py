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
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.verdict_table import drift_cell
from sagetui.tui.widgets.vim_keys import VIM_KEYS

NONE_KEY = "__none__"
HEADERS = ("", "on", "variant", "role", "status", "p50 ms", "p50 Δ %", "drift %/rnd")


def _width(rows: list[tuple[str, list[Any]]], headers: tuple[str, ...]) -> int:
    """The columns' width with their long `headers` (the run's, its host time's and its
    accuracy's, in the rows' order): narrower than this, the table takes the short ones
    ("Δ %", "drift", "cos", "L1 %", the baseline's role "base"), so that no column is cut."""
    widths = [max([len(h), *(c.cell_len if isinstance(c, Text) else len(str(c))
                              for _, cells in rows for c in cells[i:i + 1])])
              for i, h in enumerate(headers)]
    return sum(widths) + 2 * len(headers) + 2  # each cell's padding, and the scrollbar's room


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
        self._cols: list[variant_facts.Fact] = []  # its facts' columns (core/variant_facts.py)
        self._points: str | None = None  # a report of points' ("calls", "points"): by variant
        self._narrow = False  # the short headers: the columns fit 80 columns with accuracy
        self._last: tuple[Source, ViewContext] | None = None

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        short = self._narrow
        self.add_column("", key="swatch", width=1)
        self.add_column("on", key="on", width=3)
        self.add_column("variant", key="name")
        self.add_column("role", key="role")
        self.add_column("status", key="status")
        if self._points is not None:
            self.add_column(self._points, key="measured")
            if self._points == "calls":  # a workload's: its total
                self.add_column("total ms", key="total")
                self.add_column("total Δ % [95% CI]", key="total_speedup")
            return
        self.add_column("p50 ms", key="p50")
        # the two-build report's p50 speedup, not "paired %"
        self.add_column("Δ %" if short else "p50 Δ %", key="speedup")
        self.add_column("drift" if short else "drift %/rnd", key="drift")
        for f in self._cols:
            self.add_column(f.short if short and f.short else f.header(), key=f.key)

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

    def _mode(self, cols: list[variant_facts.Fact], points: str | None,
              narrow: bool = False) -> None:
        """The columns: a run's (its accuracy's and host time's only when a variant has them: a
        report without keeps 80 columns for timing; short headers where the long ones would not
        fit), or a report of points'."""
        mode = (cols, points, narrow)
        if mode != (self._cols, self._points, self._narrow):
            self._cols, self._points, self._narrow = mode
            self.clear(columns=True)
            self._add_columns()
            self._signature = ()

    def sync(self, data: Source, ctx: ViewContext) -> None:
        self._last = (data, ctx)
        block = data.points_block()
        if block is not None:  # its variants are its points': none of the run's own
            self._mode([], "calls" if isinstance(block, Workload) else "points")
            self._show(points_rows(data, block, ctx), ctx)
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
        headers = (*HEADERS, *(f.header() for f in cols))
        if not rows:
            rows.append((NONE_KEY, ["", "", Text("(none)", style="dim"),
                                    *[""] * (len(headers) - 3)]))
        # the panel takes the table's own width, up to the terminal's (less its border): short
        # headers when the long ones would not fit the terminal
        narrow = 0 < self.app.size.width - 2 < _width(rows, headers)
        self._mode(cols, None, narrow)
        if narrow:
            for _, cells in rows:
                cells[3] = "base" if cells[3] else ""
        self._show(rows, ctx)

    def _show(self, rows: list[tuple[str, list[Any]]], ctx: ViewContext) -> None:
        """The rows in place: added anew when the variants changed, else cell by cell."""
        signature = tuple(r[0] for r in rows)
        keep = self.selected() or ctx.selected
        if signature != self._signature:
            self.clear()
            for key, cells in rows:
                self.add_row(*cells, key=key)
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
