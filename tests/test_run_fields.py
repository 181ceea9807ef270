"""core/run_fields.py, the one table of the run configuration's options: every field
of RunConfig and Shape is an option there or is named as none, so that a new field cannot be
forgotten; the models take their defaults and descriptions from it; and the table is plain data
that `sagetui --help` reads without pydantic."""

from __future__ import annotations

import argparse
import subprocess
import sys
from typing import get_args

import pytest

from sagetui.cli.main import build_parser
from sagetui.cli.sweep_args import AXES
from sagetui.core.config import RunConfig, Shape
from sagetui.core.run_fields import FIELDS, NOT_OPTIONS, OPTIONS, REQUIRED


def test_every_field_is_an_option_or_said_to_be_none() -> None:
    fields = {*RunConfig.model_fields, *Shape.model_fields}
    undecided = fields - FIELDS.keys() - NOT_OPTIONS.keys()
    assert not undecided, (
        f"{sorted(undecided)}: give each an Option in core/run_fields.OPTIONS, or say in "
        "NOT_OPTIONS why it is none")
    assert not (FIELDS.keys() | NOT_OPTIONS.keys()) - fields, "no such field"
    assert not FIELDS.keys() & NOT_OPTIONS.keys()
    assert len({o.flag for o in OPTIONS}) == len(OPTIONS)
    assert len(FIELDS) == len(OPTIONS) - 1  # one option to a field; --backend makes variants


def test_the_models_fields_are_the_tables() -> None:
    """Default, description and option: the model's field says what the table says."""
    for model in (RunConfig, Shape):
        for name, info in model.model_fields.items():
            if name in NOT_OPTIONS:
                continue
            o = FIELDS[name]
            assert o.shape == (model is Shape), name
            assert info.json_schema_extra == {"option": o.flag}, name
            assert info.description == o.text, name
            default = REQUIRED if info.is_required() else info.get_default(
                call_default_factory=True)
            assert default == o.default, name
            if o.choices:
                assert get_args(info.annotation) == o.choices, name
            assert (o.kind == "flag") == (info.annotation is bool), name
            assert (o.kind == "list") == (name in ("variants", "metadata")), name


def test_the_table_imports_nothing() -> None:
    """`sagetui --help` builds its parser from it: beside typing (which cli/main.py imports
    anyway) it loads no module (test_cli.py's test of --help: nor pydantic, numpy). __future__
    is loaded first: site may or may not have loaded it already (CI's Python did not). The
    package's root brings the version (core/version.py), which imports nothing either."""
    code = ("import sys, __future__, typing, collections.abc; before = set(sys.modules); "
            "import sagetui.core.run_fields; "
            "print(sorted(set(sys.modules) - before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == ("['sagetui', 'sagetui.core', 'sagetui.core.run_fields', "
                                  "'sagetui.core.version']"), out.stdout


@pytest.mark.parametrize("command", ["", "run", "calibrate", "profile", "sweep", "node-check"])
def test_every_commands_run_options_are_the_fields(command: str) -> None:
    """The console's, `run`'s and the other commands' run options: one per option of the
    table, its help the field's description and its default the field's (a shape's option
    stays unset until given); the sweep's axes stand in for their fields' options."""
    parser: argparse.ArgumentParser = build_parser(command)
    if command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[command]
    actions = {a.option_strings[0]: a for a in parser._actions if a.option_strings}
    fields = {**RunConfig.model_fields, **Shape.model_fields}
    for o in OPTIONS:
        a = actions[o.flag]
        if o.field is None or (command == "sweep" and o.field in AXES):
            continue
        info = fields[o.field]
        assert a.dest == o.dest
        assert (a.help or "").replace("%%", "%") == (info.description or ""), o.flag
        if o.kind == "value":
            assert a.default == (None if o.shape else info.default), o.flag
            assert a.choices == (get_args(info.annotation) if o.choices else None), o.flag
        else:
            assert a.default in (None, False), o.flag
