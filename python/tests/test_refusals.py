# SPDX-License-Identifier: MIT
"""Every refusal: what is malformed is refused before the library sees a pointer, with a message
naming the argument (and both shapes where two disagree), and the output is left untouched."""

import numpy as np
import pytest

import txattn


def arrays(B=2, Hq=4, Hkv=2, Nq=5, Nkv=7, D=8, Dv=6, dtype=np.float32):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((B, Hq, Nq, D)).astype(dtype)
    k = rng.standard_normal((B, Hkv, Nkv, D)).astype(dtype)
    v = rng.standard_normal((B, Hkv, Nkv, Dv)).astype(dtype)
    return q, k, v


def refused(exc, match, *args, **kwargs):
    """Calls attention with an out full of a pattern and checks the error and the untouched out."""
    q, k, v = args
    out = kwargs.pop("out", None)
    if out is None and q.ndim == 4 and v.ndim == 4:
        out = np.full(q.shape[:3] + v.shape[3:], 7.0, np.float32)
    with pytest.raises(exc, match=match) as info:
        txattn.attention(q, k, v, out=out, **kwargs)
    if isinstance(out, np.ndarray) and out.dtype == np.float32:
        assert np.all(out == 7.0), "a refused call wrote its output"
    return info.value


def test_shapes_name_argument_and_both_shapes():
    q, k, v = arrays()
    e = refused(ValueError, "k has batch 3 but q has 2", q, arrays(B=3)[1], arrays(B=3)[2])
    assert "(3, 2, 7, 8)" in str(e) and "(2, 4, 5, 8)" in str(e)
    e = refused(ValueError, r"k has dim \(d_qk\) 9 but q has 8", q, arrays(D=9)[1], v)
    assert "(2, 2, 7, 9)" in str(e) and "(2, 4, 5, 8)" in str(e)
    refused(ValueError, "v has rows 6 but k has 7", q, k, arrays(Nkv=6)[2])
    refused(ValueError, "v has heads 1 but k has 2", q, k, arrays(Hkv=1)[2])
    refused(ValueError, "v has batch 1 but q has 2", q, k, arrays(B=1)[2])
    e = refused(ValueError, "q has heads 4 but k has 3.*multiple", q, arrays(Hkv=3)[1], arrays(Hkv=3)[2])
    assert "GQA" in str(e)
    refused(ValueError, "q must be 4-D", q[0], k, v)
    refused(ValueError, "k must be 4-D", q, k[0], v)
    refused(ValueError, "v must be 4-D", q, k, v[0])
    refused(ValueError, "dim 0", q[..., :0], k[..., :0], v)
    refused(ValueError, "dim 0", q, k, v[..., :0])


def test_out_and_lse():
    q, k, v = arrays()
    e = refused(ValueError, "out has shape", q, k, v, out=np.full((2, 4, 5, 7), 7.0, np.float32))
    assert "(2, 4, 5, 6)" in str(e) and "(2, 4, 5, 7)" in str(e)
    ro = np.full((2, 4, 5, 6), 7.0, np.float32)
    ro.flags.writeable = False
    refused(ValueError, "out is read-only", q, k, v, out=ro)
    refused(ValueError, "out has dtype float64", q, k, v, out=np.zeros((2, 4, 5, 6)))
    o = np.full((2, 4, 5, 6), 7.0, np.float32)
    with pytest.raises(ValueError, match="lse out has shape"):
        txattn.attention(q, k, v, return_lse=True, out=(o, np.zeros((2, 4, 6), np.float32)))
    with pytest.raises(ValueError, match="float32"):
        txattn.attention(q, k, v, return_lse=True, out=(o, np.zeros((2, 4, 5), np.float16)))
    with pytest.raises(TypeError, match="pair"):
        txattn.attention(q, k, v, return_lse=True, out=o)
    with pytest.raises(TypeError, match="return_lse"):
        txattn.attention(q, k, v, out=(o, np.zeros((2, 4, 5), np.float32)))
    assert np.all(o == 7.0)
    # the library's own checks: an out overlapping an input (InvalidError, also a ValueError)
    buf = np.full((2, 4, 5, 8), 7.0, np.float32)
    v8 = arrays(Dv=8)[2]
    e = refused(txattn.InvalidError, "overlaps q", buf, k, v8, out=buf)
    assert e.status == "TXATTN_E_INVALID" and e.code == 1 and "overlaps" in e.message
    assert isinstance(e, ValueError) and isinstance(e, txattn.Error)
    # an out whose rows alias each other (row stride 0)
    row = np.full((2, 4, 1, 6), 7.0, np.float32)
    alias = np.lib.stride_tricks.as_strided(row, (2, 4, 5, 6), (96, 24, 0, 4), writeable=True)
    refused(txattn.InvalidError, "overlap", q, k, v, out=alias)
    assert np.all(row == 7.0)
    ro = np.broadcast_to(np.full(6, 7.0, np.float32), (2, 4, 5, 6))
    refused(ValueError, "read-only", q, k, v, out=ro)


def test_dtypes_and_objects():
    q, k, v = arrays()
    refused(ValueError, "q has dtype float64", q.astype(np.float64), k, v)
    refused(ValueError, "k has dtype int32", q, k.astype(np.int32), v)
    refused(ValueError, "v has dtype float32 .big-endian", q, k, v.astype(">f4"))
    with pytest.raises(TypeError, match="q must be a NumPy array"):
        txattn.attention(q.tolist(), k, v)
    with pytest.raises(TypeError, match="context must be a txattn.Context"):
        txattn.attention(q, k, v, context="ctx")


