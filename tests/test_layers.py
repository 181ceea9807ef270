"""DESIGN.md §2's layer rules, checked by import-linter's contracts in pyproject.toml, plus the
one rule import-linter cannot see: the UI process never imports torch at run time."""

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
            "sagetui.session.session, sagetui.core.check; "
            "bad = [m for m in ('torch', 'sageattention', 'pynvml') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
