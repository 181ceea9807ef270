"""An independent check of `sagetui swap`: how much does a whole model step change when the
attention inside it goes from torch's SDPA to a SageAttention kernel? One process, one model,
every arm in turn.

The model is one of benchmarks/swap_models.py's (`--model blocks`: 8 bf16 attention blocks,
`--model llama`: transformers' Llama with SDPA attention; 4,096 tokens by default), the same
program `sagetui swap` runs. `torch.nn.functional.scaled_dot_product_attention` (the module
attribute, which the blocks model and transformers' sdpa integration both look up at every
call) is replaced by one dispatcher that sends each call to the current arm:

- `sdpa`: torch's original function (the baseline, always run);
- `sm90`: `sageattention.sageattn_qk_int8_pv_fp8_cuda_sm90`;
- `sm89`: `sageattention.sageattn_qk_int8_pv_fp8_cuda`;
- `sm80`: `sageattention.sageattn_qk_int8_pv_fp16_cuda`;

each called with tensor_layout="HND", the call's is_causal, sm_scale = the call's scale or
1/sqrt(head_dim), and the options sagetui's sage2-sm90/-sm89/-sm80 backends default to (KERNELS
below: qk_quant_gran per_warp, smooth_k on, smooth_v off, pv_accum fp32+fp32 on sm90 and sm89,
fp32 on sm80). Grouped-query calls (`enable_gqa=True`) go to the kernel with k and v as they are
(SageAttention takes fewer kv heads itself). A call the kernel cannot take (an attn_mask,
dropout, another argument, a dtype, device, head dim or shape it refuses, causal with
q_len != kv_len) goes to the original SDPA and is counted, with its reason. The dispatcher does
nothing else per call: no events, no synchronisation.

Each arm runs `--warmup` steps (not timed); one more step per arm gives its output, compared
with SDPA's (relative L1). Then `--rounds` rounds, ABBA: even rounds run [sdpa, *arms], odd rounds
the reverse. A step is one forward pass under torch.inference_mode() (Llama's `.logits`, as
swap_models.py returns), timed by two CUDA events recorded on the current stream right before
and right after it, with torch.cuda.synchronize() after each step, outside the timed span.
Per arm, the ratios arm / sdpa of the same round give the step change 100 * (exp(mean log
ratio) - 1) % and a 95 % t-interval on the mean log ratio, mapped the same way.

This script is written apart from sagetui's swap (it imports nothing of sagetui but
swap_models.py's model builders, which import sagetui only for its no-op region/output markers),
to check the swap's answer; docs/h200-results.md holds its figures.

    python benchmarks/swap_fidelity_gpu.py --model blocks [--tokens 4096] [--arms sm90,sm89,sm80]
        [--warmup 3] [--rounds 10] [--json PATH]
    python benchmarks/swap_fidelity_gpu.py --model llama --json /tmp/fidelity-llama.json

Needs a CUDA GPU, SageAttention 2 (its CUDA kernels) importable, and for llama, transformers.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

T0 = time.perf_counter()  # the whole script's wall time counts from here (torch's import too)
HERE = Path(__file__).resolve().parent

# arm -> (SageAttention's public function, the options sagetui's backend defaults to
# (sagetui/core/options.py, OPTIONS), the compute capability it runs on (min, max or None))
KERNELS: dict[str, tuple[str, dict[str, Any], tuple[int, int], tuple[int, int] | None]] = {
    "sm90": ("sageattn_qk_int8_pv_fp8_cuda_sm90",
             {"qk_quant_gran": "per_warp", "pv_accum_dtype": "fp32+fp32", "smooth_k": True},
             (9, 0), (9, 0)),
    "sm89": ("sageattn_qk_int8_pv_fp8_cuda",
             {"qk_quant_gran": "per_warp", "pv_accum_dtype": "fp32+fp32", "smooth_k": True,
              "smooth_v": False},
             (8, 9), None),
    "sm80": ("sageattn_qk_int8_pv_fp16_cuda",
             {"qk_quant_gran": "per_warp", "pv_accum_dtype": "fp32", "smooth_k": True,
              "smooth_v": False},
             (8, 0), None),
}
BASELINE = "sdpa"

# 0.975 quantiles of Student's t by degrees of freedom (when scipy is not importable); a df
# between two entries takes the lower one's (the wider interval)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
        17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064,
        25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000,
        120: 1.980}


def t975(df: int) -> float:
    try:
        from scipy.stats import t
    except ImportError:
        return T975[max(k for k in T975 if k <= df)] if df <= 120 else 1.960
    return float(t.ppf(0.975, df))


# --- the dispatcher: module state set before each step, read at every call -------------------

_original: Callable[..., Any] | None = None  # torch's own SDPA, kept before patching
_kernel: Callable[..., Any] | None = None  # the current arm's function; None: the original
_kernel_kw: dict[str, Any] = {}  # its options
_device_type = "cuda"  # the device the kernels take (a CPU test sets "cpu")
_tensor: type = object  # torch.Tensor, and the dtypes the kernels take: set by patch()
_dtypes: tuple[Any, ...] = ()
_swapped = 0  # calls sent to the kernel since the last reset
_original_calls = 0  # calls sent to the original (the sdpa arm's, and the passed ones)
_passed: dict[str, int] = {}  # reason -> calls the kernel could not take


def _cannot_swap(q: Any, k: Any, v: Any, attn_mask: Any, dropout_p: float, is_causal: Any,
                 enable_gqa: bool, extra: dict[str, Any]) -> str | None:
    """Why the kernel cannot take this call, or None when it can."""
    if attn_mask is not None:
        return "attn_mask"
    if dropout_p:
        return "dropout"
    if extra:
        return "argument " + ",".join(sorted(extra))
    if not (isinstance(q, _tensor) and isinstance(k, _tensor) and isinstance(v, _tensor)) \
            or q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return "not 4-d tensors"
    if q.device.type != _device_type or not q.device == k.device == v.device:
        return "device"
    if q.dtype not in _dtypes or not q.dtype == k.dtype == v.dtype:
        return f"dtype {q.dtype}"
    if not q.size(-1) == k.size(-1) == v.size(-1) or q.size(-1) > 128:
        return "head dim"
    if not q.size(0) == k.size(0) == v.size(0) or k.shape[:3] != v.shape[:3]:
        return "shape"
    if q.size(1) != k.size(1) and (not enable_gqa or q.size(1) % k.size(1)):
        return "heads"
    if is_causal and q.size(2) != k.size(2):
        return "causal with q_len != kv_len"
    if q.stride(-1) != 1 or k.stride(-1) != 1 or v.stride(-1) != 1:
        return "last dim not contiguous"
    return None


def sdpa_dispatch(query: Any, key: Any, value: Any, attn_mask: Any = None,
                  dropout_p: float = 0.0, is_causal: Any = False, scale: float | None = None,
                  enable_gqa: bool = False, **extra: Any) -> Any:
    """torch.nn.functional.scaled_dot_product_attention's stand-in: the current arm's kernel,
    or the original for the sdpa arm and for a call the kernel cannot take."""
    global _swapped, _original_calls
    kernel = _kernel
    if kernel is not None:
        why = _cannot_swap(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa, extra)
        if why is None:
            _swapped += 1
            return kernel(query, key, value, tensor_layout="HND", is_causal=bool(is_causal),
                          sm_scale=scale if scale is not None else query.size(-1) ** -0.5,
                          **_kernel_kw)
        _passed[why] = _passed.get(why, 0) + 1
    _original_calls += 1
    if enable_gqa:  # passed on only when set: torch before 2.5 has no enable_gqa
        extra["enable_gqa"] = True
    assert _original is not None
    return _original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                     is_causal=is_causal, scale=scale, **extra)


def set_arm(fn: Callable[..., Any] | None, options: dict[str, Any]) -> None:
    global _kernel, _kernel_kw
    _kernel, _kernel_kw = fn, options


def reset_counts() -> tuple[int, int, dict[str, int]]:
    """The counts since the last reset (swapped, original, passed by reason); zeroes them."""
    global _swapped, _original_calls, _passed
    out = (_swapped, _original_calls, _passed)
    _swapped, _original_calls, _passed = 0, 0, {}
    return out


def patch(torch_mod: Any) -> None:
    global _original, _tensor, _dtypes
    _tensor, _dtypes = torch_mod.Tensor, (torch_mod.float16, torch_mod.bfloat16)
    _original = torch_mod.nn.functional.scaled_dot_product_attention
    torch_mod.nn.functional.scaled_dot_product_attention = sdpa_dispatch


def unpatch(torch_mod: Any) -> None:
    if _original is not None:
        torch_mod.nn.functional.scaled_dot_product_attention = _original


# --- statistics ----------------------------------------------------------------------------------

def pct(log_ratio: float) -> float:
    return 100.0 * (math.exp(log_ratio) - 1.0)


def step_change(arm_ms: list[float], base_ms: list[float]) -> dict[str, Any]:
    """The change of arm against the baseline from ratios paired by round: the geometric mean
    ratio as a percentage and its 95 % t-interval (None for fewer than 2 rounds)."""
    logs = [math.log(a / b) for a, b in zip(arm_ms, base_ms, strict=True)]
    mean = statistics.fmean(logs)
    out: dict[str, Any] = {"change_pct": pct(mean), "ci95_pct": None,
                           "ratios": [math.exp(x) for x in logs]}
    if len(logs) >= 2:
        half = t975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
        out["ci95_pct"] = [pct(mean - half), pct(mean + half)]
    return out


# --- the run -------------------------------------------------------------------------------------

def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Step time of benchmarks/swap_models.py's model with its SDPA calls swapped "
                    "to SageAttention's kernels, in one process (an independent check of "
                    "`sagetui swap`).")
    p.add_argument("--model", choices=["blocks", "llama"], default="blocks")
    p.add_argument("--tokens", type=int, default=4096)
    p.add_argument("--arms", default=",".join(KERNELS),
                   help=f"comma-separated, of {', '.join(KERNELS)} (sdpa, the baseline, is "
                        "always run; default: all)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per arm first")
    p.add_argument("--rounds", type=int, default=10,
                   help="timed rounds of one step per arm, ABBA order")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--affinity", metavar="CPUS",
                   help="run on these CPUs (e.g. 5 or 4-7): a launch-bound step's time depends "
                        "on the CPU; give sagetui swap the same --affinity to compare")
    a = p.parse_args(argv)
    a.arms = [x.strip() for x in a.arms.split(",") if x.strip()]
    unknown = [x for x in a.arms if x not in KERNELS]
    if unknown or len(set(a.arms)) != len(a.arms):
        p.error(f"--arms: {','.join(unknown) or 'a repeated arm'}; pick from "
                f"{', '.join(KERNELS)}")
    if a.tokens < 1 or a.warmup < 0 or a.rounds < 1:
        p.error("--tokens and --rounds must be positive, --warmup not negative")
    return a


def load(arms: list[str]) -> tuple[Any, dict[str, Callable[..., Any]], str]:
    """torch, each arm's SageAttention function and sageattention's version; a one-line exit
    when CUDA, sageattention or an arm's function or compute capability is missing."""
    try:
        import torch
    except ImportError as exc:
        sys.exit(f"swap_fidelity_gpu: cannot import torch: {exc}")
    if not torch.cuda.is_available():
        sys.exit(f"swap_fidelity_gpu: CUDA is not available (torch {torch.__version__}); "
                 "run this on a GPU machine")
    try:
        import sageattention
    except Exception as exc:
        sys.exit(f"swap_fidelity_gpu: cannot import sageattention: {type(exc).__name__}: "
                 f"{str(exc).splitlines()[0] if str(exc) else ''}")
    try:
        from importlib.metadata import version
        sage_version = version("sageattention")
    except Exception:
        sage_version = str(getattr(sageattention, "__version__", "?"))
    cap = torch.cuda.get_device_capability()
    name = torch.cuda.get_device_name()
    fns = {}
    for arm in arms:
        fn_name, _, lo, hi = KERNELS[arm]
        if not hasattr(sageattention, fn_name):
            sys.exit(f"swap_fidelity_gpu: sageattention {sage_version} has no {fn_name} "
                     f"(arm {arm})")
        if cap < lo or (hi is not None and cap > hi):
            want = f"exactly {lo[0]}.{lo[1]}" if hi else f"{lo[0]}.{lo[1]} or newer"
            sys.exit(f"swap_fidelity_gpu: arm {arm} ({fn_name}) needs compute capability "
                     f"{want}; {name} is {cap[0]}.{cap[1]}")
        fns[arm] = getattr(sageattention, fn_name)
    return torch, fns, sage_version


