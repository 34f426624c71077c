#!/usr/bin/env python3
"""Turns the runs of scripts/bench_peers.sh into its table: each cell's median
over the rounds, and every round's value. Writes the JSON given, prints the
text table.

  peers_table.py DIR ROUNDS OUT.json COMMIT
"""
import json
import os
import platform
import statistics
import sys
import time


def load(d, name, r):
    with open(os.path.join(d, f"{name}.{r}.json")) as f:
        return json.load(f)


def main():
    d, rounds, out_json, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    cells = {}  # (row, column) -> [value per round]

    def put(row, col, v):
        cells.setdefault((row, col), []).append(v)

    rows, sizes = [], []
    for r in range(1, rounds + 1):
        ops = load(d, "tide_ops", r)
        lt = load(d, "libtorch_ops", r)
        py = load(d, "py_ops", r)
        for i, row in enumerate(ops["rows"]):
            n = row["elements"]
            if r == 1:
                sizes.append(n)
            key = f"{n:,} x y = x + 1, us/op"
            put(key, "tide async", row["async_us_per_op"])
            put(key, "tide naive", row["naive_us_per_op"])
            put(key, "libtorch", lt["rows"][i]["libtorch_us_per_op"])
            for peer in ("pytorch", "numpy"):
                if peer + "_us_per_op" in py["rows"][i]:
                    put(key, peer, py["rows"][i][peer + "_us_per_op"])
        for i, work in enumerate(("randn", "randn+matmul")):
            key = f"10 x {work} 1000x1000, s"
            put(key, "tide async", ops["random"][i]["async_s"])
            put(key, "tide naive", ops["random"][i]["naive_s"])
            put(key, "libtorch", lt["random"][i]["libtorch_s"])
            for peer in ("pytorch", "numpy"):
                if peer + "_s" in py["random"][i]:
                    put(key, peer, py["random"][i][peer + "_s"])
        put("MLP trainer, 1 process, samples/s", "tide async", load(d, "tide_train1", r)["result"]["samples_per_s"])
        put("MLP trainer, 1 process, samples/s", "pytorch", load(d, "torch_train1", r)["result"]["samples_per_s"])
        put("MLP trainer, 2 ranks, samples/s", "tide async", load(d, "tide_train2", r)["result"]["samples_per_s"])
        put("MLP trainer, 2 ranks, samples/s", "pytorch", load(d, "ddp_train2", r)["result"]["samples_per_s"])
        for row in load(d, "allreduce", r)["rows"]:
            key = f"all-reduce {row['bytes']} B, 2 ranks, us"
            put(key, "tide async", row["tide_steady_us"])
            put(key, "mpi", row["mpi_steady_us"])
    order = []
    for (row, _col) in cells:
        if row not in order:
            order.append(row)
    cols = ["tide async", "tide naive", "libtorch", "pytorch", "numpy", "mpi"]
    names = {"pytorch": "PyTorch (DDP gloo on 2 ranks)", "mpi": "MPI"}

    def fmt(v):
        if v is None:
            return ""
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"

    lines = [f"# scripts/bench_peers.sh, {time.strftime('%Y-%m-%d')}, commit {commit}, {platform.node()}, "
             f"{os.cpu_count()} cores; medians over {rounds} rounds, one thread per peer",
             "| work | " + " | ".join(names.get(c, c) for c in cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    table = []
    for row in order:
        med = {c: statistics.median(cells[(row, c)]) if (row, c) in cells else None for c in cols}
        lines.append(f"| {row} | " + " | ".join(fmt(med[c]) for c in cols) + " |")
        table.append({"work": row, "median": {c: v for c, v in med.items() if v is not None},
                      "rounds": {c: cells[(row, c)] for c in cols if (row, c) in cells}})
    lines.append("")
    lines.append("# every round:")
    for t in table:
        lines.append(f"#   {t['work']}: " + "; ".join(f"{c} " + ", ".join(fmt(v) for v in vs)
                                                 for c, vs in t["rounds"].items()))
    print("\n".join(lines))
    with open(out_json, "w") as f:
        json.dump({"benchmark": "bench_peers", "command": "scripts/bench_peers.sh", "commit": commit,
                   "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
                   "cores": os.cpu_count(), "rounds": rounds, "threads_per_peer": 1, "table": table}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
