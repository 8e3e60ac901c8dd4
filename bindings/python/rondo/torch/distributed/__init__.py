"""torch.distributed backend "rondo": DDP and every c10d collective on rondo.

    import rondo.torch                       # registers the backend
    torch.distributed.init_process_group("rondo")
    model = torch.nn.parallel.DistributedDataParallel(model)

Under mpiexec nothing else is needed: importing rondo.torch fills in a
missing RANK, WORLD_SIZE, MASTER_ADDR or MASTER_PORT from MPI for torch's
own env:// rendezvous. Under torchrun, torch.multiprocessing.spawn or any
other launcher, the backend forms rondo's world through the store torch
hands it (rendezvous.py, docs/launching.md). A rank or world size that
contradicts MPI's fails on every rank.

The package, by job:
  registration.py  Backend.register_backend, and the creator of groups;
  rendezvous.py    how the processes find each other;
  backend.py       ProcessGroupRondo: the collectives, as engine requests;
  p2p.py           its send and recv;
  tensors.py       the checks and host buffers of the tensors calls take;
  work.py          the Work every call returns, and who waits for it;
  objects.py       object collectives on which every rank fails together
                   (torch's own work too: see that file).
"""
from .backend import BACKEND, ProcessGroupRondo
from .objects import all_gather_object, broadcast_object_list, gather_object, scatter_object_list
from .registration import _create, _register  # noqa: F401 - rondo.torch registers

__all__ = ["BACKEND", "ProcessGroupRondo", "broadcast_object_list", "all_gather_object",
           "gather_object", "scatter_object_list"]
