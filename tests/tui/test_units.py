"""The console's pure parts: sample stores, decimation, themes, the key table."""

from __future__ import annotations

import numpy as np
import pytest

from sagetui.core.report.io import load_report
from sagetui.core.run import figures
from sagetui.tui import keymap
from sagetui.tui.app import SageTUI
from sagetui.tui.series import GrowableArray, MinMaxSeries, stride
from sagetui.tui.source import saved_source
from sagetui.tui.themes import (
    OKABE_ITO,
    ThemeError,
    default_theme_name,
    load_themes,
    parse_theme,
)

from .conftest import SYNTHETIC, TWO_BUILDS, VIDEO_CALL_PHASES


def test_growable_array_keeps_everything_in_order() -> None:
    g = GrowableArray(capacity=2)
    for i in range(100):
        g.append(i)
    g.extend(np.arange(100, 1000))
    assert len(g) == 1000 and np.array_equal(g.view, np.arange(1000))


@pytest.mark.parametrize("n", [0, 1, 7, 64, 1000, 12_345])
def test_min_max_envelope_is_exact_and_about_the_width(n: int) -> None:
    rng = np.random.default_rng(n)
    data = rng.random(n)
    s = MinMaxSeries()
    i = 0
    while i < n:  # single appends and batches, as the live run mixes them
        k = int(rng.integers(1, 40))
        if k == 1:
            s.append(float(data[i]))
        else:
            s.extend(data[i:i + k])
        i += k
    for width in (1, 10, 80, 300):
        x, lo, hi = s.envelope(width)
        assert len(x) <= width + int(np.log2(max(n, 2))) + 1
        bounds = [*x.astype(int), n]
        for a, b, low, high in zip(bounds[:-1], bounds[1:], lo, hi, strict=True):
            assert low == data[a:b].min() and high == data[a:b].max()


def test_envelope_cost_does_not_grow_with_the_samples() -> None:
    """O(width): a million samples read no more points than a thousand."""
    small, big = MinMaxSeries(), MinMaxSeries()
    small.extend(np.ones(1000))
    big.extend(np.ones(1_000_000))
    assert len(big.envelope(200)[0]) <= 200 + 21
    assert len(small.envelope(200)[0]) <= 200 + 11


def test_stride_picks_at_most_width_points() -> None:
    idx, vals = stride(np.arange(10_000.0), 50)
    assert len(idx) == 50 and vals[0] == 0 and vals[-1] == 9999


def test_packaged_themes_load_with_colour_blind_safe_series() -> None:
    themes, problems = load_themes()
    assert not problems
    assert {"sage-dark", "sage-light", "sage-256"} <= set(themes)
    assert set(themes["sage-dark"].series[:7]) <= set(OKABE_ITO)
    # the 256-colour theme uses only exact xterm-256 palette entries
    levels = {0x00, 0x5F, 0x87, 0xAF, 0xD7, 0xFF}
    grays = {8 + 10 * i for i in range(24)}
    spec = themes["sage-256"]
    t = spec.theme
    for colour in (*spec.series, t.primary, t.secondary, t.accent, t.warning, t.error,
                   t.success, t.foreground, t.background, t.surface, t.panel):
        assert colour is not None
        rgb = [int(colour.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4)]
        assert set(rgb) <= levels or (len(set(rgb)) == 1 and rgb[0] in grays), colour


def test_theme_files_are_checked() -> None:
    with pytest.raises(ThemeError):
        parse_theme({"primary": "#000000"}, "x.toml")
    with pytest.raises(ThemeError):
        parse_theme({"name": "x", "primary": "#000000", "series": ["red"]}, "x.toml")


def test_ssh_without_colorterm_gets_the_256_colour_theme() -> None:
    assert default_theme_name({"TERM": "xterm-256color"}) == "sage-256"
    assert default_theme_name({"COLORTERM": "truecolor"}) == "sage-dark"


def test_every_key_has_an_action_and_keys_are_unique() -> None:
    seen: set[str] = set()
    for k in keymap.KEYS:
        name = k.action.split("(")[0]
        assert hasattr(SageTUI, f"action_{name}"), name
        for key in k.keys.split(","):
            assert key not in seen, key
            seen.add(key)


def test_reference_reports_fill_the_model() -> None:
    d000 = saved_source(load_report(VIDEO_CALL_PHASES), "000")
    whose, rows = d000.phase_rows(None)
    assert whose == "report" and len(rows) == 8
    assert rows[2].depth == 1 and rows[0].share is not None
    assert len(figures.tail_rows(d000.model)) == 6
    assert d000.report.scheduler.grid_ctas == 16576
    d001 = saved_source(load_report(TWO_BUILDS), "001")
    assert list(d001.variants) == ["baseline", "interleave-softmax"]
    assert len(d001.round_points(d001.variants["baseline"])) == 5
    # one grid for both builds of one kernel: the two-build report's own scheduler block
    assert figures.scheduler(d001.model, d001.variants["interleave-softmax"]) == \
        d001.report.scheduler.model_dump(exclude_none=True)
    syn = saved_source(load_report(SYNTHETIC), "syn")
    assert len(syn.totals(syn.variants["base"])) == 72
    assert syn.throttled_rounds(syn.variants["fast"])


def test_the_consoles_settings_hold_their_defaults_once() -> None:
    """tui/settings.py: the command line's --refresh default is the settings', and the console
    takes its settings through them (None and 0: the default; out of range: the nearer end)."""
    from sagetui.cli.main import build_parser
    from sagetui.core.run_fields import CONSOLE_REFRESH_RANGE_HZ
    from sagetui.tui.settings import CONSOLE_DEFAULTS, ConsoleSettings

    args = build_parser().parse_args([])
    assert args.refresh == CONSOLE_DEFAULTS.refresh_hz == 2.0 and args.theme is None
    assert ConsoleSettings.given(None).refresh_hz == ConsoleSettings.given(0).refresh_hz \
        == CONSOLE_DEFAULTS.refresh_hz
    assert ConsoleSettings(refresh_hz=1000).refresh_hz == CONSOLE_REFRESH_RANGE_HZ[1]
    assert ConsoleSettings(refresh_hz=0.001).refresh_hz == CONSOLE_REFRESH_RANGE_HZ[0]
    assert SageTUI(refresh_hz=4, theme_name="sage-dark").settings == ConsoleSettings(
        refresh_hz=4, theme="sage-dark")
