# SPDX-License-Identifier: MIT
"""Context.plan for KV caches as servers keep them: 8-bit (kv_dtype, k_scale/v_scale), paged
(block_table: a table or its shape) and packed (q_offsets: offsets or True). A plan made once and
called with each step's tables, offsets and lengths gives what attention() gives on the same kernel,
within the error bound of the NumPy oracle on the cache's exact values; misuse is refused with a
message before any kernel runs."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import txattn
from oracle import attention as oracle
from test_kv8 import exact_values, make_cache
from test_packed import per_sequence


def pages(k, kv_lens, P, rng=None, table=None, spare=2):
    """k [B, H, N, ...] laid into a pool of pages of P rows, [n_pages, H, P, ...], through table
    [B, max_pages] (by default a shuffled one, made from rng, with spare pages besides), and the
    table."""
    B = k.shape[0]
    if table is None:
        max_pages = -(-k.shape[2] // P)
        perm = rng.permutation(B * max_pages + spare).astype(np.int32)
        table = perm[: B * max_pages].reshape(B, max_pages)
    n_pages = table.size + spare
    pool = np.zeros((n_pages, k.shape[1], P) + k.shape[3:], k.dtype)
    for b in range(B):
        for j in range(kv_lens[b]):
            pool[table[b, j // P], :, j % P] = k[b, :, j]
    return pool, table


def caches(k, v, dtype, rng):
    """The 8-bit caches of k and v and the keyword arguments attention() takes for them."""
    if dtype is None:
        return k, v, {}
    if dtype == "q8_0":
        return make_cache(k, dtype, None), make_cache(v, dtype, None), dict(kv_dtype=dtype)
    Hkv = k.shape[1]
    ks = [txattn.fp8_scale(k[:, h], dtype) for h in range(Hkv)]
    vs = [float(rng.uniform(0.003, 0.02)) for _ in range(Hkv)]
    return (make_cache(k, dtype, ks), make_cache(v, dtype, vs),
            dict(kv_dtype=dtype, k_scale=ks, v_scale=vs))


def values(x8, kw, side="k"):
    """What an (8-bit) cache holds, in float64; side "k" or "v" says whose scales apply."""
    if "kv_dtype" not in kw:
        return x8.astype(np.float64)
    return exact_values(x8, kw["kv_dtype"], kw.get(side + "_scale"))


@pytest.mark.parametrize("dtype", ["q8_0", "e4m3", "e5m2"])
@pytest.mark.parametrize("from_shapes", [False, True])
def test_8bit_plan_equals_attention(ctx, dtype, from_shapes):
    rng = np.random.default_rng(1)
    B, Hq, Hkv, Nq, Nkv, D = 2, 4, 2, 3, 70, 64
    q = rng.standard_normal((B, Hq, Nq, D)).astype(np.float32)
    k8, v8, kw = caches(rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32),
                        rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32), dtype, rng)
    args = (q.shape, k8.shape, v8.shape) if from_shapes else (q, k8, v8)
    plan = ctx.plan(*args, causal=True, **kw)
    assert plan.problem["dtypes"] == ("f32", dtype, dtype, "f32")
    o = plan(q, k8, v8)
    assert np.array_equal(o, txattn.attention(q, k8, v8, causal=True, kernel=plan.kernel,
                                              context=ctx, **kw))
    want, _ = oracle(q, values(k8, kw), values(v8, kw, "v"), causal=True)
    assert np.abs(o - want).max() <= txattn.error_bound(q, k8, v8, causal=True, **kw)


def test_fp8_scales_per_call(ctx):
    """k_scale=True: each call gives its scales; scales given to the plan are the calls' default,
    which a call's own replace."""
    rng = np.random.default_rng(2)
    q = rng.standard_normal((1, 2, 1, 32)).astype(np.float32)
    k8, v8, kw = caches(rng.standard_normal((1, 2, 40, 32)).astype(np.float32),
                        rng.standard_normal((1, 2, 40, 32)).astype(np.float32), "e4m3", rng)
    per_call = ctx.plan(q, k8, v8, kv_dtype="e4m3", k_scale=True, v_scale=True)
    with_default = ctx.plan(q, k8, v8, kv_dtype="e4m3", k_scale=kw["k_scale"], v_scale=0.5)
    want = txattn.attention(q, k8, v8, kernel=per_call.kernel, context=ctx, **kw)
    assert np.array_equal(per_call(q, k8, v8, k_scale=kw["k_scale"], v_scale=kw["v_scale"]), want)
    assert np.array_equal(with_default(q, k8, v8, v_scale=kw["v_scale"]), want)
    assert not np.array_equal(with_default(q, k8, v8), want)  # its default v_scale, 0.5
    with pytest.raises(ValueError, match="pass k_scale= to each call"):
        per_call(q, k8, v8, v_scale=1.0)


