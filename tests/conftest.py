import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# an event that a display's `match` does not handle raises in the tests (core/events.unexpected)
os.environ.setdefault("SAGETUI_STRICT_EVENTS", "1")
SAMPLES = ROOT / "sample_results"
REF_000 = SAMPLES / "000_a7d5760a8f7ea9fe.json"
REF_001 = SAMPLES / "001_c3fd8b591d904547.json"

# A shape that runs a reference-backend round in a fraction of a second.
TINY = ["--heads", "2", "--q-len", "256", "--head-dim", "64", "--warmup", "1"]


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the H200)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def cli(tmp_path):
    """Run `sagetui ...` as a user would, in tmp_path, with recovery files kept there too."""
    import subprocess

    def run(*args, timeout=120, env=None, check=False):
        full_env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), **(env or {}))
        return subprocess.run([sys.executable, "-m", "sagetui", *map(str, args)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
                              env=full_env, check=check)
    return run


@pytest.fixture
def has_tmux():
    return shutil.which("tmux") is not None
