# SPDX-License-Identifier: MIT
"""8-bit and 4-bit K/V caches (kv_dtype 'q8_0', 'e4m3', 'e5m2', 'q4_0'): txattn.quantize /
dequantize against the
formats, attention on uint8 caches against the float64 oracle on the dequantised values within
txattn.error_bound (dense, ragged, paged, GQA, masks, modifiers), torch tensors alike, and the
refusals."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import txattn
from oracle import attention as oracle

KV8 = ["q8_0", "e4m3", "e5m2", "q4_0"]
BLOCKS = ("q8_0", "q4_0")  # ggml's blocks, which carry their own scales


def exact_values(data, dtype, scales):
    """The values the cache holds, exactly, in float64: q8_0's q * d, q4_0's (q - 8) * d, fp8
    values times their head's scale (dimension 1 of [B, H, N, D]) in float64."""
    if dtype in BLOCKS:
        return txattn.dequantize(data, dtype).astype(np.float64)
    x = txattn.dequantize(data, dtype, 1.0).astype(np.float64)  # the fp8 values themselves
    return x * np.asarray(scales, dtype=np.float64)[None, :, None, None]


def make_cache(x, dtype, scales):
    """x [B, H, N, D] quantised head by head (fp8: each head's own scale)."""
    if dtype in BLOCKS:
        return txattn.quantize(x, dtype)
    return np.stack(
        [txattn.quantize(x[:, h], dtype, scales[h]) for h in range(x.shape[1])], axis=1
    )


@st.composite
def problems(draw):
    hkv = draw(st.integers(1, 2))
    return dict(
        B=draw(st.integers(1, 2)),
        Hkv=hkv,
        Hq=hkv * draw(st.integers(1, 3)),
        Nq=draw(st.integers(1, 5)),
        Nkv=draw(st.integers(1, 48)),
        D=draw(st.sampled_from([32, 64])),
        dtype=draw(st.sampled_from(KV8)),
        causal=draw(st.booleans()),
        ragged=draw(st.booleans()),
        amp=draw(st.sampled_from([1.0, 4.0])),
        softcap=draw(st.sampled_from([None, 8.0])),
        seed=draw(st.integers(0, 2**31)),
    )


@given(problems())
def test_attention_within_the_bound(pr):
    rng = np.random.default_rng(pr["seed"])
    B, Hq, Hkv, Nq, Nkv, D = (pr[x] for x in ("B", "Hq", "Hkv", "Nq", "Nkv", "D"))
    dtype, amp = pr["dtype"], pr["amp"]
    q = (amp * rng.standard_normal((B, Hq, Nq, D))).astype(np.float32)
    k = (amp * rng.standard_normal((B, Hkv, Nkv, D))).astype(np.float32)
    v = rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32)
    fp8 = dtype not in BLOCKS
    ks = [txattn.fp8_scale(k[:, h], dtype) * 1.37 for h in range(Hkv)] if fp8 else None
    vs = [float(rng.uniform(0.003, 0.02)) for _ in range(Hkv)] if fp8 else None
    k8, v8 = make_cache(k, dtype, ks), make_cache(v, dtype, vs)
    kw = dict(causal=pr["causal"], kv_dtype=dtype, softcap=pr["softcap"])
    if fp8:
        kw.update(k_scale=ks, v_scale=vs)
    kv_lens = [int(x) for x in rng.integers(0, Nkv + 1, B)] if pr["ragged"] else None
    o = txattn.attention(q, k8, v8, kv_lens=kv_lens, **kw)
    bound = txattn.error_bound(q, k8, v8, kv_lens=kv_lens, **kw)
    want, _ = oracle(q, exact_values(k8, dtype, ks), exact_values(v8, dtype, vs),
                     causal=pr["causal"], kv_lens=kv_lens, softcap=pr["softcap"])
    err = np.abs(o.astype(np.float64) - want)
    assert np.all(err <= bound), (err.max(), bound)


