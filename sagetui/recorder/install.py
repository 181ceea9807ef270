"""Putting the wrappers in and taking them out again.

torch.nn.functional.scaled_dot_product_attention is replaced at once; SageAttention's public
functions when sageattention is imported: at once if it already is, else by an import hook
(a finder at the front of sys.meta_path) that wraps them as the program first imports it. Code
that looks a function up when it calls it (`F.scaled_dot_product_attention(...)`,
`sageattention.sageattn(...)`, or a name imported after the capture began) calls the wrapper;
a name bound before (`from sageattention import sageattn` run before `with sagetui.capture`)
keeps the original.

A wrapper calls the original with the very same arguments and returns what it returned; only
then does it hand the call to the recording (which copies what it saves). A wrapped function
called from inside another (sageattn falling back to SDPA) is not one of the program's calls
and is not recorded.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType, ModuleType
from typing import Any

import torch.nn.functional as F

from sagetui.recorder.targets import SAGE_FUNCTIONS, SAGE_MODULE, SDPA, Target, sage_target

Record = Callable[[Target, tuple[Any, ...], dict[str, Any], FrameType | None], None]
# makes a function's wrapper: _wrap (record after the original), or sagetui swap's (a variant's
# backend in the original's place: sagetui/swap/inside.py)
Wrap = Callable[[Target, Callable[..., Any], Record, "_Inside"], Callable[..., Any]]


class _Inside(threading.local):
    active = False  # a wrapped function is running on this thread


def _wrap(target: Target, original: Callable[..., Any], record: Record,
          inside: _Inside) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if inside.active:
            return original(*args, **kwargs)
        inside.active = True
        try:
            out = original(*args, **kwargs)
        finally:
            inside.active = False
        record(target, args, kwargs, sys._getframe(1))
        return out

    wrapper.__sagetui_original__ = original  # type: ignore[attr-defined]
    return wrapper


class Installed:
    """The wrappers in place; `remove()` puts every original back."""

    def __init__(self, record: Record, wrap: Wrap | None = None) -> None:
        self._record = record
        self._wrap = wrap or _wrap
        self._inside = _Inside()  # one for all the wrappers: sageattn_varlen calling sageattn
        self._patched: list[tuple[ModuleType, str, Callable[..., Any]]] = []
        self._patch(F, "scaled_dot_product_attention", SDPA)
        self._finder: _WrapOnImport | None = None
        if SAGE_MODULE in sys.modules:
            self.wrap_sage(sys.modules[SAGE_MODULE])
        else:
            self._finder = _WrapOnImport(SAGE_MODULE, self.wrap_sage)
            sys.meta_path.insert(0, self._finder)

    def _patch(self, module: ModuleType, name: str, target: Target) -> None:
        original = getattr(module, name)
        setattr(module, name, self._wrap(target, original, self._record, self._inside))
        self._patched.append((module, name, original))

    def wrap_sage(self, module: ModuleType) -> None:
        for name in SAGE_FUNCTIONS:
            fn = getattr(module, name, None)
            if callable(fn):
                self._patch(module, name, sage_target(name, fn))

    def remove(self) -> None:
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        for module, name, original in reversed(self._patched):
            if getattr(getattr(module, name, None), "__sagetui_original__", None) is original:
                setattr(module, name, original)
        self._patched.clear()


class _WrapOnImport(importlib.abc.MetaPathFinder):
    """Finds `name` as the other finders would, and calls `loaded(module)` once it has run."""

    def __init__(self, name: str, loaded: Callable[[ModuleType], None]) -> None:
        self.name, self.loaded = name, loaded
        self._finding = False

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name or self._finding:
            return None
        self._finding = True  # find_spec below asks every finder, this one too
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._finding = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ThenCall(spec.loader, self.loaded)
        return spec


class _ThenCall(importlib.abc.Loader):
    """The module's own loader, then `loaded(module)`; anything else asked of it (resource
    readers, get_data) goes to the real loader."""

    def __init__(self, loader: importlib.abc.Loader, loaded: Callable[[ModuleType], None]):
        self._loader, self._loaded = loader, loaded

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._loaded(module)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # never _loader itself (before __init__ has set it)
            raise AttributeError(name)
        return getattr(self._loader, name)
