#!/usr/bin/python3
"""rondo.torch's collectives against torch.distributed's gloo, side by side
in one process, in the default configuration:

    RONDO_LIBRARY=$PWD/build/lib/.libs/librondo.so \\
        PYTHONPATH=$PWD/build/bindings/python:$PWD/bindings/python \\
        mpiexec -n 2 /usr/bin/python3 bench/torch_collectives.py [-b 8] [-e 16M] [-f 4]

float32 CPU tensors, every size from -b to -e bytes (times -f), these
collectives, each the blocking call a script makes:
  allreduce      hvd.allreduce(t, op=Sum)            dist.all_reduce(t)
  broadcast      hvd.broadcast_(t, 0)                dist.broadcast(t, 0)
  allgather      hvd.allgather(t)                    dist.all_gather(list, t)
  reducescatter  hvd.reducescatter(t, op=Sum)        dist.reduce_scatter(o, list)
  alltoall       hvd.alltoall(t)                     dist.all_to_all_single(o, t)
and a burst: 32 tensors of the size submitted with hvd.allreduce_async and
synchronized (what DistributedOptimizer does with a layer's gradients)
against 32 dist.all_reduce(t, async_op=True) waited for. gloo has no
reduce-scatter on CPU in torch 1.13: its row is an all_reduce of the whole
tensor followed by the slice, which is what a gloo user writes.

Method: per size and collective, warm-up calls, then rounds; each round
runs `calls` calls (about 50 ms of rondo.torch's, at least 5) of
rondo.torch then of gloo (the order alternating from
round to round) between barriers, and takes each rank's mean per call; a
cell is the median over rounds of the slowest rank's mean. The ratio
gloo/rondo above 1 means rondo.torch is faster. Every result is checked
against the exact value once per size (small integers: exact in float32).
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

import rondo
import rondo.torch as hvd

BURST = 32


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1].upper()] if s[-1].upper() in units else int(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", default="8")
    ap.add_argument("-e", default="16M")
    ap.add_argument("-f", type=int, default=4)
    ap.add_argument("-r", type=int, default=7, help="rounds")
    args = ap.parse_args()
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    if "MASTER_ADDR" not in os.environ:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(29500 + os.getppid() % 1000)
    dist.init_process_group("gloo", rank=r, world_size=n)
    torch.set_num_threads(1)

    def bar():
        dist.barrier()
        hvd.barrier()

    def slowest(x):
        return float(hvd.allreduce(torch.tensor([x], dtype=torch.float64), op=hvd.Max)[0])

    lo, hi = parse_size(args.b), parse_size(args.e)
    if r == 0:
        print("# torch_collectives: rondo.torch %s against torch.distributed gloo (torch %s), "
              "%d ranks, float32 CPU tensors, %d rounds; rondo's defaults (RONDO_* unset: %s)"
              % (rondo.version(), torch.__version__, n, args.r,
                 all(not k.startswith("RONDO_") or k == "RONDO_LIBRARY" for k in os.environ)))
        print("%-14s %10s %12s %12s %8s" % ("collective", "bytes", "rondo us", "gloo us",
                                           "gloo/rondo"))
    size = lo
    bad = 0
    while size <= hi:
        count = max(size // 4, n)
        count -= count % n
        base = (torch.arange(count) % 7).float()
        x = base + r
        tri = n * (n - 1) / 2

        def ways():
            out = torch.empty(count)
            outs = [torch.empty(count) for _ in range(n)]
            part = torch.empty(count // n)
            burst = [torch.full((count,), float(r)) for _ in range(BURST)]
            return {
                "allreduce": (lambda: hvd.allreduce(x, op=hvd.Sum),
                              lambda: dist.all_reduce(out.copy_(x)) or out,
                              base * n + tri),
                "broadcast": (lambda: hvd.broadcast_(out.copy_(x), 0),
                              lambda: dist.broadcast(out.copy_(x), 0) or out, base),
                "allgather": (lambda: hvd.allgather(x),
                              lambda: dist.all_gather(outs, x) or torch.cat(outs),
                              torch.cat([base + q for q in range(n)])),
                "reducescatter": (lambda: hvd.reducescatter(x, op=hvd.Sum),
                                  lambda: (dist.all_reduce(out.copy_(x)), out.narrow(
                                      0, r * (count // n), count // n))[1],
                                  (base * n + tri).narrow(0, r * (count // n), count // n)),
                "alltoall": (lambda: hvd.alltoall(x),
                             lambda: dist.all_to_all_single(out, x) or out,
                             torch.cat([(base + q).narrow(0, r * (count // n), count // n)
                                        for q in range(n)])),
                "burst x%d" % BURST: (
                    lambda: [hvd.synchronize(h) for h in
                             [hvd.allreduce_async(t, op=hvd.Sum) for t in burst]][-1],
                    lambda: [w.wait() for w in [dist.all_reduce(t.fill_(float(r)), async_op=True)
                                                for t in burst]] and burst[-1],
                    torch.full((count,), tri)),
            }
        for name, (mine, gloo, want) in ways().items():
            for fn in (mine, gloo):  # warm-up and the check
                for _ in range(2):
                    got = fn()
                wrong = int((got != want).sum())
                bad += int(hvd.allreduce(torch.tensor([wrong]), op=hvd.Sum)[0])
            bar()
            one = time.perf_counter()
            for _ in range(5):
                mine()
            one = slowest((time.perf_counter() - one) / 5)
            calls = max(5, min(500, int(0.05 / max(one, 1e-6))))
            times = {0: [], 1: []}
            for k in range(args.r):
                order = (0, 1) if k % 2 == 0 else (1, 0)
                for which in order:
                    fn = (mine, gloo)[which]
                    bar()
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        fn()
                    times[which].append(slowest((time.perf_counter() - t0) / calls))
            med = [sorted(times[w])[len(times[w]) // 2] * 1e6 for w in (0, 1)]
            if r == 0:
                print("%-14s %10d %12.1f %12.1f %8.2f" % (name, count * 4, med[0], med[1],
                                                          med[1] / med[0]))
                sys.stdout.flush()
        size *= args.f
    if r == 0 and bad:
        print("WRONG RESULTS: %d elements" % bad)
    dist.destroy_process_group()
    hvd.shutdown()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
