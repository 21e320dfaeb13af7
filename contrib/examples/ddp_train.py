#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ddp_train.py -- a real PyTorch DistributedDataParallel training job that
reports its steps to nodetune (the module nodetune_steps: installed by the
.deb in /usr/lib/python3/dist-packages; from a clone, ../python beside this
file, which is searched first).

A small MLP regression on synthetic data, on CPU with the gloo backend (or
on GPUs with NCCL when --device cuda).  Run it alone, under torchrun, or
under nodetune:

    python3 ddp_train.py --steps 40
    torchrun --nproc-per-node 2 ddp_train.py --steps 40
    nodetune ab --a policy=base.conf --b policy=new.conf -- python3 ddp_train.py
    nodetune ab --a cmd="python3 ddp_train.py" --b cmd="python3 ddp_train.py --width 768" \\
        --metric 'throughput: ([0-9.]+) samples/s'

--slow PCT stretches every step's compute by PCT percent (a calibrated
regression, for bench/ab_power.sh WORKLOAD=torch and the tests).

Each step becomes one line on NODETUNE_STEP_FILE / NODETUNE_STEP_FD (when
nodetune gives them; nothing otherwise) with the phases data, forward,
backward (which includes DDP's overlapped all-reduce) and optimizer.  Rank
0 also prints "throughput: X samples/s" every --log-every steps and at the
end, for `ab --metric` on jobs that cannot be changed.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from nodetune_steps import StepReporter  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=40, help="training steps (default 40)")
    p.add_argument("--batch", type=int, default=256, help="samples per step and rank (default 256)")
    p.add_argument("--width", type=int, default=512, help="hidden width of the MLP (default 512)")
    p.add_argument("--layers", type=int, default=4, help="hidden layers (default 4)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads per rank (default 1)")
    p.add_argument("--log-every", type=int, default=10, help="print throughput every N steps (default 10)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--pause-every", type=int, default=0, metavar="N",
                   help="pause every N steps (a checkpoint, a host sync): stalls to find (default 0: never)")
    p.add_argument("--pause-ms", type=float, default=100.0, help="how long a pause is (default 100 ms)")
    p.add_argument("--slow", type=float, default=0.0, metavar="PCT",
                   help="stretch every step's compute by PCT percent, spinning for PCT%% of its measured "
                        "forward+backward+optimizer time: a calibrated regression for A/B tests, as the "
                        "harness's --inject slow:PCT (default 0: none)")
    args = p.parse_args()
    if not 0 <= args.slow <= 1000:
        print(f"ddp_train.py: --slow {args.slow:g}: expected a percentage from 0 to 1000", file=sys.stderr)
        sys.exit(2)
    return args


def spin(seconds):
    """Busy-wait: a slowdown that takes the CPU, as compute would (a sleep would not)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def setup(args):
    """World from torchrun's (or mpirun's) environment; a world of one without it."""
    rank = int(os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    world = int(os.environ.get("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
    local = int(os.environ.get("LOCAL_RANK", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")))
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        dist.init_process_group("nccl" if args.device == "cuda" else "gloo", rank=rank, world_size=world)
    device = torch.device(f"cuda:{local}" if args.device == "cuda" else "cpu")
    if args.device == "cuda":
        torch.cuda.set_device(device)
    return rank, world, device


def model_of(args, device):
    layers, width = [], 64
    for _ in range(args.layers):
        layers += [nn.Linear(width, args.width), nn.ReLU()]
        width = args.width
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers).to(device)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rank, world, device = setup(args)
    model = model_of(args, device)
    if world > 1:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()
    gen = torch.Generator().manual_seed(1234 + rank)
    w_true = torch.randn(64, 1, generator=gen)
    steps = StepReporter()
    done, t_start = 0, time.perf_counter()
    for i in range(args.steps):
        with steps.step(samples=args.batch) as s:
            with s.phase("data"):
                x = torch.randn(args.batch, 64, generator=gen)
                y = x @ w_true + 0.01 * torch.randn(args.batch, 1, generator=gen)
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            t_compute = time.perf_counter()
            with s.phase("forward"):
                loss = loss_fn(model(x), y)
            with s.phase("backward"):
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with s.phase("optimizer"):
                opt.step()
                if args.device == "cuda":
                    torch.cuda.synchronize()
                if args.slow:
                    spin((time.perf_counter() - t_compute) * args.slow / 100)
            if args.pause_every and (i + 1) % args.pause_every == 0:
                with s.phase("pause"):
                    time.sleep(args.pause_ms / 1000)
        done += args.batch
        if rank == 0 and ((i + 1) % args.log_every == 0 or i + 1 == args.steps):
            rate = done * world / (time.perf_counter() - t_start)
            print(f"step {i + 1} loss {loss.item():.4f} throughput: {rate:.1f} samples/s", flush=True)
            done, t_start = 0, time.perf_counter()
    steps.close()
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
