"""core/run_argv.py, the inverse of the CLI's parsing: a RunConfig written as `sagetui run`'s
options gives, through the real parser and config_from_args, the same RunConfig again; and the
command line shown for it is what a shell hands `sagetui run`."""

from __future__ import annotations

import random
import shlex
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import pytest
from annotated_types import Ge, Gt, Le
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from sagetui.cli.main import run_config
from sagetui.core.config import RunConfig, Shape, VariantSpec, default_config
from sagetui.core.run_argv import command_line, config_argv, variant_text
from sagetui.core.run_fields import FIELDS


def two_variants() -> RunConfig:
    return RunConfig(
        shape=Shape(batch=2, heads=4, kv_heads=2, q_len=300, kv_len=500, head_dim=64,
                    dtype="fp16", layout="HND", causal=True),
        variants=[VariantSpec(name="ref", backend="reference"),
                  VariantSpec.parse("slow=reference[slowdown=1.5]")],
        baseline="slow", seed=7, warmup=0, rounds=2, iterations=3, cold=True, tail_study=True,
        device="cpu", metadata={"model": "wan2.1", "block": 3, "text": "12"},
        threshold_percent=2.5, noise_floor_percent=0.4, until_ci_percent=1.5, max_rounds=9,
        watchdog_s=30.5)


@pytest.mark.parametrize("config", [
    default_config(),
    run_config(["--q-len", "1024"]),  # the CPU shape, given: not `auto_shape`
    run_config(["--variant", "reference"]),  # a backend, the shape left to the machine
    run_config(["--rounds", "7", "--iterations", "4"]),
    two_variants(),
], ids=["default", "cpu-shape-given", "backend-only", "rounds", "two-variants"])
def test_config_to_argv_and_back_is_the_same_config(config: RunConfig) -> None:
    argv = config_argv(config)
    assert run_config(argv) == config
    assert shlex.split(command_line(argv)) == ["sagetui", "run", *argv]


def test_the_default_needs_no_option_and_a_full_config_names_each() -> None:
    assert config_argv(default_config()) == []
    line = command_line(config_argv(two_variants()))
    for part in ("--variant ref=reference", "--variant 'slow=reference[slowdown=1.5]'",
                 "--baseline slow", "--kv-heads 2", "--q-len 300", "--kv-len 500",
                 "--dtype fp16", "--layout HND", "--causal", "--rounds 2", "--cold",
                 "--tail-study", "--device cpu", "--metadata 'text=\"12\"'", "--watchdog 30.5"):
        assert part in line, (part, line)


def test_a_variant_named_after_its_backend_is_written_bare() -> None:
    assert variant_text(VariantSpec(name="reference", backend="reference")) == "reference"
    spec = VariantSpec(name="sage2-sm89", backend="sage2-sm89", path="/x/_qattn_sm89.so")
    assert variant_text(spec) == "sage2-sm89=sage2-sm89@/x/_qattn_sm89.so"


# -- every field, one at a time and together -------------------------------------------------
# Values the field's type and bounds do not give: a field not here gets its values from its
# annotation (numbers, bools, choices), and one of another type fails test_every_option_...
SLOW = VariantSpec.parse("slow=reference[slowdown=1.5]")
VALUES: dict[str, list[Any]] = {
    "variants": [[VariantSpec(name="reference", backend="reference"), SLOW], [SLOW],
                 [VariantSpec.parse("r2=reference@" + __file__)]],
    "baseline": ["slow", "reference"],
    "device": ["cpu", "cuda:1"],
    "inputs_path": [str(Path(__file__).resolve())],  # the CLI checks only that it is a file
    "metadata": [{"model": "wan2.1", "block": 3, "text": "12", "ratio": 0.5, "on": True,
                  "layers": [1, None], "empty": ""}, {"k": "v=w"}],
    "noise_floor_percent": [0.0, 0.4, 2.5],  # over 2.5 the CLI refuses it (too noisy)
    # packed sequences sum to q_len (the explicit base's 96, the CPU shape's 1024)
    "seqlens": [(32, 64), (1000, 24), (96,)],
    "kv_seqlens": [(64, 32), (24, 1000)],
    "affinity": ["0", "0-1"],  # canonical CPU lists of CPUs every machine here has
}
PACKED = ("seqlens", "kv_seqlens")  # NHD, batch 1, the lengths' sums: not with every field


