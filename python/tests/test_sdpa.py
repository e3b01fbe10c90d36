# SPDX-License-Identifier: MIT
"""txattn.scaled_dot_product_attention against torch's own math path: torch 1.13's
torch._scaled_dot_product_attention_math where it exists, and always the formula torch documents
for scaled_dot_product_attention (top-left causal mask, repeat_interleave for enable_gqa), in
float64."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import txattn

torch = pytest.importorskip("torch")


def torch_math(query, key, value, is_causal=False, scale=None, enable_gqa=False):
    """torch's documented reference implementation of scaled_dot_product_attention, in float64."""
    q, k, v = query.double(), key.double(), value.double()
    L, S = q.size(-2), k.size(-2)
    scale_factor = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    bias = torch.zeros(L, S, dtype=torch.float64)
    if is_causal:
        mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        bias.masked_fill_(mask.logical_not(), float("-inf"))
    if enable_gqa:
        k = k.repeat_interleave(q.size(-3) // k.size(-3), -3)
        v = v.repeat_interleave(q.size(-3) // v.size(-3), -3)
    w = torch.softmax(q @ k.transpose(-2, -1) * scale_factor + bias, dim=-1)
    return w @ v


def tolerance(value, dtype):
    """The library's bound for inputs of magnitude 1 (1e-5 max|V|) plus a 16-bit output's ulp."""
    ulp = {torch.float32: 0.0, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}[dtype]
    vmax = value.abs().max().item() if value.numel() else 1.0
    return vmax * (1e-5 + 2 * ulp) + 1e-7


@given(
    st.integers(1, 2), st.integers(1, 3), st.integers(1, 3), st.integers(0, 20),
    st.integers(0, 20), st.integers(1, 24), st.integers(1, 16), st.booleans(), st.booleans(),
    st.none() | st.floats(0.05, 2.0), st.sampled_from((torch.float32, torch.float16, torch.bfloat16)),
    st.integers(0, 2**31),
)
def test_matches_torch_math(B, hkv, group, L, S, E, Ev, is_causal, gqa, scale, dtype, seed):
    """Where the semantics meet: every L against S (top-left causal included), GQA, scale."""
    g = torch.Generator().manual_seed(seed)
    hq = hkv * group if gqa else hkv
    q = torch.randn(B, hq, L, E, generator=g).to(dtype)
    k = torch.randn(B, hkv, S, E, generator=g).to(dtype)
    v = torch.randn(B, hkv, S, Ev, generator=g).to(dtype)
    out = txattn.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=scale,
                                              enable_gqa=gqa)
    assert isinstance(out, torch.Tensor) and out.dtype == dtype and out.shape == (B, hq, L, Ev)
    want = torch_math(q, k, v, is_causal, scale, gqa)
    if S == 0:  # softmax over no keys: torch's math gives 0 @ v = 0 rows
        want = torch.zeros_like(want)
    err = (out.double() - want).abs().max().item() if out.numel() else 0.0
    assert err <= tolerance(v, dtype)
    if hasattr(torch, "_scaled_dot_product_attention_math") and not gqa and dtype == torch.float32 and S > 0 and L > 0:
        mine, _ = torch._scaled_dot_product_attention_math(q, k, v, None, 0.0, False, is_causal)
        if scale is None:
            assert (out - mine).abs().max().item() <= tolerance(v, dtype) + 1e-6


def test_top_left_causal_rows():
    """torch's is_causal aligns top-left: with L < S row i sees keys 0..i only (the library's own
    causal would give row 0 the keys 0..S-L), and with L > S the rows past S see every key."""
    g = torch.Generator().manual_seed(3)
    for L, S in ((3, 8), (8, 3), (5, 5)):
        q, k, v = (torch.randn(1, 2, n, 4, generator=g) for n in (L, S, S))
        out = txattn.scaled_dot_product_attention(q, k, v, is_causal=True)
        want = torch_math(q, k, v, True)
        assert (out.double() - want).abs().max().item() <= 1e-5 * v.abs().max().item()
        bottom_right = txattn.attention(q, k, v, causal=True)
        if L != S:  # the two alignments differ: this test could tell them apart
            assert (bottom_right.double() - want).abs().max().item() > 1e-3


def test_leading_dimensions_broadcast_like_matmul():
    g = torch.Generator().manual_seed(4)
    cases = [
        ((5, 8), (7, 8), (7, 3)),  # 2-D
        ((4, 5, 8), (4, 7, 8), (4, 7, 3)),  # 3-D (N, L, E)
        ((2, 3, 4, 5, 8), (2, 3, 4, 7, 8), (2, 3, 4, 7, 3)),  # 5-D: two batch dimensions
        ((2, 4, 5, 8), (2, 1, 7, 8), (2, 1, 7, 3)),  # one key/value head for every query head
        ((2, 1, 5, 8), (2, 4, 7, 8), (2, 4, 7, 3)),  # one query head against four
        ((1, 4, 5, 8), (3, 4, 7, 8), (3, 4, 7, 3)),  # query batch broadcast
        ((3, 4, 5, 8), (4, 7, 8), (1, 4, 7, 3)),  # fewer dimensions in key
    ]
    for sq, sk, sv in cases:
        q, k, v = (torch.randn(*s, generator=g) for s in (sq, sk, sv))
        for causal in (False, True):
            out = txattn.scaled_dot_product_attention(q, k, v, is_causal=causal)
            want = torch_math(q, k, v, causal)
            assert out.shape == want.shape, (sq, sk, sv)
            assert (out.double() - want).abs().max().item() <= 1e-5 * v.abs().max().item() + 1e-7


def test_strided_views_are_not_copied_and_results_match():
    """[B, N, H, D] tensors transposed to [B, H, N, D], as models hold them."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 16, 3, 3, 8, generator=g)  # B N (q k v) H D
    q, k, v = (x[:, :, i].transpose(1, 2) for i in range(3))
    assert not q.is_contiguous()
    out = txattn.scaled_dot_product_attention(q, k, v, is_causal=True)
    want = torch_math(q, k, v, True)
    assert (out.double() - want).abs().max().item() <= 1e-5 * v.abs().max().item()


def test_numpy_inputs():
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 5, 8), (2, 3, 9, 8), (2, 3, 9, 4)))
    out = txattn.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert isinstance(out, np.ndarray)
    want = torch_math(*(torch.from_numpy(x) for x in (q, k, v)), True).numpy()
    assert np.max(np.abs(out - want)) <= 1e-5 * np.max(np.abs(v))


def test_refusals():
    q = torch.randn(1, 4, 5, 8)
    k = torch.randn(1, 2, 5, 8)
    with pytest.raises(ValueError, match="is_causal"):  # as torch refuses both
        txattn.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(5, 5, dtype=torch.bool),
                                            is_causal=True)
    with pytest.raises(ValueError, match="broadcast"):
        txattn.scaled_dot_product_attention(q, q, q, attn_mask=torch.zeros(4, 5))
    with pytest.raises(ValueError, match="dropout_p"):
        txattn.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
    with pytest.raises(ValueError, match="broadcast"):  # unequal heads without enable_gqa
        txattn.scaled_dot_product_attention(q, k, k)
    with pytest.raises(ValueError, match="multiple"):
        txattn.scaled_dot_product_attention(torch.randn(1, 3, 5, 8), k, k, enable_gqa=True)
    with pytest.raises(ValueError, match="equal"):
        txattn.scaled_dot_product_attention(q, k, torch.randn(1, 4, 5, 8), enable_gqa=True)
    with pytest.raises(ValueError, match="same dtype"):
        txattn.scaled_dot_product_attention(q, q.half(), q)
    with pytest.raises(ValueError, match="float64"):
        txattn.scaled_dot_product_attention(q.double(), q.double(), q.double())
    with pytest.raises(ValueError, match="dim"):
        txattn.scaled_dot_product_attention(q, torch.randn(1, 4, 5, 7), q)
    with pytest.raises(ValueError, match="CPU"):
        meta = torch.empty(1, 4, 5, 8, device="meta")
        txattn.scaled_dot_product_attention(meta, meta, meta)
    with pytest.raises(ValueError, match="grad"):
        w = torch.randn(1, 4, 5, 8, requires_grad=True)
        txattn.scaled_dot_product_attention(w, w, w)
    with torch.no_grad():  # under no_grad a tensor requiring grad is only data
        w = torch.randn(1, 4, 5, 8, requires_grad=True)
        txattn.scaled_dot_product_attention(w, w, w)
    with pytest.raises(ValueError, match="contiguous"):  # two batch dims that do not combine
        x = torch.randn(3, 2, 4, 5, 8).transpose(0, 1)
        txattn.scaled_dot_product_attention(x, x, x)
