"""rondo.torch's requests: Horovod's errors and op constants, the argument
checks (each raises the exception Horovod raises for the mistake), the
Handle of a request, and the refusal protocol every collective follows.

No rank is ever left waiting for an argument another rank refused: a rank
whose arguments are wrong still submits the name, as a refusal
(rondo_refuse_async), and raises its own ValueError or TypeError; every
other rank's request of that name then fails with HorovodInternalError
naming the rank and its reason.
"""
import math

import torch

from rondo import RondoError, _lib

from ._codes import CODES
from .process_sets import comm_of, global_process_set


# Horovod's op constants (the values are rondo's op names).
Sum, Average, Min, Max, Product, Adasum = "sum", "average", "min", "max", "product", "adasum"


class HorovodInternalError(RondoError):
    """A collective failed (on every rank that took part): the arguments
    differed across ranks, another rank refused its part, a rank joined,
    the request stalled or the comm shut down. status, message and rank say
    which, as for rondo.RondoError. Also built from a message alone, as
    Horovod's is."""

    def __init__(self, *args):
        if len(args) == 3:
            super().__init__(*args)
        elif args and isinstance(args[0], RondoError):
            e = args[0]
            super().__init__(e.status, e.message, e.rank)
        else:
            text = str(args[0]) if args else ""
            RuntimeError.__init__(self, text)
            self.status, self.message, self.rank = None, text, None


class DtypeError(TypeError, ValueError):
    """A tensor dtype rondo.torch does not take (Horovod raises ValueError,
    rondo TypeError: this is both)."""


class DuplicateNameError(HorovodInternalError, ValueError):
    """A request of this name is still in flight on this rank (Horovod
    raises ValueError here)."""


_OPS = {Sum, Average, Min, Max, Product, Adasum}
_ELEMENTWISE = {Sum, Average, Min, Max, Product}


def cuda_built():
    return bool(_lib.lib.rondo_cuda_built())


# ---- checks: each raises the exception Horovod raises for the mistake ---------------------

def _code(t, what="tensor"):
    """rondo's dtype code of a tensor rondo.torch can take."""
    if not isinstance(t, torch.Tensor):
        raise DtypeError("rondo.torch: %s must be a torch.Tensor, not %s"
                         % (what, type(t).__name__))
    code = CODES.get(t.dtype)
    if code is None:
        raise DtypeError("rondo.torch: %s has dtype %s, which is not supported (uint8, int8, "
                         "int16, int32, int64, float16, bfloat16, float32, float64)"
                         % (what, t.dtype))
    if t.is_sparse:
        raise ValueError("rondo.torch: %s is sparse: use sparse_allreduce_async, or "
                         "tensor.to_dense()" % what)
    if t.device.type not in ("cpu", "cuda"):
        raise DtypeError("rondo.torch: tensors on %s are not supported" % t.device.type)
    return code


def _op(op, average):
    """Horovod's op from op and the deprecated average; a bad one comes back
    as its ValueError, raised by _valid() where the call can still refuse
    (the name is known), so that the other ranks do not wait."""
    if op is not None and average is not None:
        return ValueError("rondo.torch: give op or average, not both")
    if average is not None:
        return Average if average else Sum
    op = Average if op is None else op
    if op not in _OPS:
        return ValueError("rondo.torch: op %r is not one of Sum, Average, Min, Max, Product, "
                          "Adasum" % (op,))
    return op


def _valid(op):
    if isinstance(op, Exception):
        raise op
    return op


def _contiguous(t, what):
    if not t.is_contiguous():
        raise ValueError("rondo.torch: %s must be contiguous for an in-place call "
                         "(tensor.contiguous(), or the out-of-place call)" % what)


def _with_dim(t, what, call):
    if t.dim() == 0:
        raise ValueError("rondo.torch.%s: %s is a scalar (0-d); it needs a first dimension "
                         "(tensor.reshape(1))" % (call, what))


def _shape_tag(t):
    return "shape %s" % (list(t.shape),)


def _rows_tag(t):
    return "shape %s" % (["*"] + list(t.shape[1:]),)


def _row_count(t):
    return math.prod(t.shape[1:]) if t.dim() > 1 else 1


