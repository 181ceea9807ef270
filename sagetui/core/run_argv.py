"""A RunConfig as the `sagetui run` options that build it: the inverse of the CLI's parsing.

The console's run editor shows a configuration as these options, edits them as text and hands
them back to the CLI's own parser (cli/run_options.py's config_from_args): one code path, one set of
rules and messages. The options, their order and their defaults are core/run_fields.py's, the
table the CLI's parser is built from.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from sagetui.core import distributions
from sagetui.core.config import RunConfig, VariantSpec
from sagetui.core.run_fields import CPU_DEFAULT_SHAPE, FIELDS, OPTIONS, value_text

Value = str | bool | list[str]
# the options in `sagetui run --help`'s order: a command line is written in it
ORDER = tuple(o.flag for o in OPTIONS)


def variant_text(spec: VariantSpec) -> str:
    """`--variant`'s value: `SPEC` when the name is the backend's, else `NAME=SPEC`."""
    return spec.spec if spec.name == spec.backend and not spec.path else f"{spec.name}={spec.spec}"


def _metadata_text(key: str, value: Any) -> str:
    """`--metadata`'s value: text stays text unless --metadata would read it as JSON."""
    text = value if isinstance(value, str) and not _json_text(value) else json.dumps(value)
    return f"{key}={text}"


def _fields(config: RunConfig) -> dict[str, Any]:
    """Each option's field as the configuration has it (--backend has none: --variant names
    every variant)."""
    shape = config.shape
    out = {o.flag: getattr(shape if o.shape else config, field) for field, o in FIELDS.items()}
    if shape.distribution != distributions.DEFAULT:  # --inputs synthetic:NAME sets the shape's
        out["--inputs"] = distributions.PREFIX + shape.distribution
    return out


def _value(value: Any) -> Value:
    """A field's value as its option's argument(s); '' for one that is unset."""
    if isinstance(value, bool):
        return value
    if isinstance(value, dict):
        return [_metadata_text(k, v) for k, v in value.items()]
    if isinstance(value, tuple):  # --seqlens 1024,2048,512
        return ",".join(value_text(v) for v in value)
    if isinstance(value, list):
        return [variant_text(v) if isinstance(v, VariantSpec) else value_text(v) for v in value]
    return "" if value is None else value_text(value)


def option_values(config: RunConfig) -> dict[str, Value]:
    """Every option as the configuration has it, given or not ('' for one that is unset):
    what the editor's fields show."""
    out = {flag: _value(value) for flag, value in _fields(config).items()}
    out["--baseline"] = config.baseline_name
    return out


def explicit_options(config: RunConfig) -> dict[str, Value]:
    """The options a command line must give to build `config` again, in --help's order:
    those whose field is not what leaving the option out gives (its default; for the shape,
    the CPU shape's), none of the shape's when the machine picks it (`auto_shape`) and no
    --variant when it picks the backend (`auto`)."""
    out: dict[str, Value] = {}
    values = _fields(config)
    for field, o in FIELDS.items():
        if (o.shape and config.auto_shape) or (field == "variants" and config.auto):
            continue
        unset = CPU_DEFAULT_SHAPE.get(field, o.default) if o.shape else o.default
        if values[o.flag] != unset:  # a required field (`variants`) always differs
            out[o.flag] = _value(values[o.flag])
    shape_given = any(o.flag in out for o in OPTIONS if o.shape)
    if not config.auto_shape and not config.inputs_path and not shape_given:
        out["--q-len"] = value_text(config.shape.q_len)  # the CPU shape, given: not `auto`
    return {flag: out[flag] for flag in ORDER if flag in out}


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
