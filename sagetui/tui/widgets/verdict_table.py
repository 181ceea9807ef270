"""Verdicts per variant against the baseline (state, estimate, 95 % CI, threshold) and drift.

Its title states the rule, not a result: "Verdicts: SAME if the 95 % CI is within ±1.00 %
(default threshold)", whole at 80 columns; the `*` of a verdict derived from a report's round
p50s is explained under the table."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from sagetui.core import format as fmt
from sagetui.core.blocks.workload import Workload
from sagetui.core.format import ci, pct
from sagetui.core.run import figures
from sagetui.core.statistics.threshold import (
    SOURCE_CALIBRATION,
    SOURCE_DEFAULT,
    SOURCE_NOISE_FLOOR,
    SOURCE_RECORDED,
    SOURCE_THRESHOLD,
    Threshold,
    age,
)
from sagetui.core.workload.export import threshold, total_word
from sagetui.tui.source import Source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.steady_table import SteadyTable
from sagetui.tui.widgets.vim_keys import VIM_KEYS

STATE_STYLE = {"FASTER": "bold green", "SLOWER": "bold red", "SAME": "bold",
               "INCONCLUSIVE": "yellow"}


def drift_cell(drift: dict | None) -> Text:
    text, flagged = fmt.drift(drift)
    return Text(text, style="bold reverse" if flagged else "")


class VerdictTable(SteadyTable):
    BINDINGS = VIM_KEYS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="none", **kwargs)
        self._notes: tuple[int, int, list[str]] | None = None  # (model id, version, notes)

    def on_mount(self) -> None:
        # "paired %": the verdict's own estimate, the centre of its interval (core.analysis);
        # the variant table's "p50 vs base %" is the two-build report's other one, from the p50s
        for label in ("variant", "verdict", "paired %", "95% CI %", "±thr %", "n"):
            self.add_column(label, key=label)

    def sync(self, data: Source, ctx: ViewContext) -> None:
        self.clear()
        block = data.points_block()
        if isinstance(block, Workload):
            self._workload(data, block, ctx)
            return
        computed = False
        for name, v in data.variants.items():
            colour = ctx.colour(data, name)
            vd = v.verdict
            if name == data.baseline:
                state = Text("baseline", style="dim")
                cells = ["-", "-", "-", str(len(data.round_points(v)) or "-")]
            elif vd:
                computed |= v.verdict_computed
                state = Text(vd["state"] + ("*" if v.verdict_computed else ""),
                             style=STATE_STYLE.get(vd["state"], ""))
                cells = [pct(vd.get("estimate_percent")),
                         ci(vd.get("ci_low_percent"), vd.get("ci_high_percent")),
                         pct(vd.get("threshold_percent"), sign=False), str(vd.get("rounds"))]
            else:
                state = Text("-")
                cells = ["-", "-", "-", str(len(data.round_points(v)) or "-")]
            self.add_row(Text(name, style=colour), state, *cells)
        self.border_title = title(data.threshold)
        notes = self.clock_notes(data)
        self.border_subtitle = " · ".join(
            (["*: computed from the report's round p50s"] if computed else []) + notes)

    def _workload(self, data: Source, wl: Workload, ctx: ViewContext) -> None:
        """A workload's verdicts: each variant's total (Σ weight x p50) against the baseline's,
        as the Variants panel and `sagetui run --workload` say them (its own model has no
        rounds: its verdicts once read "-" beside the Variants panel's); n: the calls."""
        for t in wl.totals:
            word = total_word(wl, t.ci_low_percent, t.ci_high_percent)
            if t.variant == wl.baseline:
                state, cells = Text("baseline", style="dim"), ["-", "-", "-"]
            else:
                state = Text(word or "-", style=STATE_STYLE.get(word or "", ""))
                cells = [pct(t.speedup_percent), ci(t.ci_low_percent, t.ci_high_percent),
                         pct(threshold(wl), sign=False)]
            self.add_row(Text(t.variant, style=ctx.colour(data, t.variant)), state, *cells,
                         str(len(wl.points)))
        self.border_title = (f"Verdicts (totals): SAME if the 95 % CI is within "
                             f"±{fmt.percent(threshold(wl))}")
        self.border_subtitle = "each call's: the Sweep tab (8)"

    def clock_notes(self, data: Source) -> list[str]:
        """The verdict lines that name their clocks (core/statistics/clocks.py): a saved
        report's as recorded; a live run's once its verdicts are final, computed once per
        model version (the cycles' analysis is the verdicts' own); none without telemetry."""
        m = data.model
        if m.live and not m.measured:
            return []
        key = (id(m), m.version)
        if self._notes is None or self._notes[:2] != key:
            clocks = figures.clocks(m, figures.analysis(m, drift=False, outliers=False)) \
                if any((t := figures.of(m, v).telemetry) and t[0].get("available")
                       for v in m.variants.values()) else {}
            self._notes = (*key, [c["note"] for c in clocks.values() if c.get("note")])
        return self._notes[2]


def title(threshold: Threshold | None) -> str:
    """The panel's title: the SAME rule with its threshold, and where that came from."""
    if threshold is None:
        return "Verdicts vs baseline"
    source = {SOURCE_DEFAULT: "default threshold",
              SOURCE_THRESHOLD: "set by --threshold",
              SOURCE_RECORDED: "the report's threshold"}.get(threshold.source,
                                                                f"from {threshold.source}")
    floor = threshold.noise_floor_percent
    if floor is not None and threshold.source in (SOURCE_CALIBRATION, SOURCE_NOISE_FLOOR):
        source = ("calibrated" if threshold.source == SOURCE_CALIBRATION else
                  "--noise-floor") + f": {fmt.noise_floor(floor)}"
        if threshold.calibrated_utc:
            source += f", {age(threshold.calibrated_utc)}"
    return f"Verdicts: SAME if the 95 % CI is within ±{fmt.percent(threshold.percent)} ({source})"
