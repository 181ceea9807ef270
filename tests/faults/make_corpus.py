"""Writes tests/faults/corpus/: malformed report files, each wrong in one way.

Run it again after changing it (`python tests/faults/make_corpus.py`); the files are committed
so that the tests read fixed bytes. Files over ~1 MB (10^6-element arrays, a file over the size
limit) are made by the tests at run time instead. EXPECTED (in test_bad_reports.py) holds, per
file, the fragment its one-line error must contain: the JSON path where there is one.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
BASE = json.loads((HERE.parents[1] / "sample_results" / "001_c3fd8b591d904547.json").read_text())


def doc(edit=None, ascii_only: bool = True) -> str:
    d = copy.deepcopy(BASE)
    if edit:
        edit(d)
    return json.dumps(d, indent=2, ensure_ascii=ascii_only)


def timing(d):
    return d["variants"][0]["timing"]


def setp(path, value):
    def edit(d):
        node = d
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return edit


def pop(path):
    def edit(d):
        node = d
        for k in path[:-1]:
            node = node[k]
        del node[path[-1]]
    return edit


T = ["variants", 0, "timing"]

TEXT: dict[str, str] = {
    # not JSON at all, or not a whole document
    "truncated.json": doc()[:1800],
    "empty.json": "",
    "whitespace_only.json": "  \n\t\n",
    "not_json.txt": "sagetui report\n==============\nbaseline p50 0.2439 s\n",
    "trailing_comma.json": doc().replace('"rounds": 5,', '"rounds": 5,,'),
    "python_repr.json": repr(BASE),
    "two_documents.json": doc() + "\n" + doc(),
    "html_error_page.json": "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>"
                            "<body><h1>Not Found</h1></body></html>\n",
    "git_lfs_pointer.json": "version https://git-lfs.github.com/spec/v1\noid sha256:"
                            + "4c" * 32 + "\nsize 5488\n",
    "nul_bytes.json": "\0" * 64,
    "deeply_nested.json": '{"metadata": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}",
    # JSON, but not an object
    "top_level_array.json": "[" + doc() + "]",
    "top_level_string.json": '"a report"',
    "top_level_null.json": "null",
    # numbers JSON does not allow, or a float cannot hold
    "nan_token.json": doc().replace('"p50_s": 0.24391904449462892', '"p50_s": NaN', 1),
    "infinity_token.json": doc(setp(T + ["max_s"], 1.0)).replace('"max_s": 1.0',
                                                                 '"max_s": -Infinity', 1),
    "overflow_float.json": doc(setp(["metadata", "steps"], 12.5)).replace(
        '"steps": 12.5', '"steps": 1e999', 1),
    "huge_integer.json": doc(setp(["rounds"], 777)).replace('"rounds": 777',
                                                             '"rounds": ' + "9" * 5000, 1),
    # times that are no times
    "negative_time.json": doc(setp(T + ["p50_s"], -0.2439)),
    "zero_time.json": doc(setp(T + ["min_s"], 0)),
    "time_over_a_million_seconds.json": doc(setp(T + ["p99_s"], 2e6)),
    "negative_sample.json": doc(setp(["samples"], {"baseline": {"total": [[0.24, 0.25, -1e-3]]}})),
    "zero_count.json": doc(setp(T + ["count"], 0)),
    # wrong types
    "string_for_number.json": doc(setp(T + ["p50_s"], "fast")),
    "numeric_string_for_number.json": doc(setp(T + ["p90_s"], "0.247")),
    "bool_for_count.json": doc(setp(T + ["count"], True)),
    "float_for_count.json": doc(setp(T + ["count"], 50.5)),
    "object_for_list.json": doc(setp(["variants"], {"baseline": {}})),
    "number_for_name.json": doc(setp(["variants", 0, "name"], 5)),
    "string_for_bool.json": doc(setp(["variants", 0, "byte_exact"], "yes")),
    "samples_not_nested.json": doc(setp(["samples"], {"baseline": {"total": [0.24, 0.25]}})),
    "q_shape_three_dims.json": doc(setp(["q_shape"], [1, 37810, 56])),
    "q_shape_negative.json": doc(setp(["q_shape"], [1, -37810, 56, 128])),
    "bad_sha256.json": doc(setp(["reference_output_sha256"], "not-a-hash")),
    "unknown_status.json": doc(setp(["status"], "done")),
    # missing and unknown fields
    "missing_field.json": doc(pop(T + ["p99_s"])),
    "no_measurements.json": json.dumps({"schema_version": 1, "metadata": BASE["metadata"]}),
    "unknown_field.json": doc(lambda d: d.__setitem__("varaints", d.pop("variants"))),
    "unknown_nested_field.json": doc(setp(T + ["p42_s"], 0.24)),
    "unknown_field_escape_codes.json": doc(setp(["variants", 0, "\x1b[2J\x1b]0;pwned\x07\nx"],
                                                1)),
    # versions
    "newer_schema_version.json": doc(setp(["schema_version"], 99)),
    "schema_version_zero.json": doc(setp(["schema_version"], 0)),
    "schema_version_string.json": doc(setp(["schema_version"], "1")),
}

BYTES: dict[str, bytes] = {
    "binary_garbage.bin": bytes(range(256)) * 4,
    "utf16.json": doc().encode("utf-16"),
    "bom.json": b"\xef\xbb\xbf" + doc().encode(),
    "gzipped.json.gz": gzip.compress(doc().encode(), mtime=0),
    "latin1.json": doc(setp(["metadata", "attention"], "s\u00e4ge"), False).encode("latin-1"),
}


def main() -> None:
    CORPUS.mkdir(exist_ok=True)
    for old in CORPUS.iterdir():
        if old.name != "README.md":
            old.unlink()
    for name, text in TEXT.items():
        (CORPUS / name).write_text(text, encoding="utf-8")
    for name, data in BYTES.items():
        (CORPUS / name).write_bytes(data)
    print(f"{len(TEXT) + len(BYTES)} files in {CORPUS}")


if __name__ == "__main__":
    main()
