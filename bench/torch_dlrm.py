#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The reference nodetune-harness is measured against: the same dlrm-small
in PyTorch, trained with DistributedDataParallel (gloo on CPU, nccl on GPU),
the same batch per rank, steps, learning rate and world size.

Model (DESIGN.md): 13 dense features; 26 EmbeddingBag(10000, 16, mode="sum")
fed bags of 4; bottom MLP 13-256-128-16 (ReLU after each layer); top MLP on
the concatenation (432)-256-128-1 (ReLU but after the last); BCEWithLogits;
SGD.  Modules are registered bottom, embeddings, top, as in the harness, so
DDP's reverse-order buckets match.

To be conservative, the batches are generated once and kept in memory: the
reference pays nothing for data, while the harness runs its real loader.

Launch: mpirun -np N -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29511 \\
            /usr/bin/python3 bench/torch_dlrm.py --batch 2048 --steps 50 --warmup 5
(the same launcher as the harness; Open MPI's rank variables are mapped to
torchrun's.  Debian's torch.distributed.run fails under Python 3.11.)
Prints one JSON line (rank 0): samples_per_s, step_ms_p50, step_ms_p99.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

TABLES, ROWS, DIM, BAG, DENSE = 26, 10000, 16, 4, 13


def mlp(dims, relu_last):
    layers = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2 or relu_last:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRMSmall(nn.Module):
    def __init__(self, rows):
        super().__init__()
        self.bot = mlp([DENSE, 256, 128, DIM], True)
        self.emb = nn.ModuleList(nn.EmbeddingBag(rows, DIM, mode="sum") for _ in range(TABLES))
        self.top = mlp([DIM * (TABLES + 1), 256, 128, 1], False)

    def forward(self, dense, sparse):
        # sparse: [n][26][4]
        parts = [self.bot(dense)]
        for t, e in enumerate(self.emb):
            parts.append(e(sparse[:, t, :]))
        return self.top(torch.cat(parts, dim=1)).squeeze(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--bucket-mb", type=float, default=25)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()

    for ompi, torchrun in (("OMPI_COMM_WORLD_RANK", "RANK"), ("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"),
                           ("OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"),
                           ("OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE")):
        if ompi in os.environ and torchrun not in os.environ:
            os.environ[torchrun] = os.environ[ompi]
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
    cuda = a.device == "cuda"
    # the harness's policy: this process's CPUs, shared among local ranks
    # when they are not bound apart
    cpus = len(os.sched_getaffinity(0))
    if cpus == os.cpu_count() and local_world > 1:
        cpus //= local_world
    torch.set_num_threads(a.threads or max(1, cpus))
    if world > 1:
        dist.init_process_group("nccl" if cuda else "gloo")
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    torch.manual_seed(1)
    model = DLRMSmall(a.rows).to(dev)
    if world > 1:
        model = DDP(model, bucket_cap_mb=a.bucket_mb, device_ids=[dev.index] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    loss_fn = nn.BCEWithLogitsLoss()

    g = torch.Generator().manual_seed(100 + rank)
    batches = []
    for _ in range(4):
        dense = torch.rand(a.batch, DENSE, generator=g)
        sparse = torch.randint(0, a.rows, (a.batch, TABLES, BAG), generator=g)
        label = (torch.rand(a.batch, generator=g) < 0.5).float()
        batches.append((dense.to(dev), sparse.to(dev), label.to(dev)))

    times = []
    for s in range(a.warmup + a.steps):
        dense, sparse, label = batches[s % len(batches)]
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(dense, sparse), label)
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        if s >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    if world > 1:
        dist.barrier()
    if rank == 0:
        total = sum(times) / 1e3
        times.sort()
        print(json.dumps({
            "impl": "pytorch-ddp", "torch": torch.__version__, "backend": "nccl" if cuda else ("gloo" if world > 1 else "none"),
            "world_size": world, "batch": a.batch, "steps": a.steps,
            "samples_per_s": world * a.batch * a.steps / total,
            "step_ms_p50": statistics.median(times),
            "step_ms_p99": times[min(len(times) - 1, int(0.99 * len(times)))],
            "final_loss": float(loss),
        }))
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
