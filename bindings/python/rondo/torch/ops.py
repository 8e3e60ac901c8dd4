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
"""
import ctypes
import math

import numpy as np
import torch

import rondo as _r
from rondo import RondoError, _lib

from .compression import Compression
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


_CODES = {torch.int8: 0, torch.uint8: 1, torch.int32: 2, torch.int64: 3, torch.float16: 4,
          torch.bfloat16: 5, torch.float32: 6, torch.float64: 7, torch.int16: 8}
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
    code = _CODES.get(t.dtype)
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


# ---- all-reduce --------------------------------------------------------------------------

def _scale_here(t, prescale, postscale):
    """Whether rondo.torch scales in torch instead of rondo: integers (in
    float64, truncated, as Horovod does) and CUDA tensors (rondo scales host
    memory only)."""
    return (prescale != 1.0 or postscale != 1.0) and (not t.is_floating_point() or t.is_cuda)


def _scaled(t, factor):
    if t.is_floating_point():
        return t * factor
    return (t.to(torch.float64) * factor).to(t.dtype)


def _allreduce_parts(comm, tensors, outputs, names, op, prescale, postscale, blocking, group,
                     group_size):
    """Submits the all-reduces of tensors into outputs (CPU, or CUDA with
    the device path); returns a Handle whose result is the outputs."""
    with _submitting(comm, names, blocking, group, group_size):
        op = _valid(op)
        codes = []
        for t, out in zip(tensors, outputs):
            codes.append(_code(t))
            if op == Adasum and not t.is_floating_point():
                raise DtypeError("rondo.torch: op Adasum needs floating tensors, not %s" % t.dtype)
            if out is t:
                _contiguous(t, "the tensor")
        if any(t.is_cuda for t in tensors) and not cuda_built():
            raise DtypeError("rondo.torch: a CUDA tensor, but this rondo was built without "
                             "CUDA (configure --with-cuda): move it to the CPU first")
        parts, post_scale, staged = [], [], []
        # a blocking call of one tensor is waited for at once: its thread
        # runs it (RONDO_ASYNC_WAIT_NOW, docs/engine.md)
        wait_now = _lib.ASYNC_WAIT_NOW if blocking and len(tensors) == 1 else 0
        for t, out, code, nm in zip(tensors, outputs, codes, names):
            here = _scale_here(t, prescale, postscale)
            src = _scaled(t, prescale) if here and prescale != 1.0 else t
            if not src.is_contiguous():
                src = src.contiguous()
            dst = out
            if t.is_cuda and op == Adasum:  # rondo's Adasum runs on host memory
                src = src.cpu()
                dst = torch.empty_like(src)
            elif t.is_cuda:
                # rondo's GPU work runs on its own stream: what torch queued
                # to make this tensor must be done first
                torch.cuda.current_stream(t.device).synchronize()
            parts.append(comm._submit_allreduce(
                src.data_ptr(), dst.data_ptr(), t.numel(), code, op, nm, None,
                1.0 if here else prescale, 1.0 if here else postscale, (t, src, out, dst), group,
                group_size, _shape_tag(t), flags=wait_now))
            post_scale.append(here and postscale != 1.0)
            staged.append(dst if dst is not out else None)

    def post(results):
        for out, scale, host in zip(outputs, post_scale, staged):
            with torch.no_grad():
                if host is not None:
                    out.copy_(host)
                if scale:
                    out.copy_(_scaled(out, postscale))
        return outputs
    return Handle(parts, post)


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


def _allreduce_async(tensor, name, op, prescale, postscale, process_set, inplace, blocking):
    comm = comm_of(process_set)
    nm = comm._name(name, "allreduce")
    with _submitting(comm, [nm], blocking):
        _code(tensor)
    t = tensor.detach()
    out = t if inplace else torch.empty_like(t, memory_format=torch.contiguous_format)
    h = _allreduce_parts(comm, [t], [out], [nm], op, prescale, postscale, blocking, None, 0)
    h._post = _first(h._post, tensor if inplace else None)
    return h


def _first(post, inplace_target):
    def first(results):
        outs = post(results)
        return inplace_target if inplace_target is not None else outs[0]
    return first


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts an all-reduce into a new tensor; synchronize(handle) returns it.
    The default op is Average, as in Horovod."""
    return _allreduce_async(tensor, name, _op(op, average), prescale_factor, postscale_factor,
                            process_set, False, False)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Starts an in-place all-reduce of tensor (contiguous)."""
    return _allreduce_async(tensor, name, _op(op, average), prescale_factor, postscale_factor,
                            process_set, True, False)


class _AllreduceFunction(torch.autograd.Function):
    """The gradient of an all-reduce is the same all-reduce of the gradient."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale, postscale, process_set):
        ctx.args = (op, prescale, postscale, process_set)
        return synchronize(_allreduce_async(tensor, name, op, prescale, postscale, process_set,
                                            False, True))

    @staticmethod
    def backward(ctx, grad):
        op, prescale, postscale, process_set = ctx.args
        return (allreduce(grad, op=op, prescale_factor=prescale, postscale_factor=postscale,
                          process_set=process_set), None, None, None, None, None)


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """The reduction of tensor over the process set, as a new tensor
    (default: the average). Differentiable: backward all-reduces the
    gradient the same way, on every rank."""
    op = _op(op, average)
    return _grouped_call(
        [tensor], compression,
        lambda wire: [_AllreduceFunction.apply(wire[0], name, op, prescale_factor,
                                               postscale_factor, process_set)],
        lambda wire: [synchronize(_allreduce_async(wire[0], name, op, prescale_factor,
                                                   postscale_factor, process_set, False,
                                                   True))])[0]


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """In place: tensor holds the reduction afterwards; returns it."""
    return synchronize(_allreduce_async(tensor, name, _op(op, average), prescale_factor,
                                        postscale_factor, process_set, True, True))


