#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One transformer block, Vaswani et al.'s base configuration, with attention from txattn: where
does the time go?

The block (width 512, 8 heads of 64, an MLP of 2048 with a rectifier) runs the six stages
layer norm, multi-head self-attention, residual, layer norm, MLP, residual, on torch tensors; only
the attention's core, softmax(Q K^T / 8) V, is txattn's. Each block is checked against a pure
torch block with the same weights, whose attention is torch's math path.

"The correction takes about ten lines of multiplication": the matrix multiplications cost
4 * 512^2 + 2 * 512 * 2048 = 3,145,728 multiply-adds per token whatever n is, attention's scores
and mixing 2 * n * 512 per token, so attention overtakes them at n = 3,072 (n / 3072 is their
ratio). This prints that prediction next to the measured times for each n.

    PYTHONPATH=$PWD/build/python /usr/bin/python3 examples/python/transformer_block.py            # n = 512..8192
    PYTHONPATH=$PWD/build/python /usr/bin/python3 examples/python/transformer_block.py --n 1024 --causal
"""

import argparse
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import txattn

WIDTH, HEADS, HEAD_DIM, INNER = 512, 8, 64, 2048
MATMUL_MACS_PER_TOKEN = 4 * WIDTH * WIDTH + 2 * WIDTH * INNER  # 3,145,728


def make_weights(seed):
    g = torch.Generator().manual_seed(seed)

    def w(rows, cols):  # variance-preserving initialisation
        return torch.randn(rows, cols, generator=g) / math.sqrt(rows)

    return dict(
        ln1_w=1 + 0.1 * torch.randn(WIDTH, generator=g), ln1_b=0.1 * torch.randn(WIDTH, generator=g),
        w_qkv=w(WIDTH, 3 * WIDTH), w_o=w(WIDTH, WIDTH),
        ln2_w=1 + 0.1 * torch.randn(WIDTH, generator=g), ln2_b=0.1 * torch.randn(WIDTH, generator=g),
        w_1=w(WIDTH, INNER), b_1=0.1 * torch.randn(INNER, generator=g),
        w_2=w(INNER, WIDTH), b_2=0.1 * torch.randn(WIDTH, generator=g),
    )


class Clock:
    """Wall time per stage, summed over a block."""

    def __init__(self):
        self.t = {"matmul": 0.0, "attention": 0.0, "other": 0.0}

    def run(self, stage, fn, *args):
        start = time.perf_counter()
        result = fn(*args)
        self.t[stage] += time.perf_counter() - start
        return result


def torch_attention(q, k, v, causal):
    """softmax(q k^T / sqrt(d) + mask) v, torch's math path, one head at a time (a [n, n] score
    matrix per head: 256 MiB at n = 8192)."""
    n, d = q.shape[-2], q.shape[-1]
    out = torch.empty_like(q)
    mask = torch.ones(n, n, dtype=torch.bool).tril() if causal else None
    for h in range(q.shape[1]):
        s = q[0, h] @ k[0, h].transpose(0, 1) * (1.0 / math.sqrt(d))
        if mask is not None:
            s.masked_fill_(mask.logical_not(), float("-inf"))
        out[0, h] = torch.softmax(s, dim=-1) @ v[0, h]
    return out


def block(x, W, clock, attend):
    """The six stages on x [n, 512]; attend(q, k, v, out) writes softmax(q k^T / 8) v into out,
    all four [1, 8, n, 64] views of [n, 512] activations (a head is a column block: no copies)."""
    n = x.shape[0]
    h = clock.run("other", F.layer_norm, x, (WIDTH,), W["ln1_w"], W["ln1_b"])
    qkv = clock.run("matmul", torch.matmul, h, W["w_qkv"])  # [n, 3 * 512]
    heads = qkv.view(1, n, 3, HEADS, HEAD_DIM)
    q, k, v = (heads[:, :, i].transpose(1, 2) for i in range(3))  # [1, 8, n, 64], strided
    mixed = torch.empty(n, WIDTH)
    clock.run("attention", attend, q, k, v, mixed.view(1, n, HEADS, HEAD_DIM).transpose(1, 2))
    a = clock.run("matmul", torch.matmul, mixed, W["w_o"])
    x = clock.run("other", torch.add, x, a)
    h = clock.run("other", F.layer_norm, x, (WIDTH,), W["ln2_w"], W["ln2_b"])
    h = clock.run("matmul", torch.addmm, W["b_1"], h, W["w_1"])
    h = clock.run("other", torch.relu_, h)
    h = clock.run("matmul", torch.addmm, W["b_2"], h, W["w_2"])
    return clock.run("other", torch.add, x, h)


def parse_n(text):
    """"512..8192" (doubling), "1024,4096", or a mix."""
    values = []
    for item in text.split(","):
        if ".." in item:
            lo, hi = (int(s) for s in item.split(".."))
            while lo <= hi:
                values.append(lo)
                lo *= 2
        else:
            values.append(int(item))
    return values


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="512..8192", help="sequence lengths (default 512..8192)")
    ap.add_argument("--causal", action="store_true", help="a decoder's causal mask")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for torch and txattn alike (default: torch's own count)")
    ap.add_argument("--reps", type=int, default=3, help="timed blocks per n (the median is shown)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    ctx = txattn.Context(threads=threads)
    W = make_weights(0)

    def txattn_attend(q, k, v, out):
        txattn.attention(q, k, v, causal=args.causal, out=out, context=ctx)

    def torch_attend(q, k, v, out):
        out.copy_(torch_attention(q, k, v, args.causal))

    print(f"transformer block: width {WIDTH}, {HEADS} heads of {HEAD_DIM}, MLP {INNER}, "
          f"{'causal' if args.causal else 'no mask'}, {threads} thread(s) for torch and txattn, "
          f"median of {args.reps}; attention by {ctx.plan((1, HEADS, 512, HEAD_DIM), (1, HEADS, 512, HEAD_DIM), (1, HEADS, 512, HEAD_DIM), causal=args.causal).kernel} at n = 512")
    print("predicted attention / matmul work = n / 3072 (half of it with --causal)")
    cols = ("n", "block ms", "torch ms", "matmul ms", "attn ms", "torch attn", "other ms",
            "attn share", "work ratio", "time ratio", "max |diff|")
    print(" ".join(f"{c:>10}" for c in cols))
    worst = 0.0
    with torch.no_grad():
        ns = parse_n(args.n)
        warm = torch.zeros(min(ns), WIDTH)  # first calls load plugins and plan: not timed
        block(warm, W, Clock(), txattn_attend)
        block(warm, W, Clock(), torch_attend)
        for n in ns:
            x = torch.randn(n, WIDTH, generator=torch.Generator().manual_seed(n))
            ours, theirs = [], []
            for _ in range(max(1, args.reps)):
                c1, c2 = Clock(), Clock()
                y = block(x, W, c1, txattn_attend)
                y_ref = block(x, W, c2, torch_attend)
                ours.append(c1.t)
                theirs.append(c2.t)
            diff = (y - y_ref).abs().max().item()
            scale = y_ref.abs().max().item()
            worst = max(worst, diff / scale)

            def med(runs, key=None):
                return 1e3 * statistics.median(sum(r.values()) if key is None else r[key] for r in runs)

            work = (n / 3072) * (0.5 if args.causal else 1.0)
            row = (n, med(ours), med(theirs), med(ours, "matmul"), med(ours, "attention"),
                   med(theirs, "attention"), med(ours, "other"),
                   f"{med(ours, 'attention') / med(ours):.0%}", f"{work:.2f}",
                   f"{med(ours, 'attention') / med(ours, 'matmul'):.2f}", f"{diff:.1e}")
            print(" ".join(f"{v:>10.2f}" if isinstance(v, float) else f"{v:>10}" for v in row))
            sys.stdout.flush()
    # the two blocks differ only by the attention's rounding, carried through the MLP
    if worst > 1e-4:
        print(f"FAILED: the txattn block differs from the torch block by {worst:.1e} of its scale",
              file=sys.stderr)
        return 1
    print(f"txattn block = torch block within {worst:.1e} of the output's scale at every n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
