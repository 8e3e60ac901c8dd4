#!/usr/bin/python3
"""torch.distributed on the "rondo" backend against gloo, in one run, in
the default configuration:

    RONDO_LIBRARY=$PWD/build/lib/.libs/librondo.so \\
        PYTHONPATH=$PWD/build/bindings/python:$PWD/bindings/python \\
        mpiexec -n 2 /usr/bin/python3 bench/torch_distributed.py [-b 8] [-e 64M] [-f 4]

The default group is rondo's (init_process_group("rondo")); a gloo group
of the same ranks (new_group(backend="gloo")) runs the same calls. Parts:

  all_reduce  dist.all_reduce(t) of a float32 CPU tensor, every size from
              -b to -e bytes (times -f), blocking as scripts call it (the
              timed calls reduce zeros, after a check with real values);
  burst x32   32 dist.all_reduce(t, async_op=True) of that size, then
              every wait(): what DDP's buckets and comm hooks look like;
  ddp         one DistributedDataParallel training step (forward,
              backward with DDP's bucketed gradient all-reduces, SGD step)
              of an MLP whose gradients are --mlp-mb MB, synthetic data,
              default DDP settings. Both runs start from the same weights
              and data; the parameters after the last step are compared
              (at 2 ranks every sum is a + b: the same bits on both);
  sharded     dist.reduce_scatter_tensor of the whole tensor into this
              rank's shard, dist.reduce of it to rank 0 (gloo's too) and
              dist.all_gather_into_tensor of the shard
              into the whole (FSDP's and ZeRO's calls), timed in the same
              rounds as an all_reduce of the whole tensor, each given as a
              fraction of it; gloo in torch 1.13 raises on both
              ("unsupported"). Each such row ends with what torch itself
              costs per call ("torch alone"): the same call on a group of
              a backend that does nothing (every call returns a completed
              Work), timed in the same rounds. --no-sharded leaves them
              out.

Method: warm-up calls, then rounds; a round runs `calls` calls (about
50 ms of rondo's) of rondo then of gloo (the order alternating from round
to round) between barriers and takes each rank's mean per call; "us" is
the median over rounds of the slowest rank's mean, "p50" the slowest
rank's median of single calls (what a call costs when nothing disturbs
it; the mean includes the machine's hiccups). gloo/rondo and ratio above 1
mean rondo is faster. --apart runs all of rondo's rounds, then all of
gloo's: each backend's calls back to back, undisturbed by the other's. Every all-reduce result is checked against its
exact value (small integers).
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import rondo
import rondo.torch  # noqa: F401 - registers the "rondo" backend
from torch_collectives import parse_size

BURST = 32


class _DoneWork(torch._C._distributed_c10d.Work):
    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


class _Nothing(torch._C._distributed_c10d.ProcessGroup):
    """The "nothing" backend: every call returns a completed Work at once,
    so a call on its group costs what torch.distributed itself costs."""

    def getBackendName(self):
        return "nothing"

    def allreduce(self, tensors, opts=None):
        return _DoneWork()

    def _reduce_scatter_base(self, output, input, opts=None):
        return _DoneWork()

    def _allgather_base(self, output, input, opts=None):
        return _DoneWork()

    def reduce(self, tensors, opts=None):
        return _DoneWork()


def nothing_group():
    """A group of every rank on the "nothing" backend."""
    if not hasattr(dist.Backend, "NOTHING"):
        dist.Backend.register_backend(
            "nothing", lambda store, rank, size, timeout: _Nothing(rank, size))
    return dist.new_group(backend="nothing")


def slowest(x):
    t = torch.tensor([x], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t[0])


def compare(fns, rounds, budget=0.05, apart=False):
    """fns: the calls to compare (rondo's, gloo's; or several of rondo's).
    For each: the median over rounds of the slowest rank's mean time per
    call, and the slowest rank's median of single calls (s). Each round
    runs every fn, the first in turn (fns[k:] + fns[:k] in round k)."""
    for fn in fns:
        fn()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(3):
        fns[0]()
    one = slowest((time.perf_counter() - t0) / 3)
    for fn in fns[1:]:
        for _ in range(3):
            fn()  # all make as many calls (the DDP runs stay comparable)
    calls = max(3, min(500, int(budget / max(one, 1e-6))))
    k = len(fns)
    means, singles = [[] for _ in fns], [[] for _ in fns]
    clock = time.perf_counter
    if apart:  # every round of the first's, then every round of the next's ...
        order = [(w,) for w in range(k) for _ in range(rounds)]
    else:
        order = [tuple((r + j) % k for j in range(k)) for r in range(rounds)]
    for pair in order:
        for which in pair:
            fn, ts = fns[which], singles[which]
            dist.barrier()
            start = clock()
            for _ in range(calls):
                t0 = clock()
                fn()
                ts.append(clock() - t0)
            means[which].append(slowest((clock() - start) / calls))
    return [(median(means[w]), slowest(median(singles[w]))) for w in range(k)]


def median(v):
    return sorted(v)[len(v) // 2]


def all_reduce_rows(args, gloo, rank, size):
    lo, hi = parse_size(args.b), parse_size(args.e)
    bad = 0
    n = lo
    while n <= hi:
        count = max(n // 4, 1)
        base = (torch.arange(count) % 7).float()
        x = base + rank
        want = base * size + size * (size - 1) / 2
        out = torch.empty(count)
        burst = [torch.empty(count) for _ in range(BURST)]

        # The timed calls reduce zeros (which stay zeros, so the tensors need
        # no refill between calls: a refill would time a copy too); the
        # check before them reduces real values.
        def one(group, fill):
            return lambda: dist.all_reduce(out.copy_(x) if fill else out, group=group)

        def many(group, fill):
            def run():
                works = [dist.all_reduce(t.copy_(x) if fill else t, group=group, async_op=True)
                         for t in burst]
                for w in works:
                    w.wait()
            return run
        for name, make in (("all_reduce", one), ("burst x%d" % BURST, many)):
            for group in (None, gloo):  # the check, once per size and backend
                make(group, True)()
                got = out if name == "all_reduce" else torch.stack(burst)
                wrong = torch.tensor([int((got != want).sum())])
                dist.all_reduce(wrong)
                bad += int(wrong[0])
            out.zero_()
            for t in burst:
                t.zero_()
            (mine, mine1), (theirs, theirs1) = compare((make(None, False), make(gloo, False)),
                                                       args.r, apart=args.apart)
            if rank == 0:
                print("%-12s %10d %12.1f %12.1f %8.2f %12.1f %12.1f %8.2f"
                      % (name, count * 4, mine * 1e6, theirs * 1e6, theirs / mine,
                         mine1 * 1e6, theirs1 * 1e6, theirs1 / mine1), flush=True)
        n *= args.f
    return bad


def sharded_rows(args, gloo, rank, size):
    """What sharded training calls: reduce_scatter_tensor of a whole
    tensor into this rank's shard and all_gather_into_tensor of the shard
    into the whole, against all_reduce of the whole, all on rondo, timed in
    the same rounds; gloo (torch 1.13) raises on both: "unsupported"."""
    lo, hi = max(parse_size(args.b), 4 * size), parse_size(args.e)
    nothing = nothing_group()
    bad = 0
    n = lo
    while n <= hi:
        shard = max(n // 4 // size, 1)
        count = shard * size
        whole = torch.arange(float(count)) % 7 + rank
        want_rs = (torch.arange(float(count)) % 7 * size + size * (size - 1) / 2)[
            rank * shard:(rank + 1) * shard]
        mine = torch.full((shard,), float(rank))
        want_ag = torch.arange(float(size)).repeat_interleave(shard)
        out_rs, out_ag = torch.empty(shard), torch.empty(count)
        dist.reduce_scatter_tensor(out_rs, whole)
        dist.all_gather_into_tensor(out_ag, mine)
        red = whole.clone()
        dist.reduce(red, dst=0)
        want_red = torch.arange(float(count)) % 7 * size + size * (size - 1) / 2
        wrong = torch.tensor([int((out_rs != want_rs).sum() + (out_ag != want_ag).sum() +
                                  (rank == 0 and (red != want_red).sum()))])
        dist.all_reduce(wrong)
        bad += int(wrong[0])
        unsupported = {}
        for name, call in (("reduce_scatter_tensor",
                            lambda: dist.reduce_scatter_tensor(out_rs, whole, group=gloo)),
                           ("all_gather_into_tensor",
                            lambda: dist.all_gather_into_tensor(out_ag, mine, group=gloo))):
            try:
                call()
            except RuntimeError as e:  # torch 1.13's gloo: "does not support"
                unsupported[name] = str(e).split("\n")[0]
        zeros = torch.zeros(count)
        fns = (lambda: dist.all_reduce(zeros),
               lambda: dist.reduce_scatter_tensor(out_rs, whole),
               lambda: dist.all_gather_into_tensor(out_ag, mine),
               lambda: dist.reduce(zeros, dst=0),
               lambda: dist.reduce(zeros, dst=0, group=gloo),
               lambda: dist.all_reduce(zeros, group=nothing),
               lambda: dist.reduce_scatter_tensor(out_rs, whole, group=nothing),
               lambda: dist.all_gather_into_tensor(out_ag, mine, group=nothing),
               lambda: dist.reduce(zeros, dst=0, group=nothing))
        (t_ar, p_ar), (t_rs, p_rs), (t_ag, p_ag), (t_red, p_red), (g_red, gp_red), \
            (n_ar, _), (n_rs, _), (n_ag, _), (n_red, _) = compare(fns, args.r, apart=args.apart)
        if rank == 0:
            for name, t, p1, alone in (("reduce_scatter_tensor", t_rs, p_rs, n_rs),
                                       ("all_gather_into_tensor", t_ag, p_ag, n_ag)):
                print("%-12s %10d %12.1f %12s %8s %12.1f %12s %8s   %.2fx all_reduce's "
                      "%.1f us (p50 %.2fx); torch alone %.1f us (all_reduce %.1f)"
                      % (name, count * 4, t * 1e6, "unsupported" if name in unsupported
                         else "not timed", "-", p1 * 1e6, "-", "-", t / t_ar, t_ar * 1e6,
                         p1 / p_ar, alone * 1e6, n_ar * 1e6), flush=True)
            print("%-12s %10d %12.1f %12.1f %8.2f %12.1f %12.1f %8.2f   %.2fx all_reduce's "
                  "%.1f us (p50 %.2fx); torch alone %.1f us"
                  % ("reduce", count * 4, t_red * 1e6, g_red * 1e6, g_red / t_red,
                     p_red * 1e6, gp_red * 1e6, gp_red / p_red, t_red / t_ar, t_ar * 1e6,
                     p_red / p_ar, n_red * 1e6), flush=True)
        n *= args.f
    return bad


def ddp_rows(args, gloo, rank):
    # A square MLP: width w, `layers` layers of w*w + w parameters.
    layers = 4
    width = int((args.mlp_mb * 1e6 / 4 / layers) ** 0.5)
    batch = 32

    def model(group):
        torch.manual_seed(0)
        net = nn.Sequential(*[m for _ in range(layers) for m in (nn.Linear(width, width),
                                                                 nn.ReLU())])
        ddp = nn.parallel.DistributedDataParallel(net, process_group=group)
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
        g = torch.Generator().manual_seed(rank)
        data = (torch.randn(batch, width, generator=g), torch.randn(batch, width, generator=g))

        def step():
            opt.zero_grad()
            nn.functional.mse_loss(ddp(data[0]), data[1]).backward()
            opt.step()
        return net, step
    (net_r, step_r), (net_g, step_g) = model(None), model(gloo)
    params = sum(p.numel() for p in net_r.parameters())
    (mine, _), (theirs, _) = compare((step_r, step_g), args.r, budget=1.0)
    # both ran the same number of steps from the same start
    same = all(torch.equal(a, b) for a, b in zip(net_r.parameters(), net_g.parameters()))
    if rank == 0:
        print("%-12s %10d %12.1f %12.1f %8.2f   (ms per step; %d-wide MLP, %d layers, "
              "batch %d per rank; parameters after the run %s)"
              % ("ddp step", params * 4, mine * 1e3, theirs * 1e3, theirs / mine, width,
                 layers, batch, "identical" if same else "DIFFER"), flush=True)
    return 0 if same or dist.get_world_size() > 2 else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", default="8")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-f", type=int, default=4)
    ap.add_argument("-r", type=int, default=7, help="rounds")
    ap.add_argument("--apart", action="store_true",
                    help="all of rondo's rounds, then all of gloo's (default: alternating)")
    ap.add_argument("--mlp-mb", type=float, default=64, help="DDP model's gradient MB (0: none)")
    ap.add_argument("--no-sharded", dest="sharded", action="store_false",
                    help="without the reduce_scatter_tensor / all_gather_into_tensor rows")
    args = ap.parse_args()
    if args.f < 2:
        ap.error("-f must be 2 or more (each size is the last times f)")
    dist.init_process_group("rondo")
    gloo = dist.new_group(backend="gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    if rank == 0:
        print("# torch_distributed: the rondo backend (rondo %s) against gloo, torch %s, %d ranks, "
              "float32 CPU tensors, %d rounds%s; rondo's defaults (RONDO_* unset: %s)"
              % (rondo.version(), torch.__version__, size, args.r,
                 " (apart)" if args.apart else " (alternating)",
                 all(not k.startswith("RONDO_") or k == "RONDO_LIBRARY" for k in os.environ)))
        print("%-12s %10s %12s %12s %8s %12s %12s %8s"
              % ("call", "bytes", "rondo us", "gloo us", "gloo/rondo", "rondo p50", "gloo p50",
                 "ratio"))
    bad = all_reduce_rows(args, gloo, rank, size)
    if args.sharded:
        bad += sharded_rows(args, gloo, rank, size)
    if args.mlp_mb > 0:
        bad += ddp_rows(args, gloo, rank)
    if rank == 0 and bad:
        print("WRONG RESULTS: %d" % bad)
    dist.destroy_process_group()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
