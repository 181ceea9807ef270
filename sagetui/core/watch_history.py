"""The watch's history (`sagetui --watch`, key w): one row per rebuild of a source variant in
this console session: when, what changed in its tree since its previous build, the run's
verdict and the main-loop phase's delta against the baseline. Shown in the Compare tab; kept
for the session only (no report field: every figure in a row is one the run's report holds or
derives the usual way).

The main-loop delta is the one analysis (statistics/analysis.analyse) of that phase alone: its
p50 speedup (core/derived.speedup_percent of the two p50s, as a variant's total) and the paired
verdict's 95 % interval on the phase's round medians (core/run/figures.round_medians), judged
with the report's own threshold."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sagetui.core import format as fmt
from sagetui.core.build_facts import FileDiff
from sagetui.core.compare.runs import baseline_of
from sagetui.core.report.model import Report
from sagetui.core.run import figures as fig
from sagetui.core.run.load import from_report, report_threshold
from sagetui.core.statistics.analysis import VariantAnalysis, analyse

MAINLOOP = "fused_mainloop"  # core/phases.py: the phase the kernel's main loop is timed in
COLUMNS = ("time", "variant", "change", "verdict", "main-loop p50 % [95% CI]")


@dataclass(frozen=True)
class WatchRow:
    time: str  # HH:MM:SS, local
    variant: str
    change: str
    verdict: str
    mainloop: str

    def cells(self) -> tuple[str, ...]:
        return self.time, self.variant, self.change, self.verdict, self.mainloop


def change_text(files: list[FileDiff] | None) -> str:
    """'pybind_sm89.cpp +2 -1, setup.py +1 -0'; 'no diff' (git unavailable: None), 'first
    build' is the caller's."""
    if files is None:
        return "changed (no git for the diff)"
    if not files:
        return "no change in the sources"

    def lines(n: int | None) -> str:
        return "bin" if n is None else str(n)

    return ", ".join(f"{f.file.rsplit('/', 1)[-1]} +{lines(f.added)} -{lines(f.deleted)}"
                     for f in files)


def mainloop_delta(report: Report, variant: str) -> VariantAnalysis | None:
    """The main-loop phase of `variant` against the report's baseline: the p50 speedup and the
    paired verdict (None: no such phase, or the variant is the baseline)."""
    model = from_report(report)
    base = baseline_of(report)
    if base is None or variant == base or variant not in model.variants \
            or base not in model.variants:
        return None
    pair = {n: model.variants[n] for n in (base, variant)}
    p50s = {n: fig.phase_timings(v).get(MAINLOOP, {}).get("p50_s") for n, v in pair.items()}
    if None in p50s.values():
        return None
    medians = {n: fig.round_medians(v, MAINLOOP) for n, v in pair.items()}
    return analyse(medians, p50s, base, report_threshold(report)).variants.get(variant)


def row_of(report: Report | None, variant: str, change: str,
           when: float | None = None) -> WatchRow:
    """A rebuild's row from the run that followed it (None: it never ran, `change` says
    why)."""
    stamp = time.strftime("%H:%M:%S", time.localtime(when))
    if report is None:
        return WatchRow(stamp, variant, change, fmt.DASH, fmt.DASH)
    entry = next((v for v in report.variants or [] if v.name == variant), None)
    if entry is None:
        return WatchRow(stamp, variant, change, "not run", fmt.DASH)
    verdict = "baseline" if baseline_of(report) == variant else \
        fmt.verdict(entry.verdict.model_dump() if entry.verdict else None)
    delta = mainloop_delta(report, variant)
    if delta is None:
        return WatchRow(stamp, variant, change, verdict, fmt.DASH)
    v = delta.verdict
    main = fmt.pct(delta.speedup_p50_percent) + (
        f" {fmt.ci(v.ci_low_percent, v.ci_high_percent)}" if v is not None else "")
    return WatchRow(stamp, variant, change, verdict, main)
