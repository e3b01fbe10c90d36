# SPDX-License-Identifier: MIT
"""Packed queries through txattn.attention(..., q_offsets=...): q, o and lse as [total_rows, heads,
dim] (cu_seqlens, as flash_attn_varlen_func takes them), alone and with paged K/V and kv_lens,
against the NumPy oracle per sequence, and the offsets' refusals before any pointer reaches C."""

import numpy as np
import pytest

import txattn
from oracle import attention as oracle
from test_paged import paged


def packed(q_rows, Hq=4, Hkv=2, D=16, Nkv=50, seed=0):
    """Packed q [sum(q_rows), Hq, D], dense k/v [B, Hkv, Nkv, D] and the offsets."""
    rng = np.random.default_rng(seed)
    off = np.concatenate([[0], np.cumsum(q_rows)]).astype(np.int64)
    q = rng.standard_normal((int(off[-1]), Hq, D)).astype(np.float32)
    k = rng.standard_normal((len(q_rows), Hkv, Nkv, D)).astype(np.float32)
    v = rng.standard_normal((len(q_rows), Hkv, Nkv, D)).astype(np.float32)
    return q, k, v, off


def per_sequence(q, k, v, off, kv_lens=None, **kw):
    """The oracle's (o, lse) of each sequence alone, packed back as [rows, heads(, dim)]."""
    o = np.zeros(q.shape[:2] + (v.shape[3],))
    lse = np.full(q.shape[:2], -np.inf)
    for b in range(len(off) - 1):
        rows = q[off[b]:off[b + 1]].transpose(1, 0, 2)[None]
        n = v.shape[2] if kv_lens is None else kv_lens[b]
        ob, lb = oracle(rows, k[b:b + 1, :, :n], v[b:b + 1, :, :n], **kw)
        o[off[b]:off[b + 1]] = ob[0].transpose(1, 0, 2)
        lse[off[b]:off[b + 1]] = lb[0].T
    return o, lse


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("q_rows", [(7, 1, 0, 30), (1,), (3, 3)])
def test_packed_attention_matches_the_oracle(q_rows, causal):
    q, k, v, off = packed(q_rows)
    kv_lens = [50 - 7 * b for b in range(len(q_rows))]
    for lens in (None, kv_lens):
        o, lse = txattn.attention(q, k, v, q_offsets=off, kv_lens=lens, causal=causal,
                                  return_lse=True)
        assert o.shape == (q.shape[0], 4, 16) and lse.shape == (q.shape[0], 4)
        want_o, want_lse = per_sequence(q, k, v, off, lens, causal=causal)
        bound = txattn.error_bound(q, k, v, q_offsets=off, kv_lens=lens, causal=causal)
        assert np.max(np.abs(o - want_o), initial=0) <= bound
        fin = np.isfinite(want_lse)
        assert np.array_equal(np.isfinite(lse), fin)
        assert np.max(np.abs(lse[fin] - want_lse[fin]), initial=0) <= 1e-4 * (1 + np.abs(want_lse[fin]).max(initial=0))
        ref = txattn.reference(q, k, v, q_offsets=off, kv_lens=lens, causal=causal)
        assert np.max(np.abs(ref - want_o), initial=0) <= 1e-6


def test_packed_and_paged_with_kv_lens():
    """7 decode rows and a chunk of 30 over a shuffled page pool (a shared page too), as a
    continuous-batching step sends them."""
    _, k, v, kp, vp, table, kv_lens = paged(B=3, kv_lens=(40, 33, 77), P=16)
    rng = np.random.default_rng(5)
    q_rows = (1, 7, 30)
    off = np.concatenate([[0], np.cumsum(q_rows)])
    q = rng.standard_normal((int(off[-1]), 4, 16)).astype(np.float32)
    out = (np.zeros((38, 4, 16), np.float32), np.zeros((38, 4), np.float32))
    o, lse = txattn.attention(q, kp, vp, block_table=table, kv_lens=kv_lens, q_offsets=off,
                              causal=True, out=out, return_lse=True)
    assert o is out[0] and lse is out[1]
    want_o, want_lse = per_sequence(q, k, v, off, kv_lens, causal=True)
    bound = txattn.error_bound(q, kp, vp, block_table=table, kv_lens=kv_lens, q_offsets=off,
                               causal=True)
    assert np.max(np.abs(o - want_o)) <= bound
    assert np.max(np.abs(lse - want_lse)) <= 1e-4 * (1 + np.abs(want_lse).max())
    # a strided q (a [heads, rows, dim] tensor transposed) gives the same
    qt = np.ascontiguousarray(q.transpose(1, 0, 2)).transpose(1, 0, 2)
    o2 = txattn.attention(qt, kp, vp, block_table=table, kv_lens=kv_lens, q_offsets=off,
                          causal=True)
    np.testing.assert_array_equal(o2, o)


def test_offsets_are_checked_before_the_call():
    q, k, v, off = packed((3, 4))
    with pytest.raises(ValueError, match=r"q_offsets\[0\] = 1 must be 0"):
        txattn.attention(q, k, v, q_offsets=[1, 3, 7])
    with pytest.raises(ValueError, match=r"q_offsets\[2\] = 2 is below q_offsets\[1\] = 5"):
        txattn.attention(q, k, v, q_offsets=[0, 5, 2])
    with pytest.raises(ValueError, match=r"q_offsets\[-1\] = 6 but q has 7 rows"):
        txattn.attention(q, k, v, q_offsets=[0, 3, 6])
    with pytest.raises(ValueError, match=r"q_offsets\[2\] = 9 is outside 0..q's rows = 7"):
        txattn.attention(q, k, v, q_offsets=[0, 3, 9])
    with pytest.raises(ValueError, match=r"k has batch 2 but q_offsets give 3 sequences"):
        txattn.attention(q, k, v, q_offsets=[0, 3, 5, 7])
    with pytest.raises(ValueError, match="at least 2"):
        txattn.attention(q, k, v, q_offsets=[0])
    with pytest.raises(ValueError, match=r"q must be 3-D \[total_rows"):
        txattn.attention(q[None], k, v, q_offsets=off)
    with pytest.raises(ValueError, match="q_lens must be None"):
        txattn.attention(q, k, v, q_offsets=off, q_lens=[3, 4])
    with pytest.raises(ValueError, match=r"out has shape \(7, 4, 8\) but the result has shape \(7, 4, 16\)"):
        txattn.attention(q, k, v, q_offsets=off, out=np.zeros((7, 4, 8), np.float32))
    with pytest.raises(TypeError, match=r"q_offsets\[1\] must be an int"):
        txattn.attention(q, k, v, q_offsets=[0, 2.5, 7])
