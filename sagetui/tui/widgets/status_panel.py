"""Run status: round r of R, iteration, ETA, backend, GPU, the latest round's telemetry and the
GPU's state (persistence, ECC, MIG, application clocks, other processes) where recorded."""

from __future__ import annotations

import time
from typing import Any

from rich.cells import cell_len
from rich.text import Text

from sagetui.core.format import duration, min_mean_max, percent
from sagetui.core.run import late
from sagetui.tui.source import Source
from sagetui.tui.view_context import ViewContext
from sagetui.tui.widgets.steady_static import SteadyStatic

MARKS = {"running": "●", "stopping": "●", "complete": "✓", "cancelled": "■", "partial": "■",
         "failed": "✗",
         "idle": "○", "saved": "▣"}


def state_line(data: Source, ctx: ViewContext) -> Text:
    m, c = data.model, data.clock
    p = m.progress
    t = Text()
    if data.live:
        state = "stopping" if ctx.running and c.stopping else (
            "running" if ctx.running else data.status)
        mark = MARKS.get(state, "·")
        t.append(f"{mark} {state.upper()}", style="bold")
        if not ctx.running and data.status == "idle":
            t.append("  press r to run")
            return t
        planned = c.rounds_planned or "?"
        done = data.points_done() or f"{data.rounds_done}/{planned} rounds"
        if not ctx.running:
            t.append(f"  {done} kept" if data.status != "complete" else f"  {done}")
        elif m.measured:  # the last round is in: the verdicts are final
            t.append(f"  {data.rounds_done}/{planned} rounds measured · verdicts final")
            what = late.describe(m.computing)
            t.append(f" · computing {what}" if what else f" · {p.stage}")
        elif p.round >= 0:
            # adaptive: the plan is the target width; the round limit is only a bound
            t.append(f"  round {p.round + 1}/{planned}" if c.until_ci_percent is None else
                     f"  round {p.round + 1} · until every 95 % CI < {c.until_ci_percent:g} % "
                     f"(at most {planned} rounds)")
            per_round = c.iterations_per_round * max(1, p.variants_in_round)
            t.append(f" · iteration {p.iteration_in_round}/{per_round}")
            if p.current_variant:
                t.append(f" ({p.current_variant})")
        elif p.point is not None:  # a sweep's point, a workload's call in its turn
            index, total, turn, call = p.point
            t.append(f"  {'call' if call else 'point'} {index + 1}/{total}")
            if turn is not None:
                t.append(f" · round {turn + 1}/{planned}")
        if ctx.running and not m.measured:
            if p.stage != "measuring":
                t.append(f" · {p.stage}")
            eta = c.eta_s(p)
            bound = "at most " if c.until_ci_percent is not None else ""  # worst case only
            t.append(f" · ETA {bound}{duration(eta)}" if eta is not None else " · ETA -")
        if c.started is not None:
            end = c.finished if c.finished is not None and not ctx.running else time.monotonic()
            t.append(f" · elapsed {duration(end - c.started)}")
        if not ctx.running and m.status_detail:  # why it is not complete, in its own words
            t.append(f" · {'; '.join(m.status_detail)}", style=f"bold {ctx.error_colour}")
        return t
    t.append(f"{MARKS.get(data.status, '·')} {data.label}", style="bold")
    n = len(data.variants)
    t.append(f" · {n} variants" if n > 1 else f" · {data.kind()}")
    if data.status and data.status != "saved":
        t.append(f" · {data.status}")
    if data.rounds_done:
        t.append(f" · {data.rounds_done} rounds")
        if data.iterations_per_round:
            t.append(f" x {data.iterations_per_round} iter")
    elif data.iterations_per_round:
        t.append(f" · {data.iterations_per_round} iter")
    if data.warmup is not None:
        t.append(f" + {data.warmup} warm-up")
    if m.status_detail:
        t.append(f" · {'; '.join(m.status_detail)}", style=f"bold {ctx.error_colour}")
    return t


def machine_line(data: Source) -> Text:
    backends = sorted({b for v in data.variants.values() if (b := v.backend or v.kernel)})
    parts = []
    report = data.report
    if backends:
        parts.append(f"backend {', '.join(backends)}")
    elif report is not None and report.scheduler and report.scheduler.kernel:
        parts.append(f"kernel {report.scheduler.kernel}")
    elif data.metadata.get("attention"):
        parts.append(f"attention {data.metadata['attention']}")
    gpu_name = data.gpu.get("name")
    gpu = gpu_name or (f"{data.device} (no GPU)" if data.device == "cpu" else data.device)
    parts.append(f"GPU {gpu}" if gpu_name else f"device {gpu or 'not recorded'}")
    if data.torch:
        parts.append(f"torch {data.torch}")
    if data.shape:
        parts.append(f"shape {data.shape}")
    if report is not None and report.source_commit:
        parts.append(f"commit {report.source_commit[:8]}")
    return Text(" · ".join(parts), style="dim")


def latest_telemetry(data: Source) -> tuple[int, dict[str, Any]] | None:
    per_round = data.gpu_telemetry()
    if not per_round:
        return None
    r = max(per_round)
    return r, per_round[r]


