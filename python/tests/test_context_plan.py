# SPDX-License-Identifier: MIT
"""Contexts, plans, kernels(), merge() and error_bound(): what the C API's objects show, from
Python."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import oracle
import txattn


def arrays(seed=0, B=2, Hq=4, Hkv=2, Nq=33, Nkv=47, D=16, Dv=8, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((B, Hq, Nq, D)).astype(dtype),
            rng.standard_normal((B, Hkv, Nkv, D)).astype(dtype),
            rng.standard_normal((B, Hkv, Nkv, Dv)).astype(dtype))


def txtune():
    """build/bin/txtune beside the build tree's package (PYTHONPATH=build/python)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(txattn.__file__)))
    path = os.path.join(os.path.dirname(here), "bin", "txtune")
    return path if os.access(path, os.X_OK) else None


def test_kernels_are_what_txtune_list_shows(ctx):
    kernels = txattn.kernels(ctx)
    names = [k["name"] for k in kernels]
    assert len(names) == len(set(names)) and len(names) >= 2
    for k in kernels:
        assert set(k) >= {"name", "summary", "plugin", "path", "usable", "why_unusable", "isa",
                          "flags", "plugin_version", "plugin_build", "one_thread_same_as",
                          "dtypes", "tunables"}
        assert k["name"].endswith("." + k["isa"])
        assert (k["why_unusable"] is None) == k["usable"]
        assert set(k["dtypes"]) == {"q", "k", "v", "o"}
        assert k["plugin_build"].startswith("fnv1a64x4:")
    assert txattn.kernels() == txattn.default_context().kernels()
    tool = txtune()
    if tool is None:
        pytest.skip("no build/bin/txtune beside the package")
    listed = json.loads(subprocess.run([tool, "list", "--json"], check=True, capture_output=True,
                                       text=True).stdout)
    text = json.dumps(listed)
    for k in kernels:
        assert f'"{k["name"]}"' in text, f"{k['name']} is not in txtune list --json"


def test_context_options(tmp_path):
    one = txattn.Context(threads=1, table="")
    assert one.threads == 1 and one.table_status == "none" and one.table_path == ""
    assert "threads=1" in repr(one)
    machine = one.machine()
    assert machine["cores"] >= 1 and ("scalar" in machine["isas"] or "neon" in machine["isas"])
    missing = txattn.Context(plugin_path=str(tmp_path / "none"), table="")
    assert missing.kernels() == []
    q, k, v = arrays()
    with pytest.raises(txattn.Error) as info:
        txattn.attention(q, k, v, context=missing)
    assert info.value.status.startswith("TXATTN_E_")
    bad = tmp_path / "table.json"
    bad.write_text("{ not json")
    ctx = txattn.Context(table=bad, threads=1)  # a malformed table never fails the context
    assert ctx.table_status == "malformed" and str(bad) in ctx.table_state
    plugins = os.path.dirname(txattn.kernels()[0]["path"])
    only = txattn.Context(plugin_path=plugins, threads=1)
    assert len(only.kernels()) == len(txattn.kernels())


def test_default_context_follows_torch_threads():
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        assert txattn.default_context().threads == torch.get_num_threads()
    mine = txattn.Context(threads=1)
    txattn.set_default_context(mine)
    try:
        assert txattn.default_context() is mine
    finally:
        txattn.set_default_context(None)
    assert txattn.default_context() is not mine
    with pytest.raises(TypeError):
        txattn.set_default_context("no")


