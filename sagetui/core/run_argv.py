"""A RunConfig as the `sagetui run` options that build it: the inverse of the CLI's parsing.

The console's run editor shows a configuration as these options, edits them as text and hands
them back to the CLI's own parser (cli/options.py's config_from_args): one code path, one set of
rules and messages. The option tables are the CLI's too (its messages name the option).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from sagetui.core.config import CPU_DEFAULT_SHAPE, RunConfig, VariantSpec

SHAPE_OPTIONS = {"batch": "--batch", "heads": "--heads", "kv_heads": "--kv-heads",
                 "q_len": "--q-len", "kv_len": "--kv-len", "head_dim": "--head-dim",
                 "dtype": "--dtype", "layout": "--layout", "causal": "--causal"}
RUN_OPTIONS = {"seed": "--seed", "noise_floor_percent": "--noise-floor", "warmup": "--warmup",
               "rounds": "--rounds", "iterations": "--iterations",
               "threshold_percent": "--threshold",
               "until_ci_percent": "--until-ci", "max_rounds": "--max-rounds",
               "watchdog_s": "--watchdog", "baseline": "--baseline", "variants": "--variant"}
# the run parser's defaults (cli/main.py) of the options the shape does not hold
RUN_DEFAULTS: dict[str, Any] = {"seed": 0, "warmup": 3, "rounds": 5, "iterations": 10,
                                "device": "auto", "watchdog_s": 120.0}
FLAGS = {"cold": "--cold", "tail_study": "--tail-study"}  # store_true options

Value = str | bool | list[str]
# the options in `sagetui run --help`'s order: a command line is written in it
ORDER = ("--variant", "--baseline", *SHAPE_OPTIONS.values(), "--inputs", "--metadata",
         "--seed", "--warmup", "--rounds", "--iterations", "--cold", "--tail-study", "--device",
         "--threshold", "--noise-floor", "--until-ci", "--max-rounds", "--watchdog")


def variant_text(spec: VariantSpec) -> str:
    """`--variant`'s value: `SPEC` when the name is the backend's, else `NAME=SPEC`."""
    return spec.spec if spec.name == spec.backend and not spec.path else f"{spec.name}={spec.spec}"


def _number(v: float | int) -> str:
    return f"{v:g}" if isinstance(v, float) and v == int(v) else str(v)


def option_values(config: RunConfig) -> dict[str, Value]:
    """Every option as the configuration has it, given or not ('' for one that is unset):
    what the editor's fields show."""
    shape = config.shape
    out: dict[str, Value] = {
        "--variant": [variant_text(v) for v in config.variants],
        "--baseline": config.baseline_name}
    for field, flag in SHAPE_OPTIONS.items():
        v = getattr(shape, field)
        out[flag] = v if isinstance(v, bool) else "" if v is None else str(v)
    out["--inputs"] = config.inputs_path or ""
    for field in ("warmup", "rounds", "iterations"):
        out[RUN_OPTIONS[field]] = str(getattr(config, field))
    out["--cold"], out["--tail-study"] = config.cold, config.tail_study
    out["--device"] = config.device
    return out


def explicit_options(config: RunConfig) -> dict[str, Value]:
    """The options a command line must give to build `config` again, in --help's order."""
    out: dict[str, Value] = {}
    if not config.auto:
        out["--variant"] = [variant_text(v) for v in config.variants]
    if config.baseline is not None:
        out["--baseline"] = config.baseline
    if not config.auto_shape:
        shape = config.shape.model_dump()
        for field, flag in SHAPE_OPTIONS.items():
            v = shape[field]
            if v != CPU_DEFAULT_SHAPE.get(field, False if field == "causal" else None):
                out[flag] = v if isinstance(v, bool) else str(v)
        if not config.inputs_path and not any(f in out for f in SHAPE_OPTIONS.values()):
            out["--q-len"] = str(config.shape.q_len)  # the CPU shape, given: not `auto`
    if config.inputs_path:
        out["--inputs"] = config.inputs_path
    for key, value in config.metadata.items():
        out.setdefault("--metadata", [])
        text = value if isinstance(value, str) and not _json_text(value) else json.dumps(value)
        out["--metadata"].append(f"{key}={text}")  # type: ignore[union-attr]
    for field in ("seed", "warmup", "rounds", "iterations"):
        if getattr(config, field) != RUN_DEFAULTS[field]:
            out[RUN_OPTIONS[field]] = str(getattr(config, field))
    for field, flag in FLAGS.items():
        if getattr(config, field):
            out[flag] = True
    if config.device != RUN_DEFAULTS["device"]:
        out["--device"] = config.device
    for field in ("threshold_percent", "noise_floor_percent", "until_ci_percent", "max_rounds"):
        if (v := getattr(config, field)) is not None:
            out[RUN_OPTIONS[field]] = _number(v)
    if config.watchdog_s != RUN_DEFAULTS["watchdog_s"]:
        out["--watchdog"] = _number(config.watchdog_s)
    return out


def _json_text(text: str) -> bool:
    """Whether --metadata would read `text` as a JSON value rather than as text."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def to_argv(options: Mapping[str, Value]) -> list[str]:
    argv: list[str] = []
    for flag, value in options.items():
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, item]
        elif value is not False:
            argv += [flag, value]
    return argv


def config_argv(config: RunConfig) -> list[str]:
    """`sagetui run`'s arguments that build `config` (config_from_args gives it back)."""
    return to_argv(explicit_options(config))


def command_line(argv: list[str]) -> str:
    """What to type: `sagetui run` and the arguments, quoted for a POSIX shell."""
    return shlex.join(["sagetui", "run", *argv])
