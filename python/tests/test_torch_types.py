# SPDX-License-Identifier: MIT
"""txattn.attention on torch tensors of every type against the NumPy fp64 oracle."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import txattn
from test_attention import check_against_oracle, kwargs, problems, tensors

torch = pytest.importorskip("torch")
TORCH_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@given(problems(), st.sampled_from(TORCH_DTYPES), st.sampled_from(TORCH_DTYPES))
def test_torch_tensors_in_every_type(ctx, p, dtype, kv_dtype):
    """torch tensors through DLPack, bfloat16 included: the result is a torch tensor of q's dtype."""
    q, k, v, _ = tensors(p)
    tq = torch.from_numpy(np.asarray(q, np.float32)).to(dtype)
    tk = torch.from_numpy(np.asarray(k, np.float32)).to(kv_dtype)
    tv = torch.from_numpy(np.asarray(v, np.float32)).to(kv_dtype)
    if p["layouts"][1] == "bnhd":  # a strided torch view: [B, N, H, D] transposed
        tk = tk.transpose(1, 2).contiguous().transpose(1, 2)
    o, lse = txattn.attention(tq, tk, tv, **kwargs(p), return_lse=True, context=ctx)
    assert isinstance(o, torch.Tensor) and o.dtype == dtype and isinstance(lse, torch.Tensor)
    as64 = [x.to(torch.float64).numpy() for x in (tq, tk, tv, o)]
    check_against_oracle(p, *as64, lse.numpy(), f"torch {dtype}", tensors=(tq, tk, tv, o))




class DLPackOnly:
    """An object that offers its tensor through DLPack alone, as other array libraries do."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__()

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_dlpack_objects_and_capsules(ctx):
    """Objects with __dlpack__ and DLPack capsules are read through DLPack (bfloat16 included):
    the capsule is consumed ("used_dltensor") and cannot be read twice."""
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(2, 4, 9, 16, generator=g).to(torch.bfloat16) for _ in range(3))
    want = txattn.attention(q, k, v, causal=True, context=ctx)
    out = torch.empty_like(want)
    got = txattn.attention(DLPackOnly(q), DLPackOnly(k), DLPackOnly(v), causal=True, out=out,
                           context=ctx)
    assert got is out and torch.equal(out, want)
    with pytest.raises(ValueError, match="NumPy has no bfloat16"):
        txattn.attention(DLPackOnly(q), k, v, context=ctx)  # a result of q's kind: NumPy
    f = [x.float() for x in (q, k, v)]
    as_numpy = txattn.attention(*(DLPackOnly(x) for x in f), causal=True, context=ctx)
    assert isinstance(as_numpy, np.ndarray)
    np.testing.assert_array_equal(as_numpy, txattn.attention(*f, causal=True, context=ctx).numpy())
    capsule = torch.utils.dlpack.to_dlpack(f[0])
    o = txattn.attention(capsule, f[1], f[2], causal=True, context=ctx)
    np.testing.assert_array_equal(o, as_numpy)
    assert "used_dltensor" in repr(capsule)
    with pytest.raises(ValueError, match="consumed once"):
        txattn.attention(capsule, f[1], f[2], context=ctx)


def test_bfloat16_dlpack_objects_in_plans_and_merges(ctx):
    """bfloat16 through another producer's __dlpack__: a plan is made from such tensors (the
    extension reads their shape and type), merge reads them into a torch out, and where a NumPy
    result would be needed (merge without out, scaled_dot_product_attention) the refusal says
    why and what to pass."""
    g = torch.Generator().manual_seed(9)
    q, k, v = (torch.randn(1, 4, 7, 16, generator=g).to(torch.bfloat16) for _ in range(3))
    plan = ctx.plan(DLPackOnly(q), DLPackOnly(k), DLPackOnly(v), causal=True, return_lse=True)
    assert plan.problem["dtypes"] == ("bf16",) * 4
    o, lse = plan(q, k, v)
    assert torch.equal(o, txattn.attention(q, k, v, causal=True, context=ctx))
    out = (torch.empty_like(o), torch.empty_like(lse))
    got = txattn.merge([DLPackOnly(o), o], [DLPackOnly(lse), lse], out=out)
    assert got[0] is out[0]
    torch.testing.assert_close(out[0], o, rtol=0, atol=2**-7)  # one bf16 rounding
    for call in (lambda: txattn.merge([DLPackOnly(o)], [DLPackOnly(lse)]),
                 lambda: txattn.scaled_dot_product_attention(DLPackOnly(q), DLPackOnly(k),
                                                             DLPackOnly(v))):
        with pytest.raises(ValueError, match=r"NumPy cannot hold this DLPack tensor.*torch.from_dlpack"):
            call()


def test_mixed_types_into_a_torch_out(ctx):
    """f32 queries against a bf16 KV cache into an f16 out, all torch, as the C API allows."""
    g = torch.Generator().manual_seed(8)
    q = torch.randn(1, 8, 5, 64, generator=g)
    k, v = (torch.randn(1, 2, 300, 64, generator=g).to(torch.bfloat16) for _ in range(2))
    out = torch.empty(1, 8, 5, 64, dtype=torch.float16)
    got = txattn.attention(q, k, v, causal=True, out=out, context=ctx)
    assert got is out
    as64 = [x.double().numpy() for x in (q, k, v, out)]
    p = dict(causal=True, window=None, scale=None, q_lens=None, kv_lens=None)
    check_against_oracle(p, *as64, None, "mixed types", tensors=(q, k, v, out))