@pytest.mark.parametrize("dtype", [None, "q8_0", "e4m3"])
def test_paged_plan_with_each_steps_table(ctx, dtype):
    """P 16, shuffled pages: a plan from the table's shape, called with two different tables over
    the same pool, and a plan holding its table as the default."""
    rng = np.random.default_rng(3)
    B, Hq, Hkv, D, P, kv_lens = 3, 4, 2, 32, 16, [37, 0, 50]
    Nkv = 64
    q = rng.standard_normal((B, Hq, 1, D)).astype(np.float32)
    k8, v8, kw = caches(rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32),
                        rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32), dtype, rng)
    kp, table = pages(k8, kv_lens, P, np.random.default_rng(4))
    vp, _ = pages(v8, kv_lens, P, table=table)
    shaped = ctx.plan(q, kp, vp, block_table=table.shape, kv_lens=kv_lens, **kw)
    held = ctx.plan(q, kp, vp, block_table=table, kv_lens=kv_lens, **kw)
    assert shaped.problem["page_size"] == P and shaped.problem["max_pages"] == table.shape[1]
    assert shaped.problem["n_pages"] == kp.shape[0]
    want = txattn.attention(q, kp, vp, block_table=table, kv_lens=kv_lens, kernel=shaped.kernel,
                            context=ctx, **kw)
    assert np.array_equal(shaped(q, kp, vp, block_table=table), want)
    assert np.array_equal(held(q, kp, vp), want)
    ref, _ = oracle(q, values(k8, kw), values(v8, kw, "v"), kv_lens=kv_lens)
    bound = txattn.error_bound(q, kp, vp, block_table=table, kv_lens=kv_lens, **kw)
    assert np.abs(want - ref).max() <= bound
    # the next step: sequences 0 and 2 swap their pages (the pool is the same)
    swapped = table[[2, 1, 0]]
    lens = [kv_lens[2], kv_lens[1], kv_lens[0]]
    o = shaped(q, kp, vp, block_table=swapped, kv_lens=lens)
    assert np.array_equal(o, txattn.attention(q, kp, vp, block_table=swapped, kv_lens=lens,
                                              kernel=shaped.kernel, context=ctx, **kw))


def test_packed_plan_serves_steps_of_any_rows(ctx):
    """q_offsets=True: each call packs its own rows (any total, each sequence at most q's rows at
    plan time); offsets given to the plan are the calls' default."""
    rng = np.random.default_rng(6)
    B, Hq, Hkv, D, Nkv = 3, 4, 2, 16, 50
    k = rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32)
    v = rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32)
    plan = ctx.plan((8, Hq, D), k, v, q_offsets=True, causal=True, return_lse=True)
    assert plan.problem["packed"] and plan.problem["n_q"] == 8
    kv_lens = [50, 9, 30]
    for rows in ((1, 1, 1), (8, 0, 3), (2, 7, 8)):
        off = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
        q = rng.standard_normal((int(off[-1]), Hq, D)).astype(np.float32)
        o, lse = plan(q, k, v, q_offsets=off, kv_lens=kv_lens)
        want_o, want_lse = txattn.attention(q, k, v, q_offsets=off, kv_lens=kv_lens, causal=True,
                                            return_lse=True, kernel=plan.kernel, context=ctx)
        assert np.array_equal(o, want_o) and np.array_equal(lse, want_lse)
        ref, _ = per_sequence(q, k, v, off, kv_lens, causal=True)
        bound = txattn.error_bound(q, k, v, q_offsets=off, kv_lens=kv_lens, causal=True)
        assert np.max(np.abs(o - ref), initial=0) <= bound
    o, lse = plan(np.zeros((0, Hq, D), np.float32), k, v, q_offsets=[0, 0, 0, 0])
    assert o.shape == (0, Hq, D) and lse.shape == (0, Hq)  # a step without rows computes nothing
    off = [0, 2, 3, 7]
    held = ctx.plan(np.zeros((7, Hq, D), np.float32), k, v, q_offsets=off)
    assert held.problem["n_q"] == 4
    q = rng.standard_normal((7, Hq, D)).astype(np.float32)
    assert np.array_equal(held(q, k, v), txattn.attention(q, k, v, q_offsets=off,
                                                          kernel=held.kernel, context=ctx))
    with pytest.raises(ValueError, match="rows, but the plan was made for at most 4"):
        held(q, k, v, q_offsets=[0, 0, 2, 7])


