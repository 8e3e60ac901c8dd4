"""examples/python/train_sharded.py, ZeRO-style training with the public
torch.distributed calls on the "rondo" backend (reduce_scatter_tensor with
AVG from gradient hooks, the optimizer on the shard, all_gather_into_tensor),
against DistributedDataParallel on the same backend, at stage 2 and 3:
  - every step's loss and the final parameters equal DDP's to 1e-6 (bit for
    bit at 1 and 2 ranks, where every average is (a + b) / 2 alike);
  - the loss falls (the example trains: a fixed linear teacher);
  - what a rank keeps between steps: DDP's at stage 2 (the padding aside),
    less at stage 3, from 2 ranks.
"""
import os
import sys

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
import rondo  # noqa: E402
import rondo.torch  # noqa: E402,F401 - registers the backend
import train_sharded  # noqa: E402
from mpitest import check, run  # noqa: E402

torch.set_num_threads(1)
rondo.init()
R, N = rondo.rank(), rondo.size()


def stage(k):
    args = train_sharded.parse_args(["--stage", str(k), "--steps", "50"])
    (ls, ps, _, ks), (ld, pd, _, kd) = train_sharded.compare(args)
    tol = 0.0 if N <= 2 else 1e-6
    worst = max(abs(a - b) for a, b in zip(ls, ld))
    check(len(ls) == len(ld) == 50 and worst <= tol * max(1.0, abs(ld[0])),
          "stage %d: the losses differ from DDP's by %g", k, worst)
    dp = float((ps - pd).abs().max())
    check(ps.shape == pd.shape and dp <= tol, "stage %d: the parameters differ by %g", k, dp)
    check(ls[-1] < 0.2 * ls[0], "stage %d: the loss fell from %g to %g", k, ls[0], ls[-1])
    if N > 1:  # (the flat buffers' padding: fewer than N elements each)
        limit = kd + 4 * 4 * N if k == 2 else kd
        check(ks < limit, "stage %d: %d bytes kept, DDP %d", k, ks, kd)
    # every rank ends with the same parameters
    mine = ps.clone()
    dist.broadcast(mine, 0)
    check(torch.equal(mine, ps), "stage %d: rank 0's parameters differ from this rank's", k)


def test_stage_2():
    stage(2)


def test_stage_3():
    stage(3)


dist.init_process_group("rondo")
run("test_train_sharded", [test_stage_2, test_stage_3])
