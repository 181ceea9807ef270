"""Every option a backend takes, and the values it accepts: checked in core before a runner
starts, because SageAttention's wrappers do not refuse a value they do not handle (the sm89
function has no `else` for an unknown `pv_accum_dtype` and returns its uninitialised output; the
sm90 one computes only fp32+fp32).

One table, read by the config's validation, the backends' defaults and `--help`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sagetui.core.suggest import did_you_mean

# the values of torch's SDPBackend this console pins sdpa to, plus the flash implementations
# torch >= 2.11 can swap into its FLASH backend (`activate_flash_attention_impl`)
SDPA_PINNED = ("cudnn", "flash", "efficient", "math")
SDPA_FLASH_IMPLS = ("fa3", "fa4")
FLASH_ATTN_IMPLS = ("fa2", "fa3", "fa4")


@dataclass(frozen=True)
class BackendOption:
    values: tuple[Any, ...]
    default: Any
    help: str = ""


QK_GRAN = BackendOption(("per_warp", "per_thread"), "per_warp",
                        "Q/K int8 granularity; per_thread quantizes with SageAttention's Triton "
                        "kernels")
SMOOTH_K = BackendOption((True, False), True, "subtract K's mean over the tokens before int8 "
                         "(exact for the softmax; false skips it, as smooth_k=False does)")
SMOOTH_V = BackendOption((False, True), False, "subtract V's mean first (see each backend's rule)")
RETURN_LSE = BackendOption((False, True), False, "also return the softmax's log-sum-exp per "
                           "query row (a template parameter of the CUDA kernels: another kernel "
                           "runs); the lse is hashed with the output and checked against fp32's")

OPTIONS: dict[str, dict[str, BackendOption]] = {
    "reference": {"smooth_k": SMOOTH_K, "return_lse": RETURN_LSE,
                  "slowdown": BackendOption((), 1.0, "test knob: 1..10 x the main loop's time"),
                  # test knobs: a simulated device (runner/timing.SimStream) whose host and
                  # device work per call are these many microseconds
                  "host_us": BackendOption((), 0.0, "test knob: host work per call, us (0..1e6)"),
                  "device_us": BackendOption((), 0.0, "test knob: simulated device work per call, "
                                             "us (0..1e6)")},
    "sdpa": {"backend": BackendOption((None, *SDPA_PINNED, *SDPA_FLASH_IMPLS), None,
                                      "pin torch's SDPA backend (default: torch's own choice, "
                                      "recorded)")},
    "flash-attn": {"impl": BackendOption(FLASH_ATTN_IMPLS, "fa2", "flash_attn (fa2), "
                                         "flash_attn_interface (fa3), flash_attn.cute (fa4)")},
    "sage-triton": {"smooth_k": SMOOTH_K, "return_lse": RETURN_LSE},
    "sage2-sm80": {
        "pv_accum": BackendOption(("fp32", "fp16+fp32", "fp16"), "fp32", "PV accumulation"),
        "qk_quant_gran": QK_GRAN,
        "smooth_k": SMOOTH_K,
        "smooth_v": SMOOTH_V,
        "return_lse": RETURN_LSE,
    },
    "sage2-sm89": {
        "pv_accum": BackendOption(("fp32+fp32", "fp32+fp16", "fp32"), "fp32+fp32",
                                  "PV accumulation"),
        "qk_quant_gran": QK_GRAN,
        "smooth_k": SMOOTH_K,
        "smooth_v": SMOOTH_V,
        "return_lse": RETURN_LSE,
    },
    "sage2-sm90": {
        "pv_accum": BackendOption(("fp32+fp32",), "fp32+fp32", "the only one sm90 computes"),
        "qk_quant_gran": QK_GRAN,
        "smooth_k": SMOOTH_K,
        "return_lse": RETURN_LSE,
    },
    # sageattn_varlen (Triton): packed sequences (`--seqlens`); it takes no return_lse
    "sage2-varlen": {"smooth_k": SMOOTH_K},
    # sageattn takes no option to pass on (its **kwargs are dropped): the dispatch picks them,
    # and the variant records what it picked (AUTO_CALLS)
    "sage2-auto": {},
}

# Each backend's public function in SageAttention (sageattention/core.py) and its defaults for
# the options sagetui names. Where sagetui's default differs (qk_quant_gran: per_warp here,
# per_thread there; sm89's pv_accum: fp32+fp32 here, fp32+fp16 there), a variant's options are
# marked (format.options_text), so that a figure is never read as the plain function's.
PUBLIC: dict[str, tuple[str, dict[str, Any]]] = {
    "sage2-sm80": ("sageattn_qk_int8_pv_fp16_cuda", {
        "pv_accum": "fp32", "qk_quant_gran": "per_thread", "smooth_k": True, "smooth_v": False,
        "return_lse": False}),
    "sage2-sm89": ("sageattn_qk_int8_pv_fp8_cuda", {
        "pv_accum": "fp32+fp16", "qk_quant_gran": "per_thread", "smooth_k": True,
        "smooth_v": False, "return_lse": False}),
    "sage2-sm90": ("sageattn_qk_int8_pv_fp8_cuda_sm90", {
        "pv_accum": "fp32+fp32", "qk_quant_gran": "per_thread", "smooth_k": True,
        "return_lse": False}),
    "sage-triton": ("sageattn_qk_int8_pv_fp16_triton", {"smooth_k": True, "return_lse": False}),
    "sage2-varlen": ("sageattn_varlen", {"smooth_k": True}),
}

# sageattn's dispatch (core.py): compute capability -> the backend whose function it calls and
# the options it passes (the function's defaults fill the rest)
AUTO_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "sm80": ("sage2-sm80", {"pv_accum": "fp32"}),
    "sm86": ("sage-triton", {}),
    "sm89": ("sage2-sm89", {"pv_accum": "fp32+fp16"}),
    "sm90": ("sage2-sm90", {"pv_accum": "fp32+fp32"}),
    "sm120": ("sage2-sm89", {"pv_accum": "fp32+fp16", "qk_quant_gran": "per_warp"}),
    "sm121": ("sage2-sm89", {"pv_accum": "fp32+fp16", "qk_quant_gran": "per_warp"}),
}


def auto_call(arch: str) -> dict[str, Any] | None:
    """What sageattn runs on `arch`: the function and every option it runs with."""
    if arch not in AUTO_CALLS:
        return None
    backend, passed = AUTO_CALLS[arch]
    function, defaults = PUBLIC[backend]
    return {"arch": arch, "function": function, "options": {**defaults, **passed}}


def public_of(backend: str, dispatched: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """The public function a variant stands for and its defaults: its backend's, or for
    sage2-auto the one its dispatch called (`dispatched`); None for the others."""
    if dispatched is not None:
        return next((p for p in PUBLIC.values() if p[0] == dispatched), None)
    return PUBLIC.get(backend)

# the reference backend's test knobs that run it on a simulated device (runner/timing.SimStream)
SIMULATED_DEVICE = ("host_us", "device_us")

# the backends that run packed sequences (`--seqlens`, a captured sageattn_varlen call): the
# others are refused with one line rather than run as something else
VARLEN_BACKENDS = ("reference", "sage2-varlen")

# (backend, pv_accum values smooth_v applies to): SageAttention ignores smooth_v elsewhere with
# a warning; here it is refused, so that a spec never names something that did not run
SMOOTH_V_ACCUM = {"sage2-sm80": ("fp16",), "sage2-sm89": ("fp32",)}


def option_value(v: Any) -> str:
    """An option's value as a spec writes it (and as it is typed): true/false for booleans."""
    return str(v).lower() if isinstance(v, bool) else str(v)


