"""What a user sees at 80 x 24 and 160 x 50, in a real terminal: every tab of every kind of
report in sample_results/ (run, two runs compared, sweep, swap, profile, the widest H200 run)
and a workload replay, opened with `sagetui view` in tmux, each shown at 80 x 24, then the
terminal resized to 160 x 50 and each shown again. On every screen no number is cut ("…" after a
digit), the tab bar names all eight tabs, the footer ends in its palette key, and each table
shows every column's header (the headers the product's own column lists name): a table too wide
folds its columns into bands (tui/widgets/folded_columns.py), it never scrolls sideways."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from sagetui.core import variant_facts
from sagetui.core.compare.comparison import compare_reports
from sagetui.core.report.io import load_report
from sagetui.core.swap import view
from sagetui.tui.keymap import TABS
from sagetui.tui.widgets import phase_table, sweep_table

from .conftest import ROOT
from .test_e2e_tmux import (  # noqa: F401  (pytestmark: tmux needed, e2e, loaded)
    START_S,
    STEP_S,
    Tmux,
    pytestmark,
    until,
)

# a report of each kind in sample_results/ (a run twice, to compare two; the H200 run with the
# widest variants table: 12 variants with host times and accuracy, a header with telemetry and
# the GPU's state, a phase table with its speed of light)
RUN_A, RUN_B, SWEEP, SWAP, PROFILE, H200 = (ROOT / "sample_results" / f"{name}.json" for name in (
    "cpu_reference_variants", "cpu_reference_kbias", "sweep_cpu_reference", "h200_swap_llama",
    "h200_profile_sm89_reference_shape", "h200_kernels"))
LABELS = [f"{i + 1} {title}" for i, (_, title) in enumerate(TABS)]
CUT_NUMBER = re.compile(r"[0-9%]…")
SIZES = ((80, 24), (160, 50))


def active_tab(screen: str) -> str | None:
    """The label over the underline's highlighted stretch (the tab bar's second line: the
    active tab's stretch ends in ╺ and, unless it is the first, begins after ╸)."""
    lines = screen.split("\n")
    if len(lines) < 2:
        return None
    bar, rule = lines[0], lines[1]
    end = rule.find("╺")
    if end < 0:
        end = len(rule)
    start = rule.rfind("╸", 0, end)
    label = bar[start + 1:end].strip() if start >= 0 else bar[:end].strip()
    return label or None


def settled(tmux: Tmux, check) -> str:
    """The screen once `check` holds on it and two captures 0.1 s apart agree (a frame
    painted whole)."""
    last = [""]

    def still() -> str | None:
        screen = tmux.screen()
        same = screen == last[0] and check(screen)
        last[0] = screen
        return screen if same else None

    try:
        return until(still, STEP_S, "a settled screen")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the screen:\n{last[0]}") from None


def box_headers(screen: str) -> set[str]:
    """The column headers of the screen's boxed tables (Rich's: a header row starts with ┃),
    each column's header lines joined: a header wrapped over lines reads whole."""
    out: set[str] = set()
    rows: list[list[str]] = []
    for line in screen.split("\n") + [""]:
        text = line.strip()
        if text.startswith("┃"):
            rows.append([c.strip() for c in text.strip("┃").split("┃")])
        elif rows:
            out.update(" ".join(filter(None, col)) for col in zip(*rows, strict=False))
            rows = []
    return out


def titles_missing(screen: str, titles: tuple[str | tuple[str, ...], ...]) -> list[str]:
    """The `titles` (a tuple: its long or its short form) not on the screen whole, between
    spaces: a DataTable's headers, on one line or folded over several."""
    def shown(title: str) -> bool:
        return re.search(rf"(?<!\S){re.escape(title)}(?!\S)", screen) is not None
    return [str(t) for t in titles
            if not any(shown(f) for f in ((t,) if isinstance(t, str) else t))]


# the H200 run's variants table: its host-time and accuracy columns, long or short
H200_VARIANT_TITLES = ("p50 ms", ("p50 Δ %", "Δ %"), ("drift %/rnd", "drift"),
                       *((f.header(), f.short) if f.short else f.header()
                         for f in variant_facts.shown_in(variant_facts.TABLE)))


@functools.cache
def expected_headers() -> dict[str, set[str]]:
    """The headers each boxed table must show whole: the product's own column lists."""
    comparison = compare_reports([(RUN_A.name, load_report(RUN_A)),
                                  (RUN_B.name, load_report(RUN_B))])
    return {SWAP.name: {name for name, _ in view.COLUMNS},
            "compare": {c.title for c in comparison.columns}}


