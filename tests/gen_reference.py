#!/usr/bin/env python3
"""Generate tests/ref_model.bin: a PyTorch reference for grpo.c's GPT-2 model.

The model is a GPT-2 style decoder built from real torch.nn modules (nn.Embedding,
nn.LayerNorm, nn.Linear, nn.GELU(approximate='tanh')), so every gradient below
comes from PyTorch autograd, not from a hand-written backward. All reference
values are computed in float64 (model.double()) from float32-rounded initial
weights, and then stored as float32.

Config: V=24, maxT=16, L=2, NH=2, C=32 (hs=16); batch B=3, T=16.
Weights: torch.manual_seed(1234), generated in the flat parameter order below;
every tensor ~ N(0, 0.2), except LayerNorm weights = 1 + N(0, 0.1) and
LayerNorm biases ~ N(0, 0.1).

Flat parameter order (float32, PyTorch nn.Linear layout: weight is (out, in);
per-layer tensors are stacked along a leading L axis):
     1 wte      (V, C)       token embedding, also the tied LM head
     2 wpe      (maxT, C)    position embedding
     3 ln1w     (L, C)       4 ln1b     (L, C)
     5 qkvw     (L, 3C, C)   6 qkvb     (L, 3C)   rows [0,C)=q, [C,2C)=k, [2C,3C)=v
     7 attprojw (L, C, C)    8 attprojb (L, C)
     9 ln2w     (L, C)      10 ln2b     (L, C)
    11 fcw      (L, 4C, C)  12 fcb      (L, 4C)
    13 fcprojw  (L, C, 4C)  14 fcprojb  (L, C)
    15 lnfw     (C)         16 lnfb     (C)
  P = total number of floats (26752 for this config).

File format (all little-endian, sections back to back, no padding):
  header         int32[32]   [0]=20261129 magic, [1]=2 version, [2]=V, [3]=maxT,
                             [4]=L, [5]=NH, [6]=C, [7]=B, [8]=T,
                             [9]=n_adam_steps (5), rest 0
  hparams        float32[16] [0]=temperature 0.7, [1]=lr 1e-3, [2]=beta1 0.9,
                             [3]=beta2 0.95, [4]=eps 1e-8, [5]=weight_decay 0.1,
                             [6]=grad_clip 1.0, rest 0
  params         float32[P]  initial parameters, flat order above
  inputs         int32[B*T]  input tokens, row-major (B, T)
  targets        int32[B*T]  target tokens (B, T)
  mask           float32[B*T] loss mask (B, T): row 0 has prefix 3 zeros, row 1
                             prefix 5 zeros, row 2 prefix 0 zeros and its last 2
                             positions also 0 (padding); everything else 1
  logits         float32[B*T*V] logits at temperature 1
  logp           float32[B*T] log_softmax(logits / 0.7)[target]
  loss           float32[1]  sum(mask * -log_softmax(logits)[target]) / sum(mask)
  grads          float32[P]  d loss / d params
  grad_logp      float32[P]  d S / d params, S = sum_{b,t} w[b,t] * logp[b,t],
                             w[b,t] = ((b*T + t) % 7 - 3) / 10.0 (w is not stored)
  adam_losses    float32[5]  loss before each of 5 AdamW steps
  final_params   float32[P]  params after the 5 steps
  value_head     float32[C+1] a critic's value head on the initial params' trunk: w (C), then b;
                             torch.Generator seeded 4321: w ~ N(0, 0.3), b ~ N(0, 0.1)
  values         float32[B*T] V = ln_f(trunk(inputs)) @ w + b (--objective ppo's critic)
  grad_values    float32[P]  d S_V / d params (the trunk; wte only as the embedding),
                             S_V = sum_{b,t} w[b,t] * V[b,t] with the w of grad_logp
  grad_values_head float32[C+1] d S_V / d (w, b)

Each AdamW step: loss forward, backward, clip_grad_norm_(all params, 1.0) (global
L2 norm), torch.optim.AdamW(lr=1e-3, betas=(0.9, 0.95), eps=1e-8) with
weight_decay=0.1 on the 2-D matrices only (wte, wpe, qkvw, attprojw, fcw,
fcprojw) and 0 on biases and LayerNorm parameters.

Version 2 added the four critic sections at the end; the sections before them are unchanged.

Usage: python3 tests/gen_reference.py [--out tests/ref_model.bin]
"""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MAGIC = 20261129
VERSION = 2


# ----------------------------------------------------------------------------
# model