def test_a_server_step(ctx):
    """Packed, paged and q8_0 in one plan: decode rows and a prefill chunk over shared pages."""
    rng = np.random.default_rng(7)
    B, Hq, Hkv, D, P, Nkv = 3, 8, 2, 64, 16, 96
    kv_lens = [96, 17, 40]
    k8, v8, kw = caches(rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32),
                        rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32), "q8_0", rng)
    kp, table = pages(k8, kv_lens, P, np.random.default_rng(8))
    vp, _ = pages(v8, kv_lens, P, table=table)
    plan = ctx.plan((32, Hq, D), kp.shape, vp.shape, q_offsets=True, block_table=table.shape,
                    causal=True, **kw)
    off = np.array([0, 1, 1 + 17, 19], np.int64)  # decode, a 17-row chunk, decode
    q = rng.standard_normal((19, Hq, D)).astype(np.float32)
    o = plan(q, kp, vp, q_offsets=off, block_table=table, kv_lens=kv_lens)
    want = txattn.attention(q, kp, vp, q_offsets=off, block_table=table, kv_lens=kv_lens,
                            causal=True, kernel=plan.kernel, context=ctx, **kw)
    assert np.array_equal(o, want)
    ref, _ = per_sequence(q, values(k8, kw), values(v8, kw, "v"), off, kv_lens, causal=True)
    bound = txattn.error_bound(q, kp, vp, q_offsets=off, block_table=table, kv_lens=kv_lens,
                               causal=True, **kw)
    assert np.abs(o - ref).max() <= bound


def test_misuse_is_refused(ctx):
    rng = np.random.default_rng(9)
    q = rng.standard_normal((2, 2, 1, 32)).astype(np.float32)
    k = rng.standard_normal((2, 2, 20, 32)).astype(np.float32)
    k8 = txattn.quantize(k, "q8_0")
    dense = ctx.plan(q, k, k)
    with pytest.raises(ValueError, match="made for contiguous K/V"):
        dense(q, k, k, block_table=[[0], [1]])
    with pytest.raises(ValueError, match="made for q \\[batch, heads, rows, dim\\]"):
        dense(q[0], k, k, q_offsets=[0, 1, 2])
    with pytest.raises(TypeError, match="unexpected keyword argument 'kv_dtype'"):
        dense(q, k, k, kv_dtype="q8_0")
    with pytest.raises(ValueError, match="kv_dtype must be None, 'q8_0'"):
        ctx.plan(q, k8, k8, kv_dtype="q4_1")
    with pytest.raises(ValueError, match="k must be a uint8 array holding the q8_0 cache"):
        ctx.plan(q, k, k, kv_dtype="q8_0")
    with pytest.raises(ValueError, match="v_scale given, but only kv_dtype 'e4m3' or 'e5m2'"):
        ctx.plan(q, k8, k8, kv_dtype="q8_0", v_scale=1.0)
    with pytest.raises(ValueError, match="needs k_scale=.*or True to give them with each call"):
        ctx.plan(q, k8[..., :32], k8[..., :32], kv_dtype="e4m3")
    q8 = ctx.plan(q, k8, k8, kv_dtype="q8_0")
    with pytest.raises(ValueError, match="q8_0 cache"):
        q8(q, k, k)
    pool = np.zeros((5, 2, 16, 32), np.float32)
    with pytest.raises(ValueError, match="block_table=True: a paged plan needs the table's width"):
        ctx.plan(q, pool, pool, block_table=True)
    with pytest.raises(ValueError, match=r"block_table shape \(3, 2\)"):
        ctx.plan(q, pool, pool, block_table=(3, 2))
    shaped = ctx.plan(q, pool, pool, block_table=(2, 2))
    with pytest.raises(ValueError, match="pass block_table= to each call"):
        shaped(q, pool, pool)
    with pytest.raises(ValueError, match="pools of 5 pages of 16 keys and block tables of 2"):
        shaped(q, pool[:4], pool[:4], block_table=[[0, 1], [2, 3]])
    with pytest.raises(ValueError, match="table of 3"):
        shaped(q, pool, pool, block_table=[[0, 1, 2], [2, 3, 4]])
    out = np.full((2, 2, 1, 32), 7.0, np.float32)
    with pytest.raises(ValueError, match="block_table"):  # page 5 is past the pool
        shaped(q, pool, pool, block_table=[[0, 5], [2, 3]], out=out)
    assert np.all(out == 7.0)
    packed = ctx.plan((4, 2, 32), k, k, q_offsets=True)
    with pytest.raises(ValueError, match="pass q_offsets= to each call"):
        packed(q[0].transpose(1, 0, 2), k, k)
    with pytest.raises(ValueError, match="q_lens must be None with q_offsets"):
        ctx.plan((4, 2, 32), k, k, q_offsets=True, q_lens=[1, 1])


