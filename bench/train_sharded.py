#!/usr/bin/python3
"""examples/python/train_sharded.py's ZeRO training against DDP on the same
backend, in alternating rounds, so that a noisy machine cannot favour one:

    RONDO_LIBRARY=$PWD/build/lib/.libs/librondo.so \\
        PYTHONPATH=$PWD/build/bindings/python:$PWD/bindings/python \\
        mpiexec -n 2 /usr/bin/python3 bench/train_sharded.py [--stage 2|3] [--rounds 7] \\
            [--width 1024] [--depth 3] [--steps 40] [--batch 32]

A round trains the example's model twice from the same weights on the same
data: with DDP and torch.optim.SGD, then ZeRO-style (the example's
ShardedSGD), the order alternating from round to round. Each training
leaves its first steps untimed (the example's rule). Printed: each round's
steps per second of both and their ratio (sharded over DDP: above 1, the
sharded training is faster), the median ratio and both medians, and the
bytes each rank keeps between steps. Every round also checks that both
trainings saw the same losses and ended with the same parameters (to
1e-6): a benchmark of a training that went wrong says nothing.
"""
import argparse
import os
import statistics
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                "python"))
import train_sharded as example  # noqa: E402 - the example is the thing measured


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stage", type=int, choices=(2, 3), default=2)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=32)
    a = p.parse_args()
    args = example.parse_args(["--stage", str(a.stage), "--width", str(a.width), "--depth",
                               str(a.depth), "--steps", str(a.steps), "--batch", str(a.batch)])
    dist.init_process_group("rondo")
    rank, size = dist.get_rank(), dist.get_world_size()
    data = example.batches(args.width, args.batch, args.steps, rank)
    timed = args.steps - example.untimed(args.steps)
    rows = []
    for r in range(a.rounds):
        runs = {}
        for kind in (("ddp", "sharded") if r % 2 == 0 else ("sharded", "ddp")):
            dist.barrier()
            train = example.train_ddp if kind == "ddp" else example.train_sharded
            runs[kind] = train(args, data)
        (ls, ps, ts, ks), (ld, pd, td, kd) = runs["sharded"], runs["ddp"]
        loss_diff = max(abs(x - y) for x, y in zip(ls, ld))
        param_diff = float((ps - pd).abs().max())
        # (the largest difference on any rank: every rank stops together)
        worst = torch.tensor([loss_diff, param_diff], dtype=torch.float64)
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        if float(worst.max()) > 1e-6:
            sys.exit("round %d: the sharded training differs from DDP's (loss by %g, parameters "
                     "by %g, the most on any rank)" % (r + 1, float(worst[0]), float(worst[1])))
        rows.append((timed / td, timed / ts, ks, kd))
    if rank == 0:
        print("# bench/train_sharded.py: stage %d against DDP, %d ranks, width %d, depth %d, "
              "%d steps (%d timed) of %d rows per rank, %d rounds, the order alternating"
              % (args.stage, size, args.width, args.depth, args.steps, timed, args.batch,
                 a.rounds))
        print("round   DDP steps/s   sharded steps/s   sharded/DDP")
        for i, (d, s, _, _) in enumerate(rows):
            print("%5d   %11.1f   %15.1f   %11.3f" % (i + 1, d, s, s / d))
        ratios = [s / d for d, s, _, _ in rows]
        print("median: DDP %.1f, sharded %.1f steps/s; sharded/DDP %.3f (per round %.3f-%.3f)"
              % (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows),
                 statistics.median(ratios), min(ratios), max(ratios)))
        print("kept per rank between steps: DDP %d bytes, sharded %d bytes (%.2fx)"
              % (rows[0][3], rows[0][2], rows[0][2] / rows[0][3]))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
