#!/usr/bin/env python3
"""Summarises a gpu-check run: the GPU tests (a skip counts against them,
except the ones that skip by design) and each benchmark ratio against its
target. Writes gpu_summary.json and summary.txt in the results folder;
exits 1 when a test failed or skipped unexpectedly, or a test result is
missing. Benchmark ratios and missed targets are reported, not failed on;
a benchmark without its result (no PyTorch there, say) is recorded as
missing.

Usage: gpu_summary.py RESULTS_DIR
       gpu_summary.py --check-trace TRACE_FILE   (the GPU spans of one trace)
"""
import json
import math
import os
import sys
import xml.etree.ElementTree as ET

# Tests that skip on a one-GPU machine by design.
EXPECTED_SKIPS = {
    "NcclCollectives.SeveralGpusPerRankReduceTogether",  # needs 2 GPUs or more
    "Engines/CudaEngine.BarrierWaitsOnlyForItsProducer/naive",  # the naive engine cannot show it
    "Engines/CudaEngine.AnOpBlockedOnTheHostDoesNotHoldBackTheOpsBeforeIt/naive",  # nor this
}
# ... and on one rank only (the 2-rank runs must run them).
EXPECTED_SKIPS_ONE_RANK = {
    "Trainer.DataParallelOnTheGpuMatchesOneRankWithTheGlobalBatch",
}