def test_strides_that_cannot_be_addressed():
    q, k, v = arrays(D=16)
    e = refused(ValueError, "last dimension", q[..., ::2], k[..., ::2], v)
    assert "contiguous" in str(e) and "np.ascontiguousarray" in str(e)
    refused(ValueError, "negative stride", q[:, :, ::-1], k, v)
    # one row repeated over batch, heads and rows: all strides 0, which the library reads as
    # a contiguous tensor (and would read past the row)
    row = np.ones(16, np.float32)
    refused(ValueError, "repeats one row", q, np.broadcast_to(row, k.shape), v)
    # misaligned data: a float32 array one byte into a buffer
    raw = np.zeros(q.size * 4 + 4, np.uint8)
    mis = np.frombuffer(raw.data, np.float32, q.size, offset=1).reshape(q.shape)
    refused(ValueError, "aligned", mis, k, v)


def test_masks_scale_and_lengths():
    q, k, v = arrays()
    refused(ValueError, "window left = -1", q, k, v, window=(-1, 2))
    refused(ValueError, "window right = -3", q, k, v, window=(1, -3))
    refused(TypeError, "pair", q, k, v, window=3)
    refused(TypeError, "int", q, k, v, window=(1.5, 2))
    refused(ValueError, "scale", q, k, v, scale=0.0)
    refused(ValueError, "scale", q, k, v, scale=float("nan"))
    refused(ValueError, "scale", q, k, v, scale=float("inf"))
    refused(ValueError, "rounds to 0", q, k, v, scale=1e-300)
    refused(ValueError, "2.3e38", q, k, v, scale=1e39)
    refused(ValueError, "kv_lens has 3 lengths but the batch is 2", q, k, v, kv_lens=[1, 2, 3])
    refused(ValueError, r"kv_lens\[1\] = 8 is outside 0..n_kv = 7", q, k, v, kv_lens=[1, 8])
    refused(ValueError, r"q_lens\[0\] = -1 is outside 0..n_q = 5", q, k, v, q_lens=[-1, 2])
    refused(TypeError, r"q_lens\[1\] must be an int", q, k, v, q_lens=[1, 2.5])
    refused(TypeError, "kv_lens must be a sequence", q, k, v, kv_lens=3)


def test_library_statuses_are_error_subclasses():
    q, k, v = arrays()
    with pytest.raises(txattn.NotFoundError) as info:
        txattn.attention(q, k, v, kernel="no_such.kernel")
    e = info.value
    assert e.status == "TXATTN_E_NOT_FOUND" and "no_such.kernel" in str(e)
    assert isinstance(e, LookupError) and str(e).startswith("TXATTN_E_NOT_FOUND: ")
    for name in ("InvalidError", "UnsupportedError", "NotFoundError", "OutOfMemoryError",
                 "PluginError", "TableError", "FileError", "InternalError"):
        assert issubclass(getattr(txattn, name), txattn.Error)
    with pytest.raises(ValueError, match="threads"):
        txattn.Context(threads=-1)


def test_plan_refuses_other_shapes(ctx):
    q, k, v = arrays()
    plan = ctx.plan(q, k, v, causal=True)
    with pytest.raises(ValueError, match="the plan was made for q"):
        plan(*arrays(Nq=6))
    with pytest.raises(ValueError, match="the plan was made for"):
        plan(q.astype(np.float16), k, v)
    with pytest.raises(ValueError, match="ragged"):
        plan(q, k, v, kv_lens=[1, 2])
    with pytest.raises(ValueError, match="empty problem"):
        ctx.plan(q[:, :, :0], k, v)


def test_merge_refusals():
    q, k, v = arrays()
    o, lse = txattn.attention(q, k, v, return_lse=True)
    with pytest.raises(ValueError, match="as many lses as outputs"):
        txattn.merge([o, o], [lse])
    with pytest.raises(ValueError, match=r"outputs\[1\] has shape"):
        txattn.merge([o, o[:, :, :3]], [lse, lse])
    with pytest.raises(ValueError, match=r"lses\[0\] has shape"):
        txattn.merge([o], [lse[:, :2]])
    with pytest.raises(ValueError, match=r"outputs\[1\] .* dtype float16"):
        txattn.merge([o, o.astype(np.float16)], [lse, lse])
    with pytest.raises(txattn.InvalidError, match="overlaps"):
        txattn.merge([o, o], [lse, lse], out=(o, lse))


def test_no_keys_still_refuses_an_overlapping_out():
    """With no keys the extension writes the zeros itself: an out over q is still refused, and q
    left as it was."""
    q = np.full((1, 2, 3, 4), 7.0, np.float32)
    empty = np.zeros((1, 1, 0, 4), np.float32)
    with pytest.raises(txattn.InvalidError, match="overlaps"):
        txattn.attention(q, empty, empty, out=q)
    assert np.all(q == 7.0)


def test_torch_tensors_that_are_not_strided():
    torch = pytest.importorskip("torch")
    q = torch.randn(1, 2, 3, 4)
    with pytest.raises(ValueError, match="to_dense"):
        txattn.attention(q.to_sparse(), q, q)
    with pytest.raises(ValueError, match="CPU"):
        txattn.attention(q, q.to("meta"), q)


def test_argument_types():
    q, k, v = arrays()
    with pytest.raises(TypeError, match="kernel must be"):
        txattn.attention(q, k, v, kernel=3)
    with pytest.raises(TypeError, match="threads must be an int"):
        txattn.Context(threads=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'causall'"):
        txattn.attention(q, k, v, causall=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'kernel'"):
        txattn.reference(q, k, v, kernel="naive.scalar")
    with pytest.raises(TypeError, match="multiple values"):
        txattn.attention(q, k, v, q=q)
    with pytest.raises(TypeError, match="missing required argument 'v'"):
        txattn.attention(q, k)
    with pytest.raises(ValueError, match="out_dtype"):
        txattn.error_bound(q, k, v, out_dtype="float64")
