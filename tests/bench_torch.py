#!/usr/bin/env python3
"""Benchmark grpo.c's GPT-2 architecture in PyTorch eager, for comparison with grpo.c.

The model is identical to grpo.c's (and tests/gen_reference.py's): learned token and
position embeddings, L pre-LN blocks (LayerNorm eps 1e-5, causal self-attention
scaled by 1/sqrt(hs), tanh-GELU MLP of width 4C), final LayerNorm, LM head tied to
wte with no bias. float32 throughout.

Before timing, it checks that the hand-written KV-cache decode path gives the
same logits as the full forward (max abs diff < 1e-4 on a batch of 2, float64).

Measurements (defaults: V=24 maxT=64 L=4 NH=4 C=128, --threads = os.cpu_count()):
  1. training: B=16, T=maxT random tokens (as ./grpo bench: a B x maxT batch); forward +
     cross-entropy + backward + AdamW step. 3 warm-up iterations, then --iters
     timed iterations. train tokens/s = B*T*iters / time.
  2. sampling: 64 sequences, random 8-token prompt, generate until length maxT
     (maxT-8 = 56 new tokens each) with a KV cache (preallocated per-layer K, V;
     the prompt is prefilled in one causal chunk, then one token per step),
     multinomial sampling from softmax(logits / 1.0), under torch.no_grad().
     One warm-up run. sample tokens/s = 64*(maxT-8) / time.
  3. update: the training step of 1. at the shape of the main job's GRPO update, B=128
     sequences of T=min(37, maxT) tokens (--update-B, --update-T), as ./grpo bench's
     "update" line. 1 warm-up iteration, then max(3, iters/2) timed.
  4. with --c-results holding update_tree_ms (./grpo bench's GRPO update on real sampled
     groups, padded and tree-packed): the same step at those groups' padded shape,
     update_seqs x update_T, 5 timed after a warm-up (median), beside grpo.c's two layouts.

FLOP count (used for GFLOP/s; same formula as grpo.c is expected to use):
  per token forward ~= 2*N + 2*L*T*C + 2*C*V
    N = non-embedding parameters (all params except wte and wpe, biases and
        LayerNorm included) = L*(12*C*C + 13*C) + 2*C
    2*L*T*C = attention scores and weighted sum (T = training sequence length)
    2*C*V   = tied LM head
  training per token = 3 * forward;  GFLOP/s = train tokens/s * that / 1e9

--c-results FILE: FILE holds a line written by grpo.c, e.g.
    bench train_tok_s=1234.5 sample_tok_s=5678.9 gflops=12.3 update_tok_s=2345.6 update_gflops=23.4 threads=2
and a side-by-side table grpo.c vs PyTorch (ratio = grpo.c / PyTorch) is printed.

--device cuda runs both measurements on the GPU (fp32 matmuls unless --tf32 1, as
grpo_cuda's --tf32); `make bench-cuda` runs it beside ./grpo_cuda bench for the default
model and for --L 8 --NH 8 --C 512 --maxT 256.

Usage:
  python3 tests/bench_torch.py [--threads N] [--iters 10] [--V 24 --maxT 64 --L 4
                                --NH 4 --C 128] [--device cpu|cuda] [--tf32 0|1] [--c-results FILE]
"""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.c_attn = nn.Linear(C, 3 * C)  # q | k | v
        self.c_proj = nn.Linear(C, C)

    def forward(self, x, cache=None, pos=0):
        """x: (B, Tn, C). Without cache: plain causal attention over x.
        With cache=(K, V) of shape (B, NH, maxT, hs): writes this chunk's k, v at
        positions [pos, pos+Tn) and attends over [0, pos+Tn) causally."""
        B, Tn, C = x.shape
        hs = C // self.NH
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, Tn, self.NH, hs).transpose(1, 2)  # (B, NH, Tn, hs)
        k = k.view(B, Tn, self.NH, hs).transpose(1, 2)
        v = v.view(B, Tn, self.NH, hs).transpose(1, 2)
        if cache is not None:
            K, Vc = cache
            K[:, :, pos:pos + Tn] = k
            Vc[:, :, pos:pos + Tn] = v
            k, v = K[:, :, :pos + Tn], Vc[:, :, :pos + Tn]
        Tk = k.shape[2]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, NH, Tn, Tk)
        if Tn > 1:
            # query i (absolute position pos+i) sees keys 0..pos+i
            causal = torch.ones(Tn, Tk, dtype=torch.bool, device=x.device).tril(diagonal=Tk - Tn)
            att = att.masked_fill(~causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, Tn, C)
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

    def forward(self, x, cache=None, pos=0):
        x = x + self.attn(self.ln_1(x), cache, pos)
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, V, maxT, L, NH, C):
        super().__init__()
        self.V, self.maxT, self.L, self.NH, self.C = V, maxT, L, NH, C
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(maxT, C)
        self.h = nn.ModuleList([Block(C, NH) for _ in range(L)])
        self.ln_f = nn.LayerNorm(C, eps=1e-5)
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() >= 2:
                    p.normal_(0.0, 0.02)

    def forward(self, idx, caches=None, pos=0):
        B, Tn = idx.shape
        positions = torch.arange(pos, pos + Tn, device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for l, block in enumerate(self.h):
            x = block(x, None if caches is None else caches[l], pos)
        return self.ln_f(x) @ self.wte.weight.t()

    def new_caches(self, B, device, dtype):
        hs = self.C // self.NH
        shape = (B, self.NH, self.maxT, hs)
        return [(torch.empty(shape, device=device, dtype=dtype),
                 torch.empty(shape, device=device, dtype=dtype)) for _ in range(self.L)]

    def non_embedding_params(self):
        return sum(p.numel() for n, p in self.named_parameters() if not n.startswith(("wte", "wpe")))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


@torch.no_grad()
def check_kv_cache(V, maxT, L, NH, C, device):
    """KV-cache logits (prefill 3 tokens, then one token at a time) == full forward,
    on a throwaway model of the same config whose weights are all ~N(0, 0.2) (so the
    logits are O(1), not near-uniform as with the benchmark's 0.02 init). Runs in
    float64 so the check tests the cache logic, not float32 rounding (which at
    C=128, L=4 is already ~2e-5 and grows with model size)."""
    g = torch.Generator(device="cpu").manual_seed(0)
    model = GPT(V, maxT, L, NH, C).double()
    for name, p in model.named_parameters():
        noise = torch.randn(p.shape, generator=g)
        is_ln_weight = ".ln_" in f".{name}" and name.endswith("weight")
        p.copy_(1.0 + 0.1 * noise if is_ln_weight else 0.2 * noise)  # noise is float32
    model = model.to(device)
    idx = torch.randint(0, model.V, (2, model.maxT), generator=g).to(device)
    full = model(idx)
    caches = model.new_caches(2, device, full.dtype)
    npre = min(3, model.maxT)
    parts = [model(idx[:, :npre], caches, 0)]
    for t in range(npre, model.maxT):
        parts.append(model(idx[:, t:t + 1], caches, t))
    cached = torch.cat(parts, dim=1)
    diff = (cached - full).abs().max().item()
    assert diff < 1e-4, f"KV-cache logits differ from full forward: max abs diff {diff}"
    print(f"kv-cache check: max abs diff vs full forward = {diff:.3g} (ok)")


def bench_train(model, device, B, T, iters, warmup=3):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    x = torch.randint(0, model.V, (B, T), device=device)
    y = torch.randint(0, model.V, (B, T), device=device)

    def step():
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, model.V), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    sync(device)
    dt = time.perf_counter() - t0
    return B * T * iters / dt


