"""The sweep's axis options on the parser: kept apart from sweep_options.py (which parses
them into a RunConfig with pydantic and numpy), so that building the parser for `sagetui
--help` imports nothing heavy."""

from __future__ import annotations

import argparse

# the fields of the shape whose options the axes replace (the first: where they go in --help)
AXES = ("q_len", "kv_len", "head_dim", "causal")


def add_axes(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--q-len", metavar="LENS", default="1k",
                   help="LO..HI (doubling: 1k..32k) or a comma list; 1k = 1024 (default 1k)")
    g.add_argument("--kv-len", metavar="LENS", help="the same forms (default: each q_len)")
    g.add_argument("--head-dim", metavar="DIMS", default="128", help="comma list (128)")
    g.add_argument("--causal", default="off", metavar="off|on|both",
                   help="causal mask: off (default), on, or both")
    g.add_argument("--tokens", type=int, metavar="N",
                   help="keep batch x q_len = N at every point (batch = N / q_len)")
