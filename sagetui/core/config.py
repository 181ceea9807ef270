"""The run configuration: what to measure and how. Validated once, passed explicitly."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from sagetui.core import affinity, distributions
from sagetui.core.build_facts import SOURCE_PREFIX, BuildFacts
from sagetui.core.options import OPTIONS, VARLEN_BACKENDS, option_value, validate_options
from sagetui.core.run_fields import CPU_DEFAULT_SHAPE, FIELDS, REFERENCE_SHAPE, REQUIRED
from sagetui.core.suggest import did_you_mean

BACKEND_NAMES = tuple(OPTIONS)
MAX_HEAD_DIM = 128


def about(field: str) -> dict[str, Any]:
    """`Field`'s default (where the field has one), description and metadata naming the
    option: run_fields.py's, the one table the CLI builds its options from. A field without a
    default says so itself (`Field(..., **about(...))`), so that mypy knows it is required."""
    o = FIELDS[field]
    out: dict[str, Any] = dict(description=o.text, json_schema_extra={"option": o.flag})
    if isinstance(o.default, dict):
        out["default_factory"] = dict
    elif o.default is not REQUIRED:
        out["default"] = o.default
    return out


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True, defer_build=True)


class Shape(_Strict):
    batch: int = Field(**about("batch"), ge=1, le=4096)
    heads: int = Field(..., **about("heads"), ge=1, le=4096)
    kv_heads: int | None = Field(**about("kv_heads"), ge=1, le=4096)
    q_len: int = Field(..., **about("q_len"), ge=1, le=10_000_000)
    kv_len: int | None = Field(**about("kv_len"), ge=1, le=10_000_000)
    head_dim: int = Field(..., **about("head_dim"), ge=1, le=MAX_HEAD_DIM)
    dtype: Literal["fp16", "bf16"] = Field(**about("dtype"))
    layout: Literal["NHD", "HND"] = Field(**about("layout"))
    causal: bool = Field(**about("causal"))
    # packed sequences (`--seqlens`, a captured sageattn_varlen call): q, k and v hold them one
    # after another as [1, tokens, heads, head_dim] (NHD, batch 1, q_len/kv_len the sums), each
    # sequence attending only to itself. Written only when set.
    seqlens: tuple[Annotated[int, Field(ge=1)], ...] | None = Field(
        **about("seqlens"), min_length=1, max_length=100_000)
    kv_seqlens: tuple[Annotated[int, Field(ge=1)], ...] | None = Field(
        **about("kv_seqlens"), min_length=1, max_length=100_000)
    # what the synthetic q/k/v are drawn from (core/distributions.py; `--inputs synthetic:NAME`):
    # a field of the shape, so that every copy of it (sweep points, the tail study, the
    # reference shape on a GPU) draws from the same one and a warm runner keeps inputs only
    # for the same one. Written only when it is not the default, so that a configuration of
    # standard-normal inputs reads as it always has (the report's `inputs` block names it).
    distribution: str = distributions.DEFAULT

    @field_validator("distribution")
    @classmethod
    def _distribution(cls, v: str) -> str:
        return distributions.check(v)

    @model_serializer(mode="wrap")
    def _without_default(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("distribution") == distributions.DEFAULT:
            del data["distribution"]
        for key in ("seqlens", "kv_seqlens"):
            if data.get(key) is None:
                data.pop(key, None)
        return data

    @model_validator(mode="after")
    def _gqa(self) -> Shape:
        if self.heads % self.n_kv_heads:
            raise ValueError(
                f"q heads ({self.heads}) must be a multiple of kv heads ({self.n_kv_heads})"
            )
        if self.seqlens is None:
            if self.kv_seqlens is not None:
                raise ValueError("--kv-seqlens needs --seqlens")
            return self
        if self.layout != "NHD":
            raise ValueError("--seqlens packs the sequences as sageattn_varlen takes them, "
                             "[tokens, heads, head_dim]: the layout is NHD, not HND")
        if self.batch != 1:
            raise ValueError(f"--seqlens packs the sequences into one: --batch is 1, not "
                             f"{self.batch} (give each sequence's length instead)")
        kv = self.n_kv_seqlens
        if len(kv) != len(self.seqlens):
            raise ValueError(f"--kv-seqlens has {len(kv)} lengths, --seqlens "
                             f"{len(self.seqlens)}")
        if self.q_len != sum(self.seqlens):
            raise ValueError(f"--q-len {self.q_len} is not the sum of --seqlens "
                             f"({sum(self.seqlens)})")
        if self.n_kv_len != sum(kv):
            raise ValueError(f"--kv-len {self.n_kv_len} is not the sum of the sequences' "
                             f"key/value lengths ({sum(kv)})")
        if self.causal and tuple(kv) != tuple(self.seqlens):
            raise ValueError("causal packed sequences need each key/value length equal to its "
                             "query length (sageattn_varlen's rule)")
        return self

    @property
    def n_kv_seqlens(self) -> tuple[int, ...]:
        """The packed sequences' key/value lengths (empty when not packed)."""
        return tuple(self.kv_seqlens or self.seqlens or ())

    @property
    def n_kv_heads(self) -> int:
        return self.kv_heads or self.heads

    @property
    def n_kv_len(self) -> int:
        return self.kv_len or self.q_len

    def tensor_shapes(self) -> dict[str, list[int]]:
        """q/k/v shapes in the configured layout, as the reports write them."""
        def shape(n: int, h: int) -> list[int]:
            if self.layout == "NHD":
                return [self.batch, n, h, self.head_dim]
            return [self.batch, h, n, self.head_dim]
        return {
            "q_shape": shape(self.q_len, self.heads),
            "k_shape": shape(self.n_kv_len, self.n_kv_heads),
            "v_shape": shape(self.n_kv_len, self.n_kv_heads),
        }

    def describe(self) -> str:
        kv = f"/{self.n_kv_heads}kv" if self.n_kv_heads != self.heads else ""
        kvl = f" kv {self.n_kv_len}" if self.n_kv_len != self.q_len else ""
        causal = " causal" if self.causal else ""
        packed = f" {len(self.seqlens)} packed" if self.seqlens else ""
        return (f"{self.batch}x{self.q_len}x{self.heads}{kv}x{self.head_dim}{kvl}{packed} "
                f"{self.dtype} {self.layout}{causal}{self.inputs_text}")

    @property
    def inputs_text(self) -> str:
        """' synthetic:NAME' for inputs other than the default, else ''."""
        d = self.distribution
        return "" if d == distributions.DEFAULT else f" {distributions.PREFIX}{d}"


