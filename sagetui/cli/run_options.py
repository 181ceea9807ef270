"""Command-line options -> a validated RunConfig, or one clear line (exit 2)."""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sagetui.cli.errors import UsageError
from sagetui.cli.outputs import check_outputs as check_outputs  # its home is cli/outputs.py
from sagetui.core import affinity, distributions, paths
from sagetui.core.config import (
    BACKEND_NAMES,
    CPU_DEFAULT_SHAPE,
    RunConfig,
    Shape,
    VariantSpec,
    default_config,
    resolve_auto,
)
from sagetui.core.options import CPU_BACKENDS, missing_module
from sagetui.core.report.io import loads_strict
from sagetui.core.run_fields import FIELDS
from sagetui.core.suggest import did_you_mean

if TYPE_CHECKING:  # sagetui.kernel_build only where a tree is built
    from sagetui.core.build_facts import LeftOut

# each field's option, which a refused value's line names
OPTION_NAMES = {field: o.flag for field, o in FIELDS.items()}
SHAPE_OPTIONS = {field: o.flag for field, o in FIELDS.items() if o.shape}
_BUILT = ("variants", "metadata")  # fields made of their options here (_variants, _metadata)


def _one_line(exc: ValidationError, names: dict[str, str]) -> str:
    err = exc.errors(include_url=False)[0]
    loc = [str(p) for p in err["loc"]]
    opt = next((names[p] for p in loc if p in names), None)
    msg = err["msg"].removeprefix("Value error, ")
    return f"{opt}: {msg}" if opt else msg


def _variants(args: argparse.Namespace) -> list[VariantSpec]:
    out: list[VariantSpec] = []
    for b in args.backend or []:
        if b not in BACKEND_NAMES:
            raise UsageError(unknown_backend(b))
        out.append(VariantSpec(name=b, backend=b))
    for text in args.variant or []:
        try:
            spec = VariantSpec.parse(text)
        except ValidationError as exc:
            msg = _one_line(exc, {})
            if "unknown backend" in msg:
                spec = text.partition("=")[2] or text
                raise UsageError(unknown_backend(re.split(r"[\[@]", spec)[0])) from None
            raise UsageError(f"--variant {text}: {msg}") from None
        except ValueError as exc:
            raise UsageError(f"--variant: {exc}") from None
        if spec.path and spec.source is None and not os.path.exists(spec.path):
            raise UsageError(f"--variant {text}: {spec.path} does not exist")
        out.append(spec)
    for spec in out:
        why = missing_module(spec.backend, spec.options)
        if why:
            raise UsageError(f"variant {spec.name}: {why}")
    return out


def no_cuda_here(device: str) -> str | None:
    """Why no CUDA backend can run here, known without starting a runner (what `sagetui
    doctor` would say): `--device cpu`, or a CPU-only build of torch (its version.py, read,
    not imported). None when CUDA may be there (the runner then finds out)."""
    if device == "cpu":
        return "needs a CUDA device; asked for 'cpu'"
    from sagetui.kernel_build.errors import BuildInputError
    from sagetui.kernel_build.tools import torch_versions

    try:
        version, cuda = torch_versions()
    except (BuildInputError, OSError):
        return None
    return None if cuda else f"CUDA is not available to torch {version} (it is a CPU-only build)"


def settled_here(config: RunConfig) -> RunConfig:
    """An `auto` configuration settled without a runner where no CUDA can run here (a CPU-only
    torch, --device cpu), as a runner would settle it (config.resolve_auto): the console's
    header then names what `a` and `p` run, and they no longer ask for a run first."""
    if (config.auto or config.auto_shape) and no_cuda_here(config.device) is not None:
        return resolve_auto(config, "cpu", {})
    return config


def refuse_unrunnable(variants: list[VariantSpec], device: str) -> None:
    """UsageError before a runner starts when no variant can run on this machine, as the
    runner would find after its start-up; with a variant that can, the run goes on and the
    others are reported failed, as they would be."""
    if not variants or any(v.backend in CPU_BACKENDS or v.source for v in variants):
        return  # a source variant's tree and build are checked first, as they are elsewhere
    why = no_cuda_here(device)
    if why is None:
        return
    names = ", ".join(dict.fromkeys(v.spec for v in variants))
    raise UsageError(f"nothing can run here: {names}: {why}; the reference backend runs on "
                     "the CPU (--backend reference), and `sagetui doctor` says what runs here")