def gpu_trace(path):
    """What a trace file shows of its GPU streams: spans per track, whether
    any two of one stream overlap (a stream runs one op at a time, so an
    overlap is a misplaced span), their durations, and how each GPU's clock
    followed the host's (tide_gpu_clocks)."""
    with open(path) as f:
        d = json.load(f)
    names = {}
    for e in d["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    tracks = {}
    for e in d["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "op":
            name = names.get((e["pid"], e["tid"]), "")
            if name.startswith("cuda:"):
                tracks.setdefault(name, []).append((e["ts"], e["ts"] + e["dur"]))
    overlaps, spans, durations = 0, 0, []
    for spans_of in tracks.values():
        spans_of.sort()
        spans += len(spans_of)
        for (s0, e0), (s1, _) in zip(spans_of, spans_of[1:]):
            if s1 < e0 - 1e-3:  # the file's microseconds have three decimals
                overlaps += 1
        durations += [e - s for s, e in spans_of]
    durations.sort()
    clocks = d.get("tide_gpu_clocks", [])
    result = {
        "gpu_spans": spans,
        "tracks": sorted(tracks),
        "overlapping_spans": overlaps,
        "median_span_us": durations[len(durations) // 2] if durations else None,
        "clocks": clocks,
    }
    result["ok"] = spans > 0 and overlaps == 0 and bool(clocks) and all(c["readings_used"] > 0 for c in clocks)
    return result


def ctest_junit(path):
    """Counts of a ctest --output-junit file, and the names that failed."""
    root = ET.parse(path).getroot()
    passed, failed, skipped = [], [], []
    for case in root.iter("testcase"):
        name = case.get("name")
        status = case.get("status", "")
        if case.find("failure") is not None or status == "fail":
            failed.append(name)
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped.append(name)
        else:
            passed.append(name)
    return {"passed": len(passed), "failed": failed, "skipped": skipped, "ok": not failed,
            "passed_names": passed}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check-trace":
        r = gpu_trace(sys.argv[2])
        print(json.dumps(r, indent=2))
        return 0 if r["ok"] else 1
    out = sys.argv[1]
    status = 0
    s = {}

    def load(name):
        with open(os.path.join(out, name)) as f:
            return json.load(f)

    def entry(key, make, required=True):
        """One result; a missing or broken one is recorded, and fails the
        check only when it is `required` (a test result)."""
        nonlocal status
        try:
            s[key] = make()
        except (OSError, KeyError, ValueError, TypeError, ZeroDivisionError, ET.ParseError) as e:
            s[key] = {"error": f"{type(e).__name__}: {e}"}
            if required:
                status = 1

    def tests(name, one_rank=True):
        expected = EXPECTED_SKIPS | (EXPECTED_SKIPS_ONE_RANK if one_rank else set())
        d = load(name)
        ran, failed, skipped = 0, [], []
        for suite in d.get("testsuites", []):
            for t in suite.get("testsuite", []):
                full = f"{suite['name']}.{t['name']}"
                if t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                    if full not in expected:
                        skipped.append(full)
                elif t.get("failures"):
                    failed.append(full)
                else:
                    ran += 1
        return {"passed": ran, "failed": failed, "unexpected_skips": skipped, "ok": not failed and not skipped}

    def ratio(a, b, target, better):
        """target: the bound; better: 'lower' or 'higher' ratios pass."""
        r = a / b
        if not math.isfinite(r):
            raise ValueError(f"ratio {a} / {b} is not finite")
        met = r <= target if better == "lower" else r >= target
        return {"tide": a, "torch_or_base": b, "ratio": r,
                "target": f"{'<=' if better == 'lower' else '>='} {target}", "met": met}

    for name in ("gpu_core_tests.json", "gpu_ops_tests.json", "gpu_comm_tests.json", "gpu_train_tests.json"):
        entry(name[:-5], lambda name=name: tests(name))
    # The same binaries on 2 ranks sharing the GPU: one JSON per rank, each
    # required (a rank that aborted writes none).
    for base in ("gpu_comm_tests_np2", "gpu_train_tests_np2"):
        for rank in (0, 1):
            name = f"{base}.rank{rank}.json"
            entry(name[:-5], lambda name=name: tests(name, one_rank=False))
    for name in ("ctest_gpu_junit.xml", "ctest_junit.xml"):
        if os.path.exists(os.path.join(out, name)):
            entry(name[:-4], lambda name=name: ctest_junit(os.path.join(out, name)))

    def np2_train():
        a = load("train_cuda_np2.json")
        r = {"tide_samples_per_s": a["result"]["samples_per_s"], "tide_step_ms": a["result"]["step_ms"],
             "tide_test_accuracy": a["result"]["test_accuracy"], "tide_device": a["config"]["device"],
             "tide_comm_ms_per_step": a["result"]["comm_ms_per_step"]}
        if os.path.exists(os.path.join(out, "torch_ddp_cuda_np2.json")):
            b = load("torch_ddp_cuda_np2.json")
            r.update({"ddp_samples_per_s": b["result"]["samples_per_s"],
                      "ddp_test_accuracy": b["result"]["test_accuracy"],
                      "ratio": a["result"]["samples_per_s"] / b["result"]["samples_per_s"]})
        return r

    def tiny_ops():
        t, p = load("async_basics_cuda.json"), load("torch_async_basics.json")
        tide_op = t["increments"]["async_s"] / t["increments"]["count"] * 1e9
        return ratio(tide_op, p["increments"]["async_ns_per_op"], 0.5, "lower")

    def round_trip():
        # One tiny op pushed, then waited for (y.wait_to_read() against
        # y = x + 1; torch.cuda.synchronize()): no slower than PyTorch.
        t, p = load("async_basics_cuda.json"), load("torch_async_basics.json")
        tide_op = t["increments"]["sync_s"] / t["increments"]["count"] * 1e9
        return ratio(tide_op, p["increments"]["sync_ns_per_op"], 1.0, "lower")

    def matmul():
        t, p = load("async_basics_cuda.json"), load("torch_async_basics.json")
        r = ratio(t["matmul"]["tide_done_s"], p["matmul"]["torch_done_s"], 1.0, "lower")
        # The same run with the completion thread sleeping while the host
        # waits (TIDE_CUDA_WAIT_POLL_US=0), when the check ran it.
        if os.path.exists(os.path.join(out, "async_basics_cuda_nopoll.json")):
            n = load("async_basics_cuda_nopoll.json")
            r["tide_done_s_without_wait_poll"] = n["matmul"]["tide_done_s"]
            r["round_trip_ns_without_wait_poll"] = n["increments"]["sync_s"] / n["increments"]["count"] * 1e9
        return r

    def launch():
        b = load("bench_launch.json")
        v = b["throughput_vs_bare"]
        r = {"value": v, "target": ">= 0.9", "met": v >= 0.9}
        # Where a tide op's time went (bench_launch since it says so).
        for key in ("bare_ns_per_launch", "bare_events_ns_per_launch", "bare_polled_ns_per_launch",
                    "bare_handed_off_ns_per_launch", "tide_raw_op_ns_per_op", "tide_ns_per_op",
                    "push_ns_per_op", "stalled_ns_per_op", "run_ns_per_op", "bare_launching_ns_per_launch",
                    "tide_launched_ns_per_op"):
            if key in b:
                r[key] = b[key]
        return r

    def train():
        a = load("train_cuda.json")["result"]["samples_per_s"]
        b = load("torch_train_mlp.json")["result"]["samples_per_s"]
        return ratio(a, b, 1.0, "higher")

    def large_train(batch, target):
        a, b = load(f"train_cuda_b{batch}.json")["result"], load(f"torch_train_b{batch}.json")["result"]
        r = ratio(a["samples_per_s"], b["samples_per_s"], target, "higher")
        # The same loss: held-out accuracy within 1 point of PyTorch's.
        r["accuracy_points_behind"] = 100 * (b["test_accuracy"] - a["test_accuracy"])
        r["met"] = r["met"] and r["accuracy_points_behind"] <= 1
        return r

    def kernels():
        # Elementwise ops at least 0.95x PyTorch's bandwidth; reductions at
        # least half of what PyTorch's x + y moves (the GPU's bandwidth, as
        # near as this run can read it).
        t, p = load("bench_kernels.json")["cases"], load("torch_kernels.json")["cases"]
        floor = p["add"]["gb_per_s"]
        r = {}
        for name, c in t.items():
            if name in ("add", "add_scalar", "mul", "relu_grad", "sgd", "row_add", "randn"):
                r[name] = ratio(c["gb_per_s"], p[name]["gb_per_s"], 0.95, "higher")
            else:
                r[name] = ratio(c["gb_per_s"], floor, 0.5, "higher")
                r[name]["torch_gb_per_s"] = p[name]["gb_per_s"]
        return r

    def one_launch():
        # Reductions in one launch where they can against two launches
        # always (TIDE_CUDA_ONE_LAUNCH=0), side by side in this run; and the
        # default trainer both ways (the same parameters at the end: the
        # same bits).
        r = {}
        for one, two in (("bench_kernels_one_launch.json", "bench_kernels_two_launch.json"),
                         ("bench_kernels_cols_one_launch.json", "bench_kernels_cols_two_launch.json")):
            if not (os.path.exists(os.path.join(out, one)) and os.path.exists(os.path.join(out, two))):
                continue
            a, b = load(one)["cases"], load(two)["cases"]
            for name, c in a.items():
                tag = f"{name}_1024_rows" if one == "bench_kernels_one_launch.json" else f"{name}_256_rows"
                r[tag] = {"gb_per_s_one_launch": c["gb_per_s"], "gb_per_s_two_launches": b[name]["gb_per_s"],
                          "ratio": c["gb_per_s"] / b[name]["gb_per_s"]}
        if os.path.exists(os.path.join(out, "train_cuda_two_launch.json")):
            a, b = load("train_cuda.json")["result"], load("train_cuda_two_launch.json")["result"]
            r["train"] = {"samples_per_s_one_launch": a["samples_per_s"],
                          "samples_per_s_two_launches": b["samples_per_s"],
                          "ratio": a["samples_per_s"] / b["samples_per_s"],
                          "same_params": a.get("params_digest") == b.get("params_digest")}
        return r

    entry("train_b1024_samples_per_s", lambda: large_train(1024, 1.5), required=False)
    entry("train_b4096_samples_per_s", lambda: large_train(4096, 1.1), required=False)
    entry("kernels_gb_per_s", kernels, required=False)
    entry("reductions_one_launch", one_launch, required=False)
    entry("tiny_op_async_ns", tiny_ops, required=False)
    entry("tiny_op_round_trip_ns", round_trip, required=False)
    entry("matmul_done_s", matmul, required=False)
    entry("launch_throughput_vs_bare", launch, required=False)
    entry("train_samples_per_s", train, required=False)
    entry("train_2_ranks_one_gpu", np2_train, required=False)
    entry("gpu_trace", lambda: gpu_trace(os.path.join(out, "trace_cuda", "trace.rank0.json")))
    for v in s.values():
        if isinstance(v, dict) and v.get("ok") is False:
            status = 1
    with open(os.path.join(out, "gpu_summary.json"), "w") as f:
        json.dump(s, f, indent=2)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        for key, v in s.items():
            if not isinstance(v, dict):
                continue
            if "passed" in v:
                extra = f", failed {v['failed']}" if v.get("failed") else ""
                if v.get("skipped"):
                    extra += f", skipped {len(v['skipped'])}"
                if v.get("unexpected_skips"):
                    extra += f", unexpected skips {v['unexpected_skips']}"
                f.write(f"{key}: {v['passed']} passed{extra}\n")
            elif "error" in v:
                f.write(f"{key}: missing ({v['error']})\n")
            else:
                f.write(f"{key}: " + ", ".join(f"{k} {v[k]}" for k in v if k not in ("clocks", "tracks")) + "\n")
    print(json.dumps(s, indent=2))
    return status


if __name__ == "__main__":
    sys.exit(main())