@st.composite
def servers(draw):
    hkv = draw(st.integers(1, 2))
    B = draw(st.integers(1, 3))
    return dict(
        B=B, Hkv=hkv, Hq=hkv * draw(st.integers(1, 2)), D=draw(st.sampled_from([32, 64])),
        P=draw(st.sampled_from([1, 5, 16])), Nkv=draw(st.integers(1, 40)),
        rows=draw(st.lists(st.integers(0, 4), min_size=B, max_size=B)),
        dtype=draw(st.sampled_from([None, "q8_0", "e4m3", "e5m2"])),
        paged=draw(st.booleans()), packed=draw(st.booleans()), causal=draw(st.booleans()),
        seed=draw(st.integers(0, 2**31)),
    )


@given(servers())
def test_plan_and_call_equal_attention(pr):
    """Any mix of 8-bit, paged and packed: the plan's call is attention()'s on its kernel and
    within the bound of the oracle."""
    ctx = txattn.default_context()
    rng = np.random.default_rng(pr["seed"])
    B, Hq, Hkv, D, Nkv = (pr[x] for x in ("B", "Hq", "Hkv", "D", "Nkv"))
    k8, v8, kw = caches(rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32),
                        rng.standard_normal((B, Hkv, Nkv, D)).astype(np.float32), pr["dtype"], rng)
    kv_lens = [int(x) for x in rng.integers(0, Nkv + 1, B)]
    call = dict(kv_lens=kv_lens, **{x: kw[x] for x in ("k_scale", "v_scale") if x in kw})
    plan_kw = dict(kv_dtype=kw.get("kv_dtype"), causal=pr["causal"], kv_lens=kv_lens,
                   k_scale=True if "k_scale" in kw else None,
                   v_scale=True if "v_scale" in kw else None)
    k_in, v_in = k8, v8
    if pr["paged"]:
        k_in, table = pages(k8, kv_lens, pr["P"], rng)
        v_in, _ = pages(v8, kv_lens, pr["P"], table=table)
        call["block_table"] = table
        plan_kw["block_table"] = table.shape
    rows = pr["rows"]
    if pr["packed"]:
        off = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
        q = rng.standard_normal((int(off[-1]), Hq, D)).astype(np.float32)
        call["q_offsets"] = off
        plan_kw["q_offsets"] = True
        q_plan = (4, Hq, D)
    else:
        q = rng.standard_normal((B, Hq, max(1, max(rows)), D)).astype(np.float32)
        q_plan = q.shape
    plan = ctx.plan(q_plan, k_in.shape, v_in.shape, **plan_kw)
    o = plan(q, k_in, v_in, **call)
    akw = dict(call, kv_dtype=kw.get("kv_dtype"), causal=pr["causal"])
    assert np.array_equal(o, txattn.attention(q, k_in, v_in, kernel=plan.kernel, **akw))
    bound = txattn.error_bound(q, k_in, v_in, **akw)
    kv, vv = values(k8, kw), values(v8, kw, "v")
    if pr["packed"]:
        want, _ = per_sequence(q, kv, vv, off, kv_lens, causal=pr["causal"])
    else:
        want, _ = oracle(q, kv, vv, causal=pr["causal"], kv_lens=kv_lens)
    assert np.max(np.abs(o - want), initial=0) <= bound


def test_torch_caches_and_tables(ctx):
    """torch tensors throughout: uint8 q8_0 pools, an int32 block table and int64 offsets give
    torch results equal to NumPy's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    B, Hq, Hkv, D, P, kv_lens = 2, 4, 2, 32, 16, [40, 23]
    k8, v8, kw = caches(rng.standard_normal((B, Hkv, 48, D)).astype(np.float32),
                        rng.standard_normal((B, Hkv, 48, D)).astype(np.float32), "q8_0", rng)
    kp, table = pages(k8, kv_lens, P, rng)
    vp, _ = pages(v8, kv_lens, P, table=table)
    off = np.array([0, 3, 4], np.int64)
    q = rng.standard_normal((4, Hq, D)).astype(np.float32)
    tq, tk, tv = (torch.from_numpy(x) for x in (q, kp, vp))
    plan = ctx.plan(tq, tk, tv, q_offsets=True, block_table=table.shape, kv_dtype="q8_0")
    o = plan(tq, tk, tv, q_offsets=torch.from_numpy(off), block_table=torch.from_numpy(table),
             kv_lens=torch.tensor(kv_lens))
    assert isinstance(o, torch.Tensor) and o.dtype == torch.float32
    assert np.array_equal(o.numpy(), plan(q, kp, vp, q_offsets=off, block_table=table,
                                          kv_lens=kv_lens))
