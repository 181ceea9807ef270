"""`python -m sagetui.runner.profile_child`: the process that Nsight Compute launches for the
profile pass (session/profile_pass.py). It builds the inputs of a config, loads one variant,
warms it up, and runs its call once more inside an NVTX range named after the variant, so that
`ncu --nvtx --nvtx-include NAME/` profiles that call alone. Never timed: ncu replays kernels.

It writes what the driver needs as JSON to --info (`child_info`): the extension module files the
call ran, and for the report's environment block what this process ran on (python, torch, the
device and its GPU, as a runner's hello and ready say it) and the variant's build provenance
(every .so with its sha256), so that a profile report says where it was made and of which build.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from typing import TYPE_CHECKING, Any

from sagetui.core.config import RunConfig, VariantSpec

if TYPE_CHECKING:
    from sagetui.runner.backends.base import Backend


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="sagetui.runner.profile_child")
    p.add_argument("--config", required=True, help="a RunConfig as JSON (a file)")
    p.add_argument("--variant", required=True)
    p.add_argument("--nvtx", required=True, help="the NVTX range's name")
    p.add_argument("--info", required=True, help="where to write the module files (JSON)")
    p.add_argument("--warmup", type=int, default=2)
    args = p.parse_args(argv)

    with open(args.config, encoding="utf-8") as f:
        config = RunConfig.model_validate_json(f.read())
    spec = next((v for v in config.variants if v.name == args.variant), None)
    if spec is None:
        print(f"profile_child: no variant {args.variant!r} in the config", file=sys.stderr)
        return 2

    import torch

    from sagetui.runner.backends import backend_class
    from sagetui.runner.backends.base import NullClock
    from sagetui.runner.engine import resolve_device
    from sagetui.runner.inputs import build_inputs

    device = resolve_device(config.device)
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device).index)
    cls = backend_class(spec.backend)
    cls.check_available(device)
    be = cls(options=dict(spec.options), module_path=spec.path, variant_name=spec.name)
    be.load()
    inputs = build_inputs(config, device)
    for _ in range(max(1, args.warmup)):  # JIT, allocator, module loading: outside the range
        be.run(inputs, NullClock())
    torch.cuda.synchronize()
    with open(args.info, "w", encoding="utf-8") as f:
        json.dump(child_info(spec, be, device), f)
    torch.cuda.nvtx.range_push(args.nvtx)
    be.run(inputs, NullClock())
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    return 0


def child_info(spec: VariantSpec, be: Backend, device: str) -> dict[str, Any]:
    """What the profile pass reads back (session/profile_pass.py): the module files the call
    ran, where it ran (environment.py's runner and ready facts) and the build's provenance."""
    import torch

    from sagetui.runner.engine import gpu_info
    from sagetui.runner.provenance import provenance

    mods = getattr(be, "modules", None)
    return {"variant": spec.name, "backend": spec.backend,
            "files": dict(getattr(mods, "files", {}) or {}), "pid": os.getpid(),
            "environment": {"python": platform.python_version(), "torch": torch.__version__,
                            "device": device, "gpu": gpu_info(device)},
            "provenance": provenance(be)}


if __name__ == "__main__":
    sys.exit(main())
