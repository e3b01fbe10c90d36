# SPDX-License-Identifier: MIT
"""txattn.attention against the NumPy fp64 oracle (oracle.py), as properties over random problems:
every mask, GQA, ragged batches, lse, strided layouts, float16 and (through torch) bfloat16."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import oracle
import txattn

LAYOUTS = ("contiguous", "bnhd", "padded")


def make(rng, shape, dtype, layout):
    """A tensor of shape [B, H, N, D] in the given layout: contiguous, a [B, N, H, D] array
    transposed, or rows padded past D (a row stride of D + 3)."""
    B, H, N, D = shape
    if layout == "bnhd":
        x = rng.standard_normal((B, N, H, D)).astype(dtype).transpose(0, 2, 1, 3)
    elif layout == "padded":
        x = rng.standard_normal((B, H, N, D + 3)).astype(dtype)[..., :D]
    else:
        x = rng.standard_normal(shape).astype(dtype)
    assert x.shape == shape
    return x


def empty(shape, dtype, layout):
    B, H, N, D = shape
    if layout == "bnhd":
        return np.empty((B, N, H, D), dtype).transpose(0, 2, 1, 3)
    if layout == "padded":
        return np.empty((B, H, N, D + 3), dtype)[..., :D]
    return np.empty(shape, dtype)


@st.composite
def problems(draw):
    hkv, group = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    p = dict(
        B=draw(st.integers(1, 3)), Hq=hkv * group, Hkv=hkv,
        Nq=draw(st.integers(1, 24)), Nkv=draw(st.integers(1, 40)),
        D=draw(st.integers(1, 40)), Dv=draw(st.integers(1, 24)),
        seed=draw(st.integers(0, 2**32 - 1)),
    )
    kind = draw(st.sampled_from(["none", "causal", "window", "causal+window"]))
    p["causal"] = kind.startswith("causal")
    side = st.none() | st.integers(0, 40)
    p["window"] = (draw(side), draw(side)) if kind.endswith("window") else None
    p["scale"] = draw(st.none() | st.floats(0.05, 2.0))
    if draw(st.booleans()):  # ragged
        p["q_lens"] = draw(st.lists(st.integers(0, p["Nq"]), min_size=p["B"], max_size=p["B"]))
        p["kv_lens"] = draw(st.lists(st.integers(0, p["Nkv"]), min_size=p["B"], max_size=p["B"]))
    else:
        p["q_lens"] = p["kv_lens"] = None
    p["lse"] = draw(st.booleans())
    p["layouts"] = [draw(st.sampled_from(LAYOUTS)) for _ in range(4)]
    p["dtypes"] = [draw(st.sampled_from((np.float32, np.float16))) for _ in range(4)]
    return p


def tensors(p):
    rng = np.random.default_rng(p["seed"])
    shapes = [(p["B"], p["Hq"], p["Nq"], p["D"]), (p["B"], p["Hkv"], p["Nkv"], p["D"]),
              (p["B"], p["Hkv"], p["Nkv"], p["Dv"])]
    q, k, v = (make(rng, s, d, l) for s, d, l in zip(shapes, p["dtypes"], p["layouts"]))
    o = empty((p["B"], p["Hq"], p["Nq"], p["Dv"]), p["dtypes"][3], p["layouts"][3])
    return q, k, v, o


MODIFIERS = ("softcap", "alibi_slopes", "sinks", "sink_keys")


def kwargs(p):
    """The problem's arguments, as attention(), reference(), error_bound() and the oracle take
    them (the score modifiers where p has them)."""
    kw = dict(causal=p["causal"], window=p["window"], scale=p["scale"], q_lens=p["q_lens"],
              kv_lens=p["kv_lens"])
    kw.update((m, p[m]) for m in MODIFIERS if m in p)
    return kw


def check_against_oracle(p, q, k, v, o, lse, what, tensors=None):
    """o (and lse) within the library's stated bounds of the fp64 oracle; rows without keys exact
    zeros and -inf; rows past a sequence's q_len as the caller left them (checked by the caller).
    q, k, v, o: NumPy arrays; tensors: the (q, k, v, o) the call took, for the bound, if others."""
    ref, ref_lse = oracle.attention(q, k, v, **kwargs(p))
    bq, bk, bv, bo = tensors or (q, k, v, o)
    bound, lse_abs, lse_rel = txattn.error_bound(bq, bk, bv, **kwargs(p), return_lse=True, out=bo)
    B, Hq, Nq = o.shape[:3]
    for b in range(B):
        nq = Nq if p["q_lens"] is None else p["q_lens"][b]
        got, want = np.asarray(o[b, :, :nq], np.float64), ref[b, :, :nq]
        err = np.max(np.abs(got - want), initial=0.0)
        assert err <= bound, f"{what}: max|o - oracle| = {err} > bound {bound} in sequence {b}"
        empty_rows = ~np.isfinite(ref_lse[b, :, :nq])
        assert np.all(got[empty_rows] == 0.0), f"{what}: a row without keys is not 0"
        if lse is not None:
            l, wl = np.asarray(lse[b, :, :nq], np.float64), ref_lse[b, :, :nq]
            assert np.all(np.isneginf(l[empty_rows])), f"{what}: lse of a row without keys"
            fin = ~empty_rows
            tol = lse_abs + lse_rel * np.abs(wl[fin])
            assert np.all(np.abs(l[fin] - wl[fin]) <= tol), f"{what}: lse off by more than its bound"


@given(problems())
def test_attention_matches_oracle(ctx, p):
    q, k, v, o = tensors(p)
    lse = np.empty((p["B"], p["Hq"], p["Nq"]), np.float32) if p["lse"] else None
    if p["q_lens"] is not None:  # rows past q_len are the caller's: keep a pattern there
        o[...] = 7.0
        if lse is not None:
            lse[...] = 7.0
    out = (o, lse) if p["lse"] else o
    result = txattn.attention(q, k, v, **kwargs(p), return_lse=p["lse"], out=out, context=ctx)
    got_o, got_lse = result if p["lse"] else (result, None)
    assert got_o is o and got_lse is lse  # written in place, strides and all
    check_against_oracle(p, q, k, v, o, lse, "attention")
    if p["q_lens"] is not None:
        for b, nq in enumerate(p["q_lens"]):
            assert np.all(o[b, :, nq:] == 7.0), "a row past q_len was written"
            if lse is not None:
                assert np.all(lse[b, :, nq:] == 7.0), "an lse row past q_len was written"


@given(problems())
def test_new_outputs_and_reference(ctx, p):
    """Outputs allocated by txattn: q's kind and dtype, C-contiguous, rows past q_len 0 and -inf;
    txattn.reference (the library's oracle) agrees with the NumPy one the same way."""
    q, k, v, _ = tensors(p)
    o, lse = txattn.attention(q, k, v, **kwargs(p), return_lse=True, context=ctx)
    assert isinstance(o, np.ndarray) and o.dtype == q.dtype and o.flags.c_contiguous
    assert o.shape == (p["B"], p["Hq"], p["Nq"], p["Dv"]) and lse.shape == o.shape[:3]
    check_against_oracle(p, q, k, v, o, lse, "attention")
    r, rl = txattn.reference(q, k, v, **kwargs(p), return_lse=True)
    check_against_oracle(p, q, k, v, r, rl, "reference")
    if p["q_lens"] is not None:
        for b, nq in enumerate(p["q_lens"]):
            assert np.all(o[b, :, nq:] == 0.0) and np.all(np.isneginf(lse[b, :, nq:]))


def test_no_keys_gives_zeros_and_minus_inf(ctx):
    """n_kv = 0: every row sees no key (the library reads n_kv 0 as "n_q", so txattn answers)."""
    q = np.ones((2, 2, 3, 4), np.float32)
    k = np.ones((2, 1, 0, 4), np.float32)
    v = np.ones((2, 1, 0, 5), np.float32)
    o, lse = txattn.attention(q, k, v, return_lse=True, context=ctx)
    assert o.shape == (2, 2, 3, 5) and np.all(o == 0) and np.all(np.isneginf(lse))
    assert txattn.error_bound(q, k, v) == 0.0


def test_empty_batch_heads_rows(ctx):
    """Zero batch, heads or query rows: an empty result, and the library is not asked (it would
    read 0 as a default)."""
    for shape_q, shape_kv in (((0, 2, 3, 4), (0, 1, 5, 4)), ((1, 0, 3, 4), (1, 0, 5, 4)),
                              ((1, 2, 0, 4), (1, 1, 5, 4))):
        q, k = np.ones(shape_q, np.float32), np.ones(shape_kv, np.float32)
        o = txattn.attention(q, k, k, context=ctx)
        assert o.shape == shape_q and o.size == 0


def test_every_kernel_by_name(ctx):
    """kernel= plans that kernel (txattn_plan_create with its name): every usable one computes
    within the bound on a causal GQA problem with lse, or declines it with UnsupportedError."""
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2, 4, 33, 16)).astype(np.float32)
    k = rng.standard_normal((2, 2, 47, 16)).astype(np.float32)
    v = rng.standard_normal((2, 2, 47, 8)).astype(np.float32)
    ran = 0
    for info in ctx.kernels():
        if not info["usable"] or "f32" not in info["dtypes"]["q"]:
            continue
        try:
            o, lse = txattn.attention(q, k, v, causal=True, return_lse=True, kernel=info["name"],
                                      context=ctx)
        except txattn.UnsupportedError as e:
            assert info["name"] in str(e) or e.message
            continue
        p = dict(causal=True, window=None, scale=None, q_lens=None, kv_lens=None)
        check_against_oracle(p, q, k, v, o, lse, info["name"])
        ran += 1
    assert ran >= 2


def test_window_sides_and_causal_window():
    """causal=True with a window keeps the left side and ends at the diagonal."""
    rng = np.random.default_rng(1)
    q = rng.standard_normal((1, 1, 20, 8)).astype(np.float32)
    a = txattn.attention(q, q, q, causal=True, window=(3, 7))
    b = txattn.attention(q, q, q, window=(3, 0))
    np.testing.assert_array_equal(a, b)
    c = txattn.attention(q, q, q, window=(None, None))
    d = txattn.attention(q, q, q)
    assert np.max(np.abs(c - d)) <= txattn.error_bound(q, q, q) * 2
    e = txattn.attention(q, q, q, window=(None, 0))
    f = txattn.attention(q, q, q, causal=True)
    assert np.max(np.abs(e - f)) <= txattn.error_bound(q, q, q, causal=True) * 2
    assert math.isfinite(txattn.error_bound(q, q, q, window=(2, 2)))
