"""`python -m sagetui.runner.profile_child`: the process that Nsight Compute launches for the
profile pass (session/profile_pass.py). It builds the inputs of a config, loads one variant,
warms it up, and runs its call once more inside an NVTX range named after the variant, so that
`ncu --nvtx --nvtx-include NAME/` profiles that call alone. Never timed: ncu replays kernels.

It writes what the driver needs (the extension module files the call ran) as JSON to --info.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from sagetui.core.config import RunConfig


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
    mods = getattr(be, "modules", None)
    files = dict(getattr(mods, "files", {}) or {})
    with open(args.info, "w", encoding="utf-8") as f:
        json.dump({"variant": spec.name, "backend": spec.backend, "files": files,
                   "pid": os.getpid()}, f)
    torch.cuda.nvtx.range_push(args.nvtx)
    be.run(inputs, NullClock())
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
