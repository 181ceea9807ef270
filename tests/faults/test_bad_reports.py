"""Bad report files: `sagetui check`, `compare` and `view` exit 2 with ONE line on stderr that
names the file and the JSON path (where there is one), never a traceback, and `view` fails
before the console opens.

The corpus is tests/faults/corpus/ (made by make_corpus.py); files too big to commit, and the
ones that are not plain files, are made here at run time.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sagetui.cli.main import main
from sagetui.core.report.io import MAX_REPORT_BYTES

from .conftest import CORPUS, ROOT, SAMPLE_001, env, no_traceback

# file -> a fragment its one-line error must hold (the JSON path where there is one)
EXPECTED = {
    "bad_sha256.json": "$.reference_output_sha256: String should match pattern",
    "binary_garbage.bin": "byte 128: not UTF-8 text",
    "bom.json": "byte 0: starts with a UTF-8 byte order mark",
    "bool_for_count.json": "$.variants[0].timing.count: Input should be a valid integer",
    "deeply_nested.json": "nested too deeply",
    "empty.json": "empty file",
    "float_for_count.json": "$.variants[0].timing.count: Input should be a valid integer",
    "git_lfs_pointer.json": "line 1 column 1: not valid JSON (Expecting value); it starts "
                            "with 'version https://git-lfs",
    "gzipped.json.gz": "byte 1: not UTF-8 text",
    "html_error_page.json": "not valid JSON (Expecting value); it starts with '<!DOCTYPE html>",
    "huge_integer.json": "$.rounds: an integer of 5000 digits is too long",
    "infinity_token.json": "$.variants[0].timing.max_s: -Infinity is not a number JSON allows",
    "latin1.json": "not UTF-8 text",
    "missing_field.json": "$.variants[0].timing.p99_s: missing field",
    "nan_token.json": "$.variants[0].timing.p50_s: NaN is not a number JSON allows",
    "negative_sample.json": "$.samples.baseline.total[0][2]: Input should be greater than 0",
    "negative_time.json": "$.variants[0].timing.p50_s: Input should be greater than 0",
    "newer_schema_version.json": "$: schema_version 99 is newer than this sagetui reads",
    "no_measurements.json": "$: a report needs at least one of phase_timings, variants",
    "not_json.txt": "line 1 column 1: not valid JSON",
    "nul_bytes.json": "not valid JSON (Expecting value); it starts with '\\x00",
    "number_for_name.json": "$.variants[0].name: Input should be a valid string",
    "numeric_string_for_number.json": "$.variants[0].timing.p90_s: Input should be a valid "
                                      "number",
    "object_for_list.json": "$.variants: Input should be a valid array",
    "overflow_float.json": "$.metadata.steps: 1e999 overflows a 64-bit float",
    "python_repr.json": "line 1 column 2: not valid JSON",
    "q_shape_negative.json": "$.q_shape[1]: Input should be greater than or equal to 1",
    "q_shape_three_dims.json": "$.q_shape: List should have at least 4 items",
    "samples_not_nested.json": "$.samples.baseline.total[0]: Input should be a valid array",
    "schema_version_string.json": "$.schema_version: Input should be a valid integer",
    "schema_version_zero.json": "$.schema_version: Input should be greater than or equal to 1",
    "string_for_bool.json": "$.variants[0].byte_exact: Input should be a valid boolean",
    "string_for_number.json": "$.variants[0].timing.p50_s: Input should be a valid number",
    "time_over_a_million_seconds.json": "$.variants[0].timing.p99_s: Input should be less than "
                                        "or equal to 1000000",
    "top_level_array.json": "$: expected a JSON object, got an array",
    "top_level_null.json": "$: expected a JSON object, got null",
    "top_level_string.json": "$: expected a JSON object, got a string",
    "trailing_comma.json": "line 55 column 15: not valid JSON",
    "truncated.json": "line 82 column 11: not valid JSON (Unterminated string",
    "two_documents.json": "not valid JSON (Extra data)",
    "unknown_field.json": "$.varaints: unknown field",
    "unknown_field_escape_codes.json": '$.variants[0]["\\u001b[2J\\u001b]0;pwned\\u0007\\nx"]: '
                                       "unknown field",
    "unknown_nested_field.json": "$.variants[0].timing.p42_s: unknown field",
    "unknown_status.json": "$.status: Input should be 'complete', 'partial', 'cancelled' or",
    "utf16.json": "byte 0: not UTF-8 text",
    "whitespace_only.json": "empty file",
    "zero_count.json": "$.variants[0].timing.count: Input should be greater than or equal to 1",
    "zero_time.json": "$.variants[0].timing.min_s: Input should be greater than 0",
}


def test_the_corpus_is_what_the_table_says():
    assert sorted(p.name for p in CORPUS.iterdir() if p.name != "README.md") == sorted(EXPECTED)
    assert len(EXPECTED) >= 25


def _huge_q_shape(tmp: Path) -> tuple[Path, str]:
    d = json.loads(SAMPLE_001.read_text())
    d["q_shape"] = list(range(1, 10**6 + 1))
    p = tmp / "huge_q_shape.json"
    p.write_text(json.dumps(d))
    return p, "$.q_shape: List should have at most 4 items after validation, not 1000000"


def _huge_samples(tmp: Path) -> tuple[Path, str]:
    d = json.loads(SAMPLE_001.read_text())
    total = [0.2439 + 1e-9 * i for i in range(10**6)]
    total[-1] = -0.2439
    d["samples"] = {"baseline": {"total": [total]}}
    p = tmp / "huge_samples.json"
    p.write_text(json.dumps(d))
    return p, "$.samples.baseline.total[0][999999]: Input should be greater than 0"


def _over_the_size_limit(tmp: Path) -> tuple[Path, str]:
    p = tmp / "over_the_limit.json"
    with p.open("wb") as fh:  # sparse: no disk used, no time spent
        fh.truncate(MAX_REPORT_BYTES + 1)
    return p, "byte limit"


def _directory(tmp: Path) -> tuple[Path, str]:
    p = tmp / "a_directory.json"
    p.mkdir()
    return p, "is a directory, not a report file"


def _missing(tmp: Path) -> tuple[Path, str]:
    return tmp / "no" / "such" / "report.json", "no such file"


def _symlink_loop(tmp: Path) -> tuple[Path, str]:
    p = tmp / "loop.json"
    p.symlink_to(p)
    return p, "Too many levels of symbolic links"


def _device(tmp: Path) -> tuple[Path, str]:
    return Path("/dev/zero"), "is a device, not a report file"  # never read: it has no end


def _socket(tmp: Path) -> tuple[Path, str]:
    p = tmp / "report.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()
    return p, "No such device or address"


RUNTIME = [_huge_q_shape, _huge_samples, _over_the_size_limit, _directory, _missing,
           _symlink_loop, _device, _socket]


def _cases(tmp: Path) -> list[tuple[Path, str]]:
    return [(CORPUS / name, frag) for name, frag in EXPECTED.items()] + [f(tmp) for f in RUNTIME]


def _one_line_error(capsys, argv: list[str], path: Path, fragment: str) -> str:
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (argv, out, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0] and fragment in lines[0], lines[0]
    assert no_traceback(err) and lines[0].isprintable()
    return lines[0]


def test_check_compare_and_view_refuse_every_bad_report_in_one_line(tmp_path, capsys,
                                                                   monkeypatch):
    # `view` must fail before the console: importing the app now raises ImportError
    monkeypatch.setitem(sys.modules, "sagetui.tui.app", None)
    for path, fragment in _cases(tmp_path):
        _one_line_error(capsys, ["check", str(path)], path, fragment)
        _one_line_error(capsys, ["compare", str(SAMPLE_001), str(path)], path, fragment)
        line = _one_line_error(capsys, ["view", str(path)], path, fragment)
        assert line.startswith("sagetui: error: ")


def test_a_file_without_read_permission(tmp_path):
    """Root reads anything: the commands run as `nobody` after their imports."""
    secret = tmp_path / "secret.json"
    secret.write_text(SAMPLE_001.read_text())
    secret.chmod(0)
    code = f"""
