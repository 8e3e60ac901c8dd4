"""rondo.torch's alltoall and reducescatter: each rank's blocks to their
ranks, or the reduction of this rank's block; blocking, async, grouped,
differentiable."""
import ctypes

import numpy as np
import torch

from .allgather import allgather, grouped_allgather
from .allreduce import _grouped_call, _scale_here, _scaled
from .compression import Compression
from .process_sets import comm_of, global_process_set
from .requests import (Adasum, Average, _code, _ELEMENTWISE, _group, Handle, HorovodInternalError,
                       _row_count, _rows_tag, _shape_tag, _submitting, Sum, synchronize, _with_dim)


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
