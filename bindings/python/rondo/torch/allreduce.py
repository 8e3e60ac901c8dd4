"""rondo.torch's all-reduces: blocking, async, in place, grouped,
differentiable, and the sparse one (an allgather of indices and values)."""

import torch

from rondo import _lib

from .compression import Compression
from .process_sets import comm_of, global_process_set
from .requests import (Adasum, _code, _contiguous, cuda_built, DtypeError, _group, Handle,
                       HorovodInternalError, _op, _shape_tag, _submitting, synchronize, _valid)


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
