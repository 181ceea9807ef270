"""Names (docs/architecture.md, "Names"): a module is imported under its own name. The two
abbreviations the code uses everywhere, `events as ev` and `format as fmt` (`format` is a
builtin), are the only aliases; anything else imported from sagetui keeps its name (a name
re-exported as itself, `x as x`, is not a rename)."""

import ast
import re

from .conftest import ROOT

ALLOWED = {("events", "ev"), ("format", "fmt")}


def renamed_imports(source: str) -> list[tuple[int, str, str]]:
    """(line, what, as) of each import of a sagetui module or name under another name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level or not (node.module or "").startswith("sagetui"):
                continue
        elif not isinstance(node, ast.Import):
            continue
        for alias in node.names:
            if isinstance(node, ast.Import) and not alias.name.startswith("sagetui"):
                continue
            name = alias.name.rsplit(".", 1)[-1]
            if alias.asname not in (None, name) and (name, alias.asname) not in ALLOWED:
                found.append((node.lineno, alias.name, alias.asname))
    return found


def test_nothing_from_sagetui_is_imported_under_another_name():
    found = [f"{path.relative_to(ROOT)}:{line}: {name} as {asname}"
             for folder in ("sagetui", "tests", "benchmarks")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for line, name, asname in renamed_imports(path.read_text())]
    assert not found


def test_the_walk_finds_each_kind_of_rename():
    source = ("from sagetui.core import scheduler as geo\n"
              "import sagetui.cli.profile as cli_profile\n"
              "def f():\n    from sagetui.core.statistics.intervals import half_percent as ci\n"
              "from sagetui.core import events as ev, format as fmt\n"
              "from sagetui.cli.outputs import check_outputs as check_outputs\n"
              "import numpy as np\nfrom . import conftest as c\n")
    assert renamed_imports(source) == [
        (1, "scheduler", "geo"),
        (2, "sagetui.cli.profile", "cli_profile"),
        (4, "half_percent", "ci")]


# -- one class per name ---------------------------------------------------------------------------
# Public classes that still share a name: a report model beside the event or the computation
# it records, left while the report models are reshaped (docs/architecture.md, "Names").
SHARED_CLASS_NAMES = {"Drift", "HeadAccuracy", "Measured", "TailRow"}
# The names docs/architecture.md says were two things and are one now.
ONE_EACH = ("Verdict", "VerdictRecord", "Option", "BackendOption", "decide", "terminal_status",
            "with_left_out", "left_out_status", "build_report", "profile_report", "SampledLine")


def top_level_names(kind: type[ast.ClassDef] | type[ast.FunctionDef]) -> dict[str, list[str]]:
    """Each public class (or function) defined at a module's top level in sagetui, and the
    modules that define it."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "sagetui").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, kind) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(path.relative_to(ROOT).as_posix())
    return found


def test_one_class_per_name():
    shared = {n: ms for n, ms in top_level_names(ast.ClassDef).items() if len(ms) > 1}
    assert set(shared) == SHARED_CLASS_NAMES, shared


def test_the_names_that_meant_two_things_mean_one():
    defs = top_level_names(ast.ClassDef)
    for name, modules in top_level_names(ast.FunctionDef).items():
        defs.setdefault(name, []).extend(modules)
    assert {n: defs.get(n, []) for n in ONE_EACH if len(defs.get(n, [])) != 1} == {}


def test_the_doc_counts_the_shared_basenames():
    """docs/architecture.md, "Names": "N module basenames are shared by M modules"."""
    stems: dict[str, int] = {}
    for path in (ROOT / "sagetui").rglob("*.py"):
        if path.stem not in ("__init__", "__main__"):
            stems[path.stem] = stems.get(path.stem, 0) + 1
    shared = [n for n in stems.values() if n > 1]
    text = " ".join((ROOT / "docs" / "architecture.md").read_text().split())
    said = re.search(r"(\d+) module basenames are shared by (\d+) modules", text)
    assert said and (int(said.group(1)), int(said.group(2))) == (len(shared), sum(shared))