def test_default_threads_without_torch():
    """A process without torch runs on every CPU it may use (threads 0)."""
    code = ("import sys, os, txattn; c = txattn.default_context(); "
            "assert 'torch' not in sys.modules; print(c.threads, len(os.sched_getaffinity(0)))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env=dict(os.environ)).stdout.split()
    assert out[0] == out[1]


def test_plan(ctx):
    q, k, v = arrays()
    plan = ctx.plan(q, k, v, causal=True, return_lse=True)
    assert plan.kernel in [k["name"] for k in ctx.kernels()]
    assert plan.why and plan.kernel in plan.description
    assert isinstance(plan.tunables, dict) and plan.context is ctx
    # the shipped kernels plan this problem: none failed before the pick (a list of pairs else)
    assert plan.failed == []
    pr = plan.problem
    assert (pr["batch"], pr["heads_q"], pr["heads_kv"], pr["n_q"], pr["n_kv"], pr["d_qk"],
            pr["d_v"]) == (2, 4, 2, 33, 47, 16, 8)
    assert pr["mask"] == "causal" and pr["lse"] and not pr["ragged"]
    assert pr["scale"] == pytest.approx(0.25) and pr["dtypes"] == ("f32",) * 4
    o, lse = plan(q, k, v)
    ref, ref_lse = oracle.attention(q, k, v, causal=True)
    assert np.max(np.abs(o - ref)) <= txattn.error_bound(q, k, v, causal=True)
    # another call with other data and strides: the same plan
    q2, k2, v2 = arrays(seed=1)
    kt = np.ascontiguousarray(k2.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    o2, _ = plan(q2, kt, v2)
    ref2, _ = oracle.attention(q2, k2, v2, causal=True)
    assert np.max(np.abs(o2 - ref2)) <= txattn.error_bound(q2, k2, v2, causal=True)
    assert "kernel" in repr(plan) or plan.kernel in repr(plan)


def test_plan_from_shapes_and_by_kernel(ctx):
    q, k, v = arrays()
    plan = ctx.plan(q.shape, k.shape, v.shape, window=(4, None), kernel="naive.scalar")
    assert plan.kernel == "naive.scalar" and "requested" in plan.why
    assert plan.problem["window"] == (4, None)
    o = plan(q, k, v)
    assert np.max(np.abs(o - oracle.attention(q, k, v, window=(4, None))[0])) <= txattn.error_bound(
        q, k, v, window=(4, None))
    half = ctx.plan(q.shape, k.shape, v.shape, dtype="f16", out_dtype=np.float32)
    assert half.problem["dtypes"] == ("f16", "f16", "f16", "f32")
    oh = half(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16))
    assert oh.dtype == np.float32
    with pytest.raises(txattn.NotFoundError):
        ctx.plan(q, k, v, kernel="nothing.here")


def test_ragged_plan(ctx):
    q, k, v = arrays()
    plan = ctx.plan(q, k, v, causal=True, kv_lens=[47, 20])
    assert plan.problem["ragged"]
    o = plan(q, k, v)  # the lengths given to plan()
    ref = oracle.attention(q, k, v, causal=True, kv_lens=[47, 20])[0]
    assert np.max(np.abs(o - ref)) <= txattn.error_bound(q, k, v, causal=True, kv_lens=[47, 20])
    o = plan(q, k, v, kv_lens=[3, 0], q_lens=[33, 5])
    ref = oracle.attention(q, k, v, causal=True, kv_lens=[3, 0], q_lens=[33, 5])[0]
    assert np.max(np.abs(o - ref)) <= 1e-5 * np.max(np.abs(v)) * 2
    assert np.all(o[1, :, 5:] == 0)


def test_merge_equals_attention_over_all_keys():
    """Attention over the first and the last keys, merged, is attention over all of them."""
    q, k, v = arrays(Nq=1, Nkv=64)
    a = txattn.attention(q, k[:, :, :40], v[:, :, :40], return_lse=True)
    b = txattn.attention(q, k[:, :, 40:], v[:, :, 40:], return_lse=True)
    o, lse = txattn.merge([a[0], b[0]], [a[1], b[1]])
    ref, ref_lse = oracle.attention(q, k, v)
    bound = txattn.error_bound(q, k, v)
    assert np.max(np.abs(o - ref)) <= 2 * bound + 4 * 2.0**-24 * np.max(np.abs(v))
    assert np.max(np.abs(lse - ref_lse)) <= 1e-5 * np.max(np.abs(ref_lse))
    # in place into the first part's o, lse not wanted
    o1 = a[0].copy()
    got, got_lse = txattn.merge([o1, b[0]], [a[1], b[1]], out=o1)
    assert got is o1 and got_lse is None
    np.testing.assert_array_equal(o1, o)
    torch = pytest.importorskip("torch")
    to, tl = txattn.merge([torch.from_numpy(a[0]), torch.from_numpy(b[0])],
                          [torch.from_numpy(a[1]), torch.from_numpy(b[1])])
    assert isinstance(to, torch.Tensor) and isinstance(tl, torch.Tensor)
    np.testing.assert_array_equal(to.numpy(), o)


def test_error_bound_is_what_kernels_meet():
    q, k, v = arrays()
    bound = txattn.error_bound(q, k, v, causal=True)
    assert 0 < bound < 1e-3
    half = txattn.error_bound(q, k, v, causal=True, out_dtype="f16")
    assert half > bound  # a 16-bit o adds its rounding
    big = txattn.error_bound(q * 300, k * 300, v, causal=True)
    assert big > bound  # large logits: fp32 scores round
    b, a, r = txattn.error_bound(q, k, v, return_lse=True)
    assert b > 0 and a > 0 and r == 2.0**-23