@pytest.mark.parametrize("dtype", KV8)
def test_paged_cache(dtype):
    """The same keys as a dense cache and as shuffled pages of 16: the same bits."""
    rng = np.random.default_rng(5)
    B, Hq, Hkv, D, P = 2, 4, 2, 32, 16
    kv_lens = [37, 20]
    Nkv = max(kv_lens)
    q = rng.standard_normal((B, Hq, 1, D)).astype(np.float32)
    k = rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32)
    v = rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32)
    scales = [0.01, 0.02]
    k8, v8 = make_cache(k, dtype, scales), make_cache(v, dtype, scales)
    kw = dict(kv_dtype=dtype) if dtype in BLOCKS else dict(kv_dtype=dtype, k_scale=scales,
                                                           v_scale=scales)
    max_pages = -(-Nkv // P)
    perm = rng.permutation(B * max_pages)
    table = perm.reshape(B, max_pages).astype(np.int32)
    kp = np.zeros((B * max_pages, Hkv, P, k8.shape[-1]), np.uint8)
    vp = np.zeros_like(kp)
    for b in range(B):
        for j in range(Nkv):
            kp[table[b, j // P], :, j % P] = k8[b, :, j]
            vp[table[b, j // P], :, j % P] = v8[b, :, j]
    dense = txattn.reference(q, k8, v8, kv_lens=kv_lens, **kw)
    paged = txattn.reference(q, kp, vp, kv_lens=kv_lens, block_table=table, **kw)
    assert np.array_equal(dense, paged)
    o = txattn.attention(q, kp, vp, kv_lens=kv_lens, block_table=table, **kw)
    bound = txattn.error_bound(q, kp, vp, kv_lens=kv_lens, block_table=table, **kw)
    assert np.abs(o - dense).max() <= bound


def test_quantize_formats():
    """q8_0 is ggml's block; fp8 rounds to nearest even and saturates; dequantize(quantize(x))
    quantises to the same bytes again."""
    x = np.arange(32, dtype=np.float32) - 15.5
    x[0], x[1] = 127.0, 62.5
    blk = txattn.quantize(x, "q8_0")
    assert blk.shape == (34,) and blk.dtype == np.uint8
    assert blk[:2].view(np.float16)[0] == 1.0  # d = amax / 127
    qs = blk[2:].view(np.int8)
    assert qs[0] == 127 and qs[1] == 63  # roundf: half away from zero
    back = txattn.dequantize(blk, "q8_0")
    assert np.array_equal(txattn.quantize(back, "q8_0"), blk)
    e = txattn.quantize(np.array([1.0625, 1000.0, -np.inf, np.nan], np.float32), "e4m3")
    assert list(e[:3]) == [0x38, 0x7E, 0xFE] and e[3] & 0x7F == 0x7F
    f = txattn.quantize(np.array([3.0], np.float32), "e5m2", 0.375)
    assert txattn.dequantize(f, "e5m2", 0.375)[0] == 3.0
    assert txattn.fp8_scale(np.array([896.0, -1.0], np.float32), "e4m3") == 2.0
    h = txattn.quantize(back.astype(np.float16), "q8_0")  # from float16 alike
    assert np.array_equal(h, blk)


def test_q4_0_is_ggml():
    """q4_0: d = m / -8 for m the first value of the largest magnitude, q = min(15, (int)(x / d +
    8.5)), value c < 16 in the low nibble of byte c, c >= 16 in the high nibble of byte c - 16;
    the cache holds (q - 8) * d, and quantising that again gives the same bytes."""
    x = np.tile(np.arange(16, dtype=np.float32) - 7.0, 2)  # -7 .. 8
    x[3], x[20] = -16.0, 16.0
    blk = txattn.quantize(x, "q4_0")
    assert blk.shape == (18,) and blk.dtype == np.uint8
    d = blk[:2].view(np.float16)[0]
    assert d == 2.0
    q = np.concatenate([blk[2:] & 0x0F, blk[2:] >> 4]).astype(np.int64)
    want = np.minimum(15, (x / np.float32(2.0) + np.float32(8.5)).astype(np.int64))
    assert q[3] == 0 and q[20] == 15 and np.array_equal(q, want)
    back = txattn.dequantize(blk, "q4_0")
    assert np.array_equal(back, (q - 8).astype(np.float32) * np.float32(2.0))
    assert np.array_equal(txattn.quantize(back, "q4_0"), blk)
    rows = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    assert txattn.quantize(rows, "q4_0").shape == (3, 36)
    with pytest.raises(ValueError, match="18-byte q4_0 blocks"):
        k4 = txattn.quantize(np.zeros((1, 1, 4, 32), np.float32), "q4_0")
        txattn.attention(np.zeros((1, 1, 1, 32), np.float32), k4[..., :10], k4[..., :10],
                         kv_dtype="q4_0")
    with pytest.raises(ValueError, match="q4_0 needs no scale"):
        txattn.fp8_scale(x, "q4_0")


def test_refusals():
    q = np.zeros((1, 1, 1, 32), np.float32)
    k = np.zeros((1, 1, 4, 32), np.float32)
    k8 = txattn.quantize(k, "q8_0")
    with pytest.raises(ValueError, match="kv_dtype must be"):
        txattn.attention(q, k8, k8, kv_dtype="int8")
    with pytest.raises(ValueError, match="must be a uint8 array"):
        txattn.attention(q, k, k, kv_dtype="q8_0")
    with pytest.raises(ValueError, match="34-byte q8_0 blocks"):
        txattn.attention(q, k8[..., :30], k8[..., :30], kv_dtype="q8_0")
    with pytest.raises(ValueError, match="only kv_dtype 'e4m3' or 'e5m2' takes scales"):
        txattn.attention(q, k8, k8, kv_dtype="q8_0", k_scale=1.0)
    with pytest.raises(ValueError, match="needs k_scale"):
        txattn.attention(q, k8[..., :32], k8[..., :32], kv_dtype="e4m3")
    with pytest.raises(txattn.InvalidError, match="k_scale"):
        txattn.attention(q, k8[..., :32], k8[..., :32], kv_dtype="e4m3", k_scale=0.0,
                         v_scale=1.0)
    with pytest.raises(ValueError, match="dtype uint8"):
        txattn.attention(q, k8, k8)
    with pytest.raises(ValueError, match="multiple of 32"):
        txattn.quantize(np.zeros(40, np.float32), "q8_0")
    with pytest.raises(txattn.InvalidError, match="value 3"):
        txattn.quantize(np.array([0, 0, 0, np.nan] + [0] * 28, np.float32), "q8_0")


def test_torch_caches():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(3)
    q = torch.randn(1, 4, 2, 64, generator=g)
    k = torch.randn(1, 2, 30, 64, generator=g, dtype=torch.bfloat16)
    v = torch.randn(1, 2, 30, 64, generator=g)
    k8, v8 = txattn.quantize(k, "q8_0"), txattn.quantize(v, "q8_0")
    assert isinstance(k8, torch.Tensor) and k8.dtype == torch.uint8 and k8.shape[-1] == 68
    o = txattn.attention(q, k8, v8, kv_dtype="q8_0", causal=True)
    assert isinstance(o, torch.Tensor)
    want, _ = oracle(q.numpy(), txattn.dequantize(k8, "q8_0").numpy(),
                     txattn.dequantize(v8, "q8_0").numpy(), causal=True)
    bound = txattn.error_bound(q, k8, v8, kv_dtype="q8_0", causal=True)
    assert np.abs(o.numpy() - want).max() <= bound