_SPEC = re.compile(r"^(?P<backend>[a-z0-9-]+)(\[(?P<opts>[^\]]*)\])?(@(?P<path>.+))?$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")


class VariantSpec(_Strict):
    """A backend, its options, and optionally another build of its extension module."""

    name: str
    backend: str
    path: str | None = None
    options: dict[str, str | float | int | bool] = Field(default_factory=dict)
    # a variant built from a source tree (`backend@src:PATH`, sagetui/kernel_build): what the build
    # was, once `path` names its cache entry. Written only when set, so that every other
    # configuration reads as it always has.
    build: BuildFacts | None = None

    @model_serializer(mode="wrap")
    def _without_build(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("build") is None:
            data.pop("build", None)
        return data

    @property
    def source(self) -> str | None:
        """The source tree of `backend@src:PATH` not yet built, else None."""
        if self.path and self.path.startswith(SOURCE_PREFIX):
            return self.path.removeprefix(SOURCE_PREFIX)
        return None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"variant name {v!r}: use letters, digits, '_', '.', '+', '-'")
        return v

    @field_validator("backend")
    @classmethod
    def _backend(cls, v: str) -> str:
        if v not in BACKEND_NAMES:
            hint = did_you_mean(v, BACKEND_NAMES)
            raise ValueError(f"unknown backend {v!r}" + (f"; {hint}" if hint else "")
                             + f" (known: {', '.join(BACKEND_NAMES)})")
        return v

    @model_validator(mode="after")
    def _options(self) -> VariantSpec:
        validate_options(self.backend, self.options)
        return self

    @property
    def spec(self) -> str:
        opts = ",".join(f"{k}={option_value(v)}" for k, v in self.options.items())  # as typed
        return self.backend + (f"[{opts}]" if opts else "") + (f"@{self.path}" if self.path else "")

    @classmethod
    def parse(cls, text: str) -> VariantSpec:
        """`NAME=SPEC` or `SPEC`, SPEC = backend[opt=value,...][@/path/to/module.so] or
        backend[...]@src:/path/to/SageAttention (a tree to build first)."""
        name, spec = split_variant(text)
        m = _SPEC.match(spec)
        if not m:
            raise ValueError(f"cannot parse variant {text!r}: expected NAME=backend[opts]@path")
        opts: dict[str, Any] = {}
        for item in filter(None, (m.group("opts") or "").split(",")):
            k, eq, v = item.partition("=")
            if not eq:
                raise ValueError(f"variant option {item!r} needs key=value")
            opts[k.strip()] = _scalar(v.strip())
        return cls(name=name or m.group("backend"), backend=m.group("backend"),
                   path=m.group("path"), options=opts)


