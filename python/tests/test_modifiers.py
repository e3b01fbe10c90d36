# SPDX-License-Identifier: MIT
"""The score modifiers from Python: softcap, alibi_slopes, sinks and sink_keys on attention(),
reference(), error_bound(), plans and merge(), against the NumPy fp64 oracle (oracle.py) within
error_bound's bound, alone and combined with masks, GQA, ragged batches, lse, strides and every
dtype (bfloat16 through torch); alibi_slopes(); and every refusal of a malformed modifier."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import oracle
import txattn
from test_attention import check_against_oracle, kwargs, problems, tensors


def head_values(draw, n, low, high, minus_inf=False):
    values = draw(st.lists(st.floats(low, high), min_size=n, max_size=n))
    if minus_inf:
        values = [-math.inf if draw(st.integers(0, 4)) == 0 else x for x in values]
    return values


@st.composite
def modified(draw):
    """A problem of test_attention's with any combination of the modifiers; slopes and sinks as
    lists, float64 or float32 NumPy arrays."""
    p = draw(problems())
    p["softcap"] = draw(st.none() | st.floats(0.25, 30.0))
    alibi = draw(st.sampled_from(("none", "standard", "random")))
    if alibi == "standard":
        p["alibi_slopes"] = txattn.alibi_slopes(p["Hq"], draw(st.sampled_from((8.0, 1.0, 0.0))))
    elif alibi == "random":
        p["alibi_slopes"] = np.array(head_values(draw, p["Hq"], -1.0, 1.0))
    if draw(st.booleans()):
        sinks = head_values(draw, p["Hq"], -4.0, 6.0, minus_inf=True)
        p["sinks"] = draw(st.sampled_from((list, np.array, lambda x: np.array(x, np.float32))))(sinks)
    p["sink_keys"] = draw(st.integers(0, 6))
    return p


@given(modified())
def test_modifiers_match_the_oracle(ctx, p):
    """attention() and reference() within error_bound() of the NumPy oracle, o and lse, with
    every modifier, mask, GQA, ragged batch and layout of test_attention's problems."""
    q, k, v, o = tensors(p)
    lse = np.empty((p["B"], p["Hq"], p["Nq"]), np.float32) if p["lse"] else None
    out = (o, lse) if p["lse"] else o
    txattn.attention(q, k, v, **kwargs(p), return_lse=p["lse"], out=out, context=ctx)
    check_against_oracle(p, q, k, v, o, lse, "attention with modifiers")
    r, rl = txattn.reference(q, k, v, **kwargs(p), return_lse=True)
    check_against_oracle(p, q, k, v, r, rl, "reference with modifiers")


