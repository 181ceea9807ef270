"""Load another build of an extension module (a variant) beside the installed one.

A variant is loaded straight from its shared library under a private name,
`variant_<name>.<module>`: the last name part must stay the module's own (`_qattn_sm89`), since
CPython looks for `PyInit_<last part>`. Nothing else of the variant's package is imported: a
second copy of SageAttention's `sm89_compile.py` would re-register the same `torch.library` op
names, and every variant would then silently run whichever registered last. Callers use the
returned module's functions directly.

Every failure is a VariantLoadError whose message is the real reason: a missing path, a folder
without the module, a file that is not a shared library, a library without the `PyInit_` symbol,
an undefined symbol (typically a build against another torch).
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import re
from pathlib import Path
from types import ModuleType

from sagetui.runner.backends.base import VariantLoadError
from sagetui.runner.kernel_facts import demangle

_ELF_MAGIC = b"\x7fELF"
_ET_DYN = 3  # ELF e_type of a shared object
# Mangled C++ names from torch's own libraries: an undefined one means another torch's ABI.
_TORCH_NAMESPACES = ("_ZN3c10", "_ZNK3c10", "_ZN2at", "_ZNK2at", "_ZN5torch", "_ZNK5torch")


def find_module_file(path: Path, module_name: str) -> Path:
    """The `<module>*.so` under `path` (a file is returned as is). Prefers the running
    interpreter's extension suffix when a folder holds builds for several Pythons."""
    if path.is_file():
        return path
    candidates = sorted(p for p in path.rglob(f"{module_name}*.so") if p.is_file()
                        and (p.name == f"{module_name}.so" or p.name.startswith(f"{module_name}.")))
    if not candidates:
        raise VariantLoadError(f"no {module_name}*.so under {path}")
    ours = [p for p in candidates
            if any(p.name == module_name + s for s in importlib.machinery.EXTENSION_SUFFIXES)]
    if len(ours) == 1:
        return ours[0]
    pool = ours or candidates
    if len(pool) > 1:
        listing = ", ".join(str(p) for p in pool)
        raise VariantLoadError(f"several builds of {module_name} under {path}: {listing}; "
                               "give the .so path itself")
    return pool[0]


def _check_shared_library(path: Path) -> None:
    try:
        with path.open("rb") as fh:
            header = fh.read(18)
    except OSError as exc:
        raise VariantLoadError(f"cannot read {path}: {exc}") from exc
    if header[:4] != _ELF_MAGIC:
        raise VariantLoadError(f"{path} is not a shared library (no ELF header; starts with "
                               f"{header[:8]!r})")
    little = header[5] == 1
    e_type = int.from_bytes(header[16:18], "little" if little else "big")
    if e_type != _ET_DYN:
        raise VariantLoadError(f"{path} is an ELF file but not a shared library (e_type {e_type})")


def _demangle(symbol: str) -> str:
    return demangle([symbol]).get(symbol, symbol)


def _explain_dlopen_error(path: Path, message: str) -> str:
    match = re.search(r"undefined symbol: (\S+)", message)
    if match is None:
        return f"cannot load {path}: {message}"
    symbol = match.group(1)
    reason = f"{path} has an undefined symbol {symbol} ({_demangle(symbol)})"
    if symbol.startswith(_TORCH_NAMESPACES):
        import torch

        reason += (f": it was built against another torch than the running {torch.__version__}"
                   f" (CUDA {torch.version.cuda}); rebuild it with this one")
    return reason


def load_extension(path: str | Path, module_name: str, variant_name: str) -> ModuleType:
    """Load `module_name` (e.g. "_qattn_sm89") from `path` (its .so, or a folder or install
    prefix holding one) as the module `variant_<variant_name>.<module_name>`."""
    root = Path(path).expanduser()
    if not root.exists():
        raise VariantLoadError(f"variant {variant_name}: {root} does not exist")
    so_path = find_module_file(root, module_name).resolve()
    _check_shared_library(so_path)

    # torch first: the extension's libc10/libtorch dependencies resolve against the loaded ones
    # (it has no rpath to them), and an ABI mismatch then shows as an undefined symbol.
    import torch  # noqa: F401

    try:
        lib = ctypes.CDLL(str(so_path))  # RTLD_NOW: every undefined symbol fails here, named
    except OSError as exc:
        raise VariantLoadError(_explain_dlopen_error(so_path, str(exc))) from exc
    init = f"PyInit_{module_name}"
    if not hasattr(lib, init):
        raise VariantLoadError(f"{so_path} has no {init} symbol: it is not a build of "
                               f"{module_name}")

    fullname = f"variant_{variant_name}.{module_name}"
    # An explicit loader: spec_from_file_location picks none for a path without an
    # extension-module suffix.
    loader = importlib.machinery.ExtensionFileLoader(fullname, str(so_path))
    spec = importlib.util.spec_from_file_location(fullname, str(so_path), loader=loader)
    if spec is None:  # pragma: no cover - an explicit loader always gives a spec
        raise VariantLoadError(f"cannot make an import spec for {so_path}")
    try:
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except ImportError as exc:
        raise VariantLoadError(_explain_dlopen_error(so_path, str(exc))) from exc
    except Exception as exc:  # a module whose init raises: keep its own words
        raise VariantLoadError(f"{so_path}: {init} failed: {type(exc).__name__}: {exc}") from exc
    # ModuleType declares no such attribute; a module takes new ones (provenance reads it)
    module.__variant_path__ = str(so_path)  # type: ignore[attr-defined]
    return module
