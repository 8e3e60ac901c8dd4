"""Data-parallel training of the small Fashion-MNIST CNN with PyTorch's
DistributedDataParallel (DDP) on rondo: a plain DDP script whose only change
is the backend name given to init_process_group.

    RONDO_LIBRARY=build/lib/.libs/librondo.so \
    PYTHONPATH=build/bindings/python:bindings/python \
        mpiexec -n 2 /usr/bin/python3 examples/python/train_ddp.py

mpiexec starts the ranks; rondo takes the rank, the world size and the
rendezvous torch needs from MPI, so no RANK, WORLD_SIZE or MASTER_ADDR is
set. torchrun works too (docs/launching.md):

    /usr/bin/python3 -m torch.distributed.run --redirects 2 --tee 1 \
        --nproc_per_node 2 --max_restarts 3 examples/python/train_ddp.py \
        --checkpoint /tmp/ddp.pt

--checkpoint FILE saves the model and the optimizer at the end of every
epoch and, when FILE exists at start, resumes after its epoch: the same
command line serves every attempt of a restarted job. --backend gloo runs
the same script on gloo (under mpiexec too, with rondo's rendezvous), to
compare. The model and the data (Debian's
dataset-fashion-mnist) are those of train_fashion_mnist.py, which does the
same with rondo's Horovod API.
"""
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import rondo.torch  # noqa: F401 - registers the "rondo" backend
from train_fashion_mnist import Net, check_args, load, make_parser


def parse_args():
    p = make_parser(__doc__)
    p.add_argument("--backend", default="rondo", help="rondo (default) or gloo")
    p.add_argument("--checkpoint", metavar="FILE",
                   help="save after every epoch; resume from FILE when it exists")
    return check_args(p, p.parse_args())


def load_checkpoint(path, model, optimizer):
    """The epoch FILE was saved after (its model and optimizer state
    loaded), or 0 when it does not exist yet. Every rank reads it; a file
    that exists and cannot be read raises."""
    import os
    if path is None or not os.path.exists(path):
        return 0
    state = torch.load(path, map_location="cpu")
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"]


def save_checkpoint(path, epoch, model, optimizer):
    """Rank 0 writes FILE whole or not at all (a temporary file renamed)."""
    import os
    tmp = "%s.tmp.%d" % (path, os.getpid())
    torch.save({"epoch": epoch, "model": model.module.state_dict(),
                "optimizer": optimizer.state_dict()}, tmp)
    os.replace(tmp, path)


def evaluate(model, x, y):
    """Test accuracy over the whole test set: each rank scores its slice and
    the counts are summed with dist.all_reduce."""
    model.eval()
    rank, size = dist.get_rank(), dist.get_world_size()
    with torch.no_grad():
        pred = model(x[rank::size]).argmax(dim=1)
    counts = torch.tensor([(pred == y[rank::size]).sum().item(), pred.numel()],
                          dtype=torch.float64)
    dist.all_reduce(counts)
    correct, total = counts.tolist()
    return correct / total


def main():
    args = parse_args()
    # The one line that picks rondo: everything below is ordinary DDP.
    dist.init_process_group(args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    start = time.time()
    torch.set_num_threads(1)  # one process per rank: one thread each
    torch.manual_seed(args.seed)  # the same initial weights on every rank

    train = TensorDataset(*load(args.data, "train", args.limit))
    test_x, test_y = load(args.data, "t10k")
    # drop_last: every rank runs the same number of steps
    sampler = DistributedSampler(train, seed=args.seed, drop_last=True)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    print("rank %d of %d: %d training images per epoch on %s"
          % (rank, size, len(sampler), dist.get_backend()), flush=True)

    # DDP broadcasts rank 0's weights, then averages the gradients in
    # buckets while backward runs.
    model = DistributedDataParallel(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * size, momentum=args.momentum)

    first = load_checkpoint(args.checkpoint, model, optimizer) + 1
    if first > 1 and rank == 0:
        print("resumed from %s after epoch %d" % (args.checkpoint, first - 1), flush=True)
    accuracy = None
    for epoch in range(first, args.epochs + 1):
        model.train()
        sampler.set_epoch(epoch)
        loss_sum, steps = 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            loss_sum += loss.item()
            steps += 1
        accuracy = evaluate(model, test_x, test_y)
        if rank == 0:
            print("epoch %d: train loss %.4f (rank 0), test accuracy %.4f, %.1f s"
                  % (epoch, loss_sum / max(steps, 1), accuracy, time.time() - start), flush=True)
            if args.checkpoint:
                save_checkpoint(args.checkpoint, epoch, model, optimizer)
        if args.checkpoint:
            dist.barrier()  # the next attempt finds this epoch's file
    if accuracy is None:
        accuracy = evaluate(model, test_x, test_y)

    if rank == 0:
        print("final test accuracy: %.4f (%d ranks, %d epochs, %s, %.1f s)"
              % (accuracy, size, args.epochs, dist.get_backend(), time.time() - start),
              flush=True)
    # The model goes before the group. In torch 1.13 a gloo group that DDP's
    # reducer frees last is destroyed with the GIL held while its threads may
    # need it, and the process hangs at exit (pytorch/pytorch#56297).
    group = dist.group.WORLD
    del model, optimizer
    dist.destroy_process_group()
    del group


if __name__ == "__main__":
    main()
