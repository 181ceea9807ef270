"""Ask a runner what this machine can run (the doctor's view), without starting a run."""

from __future__ import annotations

import json
from typing import Any

from sagetui.session.spawn import spawn_runner


def probe(timeout: float = 120.0, python: str | None = None,
          peak: bool = False) -> dict[str, Any]:
    """`python -m sagetui.runner --doctor`'s answer, from a runner process started (or forked
    from the runner template) as a run's is (spawn.py)."""
    spawned = spawn_runner(python, args=["--doctor", *(["--peak"] if peak else [])])
    try:
        out, err = spawned.proc.communicate(timeout=timeout)
    finally:
        spawned.discard()
    if spawned.proc.returncode != 0:
        tail = err.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the runner could not start: {tail[0]}")
    return json.loads(out.strip().splitlines()[-1])
