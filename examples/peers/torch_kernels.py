#!/usr/bin/env python3
"""The cases of examples/bench_kernels in PyTorch eager, on the same GPU.

Each case runs --ops times, then torch.cuda.synchronize(); the median over
--repeats runs of the time per op, over the bytes the op must move (inputs
read once, the output written once), gives GB/s. Same sizes and byte counts
as bench_kernels, so the two JSON files compare case by case.
"""
import argparse
import json
import platform
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--elements", type=int, default=1 << 28)
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--cols", type=int, default=4096)
    p.add_argument("--ops", type=int, default=20)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--cases", default="", help="comma separated (default: all)")
    p.add_argument("--json", default="")
    a = p.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("torch_kernels: no CUDA device visible to PyTorch", file=sys.stderr)
        return 77
    dev = torch.device(a.device)
    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.randn(a.elements, device=dev, generator=g)
    y = torch.randn(a.elements, device=dev, generator=g)
    m = torch.randn(a.rows, a.cols, device=dev, generator=g)
    row = torch.randn(a.cols, device=dev, generator=g)
    n, rc, r, c = a.elements, a.rows * a.cols, a.rows, a.cols
    sgd = {}

    def sgd_step():
        # Made at the first call: 3 more arrays of n f32 only when the case runs.
        if not sgd:
            p_ = torch.randn(n, device=dev, generator=g)
            p_.grad = torch.randn(n, device=dev, generator=g)
            try:
                sgd["opt"] = torch.optim.SGD([p_], lr=1e-3, momentum=0.9, fused=True)
                sgd["impl"] = "fused"
            except (TypeError, RuntimeError):  # a PyTorch without fused SGD
                sgd["opt"] = torch.optim.SGD([p_], lr=1e-3, momentum=0.9)
                sgd["impl"] = "default"
        sgd["opt"].step()
    cases = {
        "add": (12 * n, lambda: x + y),
        "add_scalar": (8 * n, lambda: x + 1),
        "mul": (12 * n, lambda: x * y),
        "fill": (4 * n, lambda: torch.full((n,), 0.5, device=dev)),
        "randn": (4 * n, lambda: torch.randn(n, device=dev)),
        # What ReLU's backward runs: dy where the input is above 0.
        "relu_grad": (12 * n, lambda: torch.ops.aten.threshold_backward(x, y, 0)),
        # One SGD step with momentum, PyTorch's single fused kernel.
        "sgd": (20 * n, lambda: sgd_step()),
        "row_add": (4 * (2 * rc + c), lambda: m + row),
        "sum_all": (4 * rc, lambda: m.sum()),
        "sum1": (4 * (rc + r), lambda: m.sum(1)),
        "sum0": (4 * (rc + c), lambda: m.sum(0)),
        "mean1": (4 * (rc + r), lambda: m.mean(1)),
        "max0": (4 * (rc + c), lambda: m.amax(0)),
        "max1": (4 * (rc + r), lambda: m.amax(1)),
        "argmax1": (4 * rc + 8 * r, lambda: m.argmax(1)),
        # The bias gradient of a linear layer is a column sum of dy.
        "bias_grad": (4 * (rc + c), lambda: m.sum(0)),
    }
    names = [s for s in a.cases.split(",") if s] or list(cases)
    for s in names:
        if s not in cases:
            print(f"torch_kernels: no case '{s}'", file=sys.stderr)
            return 2
    print(f"torch_kernels on {a.device} (torch {torch.__version__}): {a.ops} ops per run, median of {a.repeats}")
    results = {}
    for s in names:
        nbytes, op = cases[s]

        def loop():
            for _ in range(a.ops):
                op()
            torch.cuda.synchronize(dev)

        loop()
        runs = []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            loop()
            runs.append((time.perf_counter() - t0) * 1e3 / a.ops)
        ms = statistics.median(runs)
        results[s] = {"bytes": nbytes, "ms_per_op": ms, "gb_per_s": nbytes / (ms * 1e-3) * 1e-9, "runs_ms": runs}
        print(f"  {s:<11} {ms:9.3f} ms  {results[s]['gb_per_s']:7.0f} GB/s")
    if a.json:
        out = {
            "benchmark": "torch_kernels",
            "command": " ".join(sys.argv),
            "machine": platform.node(),
            "device": a.device,
            "gpu": torch.cuda.get_device_name(dev),
            "torch": torch.__version__,
            "elements": n, "rows": r, "cols": c, "ops": a.ops, "repeats": a.repeats,
            "cases": results,
        }
        if sgd:
            out["sgd_impl"] = sgd["impl"]
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
