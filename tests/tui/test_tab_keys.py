"""Tab keys typed in a burst: the last key wins, every time (once, `4` then `2` within a
few ms left the console on tab 4, eight times in thirteen)."""

from __future__ import annotations

import itertools
import random

from textual import events
from textual.widgets import TabbedContent, Tabs

from sagetui.tui import keymap

from .conftest import TWO_BUILDS, aio, settle, tiny_config, viewer

TAB_IDS = [tab for tab, _ in keymap.TABS]


def burst(app, keys: str) -> None:
    """Keys as a terminal delivers a fast typist's burst: in one read, nothing run between."""
    for key in keys:
        event = events.Key(key, key)
        event.set_sender(app)
        app._driver.send_message(event)


def sequences() -> list[str]:
    every_pair = ["".join(p) for p in itertools.permutations("12345678", 2)]
    rng = random.Random(23)
    longer = ["".join(rng.choice("12345678") for _ in range(rng.randint(3, 6)))
              for _ in range(20)]
    return every_pair + longer


async def check_bursts(app, pilot, keys_list: list[str] | None = None) -> None:
    keys_list = keys_list or sequences()
    wrong = []
    for keys in keys_list:
        burst(app, keys)
        await settle(pilot, app)
        tabs = app.query_one(TabbedContent)
        focused = app.screen.focused
        shown = tabs.get_pane(tabs.active)
        if tabs.active != TAB_IDS[int(keys[-1]) - 1]:
            wrong.append(f"{keys} -> {tabs.active}")
        elif focused is None or not (focused is shown or shown in focused.ancestors
                                     or isinstance(focused, Tabs)):
            wrong.append(f"{keys}: focus left in another pane ({focused})")
    assert not wrong, f"{len(wrong)} of {len(keys_list)} bursts went wrong: {wrong}"


@aio
async def test_tab_keys_in_a_burst_end_on_the_last_key_viewer() -> None:
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await check_bursts(app, pilot)


@aio
async def test_tab_keys_in_a_burst_end_on_the_last_key_console(tmp_path) -> None:
    from sagetui.tui.app import SageTUI

    app = SageTUI(tiny_config(), theme_name="sage-dark", recovery_path=tmp_path / "r.json",
                  export_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        # the same key handling as the viewer's: a seeded sample of its bursts, every tab last
        sample = random.Random(7).sample(sequences(), 24)
        await check_bursts(app, pilot, sample + [f"{n % 8 + 1}{n}" for n in range(1, 9)])



@aio
async def test_focusing_a_widget_in_a_hidden_pane_still_shows_its_pane() -> None:
    app = viewer(TWO_BUILDS)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        app.query_one("#variants").focus()  # as a click or the focus chain would
        await settle(pilot, app)
        assert app.query_one(TabbedContent).active == "overview"
