#!/usr/bin/env python3
"""The training example's MLP under PyTorch DistributedDataParallel on the CPU
(gloo), the peer tide's data-parallel trainer is compared with on several ranks;
--device cuda puts each rank on GPU (rank % GPUs) with NCCL, and ranks that
share a GPU each get their own NCCL_HOSTID, as tide's Runtime gives them.

--ranks processes on this machine, each --threads threads (default 1), each
with --batch rows per step (the global batch is ranks x batch, as in tide's
trainer); SGD with momentum; DDP's default buckets (25 MiB) unless
--bucket-mb. The loss is read back every --log-every steps only. Prints and
(with --json) writes the global samples/s over the steps after a warm-up:

  /usr/bin/python3 examples/peers/torch_ddp_mlp.py --ranks 2 [--steps 600]
"""
import argparse
import json
import os
import platform
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from generated_task import make_generated  # noqa: E402


def worker(rank, a, port, queue):
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(a.threads)
    dev = torch.device("cpu")
    if a.device == "cuda":
        gpus = torch.cuda.device_count()
        if gpus == 0:
            sys.exit("torch_ddp_mlp.py: --device cuda, but PyTorch sees no GPU")
        dev = torch.device("cuda", rank % gpus)
        torch.cuda.set_device(dev)
        if a.ranks > gpus:  # NCCL refuses two ranks on one GPU of one host
            os.environ["NCCL_HOSTID"] = f"{socket.gethostname()}:ddp-slot{rank // gpus}"
    backend = "nccl" if a.device == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=a.ranks)
    torch.manual_seed(a.seed)  # the same initial model on every rank
    # tide's generated task, the same rows bit for bit (examples/python/generated_task.py).
    (xtr, ytr), (xte, yte) = make_generated(a.train_rows, 4096, a.features, a.classes, a.data_seed)
    rows, labels = torch.from_numpy(xtr).to(dev), torch.from_numpy(ytr).long().to(dev)
    widths = [a.features] + [int(h) for h in a.hidden.split(",")] + [a.classes]
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers).to(dev)
    model = DDP(net, device_ids=[dev.index] if dev.type == "cuda" else None, bucket_cap_mb=a.bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    order = torch.randperm(a.train_rows).to(dev)
    per_rank = a.train_rows // a.ranks
    mine = order[rank * per_rank:(rank + 1) * per_rank]
    steps_per_epoch = per_rank // a.batch
    loss_sum = torch.zeros((), device=dev)
    losses = []
    t_warm = None
    for step in range(a.steps):
        if step == a.warmup:
            dist.barrier()
            t_warm = time.perf_counter()
        k = step % steps_per_epoch
        idx = mine[k * a.batch:(k + 1) * a.batch]
        x, y = rows[idx], labels[idx]
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_sum += loss.detach()
        if (step + 1) % a.log_every == 0:
            losses.append(loss_sum.item() / a.log_every)
            loss_sum.zero_()
    dist.barrier()
    elapsed = time.perf_counter() - t_warm
    if rank == 0:
        with torch.no_grad():
            predicted = model(torch.from_numpy(xte).to(dev)).argmax(1)
        accuracy = (predicted == torch.from_numpy(yte).long().to(dev)).float().mean().item()
        queue.put({"elapsed": elapsed, "losses": losses, "torch": torch.__version__, "accuracy": accuracy})
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="cpu (gloo) or cuda (NCCL)")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    p.add_argument("--hidden", default="512,512", help="hidden widths, comma separated")
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--train-rows", type=int, default=24576)
    p.add_argument("--batch", type=int, default=64, help="rows per rank per step")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket cap (its default: 25)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data-seed", type=int, default=1234, help="the generated task's seed (tide's trainer: 1234)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    if a.ranks < 1 or a.threads < 1 or a.batch < 1 or a.steps <= a.warmup:
        sys.exit("torch_ddp_mlp.py: --ranks, --threads and --batch must be at least 1, --steps above --warmup")
    import torch.multiprocessing as mp

    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, a, port, queue)) for r in range(a.ranks)]
    for proc in procs:
        proc.start()
    out = queue.get(timeout=600)
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            sys.exit(f"torch_ddp_mlp.py: a rank exited with status {proc.exitcode}")
    timed = a.steps - a.warmup
    sps = timed * a.batch * a.ranks / out["elapsed"]
    res = {
        "benchmark": "torch_ddp_mlp",
        "command": " ".join(sys.argv),
        "machine": {"host": platform.node(), "python": platform.python_version(), "torch": out["torch"],
                    "cores": os.cpu_count()},
        "config": {"ranks": a.ranks, "threads": a.threads, "hidden": a.hidden, "batch_per_rank": a.batch,
                   "steps": a.steps, "bucket_mb": a.bucket_mb, "device": a.device, "backend": "nccl" if a.device == "cuda" else "gloo"},
        "result": {"samples_per_s": sps, "step_ms": 1e3 * out["elapsed"] / timed, "losses": out["losses"],
                   "test_accuracy": out["accuracy"]},
    }
    print(f"torch DDP ({res['config']['backend']}) {a.ranks} ranks: {sps:.0f} samples/s, {res['result']['step_ms']:.3f} ms per step, "
          f"last loss {out['losses'][-1] if out['losses'] else float('nan'):.4f}, "
          f"held-out accuracy {100 * out['accuracy']:.1f}%")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