def shape_of(raw: object) -> Shape | None:
    """A report's `config.shape` (free-form JSON) as the Shape it ran, each field it leaves out
    at its default; None where it holds none or one the run could not have had. `check` reads a
    shape only through it, never assuming a layout, batch or dtype of its own."""
    try:
        return Shape.model_validate(raw) if isinstance(raw, dict) else None
    except ValidationError:
        return None


def split_variant(text: str) -> tuple[str, str]:
    """`NAME=SPEC` or `SPEC` -> (NAME, SPEC), NAME '' when not given; nothing is checked (the
    run editor splits a row this way before the CLI's rules judge it)."""
    name, _, spec = text.partition("=") if "=" in text.split("[")[0] else ("", "", text)
    return name.strip(), spec.strip()


def _scalar(v: str) -> str | float | int | bool:
    if v.lower() in ("true", "false"):
        return v.lower() == "true"
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


# what an inputs file may be (runner/inputs.from_file reads each without pickle)
INPUT_SUFFIXES = (".safetensors", ".npz", ".npy", ".pt", ".pth")
_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


class RunConfig(_Strict):
    shape: Shape
    variants: list[VariantSpec] = Field(..., **about("variants"), min_length=1)
    # Chosen by the session once the runner has said what this machine has (`resolve_auto`):
    # `auto` when no backend was named (the best available one), `auto_shape` when no shape
    # was given (the reference shape on a GPU, the small CPU shape otherwise).
    auto: bool = False
    auto_shape: bool = False
    baseline: str | None = Field(**about("baseline"))  # defaults to the first variant
    seed: int = Field(**about("seed"), ge=0)
    warmup: int = Field(**about("warmup"), ge=0, le=10_000)
    rounds: int = Field(**about("rounds"), ge=1, le=100_000)
    iterations: int = Field(**about("iterations"), ge=1, le=1_000_000)
    cold: bool = Field(**about("cold"))
    tail_study: bool = Field(**about("tail_study"))
    tail_iterations: int = Field(**about("tail_iterations"), ge=1, le=10_000)
    device: str = Field(**about("device"))
    inputs_path: str | None = Field(**about("inputs_path"))
    metadata: dict[str, Any] = Field(**about("metadata"))
    # comparisons
    threshold_percent: float | None = Field(**about("threshold_percent"), gt=0, le=100)
    # from `sagetui calibrate` (an A/A run): the default threshold is max(1 %, 2 x this)
    noise_floor_percent: float | None = Field(**about("noise_floor_percent"), ge=0, le=100)
    until_ci_percent: float | None = Field(**about("until_ci_percent"), gt=0, le=100)
    max_rounds: int | None = Field(**about("max_rounds"), ge=1, le=100_000)
    affinity: str | None = Field(**about("affinity"))  # core/affinity.py
    # seconds the runner may stay silent during a block before the session calls it hung
    watchdog_s: float = Field(**about("watchdog_s"), gt=0)

    @field_validator("affinity")
    @classmethod
    def _affinity(cls, v: str | None) -> str | None:
        return None if v is None else affinity.cpus_text(affinity.parse_cpus(v))

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        if not _DEVICE.match(v):
            raise ValueError(f"{v!r}: give auto, cpu, cuda or cuda:N")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        names = [v.name for v in self.variants]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise ValueError(f"variant names must be unique: {', '.join(sorted(dupes))}")
        if self.baseline is not None and self.baseline not in names:
            hint = did_you_mean(self.baseline, names)
            raise ValueError(f"baseline {self.baseline!r} is not a variant"
                             + (f"; {hint}" if hint else "") + f" (the variants: "
                             f"{', '.join(names)})")
        if self.inputs_path and self.shape.distribution != distributions.DEFAULT:
            raise ValueError("inputs come from a file or from synthetic:NAME, not both")
        packed = self.shape.seqlens is not None
        if packed and self.tail_study:
            raise ValueError("--tail-study times one sequence at lengths around its tiles: "
                             "not with --seqlens")
        for v in self.variants:
            if packed and v.backend not in VARLEN_BACKENDS:
                raise ValueError(f"variant {v.name}: {v.backend} runs no packed sequences "
                                 f"(--seqlens; those that do: {', '.join(VARLEN_BACKENDS)})")
            if not packed and v.backend == "sage2-varlen":
                raise ValueError(f"variant {v.name}: sage2-varlen runs packed sequences: give "
                                 "--seqlens")
        return self

    def inputs_block(self) -> dict[str, Any]:
        """The report's `inputs`: the file, or the distribution drawn from, its parameters
        and the seed."""
        if self.inputs_path:
            return {"file": self.inputs_path}
        return {**distributions.TABLE[self.shape.distribution].block(), "seed": self.seed}

    @property
    def baseline_name(self) -> str:
        return self.baseline or self.variants[0].name

    @property
    def round_limit(self) -> int:
        """The most rounds a run makes: --rounds, or with --until-ci --max-rounds (default: the
        larger of --rounds and 50)."""
        if self.until_ci_percent is None:
            return self.rounds
        return self.max_rounds or max(self.rounds, 50)