def _fmt(v: Any) -> str:
    return "(unset)" if v is None else option_value(v)


# the backends that run without a CUDA device (the runner's Backend.needs_gpu, False): every
# other one is refused before a runner starts where torch has no CUDA (cli/run_options.py)
CPU_BACKENDS = ("reference",)

# options that are test knobs, not the kernel's: listed, in a report's tables and in messages,
# only where given a value other than their default (where they are in effect)
TEST_KNOBS = ("slowdown",)


def shown_options(backend: str) -> list[str]:
    """The options a user is told of: the backend's, less the test knobs."""
    return [k for k in OPTIONS.get(backend, {}) if k not in TEST_KNOBS]


def in_effect(backend: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options as a table shows them: a test knob only where it is not at its default."""
    table = OPTIONS.get(backend, {})
    return {k: v for k, v in options.items()
            if k not in TEST_KNOBS or k not in table or v != table[k].default}


def validate_options(backend: str, options: dict[str, Any]) -> None:
    """Raise ValueError (one line) for an option `backend` does not take or a value it does
    not handle."""
    table = OPTIONS.get(backend, {})
    for key, value in options.items():
        opt = table.get(key)
        if opt is None:
            # every name it takes: the kernel's options, then the test knobs (a user meets
            # `reference[slowdown=2]` in the docs)
            knobs = [k for k in table if k in TEST_KNOBS or k in SIMULATED_DEVICE]
            kernel = [k for k in table if k not in knobs]
            known = ", ".join(kernel) or "none"
            if knobs:
                known += f"; test knobs: {', '.join(knobs)}"
            hint = did_you_mean(key, table)
            raise ValueError(f"{backend} has no option {key!r}" + (f"; {hint}" if hint else "")
                             + f" (its options: {known})")
        if key == "slowdown":
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 1.0 <= float(value) <= 10:
                raise ValueError("slowdown (a test knob) applies to the reference backend, 1..10")
            continue
        if key in SIMULATED_DEVICE:
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0 <= float(value) <= 1e6:
                raise ValueError(f"{key} (a test knob) applies to the reference backend, "
                                 "0..1e6 microseconds")
            continue
        if value not in opt.values or (isinstance(opt.default, bool)
                                       and not isinstance(value, bool)):
            allowed = ", ".join(_fmt(v) for v in opt.values if v is not None)
            raise ValueError(f"{backend}: {key}={_fmt(value)} is not one of {allowed}")
    if options.get("smooth_v") is True:
        accum = options.get("pv_accum", table["pv_accum"].default)
        if accum not in SMOOTH_V_ACCUM.get(backend, ()):
            want = " or ".join(SMOOTH_V_ACCUM[backend])
            raise ValueError(f"{backend}: smooth_v applies to pv_accum={want} only "
                             f"(SageAttention ignores it with {accum})")


# the module each flash implementation lives in (the packages' own names)
FLASH_MODULES = {"fa2": "flash_attn", "fa3": "flash_attn_interface",
                 "fa4": "flash_attn.cute.interface"}


def needed_module(backend: str, options: dict[str, Any]) -> str | None:
    """The optional package a baseline needs, or None."""
    if backend == "sdpa" and options.get("backend") in SDPA_FLASH_IMPLS:
        return FLASH_MODULES[options["backend"]]
    if backend == "flash-attn":
        return FLASH_MODULES[option(backend, options, "impl")]
    return None


def missing_module(backend: str, options: dict[str, Any]) -> str | None:
    """Why a baseline cannot run here, found without importing anything (torch included): its
    package is not installed. None when it is (the runner still reports a failing import)."""
    import importlib.util
    from pathlib import Path

    name = needed_module(backend, options)
    if name is None:
        return None
    top, _, rest = name.partition(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    found = spec is not None
    if found and rest and spec is not None:  # a submodule: look for its file, importing nothing
        roots = [Path(p) for p in spec.submodule_search_locations or []]
        sub = Path(*rest.split("."))
        found = any((r / sub).with_suffix(".py").is_file() or (r / sub).is_dir() for r in roots)
    if found:
        return None
    what = _spec_text(backend, options)
    return (f"{what} needs the Python module {name}, which is not installed here "
            "(`sagetui doctor` lists the baselines and why each does or does not run)")


def _spec_text(backend: str, options: dict[str, Any]) -> str:
    opts = ",".join(f"{k}={_fmt(v)}" for k, v in options.items())
    return backend + (f"[{opts}]" if opts else "")


def option(backend: str, options: Mapping[str, Any], key: str) -> Any:
    """An option's value, or its default: the one place a default is read (None: `backend`
    takes no option `key`, as sage2-sm90 takes no smooth_v)."""
    known = OPTIONS.get(backend, {}).get(key)
    return options.get(key, None if known is None else known.default)


def with_defaults(backend: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Every option of the backend: the given ones over its defaults (the simulated device's
    knobs only where given: a reference variant without them runs as it always did)."""
    return {**{k: o.default for k, o in OPTIONS.get(backend, {}).items()
               if k not in SIMULATED_DEVICE}, **options}


__all__ = ["AUTO_CALLS", "CPU_BACKENDS", "FLASH_ATTN_IMPLS", "FLASH_MODULES", "OPTIONS", "PUBLIC",
           "TEST_KNOBS", "in_effect", "option_value", "shown_options",
           "SDPA_FLASH_IMPLS", "SDPA_PINNED", "VARLEN_BACKENDS", "auto_call", "missing_module",
           "needed_module", "option", "public_of", "validate_options", "with_defaults"]
