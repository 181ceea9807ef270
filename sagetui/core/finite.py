"""What counts as a figure that is there, for every reader of reports and samples: the
formatters, the telemetry summaries and the sweep's check."""

from __future__ import annotations

import math
from typing import Any


def is_figure(x: Any) -> bool:
    """A finite int or float (not a bool, not None, not NaN or infinite)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
