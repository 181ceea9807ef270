"""The functions a capture wraps, and how each one's arguments read: torch's
scaled_dot_product_attention, and SageAttention's public functions where the program imports
sageattention (only those its version has)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SAGE_MODULE = "sageattention"
SAGE_FUNCTIONS = ("sageattn", "sageattn_qk_int8_pv_fp16_triton", "sageattn_qk_int8_pv_fp16_cuda",
                  "sageattn_qk_int8_pv_fp8_cuda", "sageattn_qk_int8_pv_fp8_cuda_sm90",
                  "sageattn_varlen")


@dataclass(frozen=True)
class Target:
    """A captured function: its manifest name, its parameters in order (q, k, v first) with
    their defaults, and which of them hold the scale and the layout."""

    name: str
    params: tuple[str, ...]
    defaults: dict[str, Any] = field(default_factory=dict)
    scale: str = "sm_scale"
    layout: str | None = "tensor_layout"  # the parameter that holds it; None: always `fixed`
    fixed: str = "HND"  # the layout where no argument gives one

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Every argument by its parameter's name, defaults filled in."""
        out = dict(self.defaults)
        out.update(zip(self.params, args, strict=False))
        out.update(kwargs)
        return out

    def layout_of(self, arguments: dict[str, Any]) -> str:
        return arguments.get(self.layout, self.fixed) if self.layout else self.fixed


# a builtin: inspect cannot read its signature (torch >= 2.5 adds enable_gqa)
SDPA = Target("torch.nn.functional.scaled_dot_product_attention",
              ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
               "enable_gqa"),
              {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None,
               "enable_gqa": False},
              scale="scale", layout=None)


def sage_target(name: str, fn: Callable[..., Any]) -> Target:
    """SageAttention's function `name`, read from its own signature (versions differ)."""
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    defaults = {p.name: p.default for p in params if p.default is not p.empty}
    if name == "sageattn_varlen":  # [tokens, heads, head_dim]: NHD, the batch in the tokens
        return Target(f"{SAGE_MODULE}.{name}", tuple(p.name for p in params), defaults,
                      layout=None, fixed="NHD")
    return Target(f"{SAGE_MODULE}.{name}", tuple(p.name for p in params), defaults)
