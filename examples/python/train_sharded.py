"""Sharded data-parallel training (ZeRO stage 2 or 3) written with the
public torch.distributed calls only, on the "rondo" backend, checked against
DistributedDataParallel on the same backend.

    RONDO_LIBRARY=build/lib/.libs/librondo.so \
    PYTHONPATH=build/bindings/python:bindings/python \
        mpiexec -n 2 /usr/bin/python3 examples/python/train_sharded.py [--stage 2|3]

torch 1.13's FSDP needs CUDA, and its gloo backend has neither
reduce_scatter_tensor nor all_gather_into_tensor; on rondo both run on CPU
tensors. The model's parameters live in one flat buffer, padded to a
multiple of the world size N; rank r owns the r-th of its N equal shards
and keeps the optimizer's state (SGD with momentum) for that shard only.
A step:

  - stage 3 only: all_gather_into_tensor of the shards into the flat
    buffer (the parameters exist in full only from here to the end of
    backward, then their memory is released);
  - forward and backward; a hook on every parameter copies its gradient
    into a flat gradient buffer as backward produces it, and when the last
    one has come, reduce_scatter_tensor(op=AVG) starts (async_op=True) and
    leaves this rank the average gradient of its shard;
  - the optimizer steps on the shard;
  - stage 2: all_gather_into_tensor of the updated shards into the flat
    buffer, the full parameters for the next forward.

Each rank trains on its own batch (--batch rows, seeded by its rank), so N
ranks train like one rank with the N-times batch. --ddp runs the same
training with DDP and torch.optim.SGD and compares every step's loss and
the final parameters (at 2 ranks every average is (a + b) / 2 on both
sides: the same bits; at more ranks the sums may run in another order).
The last lines give steps per second (the first 5 steps untimed) and the
bytes each rank keeps between steps.
"""
import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import rondo.torch  # noqa: F401 - registers the "rondo" backend


def make_model(width, depth, seed=0):
    torch.manual_seed(seed)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(width, 1))


def batches(width, rows, steps, rank):
    """This rank's batches: inputs and a fixed linear target of them (the
    same teacher on every rank), so the loss falls."""
    teacher = torch.Generator().manual_seed(7)
    w = torch.randn(width, 1, generator=teacher) / width ** 0.5
    g = torch.Generator().manual_seed(1000 + rank)
    out = []
    for _ in range(steps):
        x = torch.randn(rows, width, generator=g)
        out.append((x, x @ w))
    return out


