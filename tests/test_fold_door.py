"""The fold is the only door (docs/architecture.md, "The run model"): every change of a run
model is an event through core/run/fold.apply, the console's own too (a baseline chosen, a
calibration's threshold, profiles made after the run), and the session's emit is public."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from sagetui.core import events as ev
from sagetui.core.report.io import load_report
from sagetui.core.run.fold import apply
from sagetui.core.run.load import from_report
from sagetui.core.statistics.threshold import Threshold
from sagetui.tui.source import Source
from sagetui.tui.variant_controls import set_baseline

from .conftest import ROOT, SAMPLES

MUTATORS = {"append", "extend", "update", "insert", "clear", "pop", "remove"}


# Where a model is made and filled before any event: the fold's module and the loader's.
MAKERS = {"sagetui/core/run/fold.py", "sagetui/core/run/load.py"}
MAKES_A_MODEL = {"new_model", "from_report", "point_model"}


def _through_model(e: ast.expr, bound: set[str]) -> bool:
    """`model.x`, `data.model.x[...]`, `m.x` where m is bound to a model: an expression
    reached through a run model."""
    while isinstance(e, ast.Attribute | ast.Subscript):
        if isinstance(e, ast.Attribute) and e.attr == "model":
            return True
        e = e.value
    return isinstance(e, ast.Name) and (e.id == "model" or e.id in bound)


def _bound_to_a_model(tree: ast.AST) -> set[str]:
    """The names bound to a run model: `m = self.model`, `m = new_model(...)`, `with
    session.point_model(cfg) as point`."""
    bound: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            v = n.value
            if ((isinstance(v, ast.Attribute) and v.attr == "model")
                    or (isinstance(v, ast.Call)
                        and ast.unparse(v.func).split(".")[-1] in MAKES_A_MODEL)):
                bound.add(n.targets[0].id)
        elif isinstance(n, ast.withitem) and isinstance(n.optional_vars, ast.Name) and (
                isinstance(n.context_expr, ast.Call)
                and ast.unparse(n.context_expr.func).split(".")[-1] in MAKES_A_MODEL):
            bound.add(n.optional_vars.id)
    return bound


def model_writes(path: Path) -> list[str]:
    """Each line that sets a field of a model (`x.model.baseline = ...`, `point.status = ...`
    where point is a model) or grows one of its lists (`x.model.faults.append(...)`)."""
    found = []
    tree = ast.parse(path.read_text(), str(path))
    bound = _bound_to_a_model(tree)
    for n in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, ast.AugAssign | ast.AnnAssign):
            targets = [n.target]
        flat = [x for t in targets for x in (t.elts if isinstance(t, ast.Tuple) else [t])]
        found += [f"{n.lineno}: {ast.unparse(t)}" for t in flat
                  if isinstance(t, ast.Attribute | ast.Subscript)
                  and _through_model(t.value, bound)]
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr in MUTATORS and isinstance(n.func.value, ast.Attribute)
                and _through_model(n.func.value.value, bound)):
            found.append(f"{n.lineno}: {ast.unparse(n.func)}")
    return sorted(found, key=lambda w: int(w.split(":")[0]))


def test_nothing_but_the_fold_changes_a_run_model() -> None:
    bad = {rel: w for p in sorted((ROOT / "sagetui").rglob("*.py"))
           if (rel := p.relative_to(ROOT).as_posix()) not in MAKERS and (w := model_writes(p))}
    assert not bad, f"a run model changed outside core/run/fold.apply: {bad}"


def test_the_walk_sees_a_write_past_the_fold(tmp_path: Path) -> None:
    f = tmp_path / "writes.py"
    f.write_text(textwrap.dedent("""\
        def f(data, model, m, session):
            data.model.baseline = 'b'
            model.profiles, x = [], 1
            data.model.faults.append(1)
            m.baseline = 'b'  # an argument: the fold's own
            data.model_name = 'x'
            mine = data.model
            mine.threshold = None
            with session.point_model(cfg) as point:
                point.status, n = 'complete', 2
            made = new_model(cfg)
            made.runner['device'] = 'cpu'
        """))
    assert model_writes(f) == ["2: data.model.baseline", "3: model.profiles",
                               "4: data.model.faults.append", "8: mine.threshold",
                               "10: point.status", "12: made.runner['device']"]


def test_no_module_calls_the_session_private_emit() -> None:
    for p in sorted((ROOT / "sagetui").rglob("*.py")):
        for n in ast.walk(ast.parse(p.read_text(), str(p))):
            assert not (isinstance(n, ast.Attribute) and n.attr == "_emit"), f"{p}:{n.lineno}"


def test_a_baseline_chosen_in_the_console_is_folded() -> None:
    """The figures are kept per model version: a baseline that did not move it left the
    panels on the old one's speedups."""
    data = Source("saved", live=False,
                  model=from_report(load_report(SAMPLES / "cpu_reference_variants.json")))
    before = data.model.version
    set_baseline(data, "slow", None)
    assert data.model.baseline == "slow" and data.model.version > before


def test_a_threshold_folded_is_the_one_given() -> None:
    m = from_report(load_report(SAMPLES / "cpu_reference_variants.json"))
    t = Threshold(2.5, "calibration", 1.25, "gpu-key", "2026-12-06T09:00:00+00:00")
    before = m.version
    apply(m, ev.ThresholdResolved(threshold=t.fields()))
    assert m.threshold == t and m.version > before


def test_profiles_added_replace_their_variant_s_and_keep_the_others() -> None:
    sm89, again, sm90 = (load_report(SAMPLES / f"h200_profile_{n}.json").mainloop_profiles[0]
                         for n in ("sm89_reference_shape", "sm89_repeat", "sm90_reference_shape"))
    m = from_report(load_report(SAMPLES / "h200_profile_sm89_reference_shape.json"))
    assert m.profiles == [sm89]
    before = m.version
    apply(m, ev.ProfilesAdded(profiles=[sm90]))
    apply(m, ev.ProfilesAdded(profiles=[again]))
    assert m.profiles == [sm90, again] and m.version == before + 2
