#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How much a Python call costs, and what txattn gives a torch user: the two benchmarks of the
Python package (docs/python.md, "Overhead and speed"; figures in docs/measurements.md).

1. Overhead. (a) The extension's own work per call, in CPU time: a decode call's arguments
   (q [1, 32, 1, 128]) against no keys, which the extension answers itself (zeros) after all of
   its parsing, importing, allocating and checking, so the library's part is absent. (b) The same
   call from Python and from C, on the same shape, kernel and thread count, in wall time: C is
   `txtune bench` (txattn_plan_execute on a plan made once); Python is Plan.__call__ with out=
   (the same call), Plan.__call__ allocating its output, and txattn.attention (dispatcher and
   allocation included), on NumPy arrays and torch tensors. Shapes: decode (n_q 1, n_kv 4096,
   32/8 heads, d 128) and a causal prefill at n 4096 (32/8 heads, d 128).
2. Against torch's math path on the same tensors (torch 1.13's
   torch.nn.functional._scaled_dot_product_attention, what scaled_dot_product_attention runs on
   CPU; GQA through repeat_interleave, as torch 2.5's enable_gqa does): dense and causal prefill
   and decode (GQA 32/8 and MHA 32/32), beside the ratio the C benchmark shows in the same run
   (`txtune bench`, the dispatcher's kernel against masked.scalar, the dense OpenBLAS pipeline).

Each figure is the median of several rounds; within a round C and Python run back to back, and
ratios are the median of the rounds' ratios. Timing as txtune's: a warm-up call, then calls
doubled until a run lasts --min-time, the median of --runs runs.

    PYTHONPATH=build/python python3 python/bench/bench.py [--threads 2] [--rounds 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import txattn


def per_call(fn, min_time, runs, clock=time.perf_counter):
    """Median seconds per call of fn(): txtune's method."""
    fn()
    reps = 1
    while True:
        t = clock()
        for _ in range(reps):
            fn()
        if clock() - t >= min_time:
            break
        reps *= 2
    times = []
    for _ in range(runs):
        t = clock()
        for _ in range(reps):
            fn()
        times.append((clock() - t) / reps)
    return statistics.median(times)


def wrapper_alone(ctx, rounds, min_time, runs):
    print(f"\n1a. The extension's own work per call (CPU time, q [1, 32, 1, 128] against no keys; "
          f"median and least of {rounds} rounds)")
    q = np.random.default_rng(0).standard_normal((1, 32, 1, 128)).astype(np.float32)
    kv = np.zeros((1, 8, 0, 128), np.float32)
    o = np.empty_like(q)
    tq, tkv, to = torch.from_numpy(q), torch.from_numpy(kv), torch.from_numpy(o)
    calls = {
        "attention(out=) numpy": lambda: txattn.attention(q, kv, kv, out=o, context=ctx),
        "attention() numpy": lambda: txattn.attention(q, kv, kv, context=ctx),
        "attention(out=) torch": lambda: txattn.attention(tq, tkv, tkv, out=to, context=ctx),
        "attention() torch": lambda: txattn.attention(tq, tkv, tkv, context=ctx),
        "attention() torch, default context": lambda: txattn.attention(tq, tkv, tkv),
    }
    times = {key: [] for key in calls}
    for _ in range(rounds):  # the calls in turn, so that a drift of the machine moves them alike
        for key, fn in calls.items():
            times[key].append(per_call(fn, min_time, runs, time.process_time))
    rows = []
    for key, ts in times.items():
        print(f"    {key:<36} {med(ts) * 1e6:6.2f} us (least {min(ts) * 1e6:.2f})")
        rows.append((key, med(ts), min(ts)))
    return rows


def txtune_path():
    here = os.path.dirname(os.path.dirname(os.path.abspath(txattn.__file__)))
    return os.path.join(os.path.dirname(here), "bin", "txtune")


def txtune_bench(shape, kernels, threads, min_time, runs):
    """{kernel: median seconds} and the JSON of one `txtune bench` run."""
    cmd = [txtune_path(), "bench", "--n", str(shape["n_q"]), "--n-kv", str(shape["n_kv"]),
           "--d", str(shape["d"]), "--heads", str(shape["heads"]), "--heads-kv",
           str(shape["heads_kv"]), "--mask", "causal" if shape["causal"] else "none",
           "--threads", str(threads), "--kernel", ",".join(kernels), "--no-verify", "--json",
           "--reps", str(runs), "--min-time", str(max(1, round(min_time * 1e3))),
           "--time-limit", "86400"]  # its estimate from a tiny call can be far off
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr}\n"
                           f"{run.stdout[-2000:]}")
    doc = json.loads(run.stdout)
    return {k["name"]: k["median_s"] for k in doc["kernels"] if k["status"] == "ok"}, doc


def tensors(shape, kind, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, shape["heads"], shape["n_q"], shape["d"], generator=g)
    k = torch.randn(1, shape["heads_kv"], shape["n_kv"], shape["d"], generator=g)
    v = torch.randn(1, shape["heads_kv"], shape["n_kv"], shape["d"], generator=g)
    if kind == "numpy":
        return q.numpy(), k.numpy(), v.numpy()
    return q, k, v


def med(xs):
    return statistics.median(xs)