class CausalSelfAttention(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.c_attn = nn.Linear(C, 3 * C)  # q | k | v
        self.c_proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.NH
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.NH, hs).transpose(1, 2)  # (B, NH, T, hs)
        k = k.view(B, T, self.NH, hs).transpose(1, 2)
        v = v.view(B, T, self.NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=1e-5)
        self.attn = CausalSelfAttention(C, NH)
        self.ln_2 = nn.LayerNorm(C, eps=1e-5)
        self.mlp = MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, V, maxT, L, NH, C):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(maxT, C)
        self.h = nn.ModuleList([Block(C, NH) for _ in range(L)])
        self.ln_f = nn.LayerNorm(C, eps=1e-5)

    def hidden(self, idx):
        """The trunk: the final LayerNorm's output (B, T, C)."""
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.ln_f(x)

    def forward(self, idx):
        return self.hidden(idx) @ self.wte.weight.t()  # tied LM head, no bias


def param_groups(model):
    """The 16 parameter blocks in grpo.c's flat order; each is a list of tensors
    (one per layer for per-layer blocks) whose concatenation is that block."""
    h = model.h
    return [
        ("wte", [model.wte.weight]),
        ("wpe", [model.wpe.weight]),
        ("ln1w", [b.ln_1.weight for b in h]),
        ("ln1b", [b.ln_1.bias for b in h]),
        ("qkvw", [b.attn.c_attn.weight for b in h]),
        ("qkvb", [b.attn.c_attn.bias for b in h]),
        ("attprojw", [b.attn.c_proj.weight for b in h]),
        ("attprojb", [b.attn.c_proj.bias for b in h]),
        ("ln2w", [b.ln_2.weight for b in h]),
        ("ln2b", [b.ln_2.bias for b in h]),
        ("fcw", [b.mlp.c_fc.weight for b in h]),
        ("fcb", [b.mlp.c_fc.bias for b in h]),
        ("fcprojw", [b.mlp.c_proj.weight for b in h]),
        ("fcprojb", [b.mlp.c_proj.bias for b in h]),
        ("lnfw", [model.ln_f.weight]),
        ("lnfb", [model.ln_f.bias]),
    ]


def flat_params(model):
    return torch.cat([t.detach().reshape(-1) for _, g in param_groups(model) for t in g])


def flat_grads(model):
    return torch.cat([t.grad.detach().reshape(-1) for _, g in param_groups(model) for t in g])


def load_flat(model, flat):
    off = 0
    with torch.no_grad():
        for _, g in param_groups(model):
            for t in g:
                n = t.numel()
                t.copy_(flat[off:off + n].view_as(t))
                off += n
    assert off == flat.numel(), (off, flat.numel())


def block_sizes(model):
    return [(name, sum(t.numel() for t in g)) for name, g in param_groups(model)]


def init_flat(model):
    """Seeded float32 init in flat order (the RNG stream follows that order)."""
    torch.manual_seed(1234)
    parts = []
    for name, n in block_sizes(model):
        if name in ("ln1w", "ln2w", "lnfw"):
            parts.append(1.0 + 0.1 * torch.randn(n))
        elif name in ("ln1b", "ln2b", "lnfb"):
            parts.append(0.1 * torch.randn(n))
        else:
            parts.append(0.2 * torch.randn(n))
    return torch.cat(parts).float()


# ----------------------------------------------------------------------------
# losses


def masked_ce_loss(logits, targets, mask):
    lp = F.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (mask * -lp).sum() / mask.sum()


