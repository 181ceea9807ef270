"""The run configuration's fields as `sagetui run`'s options, in one table: each field's option,
default, help and run-editor label.

config.py's RunConfig and Shape take their defaults and descriptions from here (and carry the
option in their fields' metadata); cli/main.py builds every command's run options from it;
core/run_argv.py writes a configuration back as these options; the run editor's form shows
those with a label. A new field is added here, or to NOT_OPTIONS with the reason it is none
(tests/test_run_fields.py fails until it is). Plain data that imports nothing: `sagetui --help`
builds its parser from it without pydantic (config.py costs 0.15 s there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

REQUIRED: Any = ...  # a field without a default (pydantic's `...`)

# `sagetui run --help`'s groups, in its order
WHAT, SHAPE, MEASURE = "what to run", "shape", "measurement"

# The reference reports' workload: one attention call of a video diffusion model.
REFERENCE_SHAPE = dict(batch=1, heads=56, q_len=37810, head_dim=128, dtype="bf16", layout="NHD")
# The embedded default on a machine without a GPU: a round of 10 calls takes about a second on
# two cores with the reference backend.
CPU_DEFAULT_SHAPE = dict(batch=1, heads=6, q_len=1024, head_dim=128, dtype="bf16", layout="NHD")

# The console's own setting besides the run's (`sagetui --refresh`): its plot redraws and panel
# syncs per second, at most, and the range it is held to (one outside moves to the nearer end).
# tui/settings.ConsoleSettings holds it; cli/main.py builds the option from here.
CONSOLE_REFRESH_HZ = 2.0
CONSOLE_REFRESH_RANGE_HZ = (0.1, 30.0)


def value_text(value: float | int | str) -> str:
    """A value as an option's argument: 120.0 as 120, 0.1 as 0.1 (float() reads it back)."""
    if isinstance(value, float) and value == int(value):
        return f"{value:g}"
    return str(value)


class Option(NamedTuple):
    """One option of `sagetui run` and the field it sets."""

    flag: str
    field: str | None  # the RunConfig field (a Shape one with `shape`); None: --backend
    group: str
    help: str | None = None  # `{default}` is replaced by the default
    default: Any = None  # the field's; an option of the shape is unset until given
    parse: Callable[[str], Any] = str  # argparse's `type`
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    kind: str = "value"  # "flag": given or not (store_true); "list": repeatable (append)
    shape: bool = False  # a field of Shape, not of RunConfig
    label: str | None = None  # what the run editor's form calls it; None: not on the form

    @property
    def dest(self) -> str:
        """argparse's attribute for it."""
        return self.flag[2:].replace("-", "_")

    @property
    def text(self) -> str | None:
        """The help, its default written in."""
        if self.help is None:
            return None
        return self.help.format(default=value_text(self.default))


def lengths(text: str) -> tuple[int, ...]:
    """`--seqlens 1024,2048,512`: each packed sequence's length, a positive integer."""
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t.isdigit() or int(t) < 1 for t in items):
        raise ValueError(f"{text!r}: a comma list of positive lengths, e.g. 1024,2048,512")
    return tuple(int(t) for t in items)


lengths.__name__ = "lengths"  # argparse's "invalid lengths value"


def _shape(flag: str, field: str, help: str | None = None, default: Any = None,
           **kw: Any) -> Option:
    return Option(flag, field, SHAPE, help, default, shape=True,
                  label=field.replace("_", " "), **kw)


