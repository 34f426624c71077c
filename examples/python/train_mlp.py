#!/usr/bin/env python3
"""The data-parallel MLP trainer in Python, on tide: the C++ trainer's
generated task (the same Philox numbers, so the same rows), model, gradient
buckets and SGD with momentum. Every rank takes its share of each global
batch; gradients are averaged across ranks in buckets that reduce while
backward still computes; the loss is read back only every --log-every steps.

  PYTHONPATH=build/python launch/tiderun -np 2 --local python3 examples/python/train_mlp.py
"""
import argparse
import json
import time

import numpy as np

import tide
from generated_task import make_generated

def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hidden", default="512,512")
    p.add_argument("--batch", type=int, default=64, help="rows per rank per step")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--log-every", type=int, default=100)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--json")
    a = p.parse_args()
    if a.batch < 1 or a.steps < 1 or a.log_every < 1 or a.lr <= 0 or a.bucket_mb <= 0:
        p.error("--batch, --steps and --log-every must be at least 1; --lr and --bucket-mb above 0")
    if not 0 <= a.seed < 2 ** 64 - 64:
        p.error("--seed must be a whole number from 0 to 2^64 - 65, got %d" % a.seed)
    rt = tide.init()
    (xtr, ytr), (xte, yte) = make_generated(24576, 4096, 64, 10, a.seed)
    widths = [64] + [int(h) for h in a.hidden.split(",")] + [10]
    params = []
    for i in range(len(widths) - 1):
        fan_in = widths[i]
        w = tide.randn([widths[i + 1], fan_in], seed=a.seed + i) * float(np.sqrt(2.0 / fan_in))
        params += [w, tide.zeros([widths[i + 1]])]
    tide.broadcast_params_(params)  # every rank starts from rank 0's
    velocity = [tide.zeros(list(t.shape)) for t in params]
    reducer = tide.GradientReducer(params, bucket_mb=a.bucket_mb)
    layers = len(widths) - 1
    global_batch = a.batch * rt.size
    order = np.random.default_rng(a.seed).permutation(len(ytr))
    loss_sum = tide.zeros([])
    rt.log(f"tide Python trainer: {rt.size} rank(s), widths {widths}, global batch {global_batch}, {reducer}")
    t0 = time.perf_counter()
    t_log, losses = t0, []
    for step in range(a.steps):
        tide.check_sync()
        with rt.step():
            first = (step * global_batch + rt.rank * a.batch) % (len(ytr) - a.batch)
            rows = order[first:first + a.batch]
            x, y = tide.from_numpy(xtr[rows]), tide.from_numpy(ytr[rows])
            inputs, pre = [x], []
            h = x
            for l in range(layers):
                z = tide.linear(h, params[2 * l], params[2 * l + 1])
                if l + 1 < layers:
                    pre.append(z)
                    h = tide.relu(z)
                    inputs.append(h)
                else:
                    h = z
            loss, probs = tide.softmax_cross_entropy(h, y)
            tide.add_(loss_sum, loss)
            d = tide.softmax_cross_entropy_backward(probs, y)
            for l in reversed(range(layers)):
                reducer.push_gradient(2 * l, tide.linear_backward_weight(d, inputs[l]))
                reducer.push_gradient(2 * l + 1, tide.linear_backward_bias(d))
                if l > 0:
                    d = tide.relu_backward(tide.linear_backward_input(d, params[2 * l]), pre[l - 1])
            for bucket in reducer.buckets:
                for i in bucket:
                    tide.sgd_step_(params[i], reducer.reduced(i), velocity[i], lr=a.lr, momentum=a.momentum)
            reducer.finish_step()
        if (step + 1) % a.log_every == 0 or step + 1 == a.steps:
            n = (step % a.log_every) + 1
            mean = tide.all_reduce(loss_sum, tide.ReduceOp.avg).item() / n  # the loop's only blocker
            losses.append(mean)
            now = time.perf_counter()
            rt.log(f"step {step + 1}/{a.steps}  loss {mean:.4f}  {n * global_batch / (now - t_log):.0f} samples/s")
            t_log = now
            loss_sum = tide.zeros([])
    tide.wait_all()
    elapsed = time.perf_counter() - t0
    # Held-out accuracy: each rank its share of the test rows.
    lo, hi = len(yte) * rt.rank // rt.size, len(yte) * (rt.rank + 1) // rt.size
    h = tide.from_numpy(xte[lo:hi])
    for l in range(layers):
        h = tide.linear(h, params[2 * l], params[2 * l + 1])
        if l + 1 < layers:
            h = tide.relu(h)
    correct = tide.sum(tide.eq(tide.argmax(h, 1), tide.from_numpy(yte[lo:hi])))
    accuracy = tide.all_reduce(correct).item() / len(yte)
    sps = a.steps * global_batch / elapsed
    rt.log(f"trained {a.steps} steps on {rt.size} rank(s): final loss {losses[-1]:.4f}, held-out accuracy "
           f"{100 * accuracy:.1f}% (chance 10.0%), {sps:.0f} samples/s")
    if a.json and rt.rank == 0:
        with open(a.json, "w") as f:
            json.dump({"benchmark": "python/train_mlp", "ranks": rt.size, "steps": a.steps, "global_batch": global_batch,
                       "samples_per_s": sps, "losses": losses, "test_accuracy": accuracy}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
