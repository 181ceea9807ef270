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


# -- the environment of a measurement: each query None where NVML cannot answer, never raising
def _query(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:  # NVMLError_NotSupported, NoPermission, FunctionNotFound, a stub: unknown
        return None


def persistence_mode(nvml: Any, handle: Any) -> bool | None:
    mode = _query(nvml.nvmlDeviceGetPersistenceMode, handle)
    return None if mode is None else bool(mode == nvml.NVML_FEATURE_ENABLED)


def _enabled_now(nvml: Any, query: Any, handle: Any) -> bool | None:
    """A mode NVML reports as (current, pending): whether it is on now."""
    modes = _query(query, handle)
    if not isinstance(modes, list | tuple) or not modes:
        return None
    return bool(modes[0] == nvml.NVML_FEATURE_ENABLED)


def ecc_mode(nvml: Any, handle: Any) -> bool | None:
    return _enabled_now(nvml, nvml.nvmlDeviceGetEccMode, handle)


def mig_mode(nvml: Any, handle: Any) -> bool | None:
    return _enabled_now(nvml, nvml.nvmlDeviceGetMigMode, handle)


def application_clocks(nvml: Any, handle: Any) -> dict[str, int | None] | None:
    """The clocks kernels are meant to run at (`nvidia-smi -ac`) beside their defaults: a
    user's setting that differs from the default changes every timing."""
    out = {f"{prefix}{clock}_mhz": _query(fn, handle, domain)
           for prefix, fn in (("", nvml.nvmlDeviceGetApplicationsClock),
                              ("default_", nvml.nvmlDeviceGetDefaultApplicationsClock))
           for clock, domain in (("sm", nvml.NVML_CLOCK_SM), ("mem", nvml.NVML_CLOCK_MEM))}
    return out if any(v is not None for v in out.values()) else None


def other_processes(nvml: Any, handle: Any, own_pid: int) -> dict[str, int | None] | None:
    """Compute processes on this GPU besides `own_pid`: how many, and the memory they hold
    (None where the driver does not say: in a container it often cannot)."""
    procs = _query(nvml.nvmlDeviceGetComputeRunningProcesses, handle)
    if procs is None:
        return None
    others = [p for p in procs if getattr(p, "pid", None) != own_pid]
    used = [getattr(p, "usedGpuMemory", None) for p in others]
    known = [int(u) for u in used if isinstance(u, int)]
    return {"count": len(others),
            "memory_bytes": sum(known) if len(known) == len(used) else None}


def measurement_state(nvml: Any, handle: Any, own_pid: int) -> dict[str, Any]:
    """Persistence mode, ECC, MIG, application clocks and the other processes on the GPU: the
    ready event's gpu "state"; each None where NVML does not say."""
    return {"persistence_mode": persistence_mode(nvml, handle),
            "ecc": ecc_mode(nvml, handle), "mig": mig_mode(nvml, handle),
            "application_clocks": application_clocks(nvml, handle),
            "other_processes": other_processes(nvml, handle, own_pid)}


def device_handle(nvml: Any, index: int, uuid: str | None) -> Any:
    """The GPU torch calls `index`: by its UUID where torch gave one (CUDA_VISIBLE_DEVICES
    renumbers devices, NVML does not), else by the index."""
    if uuid:
        name = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
        handle = _query(nvml.nvmlDeviceGetHandleByUUID, name)
        if handle is not None:
            return handle
    return nvml.nvmlDeviceGetHandleByIndex(index)


def gpu_facts(index: int, uuid: str | None, own_pid: int) -> dict[str, Any]:
    """What NVML adds to the runner's gpu info: the driver, the top SM clock and the state
    above; where NVML cannot be used, why, and state None. Never raises."""
    try:
        with nvml_open() as nvml:
            handle = device_handle(nvml, index, uuid)
            return {"driver": _query(nvml.nvmlSystemGetDriverVersion),
                    "max_sm_clock_mhz": _query(nvml.nvmlDeviceGetMaxClockInfo, handle,
                                               nvml.NVML_CLOCK_SM),
                    "state": measurement_state(nvml, handle, own_pid)}
    except Exception as exc:  # telemetry is optional
        return {"nvml": f"unavailable: {exc}", "state": None}