@torch.no_grad()
def sample(model, device, nseq, prompt_len):
    idx = torch.randint(0, model.V, (nseq, prompt_len), device=device)
    caches = model.new_caches(nseq, device, model.wte.weight.dtype)
    out = [idx]
    logits = model(idx, caches, 0)[:, -1]  # prefill
    pos = prompt_len
    while True:
        probs = F.softmax(logits / 1.0, dim=-1)
        nxt = torch.multinomial(probs, 1)
        out.append(nxt)
        if pos + 1 >= model.maxT:
            break
        logits = model(nxt, caches, pos)[:, -1]
        pos += 1
    return torch.cat(out, dim=1)


def bench_sample(model, device, nseq=64, prompt_len=8, reps=5):
    """New tokens/s: the median of reps timed calls after a warm-up (grpo.c bench does the same)."""
    seqs = sample(model, device, nseq, prompt_len)  # warm-up
    assert seqs.shape == (nseq, model.maxT), seqs.shape
    times = []
    for _ in range(reps):
        sync(device)
        t0 = time.perf_counter()
        sample(model, device, nseq, prompt_len)
        sync(device)
        times.append(time.perf_counter() - t0)
    return nseq * (model.maxT - prompt_len) / sorted(times)[reps // 2]


def read_c_results(path):
    """Parse the last 'bench key=value ...' line of the file."""
    vals = None
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == "bench":
                vals = {}
                for kv in parts[1:]:
                    k, _, v = kv.partition("=")
                    try:
                        vals[k] = float(v)
                    except ValueError:
                        vals[k] = v
    if vals is None:
        raise SystemExit(f"{path}: no 'bench ...' line found")
    return vals


def main():
    ap = argparse.ArgumentParser(description="PyTorch eager baseline for grpo.c")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--V", type=int, default=24)
    ap.add_argument("--maxT", type=int, default=64)
    ap.add_argument("--L", type=int, default=4)
    ap.add_argument("--NH", type=int, default=4)
    ap.add_argument("--C", type=int, default=128)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--tf32", type=int, default=0, choices=[0, 1], help="TF32 matmuls on the GPU")
    ap.add_argument("--update-B", dest="update_B", type=int, default=128)
    ap.add_argument("--update-T", dest="update_T", type=int, default=37)
    ap.add_argument("--c-results", dest="c_results", default=None)
    args = ap.parse_args()

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda requested but torch.cuda.is_available() is False")
    assert args.C % args.NH == 0, "C must be divisible by NH"
    prompt_len = 8
    assert args.maxT > prompt_len, "maxT must exceed the 8-token prompt"
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
        torch.backends.cudnn.allow_tf32 = bool(args.tf32)

    model = GPT(args.V, args.maxT, args.L, args.NH, args.C).to(device)
    check_kv_cache(args.V, args.maxT, args.L, args.NH, args.C, device)

    B, T = 16, args.maxT
    nsample = 64
    train_tok_s = bench_train(model, device, B, T, args.iters)
    sample_tok_s = bench_sample(model, device, nsample, prompt_len)
    UB, UT = args.update_B, min(args.update_T, args.maxT)
    update_tok_s = bench_train(model, device, UB, UT, max(3, args.iters // 2), warmup=1)

    N = model.non_embedding_params()
    fwd_flops = 2 * N + 2 * args.L * T * args.C + 2 * args.C * args.V
    train_gflops = train_tok_s * 3 * fwd_flops / 1e9
    update_gflops = update_tok_s * 3 * (2 * N + 2 * args.L * UT * args.C + 2 * args.C * args.V) / 1e9

    print(f"torch {torch.__version__} device={device} threads={torch.get_num_threads()} "
          f"config V={args.V} maxT={args.maxT} L={args.L} NH={args.NH} C={args.C} "
          f"non-embedding params={N} fwd FLOPs/token={fwd_flops}")
    print(f"torch train_tok_s={train_tok_s:.1f} sample_tok_s={sample_tok_s:.1f} "
          f"gflops={train_gflops:.2f} update_tok_s={update_tok_s:.1f} update_gflops={update_gflops:.2f} "
          f"threads={torch.get_num_threads()}")
    print(f"  (train: B={B} T={T} iters={args.iters}; "
          f"sample: {nsample} seqs x {args.maxT - prompt_len} new tokens; update: B={UB} T={UT})")

    c = read_c_results(args.c_results) if args.c_results else None
    groups_ms = None
    if c and isinstance(c.get("update_tree_ms"), float):
        GB, GT = int(c["update_seqs"]), int(c["update_T"])
        runs = sorted(1e3 * GB * GT / bench_train(model, device, GB, GT, 1, warmup=1 if r == 0 else 0)
                      for r in range(5))
        groups_ms = runs[2]

    if args.c_results:

        def num(k):
            v = c.get(k)
            return v if isinstance(v, float) else float("nan")

        ct, cs, cg = num("train_tok_s"), num("sample_tok_s"), num("gflops")
        cu, cug = num("update_tok_s"), num("update_gflops")
        print()
        print(f"{'':22s}{'grpo.c':>11s}{'PyTorch':>12s}{'ratio':>9s}")
        print(f"{'train tokens/s':22s}{ct:11.1f}{train_tok_s:12.1f}{ct / train_tok_s:8.2f}x")
        print(f"{'update tokens/s':22s}{cu:11.1f}{update_tok_s:12.1f}{cu / update_tok_s:8.2f}x")
        print(f"{'sample tokens/s':22s}{cs:11.1f}{sample_tok_s:12.1f}{cs / sample_tok_s:8.2f}x")
        print(f"{'train GFLOP/s':22s}{cg:11.2f}{train_gflops:12.2f}")
        print(f"{'update GFLOP/s':22s}{cug:11.2f}{update_gflops:12.2f}")
        if isinstance(c.get("peak_gflops"), float) and "threads" in c:
            peak = c["peak_gflops"] * c["threads"]
            print(f"{'% of the fp32 peak':22s}{100 * cug / peak:10.0f}%{100 * update_gflops / peak:11.0f}%"
                  f"   (update; peak {peak:.0f} GFLOP/s: grpo.c's FMA loop, {c['threads']:g} x "
                  f"{c['peak_gflops']:.1f} per core)")
        if groups_ms is not None:
            pad, tree = c["update_padded_ms"], c["update_tree_ms"]
            shape = f"{int(c['update_seqs'])} x {int(c['update_T'])}"
            print(f"GRPO update on sampled groups ({shape} padded; tree-packed {int(c['update_rows'])} rows), "
                  f"ms: grpo.c padded {pad:.1f}, tree {tree:.1f}; PyTorch eager padded {groups_ms:.1f}: "
                  f"PyTorch / grpo.c tree = {groups_ms / tree:.2f}x, / padded = {groups_ms / pad:.2f}x")
        if "threads" in c:
            print(f"(grpo.c threads={c['threads']:g}, PyTorch threads={torch.get_num_threads()})")
        if device.type == "cpu":
            print("goal: train >= 1.0x, update >= 1.5x, sample >= 3.0x")


if __name__ == "__main__":
    main()
