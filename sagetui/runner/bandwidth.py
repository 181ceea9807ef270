"""The GPU's measured copy bandwidth, once per run: the speed of light that the memory-bound
phases (SageAttention's quantization kernels) are compared with (core/sol.py).

A device-to-device copy of a buffer far larger than the L2 cache (at least 1 GiB and 8 x the
L2), timed with CUDA events on the current stream after two untimed copies; each repeat moves
the buffer's bytes twice (read + written). The report keeps the repeats' seconds so `check`
recomputes the median. Not measured on the CPU: the reference backend is SageAttention's
algorithm in torch ops, not its kernels, and the report says so by leaving the block out.
"""

from __future__ import annotations

from typing import Any

import torch

from sagetui.core.sol import COPY_METHOD, copy_gbps

GIB = 1 << 30
REPEATS = 10
WARMUP = 2


def buffer_bytes(l2_bytes: int | None, free_bytes: int) -> int | None:
    """At least 1 GiB and 8 x the L2, in whole MiB; None when two such buffers would take more
    than half of the free memory (the measurement is then left out, saying why)."""
    size = max(GIB, 8 * (l2_bytes or 0))
    size = -(-size // (1 << 20)) * (1 << 20)
    return size if 2 * size <= free_bytes // 2 else None


def measure_copy_bandwidth(device: str, l2_bytes: int | None) -> dict[str, Any]:
    """{"gbps", "seconds", "buffer_bytes", "moved_bytes", "repeats", "method"}, or
    {"reason"} where it could not be measured; never raises."""
    try:
        free, _ = torch.cuda.mem_get_info(device)
        size = buffer_bytes(l2_bytes, free)
        if size is None:
            return {"reason": f"not measured: {free} bytes free, too few for two buffers of "
                              f"{max(GIB, 8 * (l2_bytes or 0))} bytes", "method": COPY_METHOD}
        src = torch.ones(size, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        for _ in range(WARMUP):
            dst.copy_(src)
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                 for _ in range(REPEATS)]
        for start, end in pairs:
            start.record()
            dst.copy_(src)
            end.record()
        torch.cuda.synchronize(device)
        seconds = [start.elapsed_time(end) / 1e3 for start, end in pairs]
        del src, dst
        torch.cuda.empty_cache()  # the buffers go back to the device, not the allocator's cache
        return {"gbps": copy_gbps(seconds, 2 * size), "seconds": seconds, "buffer_bytes": size,
                "moved_bytes": 2 * size, "repeats": REPEATS, "method": COPY_METHOD}
    except Exception as exc:  # a measurement beside the run: its failure is said, not raised
        torch.cuda.empty_cache()
        return {"reason": f"not measured: {type(exc).__name__}: {exc}", "method": COPY_METHOD}