def overhead(shapes, ctx, threads, rounds, min_time, runs):
    print(f"\n1b. A Python call against the same call from C ({threads} threads, wall time, "
          f"median of {rounds} rounds)")
    rows = []
    for name, shape in shapes:
        arrays = {kind: tensors(shape, kind) for kind in ("numpy", "torch")}
        plan = ctx.plan(*arrays["numpy"], causal=shape["causal"])
        kernel = plan.kernel
        o_shape = (1, shape["heads"], shape["n_q"], shape["d"])
        outs = {"numpy": np.empty(o_shape, np.float32), "torch": torch.empty(o_shape)}
        calls = {
            "plan(out=) numpy": lambda: plan(*arrays["numpy"], out=outs["numpy"]),
            "plan(out=) torch": lambda: plan(*arrays["torch"], out=outs["torch"]),
            "plan() numpy": lambda: plan(*arrays["numpy"]),
            "attention() numpy": lambda: txattn.attention(*arrays["numpy"], causal=shape["causal"],
                                                          context=ctx),
            "attention() torch": lambda: txattn.attention(*arrays["torch"], causal=shape["causal"],
                                                          context=ctx),
        }
        c_times, py_times = [], {key: [] for key in calls}
        for _ in range(rounds):
            c_times.append(txtune_bench(shape, [kernel], threads, min_time, runs)[0][kernel])
            for key, fn in calls.items():
                py_times[key].append(per_call(fn, min_time, runs))
        c = med(c_times)
        print(f"  {name}: {kernel}, C (txtune bench) {c * 1e6:.1f} us")
        for key in calls:
            diffs = [p - ct for p, ct in zip(py_times[key], c_times)]
            ratios = [p / ct for p, ct in zip(py_times[key], c_times)]
            p = med(py_times[key])
            print(f"    {key:<18} {p * 1e6:10.1f} us  over C {med(diffs) * 1e6:+8.1f} us  "
                  f"({(med(ratios) - 1) * 100:+.2f}%)")
            rows.append((name, key, kernel, c, p, med(diffs), med(ratios)))
    return rows


def torch_math(q, k, v, causal):
    """torch 1.13's scaled-dot-product attention on CPU (its math path), GQA by repeat_interleave."""
    if k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return F._scaled_dot_product_attention(q, k, v, None, 0.0, False, causal)[0]


def versus_torch(shapes, ctx, threads, rounds, min_time, runs):
    print(f"\n2. txattn from Python against torch's math path on the same tensors ({threads} "
          f"threads; C: txtune bench, the same kernel against masked.scalar)")
    rows = []
    for name, shape in shapes:
        q, k, v = tensors(shape, "torch")
        kernel = ctx.plan(q, k, v, causal=shape["causal"]).kernel
        if shape["causal"] and shape["n_q"] != shape["n_kv"]:
            raise ValueError("the comparison needs one alignment: n_q == n_kv when causal")
        ours, theirs, ratios, c_ratios = [], [], [], []
        for _ in range(rounds):
            t_ours = per_call(lambda: txattn.attention(q, k, v, causal=shape["causal"], context=ctx),
                              min_time, runs)
            t_torch = per_call(lambda: torch_math(q, k, v, shape["causal"]), min_time, runs)
            c, _ = txtune_bench(shape, [kernel, "masked.scalar"], threads, min_time, runs)
            ours.append(t_ours)
            theirs.append(t_torch)
            ratios.append(t_torch / t_ours)
            c_ratios.append(c["masked.scalar"] / c[kernel])
        print(f"  {name}: txattn ({kernel}) {med(ours) * 1e3:.2f} ms, torch {med(theirs) * 1e3:.2f} "
              f"ms: {med(ratios):.2f}x from Python; C: masked.scalar / {kernel} {med(c_ratios):.2f}x")
        rows.append((name, kernel, med(ours), med(theirs), med(ratios), med(c_ratios)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="threads for txattn and torch [2]")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per figure [5]")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per measurement [5]")
    ap.add_argument("--min-time", type=float, default=0.05, help="seconds per run [0.05]")
    ap.add_argument("--only", choices=("wrapper", "overhead", "torch"),
                    help="one part: 1a (wrapper), 1 (overhead) or 2 (torch)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    ctx = txattn.Context(threads=args.threads)
    cpu = txattn.Context(threads=1).machine()
    print(f"txattn {txattn.__version__} (libtxattn {txattn.library_version()[1]}), torch "
          f"{torch.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}; "
          f"{cpu['brand'] or cpu['vendor']}, {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    decode = dict(n_q=1, n_kv=4096, heads=32, heads_kv=8, d=128, causal=False)
    if args.only in (None, "overhead", "wrapper"):
        wrapper_alone(ctx, args.rounds, args.min_time, args.runs)
    if args.only in (None, "overhead"):
        overhead([("decode n_kv 4096", decode),
                  ("prefill n 4096 causal", dict(n_q=4096, n_kv=4096, heads=32, heads_kv=8, d=128,
                                                 causal=True))],
                 ctx, args.threads, args.rounds, args.min_time, args.runs)
    if args.only in (None, "torch"):
        dense = dict(n_q=2048, n_kv=2048, heads=8, heads_kv=8, d=128, causal=False)
        versus_torch([("dense n 2048", dense), ("causal n 2048", dict(dense, causal=True)),
                      ("decode n_kv 4096, 32/8 heads", decode),
                      ("decode n_kv 4096, 32/32 heads", dict(decode, heads_kv=32))],
                     ctx, args.threads, args.rounds, args.min_time, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
