"""core/run_argv.py, the inverse of the CLI's parsing: a RunConfig written as `sagetui run`'s
options gives, through the real parser and config_from_args, the same RunConfig again; and the
command line shown for it is what a shell hands `sagetui run`."""

from __future__ import annotations

import shlex

import pytest

from sagetui.cli.main import run_config
from sagetui.core.config import RunConfig, Shape, VariantSpec, default_config
from sagetui.core.run_argv import command_line, config_argv, variant_text


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
