"""`sagetui build`'s options, apart from the command (cli/build.py), so that building the
parser for `--help` imports nothing of the builder or of core (test_cli.py)."""

from __future__ import annotations

import argparse

ARCH_HELP = ("the compute capability a SageAttention tree is built for (backend@src:PATH "
             "variants), e.g. 9.0 (default: TORCH_CUDA_ARCH_LIST, else this GPU's)")


def add_arch_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--arch`: `sagetui build`'s, and that of every command that builds the trees of its
    `backend@src:PATH` variants before it runs them (run, sweep, profile, the console)."""
    p.add_argument("--arch", metavar="X.Y", help=ARCH_HELP)


def add_build_command(sub: argparse._SubParsersAction,  # type: ignore[type-arg]
                      help: str) -> None:
    b = sub.add_parser(
        "build", help=help, description="Builds only the extension modules each backend loads, for "
        "one architecture, with -lineinfo, by the tree's own setup.py (build_ext), into "
        "$XDG_CACHE_HOME/sagetui/builds keyed by the sources, flags, torch, CUDA and "
        "compilers: an unchanged tree is a cache hit. Prints each backend's variant SPEC. "
        "Exit 0: built or found; 1: the build failed (the compiler's error lines); 2: bad "
        "input (not a tree, a backend it does not build, no compiler, no nvcc).")
    b.add_argument("path", metavar="PATH", help="a SageAttention checkout")
    # no `choices`: they live in core (build_facts.BACKEND_MODULES), which `--help` must not
    # import; a backend the tree does not build is refused in one line (build/tree.py)
    b.add_argument("--backend", action="append", metavar="B",
                   help="the backend to build for: sage2-sm80, sage2-sm89 or sage2-sm90 "
                   "(repeatable; default: the one of the arch)")
    add_arch_option(b)
    b.add_argument("--flags", default="", metavar='"..."',
                   help="nvcc flags appended after -lineinfo (NVCC_APPEND_FLAGS)")
    b.add_argument("--cxx-flags", default="", metavar='"..."',
                   help="host compiler flags appended (CXX_APPEND_FLAGS)")
    b.add_argument("--jobs", type=int, metavar="N", help="parallel compile jobs (MAX_JOBS)")
