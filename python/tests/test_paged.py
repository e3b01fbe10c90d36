# SPDX-License-Identifier: MIT
"""Paged K/V through txattn.attention(..., block_table=...): k and v as page pools in a shuffled
order (shared pages too), against the NumPy oracle on the same keys laid out contiguously, and the
refusals of malformed tables before or by the library."""

import numpy as np
import pytest

import txattn
from oracle import attention as oracle


def paged(B=3, Hq=4, Hkv=2, D=16, P=16, kv_lens=(40, 0, 77), n_q=1, token_major=False, seed=0):
    """q, dense k/v [B, Hkv, Nkv, D], the pools, the block table (sequence 1's first page shared
    with sequence 0's where both have one) and kv_lens."""
    rng = np.random.default_rng(seed)
    kv_lens = list(kv_lens)
    Nkv = max(kv_lens)
    max_pages = -(-Nkv // P) + 1
    need = [-(-n // P) for n in kv_lens]
    n_pages = sum(need) + 2
    perm = rng.permutation(n_pages)
    table = np.full((B, max_pages), -1, dtype=np.int32)
    used = 0
    for b in range(B):
        table[b, : need[b]] = perm[used : used + need[b]]
        used += need[b]
    q = rng.standard_normal((B, Hq, n_q, D)).astype(np.float32)
    k = rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32)
    v = rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32)
    if B > 1 and need[0] and need[1] and kv_lens[0] >= P and kv_lens[1] >= P:
        table[1, 0] = table[0, 0]
        k[1, :, :P] = k[0, :, :P]
        v[1, :, :P] = v[0, :, :P]
    shape = (n_pages, P, Hkv, D) if token_major else (n_pages, Hkv, P, D)
    kp = np.zeros(shape, dtype=np.float32)
    vp = np.zeros(shape, dtype=np.float32)
    for b in range(B):
        for j in range(kv_lens[b]):
            page, r = table[b, j // P], j % P
            if token_major:
                kp[page, r], vp[page, r] = k[b, :, j], v[b, :, j]
            else:
                kp[page, :, r], vp[page, :, r] = k[b, :, j], v[b, :, j]
    if token_major:  # vLLM's [n_pages, P, heads, dim], passed uncopied as [n_pages, heads, P, dim]
        kp, vp = kp.transpose(0, 2, 1, 3), vp.transpose(0, 2, 1, 3)
    return q, k, v, kp, vp, table, kv_lens


@pytest.mark.parametrize("P", [1, 3, 16, 128])
@pytest.mark.parametrize("token_major", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_paged_attention_matches_the_oracle(P, token_major, causal):
    q, k, v, kp, vp, table, kv_lens = paged(P=P, token_major=token_major, n_q=3, seed=P)
    want, want_lse = oracle(q, k, v, causal=causal, kv_lens=kv_lens)
    o, lse = txattn.attention(q, kp, vp, block_table=table, kv_lens=kv_lens, causal=causal,
                              return_lse=True)
    bound = txattn.error_bound(q, kp, vp, block_table=table, kv_lens=kv_lens, causal=causal)
    assert np.max(np.abs(o - want)) <= bound
    seen = np.isfinite(want_lse)
    assert np.array_equal(np.isinf(lse), ~seen)
    assert np.max(np.abs(lse[seen] - want_lse[seen])) <= 1e-5
    ref = txattn.reference(q, kp, vp, block_table=table, kv_lens=kv_lens, causal=causal)
    assert np.max(np.abs(ref - want)) <= 1e-6


def test_every_paged_kernel_decodes_from_pages():
    q, k, v, kp, vp, table, kv_lens = paged(B=2, Hq=8, Hkv=2, D=64, P=64, kv_lens=(300, 129))
    want, _ = oracle(q, k, v, kv_lens=kv_lens)
    ran = 0
    for info in txattn.kernels():
        if not info["usable"] or "paged" not in info["flags"] or "f32" not in info["dtypes"]["q"]:
            continue
        o = txattn.attention(q, kp, vp, block_table=table, kv_lens=kv_lens, kernel=info["name"])
        assert np.max(np.abs(o - want)) <= 1e-5, info["name"]
        ran += 1
    assert ran >= 2


def test_malformed_tables_are_refused():
    q, k, v, kp, vp, table, kv_lens = paged()
    o = np.full((3, 4, 1, 16), 7.0, dtype=np.float32)
    bad = table.copy()
    bad[2, 0] = kp.shape[0]  # past the pool, in a page sequence 2 reads
    with pytest.raises(ValueError, match=r"block_table\[2 \* max_pages \+ 0\]"):
        txattn.attention(q, kp, vp, block_table=bad, kv_lens=kv_lens, out=o)
    assert np.all(o == 7.0)
    with pytest.raises(ValueError, match="one row of page indices per sequence"):
        txattn.attention(q, kp, vp, block_table=table[:2], kv_lens=kv_lens, out=o)
    with pytest.raises(ValueError, match=r"block_table\[0\]\[1\] must be an int32 page index"):
        txattn.attention(q, kp, vp, block_table=[[0, 2**40, 0]] * 3, kv_lens=kv_lens, out=o)
    with pytest.raises(ValueError, match="share the block table"):
        txattn.attention(q, kp, vp[:-1], block_table=table, kv_lens=kv_lens, out=o)
    with pytest.raises(ValueError, match="kv_lens"):
        txattn.attention(q, kp, vp, block_table=table, kv_lens=[999, 0, 0], out=o)
    assert np.all(o == 7.0)
