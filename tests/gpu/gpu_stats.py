"""What the GPU test modules share: their marks (skipped without a CUDA device) and the file
each records its measurements in (SAGETUI_GPU_STATS=<file.json>, a suffix per module)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

GPU_MARKS = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def stats_fixture(stats: dict[str, Any], suffix: str = "") -> Callable[..., Any]:
    """A module's autouse fixture that writes `stats` when its tests are done: to
    SAGETUI_GPU_STATS, with `suffix` before its .json."""

    @pytest.fixture(scope="module", autouse=True)
    def _write_stats() -> Iterator[None]:
        yield
        path = os.environ.get("SAGETUI_GPU_STATS")
        if path and stats:
            path = path.removesuffix(".json") + suffix + ".json" if suffix else path
            with open(path, "w") as fh:
                json.dump(stats, fh, indent=1, sort_keys=True, default=str)

    return _write_stats
