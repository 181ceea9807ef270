"""Why a session stops before it measures: nothing can run here, or the runner refused a
setup."""

from __future__ import annotations

from sagetui.core import events as ev
from sagetui.core.config import RunConfig
from sagetui.core.protocol import PROTOCOL_VERSION


class NotRunnable(Exception):
    """Nothing in the configuration can run on this machine (the runner's hello says why):
    the run stops before any setup, and no report is made."""


class SetupFailed(RuntimeError):
    """The runner's error event in answer to a setup (kind "oom", "exception"...)."""

    def __init__(self, event: ev.RunnerError) -> None:
        super().__init__(f"runner setup failed: {event.message}")
        self.event = event


def refuse_unrunnable(config: RunConfig, hello: ev.Hello | None) -> None:
    """NotRunnable when the runner's hello says no variant's backend can run here, or when
    the runner speaks another protocol version (sagetui installed twice, say)."""
    if hello is not None and hello.protocol != PROTOCOL_VERSION:
        raise NotRunnable(f"the runner speaks protocol {hello.protocol}, this sagetui "
                          f"{PROTOCOL_VERSION}: the runner comes from another install (check "
                          "PYTHONPATH and the current directory)")
    backends = hello.backends if hello else {}
    why = {v.name: backends.get(v.backend) for v in config.variants}
    if why and all(why.values()):
        raise NotRunnable("nothing can run here: " + "; ".join(
            f"{v.spec}: {why[v.name]}" for v in config.variants))