# Preference order of the embedded default on a GPU node: SageAttention first.
GPU_PREFERENCE = ("sage2-auto", "sage2-sm90", "sage2-sm89", "sage-triton", "sdpa")


def default_config(**overrides: Any) -> RunConfig:
    """The embedded default before the runner has said what it can run: the reference backend
    at the CPU shape, marked `auto` so that a GPU node upgrades it."""
    fields: dict[str, Any] = {"shape": Shape(**CPU_DEFAULT_SHAPE),
                              "variants": [VariantSpec(name="reference", backend="reference")],
                              "auto": True, "auto_shape": True}
    fields.update(overrides)
    return RunConfig(**fields)


def resolve_auto(config: RunConfig, device: str, backends: dict[str, str | None]) -> RunConfig:
    """On a GPU: the best available backend if none was named, the reference shape if no
    shape was given. Elsewhere the configuration stays as it is (the reference backend at the
    CPU shape)."""
    update: dict[str, Any] = {"auto": False, "auto_shape": False}
    if device.startswith("cuda"):
        if config.auto_shape:
            update["shape"] = Shape(**REFERENCE_SHAPE, distribution=config.shape.distribution)
        if config.auto:
            order = ("sage2-varlen",) if config.shape.seqlens else GPU_PREFERENCE
            best = next((n for n in order if backends.get(n, "missing") is None), None)
            if best:
                update.update(variants=[VariantSpec(name=best, backend=best)], baseline=None)
    return config.model_copy(update=update)
