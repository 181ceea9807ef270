"""sagetui: a live terminal console for benchmarking SageAttention kernels.

`sagetui.capture(DIR, ...)`, the context manager that captures a program's attention calls
(sagetui/recorder/context.py), loads with torch when first asked for: `import sagetui` stays
light. `sagetui.region(NAME)` and `sagetui.output(NAME, tensor)` mark a program's step and
outputs for `sagetui swap` (sagetui/swap/api.py; nothing outside a swap)."""

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "capture":
        # by name: every layer imports this package (for __version__), and a plain import
        # would put the recorder, torch with it, under each of them in the import graph
        import importlib

        return importlib.import_module("sagetui.recorder.context").capture
    if name in ("region", "output"):
        import importlib

        return getattr(importlib.import_module("sagetui.swap.api"), name)
    raise AttributeError(f"module 'sagetui' has no attribute {name!r}")