import locale, os, sys  # argparse translates its messages: it imports locale when a parser is made
from sagetui.cli.main import main
import sagetui.cli.reports, sagetui.cli.console, sagetui.cli.run_options
if os.geteuid() == 0:
    os.setgid(65534); os.setuid(65534)
sys.modules["sagetui.tui.app"] = None
for cmd in (["check"], ["compare"], ["view"]):
    print(main(cmd + [{str(secret)!r}]))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env(),
                       timeout=60, cwd=ROOT)
    assert p.stdout.split() == ["2", "2", "2"], p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 3 and all(f"{secret}: permission denied" in ln for ln in lines), lines


def test_check_names_every_bad_file_and_still_checks_the_good_ones(tmp_path):
    """A real `sagetui check` over the whole corpus: one stderr line per bad file, in order,
    the good files still checked, exit 2."""
    files = sorted(CORPUS.iterdir())
    files = [f for f in files if f.name != "README.md"]
    p = subprocess.run([sys.executable, "-m", "sagetui", "check", str(SAMPLE_001), *map(str, files),
                        str(SAMPLE_001)], capture_output=True, text=True, env=env(), timeout=120)
    assert p.returncode == 2
    assert no_traceback(p.stderr)
    err = p.stderr.splitlines()
    assert len(err) == len(files)
    for f, line in zip(files, err, strict=True):
        assert line.startswith(f"{f}: ") and EXPECTED[f.name] in line
    from sagetui.cli.reports import audit_counts
    from sagetui.core.check.report import audit
    from sagetui.core.report.io import load_report

    ok = f"{SAMPLE_001}: ok: {audit_counts(audit(load_report(SAMPLE_001)))}"
    assert p.stdout.splitlines() == [ok] * 2


