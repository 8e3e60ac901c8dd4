"""rondo.torch's allgather and broadcast: every rank's rows, in rank order,
or the root's tensor; blocking, async, grouped, differentiable. Also the
sparse all-reduce, which is an allgather of indices and values."""
import ctypes
import math

import torch

import rondo as _r
from rondo import _lib

from ._codes import CODES
from .allreduce import allreduce, grouped_allreduce
from .process_sets import comm_of, global_process_set
from .requests import (Average, _code, _contiguous, _group, Handle, _root, _row_count, _rows_tag,
                       _shape_tag, _submitting, Sum, synchronize, _with_dim)


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
                code, row = CODES[torch.uint8], 1
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
