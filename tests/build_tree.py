"""A tiny tree that looks like a SageAttention checkout to sagetui's builder: a setup.py that
declares extensions named as SageAttention's (`sageattention._qattn_sm89`,
`sageattention._fused`) and appends CXX_APPEND_FLAGS as SageAttention's does, csrc/ with a
few lines of C++ each, and the package's __init__.py. It builds without CUDA. The C++ uses
Python's C API alone: a file compiles in a quarter of a second, where pybind11's header costs
5 s a file and torch/extension.h some 45 s on a loaded machine.

Its setup.py comes in two kinds, for the builder runs whatever setup.py the tree has:
- `torch=True`: torch CppExtensions built by torch's BuildExtension and ninja, the path of the
  real tree, for the tests of what that path prints (ninja's steps, its log, a compiler error
  as ninja shows it);
- otherwise the same extensions, sources and flags as setuptools' own Extensions and
  build_ext: the builder's cache, stops and watch are the same over either, and this setup.py
  does not import torch (1.6 s of CPU a build, some 30 builds a test run)."""

from __future__ import annotations

import os
from pathlib import Path

SETUP = '''
import os
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

CXX_FLAGS = ["-O1"] + os.getenv("CXX_APPEND_FLAGS", "").split()
ext_modules = [
    CppExtension(name="sageattention._qattn_sm89", sources=["csrc/qattn/pybind_sm89.cpp"],
                 extra_compile_args={"cxx": CXX_FLAGS}),
    CppExtension(name="sageattention._fused", sources=["csrc/fused/pybind.cpp"],
                 extra_compile_args={"cxx": CXX_FLAGS}),
]
setup(name="sageattention", version="0.0.0", packages=["sageattention"],
      ext_modules=ext_modules, cmdclass={"build_ext": BuildExtension})
'''

SETUP_PLAIN = '''
import os
from setuptools import Extension, setup

CXX_FLAGS = ["-O1"] + os.getenv("CXX_APPEND_FLAGS", "").split()
ext_modules = [
    Extension(name="sageattention._qattn_sm89", sources=["csrc/qattn/pybind_sm89.cpp"],
              define_macros=[("TORCH_EXTENSION_NAME", "_qattn_sm89")], language="c++",
              extra_compile_args=CXX_FLAGS),
    Extension(name="sageattention._fused", sources=["csrc/fused/pybind.cpp"],
              define_macros=[("TORCH_EXTENSION_NAME", "_fused")], language="c++",
              extra_compile_args=CXX_FLAGS),
]
setup(name="sageattention", version="0.0.0", packages=["sageattention"],
      ext_modules=ext_modules)
'''

MODULE = '''
#include <Python.h>
#ifndef BONUS
#define BONUS 0
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STR_(x) #x
#define STR(x) STR_(x)
static PyObject* answer(PyObject*, PyObject*) {{ return PyLong_FromLong({value} + BONUS); }}
static PyMethodDef methods[] = {{{{"answer", answer, METH_NOARGS, nullptr}},
                                {{nullptr, nullptr, 0, nullptr}}}};
static PyModuleDef module = {{PyModuleDef_HEAD_INIT, STR(TORCH_EXTENSION_NAME), nullptr, -1,
                             methods}};
PyMODINIT_FUNC CAT(PyInit_, TORCH_EXTENSION_NAME)() {{ return PyModule_Create(&module); }}
'''

# What a test can make the tree's setup.py do (write_tree(hooks=True)), each asked for by a file
# in the tree's root (none of them a source the build hashes), before it declares anything:
HOOKS = '''
import atexit, os, subprocess, sys
kid = 0
if os.path.exists("spawn-child"):  # a second process in the build's group, besides setup.py
    kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]).pid
if os.path.exists(DEAF):  # setup.py deaf to SIGTERM (the driver's own handler replaced;
    # after its child starts: an ignored signal stays ignored across exec)
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(".started.part", "w") as f:  # "setup.py's pid and its child's": it has started
    f.write("%d %d" % (os.getpid(), kid))
os.replace(".started.part", STARTED)
if os.path.exists(GATE):  # a FIFO: setup.py waits until the test writes to it
    with open(GATE) as f:
        f.read()
if os.path.exists(EDIT):  # the source edited during the build, to the text EDIT holds
    qattn = "csrc/qattn/pybind_sm89.cpp"
    with open(qattn) as f:
        original = f.read()
    with open(EDIT) as f:
        edited = f.read()
    os.remove(EDIT)
    with open(qattn, "w") as f:
        f.write(edited)
    if os.path.exists(PUT_BACK):  # and put back as it was when setup.py ends: a hash of the
        os.remove(PUT_BACK)       # tree after the build cannot tell, the compiler read it
        atexit.register(lambda: open(qattn, "w").write(original))
if os.path.exists(ALWAYS):  # the source written with the text ALWAYS holds, on every run
    with open(ALWAYS) as f, open("csrc/qattn/pybind_sm89.cpp", "w") as out:
        out.write(f.read())
'''
STARTED, GATE, EDIT, PUT_BACK, ALWAYS, DEAF = ("setup-started", "gate", "edit-once",
                                               "put-back", "edit-always", "deaf-to-sigterm")
for _name in ("STARTED", "GATE", "EDIT", "PUT_BACK", "ALWAYS", "DEAF"):
    HOOKS = HOOKS.replace(_name, repr(globals()[_name]))

SOURCES = {"qattn/pybind_sm89.cpp": 89, "fused/pybind.cpp": 1}


def write_tree(root: Path, qattn_value: int = 89, hooks: bool = False,
               torch: bool = False) -> Path:
    """The tree under `root`; `_qattn_sm89.answer()` returns `qattn_value`, `_fused`'s 1 (plus
    -DBONUS=N from CXX_APPEND_FLAGS). `hooks`: its setup.py runs HOOKS first; `torch`: it
    builds through torch's BuildExtension and ninja (the module's docstring)."""
    (root / "sageattention").mkdir(parents=True, exist_ok=True)
    (root / "sageattention" / "__init__.py").write_text("")
    (root / "setup.py").write_text((HOOKS if hooks else "") + (SETUP if torch else SETUP_PLAIN))
    for rel, value in SOURCES.items():
        path = root / "csrc" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(MODULE.format(value=qattn_value if "sm89" in rel else value))
    return root


def set_qattn_source(root: Path, text: str) -> None:
    """The edit as an editor saves it: written beside, then renamed over in one step (a
    watcher never sees the file half-written, so one edit is one change)."""
    path = root / "csrc" / "qattn" / "pybind_sm89.cpp"
    part = path.with_name(".pybind_sm89.cpp.part")  # hidden: not a source, never reported
    part.write_text(text)
    os.replace(part, path)