def refuse_predicted(args: argparse.Namespace) -> None:
    """The refusals known from the options alone, made by main.py before a command starts a
    runner (or builds a source variant that could not run here). Not where the runners run
    elsewhere (`sweep --slurm`: on the cluster's nodes) or none runs (`calibrate --list`)."""
    pin = getattr(args, "affinity", None)  # this machine's CPUs (a cluster's node has its own)
    if pin is not None and not getattr(args, "slurm", False):
        if (why := affinity.refusal(pin)) is not None:
            raise UsageError(why)
        if (caution := affinity.crowded(pin)) is not None:
            print(f"sagetui: {caution}", file=sys.stderr)
    if getattr(args, "slurm", False) or getattr(args, "list", False) \
            or getattr(args, "clear", False) or getattr(args, "workload", None) \
            or getattr(args, "calls", None):
        return  # a replayed capture's calls are judged by its own rules first (workload.py)
    inputs = getattr(args, "inputs", None)
    if inputs and not inputs.startswith(distributions.PREFIX):
        if args.command != "sweep":
            _config(args)  # a file that is there, its shapes the configured shape's
        refuse_inputs_format(Path(inputs))
    if getattr(args, "variant", None) is None and getattr(args, "backend", None) is None:
        return
    # the options' own rules first (a shape, packed sequences), as they come without this;
    # a sweep's lengths are axes, which its command reads
    variants = _variants(args) if args.command == "sweep" else _config(args).variants
    device = getattr(args, "device", None) or "auto"
    if device.startswith("cuda"):  # asked for by name: refused here as the runner would
        why = no_cuda_here(device)
        if why:
            raise UsageError(f"--device {device}: {why}")
    refuse_unrunnable(variants, device)


def unknown_backend(name: str) -> str:
    """The closest backends' names, every backend, and what runs here: those that cannot,
    grouped by why (asks the runner), so that one reason is said once."""
    hint = did_you_mean(name, BACKEND_NAMES)
    line = f"unknown backend {name!r}" + (f"; {hint}" if hint else "") \
        + f" (known: {', '.join(BACKEND_NAMES)})"
    try:
        from sagetui.session.probe import probe

        avail = probe(timeout=60).get("backends", {})
    except Exception:
        return line
    here = [n for n, why in avail.items() if why is None]
    by_why: dict[str, list[str]] = {}
    for n, why in avail.items():
        if why is not None:
            by_why.setdefault(str(why), []).append(n)
    not_here = "; ".join(f"{', '.join(names)}: {why}" for why, names in by_why.items())
    return f"{line}. Available here: {', '.join(here) or 'none'}" + (
        f"; not here: {not_here}" if not_here else "")


