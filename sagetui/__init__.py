"""sagetui: a live terminal console for benchmarking SageAttention kernels.

`sagetui.capture(DIR, ...)`, the context manager that captures a program's attention calls
(sagetui/recorder/context.py), loads with torch when first asked for: `import sagetui` stays
light. `sagetui.region(NAME)` and `sagetui.output(NAME, tensor)` mark a program's step and
outputs for `sagetui swap` (sagetui/swap/api.py; nothing outside a swap).

This module is the API a user's program imports, over every layer: no module of sagetui
imports it (tests/test_layers.py), so its imports of the recorder and the swap, made when a
name is first asked for, put them under nothing else."""

from typing import Any

from sagetui.core.version import VERSION

__version__ = VERSION


def __getattr__(name: str) -> Any:
    if name == "capture":
        from sagetui.recorder.context import capture

        return capture
    if name in ("region", "output"):
        from sagetui.swap import api

        return getattr(api, name)
    raise AttributeError(f"module 'sagetui' has no attribute {name!r}")
