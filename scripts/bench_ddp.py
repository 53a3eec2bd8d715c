"""PyTorch's side of scripts/bench-scaling: the network, batch per replica and optimizer
(Adam, 0.001) of dnn-classifier's runs there, trained in one process or as one rank of
DistributedDataParallel (gloo, over loopback unless told rank 0's address; its bucketed
all-reduce overlapped with the backward pass), on random rows held in memory. Prints one
JSON line on rank 0: {"examples_per_sec": E} over every rank's examples, after the first
10 % of the steps (at most 100), as dnn-classifier reports its steady state. With
--backward-passes K each step adds up the gradients of K batches, the first K - 1 under
DDP's `no_sync` (dnn-classifier's --backward-passes-per-step). With --powersgd R, DDP's
PowerSGD hook compresses gradient matrices to rank R from step 10 (dnn-classifier's
--powersgd-rank R --powersgd-start-step 10).

Usage: bench_ddp.py --features F --hidden 128,64 --batch B --steps S --threads T
                    [--world N --rank R --port P --master-addr A]
                    [--compression none|fp16|bf16] [--backward-passes K] [--powersgd R]
"""
import argparse
import contextlib
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel


def parse():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--features", type=int, required=True)
    p.add_argument("--hidden", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--world", type=int, default=1)
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--master-addr", default="127.0.0.1", help="rank 0's address")
    p.add_argument("--compression", default="none", choices=["none", "fp16", "bf16"],
                   help="DDP's communication hook sending 16-bit gradients")
    p.add_argument("--backward-passes", type=int, default=1,
                   help="batches whose gradients are added up into each step")
    p.add_argument("--powersgd", type=int, default=0,
                   help="DDP's PowerSGD hook at this rank from step 10 (0: off)")
    return p.parse_args()


def main():
    args = parse()
    torch.set_num_threads(args.threads)
    if args.world > 1:
        os.environ.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(args.port))
        # A peer that never comes fails the run within two minutes, not gloo's thirty.
        dist.init_process_group("gloo", rank=args.rank, world_size=args.world,
                                timeout=datetime.timedelta(seconds=120))
    layers, width = [], args.features
    for units in (int(u) for u in args.hidden.split(",")):
        layers += [torch.nn.Linear(width, units), torch.nn.ReLU()]
        width = units
    torch.manual_seed(0)  # the same initial weights on every rank, as DDP also broadcasts
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))
    if args.world > 1:
        model = DistributedDataParallel(model)
        hook = {"fp16": default_hooks.fp16_compress_hook,
                "bf16": default_hooks.bf16_compress_hook}.get(args.compression)
        if hook is not None:
            model.register_comm_hook(None, hook)
        if args.powersgd:
            state = powerSGD_hook.PowerSGDState(
                process_group=None, matrix_approximation_rank=args.powersgd,
                start_powerSGD_iter=10)
            model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    loss_fn = torch.nn.CrossEntropyLoss()
    rows = max(4 * args.batch, 20_000)
    generator = torch.Generator().manual_seed(args.rank)
    x = torch.randn(rows, args.features, generator=generator)
    y = torch.randint(0, 10, (rows,), generator=generator)
    startup = min(max(args.steps // 10, 1), 100)
    passes = max(args.backward_passes, 1)
    warm = None
    taken = 0
    for step in range(args.steps):
        optimizer.zero_grad(set_to_none=True)
        for k in range(passes):
            at = (taken * args.batch) % (rows - args.batch + 1)
            taken += 1
            last = k + 1 == passes
            # DDP all-reduces in the last pass only, each bucket as its gradients are ready.
            with (model.no_sync() if args.world > 1 and not last
                  else contextlib.nullcontext()):
                loss = loss_fn(model(x[at:at + args.batch]), y[at:at + args.batch])
                (loss / passes).backward()
        optimizer.step()
        if step + 1 == startup:
            warm = time.perf_counter()
    ended = time.perf_counter()
    steady = args.steps - startup
    if args.rank == 0:
        examples = steady * args.batch * args.world * passes
        rate = examples / (ended - warm) if steady > 0 else 0.0
        print(json.dumps({"examples_per_sec": rate, "loss": loss.item()}), flush=True)
    if args.world > 1:
        # gloo's teardown may abort a rank whose peer closed first ("terminate called without
        # an active exception"): every rank waits for the others, then leaves without it.
        dist.barrier()
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