def build(model: str, tokens: int) -> Callable[[], Any]:
    """swap_models.py's model on cuda, as a function running one forward pass."""
    sys.path.insert(0, str(HERE))
    sys.path.append(str(HERE.parent))  # sagetui (swap_models' markers) when not installed
    import swap_models
    import torch

    torch.manual_seed(0)
    net, x, _ = (swap_models.blocks if model == "blocks" else swap_models.llama)(tokens, "cuda")
    if model == "llama":
        return lambda: net(x).logits
    return lambda: net(x)


def rel_l1(out: Any, ref: Any) -> float:
    a, b = out.float(), ref.float()
    return float((a - b).abs().sum() / b.abs().sum().clamp_min(1e-30))


def run(a: argparse.Namespace, command: str) -> dict[str, Any]:
    torch, fns, sage_version = load(a.arms)
    arms = [BASELINE, *a.arms]
    options = {BASELINE: {}, **{arm: KERNELS[arm][1] for arm in a.arms}}
    fn_of: dict[str, Callable[..., Any] | None] = {BASELINE: None, **fns}
    step = build(a.model, a.tokens)
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    counts: dict[str, dict[str, Any]] = {arm: {"swapped": 0, "original": 0, "passed": {}}
                                         for arm in arms}
    rel: dict[str, float | None] = {}
    patch(torch)
    try:
        with torch.inference_mode():
            for arm in arms:  # warm-up, then one step for the output
                set_arm(fn_of[arm], options[arm])
                for _ in range(a.warmup):
                    step()
                torch.cuda.synchronize()
            ref = None
            for arm in arms:
                set_arm(fn_of[arm], options[arm])
                out = step()
                torch.cuda.synchronize()
                if ref is None:
                    ref, rel[arm] = out, 0.0
                else:
                    rel[arm] = rel_l1(out, ref)
                del out
            del ref
            reset_counts()
            torch.cuda.synchronize()
            for r in range(a.rounds):
                for arm in (arms if r % 2 == 0 else arms[::-1]):
                    set_arm(fn_of[arm], options[arm])
                    start = torch.cuda.Event(enable_timing=True)
                    end = torch.cuda.Event(enable_timing=True)
                    start.record()
                    out = step()
                    end.record()
                    torch.cuda.synchronize()
                    del out
                    times[arm].append(start.elapsed_time(end))
                    swapped, original, passed = reset_counts()
                    c = counts[arm]
                    c["swapped"] += swapped
                    c["original"] += original
                    for why, n in passed.items():
                        c["passed"][why] = c["passed"].get(why, 0) + n
    finally:
        set_arm(None, {})
        unpatch(torch)

    results: dict[str, Any] = {}
    for arm in arms:
        c = counts[arm]
        res: dict[str, Any] = {
            "function": "torch.nn.functional.scaled_dot_product_attention" if arm == BASELINE
            else f"sageattention.{KERNELS[arm][0]}",
            "options": options[arm],
            "median_ms": statistics.median(times[arm]),
            "step_ms": times[arm],
            "calls_per_step": (c["swapped"] + c["original"]) / a.rounds,
            "swapped_per_step": c["swapped"] / a.rounds,
            "passed_per_step": sum(c["passed"].values()) / a.rounds,
            "passed_reasons": {k: n / a.rounds for k, n in c["passed"].items()},
            "output_rel_l1_vs_sdpa": rel.get(arm),
        }
        if arm != BASELINE:
            res.update(step_change(times[arm], times[BASELINE]))
        results[arm] = res
    return {
        "what": "step change of swap_models.py's model with SDPA swapped to SageAttention "
                "kernels, one process (benchmarks/swap_fidelity_gpu.py)",
        "gpu": torch.cuda.get_device_name(),
        "capability": ".".join(map(str, torch.cuda.get_device_capability())),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": command,
        "torch": torch.__version__,
        "sageattention": sage_version,
        "model": a.model, "tokens": a.tokens, "arms": arms, "warmup": a.warmup,
        "rounds": a.rounds, "order": "ABBA: even rounds [sdpa, *arms], odd rounds reversed",
        "results": results,
    }


