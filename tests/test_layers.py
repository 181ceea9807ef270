"""The layer rules (docs/architecture.md, "Layers"), checked by import-linter's contracts in
pyproject.toml, plus the one rule import-linter cannot see: the UI process never imports torch
at run time. (Modules are split by job, never to meet a line count: no test caps them.)"""

import subprocess
import sys

from .conftest import ROOT


def test_import_linter_contracts_hold():
    out = subprocess.run([sys.executable, "-c",
                          "import sys; from importlinter.cli import lint_imports_command; "
                          "sys.exit(lint_imports_command())"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "BROKEN" not in out.stdout


def test_cli_and_console_modules_do_not_import_torch():
    code = ("import sys, sagetui.cli.main, sagetui.cli.run, sagetui.cli.reports, "
            "sagetui.session.session, sagetui.core.check.report; "
            "bad = [m for m in ('torch', 'sageattention', 'pynvml') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_import_graph_has_no_cycle():
    """Between sagetui's modules, counting imports made only for type checking too."""
    import grimp

    graph = grimp.build_graph("sagetui")
    cycles = []
    for module in sorted(graph.modules):
        for other in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=other, imported=module):
                cycles.append((module, other))
    assert not cycles, cycles



def test_every_package_is_installed():
    """pyproject lists its packages by hand: a new one (core/profile) must be in the list, or
    `pip install .` leaves it out and the report model cannot be imported."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "sagetui").rglob("__init__.py")}
    assert found <= listed, found - listed
