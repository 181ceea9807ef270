"""`sagetui sweep`'s axes: parsed and checked before any runner starts (one line, exit 2).
Kept apart from the command itself so that building the parser imports nothing heavy."""

from __future__ import annotations

import argparse
import copy

from pydantic import ValidationError

from sagetui.cli.errors import UsageError
from sagetui.cli.run_options import SHAPE_OPTIONS, _one_line, config_from_args
from sagetui.core.build_facts import LeftOut
from sagetui.core.config import RunConfig
from sagetui.core.sweep.axes import parse_axis, parse_causal
from sagetui.core.sweep.plan import Axes, plan


def axes_from_args(args: argparse.Namespace) -> Axes:
    def axis(option: str, text: str | None) -> list[int] | None:
        if text is None:
            return None
        try:
            return parse_axis(text)
        except ValueError as exc:
            raise UsageError(f"{option}: {exc}") from None

    try:
        causal = parse_causal(args.causal)
    except ValueError as exc:
        raise UsageError(f"--causal: {exc}") from None
    if args.tokens is not None and args.tokens < 1:
        raise UsageError(f"--tokens: {args.tokens} must be at least 1")
    if args.tokens is not None and args.batch is not None:
        raise UsageError("--tokens sets the batch at every point: give --tokens or --batch")
    return Axes(q_lens=axis("--q-len", args.q_len) or [], kv_lens=axis("--kv-len", args.kv_len),
                head_dims=axis("--head-dim", args.head_dim) or [], causal=causal,
                tokens=args.tokens)


def sweep_config(args: argparse.Namespace, build_failed: dict[str, LeftOut] | None = None
                 ) -> tuple[RunConfig, Axes]:
    """The base RunConfig (validated as `sagetui run` validates one) and every point's shape;
    source variants whose build failed are left out, recorded in `build_failed`."""
    if args.tail_study:
        raise UsageError("--tail-study: a sweep has no tail study (run it with `sagetui run`)")
    axes = axes_from_args(args)
    first = copy.copy(args)  # the run options' checks, at the first point's values
    first.q_len, first.head_dim, first.causal = axes.q_lens[0], axes.head_dims[0], False
    first.kv_len = axes.kv_lens[0] if axes.kv_lens else None
    if axes.tokens is not None:
        first.batch = max(1, axes.tokens // axes.q_lens[0])
    config = config_from_args(first, build_failed=build_failed)
    try:
        plan(config.shape, axes)
    except ValidationError as exc:
        raise UsageError(_one_line(exc, {**SHAPE_OPTIONS, "batch": "--tokens"})) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return config, axes
