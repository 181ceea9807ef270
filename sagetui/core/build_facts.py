"""What a variant built from a source tree records (`backend@src:PATH`, `sagetui build`):
the tree, its source hash, the flags, the tools, the build's time and whether the cache
answered, and the diff against the baseline's tree. Built by sagetui/kernel_build, carried on the
variant's spec (core/config.py) into its report entry."""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

# The extension modules each backend loads (runner/backends/sage2*.py: its `_qattn_*` and
# `_fused`, whose quantization kernels every CUDA path calls).
BACKEND_MODULES: dict[str, tuple[str, ...]] = {
    "sage2-sm80": ("_qattn_sm80", "_fused"),
    "sage2-sm89": ("_qattn_sm89", "_fused"),
    "sage2-sm90": ("_qattn_sm90", "_fused"),
}
PACKAGE = "sageattention"  # the package whose extensions a SageAttention tree declares
SOURCE_PREFIX = "src:"  # `backend@src:PATH`: a tree to build, not a built module


class _Facts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class FileDiff(_Facts):
    file: str  # relative to the trees' roots
    added: Annotated[int, Field(ge=0)] | None  # None: a binary file (git prints '-')
    deleted: Annotated[int, Field(ge=0)] | None


class TreeDiff(_Facts):
    """`git diff --no-index --numstat` of the two trees' files as they are on disk (working
    state, committed or not), over the files the build hashes (csrc/**, setup.py, the
    package's .py files): baseline -> this variant."""

    baseline: str  # the baseline variant's name
    baseline_source: str
    files: list[FileDiff]


class BuildFacts(_Facts):
    source: str  # the tree's absolute path
    source_sha256: str  # of the hashed files' names and contents (build/tree.py)
    key: str  # the cache key: the source hash, flags, arch, tools' versions
    modules: list[str]
    arch: str  # the compute capability built for, e.g. "9.0"
    arch_from: Literal["--arch", "TORCH_CUDA_ARCH_LIST", "gpu"]
    nvcc_flags: str  # NVCC_APPEND_FLAGS as built (-lineinfo first)
    cxx_flags: str  # CXX_APPEND_FLAGS as built
    torch: str
    torch_cuda: str | None = None  # None: a torch without CUDA (a report leaves it out)
    nvcc: str  # the release line of `nvcc --version`
    cxx: str  # the first line of `c++ --version` (the compiler torch's build uses)
    build_s: Annotated[float, Field(ge=0)]  # the build that made the cache entry
    cache_hit: bool
    entry: str  # the cache entry's folder: the variant's module path
    diff_vs_baseline: TreeDiff | None = None


class _Spec(Protocol):
    """What LeftOut reads of a variant (core/config.VariantSpec, which imports this module)."""

    @property
    def backend(self) -> str: ...

    @property
    def spec(self) -> str: ...


class LeftOut(NamedTuple):
    """A source variant whose build failed: asked for, never run (core/run/assemble.py's
    with_left_out puts it in the run's report)."""

    backend: str
    spec: str
    why: str  # the build's failure, one line

    @classmethod
    def of(cls, variant: _Spec, failure: Exception) -> LeftOut:
        return cls(variant.backend, variant.spec, str(failure))
