"""Data-parallel training of a small CNN on Fashion-MNIST with rondo.torch,
written the way a Horovod user would write it (import rondo.torch as hvd).

    RONDO_LIBRARY=build/lib/.libs/librondo.so \
    PYTHONPATH=build/bindings/python:bindings/python \
        mpiexec -n 2 /usr/bin/python3 examples/python/train_fashion_mnist.py

Each rank trains on its own shard of the training set; DistributedOptimizer
averages the gradients across ranks after every backward pass, so all ranks
keep identical weights. The data are the gzipped IDX files of Debian's
dataset-fashion-mnist package (or --data DIR holding the same four files).
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import rondo.torch as hvd

DEBIAN_DATA = "/usr/share/datasets/fashion-mnist"

# The training set's pixel mean and standard deviation (on a 0..1 scale).
MEAN, STD = 0.2860, 0.3530


def make_parser(doc):
    """The flags of both examples (train_ddp.py adds --backend)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.01,
                   help="learning rate for one rank; multiplied by the rank count")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--limit", type=int, default=0,
                   help="use only the first N training images (0: all 60000)")
    p.add_argument("--data", default=DEBIAN_DATA, help="directory of the *-ubyte.gz files")
    p.add_argument("--seed", type=int, default=42)
    return p


def check_args(p, args):
    if args.epochs < 1 or args.batch_size < 1:
        p.error("--epochs and --batch-size must be at least 1")
    return args


def parse_args():
    p = make_parser(__doc__)
    return check_args(p, p.parse_args())


def read_idx(path):
    """A gzipped IDX file as a uint8 NumPy array: a big-endian header (two
    zero bytes, a type byte 0x08 for uint8, the number of dimensions), one
    big-endian int32 per dimension, then the data."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError("%s is not an IDX file of uint8 data" % path)
    ndim = raw[3]
    shape = tuple(np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load(data_dir, kind, limit=0):
    """Images as a float32 tensor (N, 1, 28, 28), normalized; labels as int64 (N,)."""
    images = read_idx(os.path.join(data_dir, "%s-images-idx3-ubyte.gz" % kind))
    labels = read_idx(os.path.join(data_dir, "%s-labels-idx1-ubyte.gz" % kind))
    if limit > 0:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.astype(np.float32) / 255.0).sub_(MEAN).div_(STD)
    return x.unsqueeze(1), torch.from_numpy(labels.astype(np.int64))


class Net(nn.Module):
    """Two 3x3 convolutions with pooling (28x28 -> 14x14 -> 7x7), then two
    linear layers: about 0.2 M parameters, fast enough on one CPU thread."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def shard(n, epoch, seed):
    """This rank's indices into n examples for one epoch. Every rank draws
    the same permutation (same seed) and takes every size()-th element of
    it, so the shards are disjoint. Each shard gets exactly n // size()
    examples: every rank must run the same number of steps, because each
    step's gradient all-reduce waits for all ranks."""
    perm = torch.from_numpy(np.random.default_rng(seed + epoch).permutation(n))
    per_rank = n // hvd.size()
    return perm[hvd.rank():per_rank * hvd.size():hvd.size()]


def evaluate(model, x, y):
    """Test accuracy over the whole test set: each rank scores its slice,
    then the counts of correct answers and of examples are summed over the
    ranks (exact even when the slices differ in size)."""
    model.eval()
    mine = slice(hvd.rank(), None, hvd.size())
    with torch.no_grad():
        pred = model(x[mine]).argmax(dim=1)
    counts = torch.tensor([(pred == y[mine]).sum().item(), pred.numel()], dtype=torch.float64)
    correct, total = hvd.allreduce(counts, op=hvd.Sum, name="test_accuracy").tolist()
    return correct / total


def main():
    args = parse_args()
    hvd.init()
    start = time.time()
    # Every rank is one process; one thread each keeps the ranks from
    # fighting over the cores (the default is a thread per core per rank).
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    # Every rank reads the whole (small) data set and uses its own shard.
    train_x, train_y = load(args.data, "train", args.limit)
    test_x, test_y = load(args.data, "t10k")
    per_rank = len(train_x) // hvd.size()
    print("rank %d of %d: %d training images per epoch" % (hvd.rank(), hvd.size(), per_rank),
          flush=True)

    model = Net()
    # Horovod's convention: the effective batch is size() times larger, so
    # the learning rate grows with it.
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(),
                                momentum=args.momentum)
    # Gradients are averaged across ranks as soon as backward produces them;
    # the names let rondo match each parameter's all-reduce across ranks.
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    # All ranks start from rank 0's weights and optimizer state; from then on
    # the averaged gradients keep them identical.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    for epoch in range(1, args.epochs + 1):
        model.train()
        idx = shard(len(train_x), epoch, args.seed)
        loss_sum, steps = 0.0, 0
        for i in range(0, len(idx), args.batch_size):
            batch = idx[i:i + args.batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(train_x[batch]), train_y[batch])
            loss.backward()
            optimizer.step()  # waits for the averaged gradients, then steps
            loss_sum += loss.item()
            steps += 1
        accuracy = evaluate(model, test_x, test_y)
        if hvd.rank() == 0:
            print("epoch %d: train loss %.4f (rank 0), test accuracy %.4f, %.1f s"
                  % (epoch, loss_sum / max(steps, 1), accuracy, time.time() - start), flush=True)

    if hvd.rank() == 0:
        print("final test accuracy: %.4f (%d ranks, %d epochs, %.1f s)"
              % (accuracy, hvd.size(), args.epochs, time.time() - start), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