def _grouped_allreduce_async(tensors, name, op, prescale, postscale, process_set, inplace,
                             blocking):
    comm, tensors, base, names = _group(tensors, name, "grouped_allreduce", process_set,
                                        blocking)
    with _submitting(comm, names, blocking, base, len(names)):
        for t in tensors:
            _code(t)
        if len({t.device.type for t in tensors}) > 1:
            raise HorovodInternalError("rondo.torch: a group mixes CPU and GPU tensors")
    ts = [t.detach() for t in tensors]
    outs = ts if inplace else [torch.empty_like(t, memory_format=torch.contiguous_format)
                               for t in ts]
    h = _allreduce_parts(comm, ts, outs, names, op, prescale, postscale, blocking, base,
                         len(names))
    if inplace:
        inner = h._post
        h._post = lambda results: (inner(results), tensors)[1]
    return h


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts all-reduces of the tensors as one group (fused together);
    synchronize(handle) returns the list of new tensors."""
    return _grouped_allreduce_async(tensors, name, _op(op, average), prescale_factor,
                                    postscale_factor, process_set, False, False)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    return _grouped_allreduce_async(tensors, name, _op(op, average), prescale_factor,
                                    postscale_factor, process_set, True, False)


class _GroupedAllreduceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale, postscale, process_set, *tensors):
        ctx.args = (op, prescale, postscale, process_set)
        return tuple(synchronize(_grouped_allreduce_async(tensors, name, op, prescale, postscale,
                                                          process_set, False, True)))

    @staticmethod
    def backward(ctx, *grads):
        op, prescale, postscale, process_set = ctx.args
        return (None, None, None, None, None) + tuple(grouped_allreduce(
            list(grads), op=op, prescale_factor=prescale, postscale_factor=postscale,
            process_set=process_set))


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """All-reduces the tensors as one fused group; a list of new tensors.
    Differentiable."""
    op = _op(op, average)
    return _grouped_call(
        tensors, compression,
        lambda wire: _GroupedAllreduceFunction.apply(name, op, prescale_factor,
                                                     postscale_factor, process_set, *wire),
        lambda wire: synchronize(_grouped_allreduce_async(wire, name, op, prescale_factor,
                                                          postscale_factor, process_set, False,
                                                          True)))


def _grouped_call(tensors, compression, differentiable, plain):
    """A blocking call on a list of tensors (one for the single calls): the
    tensors compressed, then the autograd function where one needs a
    gradient, else the plain call, and the results decompressed."""
    wired = [compression.compress(t) for t in tensors]
    wire = [w for w, _ in wired]
    if any(isinstance(w, torch.Tensor) and w.requires_grad for w in wire) and \
            torch.is_grad_enabled():
        outs = differentiable(wire)
    else:
        outs = plain(wire)
    return [compression.decompress(o, c) for o, (_, c) in zip(outs, wired)]


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return synchronize(_grouped_allreduce_async(tensors, name, _op(op, average), prescale_factor,
                                                postscale_factor, process_set, True, True))


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """A sparse tensor's all-reduce as Horovod does it: its indices and
    values are allgathered (op Average divides the values by the set's
    size). Returns a callable that waits and returns the sparse result,
    whose duplicate indices sum when it is coalesced."""
    if op not in (Sum, Average):
        raise ValueError("rondo.torch: sparse_allreduce_async takes op Sum or Average")
    t = tensor
    indices = allgather_async(t._indices().transpose(0, 1).contiguous(), name="%s.indices" % name,
                              process_set=process_set)
    values = allgather_async(t._values(), name="%s.values" % name, process_set=process_set)
    count = (process_set or global_process_set).size()

    def handle():
        v = synchronize(values)
        i = synchronize(indices)
        if op == Average:
            v = v / count
        return torch.sparse_coo_tensor(i.transpose(0, 1), v, t.size())
    return handle


# ---- allgather ---------------------------------------------------------------------------

def _gathered(rows_shape, dtype, device, zero_rows):
    """finish() of an allgather: the result from rondo's buffer."""
    def finish(address, count):
        if zero_rows:  # rows of no elements travelled as one byte each
            out = torch.empty((count,) + rows_shape, dtype=dtype)
        else:
            n = _row_count_of(rows_shape)
            out = torch.empty((count // n,) + rows_shape, dtype=dtype)
            if count:
                ctypes.memmove(out.data_ptr(), address, out.numel() * out.element_size())
        return out if device.type == "cpu" else out.to(device)
    return finish


def _row_count_of(rows_shape):
    return math.prod(rows_shape) if rows_shape else 1


def _allgather_parts(comm, tensors, names, blocking, group, group_size):
    with _submitting(comm, names, blocking, group, group_size):
        codes = []
        for t in tensors:
            codes.append(_code(t))
            _with_dim(t, "the tensor", "allgather")
        parts = []
        for t, code, nm in zip(tensors, codes, names):
            host = t.detach()
            host = host.cpu() if host.is_cuda else host.contiguous()
            rows, row = host.shape[0], _row_count(host)
            zero_rows = row == 0
            if zero_rows:  # still counts rows: one byte each
                host = torch.zeros(rows, dtype=torch.uint8)
                code, row = _CODES[torch.uint8], 1
            parts.append(comm._submit_allgather(
                host.data_ptr(), rows, row, code, nm, (t, host, None),
                _gathered(tuple(t.shape[1:]), t.dtype, t.device, zero_rows), group, group_size,
                _rows_tag(t), _lib.ASYNC_NO_JOIN))
    return parts


def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts an allgather: every rank's tensor concatenated along dimension
    0 (which may differ across ranks; the other dimensions may not)."""
    comm = comm_of(process_set)
    nm = comm._name(name, "allgather")
    return Handle(_allgather_parts(comm, [tensor], [nm], False, None, 0))


def _allgather_blocking(tensor, name, process_set):
    comm = comm_of(process_set)
    nm = comm._name(name, "allgather")
    return synchronize(Handle(_allgather_parts(comm, [tensor], [nm], True, None, 0)))


class _AllgatherFunction(torch.autograd.Function):
    """Backward: the averaged gradient over the set, this rank's rows of it
    (Horovod's convention)."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.rows = tensor.shape[0]
        ctx.process_set = process_set
        return _allgather_blocking(tensor, name, process_set)

    @staticmethod
    def backward(ctx, grad):
        reduced = allreduce(grad, op=Average, process_set=ctx.process_set)
        rows = allgather(torch.tensor([ctx.rows], dtype=torch.int64),
                         process_set=ctx.process_set)
        me = comm_of(ctx.process_set).rank
        offset = int(rows[:me].sum())
        return reduced.narrow(0, offset, ctx.rows), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's tensor concatenated along dimension 0. Differentiable."""
    if isinstance(tensor, torch.Tensor) and tensor.requires_grad and torch.is_grad_enabled():
        return _AllgatherFunction.apply(tensor, name, process_set)
    return _allgather_blocking(tensor, name, process_set)


def _grouped_allgather(tensors, name, process_set, blocking):
    comm, tensors, base, names = _group(tensors, name, "grouped_allgather", process_set,
                                        blocking)
    return Handle(_allgather_parts(comm, tensors, names, blocking, base, len(names)),
                  post=lambda results: results)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    return _grouped_allgather(tensors, name, process_set, False)


class _GroupedAllgatherFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.rows = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(_grouped_allgather(tensors, name, process_set, True)))

    @staticmethod
    def backward(ctx, *grads):
        reduced = grouped_allreduce(list(grads), op=Average, process_set=ctx.process_set)
        rows = grouped_allgather([torch.tensor([r], dtype=torch.int64) for r in ctx.rows],
                                 process_set=ctx.process_set)
        me = comm_of(ctx.process_set).rank
        return (None, None) + tuple(g.narrow(0, int(r[:me].sum()), n)
                                    for g, r, n in zip(reduced, rows, ctx.rows))


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Allgathers of the tensors as one group; a list of results.
    Differentiable."""
    tensors = list(tensors)
    if any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors) and \
            torch.is_grad_enabled():
        return list(_GroupedAllgatherFunction.apply(name, process_set, *tensors))
    return synchronize(_grouped_allgather(tensors, name, process_set, True))


# ---- broadcast -----------------------------------------------------------------------------

def _broadcast_async(tensor, root_rank, name, process_set, inplace, blocking):
    comm = comm_of(process_set)
    nm = comm._name(name, "broadcast")
    with _submitting(comm, [nm], blocking):
        code = _code(tensor)
        root = _root(comm, process_set, root_rank)
        if inplace:
            _contiguous(tensor, "the tensor")
        t = tensor.detach()
        target = t if inplace else t.clone(memory_format=torch.contiguous_format)
        host = target.cpu() if target.is_cuda else target
        h = comm._submit_broadcast(host.data_ptr(), host.numel(), code, root, nm,
                                   (tensor, target, host), tag=_shape_tag(t),
                                   flags=_lib.ASYNC_NO_JOIN)

    def post(results):
        if host is not target:
            with torch.no_grad():
                target.copy_(host)
        return tensor if inplace else target
    return Handle([h], post)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts a broadcast of root_rank's tensor (a global rank) into a new
    tensor on every rank of the set."""
    return _broadcast_async(tensor, root_rank, name, process_set, False, False)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts an in-place broadcast into tensor (contiguous)."""
    return _broadcast_async(tensor, root_rank, name, process_set, True, False)


class _BroadcastFunction(torch.autograd.Function):
    """Backward: the averaged gradient on the root, zero elsewhere (Horovod's
    convention)."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(_broadcast_async(tensor, root_rank, name, process_set, False, True))

    @staticmethod
    def backward(ctx, grad):
        reduced = allreduce(grad, op=Average, process_set=ctx.process_set)
        if _r.rank() != ctx.root_rank:
            reduced = reduced * 0
        return reduced, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """root_rank's tensor, as a new tensor on every rank. Differentiable."""
    if isinstance(tensor, torch.Tensor) and tensor.requires_grad and torch.is_grad_enabled():
        return _BroadcastFunction.apply(tensor, root_rank, name, process_set)
    return synchronize(_broadcast_async(tensor, root_rank, name, process_set, False, True))


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """In place: tensor becomes root_rank's on every rank; returns it."""
    return synchronize(_broadcast_async(tensor, root_rank, name, process_set, True, True))


# ---- alltoall ---------------------------------------------------------------------------------

def _splits(splits, rows, size):
    """Rows per destination, from Horovod's splits (None: equal)."""
    if splits is None:
        if rows % size:
            raise ValueError("rondo.torch.alltoall: the first dimension (%d) is not a multiple "
                             "of the process set's size (%d); pass splits" % (rows, size))
        return [rows // size] * size
    if isinstance(splits, torch.Tensor):
        if splits.dtype != torch.int32:
            raise ValueError("rondo.torch.alltoall: splits must hold int32 values, not %s"
                             % splits.dtype)
        values = splits.cpu().tolist()
    else:
        values = list(splits)
    if len(values) != size or any(not isinstance(v, int) or v < 0 for v in values):
        raise ValueError("rondo.torch.alltoall: splits must be %d non-negative counts, one per "
                         "rank of the process set; got %s" % (size, values))
    if sum(values) > rows:
        raise ValueError("rondo.torch.alltoall: the splits add up to %d, more than the first "
                         "dimension (%d)" % (sum(values), rows))
    return values


def _alltoall_async(tensor, splits, name, process_set, blocking):
    comm = comm_of(process_set)
    nm = comm._name(name, "alltoall")
    with _submitting(comm, [nm], blocking):
        code = _code(tensor)
        _with_dim(tensor, "the tensor", "alltoall")
        counts = _splits(splits, tensor.shape[0], comm.size)
        host = tensor.detach()
        host = host.cpu() if host.is_cuda else host.contiguous()
        send = np.array(counts, dtype=np.uintp)
        recv = np.zeros(comm.size, dtype=np.uintp)
        rows_shape = tuple(tensor.shape[1:])
        device = tensor.device
        split_device = splits.device if isinstance(splits, torch.Tensor) else torch.device("cpu")

        def finish(address, count):
            total = int(recv.sum())
            out = torch.empty((total,) + rows_shape, dtype=tensor.dtype)
            if count:
                ctypes.memmove(out.data_ptr(), address, out.numel() * out.element_size())
            received = torch.tensor(recv.astype(np.int64), dtype=torch.int32,
                                    device=split_device)
            return (out if device.type == "cpu" else out.to(device)), received
        h = comm._submit_alltoall(host.data_ptr(), send, _row_count(host), code, recv, nm,
                                  (tensor, host, send, recv), finish, _rows_tag(tensor))
    return Handle([h])


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall: splits[i] rows of dimension 0 (default: equal
    blocks) go to rank i of the set. synchronize(handle) returns the rows
    received, in rank order, and the received splits."""
    return _alltoall_async(tensor, splits, name, process_set, False)


class _AlltoallFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        out, received = synchronize(_alltoall_async(tensor, splits, name, process_set, True))
        ctx.received = received
        ctx.process_set = process_set
        ctx.mark_non_differentiable(received)
        return out, received

    @staticmethod
    def backward(ctx, grad, _):
        back, _ = alltoall(grad.contiguous(), splits=ctx.received, process_set=ctx.process_set)
        return back, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """splits[i] rows of dimension 0 (default: equal blocks) go to rank i of
    the set; returns the rows received in rank order, and the received
    splits when splits were given. Differentiable."""
    if isinstance(tensor, torch.Tensor) and tensor.requires_grad and torch.is_grad_enabled():
        out, received = _AlltoallFunction.apply(tensor, splits, name, process_set)
    else:
        out, received = synchronize(_alltoall_async(tensor, splits, name, process_set, True))
    return out if splits is None else (out, received)


# ---- reducescatter -----------------------------------------------------------------------------

def _reducescatter_parts(comm, tensors, names, op, prescale, postscale, blocking, group,
                         group_size):
    with _submitting(comm, names, blocking, group, group_size):
        if op == Adasum:
            raise HorovodInternalError("rondo.torch.reducescatter: op Adasum combines whole "
                                       "tensors and is for allreduce only")
        if op not in _ELEMENTWISE:
            raise ValueError("rondo.torch.reducescatter: op %r is not one of Sum, Average, Min, "
                             "Max, Product" % (op,))
        codes = []
        for t in tensors:
            codes.append(_code(t))
            _with_dim(t, "the tensor", "reducescatter")
        parts, outs, post_scale = [], [], []
        p, me = comm.size, comm.rank
        for t, code, nm in zip(tensors, codes, names):
            here = _scale_here(t, prescale, postscale)
            src = _scaled(t.detach(), prescale) if here and prescale != 1.0 else t.detach()
            src = src.cpu() if src.is_cuda else src.contiguous()
            rows = t.shape[0]
            mine = rows // p + (me < rows % p)
            out = torch.empty((mine,) + tuple(t.shape[1:]), dtype=t.dtype)
            parts.append(comm._submit_reduce_scatter(
                src.data_ptr(), out.data_ptr(), rows, _row_count(t), code, op, nm,
                1.0 if here else prescale, 1.0 if here else postscale, (t, src, out), group,
                group_size, _shape_tag(t)))
            outs.append((out, t.device))
            post_scale.append(here and postscale != 1.0)

    def post(results):
        done = []
        for (out, device), scale in zip(outs, post_scale):
            if scale:
                out = _scaled(out, postscale)
            done.append(out if device.type == "cpu" else out.to(device))
        return done
    return Handle(parts, post)


def _reducescatter_async(tensor, name, op, process_set, prescale, postscale, blocking):
    comm = comm_of(process_set)
    nm = comm._name(name, "reducescatter")
    h = _reducescatter_parts(comm, [tensor], [nm], op, prescale, postscale, blocking, None, 0)
    inner = h._post
    h._post = lambda results: inner(results)[0]
    return h


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    """Starts a reduce-scatter: the reduction of the set's tensors (same
    shape everywhere), dimension 0 split as evenly as possible (the first
    rows %% size ranks get one row more). Default op Average."""
    return _reducescatter_async(tensor, name, op, process_set, prescale_factor, postscale_factor,
                                False)


class _ReducescatterFunction(torch.autograd.Function):
    """Backward: the gradient scaled as the forward scaled, allgathered."""

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale, postscale):
        ctx.args = (op, process_set, prescale, postscale)
        return synchronize(_reducescatter_async(tensor, name, op, process_set, prescale,
                                                postscale, True))

    @staticmethod
    def backward(ctx, grad):
        return (allgather(_scale_grad(grad, *ctx.args), process_set=ctx.args[1]), None, None, None,
                None, None)


def _scale_grad(grad, op, process_set, prescale, postscale):
    factor = prescale * postscale * (comm_of(process_set).size if op == Sum else 1)
    return grad * factor if factor != 1 else grad


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """This rank's rows of the reduction (dimension 0 split as evenly as
    possible over the set). Differentiable."""
    return _grouped_call(
        [tensor], compression,
        lambda wire: [_ReducescatterFunction.apply(wire[0], name, op, process_set,
                                                   prescale_factor, postscale_factor)],
        lambda wire: [synchronize(_reducescatter_async(wire[0], name, op, process_set,
                                                       prescale_factor, postscale_factor,
                                                       True))])[0]


def _grouped_reducescatter(tensors, name, op, process_set, prescale, postscale, blocking):
    comm, tensors, base, names = _group(tensors, name, "grouped_reducescatter", process_set,
                                        blocking)
    return _reducescatter_parts(comm, tensors, names, op, prescale, postscale, blocking, base,
                                len(names))


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    return _grouped_reducescatter(tensors, name, op, process_set, prescale_factor,
                                  postscale_factor, False)


class _GroupedReducescatterFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale, postscale, *tensors):
        ctx.args = (op, process_set, prescale, postscale)
        return tuple(synchronize(_grouped_reducescatter(tensors, name, op, process_set, prescale,
                                                        postscale, True)))

    @staticmethod
    def backward(ctx, *grads):
        scaled = [_scale_grad(g, *ctx.args) for g in grads]
        return (None, None, None, None, None) + tuple(
            grouped_allgather(scaled, process_set=ctx.args[1]))


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """Reduce-scatters of the tensors as one group; a list of results.
    Differentiable."""
    return _grouped_call(
        tensors, compression,
        lambda wire: _GroupedReducescatterFunction.apply(name, op, process_set, prescale_factor,
                                                         postscale_factor, *wire),
        lambda wire: synchronize(_grouped_reducescatter(wire, name, op, process_set,
                                                        prescale_factor, postscale_factor, True)))


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