def _root(comm, process_set, root_rank):
    """The comm rank of a global root rank (Horovod's roots are global)."""
    if not isinstance(root_rank, int) or isinstance(root_rank, bool):
        raise ValueError("rondo.torch: root_rank must be an int, not %r" % (root_rank,))
    ranks = (process_set or global_process_set).ranks
    if process_set is None or process_set is global_process_set:
        ranks = range(comm.size)
    if root_rank not in ranks:
        raise ValueError("rondo.torch: root rank %d is not in the process set (ranks %s)"
                         % (root_rank, list(ranks)))
    return list(ranks).index(root_rank)


# ---- handles ---------------------------------------------------------------------------

class Handle:
    """What the *_async calls return; pass it to synchronize() or poll()."""

    __slots__ = ("_parts", "_post", "_result", "_done", "__weakref__")

    def __init__(self, parts, post=None):
        self._parts = parts      # rondo.Handle objects, one per engine request
        self._post = post        # post(results) -> the output
        self._result = None
        self._done = False

    def _poll(self):
        try:
            return all(p.done() for p in self._parts)
        except RondoError as e:
            raise HorovodInternalError(e) from None

    def _wait(self):
        if self._done:
            return self._result
        err, results = None, []
        for p in self._parts:
            if err is not None and not _completed(p):
                # after a failure, a part still in flight may be one the
                # other ranks never submit (a group of another size): it is
                # left to rondo.shutdown(), its tensors kept alive
                p._drop()
                results.append(None)
                continue
            try:
                results.append(p.wait())
            except RondoError as e:
                results.append(None)
                err = err or e
        self._parts = ()
        self._done = True
        if err is not None:
            raise HorovodInternalError(err) from None
        self._result = self._post(results) if self._post else results[0]
        return self._result


def _completed(part):
    try:
        return part.done()
    except RondoError:
        return True


def poll(handle):
    """Whether the request completed (synchronize will not wait)."""
    return handle._poll()


def synchronize(handle):
    """Waits for the request; returns its output (alltoall: the output and
    the received splits). Raises HorovodInternalError if it failed."""
    if handle is None:
        return None
    return handle._wait()


def _refuse(comm, names, err, blocking, group=None, group_size=0):
    """This rank cannot take part: each name becomes a refusal, so that the
    other ranks' requests fail instead of waiting; then err is raised. A
    blocking call waits until every rank saw the refusal."""
    handles = []
    for nm in names:
        try:
            handles.append(comm._submit_refusal(nm, err, group, group_size))
        except RondoError:
            pass  # the engine is gone: nobody waits there either
    for h in handles if blocking else ():
        try:
            h.wait()
        except RondoError:
            pass  # our own reason, which err says better
    if isinstance(err, RondoError) and not isinstance(err, HorovodInternalError):
        err = HorovodInternalError(err)
    raise err


def _submitting(comm, names, blocking, group=None, group_size=0):
    """A context for one submission: a duplicate name raises
    DuplicateNameError (the first request of that name goes on); any other
    failure to submit is refused, so the other ranks do not wait."""
    return _Submission(comm, names, blocking, group, group_size)


class _Submission:
    __slots__ = ("comm", "names", "blocking", "group", "group_size")

    def __init__(self, comm, names, blocking, group, group_size):
        self.comm, self.names, self.blocking = comm, names, blocking
        self.group, self.group_size = group, group_size

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        if err is None or not isinstance(err, (RondoError, ValueError, TypeError)):
            return False
        if isinstance(err, RondoError) and err.status == "RONDO_ERR_DUPLICATE_NAME":
            raise DuplicateNameError(err) from None
        _refuse(self.comm, self.names, err, self.blocking, self.group, self.group_size)


def _group(tensors, name, kind, process_set, blocking):
    """A grouped call's comm, tensors (a list), group name and request names
    (base.0, base.1, ...); no tensor at all is refused like any argument."""
    comm = comm_of(process_set)
    tensors = list(tensors)
    base = comm._name(name, kind).decode()
    names = [("%s.%d" % (base, i)).encode() for i in range(max(len(tensors), 1))]
    with _submitting(comm, names, blocking, base, len(names)):
        if not tensors:
            raise ValueError("rondo.torch: a grouped call needs at least one tensor")
    return comm, tensors, base, names
