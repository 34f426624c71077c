#!/usr/bin/env python3
"""The "Asynchronous Computation" chapter's experiments on tide, from Python,
each beside PyTorch on the CPU (one thread) in the same run when PyTorch is
installed (Debian's python3-torch: scripts/setup.sh --peers).

  PYTHONPATH=build/python python3 examples/python/async_basics.py [--repeats 5] [--json FILE]
"""
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import tide  # noqa: E402

try:
    import torch  # noqa: E402

    torch.set_num_threads(1)
except ImportError:
    torch = None


def median_s(fn, repeats):
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--increments", type=int, default=10000)
    p.add_argument("--json")
    a = p.parse_args()
    if a.repeats < 1 or a.size < 1 or a.increments < 1:
        p.error("--repeats, --size and --increments must be at least 1")
    rt = tide.init()
    res = {"benchmark": "python/async_basics", "torch": torch.__version__ if torch else None}
    n = a.size

    print(f"== 1. 10 x (randn + matmul), {n} x {n} f32, median of {a.repeats}")
    gen = np.random.default_rng(0)

    def numpy_loop():
        for _ in range(10):
            m = gen.standard_normal((n, n), dtype=np.float32)
            m @ m

    returned = []

    def tide_loop():
        t0 = time.perf_counter()
        for _ in range(10):
            m = tide.randn([n, n])
            tide.matmul(m, m)
        returned.append(time.perf_counter() - t0)
        tide.wait_all()

    tide_loop()  # warm-up
    returned.clear()
    rows = {"numpy (synchronous)": median_s(numpy_loop, a.repeats), "tide, to the end of the work": median_s(tide_loop, a.repeats)}
    rows["tide, until the loop returns"] = statistics.median(returned)
    if torch:
        def torch_loop():
            for _ in range(10):
                m = torch.randn(n, n)
                m @ m
        rows["PyTorch (synchronous on the CPU)"] = median_s(torch_loop, a.repeats)
    for k, v in rows.items():
        print(f"  {k:<36} {v * 1e3:9.2f} ms")
    res["matmul"] = rows

    print("== 2. z = x * y + 2 returns at once; printing z waits for it")
    x, y = tide.ones([1, 2]), tide.ones([1, 2])
    t0 = time.perf_counter()
    z = x * y + 2
    t1 = time.perf_counter()
    print(" ", z)
    t2 = time.perf_counter()
    print(f"  pushing z: {(t1 - t0) * 1e6:.1f} us; printing it (a blocker): {(t2 - t1) * 1e6:.1f} us")

    print("== 3. barriers: wait_all waits for everything, wait_to_read for one tensor's producer")
    big = tide.randn([n, n])
    tide.wait_all()

    def wait_all():
        small = tide.ones([2]) + 1
        tide.matmul(big, big)
        tide.matmul(big, big)
        tide.wait_all()
        return small

    t_all = median_s(wait_all, a.repeats)
    read = []
    for _ in range(a.repeats):
        small = tide.ones([2]) + 1
        tide.matmul(big, big)
        tide.matmul(big, big)
        t0 = time.perf_counter()
        small.wait_to_read()
        read.append(time.perf_counter() - t0)
        tide.wait_all()
    print(f"  small result with 2 matmuls queued: wait_all {t_all * 1e3:.2f} ms, "
          f"wait_to_read {statistics.median(read) * 1e3:.3f} ms")
    res["barriers"] = {"wait_all_s": t_all, "wait_to_read_s": statistics.median(read)}

    print("== 4. implicit blockers: item(), numpy(), print")
    before = rt.stats().blockers
    s = tide.sum(tide.ones([4]))
    s.item()
    s.numpy()
    repr(s)
    print(f"  blockers counted: {rt.stats().blockers - before}")

    print(f"== 5. {a.increments} increments: synchronous (wait after each) against asynchronous")
    k = a.increments

    def tide_sync():
        v = tide.zeros([1])
        for _ in range(k):
            v = v + 1
            v.wait_to_read()

    def tide_async():
        v = tide.zeros([1])
        for _ in range(k):
            v = v + 1
        tide.wait_all()

    push = []

    def tide_push_only():
        v = tide.zeros([1])
        t0 = time.perf_counter()
        for _ in range(k):
            v = v + 1
        push.append((time.perf_counter() - t0) / k)
        tide.wait_all()

    busy0 = rt.stats().busy_ns
    inc = {"tide sync": median_s(tide_sync, a.repeats)}
    busy1 = rt.stats().busy_ns
    inc["tide async"] = median_s(tide_async, a.repeats)
    for _ in range(a.repeats):
        tide_push_only()
    inc["tide push per op"] = statistics.median(push)
    if torch:
        def torch_eager():
            v = torch.zeros(1)
            for _ in range(k):
                v = v + 1
        inc["PyTorch eager"] = median_s(torch_eager, a.repeats)
    for key, v in inc.items():
        unit = "us per op" if key == "tide push per op" else "ms"
        print(f"  {key:<20} {v * (1e6 if unit == 'us per op' else 1e3):9.2f} {unit}")
    # The chapter's model: t1 the frontend's push, t2 the backend's run of an
    # op, t3 the hand-back of a result. sync ~ N (t1 + t2 + t3); async ~
    # t1 + N t2 + t3 when the backend is the slower side, N t1 + t2 + t3
    # when pushing is (then the frontend bounds the loop).
    t1 = inc["tide push per op"]
    t2 = (busy1 - busy0) / 1e9 / (a.repeats * k)  # the backend's busy time per op, from the sync runs
    t3 = max(0.0, inc["tide sync"] / k - t1 - t2)
    sync_model = k * (t1 + t2 + t3)
    async_model = max(k * t1, k * t2) + min(t1, t2) + t3
    print(f"  model: t1 (push, measured alone) {t1 * 1e6:.2f} us, t2 (run: the backend's busy time per op) "
          f"{t2 * 1e6:.2f} us,")
    print(f"         t3 (hand-back: what a synchronous op costs beyond t1 + t2) {t3 * 1e6:.2f} us")
    print(f"  model async ~ max(N t1, N t2) + min(t1, t2) + t3 = {async_model * 1e3:8.2f} ms, "
          f"measured {inc['tide async'] * 1e3:8.2f} ms")
    print(f"  async / sync: {inc['tide async'] / inc['tide sync']:.2f}; "
          f"async {inc['tide sync'] / inc['tide async']:.1f}x faster")
    inc.update({"t1_s": t1, "t2_s": t2, "t3_s": t3, "sync_model_s": sync_model, "async_model_s": async_model})
    if torch:
        ratio = inc["tide push per op"] / (inc["PyTorch eager"] / k)
        print(f"  tide's push from Python costs {ratio:.2f}x PyTorch's eager op (target at most 1x)")
        inc["push_over_torch_eager"] = ratio
    res["increments"] = inc
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
