"""DDP's step time on one backend, under any launcher that sets the
torch.distributed variables (bench/launchers.sh runs it under torchrun):

    torchrun --nproc_per_node 2 bench/ddp_step.py --backend rondo|gloo

A step is forward, backward (DDP all-reduces the gradients in buckets
while it runs) and an SGD step, on a batch of --batch rows per rank of an
MLP of about 2.4 M float32 parameters (9.4 MB of gradients). After
--warmup steps, --steps steps are timed one by one; rank 0 prints the
median and the mean:

    ddp_step: rondo, 2 ranks, 2.4 M parameters, batch 32 per rank: median 8.1 ms, mean 8.3 ms

On the rondo backend each step's phases are marked in the engine's
timeline (RONDO_TIMELINE=FILE; bench/step_breakdown.py FILE reads them).
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import rondo
import rondo.torch  # noqa: F401 - registers the "rondo" backend


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="rondo")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--mlp-mb", type=float, default=0,
                   help="a model of 1024-wide layers with about this many MB of gradients "
                        "(default: the 9.4 MB MLP)")
    args = p.parse_args()
    dist.init_process_group(args.backend)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    if args.mlp_mb > 0:
        hidden = max(1, round(args.mlp_mb * 1e6 / 4 / (1024 * 1025)))
        layers = []
        for _ in range(hidden):
            layers += [nn.Linear(1024, 1024), nn.ReLU()]
        model = nn.Sequential(*layers, nn.Linear(1024, 10))
    else:
        model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                              nn.ReLU(), nn.Linear(1024, 256), nn.ReLU(), nn.Linear(256, 10))
    params = sum(p.numel() for p in model.parameters())
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(args.batch, 1024)
    y = torch.randint(0, 10, (args.batch,))
    # the step's phases in rondo's timeline (a no-op without one)
    mark = rondo.world().timeline_mark if args.backend == "rondo" else lambda what: None
    times = []
    for s in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        mark("step")
        opt.zero_grad()
        loss = nn.functional.cross_entropy(ddp(x), y)
        mark("backward")
        loss.backward()  # returns when DDP has every bucket's all-reduce
        mark("backward done")
        opt.step()
        mark("updated")
        if s >= args.warmup:
            times.append(time.perf_counter() - t0)
    if dist.get_rank() == 0:
        print("ddp_step: %s, %d ranks, %.1f M parameters, batch %d per rank: median %.2f ms, "
              "mean %.2f ms" % (args.backend, dist.get_world_size(), params / 1e6, args.batch,
                                statistics.median(times) * 1e3, statistics.mean(times) * 1e3),
              flush=True)
    del ddp, opt
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