def test_view_of_a_bad_report_never_starts_the_console(tmp_path):
    """As a user runs it (a real terminal type, stdin not a terminal): one line, exit 2."""
    bad = CORPUS / "nan_token.json"
    p = subprocess.run([sys.executable, "-m", "sagetui", "view", str(SAMPLE_001), str(bad)],
                       capture_output=True, text=True, env=env(TERM="xterm-256color"), timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2
    assert p.stderr.splitlines() == [f"sagetui: error: {bad}: {EXPECTED['nan_token.json']}"]
    assert p.stdout == ""  # no screen was drawn


def test_messages_stay_short_for_huge_input(tmp_path, capsys):
    path, fragment = _huge_q_shape(tmp_path)
    line = _one_line_error(capsys, ["check", str(path)], path, fragment)
    assert len(line) < 300


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_report_streamed_through_a_pipe_is_read(tmp_path, capsys):
    """`sagetui check <(ssh gpu cat report.json)`: a pipe has no size, it is still read (and
    bounded by the size limit)."""
    r, w = os.pipe()
    os.write(w, SAMPLE_001.read_bytes())
    os.close(w)
    try:
        assert main(["check", f"/dev/fd/{r}"]) == 0
    finally:
        os.close(r)
    assert capsys.readouterr().out.strip().startswith(f"/dev/fd/{r}: ok: ")


@pytest.mark.parametrize("token", ["NaN", "-Infinity", "1e999"])
@pytest.mark.parametrize("field", ["metadata", "config", "environment"])
def test_a_number_json_does_not_allow_deep_in_a_free_form_field_is_named(tmp_path, field,
                                                                          token):
    """pydantic's JSON reader (the one pass a good report gets) lets these into free-form
    fields; they must still be refused, by path, as the careful parse refuses them."""
    from sagetui.core.report.io import ReportError, load_report

    text = SAMPLE_001.read_text().rstrip()[:-1]
    text += f', "{field}": {{"a": [1, {{"b": {token}}}]}}}}\n'
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ReportError) as e:
        load_report(path)
    assert f"$.{field}.a[1].b" in str(e.value)
