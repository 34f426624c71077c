#!/usr/bin/env python3
"""The chapter's experiments in PyTorch eager, the peer tide is compared with.

Runs on the GPU given by --device (default cuda:0) with the same sizes as
examples/async_basics and writes medians as JSON:
  1. 10 x (randn n x n + mm): time until the loop returns, and until
     torch.cuda.synchronize() returns; numpy on the host as the baseline.
  5. y = x + 1 on a 1x2 tensor, N times: synchronized after each op vs once
     at the end.
"""
import argparse
import json
import platform
import statistics
import sys
import time


def median_runs(repeats, fn):
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), runs


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--increments", type=int, default=10000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", default="")
    a = p.parse_args()

    import numpy as np
    import torch

    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("torch_async_basics: no CUDA device visible to PyTorch", file=sys.stderr)
        return 77
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    n = a.size

    # Warm-up: context, cuBLAS handle, caching allocator.
    for _ in range(3):
        x = torch.randn(n, n, device=dev)
        torch.mm(x, x)
    sync()

    rng = np.random.default_rng(0)

    def host():
        for _ in range(10):
            h = rng.standard_normal((n, n), dtype=np.float32)
            np.dot(h, h)

    host_s, _ = median_runs(a.repeats, host)
    ret, done = [], []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(10):
            x = torch.randn(n, n, device=dev)
            torch.mm(x, x)
        t1 = time.perf_counter()
        sync()
        ret.append(t1 - t0)
        done.append(time.perf_counter() - t0)

    x = torch.ones(1, 2, device=dev)
    sync()

    def inc_sync():
        for _ in range(a.increments):
            y = x + 1
            sync()

    def inc_async():
        for _ in range(a.increments):
            y = x + 1
        sync()

    sync_s, sync_runs = median_runs(a.repeats, inc_sync)
    async_s, async_runs = median_runs(a.repeats, inc_async)

    result = {
        "benchmark": "torch_async_basics",
        "machine": {"host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "none"},
        "command_line": " ".join(sys.argv),
        "device": a.device,
        "repeats": a.repeats,
        "matmul": {"size": n, "host_numpy_s": host_s, "torch_return_s": statistics.median(ret),
                   "torch_done_s": statistics.median(done)},
        "increments": {"count": a.increments, "sync_s": sync_s, "async_s": async_s,
                       "sync_runs_s": sync_runs, "async_runs_s": async_runs,
                       "async_ns_per_op": async_s / a.increments * 1e9,
                       "sync_ns_per_op": sync_s / a.increments * 1e9},
    }
    print(json.dumps(result, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
