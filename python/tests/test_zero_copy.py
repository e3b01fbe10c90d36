# SPDX-License-Identifier: MIT
"""Zero copy: strided views are used where they lie, and the output is written where asked;
what the C API cannot address is refused, never copied behind the caller's back."""

import numpy as np
import pytest

import oracle
import txattn


def bnhd(seed, B=2, N=24, H=4, D=16):
    """A [B, N, H, D] array, as models keep activations, and its [B, H, N, D] view."""
    x = np.random.default_rng(seed).standard_normal((B, N, H, D)).astype(np.float32)
    return x, x.transpose(0, 2, 1, 3)


def test_transposed_views_in_and_out():
    _, q = bnhd(0)
    _, k = bnhd(1, H=2)
    _, v = bnhd(2, H=2, D=8)
    buffer = np.zeros((2, 24, 4, 8), np.float32)  # [B, N, H, Dv], written through its view
    out = buffer.transpose(0, 2, 1, 3)
    result = txattn.attention(q, k, v, causal=True, out=out)
    assert result is out and np.shares_memory(result, buffer)
    want = oracle.attention(q, k, v, causal=True)[0]
    assert np.max(np.abs(buffer.transpose(0, 2, 1, 3) - want)) <= txattn.error_bound(q, k, v, causal=True)
    # the same call on contiguous copies gives the same numbers
    same = txattn.attention(*(np.ascontiguousarray(x) for x in (q, k, v)), causal=True,
                            kernel="naive.scalar")
    again = txattn.attention(q, k, v, causal=True, kernel="naive.scalar")
    np.testing.assert_array_equal(same, again)


def test_inputs_are_read_in_place():
    """A change to the underlying [B, N, H, D] array shows in the next result: the view, not a
    copy, was read."""
    x, q = bnhd(3)
    a = txattn.attention(q, q, q, kernel="naive.scalar")
    x[:, :, 1] *= 2.0  # head 1, through the base array
    b = txattn.attention(q, q, q, kernel="naive.scalar")
    np.testing.assert_array_equal(a[:, 0], b[:, 0])
    assert not np.array_equal(a[:, 1], b[:, 1])


def test_torch_views_and_out():
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 24, 4, 16)
    q = x.transpose(1, 2)
    buffer = torch.zeros(2, 24, 4, 16)
    out = buffer.transpose(1, 2)
    result = txattn.attention(q, q, q, causal=True, out=out)
    assert result is out and result.data_ptr() == buffer.data_ptr()
    want = oracle.attention(q.numpy(), q.numpy(), q.numpy(), causal=True)[0]
    assert np.max(np.abs(out.numpy() - want)) <= txattn.error_bound(q, q, q, causal=True)
    with pytest.raises(ValueError, match="contiguous"):
        txattn.attention(x.permute(0, 2, 3, 1), q, q)  # the element dimension strided


def test_what_cannot_be_addressed_is_refused():
    x, q = bnhd(4)
    with pytest.raises(ValueError, match=r"last dimension.*np\.ascontiguousarray"):
        txattn.attention(q.transpose(0, 1, 3, 2), q.transpose(0, 1, 3, 2), q)
    with pytest.raises(ValueError, match="negative stride"):
        txattn.attention(q[:, :, ::-1], q, q)