def _values(field: str, info: FieldInfo) -> list[Any]:
    """Values of the field other than its default, from its type and bounds."""
    if field in VALUES:
        return VALUES[field]
    kind = info.annotation
    if get_origin(kind) in (Union, types.UnionType):  # `X | None`
        kind = next(a for a in get_args(kind) if a is not type(None))
    if get_origin(kind) is Literal:
        return [v for v in get_args(kind) if v != info.default]
    if kind is bool:
        return [not info.default]
    if kind not in (int, float):
        raise LookupError(f"no values for {field} ({kind}): add some to VALUES")
    lo = next((m.ge for m in info.metadata if isinstance(m, Ge)), None)
    above = next((m.gt for m in info.metadata if isinstance(m, Gt)), None)
    hi = next((m.le for m in info.metadata if isinstance(m, Le)), 10**6)
    if kind is int:
        out = [lo or 0, (lo or 0) + 1, (lo or 0) + 7, hi]
    else:
        out = [above + 0.001 if above is not None else lo or 0.0, 2.5, 33.3, float(hi), 1e-4]
    return [v for v in dict.fromkeys(out) if v != info.default]


def _fields() -> dict[str, tuple[bool, list[Any]]]:
    """Each option's field: whether it is the shape's, and its values."""
    models = {**RunConfig.model_fields, **Shape.model_fields}
    return {field: (o.shape, _values(field, models[field])) for field, o in FIELDS.items()}


def _with(base: RunConfig, changes: dict[str, Any]) -> RunConfig:
    """`base` with these fields changed, validated: a changed shape is given (not the
    machine's), as is the shape of input files; changed variants are named (not `auto`)."""
    shape_fields = {f for f, o in FIELDS.items() if o.shape}
    data = base.model_dump()
    data["shape"].update({f: v for f, v in changes.items() if f in shape_fields})
    data.update({f: v for f, v in changes.items() if f not in shape_fields})
    if (shape_fields | {"inputs_path"}) & changes.keys():
        data["auto_shape"] = False
    if "variants" in changes:
        data["auto"] = False
    return RunConfig.model_validate(data)


BASES = {"explicit": lambda: run_config(["--variant", "reference", "--variant", "slow=reference",
                                          "--heads", "4", "--q-len", "96", "--head-dim", "32"]),
         "default": default_config}


def _round_trip(config: RunConfig) -> None:
    argv = config_argv(config)
    assert run_config(argv) == config, argv


def test_every_option_has_values_other_than_its_default() -> None:
    for field, (_, values) in _fields().items():
        assert values, field


@pytest.mark.parametrize("base", BASES)
def test_each_field_changed_alone_comes_back_through_the_cli(base: str) -> None:
    """Every option's field at each of its other values, one at a time: config -> argv ->
    the CLI's own parser -> the same config."""
    tried = 0
    for field, (_, values) in _fields().items():
        for value in values:
            try:
                config = _with(BASES[base](), {field: value})
            except ValidationError:  # e.g. a baseline the default's variants do not have
                continue
            _round_trip(config)
            tried += 1
    assert tried >= 2 * len(FIELDS)


def test_every_field_changed_at_once_comes_back_through_the_cli() -> None:
    changes = {field: values[0] for field, (_, values) in _fields().items()
               if field not in PACKED}
    changes.update(heads=8, kv_heads=2, baseline="slow")  # kv heads divide the heads
    config = _with(BASES["explicit"](), changes)
    assert all(getattr(config.shape if FIELDS[f].shape else config, f) != FIELDS[f].default
               for f in changes if f not in ("variants",))
    _round_trip(config)


def test_packed_sequences_come_back_through_the_cli() -> None:
    """--seqlens and --kv-seqlens with every other field they go with changed."""
    changes = {field: values[0] for field, (_, values) in _fields().items()
               if field not in ("layout", "batch", "causal", "q_len", "kv_len", "tail_study")}
    changes.update(heads=8, kv_heads=2, baseline="slow", seqlens=(32, 64), kv_seqlens=(64, 40),
                   q_len=96, kv_len=104)
    config = _with(BASES["explicit"](), changes)
    assert config.shape.seqlens == (32, 64) and config.shape.kv_seqlens == (64, 40)
    assert "--seqlens 32,64 --kv-seqlens 64,40" in command_line(config_argv(config))
    _round_trip(config)


def test_random_configurations_come_back_through_the_cli() -> None:
    """Property-style: many configurations, each a random part of the fields changed."""
    fields = {f: v for f, v in _fields().items() if f not in PACKED}  # their own test
    rng, tried = random.Random(23), 0
    for _ in range(300):
        chosen = rng.sample(sorted(fields), rng.randint(1, len(fields)))
        changes = {f: rng.choice(fields[f][1]) for f in chosen}
        try:
            config = _with(BASES[rng.choice(sorted(BASES))](), changes)
        except ValidationError:  # kv heads that do not divide the heads, a missing baseline
            continue
        _round_trip(config)
        tried += 1
    assert tried > 100
