#!/usr/bin/env python3
"""The data-parallel MLP trainer in Python, on tide's autograd, tide.nn and
tide.optim: the C++ trainer's generated task (the same Philox numbers, so
the same rows), its sampler, model (the same initial weights for the same
--seed) and SGD with momentum, so that for the same flags both print the
same losses. Every rank takes its share of each global batch;
DistributedDataParallel averages the gradients across ranks in buckets
whose all-reduce starts during backward (gradient hooks); the loss is read
back only every --log-every steps.

  PYTHONPATH=build/python launch/tiderun -np 2 --local python3 examples/python/train_mlp.py
"""
import argparse
import json
import time

import numpy as np

import tide
from generated_task import Sampler, make_generated


def make_model(widths, seed):
    """Linear + ReLU layers; layer l's weights from Philox stream
    seed * 1000 + 2l and its bias from the next, as the C++ trainer's."""
    layers = []
    for i in range(len(widths) - 1):
        layers.append(tide.nn.Linear(widths[i], widths[i + 1], seed=seed * 1000 + 2 * i))
        if i + 2 < len(widths):
            layers.append(tide.nn.ReLU())
    return tide.nn.Sequential(*layers)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hidden", default="512,512")
    p.add_argument("--batch", type=int, default=64, help="rows per rank per step")
    p.add_argument("--steps", "--max-steps", dest="steps", type=int, default=600)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--seed", type=int, default=1, help="weights and data order (the C++ trainer's default)")
    p.add_argument("--data-seed", type=int, default=1234, help="the generated task (the C++ trainer's)")
    p.add_argument("--json")
    a = p.parse_args()
    if a.batch < 1 or a.steps < 1 or a.log_every < 1 or a.lr <= 0 or a.bucket_mb <= 0:
        p.error("--batch, --steps and --log-every must be at least 1; --lr and --bucket-mb above 0")
    for name, v in (("--seed", a.seed), ("--data-seed", a.data_seed)):
        if not 0 <= v < 2 ** 54:
            p.error("%s must be a whole number from 0 to 2^54 - 1, got %d" % (name, v))
    rt = tide.init()
    (xtr, ytr), (xte, yte) = make_generated(24576, 4096, 64, 10, a.data_seed)
    widths = [64] + [int(h) for h in a.hidden.split(",")] + [10]
    net = make_model(widths, a.seed)
    model = tide.nn.DistributedDataParallel(net, bucket_mb=a.bucket_mb)
    opt = tide.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    loss_fn = tide.nn.CrossEntropyLoss()
    global_batch = a.batch * rt.size
    sampler = Sampler(len(ytr), a.batch, rt.rank, rt.size, a.seed)
    loss_sum = tide.zeros([])
    rt.log(f"tide Python trainer: {rt.size} rank(s), widths {widths}, global batch {global_batch}, {model.reducer}")
    t0 = time.perf_counter()
    t_log, losses = t0, []
    for step in range(a.steps):
        tide.check_sync()
        with rt.step():
            rows = sampler.rows_for(step)
            x, y = tide.from_numpy(xtr[rows]), tide.from_numpy(ytr[rows])
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()  # .grad averaged across ranks
            opt.step()
            loss_sum = loss_sum + loss.detach()
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
    with tide.no_grad():
        logits = net.eval()(tide.from_numpy(xte[lo:hi]))
    correct = tide.sum(tide.eq(logits.argmax(1), tide.from_numpy(yte[lo:hi]).long()))  # i64, as torch
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