def telemetry_line(data: Source, ctx: ViewContext) -> Text:
    latest = latest_telemetry(data)
    if latest is None:
        if data.live and data.model.progress.point is not None and data.points_done() is None:
            # a sweep's or replay's rounds are its points': their telemetry is in each one's
            return Text("telemetry: each point's own, in its report", style="dim")
        if data.live and not data.rounds_done and data.points_done() is None:
            return Text("telemetry: after the first round", style="dim")
        return Text("telemetry: not recorded in this report", style="dim")
    r, tel = latest
    if not tel.get("available"):
        return Text(f"telemetry unavailable: {tel.get('reason') or 'unknown reason'}",
                    style="dim")
    parts = [x for x in (min_mean_max(tel.get("sm_clock_mhz"), "MHz SM"),
                         min_mean_max(tel.get("mem_clock_mhz"), "MHz mem"),
                         min_mean_max(tel.get("temperature_c"), "°C"),
                         min_mean_max(tel.get("power_w"), "W")) if x]
    t = Text(f"round {r + 1}: " + " · ".join(parts or ["no metric reported"]))
    reasons = tel.get("throttle_reasons") or []
    if reasons:
        t.append(f" · throttled: {', '.join(reasons)}", style=f"bold {ctx.error_colour}")
    else:
        t.append(" · no throttling", style="dim")
    return t


def _on_off(name: str, value: object) -> str | None:
    return None if value is None else f"{name} {'on' if value else 'off'}"


def environment_line(data: Source, ctx: ViewContext) -> Text | None:
    """The GPU's state as the runner found it (persistence, ECC, MIG, application clocks, other
    processes), and where the latest round's SM clock stood against the application clock.
    None for a CPU run or a report that did not record it."""
    state = data.gpu.get("state")
    st = state if isinstance(state, dict) else None
    if not st:
        return None
    warn = f"bold {ctx.error_colour}"
    t = Text("GPU state: ", style="dim")
    parts: list[tuple[str, str]] = [(x, "") for x in (
        _on_off("persistence", st.get("persistence_mode")), _on_off("ECC", st.get("ecc")))
        if x]
    if st.get("mig") is not None:
        parts.append(("MIG on" if st["mig"] else "MIG off", warn if st["mig"] else ""))
    clocks = st.get("application_clocks") or {}
    sm, mem = clocks.get("sm_mhz"), clocks.get("mem_mhz")
    if sm is not None:
        default = (clocks.get("default_sm_mhz"), clocks.get("default_mem_mhz"))
        same = default == (sm, mem)
        parts.append((f"app clocks SM {sm} / mem {mem if mem is not None else '?'} MHz"
                      + (" (default)" if same else f" (default {default[0]} / {default[1]})"),
                      "" if same or default[0] is None else warn))
        latest = latest_telemetry(data)
        mean = ((latest[1].get("sm_clock_mhz") or {}).get("mean") if latest else None)
        if latest and mean and sm:
            parts.append((f"round {latest[0] + 1} SM at {percent(100 * mean / sm, 0)} of it",
                          ""))
    others = st.get("other_processes")
    if others is not None:
        n, held = others.get("count", 0), others.get("memory_bytes")
        parts.append(("no other process on the GPU", "") if not n else (
            f"{n} other process{'es' * (n != 1)} on the GPU"
            + (f" ({held / 2**30:.1f} GiB)" if held is not None else ""), warn))
    if not parts:
        t.append("NVML did not say")
    for i, (text, style) in enumerate(parts):
        t.append(" · " if i else "")
        t.append(text, style=style)
    return t


SEPARATOR = " · "


def folded(line: Text, width: int) -> list[Text]:
    """`line` as the lines it takes at `width`: broken after a part (the text between two " · ")
    where the next would not fit, so that a number is never cut; a part wider than `width`
    alone is cut at its end, with an ellipsis."""
    plain = line.plain
    if width <= 0 or cell_len(plain) <= width:
        return [line]
    parts, start = [], 0
    while (sep := plain.find(SEPARATOR, start)) >= 0:
        parts.append((start, sep))
        start = sep + len(SEPARATOR)
    parts.append((start, len(plain)))
    lines, first = [], parts[0][0]
    for (a, _), (_, b) in zip(parts, parts[1:], strict=False):
        if cell_len(plain[first:b]) > width:
            lines.append(line[first:a - len(SEPARATOR)])
            first = a
    lines.append(line[first:])
    return lines


def first_parts(line: Text, width: int) -> Text:
    """`line`'s first parts that fit `width` whole, then " …" where others do not: one line,
    no number cut."""
    if width <= 0 or cell_len(line.plain) <= width:
        return line
    return folded(line, width - 2)[0] + Text(" …")


class StatusPanel(SteadyStatic):
    def sync(self, data: Source, ctx: ViewContext) -> None:
        width = self.size.width - self.styles.gutter.width
        # what was run, and on what, whole; the telemetry and the GPU's state a line each (at
        # 80 x 24 an H200 report's took ten lines): their parts that fit
        lines = [*folded(state_line(data, ctx), width), *folded(machine_line(data), width),
                 first_parts(telemetry_line(data, ctx), width)]
        env = environment_line(data, ctx)
        text = Text("\n").join(lines + ([first_parts(env, width)] if env is not None else []))
        text.no_wrap, text.overflow = True, "ellipsis"  # a part wider than the line: cut
        # synced on every tick and tab switch; an update lays out the whole screen, which only
        # a change in the number of lines needs (the panel is as high as its lines)
        shown = self._shown
        self.show(text, layout=shown is None or shown.plain.count("\n") != text.plain.count("\n"))