def scrolled(tmux: Tmux, screen: str) -> list[str]:
    """`screen` and the screens under it, paged down (the focused panel scrolls) until the
    screen stops changing."""
    screens = [screen]
    for _ in range(40):
        tmux.keys("PageDown")
        try:
            screens.append(until(lambda: (s := tmux.screen()) != screens[-1] and s, 1.0,
                                 "the next page"))
        except AssertionError:
            break
        screens[-1] = settled(tmux, lambda _: True)
    tmux.keys("Home")
    return screens


def show(tmux: Tmux, key: str, report: str = "") -> str:
    """Tab `key`'s screen (`report`: a name its first lines must show)."""
    label = LABELS[int(key) - 1]
    tmux.keys(key)
    return settled(tmux, lambda s: active_tab(s) == label and report in "".join(s.split()[:40]))


def problems_of(screen: str, where: str) -> list[str]:
    out = []
    lines = screen.rstrip("\n").split("\n")
    for label in LABELS:
        if label not in lines[0]:
            out.append(f"{where}: the tab bar lacks {label!r}: {lines[0]!r}")
    if not lines[-1].rstrip().endswith("^p palette"):
        out.append(f"{where}: the footer ends {lines[-1][-20:]!r}")
    for line in lines:
        if CUT_NUMBER.search(line):
            out.append(f"{where}: a number cut: {line.strip()!r}")
    return out


def headers_missing(tmux: Tmux, screen: str, name: str, key: str, size: tuple[int, int],
                    where: str) -> list[str]:
    expected = expected_headers()
    if key == "7" and name == RUN_A.name:
        want = expected["compare"]
    elif key == "1" and name == SWAP.name:
        want = expected[SWAP.name]
    elif key == "8" and name in (SWEEP.name, "workload.json"):
        titles = sweep_table.WORKLOAD_COLUMNS if name == "workload.json" else tuple(
            zip(sweep_table.COLUMNS, sweep_table.SHORT, strict=True))
        return [f"{where}: no column headed {t}" for t in titles_missing(screen, titles)]
    elif key == "1" and name in (H200.name, "workload.json"):
        titles = H200_VARIANT_TITLES if name == H200.name else ("calls", "total ms",
                                                                 "total Δ % [95% CI]")
        if name == H200.name and size[0] >= 160:  # its phase table (at 80: under the fold)
            titles += phase_table.COLUMNS + phase_table.SOL_COLUMNS
        return [f"{where}: no column headed {t}" for t in titles_missing(screen, titles)]
    else:
        return []
    seen = set().union(*(box_headers(s) for s in scrolled(tmux, screen)))
    return [f"{where}: no column headed {title!r} (seen: {sorted(seen)})"
            for title in sorted(want - seen)]


@pytest.mark.parametrize("reports", ["runs", "kinds"])
def test_every_tab_and_report_whole_at_80x24_and_160x50(tmp_path: Path, reports: str,
                                                         replayed_workload: Path) -> None:
    files = [RUN_A, RUN_B] if reports == "runs" else [SWEEP, replayed_workload, SWAP, PROFILE,
                                                      H200]
    names = [f.name for f in files]
    tmux = Tmux(f"layout-{reports}")
    tmux.start_console(tmp_path, "view " + " ".join(str(f) for f in files), size=SIZES[0])
    problems: list[str] = []
    screens: list[str] = []
    try:
        until(lambda: names[0] in tmux.screen(), START_S, "the first report")
        for size in SIZES:
            if size != SIZES[0]:
                tmux("resize-window", "-t", tmux.target, "-x", str(size[0]), "-y", str(size[1]))
                until(lambda size=size: tmux.pane_size() == size, STEP_S, "the pane's new size")
            for n, name in enumerate(names):
                if n:
                    tmux.keys("n")
                for key in "12345678":
                    screen = show(tmux, key, name if key == "1" else "")
                    where = f"{size[0]}x{size[1]} {name} tab {key}"
                    screens.append(f"== {where}\n{screen}")
                    problems += problems_of(screen, where)
                    problems += headers_missing(tmux, screen, name, key, size, where)
            tmux.keys("n")  # back to the first
    finally:
        tmux("kill-server")
        (tmp_path.parent / f"screens-{reports}.txt").write_text("\n".join(screens))
    assert not problems, "\n".join(problems)
