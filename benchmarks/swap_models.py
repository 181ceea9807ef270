"""Programs for `sagetui swap` on a GPU (benchmarks/swap_gpu.sh): each runs a few
warm-up forward passes, then `--steps` passes each marked `with sagetui.region("step")`, and
hands its output over with `sagetui.output` inside the step (the interleaved swap compares each
arm's step's output).

- `--model blocks`: a model of our own, 8 bf16 attention blocks (q/k/v/o projections and
  torch's scaled_dot_product_attention, HND, full attention), 4,096 tokens, 8 heads x 128.
- `--model prenorm`: benchmarks/capture_overhead_gpu.py's model (8 pre-norm blocks: LayerNorm,
  q/k/v, causal SDPA, the output projection, an MLP of 4x; width 1,024, bf16), the launch-bound
  model whose step the wrapper's cost is held to (3 % at 1,024 tokens, 1 % at 4,096).
- `--model llama`: `transformers`' Llama (LlamaConfig: 4 layers, hidden 2048, 16 heads on 4 kv
  heads, head dim 128, random weights, attn_implementation="sdpa"), 4,096 tokens, bf16; its
  logits are the output. transformers is needed (it is on the GPU machine, not in sagetui's
  dependencies).

    sagetui swap --variant sm90=sage2-sm90 -- python benchmarks/swap_models.py --model blocks
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F
from torch import nn

import sagetui

HEADS, HEAD_DIM, BLOCKS = 8, 128, 8


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        dim = HEADS * HEAD_DIM
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v)
        return x + self.o(y.transpose(1, 2).reshape(b, n, -1))


def blocks(tokens: int, device: str) -> tuple[nn.Module, torch.Tensor, str]:
    with torch.device(device):
        model = nn.Sequential(*[Block() for _ in range(BLOCKS)]).to(torch.bfloat16)
    return model, torch.randn(1, tokens, HEADS * HEAD_DIM, device=device,
                              dtype=torch.bfloat16), "latents"


def prenorm(tokens: int, device: str) -> tuple[nn.Module, torch.Tensor, str]:
    from capture_overhead_gpu import Block as PreNorm

    with torch.device(device):
        model = nn.Sequential(*[PreNorm(HEADS * HEAD_DIM) for _ in range(BLOCKS)]).to(
            torch.bfloat16)
    return model, torch.randn(1, tokens, HEADS * HEAD_DIM, device=device,
                              dtype=torch.bfloat16), "latents"


def llama(tokens: int, device: str) -> tuple[nn.Module, torch.Tensor, str]:
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        sys.exit("--model llama needs transformers (pip install transformers)")
    config = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=4,
                         num_attention_heads=16, num_key_value_heads=4, head_dim=128,
                         vocab_size=32000, max_position_embeddings=tokens,
                         attn_implementation="sdpa")
    with torch.device(device):  # random weights made on the GPU: seconds less per process
        model = LlamaForCausalLM(config).to(torch.bfloat16).eval()
    return model, torch.randint(0, config.vocab_size, (1, tokens), device=device), "logits"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["blocks", "prenorm", "llama"], default="blocks")
    p.add_argument("--tokens", type=int, default=4096)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--device", default="cuda", help="cuda; cpu to try a small one here")
    a = p.parse_args(argv)
    torch.manual_seed(0)
    model, x, name = {"blocks": blocks, "prenorm": prenorm, "llama": llama}[a.model](
        a.tokens, a.device)

    def forward() -> torch.Tensor:
        out = model(x)
        return out.logits if a.model == "llama" else out

    with torch.inference_mode():
        for _ in range(a.warmup):
            forward()
        y = None
        for _ in range(a.steps):
            with sagetui.region("step"):
                y = forward()
                sagetui.output(name, y)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
