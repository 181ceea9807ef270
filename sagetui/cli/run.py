"""`sagetui run` and `sagetui calibrate`: headless runs with a progress display."""

from __future__ import annotations

import argparse
import signal
import threading
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from sagetui.core.config import RunConfig
from sagetui.core.export import to_csv, to_markdown
from sagetui.core.io import atomic_write_text, save_report
from sagetui.core.report import Report
from sagetui.session.session import Session, SessionEvent

from .errors import stdout_console
from .options import check_outputs, config_from_args, default_report_path, recovery_file


class Progress:
    """One line per round and per fault on stderr; quiet with --quiet."""

    def __init__(self, console: Console, quiet: bool) -> None:
        self.c = console
        self.quiet = quiet
        self.total_rounds = 0
        self.t0 = time.monotonic()

    def __call__(self, e: SessionEvent) -> None:
        d = e.data
        if e.kind == "fault":
            self.c.print(f"[red]fault[/]: {d.get('message')}"
                         + (f" (variant {d.get('variant')}, phase {d.get('phase')})"
                            if d.get("variant") else ""))
            for line in (d.get("stderr_tail") or [])[-5:]:
                self.c.print(f"    [dim]{line}[/]", markup=False, highlight=False)
        if self.quiet:
            return
        if e.kind == "hello":
            self.c.print(f"runner up: torch {d.get('torch')} on {d.get('device')}")
        elif e.kind == "variant":
            state = "loaded" if d["status"] == "ok" else f"[red]failed[/]: {d.get('error')}"
            self.c.print(f"variant {d['name']} ({d['backend']}): {state}")
        elif e.kind == "ready":
            gpu = (d.get("gpu") or {}).get("name") or d.get("device")
            self.c.print(f"inputs ready on {gpu} (sha256 {d['input_sha256'][:12]})")
        elif e.kind == "round" and d["phase"] == "done":
            line = f"round {d['round'] + 1} done ({time.monotonic() - self.t0:.1f} s)"
            for name, v in d.get("verdicts", {}).items():
                line += f"  {name}: {v['state']}"
                if v.get("ci_low_percent") is not None:
                    line += f" [{v['ci_low_percent']:+.2f}, {v['ci_high_percent']:+.2f}] %"
            self.c.print(line)
        elif e.kind == "block" and not d.get("cancelled"):
            pass
        elif e.kind == "log":
            self.c.print(f"[dim]{d.get('message')}[/]")


def summary_table(report: Report) -> Table:
    t = Table(title=f"sagetui: {report.status}, {report.rounds} rounds")
    for col in ("variant", "p50 ms", "p90 ms", "speedup %", "verdict", "95% CI %", "drift %/rnd",
                "byte-exact"):
        t.add_column(col, justify="right" if "%" in col or "ms" in col else "left")
    for v in report.variants or []:
        tm = v.timing
        vd = v.verdict
        t.add_row(
            v.name + ("" if v.status in (None, "ok") else f" ({v.status})"),
            f"{tm.p50_s * 1e3:.3f}" if tm else "-", f"{tm.p90_s * 1e3:.3f}" if tm else "-",
            "-" if v.speedup_vs_baseline_percent is None
            else f"{v.speedup_vs_baseline_percent:+.3f}",
            vd.state if vd else ("baseline" if v.name == report.baseline else "-"),
            f"[{vd.ci_low_percent:+.2f}, {vd.ci_high_percent:+.2f}]"
            if vd and vd.ci_low_percent is not None else "-",
            f"{v.drift.slope_percent_per_round:+.2f}{' !' if v.drift.flagged else ''}"
            if v.drift and v.drift.slope_percent_per_round is not None else "-",
            "-" if v.byte_exact is None else str(v.byte_exact))
    return t


def run_session(config: RunConfig, args: argparse.Namespace, console: Console) -> Report:
    recovery = recovery_file(args)
    session = Session(config, on_event=Progress(console, args.quiet), recovery_path=recovery)
    result: dict[str, Any] = {}

    def work() -> None:
        result["report"] = session.run()

    worker = threading.Thread(target=work, name="sagetui-session")
    stops = {"n": 0}

    def on_signal(signum: int, _frame: Any) -> None:
        stops["n"] += 1
        console.print(f"[yellow]{signal.Signals(signum).name}: stopping; what was measured "
                      f"is kept[/]")
        session.cancel()
        if stops["n"] > 1:  # a second interrupt: stop waiting for the runner
            if session.client:
                session.client.kill()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    worker.start()
    while worker.is_alive():
        worker.join(timeout=0.2)
    console.print(f"[dim]recovery file: {recovery}[/]")
    return result["report"]


def write_outputs(report: Report, args: argparse.Namespace, console: Console) -> None:
    json_path = args.json or default_report_path()
    save_report(report, json_path, overwrite=True)
    console.print(f"wrote {json_path}")
    if args.csv:
        atomic_write_text(args.csv, to_csv(report), overwrite=True)
        console.print(f"wrote {args.csv}")
    if args.markdown:
        atomic_write_text(args.markdown, to_markdown(report), overwrite=True)
        console.print(f"wrote {args.markdown}")


def cmd_run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    check_outputs(args)
    err = Console(stderr=True)
    report = run_session(config, args, err)
    stdout_console().print(summary_table(report))
    try:
        write_outputs(report, args, err)
    except OSError as exc:
        err.print(f"[red]could not write the report[/]: {exc}; it is kept in the recovery file")
        return 1
    return 0 if report.status == "complete" else 1


def cmd_calibrate(args: argparse.Namespace) -> int:
    """The baseline against itself: the noise floor the SAME threshold is built from."""
    from sagetui.core import verdict as vd
    from sagetui.core.config import VariantSpec

    config = config_from_args(args)
    check_outputs(args)
    err = Console(stderr=True)
    if config.auto:  # resolve the backend first, so that both copies are the same one
        from sagetui.core.config import resolve_auto
        from sagetui.session.probe import probe

        info = probe()
        config = resolve_auto(config, info["device"], info["backends"])
    base = next(v for v in config.variants if v.name == config.baseline_name)
    twin = VariantSpec(name=f"{base.name}-again", backend=base.backend, path=base.path,
                       options=dict(base.options))
    config = config.model_copy(update={"variants": [base, twin], "baseline": base.name,
                                       "rounds": max(config.rounds, 5)})
    report = run_session(config, args, err)
    a, b = (report.samples or {}).get(base.name), (report.samples or {}).get(twin.name)
    if not a or not b:
        err.print("[red]calibration did not complete[/]")
        return 1
    import numpy as np

    ma = [float(np.median(r)) for r in a["total"]]
    mb = [float(np.median(r)) for r in b["total"]]
    noise = vd.noise_floor_percent(ma, mb)
    thr = vd.default_threshold_percent(noise)
    stdout_console().print(summary_table(report))
    stdout_console().print(f"noise floor: {noise:.3f} % (round-to-round, paired); SAME threshold "
                    f"from it: {thr:.3f} %. Use it with --threshold {thr:.2f}")
    write_outputs(report, args, err)
    return 0


