# SPDX-License-Identifier: MIT
"""Two Python threads at once on one context and one plan, and the GIL released while a kernel
runs."""

import sys
import threading

import numpy as np

import oracle
import txattn


def problem(seed, n=96):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((2, 4, n, 32)).astype(np.float32)
    k = rng.standard_normal((2, 2, n, 32)).astype(np.float32)
    v = rng.standard_normal((2, 2, n, 16)).astype(np.float32)
    return q, k, v


def test_two_threads_at_once(ctx):
    plan = ctx.plan(*problem(0), causal=True)
    inputs = [problem(seed) for seed in (1, 2)]
    wants = [oracle.attention(*x, causal=True)[0] for x in inputs]
    bounds = [txattn.error_bound(*x, causal=True) for x in inputs]
    barrier = threading.Barrier(2)
    failures = []

    def worker(i):
        try:
            barrier.wait()
            for rep in range(30):
                o = txattn.attention(*inputs[i], causal=True, context=ctx)
                p = plan(*inputs[i])
                for got in (o, p):
                    err = np.max(np.abs(got - wants[i]))
                    if err > bounds[i]:
                        failures.append(f"thread {i}, call {rep}: {err} > {bounds[i]}")
        except Exception as e:  # reported below, in the test's thread
            failures.append(f"thread {i}: {e!r}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_gil_is_released_during_a_call():
    """With a switch interval of 100 s, a thread that holds the GIL keeps it until it blocks or
    releases it: the main thread can see the worker's call unfinished only if the call released
    the GIL. A run where the call finished first proves nothing either way, so up to ten are made;
    if the GIL were held, no run could pass."""
    q, k, v = problem(3, n=1024)
    ctx = txattn.Context(threads=1)
    plan = ctx.plan(q, k, v)
    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        for _ in range(10):
            started, state = threading.Event(), {"done": False}

            def worker():
                started.set()
                plan(q, k, v)
                state["done"] = True

            t = threading.Thread(target=worker)
            t.start()
            started.wait()  # the worker holds the GIL from here until it releases it
            seen_running = not state["done"]
            t.join()
            if seen_running:
                break
        assert seen_running, "the main thread never ran while a kernel ran: is the GIL held?"
    finally:
        sys.setswitchinterval(old)
