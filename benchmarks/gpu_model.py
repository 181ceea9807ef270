"""A DiT-like stack of attention blocks on the GPU, for `sagetui capture` (the H200 check:
a workload captured from a torch model run on the GPU, replayed across the SageAttention paths).

Joint attention over video and text tokens as in the reference reports' video model, bf16,
16 heads of dimension 128: blocks 0-3 full attention, block 4 causal, block 5 GQA (16 query
heads on 4 kv heads). The weights are random from seed 0, but the K projection's bias is drawn
with a standard deviation of 2 so that K carries the per-channel offset trained models' K
carries (the reason SageAttention smooths K). Each step is one forward pass, as a sampler step.

    sagetui capture --out cap -- python benchmarks/gpu_model.py --steps 2
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn

HEADS, HEAD_DIM = 16, 128
DIM = HEADS * HEAD_DIM
BLOCKS = [{}, {}, {}, {}, {"causal": True}, {"kv_heads": 4}]


class Attention(nn.Module):
    def __init__(self, causal: bool = False, kv_heads: int = HEADS) -> None:
        super().__init__()
        self.causal, self.kv_heads = causal, kv_heads
        self.q = nn.Linear(DIM, DIM)
        self.k = nn.Linear(DIM, kv_heads * HEAD_DIM)
        self.v = nn.Linear(DIM, kv_heads * HEAD_DIM)
        self.o = nn.Linear(DIM, DIM)
        with torch.no_grad():
            self.k.bias.normal_(0.0, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q = self.q(x).view(b, n, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k(x).view(b, n, self.kv_heads, HEAD_DIM).transpose(1, 2)
        v = self.v(x).view(b, n, self.kv_heads, HEAD_DIM).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal,
                                           enable_gqa=self.kv_heads != HEADS)
        return self.o(y.transpose(1, 2).reshape(b, n, DIM))


class Block(nn.Module):
    def __init__(self, **attn: object) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.attn = Attention(**attn)  # type: ignore[arg-type]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.attn(self.norm(x))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--video-tokens", type=int, default=4096)
    ap.add_argument("--text-tokens", type=int, default=256)
    a = ap.parse_args()
    torch.manual_seed(0)
    blocks = nn.Sequential(*(Block(**b) for b in BLOCKS)).to("cuda", torch.bfloat16)
    video = torch.randn(1, a.video_tokens, DIM, device="cuda", dtype=torch.bfloat16)
    text = torch.randn(1, a.text_tokens, DIM, device="cuda", dtype=torch.bfloat16)
    x = torch.cat([text, video], dim=1)
    with torch.no_grad():
        for _ in range(a.steps):
            x = blocks(x)
    torch.cuda.synchronize()
    print(f"{a.steps} steps of {len(BLOCKS)} blocks over {x.shape[1]} tokens: "
          f"output mean {x.float().mean().item():.6f}")


if __name__ == "__main__":
    main()
