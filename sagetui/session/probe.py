"""Ask a runner what this machine can run (the doctor's view), without starting a run."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def probe(timeout: float = 120.0, python: str | None = None,
          peak: bool = False) -> dict[str, Any]:
    argv = [python or sys.executable, "-m", "sagetui.runner", "--doctor"]
    out = subprocess.run(argv + (["--peak"] if peak else []),
                         capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        tail = out.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the runner could not start: {tail[0]}")
    return json.loads(out.stdout.strip().splitlines()[-1])
