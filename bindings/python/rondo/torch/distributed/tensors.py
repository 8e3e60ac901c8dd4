"""Tensors for the rondo backend: the checks every call makes before it
submits anything (a refused argument must fail on this rank before the
name goes out), the dtype and op of a reduction, and the host buffers rondo
reads and writes (a staging copy where a tensor is not a contiguous CPU
one, copied back when the call completes)."""
import torch

import rondo as _r
from .._codes import CODES, UINT8

_OPS = {"SUM": "sum", "AVG": "average", "PRODUCT": "product", "MIN": "min", "MAX": "max"}
# a ReduceOp's name -> rondo's op code, for the common all_reduce
_OP_CODES = {name: _r.op_code(rop) for name, rop in _OPS.items()}
# bool tensors: logical reductions on 0/1 bytes
_BOOL_OPS = {"SUM": "max", "MAX": "max", "BOR": "max", "PRODUCT": "min", "MIN": "min",
             "BAND": "min"}

_OP_NAMES = {}  # a ReduceOp's kind -> its name (looking it up costs microseconds)


def _op_name(op):
    """SUM, AVG, ... of a torch ReduceOp (1.13 and 2.x)."""
    kind = getattr(op, "op", op)
    try:
        return _OP_NAMES[kind]
    except (KeyError, TypeError):
        pass
    name = getattr(kind, "name", None)
    if name is None:
        name = str(kind).rsplit(".", 1)[-1]
    name = name.upper()
    try:
        _OP_NAMES[kind] = name
    except TypeError:
        pass  # not hashable: looked up each time
    return name


def _reduction(tensor, op):
    """(dtype code, rondo op) of a reduction of tensor with torch op."""
    name = _op_name(op)
    if tensor.dtype == torch.bool:
        if name not in _BOOL_OPS:
            raise ValueError("rondo: ReduceOp.%s is not defined for bool tensors (SUM, MAX, BOR "
                             "are logical or; PRODUCT, MIN, BAND logical and)" % name)
        return UINT8, _BOOL_OPS[name]
    if tensor.is_complex():
        if name not in ("SUM", "AVG"):
            raise ValueError("rondo: ReduceOp.%s is not defined for complex tensors (SUM and "
                             "AVG are)" % name)
        real = torch.float32 if tensor.dtype == torch.complex64 else torch.float64
        return CODES.get(real), _OPS[name]
    code = CODES.get(tensor.dtype)
    if code is None:
        raise TypeError("rondo: reductions take uint8, int8, int16, int32, int64, float16, "
                        "bfloat16, float32, float64, bool and complex tensors, not %s"
                        % tensor.dtype)
    if name not in _OPS:
        raise ValueError("rondo: ReduceOp.%s is not supported (SUM, AVG, PRODUCT, MIN, MAX; "
                         "BAND, BOR on bool tensors)" % name)
    return code, _OPS[name]


def _numel(t):
    """Elements of a reduction buffer: complex counts twice (real parts)."""
    return t.numel() * (2 if t.is_complex() else 1)


def _check_tensor(t, what):
    if not isinstance(t, torch.Tensor):
        raise TypeError("rondo: %s must be a torch.Tensor, not %s" % (what, type(t).__name__))
    if t.is_sparse:
        raise ValueError("rondo: %s is sparse; torch.distributed's rondo backend takes dense "
                         "tensors" % what)
    if t.device.type not in ("cpu", "cuda"):
        raise TypeError("rondo: %s is on %s; rondo takes CPU and CUDA tensors"
                        % (what, t.device.type))


def _check_whole(whole, whole_name, part, part_name, size, what):
    """whole must hold size parts of part's dtype."""
    if whole.numel() != part.numel() * size or whole.dtype != part.dtype:
        raise ValueError("rondo: %s: the %s must hold %d x the %s's %d elements of %s (it has "
                         "%d of %s)" % (what, whole_name, size, part_name, part.numel(),
                                        part.dtype, whole.numel(), whole.dtype))


def _one(tensors, what):
    if len(tensors) != 1:
        raise ValueError("rondo: %s takes one tensor per call (got %d); multi-device lists are "
                         "not supported" % (what, len(tensors)))
    _check_tensor(tensors[0], what)
    return tensors[0]


def _host(t):
    """A contiguous CPU tensor with t's data (t itself when it is one)."""
    if t.device.type == "cpu" and t.is_contiguous():
        return t
    # (.to("cpu", memory_format=...) returns a CPU tensor itself, strided)
    return t.detach().to("cpu").contiguous()


def _ptr(t):
    return t.data_ptr() if t.numel() > 0 else None


def _nbytes(t):
    return t.numel() * t.element_size()


def _copy_back(dst, src):
    """dst <- src (a staging copy), then, for CUDA, wait for the copy."""
    if dst is src or (dst.device == src.device and dst.data_ptr() == src.data_ptr()
                      and dst.is_contiguous() and dst.numel() == src.numel()
                      and dst.dtype == src.dtype):
        return
    with torch.no_grad():
        dst.copy_(src.view(dst.shape) if src.shape != dst.shape else src)
    if dst.is_cuda:
        torch.cuda.current_stream(dst.device).synchronize()


def _bytes_of(t):
    """A 1-d uint8 CPU tensor holding t's bytes (shares memory when t is a
    contiguous CPU tensor)."""
    h = _host(t)
    if h.numel() == 0:
        return torch.empty(0, dtype=torch.uint8)
    return h.reshape(-1).view(torch.uint8)


def _splits(t, sizes, p, what):
    rows = t.shape[0] if t.dim() else 1
    if not sizes:
        if rows % p:
            raise ValueError("rondo: all_to_all_single: the %s's first dimension (%d) is not a "
                             "multiple of the group size (%d); pass split sizes" % (what, rows, p))
        return [rows // p] * p
    sizes = [int(s) for s in sizes]
    if len(sizes) != p or any(s < 0 for s in sizes) or sum(sizes) != rows:
        raise ValueError("rondo: all_to_all_single: %s_split_sizes %s must be %d non-negative "
                         "row counts adding up to %d" % (what, sizes, p, rows))
    return sizes


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def _shape(t):
    return "%s %s" % (_dtype(t), list(t.shape))


def _tag(what, t):
    """A call's tag: what every rank must pass alike (the engine compares
    it, and a difference quotes both)."""
    return "%s: %s" % (what, _shape(t))

