# SPDX-License-Identifier: MIT
"""The tests' own fp64 oracle, in NumPy, written from the contract in include/txattn/txattn.h (not
from the library's code): per sequence and head, the visible keys of each row, then softmax and
the weighted sum in float64."""

import numpy as np


def visible(n_q, n_kv, causal=False, window=None):
    """[n_q, n_kv] bool: key j visible to row i, positions aligned bottom-right."""
    pos = np.arange(n_q)[:, None] + (n_kv - n_q)
    j = np.arange(n_kv)[None, :]
    v = np.ones((n_q, n_kv), dtype=bool)
    if causal:
        v &= j <= pos
    if window is not None:
        left, right = window
        if left is not None:
            v &= j >= pos - left
        if right is not None:
            v &= j <= pos + right
    return v


def attention(q, k, v, causal=False, window=None, scale=None, q_lens=None, kv_lens=None):
    """(o, lse) in float64 for [B, H, N, D] inputs (anything np.asarray takes as numbers)."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    B, Hq, Nq, D = q.shape
    Hkv, Nkv, Dv = k.shape[1], k.shape[2], v.shape[3]
    group = Hq // Hkv
    # the library holds scale in float32, the default 1/sqrt(D) too
    scale = float(np.float32(1.0 / np.sqrt(D) if scale is None else scale))
    o = np.zeros((B, Hq, Nq, Dv))
    lse = np.full((B, Hq, Nq), -np.inf)
    for b in range(B):
        nq = Nq if q_lens is None else int(q_lens[b])
        nkv = Nkv if kv_lens is None else int(kv_lens[b])
        vis = visible(nq, nkv, causal, window)
        for h in range(Hq):
            g = h // group
            s = scale * (q[b, h, :nq] @ k[b, g, :nkv].T)
            s = np.where(vis, s, -np.inf)
            m = s.max(axis=1, initial=-np.inf)
            seen = np.isfinite(m)
            p = np.exp(s - np.where(seen, m, 0.0)[:, None])
            total = p.sum(axis=1)
            rows = np.where(seen[:, None], (p @ v[b, g, :nkv]) / np.where(seen, total, 1.0)[:, None], 0.0)
            o[b, h, :nq] = rows
            lse[b, h, :nq] = np.where(seen, m + np.log(np.where(seen, total, 1.0)), -np.inf)
    return o, lse
