# SPDX-License-Identifier: MIT
"""The tests' own fp64 oracle, in NumPy, written from the contract in include/txattn/txattn.h (not
from the library's code): per sequence and head, the visible keys of each row, then softmax and
the weighted sum in float64, with the score modifiers (softcap, ALiBi, sink logits, sink keys)."""

import numpy as np


def visible(n_q, n_kv, causal=False, window=None, sink_keys=0):
    """[n_q, n_kv] bool: key j visible to row i, positions aligned bottom-right; with a mask, the
    first sink_keys keys are visible to every row besides."""
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
    if causal or window is not None:
        v[:, :sink_keys] = True
    return v


def head_floats(x):
    """heads_q values as the library reads them: rounded to float32, then exact in float64."""
    return None if x is None else np.asarray(x, dtype=np.float32).astype(np.float64)


def attention(q, k, v, causal=False, window=None, scale=None, q_lens=None, kv_lens=None,
              softcap=None, alibi_slopes=None, sinks=None, sink_keys=0):
    """(o, lse) in float64 for [B, H, N, D] inputs (anything np.asarray takes as numbers). Each
    score s = scale q.k becomes c tanh(s / c) (softcap c), then gains m_h (j - pos(i)) (ALiBi
    slope m_h); a sink logit t_h adds exp(t_h) to the softmax's denominator, not to lse."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    B, Hq, Nq, D = q.shape
    Hkv, Nkv, Dv = k.shape[1], k.shape[2], v.shape[3]
    group = Hq // Hkv
    # the library holds scale in float32, the default 1/sqrt(D) too
    scale = float(np.float32(1.0 / np.sqrt(D) if scale is None else scale))
    cap = None if softcap is None else float(np.float32(softcap))
    slopes, logits = head_floats(alibi_slopes), head_floats(sinks)
    o = np.zeros((B, Hq, Nq, Dv))
    lse = np.full((B, Hq, Nq), -np.inf)
    for b in range(B):
        nq = Nq if q_lens is None else int(q_lens[b])
        nkv = Nkv if kv_lens is None else int(kv_lens[b])
        vis = visible(nq, nkv, causal, window, sink_keys)
        distance = np.arange(nkv)[None, :] - (np.arange(nq)[:, None] + (nkv - nq))
        for h in range(Hq):
            g = h // group
            s = scale * (q[b, h, :nq] @ k[b, g, :nkv].T)
            if cap is not None:
                s = cap * np.tanh(s / cap)
            if slopes is not None:
                s = s + slopes[h] * distance
            s = np.where(vis, s, -np.inf)
            m = s.max(axis=1, initial=-np.inf)
            seen = np.isfinite(m)
            p = np.exp(s - np.where(seen, m, 0.0)[:, None])
            total = p.sum(axis=1)
            den = total if logits is None else total + np.exp(logits[h] - np.where(seen, m, 0.0))
            rows = np.where(seen[:, None], (p @ v[b, g, :nkv]) / np.where(seen, den, 1.0)[:, None], 0.0)
            o[b, h, :nq] = rows
            lse[b, h, :nq] = np.where(seen, m + np.log(np.where(seen, total, 1.0)), -np.inf)
    return o, lse
