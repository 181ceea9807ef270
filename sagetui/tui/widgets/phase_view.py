"""The Phases tab: every shown variant side by side, phase by phase, in ms, each against the
baseline, with a bar on a log scale.

One phase's variants come one under another (a phase the variant does not have gets no row:
SDPA's one phase gives no eight empty rows), so a same-run A/B reads down a column. The bars
are log-scaled (labelled with their decades in the column header): on a linear scale a 48 ms
main loop leaves a 0.14 ms phase a sliver of a cell.
"""

from __future__ import annotations

import math
from typing import Any

from rich.text import Text

from sagetui.core.derived import speedup_or_none
from sagetui.core.format import ms, printable, short_phase, speedup
from sagetui.tui.source import Source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.vim_keys import VIM_KEYS

EIGHTHS = " ▏▎▍▌▋▊▉█"
OTHER_COLUMNS = {True: 110, False: 80}  # about what the other columns take (wide or not)
WIDE = 140  # from here the full phase names and the p90 column
VS_BASE = "vs base % (+ = faster)"


def bar(value: float, lo: int, hi: float, width: int) -> str:
    """A bar of value on a log10 axis from 10^lo to 10^hi, `width` cells, in eighths."""
    frac = (math.log10(value) - lo) / (hi - lo) if value > 0 else 0.0
    eighths = max(1, round(min(1.0, max(0.0, frac)) * width * 8))
    full, part = divmod(eighths, 8)
    return "█" * full + (EIGHTHS[part] if part else "")


def axis(lo: int, hi: float, width: int) -> str:
    """The decades' labels at their places along the bar: '0.1    1    10   100 ms'."""
    cells = [" "] * (width + 8)
    for d in range(lo, math.floor(hi) + 1):
        label = f"{10.0 ** d:g}"
        at = min(round((d - lo) / (hi - lo) * width), width + 8 - len(label))
        if all(c == " " for c in cells[max(0, at - 1): at + len(label)]):
            cells[at: at + len(label)] = label
    return "".join(cells).rstrip() + " ms"


class PhaseView(SteadyTable):
    BINDINGS = VIM_KEYS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._last: tuple[Source, ViewContext] | None = None
        self._width = 0

    def on_resize(self) -> None:
        if self._last is not None and self._bar_width() != self._width:
            self.sync(*self._last)

    def _bar_width(self) -> int:
        return max(10, min(60, self.size.width - OTHER_COLUMNS[self.size.width >= WIDE]))

    def sync(self, data: Source, ctx: ViewContext) -> None:
        self._last = (data, ctx)
        self._width = width = self._bar_width()
        names: list[str | None] = [v.name for v in data.plotted()]
        if data.baseline in names:  # the baseline first: the others read against it
            names.remove(data.baseline)
            names.insert(0, data.baseline)
        # phase -> variant -> (p50, p90) in s; only what was measured: no empty rows
        found: dict[str, dict[str, tuple[float, float | None]]] = {}
        depth: dict[str, int] = {}
        order: list[str] = []  # every variant's phases in tree order, merged
        for name in names or [None]:
            whose, rows = data.phase_rows(name)
            if name is not None and whose != name:
                rows = []  # no phases of its own (the report's are the baseline's)
            total = data.total_row(name)
            before: str | None = None
            for r in [*rows, *([total] if total is not None else [])]:
                if r.p50_s is not None and r.p50_s > 0:
                    depth.setdefault(r.name, r.depth)
                    found.setdefault(r.name, {})[name or whose] = (r.p50_s, r.p90_s)
                    if r.name not in order:  # a phase only this variant has (smooth_k=false's
                        # k_int8_quantization): after the phase it follows in its own tree
                        order.insert(order.index(before) + 1 if before in order else
                                     len(order), r.name)
                    before = r.name
        table = {n: found[n] for n in order if n != "total (one call)"}
        if "total (one call)" in found:  # the whole call last, under the phases
            table["total (one call)"] = found["total (one call)"]
        values = [s for per in table.values() for s, _ in per.values()]
        # from a decade under the smallest (its bar stays a fair length) to the largest (its
        # bar fills the column)
        lo = math.floor(math.log10(min(values) * 1e3)) - 1 if values else -2
        hi = max(math.log10(max(values) * 1e3), lo + 1) if values else 2.0
        self.clear(columns=True)
        if not table:  # a line that says so, not six empty columns wider than 80
            self.add_column("", key="none")
            self.add_row(Text("no phase timings yet" if data.live else
                              "no phase timings in this report", style="dim"))
            self.border_title = Text("Phases")
            return
        wide = self.size.width >= WIDE
        for label in ("phase", "variant", "p50 ms", *(["p90 ms"] if wide else []), VS_BASE):
            self.add_column(label, key=label)
        self.add_column(axis(lo, hi, width), key="bar")
        for phase, per in table.items():
            base = per.get(data.baseline or "", (None, None))[0]
            for i, (name, (p50, p90)) in enumerate(per.items()):
                colour = ctx.colour(data, name) if name in data.variants else ctx.series[0]
                vs = "baseline" if name == data.baseline else speedup(
                    speedup_or_none(base, p50), 2)
                label = printable(phase) if wide else short_phase(phase, 18)
                first = Text("  " * depth[phase] + label if i == 0 else "",
                             style="bold" if phase.startswith("total") else "")
                self.add_row(first, Text(printable(name), style=colour), ms(p50),
                             *([ms(p90)] if wide else []), vs,
                             Text(bar(p50 * 1e3, lo, hi, width), style=colour))
        self.border_title = Text("Phases · p50 per variant, one under another · bars: log "
                                 "scale, ms")
