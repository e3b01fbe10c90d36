# SPDX-License-Identifier: MIT
"""attn_mask: txattn.attention's boolean and floating masks broadcast to [batch, heads_q, n_q, n_kv]
against a NumPy float64 oracle, and scaled_dot_product_attention's torch attn_mask against torch's
math path (softmax(q k^T scale + mask) v in float64, as torch documents it)."""

import math

import numpy as np
import pytest

import txattn


def oracle(q, k, v, bias, causal=False):
    """softmax(q k^T / sqrt(d) + bias) v in float64 over [b, h, n, d]; bias broadcast to
    [b, h, n_q, n_kv] (-inf hides); a row that sees no key is 0."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]) + np.broadcast_to(bias, q.shape[:3] + (k.shape[2],))
    if causal:
        nq, nkv = q.shape[2], k.shape[2]
        hide = np.arange(nkv)[None, :] > np.arange(nq)[:, None] + (nkv - nq)
        s = np.where(hide, -np.inf, s)
    m = np.max(s, axis=-1, keepdims=True)
    seen = np.isfinite(m)
    w = np.where(seen, np.exp(s - np.where(seen, m, 0.0)), 0.0)
    z = np.sum(w, axis=-1, keepdims=True)
    return np.where(z > 0, (w @ v) / np.where(z > 0, z, 1.0), 0.0)


def as_bias(mask):
    mask = np.asarray(mask)
    if mask.dtype == np.bool_:
        return np.where(mask, 0.0, -np.inf)
    return mask.astype(np.float64)


def inputs(b=2, hq=4, hkv=2, nq=33, nkv=47, d=16, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((b, hq, nq, d)).astype(np.float32)
    k = rng.standard_normal((b, hkv, nkv, d)).astype(np.float32)
    v = rng.standard_normal((b, hkv, nkv, d)).astype(np.float32)
    return q, k, v


MASK_SHAPES = [(33, 47), (1, 47), (4, 1, 47), (2, 1, 33, 47), (2, 4, 33, 47), (47,), (1, 1, 1, 47)]


@pytest.mark.parametrize("shape", MASK_SHAPES)
@pytest.mark.parametrize("kind", ["bool", "float32", "float16"])
def test_attention_masks_against_the_oracle(shape, kind):
    q, k, v = inputs()
    rng = np.random.default_rng(1)
    if kind == "bool":
        mask = rng.random(shape) < 0.7
    else:
        mask = np.where(rng.random(shape) < 0.3, -np.inf, 2 * rng.standard_normal(shape)).astype(kind)
    for causal in (False, True):
        out = txattn.attention(q, k, v, attn_mask=mask, causal=causal)
        want = oracle(q, k, v, as_bias(mask), causal)
        bound = txattn.error_bound(q, k, v, attn_mask=mask, causal=causal)
        assert np.max(np.abs(out - want)) <= bound + 1e-7
        ref = txattn.reference(q, k, v, attn_mask=mask, causal=causal)
        assert np.max(np.abs(ref - want)) <= 1e-6


def test_rows_that_see_nothing_are_zero_and_lse_minus_inf():
    q, k, v = inputs(b=1, hq=2, hkv=2, nq=8, nkv=8)
    mask = np.ones((8, 8), bool)
    mask[3] = False
    out, lse = txattn.attention(q, k, v, attn_mask=mask, return_lse=True)
    assert np.all(out[:, :, 3] == 0) and np.all(lse[:, :, 3] == -np.inf)
    assert np.all(np.isfinite(lse[:, :, [0, 1, 2, 4]]))


def test_large_biases_and_documents():
    q, k, v = inputs(b=1, hq=2, hkv=1, nq=64, nkv=64, seed=3)
    rng = np.random.default_rng(4)
    bias = (1e4 * rng.standard_normal((64, 64))).astype(np.float32)
    out = txattn.attention(q, k, v, attn_mask=bias)
    assert np.max(np.abs(out - oracle(q, k, v, bias))) <= txattn.error_bound(q, k, v, attn_mask=bias)
    docs = np.repeat(np.arange(4), 16)
    mask = docs[:, None] == docs[None, :]
    out = txattn.attention(q, k, v, attn_mask=mask, causal=True)
    sep = np.concatenate([txattn.attention(q[:, :, i:i + 16], k[:, :, i:i + 16], v[:, :, i:i + 16],
                                           causal=True) for i in range(0, 64, 16)], axis=2)
    assert np.max(np.abs(out - sep)) <= 2 * txattn.error_bound(q, k, v, attn_mask=mask, causal=True)


def test_strided_masks_are_read_in_place():
    """A transposed mask (key stride n_q) and a broadcast one (stride 0) give what their copies give."""
    q, k, v = inputs(b=1, hq=2, hkv=2, nq=20, nkv=20, seed=5)
    rng = np.random.default_rng(6)
    base = rng.standard_normal((20, 20)).astype(np.float32)
    t = base.T  # not contiguous
    assert not t.flags.c_contiguous
    np.testing.assert_array_equal(txattn.attention(q, k, v, attn_mask=t),
                                  txattn.attention(q, k, v, attn_mask=np.ascontiguousarray(t)))
    row = base[:1]
    np.testing.assert_array_equal(txattn.attention(q, k, v, attn_mask=np.broadcast_to(row, (20, 20))),
                                  txattn.attention(q, k, v, attn_mask=np.repeat(row, 20, axis=0)))


def test_plans_take_masks():
    """Context.plan(attn_mask=): a mask held as the calls' default, or its dtype for a mask given
    with each call; the plan's output is attention()'s, and a call's mask replaces the default."""
    ctx = txattn.Context()
    q, k, v = inputs(nq=24, nkv=40, seed=7)
    rng = np.random.default_rng(8)
    bias = np.where(rng.random((4, 24, 40)) < 0.2, -np.inf, rng.standard_normal((4, 24, 40)))
    bias = bias.astype(np.float16)
    docs = rng.random((24, 40)) < 0.6
    plan = ctx.plan(q, k, v, causal=True, attn_mask=bias)
    assert plan.problem["mask_tensor"] == "f16" and ctx.plan(q, k, v).problem["mask_tensor"] is None
    want = txattn.attention(q, k, v, causal=True, attn_mask=bias, context=ctx)
    np.testing.assert_array_equal(plan(q, k, v), want)
    assert np.max(np.abs(plan(q, k, v) - oracle(q, k, v, as_bias(bias), True))) <= \
        txattn.error_bound(q, k, v, causal=True, attn_mask=bias) + 1e-7
    other = (bias[:, ::-1, :] + 1).astype(np.float16)  # strided, and another default
    np.testing.assert_array_equal(plan(q, k, v, attn_mask=other),
                                  txattn.attention(q, k, v, causal=True, attn_mask=other, context=ctx))
    for kind in ("bool", np.bool_, bool):
        each = ctx.plan(q, k, v, attn_mask=kind, return_lse=True)
        assert each.problem["mask_tensor"] == "bool"
        o, lse = each(q, k, v, attn_mask=docs)
        o2, lse2 = txattn.attention(q, k, v, attn_mask=docs, return_lse=True, context=ctx)
        np.testing.assert_array_equal(o, o2)
        np.testing.assert_array_equal(lse, lse2)
        with pytest.raises(ValueError, match="pass attn_mask= to each call"):
            each(q, k, v)
        with pytest.raises(ValueError, match="attn_mask is float32 but the plan was made for a bool"):
            each(q, k, v, attn_mask=docs.astype(np.float32))
    with pytest.raises(ValueError, match="does not broadcast"):
        ctx.plan(q, k, v, attn_mask="bool")(q, k, v, attn_mask=docs[:3])
    with pytest.raises(ValueError, match="made without one"):
        ctx.plan(q, k, v)(q, k, v, attn_mask=docs)
    with pytest.raises(ValueError, match="attn_mask = 'int8'"):
        ctx.plan(q, k, v, attn_mask="int8")
    spec = ctx.plan(q.shape, k.shape, v.shape, attn_mask=np.float32)  # shapes only: a mask per call
    np.testing.assert_array_equal(spec(q, k, v, attn_mask=bias.astype(np.float32)),
                                  txattn.attention(q, k, v, attn_mask=bias.astype(np.float32),
                                                   context=ctx))