def per_step(x: float) -> str:
    return f"{x:.0f}" if x == int(x) else f"{x:.2f}"


def show(report: dict[str, Any]) -> None:
    print(f"GPU: {report['gpu']} (sm {report['capability']}), torch {report['torch']}, "
          f"sageattention {report['sageattention']}")
    print(f"date: {report['date']}")
    print(f"command: {report['command']}")
    print(f"model {report['model']}, {report['tokens']} tokens; {report['warmup']} warm-up "
          f"steps per arm, {report['rounds']} rounds ({report['order']})")
    print()
    head = (f"{'arm':5} | {'median step ms':>14} | {'step vs sdpa':>12} | {'95 % CI':>18} | "
            f"{'calls swapped/passed per step':>29} | {'out rel L1':>10}")
    print(head)
    print("-" * len(head))
    for arm, r in report["results"].items():
        if arm == BASELINE:
            change, ci = "-", "-"
            calls = f"- ({per_step(r['calls_per_step'])} calls, original)"
        else:
            change = f"{r['change_pct']:+.1f} %"
            ci = "-" if r["ci95_pct"] is None else \
                f"[{r['ci95_pct'][0]:+.1f}, {r['ci95_pct'][1]:+.1f}]"
            calls = f"{per_step(r['swapped_per_step'])}/{per_step(r['passed_per_step'])}"
        rl1 = r["output_rel_l1_vs_sdpa"]
        print(f"{arm:5} | {r['median_ms']:14.3f} | {change:>12} | {ci:>18} | {calls:>29} | "
              f"{'-' if rl1 is None else f'{rl1:.4f}':>10}")
    for arm, r in report["results"].items():
        if r["passed_reasons"]:
            why = ", ".join(f"{k}: {per_step(n)}" for k, n in r["passed_reasons"].items())
            print(f"  {arm}: passed to the original SDPA per step: {why}")
    print()
    print(f"wall time: {report['wall_s']:.1f} s")


def main(argv: list[str]) -> int:
    a = parse(argv)
    if a.affinity:  # this whole process, the way `taskset -c` would run it
        cpus = set()
        for part in a.affinity.split(","):
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
        os.sched_setaffinity(0, cpus)
        print(f"pinned to CPUs {sorted(os.sched_getaffinity(0))}")
    command = shlex.join([sys.executable, *sys.argv]) if argv == sys.argv[1:] \
        else shlex.join([sys.executable, __file__, *argv])
    report = run(a, command)
    report["wall_s"] = time.perf_counter() - T0
    show(report)
    if a.json is not None:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
