"""The manifest of a capture (manifest.json): what the program called, which calls were saved
and how to check their files. One model for the recorder that writes it, the check that reads
it back (workload.py) and the JSON Schema beside it (schema.json, `sagetui schema capture`)."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator

from sagetui.core.blocks.base import Count, Model, Sha256

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"

Function = Literal[
    "torch.nn.functional.scaled_dot_product_attention",
    "sageattention.sageattn",
    "sageattention.sageattn_qk_int8_pv_fp16_triton",
    "sageattention.sageattn_qk_int8_pv_fp16_cuda",
    "sageattention.sageattn_qk_int8_pv_fp8_cuda",
    "sageattention.sageattn_qk_int8_pv_fp8_cuda_sm90",
    "sageattention.sageattn_varlen",
]
FUNCTIONS: tuple[str, ...] = get_args(Function)
VARLEN = "sageattention.sageattn_varlen"

# torch's names for the dtypes a tensor file may hold (what `str(torch.float16)` says, less
# "torch."), each with safetensors' code for it and its bytes per element
DTYPES: dict[str, tuple[str, int]] = {
    "float16": ("F16", 2), "bfloat16": ("BF16", 2), "float32": ("F32", 4),
    "float64": ("F64", 8), "float8_e4m3fn": ("F8_E4M3", 1), "float8_e5m2": ("F8_E5M2", 1),
    "int8": ("I8", 1), "uint8": ("U8", 1), "int16": ("I16", 2), "int32": ("I32", 4),
    "int64": ("I64", 8), "bool": ("BOOL", 1),
}
DType = Literal["float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
                "int8", "uint8", "int16", "int32", "int64", "bool"]

Bytes = Annotated[int, Field(ge=0)]  # beyond Count's 10^9: a capture may hold gigabytes
QKV = ("q", "k", "v")
CU_SEQLENS = ("cu_seqlens_q", "cu_seqlens_k")  # a varlen call's, saved beside q, k, v
Mask = Literal["none", "bool", "additive", "causal"]


def file_name(index: int) -> str:
    """A saved call's tensor file, named by its index in the program's calls."""
    return f"call-{index:06d}.safetensors"


MAX_DIMS = 8  # a tensor of more dimensions is no attention call's


class Tensor(Model):
    shape: list[Count] = Field(max_length=MAX_DIMS)
    dtype: DType
    sha256: Sha256 = Field(description="of the tensor's raw contiguous bytes, as stored")

    @property
    def nbytes(self) -> int:
        n = DTYPES[self.dtype][1]
        for d in self.shape:
            n *= d
        return n


class Varlen(Model):
    """sageattn_varlen's lengths: q, k and v pack the sequences as [tokens, heads, head_dim],
    cu_seqlens_q/_k (saved tensors) hold where each starts."""

    max_seqlen_q: Annotated[int, Field(ge=0)]
    max_seqlen_k: Annotated[int, Field(ge=0)]


class Call(Model):
    """One saved call."""

    index: Count = Field(description="the call's place among all the program's calls, from 0")
    file: str = Field(description="its tensors (safetensors): q, k, v (+ cu_seqlens_q/_k)")
    function: Function
    tensors: dict[str, Tensor]
    dtype: DType = Field(description="q's")
    layout: Literal["NHD", "HND"] = Field(description="SDPA: HND, [..., heads, tokens, dim]; "
                                          "SageAttention: its tensor_layout argument")
    is_causal: bool
    scale: float | None = Field(description="the softmax scale given; None: the default, "
                                "1/sqrt(head_dim)")
    mask: Mask = Field(description="none, causal (is_causal), or SDPA's attn_mask: bool "
                       "(True: attend) or additive (added to the scores)")
    gqa: bool = Field(description="SDPA's enable_gqa, or fewer kv heads than q heads")
    dropout_p: Annotated[float, Field(ge=0, le=1)] = 0.0
    varlen: Varlen | None = None
    module: str | None = Field(description="the innermost torch.nn.Module running the call, by "
                               "its name in the outermost one (blocks.2.attn; '' the outermost "
                               "itself); None outside every module")
    module_root: str | None = Field(description="the outermost module's class")
    device: str
    count: Annotated[int, Field(ge=1)] = Field(description="how many of the program's calls "
                                              "had this call's signature (its weight)")
    signature: Annotated[str, Field(pattern=r"^[0-9a-f]{12}$")] = Field(
        description="the same for calls alike in function, shapes, dtype, layout, causal, "
                    "scale, mask, gqa, dropout, varlen lengths and module")

    @model_validator(mode="after")
    def _consistent(self) -> Call:
        names = QKV + (CU_SEQLENS if self.function == VARLEN else ())
        if sorted(self.tensors) != sorted(names):
            raise ValueError(f"call {self.index} lists tensors {sorted(self.tensors)}; a "
                             f"{self.function} call has {list(names)}")
        if (self.function == VARLEN) != (self.varlen is not None):
            raise ValueError(f"call {self.index}: varlen lengths go with {VARLEN} calls only")
        if self.file != file_name(self.index):
            raise ValueError(f"call {self.index}: its file is {file_name(self.index)}, not "
                             f"{self.file!r}")
        if self.dtype != self.tensors["q"].dtype:
            raise ValueError(f"call {self.index}: dtype {self.dtype} is not q's "
                             f"({self.tensors['q'].dtype})")
        if (self.mask == "causal") != self.is_causal:
            raise ValueError(f"call {self.index}: mask {self.mask!r} with is_causal "
                             f"{self.is_causal}")
        return self

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tensors.values())


class Settings(Model):
    """What was asked to be saved (docs/workloads.md, "Capture your model's attention calls")."""

    calls: str | None = Field(description="--calls as given; None: every call")
    max_calls: Annotated[int, Field(ge=1)] | None = None
    max_bytes: Annotated[int, Field(ge=1)] | None = None


class BudgetCut(Model):
    """Saving stopped at a call that would have passed --max-bytes; the program ran on."""

    index: Count = Field(description="the call refused")
    call_bytes: Bytes
    saved_bytes: Bytes
    max_bytes: Annotated[int, Field(ge=1)]


class Manifest(Model):
    schema_version: Literal[1] = 1  # SCHEMA_VERSION
    tool: str
    created: str = Field(description="when the capture ended, ISO 8601 with its time zone")
    torch: str
    sageattention: str | None = Field(description="its version, where the program imported it")
    device: str | None = Field(description="the first call's device (cpu, cuda:0)")
    device_name: str | None = Field(description="that GPU's name")
    argv: list[str] = Field(description="the program as it was run")
    settings: Settings
    calls_seen: Count = Field(description="every attention call the program made")
    calls_selected: Count = Field(description="those --calls matched (saved, or not for "
                                  "--max-calls or the budget)")
    bytes_saved: Bytes = Field(description="the saved tensors' bytes")
    budget_cut: BudgetCut | None = None
    forked_calls: Count = Field(0, description="attention calls made in forked processes "
                                "(multiprocessing with fork, DataLoader workers): counted, not "
                                "recorded, and not among calls_seen")
    forked_pids: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=list, description="the forked processes that made them")
    calls: list[Call]

    @model_validator(mode="after")
    def _consistent(self) -> Manifest:
        indices = [c.index for c in self.calls]
        if indices != sorted(set(indices)):
            raise ValueError("calls must be in the program's order, each index once")
        if indices and indices[-1] >= self.calls_seen:
            raise ValueError(f"call {indices[-1]} is beyond the {self.calls_seen} calls seen")
        if not len(self.calls) <= self.calls_selected <= self.calls_seen:
            raise ValueError(f"{len(self.calls)} calls saved, {self.calls_selected} selected "
                             f"and {self.calls_seen} seen do not add up")
        counts: dict[str, int] = {}
        for c in self.calls:  # a signature's count: how many of the calls seen were like it
            if c.count > self.calls_seen:
                raise ValueError(f"call {c.index}: count {c.count} is more than the "
                                 f"{self.calls_seen} calls seen")
            if counts.setdefault(c.signature, c.count) != c.count:
                raise ValueError(f"call {c.index}: count {c.count}, but another call of its "
                                 f"signature {c.signature} has {counts[c.signature]}")
        if sum(counts.values()) > self.calls_seen:
            raise ValueError(f"the signatures' counts add up to {sum(counts.values())}, more "
                             f"than the {self.calls_seen} calls seen")
        saved = sum(c.nbytes for c in self.calls)
        if saved != self.bytes_saved:
            raise ValueError(f"bytes_saved is {self.bytes_saved}; the calls' tensors hold "
                             f"{saved}")
        return self
