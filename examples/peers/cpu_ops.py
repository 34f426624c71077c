#!/usr/bin/env python3
"""bench_ops's loop in PyTorch (CPU) and NumPy, the peers tide is compared with.

N times `y = x + 1` on a float32 vector (a new output each time), at each
size, one thread each; prints microseconds per op (median over --runs);
then, as bench_ops does, 10 x randn(size, size) and 10 x (randn + matmul),
seconds per 10 (median). Writes them as JSON. Run it beside
build/examples/bench_ops on the same machine:

  /usr/bin/python3 examples/peers/cpu_ops.py [--sizes 2,1000,100000]
      [--ops 10000] [--runs 11] [--matmul-size 1000] [--json FILE]

PyTorch and NumPy come from Debian (python3-torch, python3-numpy:
scripts/setup.sh --peers).
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def per_op_us(fn, x, ops):
    t0 = time.perf_counter()
    for _ in range(ops):
        y = fn(x)
    t1 = time.perf_counter()
    del y
    return (t1 - t0) / ops * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="2,1000,100000")
    p.add_argument("--ops", type=int, default=10000)
    p.add_argument("--runs", type=int, default=11)
    p.add_argument("--matmul-size", type=int, default=1000, help="0: skip the random matrices")
    p.add_argument("--json")
    a = p.parse_args()
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        sys.exit(f"cpu_ops.py: --sizes takes whole numbers separated by commas, got {a.sizes!r}")
    if a.ops < 1 or a.runs < 1 or any(n < 1 for n in sizes) or a.matmul_size < 0:
        sys.exit("cpu_ops.py: --ops, --runs and every size must be at least 1, --matmul-size at least 0")

    peers = {}
    randn = {}  # name: n -> an n x n float32 normal matrix
    matmul = {}
    try:
        import torch
        torch.set_num_threads(1)
        peers["pytorch"] = (torch.__version__, lambda n: torch.ones(n, dtype=torch.float32), lambda x: x + 1)
        randn["pytorch"] = lambda n: torch.randn(n, n)
        matmul["pytorch"] = torch.matmul
    except ImportError:
        print("note: no PyTorch (python3-torch); skipped", file=sys.stderr)
    try:
        import numpy
        peers["numpy"] = (numpy.__version__, lambda n: numpy.ones(n, dtype=numpy.float32), lambda x: x + 1)
        gen = numpy.random.default_rng(1)
        randn["numpy"] = lambda n: gen.standard_normal((n, n), dtype=numpy.float32)
        matmul["numpy"] = numpy.matmul
    except ImportError:
        print("note: no NumPy (python3-numpy); skipped", file=sys.stderr)
    if not peers:
        sys.exit("cpu_ops.py: neither PyTorch nor NumPy is installed")

    rows = []
    print(f"# {a.ops} x y = x + 1 (f32) per run, {a.runs} runs, medians, 1 thread; us per op")
    print("#   elements | " + " ".join(f"{name:>12}" for name in peers))
    for n in sizes:
        row = {"elements": n}
        for name, (_, make, op) in peers.items():
            x = make(n)
            per_op_us(op, x, min(a.ops, 100))  # warm-up
            row[name + "_us_per_op"] = statistics.median(per_op_us(op, x, a.ops) for _ in range(a.runs))
        rows.append(row)
        print(f"{n:12d} | " + " ".join(f"{row[name + '_us_per_op']:12.3f}" for name in peers))
    random_rows = []
    if a.matmul_size:
        n = a.matmul_size

        def ten(name, with_matmul):
            t0 = time.perf_counter()
            for _ in range(10):
                m = randn[name](n)
                if with_matmul:
                    matmul[name](m, m)
            return time.perf_counter() - t0

        print(f"# 10 x randn({n}, {n}) [+ matmul(a, a)], f32; s per 10 (median)")
        for work, with_matmul in (("randn", False), ("randn+matmul", True)):
            row = {"work": work}
            for name in peers:
                ten(name, with_matmul)  # warm-up
                row[name + "_s"] = statistics.median(ten(name, with_matmul) for _ in range(a.runs))
            random_rows.append(row)
            print(f"{work:>13} | " + " ".join(f"{row[name + '_s']:12.4f}" for name in peers))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"benchmark": "peers/cpu_ops.py", "machine": platform.node(), "python": platform.python_version(),
                       "versions": {k: v[0] for k, v in peers.items()}, "ops": a.ops, "runs": a.runs,
                       "date": time.strftime("%Y-%m-%d"), "rows": rows, "matmul_size": a.matmul_size,
                       "random": random_rows}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
