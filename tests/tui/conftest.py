"""Fixtures of the console's tests: seeded reports, a tiny real CPU run, pilot helpers."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from sagetui.core.config import RunConfig, Shape, VariantSpec
from sagetui.core.report.io import load_report
from sagetui.tui.app import SageTUI

ROOT = Path(__file__).resolve().parents[2]
VIDEO_CALL_PHASES = ROOT / "sample_results" / "000_a7d5760a8f7ea9fe.json"
TWO_BUILDS = ROOT / "sample_results" / "001_c3fd8b591d904547.json"
SYNTHETIC = Path(__file__).with_name("data") / "synthetic_report.json"
THEME = "sage-dark"  # explicit: the default depends on $COLORTERM


def aio(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    """Run an async test (Textual's Pilot) in its own event loop; no pytest plugin needed."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(fn(*args, **kwargs))

    return run


def tiny_config(rounds: int = 2, iterations: int = 3, variants: int = 1,
                **extra: object) -> RunConfig:
    """The brief's tiny CPU shape: a real runner process, a round in a fraction of a second."""
    specs = [VariantSpec(name="ref", backend="reference")]
    if variants > 1:
        specs.append(VariantSpec(name="slow", backend="reference", options={"slowdown": 1.3}))
    return RunConfig(shape=Shape(heads=2, q_len=256, head_dim=64), variants=specs,
                     rounds=rounds, iterations=iterations, warmup=1, **extra)


def viewer(*paths: Path, **kwargs: object) -> SageTUI:
    kwargs.setdefault("theme_name", THEME)
    return SageTUI(reports=[(str(p), load_report(p)) for p in paths],
                   **kwargs)  # type: ignore[arg-type]


async def settle(pilot, app: SageTUI) -> None:
    """Derived statistics (a thread worker) done, panels synced and visible plots drawn."""
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.flush_redraws(force=True)
    await pilot.pause()


async def wait_for(pilot, condition: Callable[[], bool], timeout: float = 60.0,
                   what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)
        await asyncio.sleep(0)


async def palette(pilot, app: SageTUI, word: str) -> None:
    """The command palette opened and `word` typed, its search over and a hit listed (waits on
    the palette's own worker, not on time: a loaded machine searches slowly)."""
    from textual.command import CommandList, CommandPalette

    before = app.screen
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: app.screen is not before
                   and isinstance(app.screen, CommandPalette), what="the palette")
    palette_screen = app.screen
    await pilot.press(*word)

    def searched() -> bool:
        hits = palette_screen.query(CommandList)
        return (not any(w.node is palette_screen and not w.is_finished for w in app.workers)
                and bool(hits) and hits.first().option_count > 0)

    await wait_for(pilot, searched, timeout=30, what=f"the palette's hits for {word!r}")


def screen_text(app: SageTUI) -> str:
    """The screen as plain text, as a user would read it."""
    from io import StringIO

    from rich.console import Console

    console = Console(width=app.size.width, height=app.size.height, record=True,
                      file=StringIO(), color_system=None, force_terminal=False)
    console.print(app.screen._compositor.render_update(full=True,
                                                       screen_stack=app._background_screens))
    return console.export_text()


@pytest.fixture
def recovery(tmp_path: Path) -> Path:
    return tmp_path / "recovery" / "run.json"


@pytest.fixture
def fake_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Mocked: Nsight Compute and the profiled call (tests/tui/test_profile_key.py says how)."""
    import sys

    from sagetui.core.profile.rules import FAMILIES
    from sagetui.session.profile_pass import profile_target
    from tests.test_profile_failures import FIX, fake_tools

    tools = fake_tools(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_MODE", "ok")

    def profile(config, spec, p):  # the driver on the stand-in call (see the module's note)
        info = p.workdir / "info.json"
        target = [sys.executable, "-c", "import json, sys; json.dump({'files': {"
                  f"'toy_attention': '{tmp_path}/toy_attention'}}}}, open(sys.argv[1], 'w'))",
                  str(info)]
        p.source_dirs = [str(FIX)]
        return profile_target(p, target, fam=FAMILIES["toy"], nvtx="toy", variant=spec.name,
                              backend=spec.backend, info_path=info)
    return tools, profile