# In `--help`'s order, which is also the order a command line is written in.
OPTIONS: tuple[Option, ...] = (
    Option("--backend", None, WHAT, "backend to run (repeatable): reference, sdpa, flash-attn, "
           "sage-triton, sage2-sm80, sage2-sm89, sage2-sm90, sage2-varlen, sage2-auto. "
           "Default: the best one available here", metavar="NAME", kind="list"),
    Option("--variant", "variants", WHAT, "a named variant (repeatable); SPEC is "
           "backend[opt=value,...], backend@/path/to/_qattn_sm89.so (another build) or "
           "backend@src:PATH (a SageAttention tree, built first and cached), e.g. "
           "fast=sage2-sm89[pv_accum=fp32+fp16], sage2-sm80[pv_accum=fp16], sdpa[backend=flash], "
           "mine=sage2-sm90@src:~/SageAttention (options: docs/running-and-comparing.md)",
           REQUIRED, metavar="NAME=SPEC", kind="list"),
    Option("--baseline", "baseline", WHAT, "the variant others are compared with "
           "(default: the first)", metavar="NAME"),
    _shape("--batch", "batch", "batch size (default 1)", 1, parse=int),
    _shape("--heads", "heads", "query heads", REQUIRED, parse=int),
    _shape("--kv-heads", "kv_heads", "key/value heads (GQA; default: --heads)", parse=int),
    _shape("--q-len", "q_len", "query tokens per sequence", REQUIRED, parse=int),
    _shape("--kv-len", "kv_len", "default: --q-len", parse=int),
    _shape("--seqlens", "seqlens", "packed sequences of these lengths, as sageattn_varlen "
           "takes them (NHD [tokens, heads, head_dim], --q-len their sum; backends "
           "reference, sage2-varlen)", parse=lengths, metavar="L1,L2,..."),
    _shape("--kv-seqlens", "kv_seqlens", "the sequences' key/value lengths (default: "
           "--seqlens; --kv-len their sum)", parse=lengths, metavar="L1,L2,..."),
    _shape("--head-dim", "head_dim", "at most 128; others pad to 64 or 128", REQUIRED,
           parse=int),
    _shape("--causal", "causal", "causal attention (each query sees the keys up to its own)",
           False, kind="flag"),
    _shape("--dtype", "dtype", "q/k/v element type: fp16 or bf16 (default bf16)", "bf16",
           choices=("fp16", "bf16")),
    _shape("--layout", "layout", "tensor layout: NHD [batch, tokens, heads, head_dim] or HND "
           "[batch, heads, tokens, head_dim] (default NHD)", "NHD", choices=("NHD", "HND")),
    Option("--inputs", "inputs_path", SHAPE, "real q/k/v: .safetensors, .npz, .npy "
           "(stacked [3,...]) or .pt (loaded with weights_only); or synthetic:NAME, drawn "
           "from the seed: kbias, outliers, sinks, heavytail (docs/running-and-comparing.md; "
           "default: randn)",
           metavar="FILE|synthetic:NAME", label="inputs file"),
    Option("--metadata", "metadata", SHAPE, "workload facts carried into the report "
           "(repeatable)", {}, metavar="KEY=VALUE", kind="list"),
    Option("--seed", "seed", MEASURE, "seed of the synthetic q/k/v ({default})", 0, int),
    Option("--warmup", "warmup", MEASURE, "uncounted calls per variant ({default})", 3, int,
           label="warm-up"),
    Option("--rounds", "rounds", MEASURE, "rounds ({default})", 5, int, label="rounds"),
    Option("--iterations", "iterations", MEASURE, "timed calls per variant per round "
           "({default})", 10, int, label="iterations"),
    Option("--cold", "cold", MEASURE, "flush the L2 before each call", False, kind="flag",
           label="cold (flush L2)"),
    Option("--tail-study", "tail_study", MEASURE, "time the main loop across q/kv tile "
           "boundaries after the rounds", False, kind="flag", label="tail study"),
    Option("--tail-iterations", "tail_iterations", MEASURE, "timed calls of the baseline at "
           "each shape of --tail-study ({default})", 5, int),
    Option("--device", "device", MEASURE, "auto, cpu, cuda, cuda:N", "auto", label="device"),
    Option("--threshold", "threshold_percent", MEASURE, "SAME when the speedup's interval lies "
           "inside +-PERCENT (default: max(1, 2 x noise floor))", None, float, "PERCENT"),
    Option("--noise-floor", "noise_floor_percent", MEASURE, "round-to-round noise of an A/A "
           "run (default: what `sagetui calibrate` stored for this host, GPU, backend, build "
           "and shape, if anything); over 2.5 is refused: too noisy to judge", None, float,
           "PERCENT"),
    Option("--until-ci", "until_ci_percent", MEASURE, "run rounds until every verdict's "
           "interval is narrower than PERCENT (at least 2, at most --max-rounds)", None, float,
           "PERCENT"),
    Option("--max-rounds", "max_rounds", MEASURE, "the limit for --until-ci (default 50)", None,
           int),
    Option("--affinity", "affinity", MEASURE, "pin the runner's timed calls to these CPUs "
           "(2, 0-3, 0,2-3; default: not pinned): a call's host time depends on its CPU, and "
           "runs on the same CPUs compare (docs/running-and-comparing.md)", None,
           metavar="CPUS"),
    Option("--watchdog", "watchdog_s", MEASURE, "kill a runner that says nothing for this long "
           "({default})", 120.0, float, "SECONDS"),
)

# each field's option (Shape's and RunConfig's names do not overlap)
FIELDS: dict[str, Option] = {o.field: o for o in OPTIONS if o.field}

# The fields that are no option, and why.
NOT_OPTIONS: dict[str, str] = {
    "shape": "its fields are options (those with `shape`)",
    "auto": "set when neither --backend nor --variant is given: a GPU node picks the backend",
    "auto_shape": "set when no shape option nor an inputs file is given: the machine picks the "
                  "shape",
    "distribution": "set by --inputs synthetic:NAME (core/distributions.py)",
}
