"""The runner's one way into NVML (nvidia-ml-py, imported lazily): telemetry, the GPU's facts
and `--doctor` all open it here, so that its import, initialisation and failure messages are
written once. NVML counts its initialisations: each open_nvml() is paired with a close_nvml().
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class NvmlUnavailable(RuntimeError):
    """Why NVML cannot be used here (the message is shown to the user as it is)."""


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def open_nvml() -> Any:
    """pynvml, initialised; raises NvmlUnavailable with the reason."""
    try:
        import pynvml
    except Exception as exc:  # ImportError, or a broken install
        raise NvmlUnavailable(f"nvidia-ml-py is not importable ({describe(exc)})") from None
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        raise NvmlUnavailable(f"NVML unavailable ({describe(exc)})") from None
    return pynvml


def close_nvml(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:
        pass


@contextmanager
def nvml_open() -> Iterator[Any]:
    """`with nvml_open() as nvml:` one initialisation for a few queries."""
    nvml = open_nvml()
    try:
        yield nvml
    finally:
        close_nvml(nvml)
