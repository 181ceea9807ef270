"""Which module made a call: the innermost torch.nn.Module running when the call was made,
named by its path in the outermost one (`blocks.2.attn`), read off the Python stack.

Every module call goes through `Module._call_impl`, whose frame holds the module as `self`, so
the innermost such frame above the call is the calling module and the outermost is the model
the program called. Why the stack and not module hooks: global forward (pre-)hooks would run on
every call of every module (and turn off torch's fast path for modules without hooks), where
this costs a walk up the stack at an attention call only; it keeps no state that an exception
inside a forward could leave wrong; and it sees modules made or replaced after the capture
began. Names are looked up in a table of the outermost module's `named_modules()`, built when
that module is first seen and again when a module is missing from it. A module whose forward is
called directly (`self.attn.forward(x)`, not `self.attn(x)`) has no frame of its own: the call
is its caller's.

The whole walk costs microseconds on a deep stack, at every call of a model whose speed is set
by its host (18 us a call; docs/workloads.md). `at` walks only up to the innermost module's frame,
and keeps each module's path from its first call while the module lives: a module is named once. (So
a module that moves into another model after its first call keeps its first path.) """

from __future__ import annotations

import weakref
from collections.abc import Callable
from types import FrameType

import torch

_CALL_IMPL = torch.nn.Module._call_impl.__code__
# Module.__call__, which calls _call_impl: the same `self` in a frame of three locals, where
# reading _call_impl's f_locals builds a dict of its many (4x the time on Python 3.11)
_WRAPPED_CALL_IMPL = getattr(torch.nn.Module, "_wrapped_call_impl", None)
_WRAPPED = getattr(_WRAPPED_CALL_IMPL, "__code__", None)


def _module(frame: FrameType) -> torch.nn.Module:
    """The module of a _call_impl frame."""
    caller = frame.f_back
    holder = caller if caller is not None and caller.f_code is _WRAPPED else frame
    module: torch.nn.Module = holder.f_locals["self"]
    return module


Found = tuple[str | None, str | None]  # (path of the innermost module, class of the outermost)


class ModulePaths:
    def __init__(self) -> None:
        # the outermost module -> {id(submodule): its path}; dropped with the module
        self._names: weakref.WeakKeyDictionary[torch.nn.Module, dict[int, str]] = (
            weakref.WeakKeyDictionary())
        # id(a module that made a call) -> (a weak reference to it, what `of` found for it);
        # an entry goes with its module (the reference's callback)
        self._known: dict[int, tuple[weakref.ref[torch.nn.Module], Found]] = {}

    def at(self, frame: FrameType | None) -> Found:
        """What `of` says for a call made in `frame`, walking the stack only up to the
        innermost module's frame where that module has made a call before."""
        start = frame
        while frame is not None:
            if frame.f_code is _CALL_IMPL:
                module = _module(frame)
                known = self._known.get(id(module))
                if known is not None and known[0]() is module:
                    return known[1]
                found = self.of(start)
                key = id(module)
                self._known[key] = (weakref.ref(module, self._forgetter(key)), found)
                return found
            frame = frame.f_back
        return None, None

    def _forgetter(self, key: int) -> Callable[[weakref.ref[torch.nn.Module]], None]:
        def forget(_: weakref.ref[torch.nn.Module]) -> None:
            known = self._known.get(key)
            if known is not None and known[0]() is None:
                del self._known[key]
        return forget

    def of(self, frame: FrameType | None) -> Found:
        """(path of the innermost module, class of the outermost) for a call made in `frame`;
        (None, None) outside every module."""
        inner = outer = None
        while frame is not None:
            if frame.f_code is _CALL_IMPL:
                inner = inner or frame
                outer = frame
            frame = frame.f_back
        if inner is None or outer is None:
            return None, None
        module, root = _module(inner), _module(outer)
        names = self._names.get(root)
        if names is None or id(module) not in names:
            names = {}
            for name, m in root.named_modules(remove_duplicate=False):
                names.setdefault(id(m), name)  # a shared module: its first name
            self._names[root] = names
        return names.get(id(module)), type(root).__qualname__