def target_logp(logits, targets, temperature):
    return F.log_softmax(logits / temperature, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def logp_weights(B, T, dtype):
    i = torch.arange(B * T).view(B, T)
    return ((i % 7 - 3).to(dtype) / 10.0)


# ----------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "ref_model.bin"))
    args = ap.parse_args()

    V, maxT, L, NH, C = 24, 16, 2, 2, 32
    B, T = 3, 16
    n_adam = 5
    temperature, lr, beta1, beta2, eps, wd, clip = 0.7, 1e-3, 0.9, 0.95, 1e-8, 0.1, 1.0

    torch.set_num_threads(1)  # bitwise reproducible reductions
    model = GPT(V, maxT, L, NH, C).double()
    params0 = init_flat(model)  # float32, exactly what is written to the file
    load_flat(model, params0.double())
    P = params0.numel()

    # data (drawn after the weights, from the same seeded stream)
    inputs = torch.randint(0, V, (B, T), dtype=torch.int64)
    targets = torch.randint(0, V, (B, T), dtype=torch.int64)
    mask = torch.ones(B, T, dtype=torch.float64)
    for b, prefix in enumerate([3, 5, 0]):
        mask[b, :prefix] = 0.0
    mask[2, T - 2:] = 0.0

    # forward + loss + grads (temperature 1)
    model.zero_grad(set_to_none=True)
    logits = model(inputs)
    loss = masked_ce_loss(logits, targets, mask)
    loss.backward()
    grads = flat_grads(model)

    # temperature log-probs and d(sum w*logp)/dparams
    model.zero_grad(set_to_none=True)
    logits_t = model(inputs)
    logp = target_logp(logits_t, targets, temperature)
    S = (logp_weights(B, T, torch.float64) * logp).sum()
    S.backward()
    grad_logp = flat_grads(model)

    # AdamW steps
    model.zero_grad(set_to_none=True)
    all_params = [t for _, g in param_groups(model) for t in g]
    decay = [p for p in all_params if p.dim() >= 2]
    no_decay = [p for p in all_params if p.dim() < 2]
    assert len(decay) == 2 + 4 * L and len(no_decay) == 2 + 8 * L
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, betas=(beta1, beta2), eps=eps,
    )
    adam_losses = []
    for _ in range(n_adam):
        opt.zero_grad(set_to_none=True)
        l = masked_ce_loss(model(inputs), targets, mask)
        l.backward()
        torch.nn.utils.clip_grad_norm_(all_params, clip)
        opt.step()
        adam_losses.append(l.item())
    final_params = flat_params(model)

    # the critic of --objective ppo: the trunk at the initial params, a scalar value head in
    # place of the LM head (its own seeded generator: the sections above stay as they were)
    load_flat(model, params0.double())
    gen = torch.Generator().manual_seed(4321)
    head0 = torch.cat([0.3 * torch.randn(C, generator=gen), 0.1 * torch.randn(1, generator=gen)]).float()
    head = head0.double().clone().requires_grad_(True)
    model.zero_grad(set_to_none=True)
    values = model.hidden(inputs) @ head[:C] + head[C]
    S_V = (logp_weights(B, T, torch.float64) * values).sum()
    S_V.backward()
    grad_values = flat_grads(model)
    grad_values_head = head.grad.detach()

    # write
    header = np.zeros(32, dtype="<i4")
    header[:10] = [MAGIC, VERSION, V, maxT, L, NH, C, B, T, n_adam]
    hparams = np.zeros(16, dtype="<f4")
    hparams[:7] = [temperature, lr, beta1, beta2, eps, wd, clip]

    def f32(t):
        return np.ascontiguousarray(t.detach().cpu().numpy().reshape(-1), dtype="<f4")

    def i32(t):
        return np.ascontiguousarray(t.detach().cpu().numpy().reshape(-1), dtype="<i4")

    sections = [
        ("header", header),
        ("hparams", hparams),
        ("params", f32(params0)),
        ("inputs", i32(inputs)),
        ("targets", i32(targets)),
        ("mask", f32(mask)),
        ("logits", f32(logits)),
        ("logp", f32(logp)),
        ("loss", f32(loss.reshape(1))),
        ("grads", f32(grads)),
        ("grad_logp", f32(grad_logp)),
        ("adam_losses", f32(torch.tensor(adam_losses))),
        ("final_params", f32(final_params)),
        ("value_head", f32(head0)),
        ("values", f32(values)),
        ("grad_values", f32(grad_values)),
        ("grad_values_head", f32(grad_values_head)),
    ]
    with open(args.out, "wb") as f:
        for _, arr in sections:
            f.write(arr.tobytes())

    # report
    print(f"config V={V} maxT={maxT} L={L} NH={NH} C={C} B={B} T={T}  P={P} params")
    for name, arr in sections:
        print(f"  {name:16s} n={arr.size:6d}  max|x|={np.abs(arr.astype(np.float64)).max():.6g}")
    off = 0
    flat = params0
    for name, n in block_sizes(model):
        print(f"    param {name:9s} n={n:5d}  max|x|={flat[off:off + n].abs().max().item():.4f}")
        off += n
    print(f"  loss={loss.item():.6f}  adam_losses={[round(x, 6) for x in adam_losses]}")
    size = os.path.getsize(args.out)
    expected = sum(arr.nbytes for _, arr in sections)
    assert size == expected and size < (1 << 20), (size, expected)
    print(f"wrote {args.out}: {size} bytes")


if __name__ == "__main__":
    main()