class ShardedSGD:
    """The model's parameters as views of one flat buffer, this rank's
    shard of them with its momentum, and the step's collectives."""

    def __init__(self, model, stage, lr, momentum):
        self.rank, self.size = dist.get_rank(), dist.get_world_size()
        self.stage, self.lr, self.momentum = stage, lr, momentum
        self.params = list(model.parameters())
        total = sum(p.numel() for p in self.params)
        self.shard_len = -(-total // self.size)
        padded = self.shard_len * self.size
        self.flat = torch.zeros(padded)
        self.grads = torch.zeros(padded)
        at = 0
        self.offsets = []
        for p in self.params:
            n = p.numel()
            self.flat[at:at + n].copy_(p.detach().reshape(-1))
            p.data = self.flat[at:at + n].view_as(p)
            self.offsets.append(at)
            at += n
        lo = self.rank * self.shard_len
        # stage 2: the shard is this rank's part of the flat buffer (the
        # all-gather then runs in place); stage 3 keeps it apart
        self.shard = self.flat[lo:lo + self.shard_len]
        if stage == 3:
            self.shard = self.shard.clone()
        self.shard_grad = torch.zeros(self.shard_len)
        self.buf = torch.zeros(self.shard_len)
        self.work, self.ready = None, 0
        for i, p in enumerate(self.params):
            p.register_hook(self._hook(i))
        if stage == 3:
            self._release()

    def _hook(self, i):
        def hook(grad):
            at, n = self.offsets[i], self.params[i].numel()
            self.grads[at:at + n].copy_(grad.reshape(-1))
            self.ready += 1
            if self.ready == len(self.params):  # backward's last gradient
                self.work = dist.reduce_scatter_tensor(self.shard_grad, self.grads,
                                                       op=dist.ReduceOp.AVG, async_op=True)
            return grad
        return hook

    def _release(self):
        """Stage 3: the full parameters' memory goes until the next gather."""
        self.flat.storage().resize_(0)

    def gather(self):
        """The full parameters from every rank's shard."""
        if self.flat.storage().size() == 0:
            self.flat.storage().resize_(self.shard_len * self.size)
        dist.all_gather_into_tensor(self.flat, self.shard)

    def step(self, loss_fn):
        """One training step; loss_fn() computes the loss with the model."""
        if self.stage == 3:
            self.gather()
        self.ready = 0
        loss = loss_fn()
        loss.backward()
        self.work.wait()
        for p in self.params:  # their gradients were copied out: no full copy kept
            p.grad = None
        # torch.optim.SGD's update (dampening 0, no weight decay), on the shard
        self.buf.mul_(self.momentum).add_(self.shard_grad)
        self.shard.add_(self.buf, alpha=-self.lr)
        if self.stage == 3:
            self._release()
        else:
            self.gather()
        return loss.detach()

    def full_parameters(self):
        """Every parameter, flat, in full (a collective)."""
        self.gather()
        out = self.flat[:sum(p.numel() for p in self.params)].clone()
        if self.stage == 3:
            self._release()
        return out

    def kept_bytes(self):
        """What this rank keeps between steps: the gradient shard and the
        momentum, the flat gradient buffer (one bucket the size of the model
        here; ZeRO's buckets are smaller), and the full parameters (stage 2)
        or the parameter shard (stage 3, which gathers them per step)."""
        shard = 2 * self.shard_len * 4
        params = self.flat.numel() * 4 if self.stage == 2 else self.shard_len * 4
        return shard + self.grads.numel() * 4 + params


def untimed(steps):
    """The first steps are not timed: the process warms up (allocations,
    the engine's first calls) in whichever training runs first."""
    return min(5, steps - 1)


def train_sharded(args, data):
    model = make_model(args.width, args.depth)
    opt = ShardedSGD(model, args.stage, args.lr, args.momentum)
    losses = []
    t0 = time.perf_counter()
    for i, (x, y) in enumerate(data):
        if i == untimed(len(data)):
            t0 = time.perf_counter()
        losses.append(float(opt.step(lambda: nn.functional.mse_loss(model(x), y))))
    seconds = time.perf_counter() - t0
    return losses, opt.full_parameters(), seconds, opt.kept_bytes()


def train_ddp(args, data):
    net = make_model(args.width, args.depth)
    model = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    losses = []
    t0 = time.perf_counter()
    for i, (x, y) in enumerate(data):
        if i == untimed(len(data)):
            t0 = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    seconds = time.perf_counter() - t0
    params = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    kept = 3 * params.numel() * 4  # parameters, gradients, momentum
    return losses, params, seconds, kept


def compare(args):
    """Both trainings on the same data: (sharded, ddp), each (losses,
    parameters, seconds of the timed steps, kept bytes)."""
    data = batches(args.width, args.batch, args.steps, dist.get_rank())
    return train_sharded(args, data), train_ddp(args, data)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stage", type=int, choices=(2, 3), default=2)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--depth", type=int, default=3, help="hidden layers")
    p.add_argument("--batch", type=int, default=16, help="rows per rank and step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.5)
    p.add_argument("--ddp", action="store_true", help="also train with DDP and compare")
    return p.parse_args(argv)


def main():
    args = parse_args()
    dist.init_process_group("rondo")
    rank, size = dist.get_rank(), dist.get_world_size()
    if args.ddp:
        (ls, ps, ts, ks), (ld, pd, td, kd) = compare(args)
    else:
        data = batches(args.width, args.batch, args.steps, rank)
        ls, ps, ts, ks = train_sharded(args, data)
    timed = args.steps - untimed(args.steps)
    if rank == 0:
        print("stage %d, %d ranks, %d steps: loss %.6f -> %.6f, %.1f steps/s, %d bytes kept "
              "per rank" % (args.stage, size, args.steps, ls[0], ls[-1], timed / ts, ks))
        if args.ddp:
            dl = max(abs(a - b) for a, b in zip(ls, ld))
            dp = float((ps - pd).abs().max())
            print("DDP: loss %.6f -> %.6f, %.1f steps/s, %d bytes kept per rank; largest "
                  "difference: loss %.3g, parameter %.3g"
                  % (ld[0], ld[-1], timed / td, kd, dl, dp))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
