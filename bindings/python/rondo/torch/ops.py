"""rondo.torch's collectives: Horovod's horovod.torch.mpi_ops on rondo.

Every collective, blocking or not, is a named request to the engine of the
process set's rondo comm, as in Horovod: it is matched across ranks by
name, runs when every rank has submitted it, and a rank that joined is
served (all-reduce) or makes the request fail everywhere (the others,
RONDO_ERR_JOINED). The blocking calls are the asynchronous ones followed by
synchronize().

No rank is ever left waiting for an argument another rank refused: a rank
whose arguments are wrong (a dtype, a 0-d tensor where Horovod needs a
dimension, splits, a root outside the set, ...) still submits the name, as a
refusal (rondo_refuse_async), and raises its own ValueError or TypeError;
every other rank's request of that name then fails with
HorovodInternalError naming the rank and its reason. Shapes travel as the
request's tag, so a shape that differs on one rank (also with the same
element count) fails on every rank (RONDO_ERR_MISMATCH) as Horovod's does.

The calls live by kind: requests.py (errors, checks, Handle, refusals),
allreduce.py, allgather.py (with broadcast and the sparse all-reduce),
alltoall.py (with reducescatter); join and barrier are here.
"""
import rondo as _r
from rondo import RondoError

from .allgather import (allgather, allgather_async, broadcast, broadcast_, broadcast_async,
                        broadcast_async_, grouped_allgather, grouped_allgather_async,
                        sparse_allreduce_async)
from .allreduce import (allreduce, allreduce_, allreduce_async, allreduce_async_,
                        grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
                        grouped_allreduce_async_)
from .alltoall import (alltoall, alltoall_async, grouped_reducescatter,
                       grouped_reducescatter_async, reducescatter, reducescatter_async)
from .process_sets import comm_of, global_process_set
from .requests import (Adasum, Average, DtypeError, DuplicateNameError, Handle,
                       HorovodInternalError, Max, Min, Product, Sum, _refuse, _root, cuda_built,
                       poll, synchronize)

__all__ = [
    "Adasum", "Average", "DtypeError", "DuplicateNameError", "Handle", "HorovodInternalError",
    "Max", "Min", "Product", "Sum", "_refuse", "_root", "cuda_built", "poll", "synchronize",
    "allgather", "allgather_async", "broadcast", "broadcast_", "broadcast_async",
    "broadcast_async_", "grouped_allgather", "grouped_allgather_async", "sparse_allreduce_async",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_", "grouped_allreduce",
    "grouped_allreduce_", "grouped_allreduce_async", "grouped_allreduce_async_", "alltoall",
    "alltoall_async", "grouped_reducescatter", "grouped_reducescatter_async", "reducescatter",
    "reducescatter_async", "join", "barrier", "comm_of", "global_process_set",
]


# ---- join, barrier ------------------------------------------------------------------------------

def join(device=-1):
    """This rank has no more batches: until every rank has joined it serves
    the others' all-reduces with zeros (so Average divides by the whole
    size); their other collectives fail everywhere (HorovodInternalError,
    RONDO_ERR_JOINED), as in Horovod. Returns the rank that joined last.
    device is accepted for Horovod's signature."""
    try:
        return _r.world().join()
    except RondoError as e:
        raise HorovodInternalError(e) from None


def barrier(process_set=global_process_set):
    """Blocks until every rank of the set has called it."""
    try:
        comm_of(process_set).barrier()
    except RondoError as e:
        raise HorovodInternalError(e) from None
