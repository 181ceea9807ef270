"""Accuracy per query head: each variant's relative L1 head by head as a strip of bars, its worst
heads marked, under the options it ran with. A path can be accurate on average and wrong on one
head (a NaN or black frame in one head is how users meet it), and the options that change
accuracy (smooth_k, qk_quant_gran, pv_accum) are what one compares across variants."""

from __future__ import annotations

import math

from rich.text import Text

from sagetui.core import format as fmt
from sagetui.core.run import figures
from sagetui.tui.source import Source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.steady_static import SteadyStatic

LEVELS = "▁▂▃▄▅▆▇█"
PER_LINE = 64  # heads per line of a strip: 56 heads (the reference shape) fit one at 80 columns


def _level(x: float, top: float) -> str:
    """The bar of relative L1 `x` on a scale from 0 to `top` (the largest shown)."""
    if top <= 0:
        return LEVELS[0]
    return LEVELS[min(len(LEVELS) - 1, round(x / top * (len(LEVELS) - 1)))]


def head_strips(data: Source, ctx: ViewContext) -> Text | None:
    """Every variant with per-head accuracy, or None when none has it."""
    rows = [(name, v, v.facts.accuracy) for name, v in data.variants.items()
            if v.facts.accuracy is not None and v.facts.accuracy.per_head]
    if not rows:
        return None
    values = [h.relative_l1 for _, _, acc in rows for h in acc.per_head or []
              if h.relative_l1 is not None and math.isfinite(h.relative_l1)]
    top = max(values, default=0.0)
    t = Text()
    t.append(f"rel. L1 per query head, ▁ 0 to █ {fmt.fraction_pct(top)} %; the worst heads "
             "highlighted, ! not finite\n", style="dim")
    notes: list[str] = []
    for name, v, acc in rows:
        colour, bad = ctx.colour(data, name), f"bold {ctx.error_colour}"
        dispatch = v.facts.dispatch
        options, note = fmt.options_text(v.backend or "", figures.of(data.model, v).options,
                                          dispatch.function if dispatch else None)
        t.append(fmt.printable(name), style=f"bold {colour}")
        t.append(f"  {fmt.printable(options)}\n", style="dim")
        worst = set(acc.worst_heads or [])
        heads = acc.per_head or []
        for i in range(0, len(heads), PER_LINE):
            t.append(f"{heads[i].head:>4} ", style="dim")  # the line's first head
            for h in heads[i:i + PER_LINE]:
                x = h.relative_l1
                if x is None or not math.isfinite(x):
                    t.append("!", style=bad)
                else:
                    t.append(_level(x, top), style=bad if h.head in worst else colour)
            t.append("\n")
        t.append(f"     worst: {fmt.worst_heads(acc.model_dump())}\n")
        if note and note not in notes:
            notes.append(note)
    for note in notes:
        t.append(f"{note}\n", style="dim")
    t.rstrip()
    return t


class HeadAccuracy(SteadyStatic):
    """The Scheduler tab's accuracy per head; hidden for a report without it."""

    def sync(self, data: Source, ctx: ViewContext) -> None:
        text = head_strips(data, ctx)
        self.display = text is not None
        self.border_title = "Accuracy per head"
        self.show(text or Text())
