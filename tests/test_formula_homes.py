"""One home per formula (docs/architecture.md, "One place per derived figure"): a median and a
percentile are core/statistics/summary.py's, a Student t quantile is taken in
core/statistics/intervals.py only, a log ratio in percent and a percent change are
core/derived.py's, a latency or a percent written as text and the noise floor's words are
core/format.py's, and so is the round step of an axis. An AST walk of sagetui holds each."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from sagetui.core import format as fmt
from sagetui.core.sweep.export import nice_ticks

from .conftest import ROOT

# core/host_time.py sits in core's bottom row and may import nothing of core: its median of a
# variant's blocks stays statistics.median until the module moves up (issue 40 owns it now).
LEAF_MEDIAN = "sagetui/core/host_time.py"
FIXED = re.compile(r"[+ ]?\d*\.\d+[fg]$")  # a format spec with decimals: .3f, +.2f, 5.1f, .4g


def _name(e: ast.expr) -> str:
    return ast.unparse(e)


def _spec(v: ast.FormattedValue) -> str | None:
    if isinstance(v.format_spec, ast.JoinedStr) and all(
            isinstance(c, ast.Constant) for c in v.format_spec.values):
        return "".join(str(c.value) for c in v.format_spec.values)  # type: ignore[attr-defined]
    return None


def _is_const(e: ast.expr, *values: float) -> bool:
    return isinstance(e, ast.Constant) and e.value in values and not isinstance(e.value, bool)


def medians_and_percentiles(tree: ast.AST) -> Iterator[ast.AST]:
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and _name(n) in (
                "np.median", "np.percentile", "np.quantile", "np.nanmedian",
                "statistics.median", "statistics.quantiles"):
            yield n


def t_quantiles(tree: ast.AST) -> Iterator[ast.AST]:
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and _name(n.func).split(".")[-1] in ("t_quantile", "stdtrit"):
            yield n


def log_percents_and_changes(tree: ast.AST) -> Iterator[ast.AST]:
    """expm1(x) x 100, and (a / b - 1) x 100."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and _name(n.func).endswith("expm1"):
            yield n
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            for inner, hundred in ((n.left, n.right), (n.right, n.left)):
                if (_is_const(hundred, 100, 100.0) and isinstance(inner, ast.BinOp)
                        and isinstance(inner.op, ast.Sub) and _is_const(inner.right, 1, 1.0)
                        and isinstance(inner.left, ast.BinOp)
                        and isinstance(inner.left.op, ast.Div)):
                    yield n


def texts(tree: ast.AST) -> Iterator[ast.AST]:
    """A number written with decimals and then " %" (a percent), a value times 1e3 written
    with decimals (milliseconds), the noise floor's words before a number."""
    for n in ast.walk(tree):
        if not isinstance(n, ast.JoinedStr):
            continue
        parts = n.values
        for i, v in enumerate(parts):
            if not isinstance(v, ast.FormattedValue) or not FIXED.match(_spec(v) or ""):
                continue
            after = parts[i + 1] if i + 1 < len(parts) else None
            before = parts[i - 1] if i else None
            if isinstance(after, ast.Constant) and str(after.value).lstrip().startswith("%"):
                yield v
            elif (isinstance(v.value, ast.BinOp) and isinstance(v.value.op, ast.Mult)
                  and (_is_const(v.value.right, 1e3, 1000) or _is_const(v.value.left, 1e3))):
                yield v
            elif isinstance(before, ast.Constant) and re.search(
                    r"noise floor:? $", str(before.value), re.I):
                yield v


def decades(tree: ast.AST) -> Iterator[ast.AST]:
    """10 ** floor(log10(x)): the magnitude an axis step is a round multiple of."""
    for n in ast.walk(tree):
        if (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) and _is_const(n.left, 10, 10.0)
                and "log10" in _name(n.right)):
            yield n


@functools.cache
def sources() -> dict[str, ast.Module]:
    """Every module of sagetui, parsed once for all the walks."""
    return {p.relative_to(ROOT).as_posix(): ast.parse(p.read_text(), str(p))
            for p in sorted((ROOT / "sagetui").rglob("*.py"))}


def found(walk: Callable[[ast.AST], Iterator[ast.AST]], homes: set[str]) -> list[str]:
    return [f"{rel}:{getattr(n, 'lineno', 0)}" for rel, tree in sources().items()
            if rel not in homes for n in walk(tree)]


def test_a_median_and_a_percentile_are_summary_s() -> None:
    assert found(medians_and_percentiles,
                 {"sagetui/core/statistics/summary.py", LEAF_MEDIAN}) == []


def test_a_t_quantile_is_taken_in_intervals_only() -> None:
    assert found(t_quantiles, {"sagetui/core/statistics/intervals.py"}) == []


def test_a_log_ratio_in_percent_and_a_percent_change_are_derived_s() -> None:
    assert found(log_percents_and_changes, {"sagetui/core/derived.py"}) == []


def test_percent_and_millisecond_texts_and_the_noise_floor_are_format_s() -> None:
    assert found(texts, {"sagetui/core/format.py"}) == []


def test_an_axis_step_is_format_s() -> None:
    assert found(decades, {"sagetui/core/format.py"}) == []


def test_the_walks_see_each_formula(tmp_path: Path) -> None:
    f = tmp_path / "formulas.py"
    f.write_text(
        "import statistics\nimport numpy as np\n"
        "a = np.median(x) + statistics.median(x) + np.percentile(x, 90)\n"
        "b = t_quantile(0.975, 3) * math.expm1(d) * 100\n"
        "c = (new / old - 1.0) * 100.0\n"
        "d = f'{x:.1f} % and {s * 1e3:.3f} ms, noise floor {n:.3f}, {y:+.2f}%/rnd'\n"
        "e = 10.0 ** math.floor(math.log10(raw))\n"
        "ok = f'{n} rounds, {x:g}, {name:<14} {share:.2f}'\n")
    tree = ast.parse(f.read_text())
    assert [len(list(w(tree))) for w in (medians_and_percentiles, t_quantiles,
                                          log_percents_and_changes, texts, decades)] \
        == [3, 1, 2, 4, 1]


def test_the_sweep_svg_s_ticks_are_the_console_s_steps() -> None:
    """One tick step for both: the SVG's y axis from 0 in format.nice_step's 1, 2, 5 steps."""
    assert nice_ticks(87.3) == [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    assert fmt.nice_step(87.3, 5, steps=(1, 2, 5)) == 20.0
    assert fmt.nice_step(0.0873, 4) == 0.025  # the console's steps have 2.5 too
