"""A small transformer for the capture tests, importable and runnable as a script
(`python tests/capture_model.py --steps 3 --record rec.json`).

Four blocks call F.scaled_dot_product_attention: 0 causal, 1 not, 2 GQA (4 q heads on 2 kv
heads, enable_gqa=True), 3 causal with a scale of its own. Each attention module keeps its own
record of what it passed (module name and the sha256 of q, k and v's contiguous bytes), taken
before the call and independently of any capture, and the script writes it with the sha256 of
the model's output.
"""

import argparse
import hashlib
import json

import torch
import torch.nn.functional as F
from torch import nn

DIM, HEADS, HEAD_DIM, TOKENS = 32, 4, 8, 16
BLOCKS = [dict(causal=True), dict(causal=False), dict(causal=False, kv_heads=2),
          dict(causal=True, scale=0.25)]


def sha256(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().reshape(-1).view(torch.uint8).numpy().data).hexdigest()


class Attention(nn.Module):
    def __init__(self, causal: bool, kv_heads: int = HEADS, scale: float | None = None):
        super().__init__()
        self.causal, self.kv_heads, self.scale = causal, kv_heads, scale
        self.q = nn.Linear(DIM, HEADS * HEAD_DIM)
        self.kv = nn.Linear(DIM, 2 * kv_heads * HEAD_DIM)
        self.o = nn.Linear(HEADS * HEAD_DIM, DIM)
        self.log: list[dict] = []
        self.name = ""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q = self.q(x).view(b, n, HEADS, HEAD_DIM).transpose(1, 2)  # HND, not contiguous
        k, v = self.kv(x).view(b, n, 2, self.kv_heads, HEAD_DIM).permute(2, 0, 3, 1, 4)
        self.log.append(dict(module=self.name, q=sha256(q), k=sha256(k), v=sha256(v),
                             q_shape=list(q.shape), k_shape=list(k.shape)))
        extra = {"scale": self.scale} if self.scale is not None else {}
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal,
                                           enable_gqa=self.kv_heads != HEADS, **extra)
        return self.o(y.transpose(1, 2).reshape(b, n, HEADS * HEAD_DIM))


class Block(nn.Module):
    def __init__(self, **attn):
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.attn = Attention(**attn)
        self.mlp = nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.GELU(), nn.Linear(2 * DIM, DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm(x))
        return x + self.mlp(x)


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(**b) for b in BLOCKS)
        for name, m in self.named_modules():
            if isinstance(m, Attention):
                m.name = name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x

    def attention_log(self) -> list[dict]:
        """Every attention call the model made, in order (blocks run in turn)."""
        logs = [m.log for m in self.modules() if isinstance(m, Attention)]
        return [entry for step in zip(*logs, strict=True) for entry in step]


def run(steps: int, dtype: torch.dtype = torch.bfloat16) -> tuple[Tiny, torch.Tensor]:
    """The model's `steps` forward passes from seed 0; the last output."""
    torch.manual_seed(0)
    model = Tiny().to(dtype)
    x = torch.randn(1, TOKENS, DIM, dtype=dtype)
    with torch.no_grad():
        for _ in range(steps):
            x = model(x)
    return model, x


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--record", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model, out = run(a.steps)
    with open(a.record, "w") as fh:
        json.dump({"calls": model.attention_log(), "output": sha256(out)}, fh)
