"""rondo.torch: Horovod's horovod.torch on rondo.

    import rondo.torch as hvd          # was: import horovod.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

Horovod's API with its names, arguments, defaults and exceptions: the
collectives (blocking, async, grouped, in place, differentiable), process
sets, join, Adasum, DistributedOptimizer, SyncBatchNorm, timelines and the
build queries.
Every collective is a named request to rondo's engine, and an argument one
rank refuses fails the call on every rank instead of leaving them waiting
(ops.py says how). docs/python.md has the migration table: what maps one to
one, what differs, what is left out and why.
"""
import rondo as _r
from rondo import RondoError, _lib

from . import distributed
from . import process_sets as _ps
from .compression import Compression
from .functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                        broadcast_parameters)
from .ops import (Adasum, Average, DtypeError, DuplicateNameError, Handle, HorovodInternalError,
                  Max, Min, Product, Sum, allgather, allgather_async, allreduce, allreduce_,
                  allreduce_async, allreduce_async_, alltoall, alltoall_async, barrier, broadcast,
                  broadcast_, broadcast_async, broadcast_async_, cuda_built, grouped_allgather,
                  grouped_allgather_async, grouped_allreduce, grouped_allreduce_,
                  grouped_allreduce_async, grouped_allreduce_async_, grouped_reducescatter,
                  grouped_reducescatter_async, join, poll, reducescatter, reducescatter_async,
                  sparse_allreduce_async, synchronize)
from .optimizer import DistributedOptimizer
from .process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from .sync_batch_norm import SyncBatchNorm

__all__ = [
    "init", "shutdown", "is_initialized", "size", "rank", "local_rank", "local_size",
    "cross_rank", "cross_size", "is_homogeneous",
    "mpi_built", "mpi_enabled", "mpi_threads_supported", "gloo_built", "gloo_enabled",
    "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built",
    "allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "sparse_allreduce_async",
    "allgather", "allgather_async", "grouped_allgather", "grouped_allgather_async",
    "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "alltoall", "alltoall_async", "reducescatter", "reducescatter_async",
    "grouped_reducescatter", "grouped_reducescatter_async",
    "join", "barrier", "poll", "synchronize", "Handle",
    "broadcast_parameters", "broadcast_optimizer_state", "broadcast_object", "allgather_object",
    "DistributedOptimizer", "Compression", "SyncBatchNorm",
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "start_timeline", "stop_timeline",
    "Average", "Sum", "Adasum", "Min", "Max", "Product",
    "HorovodInternalError", "RondoError", "DtypeError", "DuplicateNameError",
]

_cross = {}  # cross_rank, cross_size: made at init()

distributed._register()  # torch.distributed.init_process_group("rondo")


def init(comm=None, process_sets=None):
    """Initializes rondo (and MPI) on every rank of MPI_COMM_WORLD, then
    registers process_sets (ProcessSet objects or lists of ranks; the same
    on every rank). comm: only None (every rank) is supported."""
    global _initialized
    if comm is not None:
        raise NotImplementedError("rondo.torch.init(comm=...): rondo runs on MPI_COMM_WORLD; "
                                  "use process_sets for subsets of it")
    # rondo itself may be up already (importing rondo.torch under mpiexec
    # starts it, a torch.distributed group does): this module's own state
    # is made once all the same.
    if _initialized and _r.is_initialized():
        return
    _r.init()
    _ps._setup_global()
    nodes = _r.world().allgather_object((_r.local_rank(), _r.local_size()))
    me, mine = _r.rank(), _r.local_rank()
    _cross["size"] = sum(1 for lr, _ in nodes if lr == mine)
    _cross["rank"] = sum(1 for r, (lr, _) in enumerate(nodes) if lr == mine and r < me)
    _cross["homogeneous"] = len({ls for _, ls in nodes}) == 1
    for ps in process_sets or ():
        add_process_set(ps)
    _initialized = True


_initialized = False


def shutdown():
    """Finalizes rondo (and MPI if rondo started it); also run at exit."""
    global _initialized
    _initialized = False
    _ps._forget_all()
    _r.shutdown()


is_initialized = _r.is_initialized
size = _r.size
rank = _r.rank
local_rank = _r.local_rank
local_size = _r.local_size


def cross_rank():
    """This rank's index among the ranks with its local rank (its node's
    index, where every node runs the same number of ranks)."""
    _r.world()
    return _cross["rank"]


def cross_size():
    """The number of ranks with this rank's local rank (the node count on
    a homogeneous job)."""
    _r.world()
    return _cross["size"]


def is_homogeneous():
    """Whether every node runs the same number of ranks."""
    _r.world()
    return _cross["homogeneous"]


def mpi_built():
    return True


def mpi_enabled():
    return True


def mpi_threads_supported():
    return True


def gloo_built():
    return False


def gloo_enabled():
    return False


def ddl_built():
    return False


def ccl_built():
    return False


def rocm_built():
    return False


def nccl_built():
    """The NCCL version rondo was built with, as Horovod reports it
    (NCCL_VERSION_CODE: 2.27.3 is 22703), or 0."""
    return int(_lib.nccl_version())


def start_timeline(file_path, mark_cycles=False):
    """Starts (or moves) the timeline of the world comm's engine at run
    time: a Chrome trace in file_path, written by rank 0; call it on every
    rank. HOROVOD_TIMELINE=DYNAMIC (or RONDO_TIMELINE=DYNAMIC) starts with
    none; any other value starts with that file."""
    if not _r.is_initialized():
        raise ValueError("rondo.torch has not been initialized; use hvd.init()")
    _r.world().timeline_start(file_path, mark_cycles)


def stop_timeline():
    """Stops the timeline and closes its file (a valid JSON array)."""
    if not _r.is_initialized():
        raise ValueError("rondo.torch has not been initialized; use hvd.init()")
    _r.world().timeline_stop()
