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