def random(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def assert_within_bound(o, q, k, v, lse=None, **kw):
    ref, ref_lse = oracle.attention(q, k, v, **{n: x for n, x in kw.items() if n != "context"})
    bound, lse_abs, lse_rel = txattn.error_bound(q, k, v, return_lse=True, out=o,
                                                 **{n: x for n, x in kw.items() if n != "context"})
    err = np.max(np.abs(np.asarray(o, np.float64) - ref))
    assert err <= bound, f"max|o - oracle| = {err} > bound {bound} ({kw})"
    if lse is not None:
        fin = np.isfinite(ref_lse)
        assert np.all(np.abs(lse[fin] - ref_lse[fin]) <= lse_abs + lse_rel * np.abs(ref_lse[fin]))
        assert np.all(np.isneginf(lse[~fin]))


def test_each_modifier_changes_the_result_as_the_oracle_says(ctx):
    """Each modifier alone, then all at once, on a causal GQA problem: within the bound of the
    oracle, and measurably different from the call without it (so none is dropped on the way)."""
    q, k, v = random((2, 4, 13, 16), 1, 2.0), random((2, 2, 29, 16), 2, 2.0), random((2, 2, 29, 8), 3)
    slopes = txattn.alibi_slopes(4)
    sinks = np.array([2.0, -np.inf, 0.5, 4.0])
    plain = txattn.attention(q, k, v, causal=True, context=ctx)
    cases = [dict(softcap=1.5), dict(alibi_slopes=slopes), dict(sinks=sinks),
             dict(window=(2, 0), sink_keys=4),
             dict(softcap=1.5, alibi_slopes=slopes, sinks=sinks, window=(3, 0), sink_keys=2)]
    for kw in cases:
        kw = dict(dict(causal=True), **kw)
        o, lse = txattn.attention(q, k, v, return_lse=True, context=ctx, **kw)
        assert_within_bound(o, q, k, v, lse, **kw)
        base = txattn.attention(q, k, v, window=kw.get("window"), causal=True, context=ctx)
        assert np.max(np.abs(o - (base if "sink_keys" in kw else plain))) > 1e-2, kw
        # with sinks lse stays the log-sum-exp over the keys alone
        if "sinks" in kw:
            _, lse_without = txattn.attention(q, k, v, return_lse=True, context=ctx,
                                              **{n: x for n, x in kw.items() if n != "sinks"})
            assert np.max(np.abs(lse - lse_without)) <= 1e-5 * np.max(np.abs(lse_without))


def test_the_plan_cache_tells_modified_problems_apart(ctx):
    """The same shape with and without each modifier, in turns on one context: each call computes
    its own problem (the library's plan cache once keyed on the shape alone)."""
    q = random((1, 2, 9, 8), 4)
    context = txattn.Context(threads=1)
    for kw in (dict(softcap=0.5), dict(alibi_slopes=[0.5, 0.25]), dict(sinks=[3.0, 1.0]),
               dict(window=(1, 0), sink_keys=3)):
        plain = {"causal": True, "window": kw.get("window")}
        for turn in (plain, dict(plain, **kw), plain):
            o = txattn.attention(q, q, q, context=context, **turn)
            assert_within_bound(o, q, q, q, **turn)


def test_torch_tensors_and_dtypes_with_every_modifier(ctx):
    """torch q, k, v in float32, float16 and bfloat16 with torch slopes and sink logits (of any
    float dtype, a Parameter's included), GQA, a ragged batch, a window with sink keys and lse:
    the result is a torch tensor within the bound of the oracle on the same (rounded) values."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(7)
    slopes = torch.tensor(txattn.alibi_slopes(8, 4.0), dtype=torch.float64)
    sinks = torch.nn.Parameter(torch.randn(8, generator=gen))  # requires grad, as a model's
    kw = dict(causal=True, window=(5, 0), sink_keys=3, softcap=7.5, q_lens=[11, 4],
              kv_lens=[30, 19])
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        q = torch.randn(2, 11, 8, 32, generator=gen).to(dtype).transpose(1, 2)  # [B, N, H, D] view
        k = torch.randn(2, 2, 30, 32, generator=gen).to(dtype)
        v = torch.randn(2, 2, 30, 16, generator=gen).to(dtype)
        s = sinks.to(dtype) if dtype != torch.float32 else sinks
        o, lse = txattn.attention(q, k, v, alibi_slopes=slopes, sinks=s, return_lse=True,
                                  context=ctx, **kw)
        assert isinstance(o, torch.Tensor) and o.dtype == dtype and lse.dtype == torch.float32
        n = [x.detach().float().numpy() for x in (q, k, v, s)]
        ref, ref_lse = oracle.attention(*n[:3], alibi_slopes=slopes.numpy(), sinks=n[3], **kw)
        bound, lse_abs, lse_rel = txattn.error_bound(q, k, v, alibi_slopes=slopes, sinks=s,
                                                     return_lse=True, **kw)
        for b, nq in enumerate(kw["q_lens"]):
            err = np.max(np.abs(o[b, :, :nq].float().numpy() - ref[b, :, :nq]))
            assert err <= bound, f"{dtype}: {err} > {bound}"
            got_l, want_l = lse[b, :, :nq].numpy(), ref_lse[b, :, :nq]
            assert np.all(np.abs(got_l - want_l) <= lse_abs + lse_rel * np.abs(want_l))


@pytest.mark.parametrize("modifier", ["alibi_slopes", "sinks"])
def test_plans_carry_the_modifiers(ctx, modifier):
    """Context.plan takes every modifier; slopes and sinks given to it are the calls' default
    (copied: changing the array afterwards changes nothing), a call's own replace them, and True
    makes a plan whose calls give them. plan.problem shows them."""
    q, k, v = random((1, 4, 6, 16), 8), random((1, 2, 40, 16), 9), random((1, 2, 40, 16), 10)
    values = np.array([0.3, -0.2, 0.1, 1.5]) if modifier == "alibi_slopes" else np.array([1.0, -np.inf, 3.0, 0.0])
    other = values[::-1].copy()
    kw = dict(causal=True, softcap=20.0, window=(16, 0), sink_keys=2)
    plan = ctx.plan(q, k, v, **kw, **{modifier: values.copy()})
    p = plan.problem
    assert p["softcap"] == 20.0 and p["sink_keys"] == 2 and p[modifier.split("_")[0]] is True
    assert p["alibi" if modifier == "sinks" else "sinks"] is False
    assert_within_bound(plan(q, k, v), q, k, v, **kw, **{modifier: values})
    assert_within_bound(plan(q, k, v, **{modifier: other}), q, k, v, **kw, **{modifier: other})
    per_call = ctx.plan(q, k, v, **kw, **{modifier: True})
    assert_within_bound(per_call(q, k, v, **{modifier: other}), q, k, v, **kw, **{modifier: other})
    with pytest.raises(ValueError, match=f"made with {modifier}=True: pass {modifier}="):
        per_call(q, k, v)
    plain = ctx.plan(q, k, v, causal=True)
    assert plain.problem["softcap"] is None and plain.problem["sink_keys"] == 0
    with pytest.raises(ValueError, match=f"{modifier} given, but the plan was made without it"):
        plain(q, k, v, **{modifier: values})
    with pytest.raises(ValueError, match=f"{modifier} has 3 entries but q has 4 heads"):
        plan(q, k, v, **{modifier: values[:3]})
    shape_plan = ctx.plan((1, 4, 6, 16), (1, 2, 40, 16), (1, 2, 40, 16), **{modifier: values})
    assert_within_bound(shape_plan(q, k, v), q, k, v, **{modifier: values})


def test_merge_applies_the_sinks_once():
    """Attention over three key ranges without sinks, merged with sinks=, is attention over all
    keys with them (lse the whole's, over the keys alone); NumPy and torch alike."""
    q, k, v = random((2, 4, 5, 16), 11, 2.0), random((2, 2, 60, 16), 12, 2.0), random((2, 2, 60, 8), 13)
    sinks = np.array([1.0, 30.0, -np.inf, -2.0])  # head 1 dominated by its sink, head 2 none
    cuts = (0, 7, 8, 60)
    parts = [txattn.attention(q, k[:, :, a:b], v[:, :, a:b], softcap=4.0, return_lse=True)
             for a, b in zip(cuts, cuts[1:])]
    o, lse = txattn.merge([x[0] for x in parts], [x[1] for x in parts], sinks=sinks)
    whole, whole_lse = txattn.attention(q, k, v, softcap=4.0, sinks=sinks, return_lse=True)
    ref, ref_lse = oracle.attention(q, k, v, softcap=4.0, sinks=sinks)
    bound = txattn.error_bound(q, k, v, softcap=4.0, sinks=sinks)
    merged_slack = (3 * 3 + 3 + np.max(np.abs(ref_lse))) * 2.0**-24 * np.max(np.abs(v))
    assert np.max(np.abs(o - ref)) <= 2 * bound + merged_slack
    assert np.max(np.abs(o - whole)) <= 3 * bound + merged_slack
    assert np.max(np.abs(o[:, 1])) < 1e-6  # the dominating sink
    assert np.max(np.abs(lse - ref_lse)) <= 1e-5 * np.max(np.abs(ref_lse))
    plain, _ = txattn.merge([x[0] for x in parts], [x[1] for x in parts])
    assert np.max(np.abs(plain[:, 1] - o[:, 1])) > 0.1  # not the merge without sinks
    np.testing.assert_array_equal(plain[:, 2], o[:, 2])  # -inf: no sink
    with pytest.raises(ValueError, match=r"sinks has 3 entries but out has 4 heads"):
        txattn.merge([x[0] for x in parts], [x[1] for x in parts], sinks=sinks[:3])
    torch = pytest.importorskip("torch")
    to, tl = txattn.merge([torch.from_numpy(x[0]) for x in parts],
                          [torch.from_numpy(x[1]) for x in parts], sinks=torch.from_numpy(sinks))
    assert isinstance(to, torch.Tensor)
    np.testing.assert_array_equal(to.numpy(), o)


def test_alibi_slopes_are_the_standard_ones():
    """ggml's slopes: 2^-(h+1) for 8 heads and max_bias 8; past the largest power of two, the odd
    powers of 2^(-max_bias / 2n)."""
    s = txattn.alibi_slopes(8)
    assert isinstance(s, np.ndarray) and s.dtype == np.float32 and s.shape == (8,)
    np.testing.assert_array_equal(s, 2.0 ** -np.arange(1, 9))
    s12 = txattn.alibi_slopes(12)
    np.testing.assert_array_equal(s12[:8], 2.0 ** -np.arange(1, 9))
    np.testing.assert_allclose(s12[8:], 2.0 ** (-0.5 * np.array([1, 3, 5, 7])), rtol=1e-6)
    np.testing.assert_array_equal(txattn.alibi_slopes(4, max_bias=0.0), np.ones(4, np.float32))
    np.testing.assert_allclose(txattn.alibi_slopes(32, 16.0)[:2], [2.0**-0.5, 0.5], rtol=1e-6)
    for heads, bias in ((0, 8.0), (-3, 8.0), (4, -1.0), (4, math.nan), (4, math.inf)):
        with pytest.raises(ValueError):
            txattn.alibi_slopes(heads, bias)
    with pytest.raises(TypeError):
        txattn.alibi_slopes(4.5)


def test_every_kernel_by_name_with_every_modifier(ctx):
    """kernels() lists the modifier flags (naive's at least); every usable kernel that declares
    all four computes a problem with all of them within the bound when named (kernel=), and one
    that declares none refuses it (UnsupportedError) rather than drop them."""
    all_four = {"softcap", "alibi", "sinks", "sink_keys"}
    assert all_four <= set(next(k for k in ctx.kernels() if k["name"].startswith("naive"))["flags"])
    q, k, v = random((2, 4, 21, 16), 16, 2.0), random((2, 2, 37, 16), 17, 2.0), random((2, 2, 37, 8), 18)
    kw = dict(causal=True, window=(9, 0), sink_keys=3, softcap=3.0, alibi_slopes=txattn.alibi_slopes(4),
              sinks=[0.5, -1.0, -math.inf, 2.0], kv_lens=[37, 12])
    ran = refused = 0
    for info in ctx.kernels():
        if not info["usable"] or "f32" not in info["dtypes"]["q"]:
            continue
        flags = set(info["flags"])
        if all_four <= flags:
            o, lse = txattn.attention(q, k, v, return_lse=True, kernel=info["name"], context=ctx, **kw)
            assert_within_bound(o, q, k, v, lse, **kw)
            ran += 1
        elif not flags & all_four:
            with pytest.raises(txattn.UnsupportedError):
                txattn.attention(q, k, v, kernel=info["name"], context=ctx, **kw)
            refused += 1
    assert ran >= 2 and refused >= 1


def test_modifier_refusals():
    """Malformed modifiers raise before the library sees a pointer, naming the argument and both
    shapes or the value; the output given is left untouched."""
    q = random((1, 4, 6, 8), 14)
    out = np.full((1, 4, 6, 8), 7.0, np.float32)
    bad = [
        (dict(alibi_slopes=[0.5] * 3), ValueError,
         r"alibi_slopes has 3 entries but q has 4 heads: one per query head \(alibi_slopes \(3,\), q \(1, 4, 6, 8\)\)"),
        (dict(sinks=np.zeros(5)), ValueError, r"sinks has 5 entries but q has 4 heads"),
        (dict(alibi_slopes=np.ones((2, 2))), ValueError, r"alibi_slopes must be 1-D.*got shape \(2, 2\)"),
        (dict(sinks=np.float32(1.0)), ValueError, r"sinks must be 1-D"),
        (dict(alibi_slopes=[0.5, math.nan, 0.1, 0.1]), ValueError, r"alibi_slopes\[1\] = nan: a slope must be finite"),
        (dict(alibi_slopes=[0.5, 0.1, -math.inf, 0.1]), ValueError, r"alibi_slopes\[2\] = -inf"),
        (dict(alibi_slopes=[1e39, 0.1, 0.1, 0.1]), ValueError, r"beyond float32"),
        (dict(sinks=[0.0, math.inf, 0.0, 0.0]), ValueError, r"sinks\[1\] = inf: a sink logit must be finite, or -inf"),
        (dict(sinks=[0.0, 0.0, 0.0, math.nan]), ValueError, r"sinks\[3\] = nan"),
        (dict(sinks=[0.0, "a", 0.0, 0.0]), TypeError, r"sinks\[1\] = 'a'"),
        (dict(sinks="abcd"), TypeError, r"sinks must be a 1-D array"),
        (dict(alibi_slopes=True), TypeError, r"alibi_slopes must be a 1-D array"),
        (dict(softcap=0.0), ValueError, r"softcap = 0.0: .*positive finite"),
        (dict(softcap=-50.0), ValueError, r"softcap = -50.0"),
        (dict(softcap=math.inf), ValueError, r"softcap = inf"),
        (dict(softcap=math.nan), ValueError, r"softcap = nan"),
        (dict(softcap=1e-50), ValueError, r"softcap = 1e-50"),  # 0 in float32
        (dict(softcap=True), ValueError, r"softcap = True"),
        (dict(softcap="50"), TypeError, r""),
        (dict(sink_keys=-1), ValueError, r"sink_keys = -1: .*>= 0"),
        (dict(sink_keys=2.0), TypeError, r"sink_keys must be an int"),
        (dict(sink_keys=True), TypeError, r"sink_keys must be an int"),
    ]
    for kw, error, pattern in bad:
        for fn in (txattn.attention, txattn.reference, txattn.error_bound):
            with pytest.raises(error, match=pattern):
                fn(q, q, q, causal=True, out=out, **kw)
        if kw.get("alibi_slopes") is not True:  # a plan's: slopes given with each call
            with pytest.raises(error, match=pattern):
                txattn.default_context().plan(q, q, q, causal=True, **kw)
        assert np.all(out == 7.0), f"{kw}: the output was written"
    # -inf is a sink logit (no sink), and every head may have none: the plain result
    none = txattn.attention(q, q, q, causal=True, sinks=[-math.inf] * 4)
    assert_within_bound(none, q, q, q, causal=True)
    # heads of the query, not of the keys (GQA)
    k = random((1, 2, 6, 8), 15)
    with pytest.raises(ValueError, match="alibi_slopes has 2 entries but q has 4 heads"):
        txattn.attention(q, k, k, alibi_slopes=[0.5, 0.25])


def test_sdpa_keeps_torchs_signature():
    """scaled_dot_product_attention takes no modifier: torch's arguments only."""
    import inspect

    params = list(inspect.signature(txattn.scaled_dot_product_attention).parameters)
    assert params == ["query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
                      "enable_gqa"]
