"""A small model of our own for `sagetui swap` on the CPU: a few bf16 attention blocks
(torch's scaled_dot_product_attention, HND, causal, GQA), the step marked with
sagetui.region("step") and its output handed over with sagetui.output. `--plain`: no marks
(the step is then the first attention call to the last, the output the last call's);
`--fail-if-swapped`: exit 1 where the attention is not torch's own (a program that fails in
one arm only); `--mask`: the last block passes a bool mask (a call passed through);
`--random`: new random inputs each step (a step that is not repeatable); `--touch-after N
PATH`: PATH made after step N (a test's signal to stop the swap); `--outputs`: a tuple, a
dict, a number, a NaN and a name safetensors reserves handed over beside the latents;
`--nested`: the step holds a block of its own name; `--fork`: a forked child makes an attention
call; `--child PIDFILE`: a child process that sleeps, its pid in PIDFILE."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import sagetui


class Block(torch.nn.Module):
    def __init__(self, dim: int, heads: int, kv_heads: int, head_dim: int, mask: bool) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim, self.mask = heads, kv_heads, head_dim, mask
        self.q = torch.nn.Linear(dim, heads * head_dim, bias=False)
        self.kv = torch.nn.Linear(dim, 2 * kv_heads * head_dim, bias=False)
        self.o = torch.nn.Linear(heads * head_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q = self.q(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, n, 2, self.kv_heads, self.head_dim).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        if self.kv_heads != self.heads:  # GQA by repetition, as many models do
            k = k.repeat_interleave(self.heads // self.kv_heads, 1)
            v = v.repeat_interleave(self.heads // self.kv_heads, 1)
        if self.mask:
            m = torch.ones(n, n, dtype=torch.bool).tril()
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.o(y.transpose(1, 2).reshape(b, n, -1))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--plain", action="store_true")
    p.add_argument("--mask", action="store_true")
    p.add_argument("--fail-if-swapped", action="store_true")
    p.add_argument("--random", action="store_true")
    p.add_argument("--touch-after", nargs=2, metavar=("N", "PATH"))
    p.add_argument("--outputs", action="store_true")
    p.add_argument("--nested", action="store_true")
    p.add_argument("--fork", action="store_true")
    p.add_argument("--child", metavar="PIDFILE")
    a = p.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    heads, head_dim = 2, 64
    dim = heads * head_dim
    model = torch.nn.Sequential(*[Block(dim, heads, heads, head_dim, a.mask and i == a.blocks - 1)
                                  for i in range(a.blocks)]).to(torch.bfloat16)
    x = torch.randn(1, a.tokens, dim, dtype=torch.bfloat16)
    if a.child:
        import subprocess

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path(a.child).write_text(str(child.pid))
    with torch.no_grad():
        y = model(x)  # a warm-up step, outside the step marked
        if a.fork:
            import os

            pid = os.fork()
            if pid == 0:
                model(x)
                os._exit(0)
            os.waitpid(pid, 0)
        for i in range(a.steps):
            if a.random:
                x = torch.randn_like(x)
            if a.plain:
                y = model(x)
            else:
                with sagetui.region("step"):
                    y = model(x)
                    if a.nested:
                        with sagetui.region("step"):
                            y = model(y)
                    sagetui.output("latents", y)
                    if a.outputs:
                        sagetui.output("pair", (y, {"twice": y * 2}))
                        sagetui.output("count", 3)
                        sagetui.output("__metadata__", y[0, :1])
                        sagetui.output("nan", torch.full((2,), float("nan")))
            if a.touch_after and i + 1 == int(a.touch_after[0]):
                Path(a.touch_after[1]).touch()
    if a.fail_if_swapped:
        from sagetui.swap import api

        marks = api.active.marks
        if marks is not None and getattr(marks, "backend", None) is not None:
            print("this program refuses a swapped attention", file=sys.stderr)
            return 1
    print(f"done: {tuple(y.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
