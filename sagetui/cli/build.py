"""`sagetui build PATH`, and `backend@src:PATH` variants built before a runner starts: the
CLI's side of sagetui/kernel_build (its progress lines, its failures as exit statuses)."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time

from sagetui.cli.errors import UsageError
from sagetui.core.build_facts import LeftOut
from sagetui.core.config import RunConfig
from sagetui.kernel_build.builder import build, plan
from sagetui.kernel_build.errors import BuildFailed, BuildInputError, BuildInterrupted
from sagetui.kernel_build.sources import plan_sources, resolve_sources
from sagetui.kernel_build.stop import forward_signals

# the backend of each architecture, when `sagetui build` is given none
_ARCH_BACKEND = {"8.0": "sage2-sm80", "8.6": "sage2-sm80", "8.9": "sage2-sm89",
                 "9.0": "sage2-sm90"}


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def report_failure(exc: BuildFailed) -> None:
    """The failed build's one block: what failed, then the compiler's first error."""
    _say(f"sagetui: {exc}")
    for line in exc.block:
        _say(f"    {line}")


def cmd_build(args: argparse.Namespace) -> int:
    """SIGINT, SIGTERM and SIGHUP stop the build (build/stop.py): one line, 128+N."""
    try:
        with forward_signals():
            return _build(args)
    except BuildInterrupted as exc:
        with contextlib.suppress(OSError):  # a terminal that hung up takes no line
            _say(f"sagetui: {exc}")
        return exc.status


def _build(args: argparse.Namespace) -> int:
    try:
        backends = args.backend or []
        if not backends:  # the arch decides: checked by a plan of any backend first
            first = plan(args.path, "sage2-sm89" if args.arch is None else
                         _ARCH_BACKEND.get(args.arch, "sage2-sm89"), arch=args.arch)
            backends = [_ARCH_BACKEND.get(first.arch.rstrip("a"), "sage2-sm89")]
        plans = [plan(args.path, b, arch=args.arch, flags=args.flags,
                      cxx_flags=args.cxx_flags, jobs=args.jobs) for b in backends]
    except BuildInputError as exc:
        raise UsageError(str(exc)) from None
    for p in plans:
        _say(p.describe())
        t0 = time.monotonic()
        try:
            facts = build(p, progress=lambda line: _say(f"  {line}"))
        except BuildFailed as exc:
            report_failure(exc)
            return 1
        except BuildInputError as exc:
            raise UsageError(str(exc)) from None
        how = ("cache hit" if facts.cache_hit else "built") + \
            f" in {time.monotonic() - t0:.1f} s (key {facts.key}, flags {facts.nvcc_flags!r})"
        _say(f"  {how}")
        print(f"{p.backend}@{facts.entry}")
    return 0


def build_sources(config: RunConfig, failed: dict[str, LeftOut] | None = None,
                  arch: str | None = None) -> RunConfig:
    """Every `backend@src:PATH` variant checked (UsageError) and built, its path then its
    cache entry; the progress on stderr. A variant whose build fails is left out with the
    compiler's error block, recorded in `failed` (its spec and why), and the others run
    (BuildFailed when none is left). `arch`: --arch, as `sagetui build` takes it. A signal
    stops the builds and the command before any run (BuildInterrupted)."""
    specs = {v.name: v for v in config.variants}

    def left_out(name: str, exc: BuildFailed) -> None:
        report_failure(exc)
        _say(f"build: variant {name} is left out of the run; the others go on")
        if failed is not None:
            failed[name] = LeftOut.of(specs[name], exc)

    try:
        with forward_signals():
            plans = plan_sources(config, arch=arch)
            return resolve_sources(config, plans, lambda line: _say(f"build: {line}"),
                                   on_failure=left_out)
    except BuildInputError as exc:
        raise UsageError(str(exc)) from None
    except BuildInterrupted as exc:  # main.py says it in one line: the signal's status
        raise BuildInterrupted(exc.signum, f"{exc.what}; the run never started") from None
