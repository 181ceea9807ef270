"""Names (docs/architecture.md, "Names"): a module is imported under its own name. The two
abbreviations the code uses everywhere, `events as ev` and `format as fmt` (`format` is a
builtin), are the only aliases; anything else imported from sagetui keeps its name (a name
re-exported as itself, `x as x`, is not a rename)."""

import ast

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
