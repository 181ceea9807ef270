"""`sagetui node-check`: the same kernel on every GPU, side by side (core/node_check.py holds
the rule that flags a GPU unlike the others)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sagetui.cli.errors import UsageError, stdout_console
from sagetui.cli.node_options import slots_from_args
from sagetui.cli.outputs import Written, check_outputs, say, write_files
from sagetui.cli.run_options import config_from_args
from sagetui.core import events as ev
from sagetui.core import format as fmt
from sagetui.core import node_check
from sagetui.session.node_check import run_node_check


def _mmm(t: dict[str, Any] | None, key: str, fmt: str = "{:.0f}") -> str:
    m = (t or {}).get(key)
    if not m:
        return "-"
    lo, hi = fmt.format(m["min"]), fmt.format(m["max"])
    return lo if lo == hi else f"{lo}-{hi}"


def node_table(rows: list[node_check.GpuResult], title: str) -> Table:
    t = Table(title=title)
    for col in ("runner", "GPU", "UUID", "p50 ms ± CI", "SM MHz", "mem MHz", "power W",
                "temp °C", "throttling", "flag"):
        t.add_column(col, justify="left" if col in ("runner", "GPU", "UUID", "throttling",
                                                      "flag") else "right")
    for r in rows:
        if r.p50_s is None:
            t.add_row(r.runner, r.name or "-", r.uuid or "-", f"failed: {r.error}",
                      "", "", "", "", "", "")
            continue
        tel = r.telemetry or {}
        ci = "" if r.ci_percent is None else f" {fmt.half_width(r.ci_percent)}"
        t.add_row(r.runner, r.name or "-", (r.uuid or "-")[:13],
                  f"{fmt.ms_significant(r.p50_s)}{ci}",
                  _mmm(tel, "sm_clock_mhz"), _mmm(tel, "mem_clock_mhz"),
                  _mmm(tel, "power_w"), _mmm(tel, "temperature_c"),
                  ", ".join(tel.get("throttle_reasons") or []) or (
                      "-" if tel.get("available") else "no telemetry"),
                  "[red]UNLIKE THE OTHERS[/]" if r.flagged else "ok")
    return t


def cmd_node_check(args: argparse.Namespace) -> int:
    """0: every GPU measured and none flagged; 1: a GPU flagged or failed, or --json not
    written where asked."""
    slots = slots_from_args(args)  # before a source variant is built: bad input costs none
    assert slots is not None
    config = config_from_args(args)
    if len(config.variants) != 1:
        raise UsageError("node-check runs one kernel on every GPU: give one --backend or "
                         "--variant")
    check_outputs(args, ("json",))
    err = Console(stderr=True, soft_wrap=True)
    chosen = "the best backend here" if config.auto else config.variants[0].spec
    err.print(f"node-check: {chosen} on {len(slots)} "
              f"runner{'s' * (len(slots) > 1)} ({', '.join(s.label for s in slots)}) at once")

    def progress(e: ev.Event) -> None:
        if args.quiet:
            return
        match e:
            case ev.FromRunner(runner=who, event=ev.RoundDone(round=r)):
                err.print(escape(f"[{who}] round {r + 1} done"))
            case ev.FromRunner(runner=who, event=ev.FaultRaised(fault=f)):
                err.print(escape(f"[{who}] fault: {f.message}"))
            case _:
                pass  # the table after the runs says the rest

    runs = run_node_check(config, slots, on_event=progress)
    rows = [node_check.gpu_result(s.label, rep, why) for s, rep, why in runs]
    floor = args.noise_floor if args.noise_floor is not None else node_check.DEFAULT_FLOOR_PERCENT
    notes = node_check.flag(rows, floor)
    out = stdout_console()
    # an `auto` configuration is resolved by each runner: name what they ran
    ran = next((r.variants[0].spec for _, r, _ in runs if r and r.variants), chosen)
    say(out, node_table(rows, f"sagetui node-check: {ran}, "
                               f"{len(rows)} runner{'s' * (len(rows) > 1)}"))
    for n in notes:
        say(out, escape(n))
    say(out, escape(f"rule: {node_check.FLAG_RULE} (noise floor {floor:g} %)"))
    written = Written()
    if args.json:
        env = node_check.environment([(s.label, rep) for s, rep, _ in runs])
        written = write_files([(args.json, lambda: json.dumps(node_check.to_dict(
            rows, notes, floor, config.model_dump(mode="json"), env), indent=1))], args, err)
        for why in written.failed:
            say(err, f"[red]could not write[/] {escape(why)}")
    return 1 if any(r.flagged or r.p50_s is None for r in rows) or not written.kept_all else 0
