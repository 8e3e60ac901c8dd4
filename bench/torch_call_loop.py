#!/usr/bin/python3
"""What one blocking call of the rondo backend costs, each call in a loop of
its own (the loop a script or a microbenchmark writes), for comparison with
rondo-bench's C figure for the same collective:

    RONDO_LIBRARY=$PWD/build/lib/.libs/librondo.so \\
        PYTHONPATH=$PWD/build/bindings/python:$PWD/bindings/python \\
        mpiexec -n 2 /usr/bin/python3 bench/torch_call_loop.py [-b 64K] [-e 64M] [-f 4]
    mpiexec -n 2 build/tools/rondo-bench reduce_scatter -a auto -b 64K -e 64M -f 4   # and the others

float32 CPU tensors of -b to -e bytes (the whole tensor; times -f):
dist.all_reduce of the whole tensor, dist.reduce_scatter_tensor of the
whole tensor into this rank's shard, dist.all_gather_into_tensor of the
shard into the whole tensor; then both again in place, as sharded
training calls them on a flat buffer (the shard is this rank's slice of
the whole tensor: the output of the reduce-scatter, the input of the
all-gather). Each call runs in loops of `calls` calls
(about 0.2 s of them) between barriers; a cell is the best loop's mean per
call, of the slowest rank (-r loops). bench/torch_distributed.py times the
same calls in alternating rounds instead, against gloo. Every result is
checked once per size against its exact value (small integers); the
timed calls then reduce zeros.
"""
import argparse
import sys
import time

import torch
import torch.distributed as dist

import rondo.torch  # noqa: F401 - registers the "rondo" backend
from torch_collectives import parse_size
from torch_distributed import slowest


def best(fn, calls, loops):
    """The best loop's mean seconds per call (the slowest rank's)."""
    b = float("inf")
    for _ in range(loops):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        b = min(b, (time.perf_counter() - t0) / calls)
    return slowest(b)


def check(rank, n, full, shard, out):
    """Each call once on known values: every element exact."""
    k = shard.numel()
    full.copy_(torch.arange(full.numel()) % 7 + rank)  # (int64, then float32: exact)
    dist.reduce_scatter_tensor(out, full)
    base = (torch.arange(rank * k, (rank + 1) * k) % 7).float()
    if not torch.equal(out, base * n + n * (n - 1) // 2):
        raise SystemExit("torch_call_loop.py: reduce_scatter_tensor: a wrong result")
    shard.fill_(rank + 1)
    dist.all_gather_into_tensor(full, shard)
    want = torch.arange(1, n + 1, dtype=torch.float32).repeat_interleave(k)
    if not torch.equal(full, want):
        raise SystemExit("torch_call_loop.py: all_gather_into_tensor: a wrong result")
    dist.all_reduce(full)
    if not torch.equal(full, want * n):
        raise SystemExit("torch_call_loop.py: all_reduce: a wrong result")
    mine = full.narrow(0, rank * k, k)  # the in-place forms
    full.copy_(torch.arange(full.numel()) % 7 + rank)
    dist.reduce_scatter_tensor(mine, full)
    if not torch.equal(mine, base * n + n * (n - 1) // 2):
        raise SystemExit("torch_call_loop.py: reduce_scatter_tensor in place: a wrong result")
    mine.fill_(rank + 1)
    dist.all_gather_into_tensor(full, mine)
    if not torch.equal(full, want):
        raise SystemExit("torch_call_loop.py: all_gather_into_tensor in place: a wrong result")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-b", default="64K", help="smallest whole tensor in bytes (64K)")
    ap.add_argument("-e", default="64M", help="largest whole tensor in bytes (64M)")
    ap.add_argument("-f", type=int, default=4, help="factor between sizes (4)")
    ap.add_argument("-r", type=int, default=7, help="loops per cell, the best kept (7)")
    args = ap.parse_args()
    dist.init_process_group("rondo")
    rank, n = dist.get_rank(), dist.get_world_size()
    lo, hi = parse_size(args.b), parse_size(args.e)
    if lo < 4 * n or hi < lo or args.f < 2 or args.r < 1:
        sys.exit("torch_call_loop.py: need 4 x ranks <= -b <= -e, -f >= 2, -r >= 1")
    if rank == 0:
        print("# torch_call_loop: the rondo backend's blocking calls, %d ranks, float32, the best "
              "of %d loops (us per call, the slowest rank)" % (n, args.r))
        print("%12s %12s %12s %12s %8s %8s %12s %12s %8s %8s"
              % ("bytes", "all_reduce", "reduce_scat", "all_gather", "rs/ar", "ag/ar",
                 "rs_in_place", "ag_in_place", "rs/ar", "ag/ar"))
    size = lo
    while size <= hi:
        k = size // 4 // n
        full, shard, out = torch.zeros(k * n), torch.zeros(k), torch.zeros(k)
        check(rank, n, full, shard, out)
        full.zero_()  # the timed calls reduce zeros (no overflow however many calls)
        shard.zero_()
        calls = max(20, min(2000, int(0.2e9 / (size + 1e5))))
        ar = best(lambda: dist.all_reduce(full), calls, args.r) * 1e6
        rs = best(lambda: dist.reduce_scatter_tensor(out, full), calls, args.r) * 1e6
        ag = best(lambda: dist.all_gather_into_tensor(full, shard), calls, args.r) * 1e6
        mine = full.narrow(0, rank * k, k)
        rsi = best(lambda: dist.reduce_scatter_tensor(mine, full), calls, args.r) * 1e6
        agi = best(lambda: dist.all_gather_into_tensor(full, mine), calls, args.r) * 1e6
        if rank == 0:
            print("%12d %12.1f %12.1f %12.1f %8.2f %8.2f %12.1f %12.1f %8.2f %8.2f"
                  % (k * n * 4, ar, rs, ag, rs / ar, ag / ar, rsi, agi, rsi / ar, agi / ar),
                  flush=True)
        size *= args.f
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