def _metadata(items: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise UsageError(f"--metadata {item!r}: expected KEY=VALUE")
        try:  # a JSON value; NaN, Infinity and 1e999 stay text (a report holds no such number)
            out[k] = loads_strict(v)
        except ValueError:
            out[k] = v
    return out


def shape_options_given(args: argparse.Namespace) -> dict[str, Any]:
    """The shape's fields whose options were given, with their values."""
    # `--causal` is a flag (False when absent); `--heads 0` must still count as given
    return {field: v for field, o in FIELDS.items()
            if o.shape and (v := getattr(args, o.dest, None)) is not None and v is not False}


def packed_lengths(shape_given: dict[str, Any]) -> dict[str, Any]:
    """With --seqlens (--kv-seqlens) and no --q-len (--kv-len): the lengths' sums, the packed
    tensors' tokens; given, Shape checks that they are."""
    out = dict(shape_given)
    if out.get("seqlens"):
        out.setdefault("q_len", sum(out["seqlens"]))
        if out.get("kv_seqlens") and sum(out["kv_seqlens"]) != out["q_len"]:
            out.setdefault("kv_len", sum(out["kv_seqlens"]))  # unset: --q-len
    return out


def config_from_args(args: argparse.Namespace, build: bool | str = True,
                     build_failed: dict[str, LeftOut] | None = None) -> RunConfig:
    """`build`: each `backend@src:PATH` variant is built (or found in the cache) now and
    points at its build, for `args.arch` when given (a variant whose build fails is left
    out, recorded in `build_failed`); "later": each tree is checked now and built by the
    console, in a worker; False: such a variant is refused (the console's run editor: a
    build of minutes does not belong in its thread)."""
    config = _config(args)
    if not any(v.source for v in config.variants):
        if getattr(args, "arch", None):  # a build's option: nothing here is built
            raise UsageError("--arch is the architecture a backend@src:PATH variant is built "
                             "for: no variant here is built from a tree")
        return config
    if build == "later":
        from sagetui.kernel_build.errors import BuildInputError
        from sagetui.kernel_build.sources import plan_sources

        try:
            plan_sources(config, arch=getattr(args, "arch", None))
        except BuildInputError as exc:
            raise UsageError(str(exc)) from None
        return config
    if not build:
        name = next(v.name for v in config.variants if v.source)
        raise UsageError(f"variant {name}: build its tree first (sagetui build PATH) and give "
                         "the path it prints")
    from sagetui.cli.build import build_sources

    return build_sources(config, build_failed, arch=getattr(args, "arch", None))


def _config(args: argparse.Namespace) -> RunConfig:
    variants = _variants(args)
    if args.noise_floor is not None and args.threshold is None:
        from sagetui.core.statistics.threshold import MAX_NOISE_FLOOR_PERCENT, NoiseTooLarge

        if args.noise_floor > MAX_NOISE_FLOOR_PERCENT:  # too large to judge with (the rule)
            raise UsageError(f"--noise-floor: {NoiseTooLarge(args.noise_floor)}")
    shape_given = packed_lengths(shape_options_given(args))
    try:  # `--inputs synthetic:NAME` names a distribution of the shape's, not a file
        distribution = distributions.parse(args.inputs or "") or distributions.DEFAULT
    except ValueError as exc:
        raise UsageError(f"--inputs: {exc}") from None
    try:
        common: dict[str, Any] = {field: getattr(args, o.dest) for field, o in FIELDS.items()
                                  if not o.shape and field not in _BUILT}
        if args.inputs and args.inputs.startswith(distributions.PREFIX):
            common["inputs_path"] = None
        elif args.inputs:
            refuse_inputs_file(Path(args.inputs))
        shape = Shape(**{**CPU_DEFAULT_SHAPE, **shape_given}, distribution=distribution)
        if common["inputs_path"]:
            refuse_inputs_shape(Path(common["inputs_path"]), shape)
        common["metadata"] = _metadata(args.metadata)
        # without a backend: the best one the runner finds; without a shape (and without input
        # files, which bring theirs): the reference shape on a GPU, the small one on a CPU
        auto_shape = not shape_given and not common["inputs_path"]
        if not variants and auto_shape:
            return default_config(shape=shape, **common)
        # a stored calibration is looked up by the session once the runner has named the GPU
        return RunConfig(shape=shape, auto=not variants, auto_shape=auto_shape,
                         variants=variants or [VariantSpec(name="reference",
                                                           backend="reference")],
                         **common)
    except ValidationError as exc:
        raise UsageError(_one_line(exc, OPTION_NAMES)) from None


def refuse_inputs_file(path: Path) -> None:
    """UsageError for an --inputs that cannot be an inputs file, before a runner starts."""
    from sagetui.core.config import INPUT_SUFFIXES

    if path.is_dir():
        hint = f"; a capture: --workload {path}" if (path / "manifest.json").is_file() else ""
        raise UsageError(f"--inputs: {path} is a directory, not an inputs file "
                         f"({', '.join(INPUT_SUFFIXES)}){hint}")
    if not path.is_file():
        raise UsageError(f"--inputs: {path} does not exist")


def refuse_inputs_shape(path: Path, shape: Shape) -> None:
    """UsageError for an inputs file whose q, k or v is not the configured shape (where its
    shapes are read without torch: not a .pt file's), naming the layout that would fit."""
    from sagetui.core.capture.inputs_file import layout_hint, shape_mismatch, stored_shapes

    shapes = stored_shapes(path)
    why = shape_mismatch(shapes, shape) if shapes else None
    if shapes and why:
        raise UsageError(f"--inputs: {path}: {why}{layout_hint(path, shapes, shape)}")


def refuse_inputs_format(path: Path) -> None:
    """UsageError for an --inputs file no runner reads (its suffix), before one starts."""
    from sagetui.core.config import INPUT_SUFFIXES

    if path.suffix.lower() not in INPUT_SUFFIXES:
        raise UsageError(f"--inputs: {path}: unknown inputs format {path.suffix!r} (use "
                         f"{', '.join(INPUT_SUFFIXES)})")


def default_report_path() -> str:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"sagetui-report-{stamp}.json"


def recovery_dir(args: argparse.Namespace | None = None) -> Path:
    given = getattr(args, "recovery_dir", None) if args else None
    if given:
        return Path(given)
    return paths.recovery_dir()


def recovery_file(args: argparse.Namespace | None = None) -> Path:
    """A new run's recovery file; the folder's old ones are pruned (core/paths.py's rule)."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = recovery_dir(args) / f"run-{stamp}-{os.getpid()}.json"
    paths.prune_recovery(path.parent, spare=path)
    return path
