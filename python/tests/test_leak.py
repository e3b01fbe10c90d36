# SPDX-License-Identifier: MIT
"""No leak: 10,000 calls of each kind (NumPy, torch through DLPack, plans, errors, merges) leave
the process's resident memory where it was after a warm-up. Each call allocates outputs of at
least 4 KiB, so a leaked output, buffer or DLPack tensor would grow it by 40 MB or more."""

import gc

import numpy as np
import pytest

import txattn
from conftest import SANITIZED

pytestmark = pytest.mark.skipif(
    SANITIZED, reason="ASan keeps freed memory in quarantine: resident memory grows by design")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def steady(call, n=10_000, warmup=1_000, margin=8 << 20):
    for _ in range(warmup):
        call()
    gc.collect()
    before = rss_bytes()
    for _ in range(n):
        call()
    gc.collect()
    grown = rss_bytes() - before
    assert grown < margin, f"resident memory grew by {grown / 2**20:.1f} MiB over {n} calls"


def small(dtype=np.float32):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((1, 4, 16, 32)).astype(dtype),
            rng.standard_normal((1, 2, 16, 32)).astype(dtype),
            rng.standard_normal((1, 2, 16, 32)).astype(dtype))


def test_numpy_calls_do_not_leak(ctx):
    q, k, v = small()
    steady(lambda: txattn.attention(q, k, v, causal=True, return_lse=True, context=ctx))


def test_plans_errors_and_merges_do_not_leak(ctx):
    q, k, v = small()
    plan = ctx.plan(q, k, v, return_lse=True)
    o, lse = plan(q, k, v)

    def mixed():
        plan(q, k, v)
        try:
            txattn.attention(q, k[:, :, :, :8], v, context=ctx)
        except ValueError:
            pass
        try:
            txattn.attention(q, k, v, kernel="no.such", context=ctx)
        except txattn.NotFoundError:
            pass
        txattn.merge([o, o], [lse, lse])

    steady(mixed, n=5_000)


def test_torch_calls_do_not_leak(ctx):
    torch = pytest.importorskip("torch")
    q, k, v = (torch.from_numpy(x).to(torch.bfloat16) for x in small())
    steady(lambda: txattn.attention(q, k, v, causal=True, return_lse=True, context=ctx))
    steady(lambda: txattn.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))


def test_modifiers_do_not_leak(ctx):
    """Slopes and sink logits are copied per call (and per plan): with 1024 heads, each copy is
    4 KiB, so one leaked per call, plan or refusal would grow memory by 40 MB."""
    rng = np.random.default_rng(1)
    q = rng.standard_normal((1, 1024, 1, 4)).astype(np.float32)
    k = rng.standard_normal((1, 1, 3, 4)).astype(np.float32)
    slopes, sinks = txattn.alibi_slopes(1024), rng.standard_normal(1024)
    bad = sinks.copy()
    bad[-1] = np.nan
    o, lse = txattn.attention(q, k, k, return_lse=True, context=ctx)

    def mixed():
        txattn.attention(q, k, k, causal=True, alibi_slopes=slopes, sinks=sinks, sink_keys=1,
                         softcap=5.0, context=ctx)
        plan = ctx.plan(q, k, k, alibi_slopes=slopes, sinks=True)
        plan(q, k, k, sinks=sinks)
        try:
            txattn.attention(q, k, k, sinks=bad, context=ctx)
        except ValueError:
            pass
        txattn.merge([o, o], [lse, lse], sinks=sinks)

    steady(mixed, n=3_000, warmup=300)
