"""DDP on the rondo backend, started by any launcher (tests/launch/*.sh):
N ranks train like one process with the global batch.

    torchrun --nproc_per_node N ddp.py              torchrun's variables, env://
    ddp.py --spawn N --init env|tcp|file            torch.multiprocessing.spawn,
                                                    rank= and world_size= given

Each rank trains a small MLP with DistributedDataParallel on its shard of
every global batch (synthetic data, the same on every rank). Rank 0 also
trains the same model, from the same start, as one process on the whole
global batch. After the steps, DDP's parameters must equal that reference
within 1e-6 (relative to the largest parameter), and be the same bytes on
every rank. The output says where rondo's world came from (rondo.launcher())
so the caller can check the launcher was the one it meant.
"""
import argparse
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn

import rondo
import rondo.torch  # noqa: F401 - registers the "rondo" backend

STEPS, BATCH, FEATURES = 6, 12, 8  # BATCH: the global batch, a multiple of 1-4 ranks (12)


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.Tanh(), nn.Linear(16, 1))


def data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(STEPS, BATCH, FEATURES, generator=g)
    y = x.sum(dim=2, keepdim=True).sin()
    return x, y


def shard(t, rank, size):
    """This rank's rows of a global batch: contiguous and equal (BATCH is a
    multiple of size)."""
    n = t.shape[0] // size
    return t[rank * n:(rank + 1) * n]


def train(rank, size):
    torch.set_num_threads(1)
    x, y = data()
    ddp = nn.parallel.DistributedDataParallel(model())
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for s in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.mse_loss(ddp(shard(x[s], rank, size)), shard(y[s], rank, size))
        loss.backward()  # DDP averages the gradients over the ranks
        opt.step()
    flat = torch.cat([p.detach().reshape(-1) for p in ddp.module.parameters()])

    # every rank holds the same bytes
    gathered = [torch.empty_like(flat) for _ in range(size)]
    dist.all_gather(gathered, flat)
    same = all(torch.equal(g, flat) for g in gathered)

    worst = 0.0
    if rank == 0:
        ref = model()
        ropt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
        for s in range(STEPS):
            ropt.zero_grad()
            nn.functional.mse_loss(ref(x[s]), y[s]).backward()
            ropt.step()
        rflat = torch.cat([p.detach().reshape(-1) for p in ref.parameters()])
        worst = float((flat - rflat).abs().max() / rflat.abs().max())
    verdict = torch.tensor([worst, 0.0 if same else 1.0], dtype=torch.float64)
    dist.broadcast(verdict, 0)
    worst, differ = float(verdict[0]), float(verdict[1])
    ok = worst <= 1e-6 and differ == 0 and same
    # one write per line: the ranks share stdout
    sys.stdout.write("rank %d of %d: %s: %d DDP steps on %s; max difference from one process "
                     "with the global batch %.2e; same bytes on every rank: %s; rondo's world: "
                     "%s\n" % (rank, size, "ok" if ok else "FAIL", STEPS, dist.get_backend(),
                                worst, same, rondo.launcher()))
    sys.stdout.flush()
    del ddp, opt
    dist.destroy_process_group()
    return ok


def spawned(rank, size, init):
    dist.init_process_group("rondo", init_method=init, rank=rank, world_size=size)
    if not train(rank, size):
        sys.exit(1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spawn", type=int, metavar="N", help="start N processes with mp.spawn")
    p.add_argument("--init", choices=("env", "tcp", "file"), default="env")
    p.add_argument("--port", type=int, default=0, help="MASTER_PORT or the tcp:// port")
    args = p.parse_args()
    if args.spawn is None:  # torchrun (or any launcher) set the variables
        dist.init_process_group("rondo")
        sys.exit(0 if train(dist.get_rank(), dist.get_world_size()) else 1)
    if args.init == "env":
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
        init = "env://"
    elif args.init == "tcp":
        init = "tcp://127.0.0.1:%d" % args.port
    else:
        fd, path = tempfile.mkstemp(prefix="rondo-ddp-")
        os.close(fd)
        os.unlink(path)
        init = "file://" + path
    torch.multiprocessing.spawn(spawned, args=(args.spawn, init), nprocs=args.spawn)


if __name__ == "__main__":
    main()
