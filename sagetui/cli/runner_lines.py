"""One status line per runner while several measure side by side (`--gpus`): what each is
doing now, how many points it has finished, and its faults. On a terminal the lines stay at
the bottom of stderr (rich's Live), the points' own lines scrolling above them; elsewhere
(a log, a pipe) only those prefixed lines are written."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from rich.console import Console
from rich.live import Live
from rich.text import Text

from sagetui.core import events as ev


@dataclass
class RunnerState:
    doing: str = "starting"
    done: int = 0
    faults: int = 0
    device: str = ""


class RunnerLines:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.state: dict[str, RunnerState] = {}
        self._lock = threading.Lock()  # every runner's thread reports here
        self._live: Live | None = None

    def update(self, e: ev.FromRunner) -> None:
        inner: ev.Event = e.event
        with self._lock:
            s = self.state.setdefault(e.runner, RunnerState())
            match inner:
                case ev.Hello():
                    s.doing, s.device = "up", str(inner.device or "")
                case ev.PointStarted():
                    s.doing = f"point {inner.index + 1}/{inner.total}: {inner.shape}"
                case ev.PointDone():
                    s.done += 1
                    s.doing = "idle"
                case ev.FaultRaised():
                    s.faults += 1
                case _:
                    pass  # a runner's line says what it is doing, how many done, its faults
            if self.console.is_terminal and self._live is None:
                self._live = Live(self.render(), console=self.console, transient=True,
                                  auto_refresh=False)
                self._live.start()
            if self._live is not None:
                self._live.update(self.render(), refresh=True)

    def lines(self) -> list[str]:
        return [f"{name}: {s.doing} · {s.done} done"
                + (f" · {s.faults} fault{'s' * (s.faults > 1)}" if s.faults else "")
                for name, s in sorted(self.state.items())]

    def render(self) -> Text:
        return Text("\n".join(self.lines()), style="bold")

    def stop(self) -> None:
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None