def test_refusals():
    q, k, v = inputs(b=1, hq=2, hkv=2, nq=8, nkv=8)
    with pytest.raises(ValueError, match="broadcast"):
        txattn.attention(q, k, v, attn_mask=np.ones((3, 8), bool))
    with pytest.raises(ValueError, match="at most 4"):
        txattn.attention(q, k, v, attn_mask=np.ones((1, 1, 1, 8, 8), bool))
    with pytest.raises(ValueError, match="int64"):
        txattn.attention(q, k, v, attn_mask=np.ones((8, 8), np.int64))
    with pytest.raises(ValueError, match="bool"):  # a boolean is a mask, never q
        txattn.attention(np.ones((1, 1, 8, 8), bool), k, v)


torch = pytest.importorskip("torch")


def torch_math(q, k, v, attn_mask=None, scale=None):
    """torch's documented math for scaled_dot_product_attention with attn_mask, in float64 (a row
    that sees no key is 0, as torch 2.5's math path gives it)."""
    q, k, v = q.double(), k.double(), v.double()
    L, S = q.size(-2), k.size(-2)
    bias = torch.zeros(L, S, dtype=torch.float64)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            bias = bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            bias = bias + attn_mask.double()
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.size(-1)) if scale is None else scale) + bias
    m = s.amax(-1, keepdim=True)
    w = torch.where(torch.isfinite(m), torch.exp(s - torch.where(torch.isfinite(m), m, 0.0)),
                    torch.zeros_like(s))
    z = w.sum(-1, keepdim=True)
    return torch.where(z > 0, (w @ v) / torch.where(z > 0, z, torch.ones_like(z)), torch.zeros_like(z))


