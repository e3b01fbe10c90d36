# SPDX-License-Identifier: MIT
"""txattn.models(): the library's catalogue of real models (txattn_model_*), the same table
`txtune models` prints, as dicts."""

import txattn

REQUIRED = {
    "llama-3.1-8b",
    "mistral-7b",
    "gemma-2-9b",
    "gpt-oss-20b",
    "bloom-7b1",
    "qwen2.5-7b",
    "deepseek-v2-lite",
    "phi-3-mini",
    "whisper-base",
    "bert-base",
    "t5-base",
    "streamingllm-llama",
}


def by_name():
    return {m["name"]: m for m in txattn.models()}


def test_every_required_model_is_there_with_its_source():
    models = by_name()
    assert REQUIRED <= set(models)
    for m in models.values():
        assert "https://" in m["source"]
        assert 1 <= len(m["kinds"]) <= 4
        assert m["layers"] == sum(k["layers"] for k in m["kinds"])


def test_the_kinds_carry_the_published_numbers():
    m = by_name()
    local, glob = m["gemma-2-9b"]["kinds"]
    assert (local["heads_q"], local["heads_kv"], local["d_qk"]) == (16, 8, 256)
    assert local["softcap"] == 50.0 and local["scale"] == 0.0625
    assert local["mask"] == "window" and local["window"] == (4095, 0)
    assert glob["mask"] == "causal" and glob["window"] is None
    assert all(k["sinks"] for k in m["gpt-oss-20b"]["kinds"])
    bloom = m["bloom-7b1"]["kinds"][0]
    assert bloom["alibi"] and bloom["alibi_max_bias"] == 8.0
    assert m["llama-3.1-8b"]["kinds"][0]["alibi_max_bias"] is None
    cross = m["whisper-base"]["kinds"][2]
    assert (cross["kind"], cross["n_q"], cross["n_kv"], cross["mask"]) == ("cross", 448, 1500, "none")
    assert m["llama-3.1-8b"]["kinds"][0]["n_q"] is None
    assert m["bert-base"]["kinds"][0]["ragged"] and not m["bert-base"]["kinds"][0]["decode"]
    assert m["t5-base"]["kinds"][0]["relative_bias"] and m["t5-base"]["note"]
    s = m["streamingllm-llama"]["kinds"][0]
    assert s["sink_keys"] == 4 and s["window"] == (1019, 0)
    ds = m["deepseek-v2-lite"]["kinds"][0]
    assert (ds["d_qk"], ds["d_v"], ds["heads_q"]) == (192, 128, 16)


def test_a_kind_runs_as_attention():
    import numpy as np

    k = by_name()["phi-3-mini"]["kinds"][0]  # a window of 2047, head size 96
    rng = np.random.default_rng(0)
    n, d = 40, k["d_qk"]
    q, kk, v = (rng.standard_normal((1, 2, n, d), dtype=np.float32) for _ in range(3))
    args = dict(window=k["window"], scale=k["scale"])
    o = txattn.attention(q, kk, v, **args)
    assert np.max(np.abs(o - txattn.reference(q, kk, v, **args))) <= txattn.error_bound(
        q, kk, v, **args
    )
