"""A real model's attention calls captured with `sagetui capture`, then checked: transformers'
Llama (LlamaConfig: 4 layers, hidden 2048, 16 query heads and 4 kv heads of 128, random
weights, sdpa attention, bf16 on cuda) on one sequence of --tokens (4,096), or timm's ViT
(vit_base_patch16_224, random weights) with --model vit.

    python benchmarks/capture_real_model.py [--model llama|vit] [--out DIR] [--tokens 4096]

It runs `sagetui capture --out DIR -- python THIS_FILE --program ...` (the forward pass, in a
program of its own as a user's would be), then `sagetui capture --verify DIR`, and prints the
commands that replay the capture and check the report. transformers and timm are not
sagetui's dependencies: install the one you use (`pip install transformers` or `timm`).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path


def program(model: str, tokens: int, device: str) -> None:
    """The captured program: one forward pass of the model, random weights."""
    import torch

    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    if model == "llama":
        try:
            from transformers import LlamaConfig, LlamaForCausalLM
        except ImportError:
            sys.exit("transformers is not installed: pip install transformers (or --model vit "
                     "with timm)")
        config = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=4,
                             num_attention_heads=16, num_key_value_heads=4,  # heads of 128
                             vocab_size=32000, max_position_embeddings=max(tokens, 4096),
                             attn_implementation="sdpa")
        net = LlamaForCausalLM(config).to(device, dtype).eval()
        x = torch.randint(0, config.vocab_size, (1, tokens), device=device)
        with torch.no_grad():
            net(input_ids=x)
    else:
        try:
            import timm
        except ImportError:
            sys.exit("timm is not installed: pip install timm (or --model llama with "
                     "transformers)")
        net = timm.create_model("vit_base_patch16_224", pretrained=False).to(device, dtype)
        with torch.no_grad():
            net.eval()(torch.randn(1, 3, 224, 224, device=device, dtype=dtype))
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["llama", "vit"], default="llama")
    ap.add_argument("--tokens", type=int, default=4096, help="llama's sequence length")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default=None, help="the capture's directory (default "
                    "capture-MODEL)")
    ap.add_argument("--force", action="store_true", help="replace --out")
    ap.add_argument("--program", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.program:
        program(a.model, a.tokens, a.device)
        return 0
    missing = {"llama": "transformers", "vit": "timm"}[a.model]
    try:
        __import__(missing)
    except ImportError:
        print(f"{missing} is not installed here: pip install {missing} (not a sagetui "
              "dependency)", file=sys.stderr)
        return 2
    out = a.out or f"capture-{a.model}"
    sagetui = [sys.executable, "-m", "sagetui"]
    capture = [*sagetui, "capture", "--out", out, *(["--force"] if a.force else []), "--",
               sys.executable, str(Path(__file__).resolve()), "--program", "--model", a.model,
               "--tokens", str(a.tokens), "--device", a.device]
    for words in (capture, [*sagetui, "capture", "--verify", out]):
        print("$", shlex.join(words), flush=True)
        status = subprocess.call(words)
        if status:
            return status
    print("replay and check it:")
    print(f"  sagetui run --workload {shlex.quote(out)} --variant sdpa=sdpa --variant "
          f"sage=sage2-auto --json wl-{a.model}.json")
    print(f"  sagetui check wl-{a.model}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
