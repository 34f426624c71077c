#!/usr/bin/env python3
"""The training example's MLP in PyTorch eager, the peer tide's trainer is compared with.

One process on --device (default cuda:0; cpu runs on --threads threads,
default 1), the same work per step as
examples/train_data_parallel with one rank: gather a batch of rows on the
host, copy it to the device, forward (linear + relu layers, softmax
cross-entropy), backward, SGD with momentum (or Adam); the loss and the
correct count are accumulated on the device and read back every --log-every
steps only. Samples/s over the steps after a warm-up, as JSON.
"""
import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from generated_task import make_generated  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads on the CPU")
    p.add_argument("--hidden", default="512,512", help="hidden widths, comma separated")
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--train-rows", type=int, default=24576)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"])
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data-seed", type=int, default=1234, help="the generated task's seed (tide's trainer: 1234)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()

    import torch

    dev = torch.device(a.device)
    gpu = dev.type == "cuda"
    if gpu:
        torch.cuda.set_device(dev)  # events and streams below are this device's
    else:
        torch.set_num_threads(a.threads)

    def sync():
        if gpu:
            torch.cuda.synchronize(dev)
    torch.manual_seed(a.seed)
    # tide's generated task, the same rows bit for bit (examples/python/generated_task.py).
    (xtr, ytr), (xte, yte) = make_generated(a.train_rows, 4096, a.features, a.classes, a.data_seed)
    rows, labels = torch.from_numpy(xtr), torch.from_numpy(ytr).long()

    widths = [a.features] + [int(h) for h in a.hidden.split(",")] + [a.classes]
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(dev)
    if a.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    loss_sum = torch.zeros((), device=dev)
    correct_sum = torch.zeros((), dtype=torch.int64, device=dev)

    order = torch.randperm(a.train_rows)
    steps_per_epoch = a.train_rows // a.batch
    # Batches are gathered on the host into pinned buffers and copied without
    # waiting (like tide's copy_to, which lets the frontend run ahead). A ring
    # of buffers, each reused only once its copy has completed.
    ring = 4
    pin = (lambda t: t.pin_memory()) if gpu else (lambda t: t)
    xbuf = [pin(torch.empty(a.batch, a.features)) for _ in range(ring)]
    ybuf = [pin(torch.empty(a.batch, dtype=torch.int64)) for _ in range(ring)]
    copied = [None] * ring
    losses = []
    t_warm = None
    for step in range(a.steps):
        if step == a.warmup:
            sync()
            t_warm = time.perf_counter()
        k = step % steps_per_epoch
        idx = order[k * a.batch:(k + 1) * a.batch]
        slot = step % ring
        if copied[slot] is not None:
            copied[slot].synchronize()  # waits only if the GPU is `ring` steps behind
        torch.index_select(rows, 0, idx, out=xbuf[slot])  # host gather
        torch.index_select(labels, 0, idx, out=ybuf[slot])
        x = xbuf[slot].to(dev, non_blocking=True)
        y = ybuf[slot].to(dev, non_blocking=True)
        if gpu:
            copied[slot] = torch.cuda.Event()
            copied[slot].record()
        logits = model(x)
        loss = loss_fn(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_sum += loss.detach()
        correct_sum += (logits.argmax(1) == y).sum()
        if (step + 1) % a.log_every == 0:
            losses.append(loss_sum.item() / a.log_every)  # the only blocker
            loss_sum.zero_()
            correct_sum.zero_()
    sync()
    elapsed = time.perf_counter() - t_warm
    timed = a.steps - a.warmup
    with torch.no_grad():
        predicted = model(torch.from_numpy(xte).to(dev)).argmax(1).cpu()
    accuracy = (predicted == torch.from_numpy(yte).long()).float().mean().item()
    res = {
        "benchmark": "torch_train_mlp",
        "command": " ".join(sys.argv),
        "machine": {"host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(dev) if gpu else None,
                    "threads": None if gpu else torch.get_num_threads()},
        "config": {"hidden": widths[1:-1], "features": a.features, "classes": a.classes, "batch": a.batch,
                   "steps": a.steps, "optimizer": a.optimizer, "lr": a.lr},
        "result": {"samples_per_s": timed * a.batch / elapsed, "step_ms": 1e3 * elapsed / timed,
                   "losses": losses, "test_accuracy": accuracy},
    }
    print(f"torch {a.device}: {res['result']['samples_per_s']:.0f} samples/s, "
          f"{res['result']['step_ms']:.3f} ms per step, last loss {losses[-1] if losses else float('nan'):.4f}, "
          f"held-out accuracy {100 * accuracy:.1f}%")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
