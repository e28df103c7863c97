"""Held-out program for the precision advice (issue 42; tests/gpu/precision/check_precision.sh):
a decoder-only transformer trained in FP32, written for this check and not tuned on the rule.

Pre-norm blocks of causal self-attention (QKV projection, scores and weighted sum as batched
matmuls, output projection) and a GELU MLP, then a final LayerNorm, a vocabulary head and
cross-entropy against random tokens; AdamW. Sizes by default: batch 16, sequence 512, d_model
1024, 16 heads, MLP 4096, 4 layers, vocabulary 8192. `--sdpa` computes attention with
F.scaled_dot_product_attention instead (its FP32 kernels do not follow the TF32 flags).
Inputs and targets are made on the GPU once, before the loop.

NVTX: each step is a range xf_step_<i> holding xf_forward, xf_backward and xf_optimizer; the
matrix work is in xf_forward and xf_backward. Prints one JSON line (precision_loop.py):
  {"program": "transformer", "precision": "fp32", "step_ms_median": ..., "gemm_phases": [...], ...}

    python3 precision_transformer.py [--precision fp32|tf32|bf16] [--steps 20] [--warmup 5]
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

import precision_loop

DEFAULTS = {"batch": 16, "seq": 512, "d_model": 1024, "heads": 16, "mlp": 4096, "layers": 4,
            "vocab": 8192, "sdpa": False}


class Block(nn.Module):
    def __init__(self, d_model, heads, mlp, sdpa):
        super().__init__()
        self.heads, self.sdpa = heads, sdpa
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.up, self.down = nn.Linear(d_model, mlp), nn.Linear(mlp, d_model)

    def attention(self, x, causal_mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
            y = scores.masked_fill(causal_mask, float("-inf")).softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, x, causal_mask):
        x = x + self.attention(self.norm1(x), causal_mask)
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Decoder(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.blocks = nn.ModuleList(Block(a.d_model, a.heads, a.mlp, a.sdpa)
                                    for _ in range(a.layers))
        self.norm = nn.LayerNorm(a.d_model)
        self.head = nn.Linear(a.d_model, a.vocab, bias=False)

    def forward(self, x, causal_mask):
        for block in self.blocks:
            x = block(x, causal_mask)
        return self.head(self.norm(x))


def main():
    args = precision_loop.parse_args(__doc__.split("\n\n")[0], DEFAULTS)
    torch.manual_seed(0)
    model = Decoder(args).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.seq, args.d_model, device="cuda")
    targets = torch.randint(0, args.vocab, (args.batch * args.seq,), device="cuda")
    causal_mask = torch.ones(args.seq, args.seq, dtype=torch.bool, device="cuda").triu(1)

    def forward_loss():
        logits = model(x, causal_mask)
        return F.cross_entropy(logits.view(-1, args.vocab).float(), targets)

    params = sum(p.numel() for p in model.parameters())
    precision_loop.train(args, "transformer", "xf_step_{}",
                         ("xf_forward", "xf_backward", "xf_optimizer"),
                         ("xf_forward", "xf_backward"), forward_loss, optimizer,
                         {"parameters": params, "sizes": {k: getattr(args, k) for k in DEFAULTS}})


if __name__ == "__main__":
    main()
