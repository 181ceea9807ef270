"""The synthetic inputs `--inputs synthetic:NAME` selects, in one table: what each draws, its
parameters, and the published observation it models.

On standard-normal q/k/v every SageAttention path looks accurate; real models' activations do
not look like that, and the differences are what quantization is sensitive to. The runner draws
these from the run's seed (runner/inputs.py reads the parameters from here); the report's
`inputs` block records the name and the parameters a run drew with, and
docs/running-and-comparing.md lists them.
Plain data: the CLI and `--help` read it without torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PREFIX = "synthetic:"
DEFAULT = "randn"


@dataclass(frozen=True)
class Distribution:
    name: str
    draws: str  # what is generated, in words
    models: str  # the observation it models, and where it was published
    params: dict[str, float | int] = field(default_factory=dict)

    def block(self) -> dict[str, Any]:
        """As the report records it (report/model.InputsBlock)."""
        return {"distribution": self.name, "parameters": dict(self.params),
                "draws": self.draws, "models": self.models}


TABLE: dict[str, Distribution] = {d.name: d for d in (
    Distribution(
        "randn", "q, k, v standard normal", "no observation: the usual benchmark input, on "
        "which every SageAttention path looks accurate"),
    Distribution(
        "kbias", "q, k, v standard normal; each channel of K (per KV head) gets one constant "
        "offset, shared by every token, drawn from N(0, bias_std^2)",
        "K's channel-wise bias shared across tokens, the reason SageAttention smooths K "
        "(SageAttention, Zhang et al. 2024)", {"bias_std": 8.0}),
    Distribution(
        "outliers", "q, k, v standard normal; `channels` channels of Q and another "
        "`channels` of K (disjoint, the same for every head and token) scaled by `scale`",
        "a few activation channels of fixed index with large magnitude (LLM.int8, Dettmers "
        "et al. 2022; SmoothQuant, Xiao et al. 2022): they set each block's int8 scale while "
        "the other channels carry the scores", {"channels": 4, "scale": 10.0}),
    Distribution(
        "sinks", "q, k, v standard normal; every query gets a component of norm `query_bias` "
        "along one direction per KV head, and the first `tokens` keys point along it, so "
        "each of them scores `sink_logit` (after sm_scale) against that component",
        "attention sinks: the first tokens draw most of the attention mass (Efficient "
        "Streaming Language Models with Attention Sinks, Xiao et al. 2023)",
        {"tokens": 4, "query_bias": 2.0, "sink_logit": 8.0}),
    Distribution(
        "heavytail", "q, k, v Student-t with `df` degrees of freedom, scaled to unit variance",
        "heavy-tailed activations: rare large values set the quantization scale of their "
        "block (the outlier studies above)", {"df": 3}),
)}

NAMES = tuple(TABLE)


def parse(text: str) -> str | None:
    """`synthetic:NAME` -> NAME (checked: ValueError names the known ones); a file -> None."""
    if not text.startswith(PREFIX):
        return None
    name = text[len(PREFIX):]
    check(name)
    return name


def check(name: str) -> str:
    if name not in TABLE:
        raise ValueError(f"unknown synthetic inputs {name!r} (known: "
                         f"{', '.join(PREFIX + n for n in NAMES)})")
    return name


__all__ = ["DEFAULT", "NAMES", "PREFIX", "TABLE", "Distribution", "check", "parse"]
