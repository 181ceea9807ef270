"""The runs of `sagetui node-check`: one Session per GPU, all at once (the node as it is
used, every GPU under load, so a shared power or cooling limit shows), each pinned to its
device like a `--gpus` sweep's runners. A GPU whose runner fails is reported failed; the
others are measured regardless."""

from __future__ import annotations

import threading

from sagetui.core import events as ev
from sagetui.core.config import RunConfig
from sagetui.core.gpus import Slot
from sagetui.core.report.model import Report
from sagetui.session.runner_session import OnEvent
from sagetui.session.session import Session


def run_node_check(config: RunConfig, slots: list[Slot],
                   on_event: OnEvent | None = None,
                   runner_argv: list[str] | None = None
                   ) -> list[tuple[Slot, Report | None, str | None]]:
    """Each slot's report (None and why where its run raised)."""
    emit = on_event or (lambda e: None)
    out: dict[str, tuple[Report | None, str | None]] = {}

    def one(slot: Slot) -> None:
        def relay(e: ev.Event) -> None:
            emit(ev.FromRunner(runner=slot.label, event=e))
        s = Session(config.model_copy(update={"device": slot.device}), on_event=relay,
                    runner_env=slot.runner_env(), runner_argv=runner_argv)
        try:
            out[slot.label] = (s.run(), None)
        except Exception as exc:  # NotRunnable, or a bug: this GPU fails, not the check
            out[slot.label] = (None, f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=one, args=(s,), daemon=True) for s in slots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [(s, *out.get(s.label, (None, "did not run"))) for s in slots]
