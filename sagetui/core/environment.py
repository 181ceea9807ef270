"""The report's `environment` block: where a measurement was made. Every report sagetui writes
(a run, a sweep, a profile, a node check) carries one, built here from what the session knows
of its machine (`host_facts`) and what the runner said of itself and its GPU (its hello and
ready events).

    {"python", "torch", "device", "protocol",     # the runner's hello
     "gpu": {name, uuid, driver, cuda, capability, sm_count, ... , "state"},  # its ready
     "platform", "host",                          # the session's machine
     ...}                                         # a kind of report's own (ncu, runners)

A field nobody could tell is left out, never guessed.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from typing import Any


def host_facts() -> dict[str, str]:
    """The session's machine: its platform string and host name."""
    return {"platform": platform.platform(), "host": platform.node()}


def environment_block(*, runner: Mapping[str, Any] | None = None,
                      ready: Mapping[str, Any] | None = None,
                      host: Mapping[str, Any] | None = None,
                      **extra: Any) -> dict[str, Any]:
    """The block, from a runner's hello (python, torch, device, protocol), its ready (device,
    gpu) and the session's host_facts(); `extra`: a kind of report's own facts."""
    r, d, h = runner or {}, ready or {}, host or {}
    out: dict[str, Any] = {"python": r.get("python"), "torch": r.get("torch"),
                           "device": d.get("device") or r.get("device"), "gpu": d.get("gpu"),
                           "platform": h.get("platform"), "host": h.get("host"),
                           "protocol": r.get("protocol"), **extra}
    return {k: v for k, v in out.items() if v is not None}