@pytest.mark.parametrize("shape", [(5, 9), (3, 1, 9), (2, 1, 5, 9), (9,), (2, 3, 5, 9)])
@pytest.mark.parametrize("dtype", [torch.bool, torch.float32, torch.float16, torch.bfloat16])
def test_sdpa_takes_torchs_attn_mask(shape, dtype):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 9, 8), torch.randn(2, 3, 9, 8)
    if dtype == torch.bool:
        mask = torch.rand(shape) < 0.7
    else:
        mask = torch.where(torch.rand(shape) < 0.3, torch.tensor(float("-inf")),
                           torch.randn(shape)).to(dtype)
    out = txattn.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    want = torch_math(q, k, v, mask)
    assert out.shape == want.shape and out.dtype == torch.float32
    assert (out.double() - want).abs().max().item() <= 1e-5 * v.abs().max().item()


def test_sdpa_masks_16_bit_tensors_and_gqa():
    torch.manual_seed(1)
    q, k, v = torch.randn(1, 4, 7, 16).half(), torch.randn(1, 2, 11, 16).half(), torch.randn(1, 2, 11, 16).half()
    mask = torch.rand(7, 11) < 0.6
    out = txattn.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    want = torch_math(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), mask)
    assert (out.double() - want).abs().max().item() <= 1e-5 * 4 + 2 * 2.0**-10 * 4


def test_attention_takes_torch_masks():
    torch.manual_seed(2)
    q, k, v = (torch.randn(1, 2, 6, 8) for _ in range(3))
    mask = torch.rand(1, 1, 6, 6) < 0.5
    out = txattn.attention(q, k, v, attn_mask=mask)
    want = torch_math(q, k, v, mask[0, 0])
    assert (out.double() - want).abs().max().item() <= 1e-5 * v.abs().max().item()
