"""variants.load_extension's failure reasons, on the CPU: each names what is really wrong."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from sagetui.runner.backends.base import VariantLoadError
from sagetui.runner.variants import find_module_file, load_extension

needs_cc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build a .so")


def _build_so(tmp_path: Path, name: str, source: str, *extra: str) -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / f"{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src), *extra], check=True,
                   capture_output=True)
    return out


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(VariantLoadError, match="does not exist"):
        load_extension(tmp_path / "nowhere" / "_qattn_sm89.so", "_qattn_sm89", "v1")


def test_directory_without_the_module(tmp_path: Path) -> None:
    (tmp_path / "sageattention").mkdir()
    (tmp_path / "sageattention" / "_fused.cpython-312-x86_64-linux-gnu.so").write_bytes(b"")
    with pytest.raises(VariantLoadError, match=r"no _qattn_sm89\*\.so under"):
        load_extension(tmp_path, "_qattn_sm89", "v1")


def test_directory_finds_the_module_by_prefix(tmp_path: Path) -> None:
    pkg = tmp_path / "lib" / "python3.12" / "site-packages" / "sageattention"
    pkg.mkdir(parents=True)
    target = pkg / "_qattn_sm89.cpython-312-x86_64-linux-gnu.so"
    target.write_bytes(b"")
    (pkg / "_qattn_sm90.cpython-312-x86_64-linux-gnu.so").write_bytes(b"")
    assert find_module_file(tmp_path, "_qattn_sm89") == target


def test_text_file_renamed_so(tmp_path: Path) -> None:
    fake = tmp_path / "_qattn_sm89.so"
    fake.write_text("this is not a library\n")
    with pytest.raises(VariantLoadError, match="not a shared library"):
        load_extension(fake, "_qattn_sm89", "v1")


@needs_cc
def test_library_without_pyinit(tmp_path: Path) -> None:
    lib = _build_so(tmp_path, "_qattn_sm89", "int answer(void) { return 42; }\n")
    with pytest.raises(VariantLoadError, match="no PyInit__qattn_sm89 symbol"):
        load_extension(lib, "_qattn_sm89", "v1")


@needs_cc
def test_library_with_undefined_symbol(tmp_path: Path) -> None:
    source = ("extern int symbol_that_nobody_defines(void);\n"
              "int call_it(void) { return symbol_that_nobody_defines(); }\n")
    lib = _build_so(tmp_path, "_qattn_sm89", source)
    with pytest.raises(VariantLoadError, match="undefined symbol symbol_that_nobody_defines"):
        load_extension(lib, "_qattn_sm89", "v1")


@needs_cc
def test_undefined_torch_symbol_names_the_torch_build(tmp_path: Path) -> None:
    # A mangled c10 name, as an extension built against another torch leaves undefined.
    source = ("extern int _ZN3c1019some_removed_helperEv(void);\n"
              "int call_it(void) { return _ZN3c1019some_removed_helperEv(); }\n")
    lib = _build_so(tmp_path, "_qattn_sm89", source)
    with pytest.raises(VariantLoadError, match="built against another torch"):
        load_extension(lib, "_qattn_sm89", "v1")


@needs_cc
def test_real_extension_loads_under_the_variant_name(tmp_path: Path) -> None:
    """A minimal CPython extension named _qattn_sm89 loads from a path without an extension
    suffix, under variant_<name>._qattn_sm89, and its functions are callable."""
    source = r"""
#include <Python.h>
static PyObject* which(PyObject* self, PyObject* args) { return PyUnicode_FromString("v2"); }
static PyMethodDef methods[] = {{"which", which, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_qattn_sm89", NULL, -1, methods};
PyMODINIT_FUNC PyInit__qattn_sm89(void) { return PyModule_Create(&def); }
"""
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        pytest.skip("no Python.h to build an extension")
    lib = _build_so(tmp_path, "_qattn_sm89", source, f"-I{include}")
    renamed = tmp_path / "build_v2.bin"
    lib.rename(renamed)
    module = load_extension(renamed, "_qattn_sm89", "v2")
    assert module.__name__ == "variant_v2._qattn_sm89"
    assert module.which() == "v2"
    # The same file again under another variant name is a module of its own.
    again = load_extension(renamed, "_qattn_sm89", "v3")
    assert again is not module and again.__name__ == "variant_v3._qattn_sm89"
    assert again.which() == "v2"
