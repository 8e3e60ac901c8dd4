"""Registration of the "rondo" backend with torch.distributed, through its
front door: Backend.register_backend with the creator below. Nothing of
torch's is replaced: other backends in the same job behave as if rondo
were not there.

The creator makes the default group on rondo's world comm (formed through
torch's store where no MPI launcher started the job: rendezvous.py) and a
new_group on a rondo comm of its members, made by them alone.
"""
import inspect
import itertools

import torch.distributed as dist

import rondo as _r

from . import rendezvous as _rendezvous
from .backend import BACKEND, ProcessGroupRondo

_world_groups = itertools.count()  # default groups made so far, the same on every rank


def _create(opts, pg_options=None):
    """torch's creator (extended API): the default group on the world comm,
    a new_group on a rondo comm of its members (made by them alone)."""
    rank, size = opts.group_rank, opts.group_size
    ranks = list(getattr(opts, "global_ranks_in_group", []) or [])
    world = _rendezvous.form_world(opts.store, rank, size) if not ranks else _r.world()
    if not ranks:
        if size != world.size:
            raise ValueError("rondo: torch.distributed's world size is %d, but rondo's world "
                             "(MPI_COMM_WORLD) has %d processes: %s"
                             % (size, world.size, _r.launcher()))
        claims = world.allgather_object(rank)
        wrong = [(mpi, r) for mpi, r in enumerate(claims) if mpi != r]
        if wrong:
            raise ValueError("rondo: torch.distributed ranks must be MPI's ranks; %s"
                             % ", ".join("MPI rank %d was given rank %d" % w for w in wrong))
        return ProcessGroupRondo(world, rank, size, opts.timeout, next(_world_groups))
    return ProcessGroupRondo(world.subset(ranks), rank, size, opts.timeout)


def _register():
    """Registers the backend (once) and, under an MPI launcher, fills in
    what torch's env:// needs from MPI (rendezvous.py)."""
    if not hasattr(dist.Backend, BACKEND.upper()):
        kw = {"extended_api": True}
        if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
            kw["devices"] = ["cpu", "cuda"]  # torch 2.x asks which devices it serves
        dist.Backend.register_backend(BACKEND, _create, **kw)
    _rendezvous.fill_env_from_mpi()
