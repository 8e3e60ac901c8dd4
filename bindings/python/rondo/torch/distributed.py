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

How a call runs. Every collective of a process group becomes one named
request to the engine of the group's rondo comm (the world comm, or one
made by rondo_comm_subset for new_group). Names come from the group's call
counter (modulo _NAME_SLOTS, so a loop's calls repeat their names and the
engine's response cache agrees on them in one step), so ranks match calls
by their order, as torch requires. The engine fuses concurrent all-reduces
(DDP's buckets, async calls), and checks counts, dtypes, ops, roots and
shapes across ranks. A blocking call from torch.distributed's Python
functions (async_op=False: the caller's frame says so) is submitted with
RONDO_ASYNC_WAIT_NOW and waited for inside the backend's method: the
caller's thread runs the engine's cycle itself (docs/engine.md, "Who runs
the cycles") and torch gets a Work that is already complete. An
async_op=True call returns a Work whose wait() waits for the request on
the caller's thread; a future, when asked for, and every call from C++
(DDP's buckets, comm hooks) is completed by the group's completion
threads, which wait on a rondo completion queue. All of them are the same
requests, only waited for by different threads, so no rank can take
another path than the others (a blocking call on one rank and an
async_op=True call on another match).

Arguments are checked on each rank before anything is submitted. A rank
whose arguments are refused still submits the call's name as a refusal
(rondo_refuse_async) and raises ValueError or TypeError; the other ranks'
call then fails (RuntimeError naming the rank and its reason) instead of
waiting. Mismatches found by the engine (count, dtype, op, root, shape)
fail the call on every rank with RuntimeError.

Point-to-point calls use rondo_isend/rondo_irecv on the group's comm,
started in the order they are made; a short-lived thread waits for each
and completes its future.
"""
import ctypes
import itertools
import math
import os
import pickle
import struct
import sys
import threading
import time
import weakref

import numpy as np
import torch
import torch.distributed as dist

from . import rendezvous as _rendezvous
from torch._C._distributed_c10d import ProcessGroup, ReduceOp, Work, _create_work_from_future
from torch.futures import Future

import rondo as _r
from rondo import RondoError, _lib

BACKEND = "rondo"

# seconds a process group's last completion thread waits with nothing in
# flight before it exits
_LINGER = 1.0
# Request names cycle through this many per group (see _name): a loop of
# 1, 2, 3, 4, 5, 6, 10, 12, ... different calls repeats its names exactly.
_NAME_SLOTS = 60

# rondo's dtype codes of the dtypes reductions take (data movement takes any
# dtype, as bytes).
_CODES = {torch.int8: 0, torch.uint8: 1, torch.int32: 2, torch.int64: 3, torch.float16: 4,
          torch.bfloat16: 5, torch.float32: 6, torch.float64: 7, torch.int16: 8}
_UINT8 = 1
_NAMES = {t: str(t).replace("torch.", "") for t in list(_CODES) + [torch.bool]}

_RED = ReduceOp.RedOpType if hasattr(ReduceOp, "RedOpType") else None
_OPS = {"SUM": "sum", "AVG": "average", "PRODUCT": "product", "MIN": "min", "MAX": "max"}
# id of a ReduceOp constant (ReduceOp.SUM, ...) -> rondo's op code; the
# constants themselves are kept alive by torch's ReduceOp class
_FAST_OPS = {id(getattr(ReduceOp, name)): _r.op_code(rop) for name, rop in _OPS.items()
             if hasattr(ReduceOp, name)}
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
        return _UINT8, _BOOL_OPS[name]
    if tensor.is_complex():
        if name not in ("SUM", "AVG"):
            raise ValueError("rondo: ReduceOp.%s is not defined for complex tensors (SUM and "
                             "AVG are)" % name)
        real = torch.float32 if tensor.dtype == torch.complex64 else torch.float64
        return _CODES.get(real), _OPS[name]
    code = _CODES.get(tensor.dtype)
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


# ---- completion -----------------------------------------------------------------------------

class _Completer:
    """A rondo completion queue and the threads that complete the futures of
    its requests, in the order the requests complete.

    A future's callbacks run on the thread that completes it, and some wait
    for another collective (PowerSGD's hook does): so while requests are in
    flight, one thread is always left waiting on the queue. A thread about
    to complete a future leaves another waiting first (starting one if none
    is idle), and a thread that finds another idle when it is done exits: as
    many threads as callbacks are blocked, plus one. The last thread exits
    after _LINGER seconds with nothing in flight, so an idle or forgotten
    group holds no thread, and back-to-back calls do not pay for a new one.

    Holds no reference to the process group. Closing it (the group was
    destroyed, or the interpreter exits) lets the threads finish the
    requests in flight first: rondo's shutdown fails those that cannot
    complete, and their futures get the error."""

    def __init__(self, label):
        q = ctypes.c_void_p()
        _raise(_lib.queue_create(ctypes.byref(q)))
        self._h = q.value
        self._label = label
        self._lock = threading.Lock()
        self._pending = {}  # request handle -> (rondo.Handle, post, future)
        self._closing = False
        self._idle = 0      # threads waiting on the queue (or about to)
        self._threads = 0

    def _spawn(self):  # under the lock
        self._idle += 1
        self._threads += 1
        threading.Thread(target=self._run, name="rondo-c10d-" + self._label,
                         daemon=True).start()

    def adopt(self, h, post, fut):
        """Completes fut with post(h.wait()) once the request h (a
        rondo.Handle, submitted without a queue) completes."""
        with self._lock:
            if self._closing:
                raise RuntimeError("rondo: this process group was destroyed")
            _raise(_lib.queue_add(self._h, h._req))
            self._pending[h._req] = (h, post, fut)
            if self._idle == 0:
                self._spawn()

    def _exit(self):  # under the lock: this thread leaves the loop
        self._threads -= 1
        if self._threads == 0 and self._closing:
            self._destroy()

    def _destroy(self):  # under the lock, with no thread left on the queue
        q = ctypes.c_void_p(self._h)
        _lib.queue_destroy(ctypes.byref(q))  # fails only if requests are still in flight

    def _run(self):
        req = ctypes.c_void_p()
        while True:
            st = _lib.queue_wait(self._h, _LINGER, ctypes.byref(req))
            with self._lock:
                if st != 0 or (req.value is None and not self._pending):
                    self._idle -= 1  # closed, or nothing in flight for a while
                    self._exit()
                    return
                if req.value is None:
                    continue
                entry = self._pending.pop(req.value, None)
                self._idle -= 1
                if self._idle == 0 and self._pending:
                    self._spawn()  # someone must wait on the queue meanwhile
            if entry is not None:
                h, post, fut = entry
                _settle(fut, lambda: post(h.wait()))  # runs the future's callbacks here
            with self._lock:
                if self._closing and not self._pending:
                    _lib.queue_close(self._h)
                if self._idle >= 1:
                    self._exit()  # another thread waits: this one is surplus
                    return
                self._idle += 1

    def close(self):
        with self._lock:
            if self._closing:
                return
            self._closing = True
            if not self._pending:
                _lib.queue_close(self._h)
            if self._threads == 0:
                self._destroy()


def _finished(h):
    """Whether the rondo.Handle h has completed (or was released)."""
    try:
        return h._req is None or h.done()
    except RondoError:
        return True  # released by a wait meanwhile


def _settle(fut, value):
    """Completes fut with value() or with what it raised."""
    try:
        v = value()
    except BaseException as e:  # noqa: B036 - every failure goes to the future
        fut.set_exception(e if isinstance(e, Exception) else RuntimeError(str(e)))
    else:
        fut.set_result(v)


def _raise(st, rank=-1):
    if st != 0:
        _r._raise_status(st, rank)


# ---- the process group ----------------------------------------------------------------------

_uids = itertools.count()          # local: names the completion threads
_world_groups = itertools.count()  # default groups made so far, the same on every rank


class ProcessGroupRondo(ProcessGroup):
    """A torch ProcessGroup on a rondo comm (see the module's docstring)."""

    def __init__(self, comm, rank, size, timeout, generation=0):
        super().__init__(rank, size)
        self._comm = comm
        self._timeout = timeout
        # The group's timeout is its comm's: a call that waits longer for
        # another rank fails on every rank that waits. Default groups share
        # the world's comm, so the last one made sets it.
        comm.set_timeout(timeout.total_seconds() if timeout is not None else 0)
        uid = next(_uids)
        # request names: unique on the comm and the same on every member (a
        # new_group has a comm of its own; default groups share the world's)
        prefix = "c10d.%d." % generation
        self._names = [(prefix + str(i)).encode() for i in range(_NAME_SLOTS)]
        self._seq = itertools.count()
        self._slots = [None] * _NAME_SLOTS  # the last rondo.Handle of each name
        self._done = _Completer(str(uid))
        # sends whose wait timed out: MPI cannot withdraw them, so each stays
        # open with its buffer until the receive comes (_reap_open_sends)
        self._open_sends = []
        self._open_lock = threading.Lock()
        self._tl = threading.local()  # make_work of the call this thread makes
        weakref.finalize(self, self._done.close)

    # -- torch asks
    def getBackendName(self):
        return BACKEND

    def name(self):
        return BACKEND

    def __repr__(self):
        return "<ProcessGroupRondo rank %d of %d>" % (self._comm.rank, self._comm.size)

    # -- machinery
    def _name(self):
        """The next call's slot and name: its sequence number modulo
        _NAME_SLOTS. A loop of the same call thus repeats names, which the
        engine's response cache agrees on in one step. If the call that last
        had the name is still in flight here (_NAME_SLOTS calls are), this
        waits for it: it came earlier on every rank, so it completes."""
        slot = next(self._seq) % _NAME_SLOTS
        last = self._slots[slot]
        if last is not None:
            self._slots[slot] = None
            nap = 20e-6
            while not _finished(last):
                time.sleep(nap)
                nap = min(2 * nap, 1e-3)
        return slot, self._names[slot]

    def _run(self, name, submit, post):
        """One call: submit(name) -> rondo.Handle; post(result)
        -> the future's value. Returns the Work:
          - a blocking call from torch's Python functions (async_op=False)
            is waited for here, on the caller's thread, and gets a Work
            that is already complete (_DONE);
          - an async_op=True call from them gets one that the caller's
            wait() completes on its own thread (the completion threads only
            when a future is asked for);
          - a call from C++ (DDP) gets one made from a future that the
            completion threads complete.
        All three are the same engine request: only who waits differs."""
        make_work = self._tl.make_work
        h = submit(name, _lib.ASYNC_WAIT_NOW if make_work is _INLINE else 0)
        self._tl.submitted = True  # errors from here on are the call's, not refusals
        if make_work is _INLINE:
            post(h.wait())
            return _DONE
        self._slots[self._tl.slot] = h
        done = self._done
        if make_work is _PyWork:
            return _PyWork(lambda: post(h.wait()), lambda fut: done.adopt(h, post, fut))
        fut = Future()
        done.adopt(h, post, fut)
        return _create_work_from_future(fut)

    def _refuse(self, slot, name, err):
        """This rank refuses the call `name`: the others' fail; err is raised."""
        try:
            h = self._slots[slot] = self._comm._submit_refusal(name, err)
            self._done.adopt(h, lambda _: None, Future())
        except RondoError:
            pass  # the engine is gone: nobody waits there either
        raise err

    def _call(self, prepare, make_work=None):
        """Runs prepare(name) -> Work; an argument error it raises is refused
        (every rank fails instead of waiting) and raised here. Called by the
        public methods only (the caller's frame is two up), which may pass
        make_work themselves."""
        self._tl.make_work = make_work or _work_maker(_caller(2))
        slot, name = self._name()
        self._tl.slot = slot
        self._tl.submitted = False
        try:
            return prepare(name)
        except (ValueError, TypeError, RondoError) as err:
            if self._tl.submitted:
                raise  # the call itself failed (on every rank)
            self._refuse(slot, name, err)

    # -- all-reduce
    def allreduce(self, tensors, opts=None):
        frame = _caller(1)
        if frame is None or frame.f_globals.get("__name__") != _TORCH_API:
            make_work = _create_work_from_future  # a C++ caller (DDP)
        else:
            loc = frame.f_locals
            make_work = _INLINE if loc.get("async_op") is False else _PyWork
            # The common blocking call: dist.all_reduce of a contiguous CPU
            # tensor of a reducible dtype with one of ReduceOp's constants
            # (read from the caller, which put it into opts: opts.reduceOp
            # and its name cost microseconds). The same request as the
            # general path's, submitted and waited for here without its
            # closures and wrappers, which cost more than the call itself.
            t = tensors[0] if len(tensors) == 1 else None
            opc = _FAST_OPS.get(id(loc.get("op")))
            code = _CODES.get(getattr(t, "dtype", None))
            if (make_work is _INLINE and opc is not None and code is not None and t.is_cpu
                    and t.is_contiguous() and not t.is_sparse):
                slot, name = self._name()
                n = t.numel()
                p = t.data_ptr() if n > 0 else None
                o, address = _blocking_opts(t)
                if _engine_allreduce is not None:
                    st = _engine_allreduce(self._comm._h, name, p, n, code, opc, address)
                else:
                    req = ctypes.c_void_p()
                    st = _lib.allreduce_async(self._comm._h, name, p, p, n, code, opc,
                                              ctypes.byref(o), ctypes.byref(req))
                    st = -st if st != 0 else _lib.wait(ctypes.byref(req))
                if st < 0:  # not submitted: this rank refuses the name
                    try:
                        _raise(-st, self._comm.rank)
                    except RondoError as err:
                        self._refuse(slot, name, err)
                _raise(st, self._comm.rank)
                return _DONE
        op = opts.reduceOp if opts is not None else ReduceOp.SUM

        def prepare(name):
            t = _one(tensors, "all_reduce")
            code, rop = _reduction(t, op)
            return self._allreduce(name, t, code, rop, [t], what="all_reduce")
        return self._call(prepare, make_work)

    def _allreduce(self, name, t, code, rop, value, dst=None, what="all_reduce"):
        """All-reduce of t into dst (t itself by default), in place where t
        is a contiguous CPU tensor (or a CUDA one with rondo's device path)."""
        dst = t if dst is None else dst
        real = torch.view_as_real(t) if t.is_complex() else t
        device = t.is_cuda and _lib.lib.rondo_cuda_built() and rop != "adasum"
        if device and real.is_contiguous() and dst is t:
            torch.cuda.current_stream(t.device).synchronize()
            buf = real
        else:
            buf = _host(real)
            if buf is real and dst is not t:
                buf = real.clone()  # t is the input: the result goes elsewhere
        n = _numel(t)

        def submit(nm, flags):
            return self._comm._submit_allreduce(_ptr(buf), _ptr(buf), n, code, rop, nm, None,
                                                1.0, 1.0, (t, buf, dst), tag=_tag(what, t),
                                                flags=flags)

        def post(_):
            out = torch.view_as_real(dst) if dst.is_complex() else dst
            _copy_back(out, buf)
            return value
        return self._run(name, submit, post)

    def allreduce_coalesced(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM

        def prepare(name):
            ts = list(tensors)
            if not ts:
                raise ValueError("rondo: all_reduce_coalesced needs at least one tensor")
            for t in ts:
                _check_tensor(t, "all_reduce_coalesced tensor")
            if len({(t.dtype, t.device) for t in ts}) != 1:
                raise ValueError("rondo: all_reduce_coalesced tensors must share dtype and device")
            code, rop = _reduction(ts[0], op)
            flat = torch.cat([_host(torch.view_as_real(t) if t.is_complex() else t).reshape(-1)
                              for t in ts])

            def submit(nm, flags):
                return self._comm._submit_allreduce(
                    _ptr(flat), _ptr(flat), flat.numel(), code, rop, nm, None, 1.0, 1.0,
                    (ts, flat), tag="all_reduce_coalesced: %s"
                    % [_shape(t) for t in ts], flags=flags)

            def post(_):
                at = 0
                for t in ts:
                    out = torch.view_as_real(t) if t.is_complex() else t
                    k = out.numel()
                    _copy_back(out, flat[at:at + k].view(out.shape))
                    at += k
                return ts
            return self._run(name, submit, post)
        return self._call(prepare)

    # -- reduce: an all-reduce whose result only the root keeps
    def reduce(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        root = opts.rootRank if opts is not None else 0

        def prepare(name):
            t = _one(tensors, "reduce")
            self._check_root(root)
            code, rop = _reduction(t, op)
            if self._comm.rank == root:
                return self._allreduce(name, t, code, rop, [t], what="reduce")
            scratch = torch.empty_like(t, memory_format=torch.contiguous_format)
            return self._allreduce(name, t, code, rop, [t], dst=scratch, what="reduce")
        return self._call(prepare)

    def _root_list(self, lists, root, what, kind):
        """The root's list of size tensors (gather's outputs, scatter's
        inputs), checked; None on the other ranks, which must pass none."""
        if self._comm.rank == root:
            if len(lists) != 1 or len(lists[0]) != self._comm.size:
                raise ValueError("rondo: %s needs one list of %d tensors on the root"
                                 % (what, self._comm.size))
            for t in lists[0]:
                _check_tensor(t, "%s %s" % (what, kind))
            return lists[0]
        if lists and any(len(x) for x in lists):
            raise ValueError("rondo: %s takes %s tensors on the root only" % (what, kind))
        return None

    def _check_root(self, root):
        if not isinstance(root, int) or not 0 <= root < self._comm.size:
            raise ValueError("rondo: root rank %r is not a rank of this group (0..%d)"
                             % (root, self._comm.size - 1))

    # -- broadcast
    def broadcast(self, tensors, opts=None):
        root = opts.rootRank if opts is not None else 0

        def prepare(name):
            t = _one(tensors, "broadcast")
            self._check_root(root)
            buf = _bytes_of(t)

            def submit(nm, flags):
                return self._comm._submit_broadcast(_ptr(buf), buf.numel(), _UINT8, root, nm,
                                                    (t, buf), tag=_tag("broadcast", t),
                                                    flags=flags)

            def post(_):
                if self._comm.rank != root and buf.data_ptr() != t.data_ptr():
                    _copy_back(t, buf.view(t.dtype).view(t.shape) if t.numel() else buf)
                return [t]
            return self._run(name, submit, post)
        return self._call(prepare)

    # -- all-gather, gather
    def _gather_bytes(self, name, t, place, what):
        """All-gather of t's bytes (ranks may contribute different sizes);
        place(list of per-rank uint8 tensors) -> the future's value."""
        buf = _bytes_of(t)

        def finish(addr, total):
            whole = torch.empty(int(total), dtype=torch.uint8)
            if total:
                ctypes.memmove(whole.data_ptr(), addr, int(total))
            return whole

        def submit(nm, flags):
            return self._comm._submit_allgather(_ptr(buf), buf.numel(), 1, _UINT8, nm, (t, buf),
                                                finish, tag="%s: %s" % (what, _dtype(t)),
                                                flags=flags)

        def post(whole):
            return place(whole)
        return self._run(name, submit, post)

    def allgather(self, output_tensor_lists, input_tensors, opts=None):
        def prepare(name):
            t = _one(input_tensors, "all_gather")
            if len(output_tensor_lists) != 1 or len(output_tensor_lists[0]) != self._comm.size:
                raise ValueError("rondo: all_gather needs one list of %d output tensors"
                                 % self._comm.size)
            outs = output_tensor_lists[0]
            for o in outs:
                _check_tensor(o, "all_gather output")
                if o.dtype != t.dtype:
                    raise TypeError("rondo: all_gather output dtype %s differs from the input's "
                                    "%s" % (o.dtype, t.dtype))
            return self._gather_bytes(name, t, lambda whole: self._scatter_into(
                whole, outs, "all_gather") or output_tensor_lists, "all_gather")
        return self._call(prepare)

    def _scatter_into(self, whole, outs, what):
        """Splits gathered bytes into outs, one per rank, each as large as
        its tensor; the total must match."""
        want = sum(_nbytes(o) for o in outs)
        if whole.numel() != want:
            raise RondoError("RONDO_ERR_MISMATCH",
                             "rondo: %s: the ranks sent %d bytes in all, the output tensors hold "
                             "%d: an input size differs from its output tensor's"
                             % (what, whole.numel(), want), self._comm.rank)
        at = 0
        for o in outs:
            k = _nbytes(o)
            if k:
                _copy_back(o, whole[at:at + k].view(o.dtype).view(o.shape))
            at += k
        return None

    def _allgather_base(self, output, input, opts=None):
        def prepare(name):
            _check_tensor(input, "_allgather_base input")
            _check_tensor(output, "_allgather_base output")
            _check_whole(output, "output", input, "input", self._comm.size,
                         "all_gather_into_tensor")
            return self._gather_bytes(name, input, lambda whole: self._scatter_into(
                whole, [output], "all_gather_into_tensor") or output, "all_gather_into_tensor")
        return self._call(prepare)

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        def prepare(name):
            ins = list(input_list)
            for t in ins:
                _check_tensor(t, "all_gather_coalesced input")
            if len(output_lists) != self._comm.size:
                raise ValueError("rondo: all_gather_coalesced needs %d output lists"
                                 % self._comm.size)
            flat = torch.cat([_bytes_of(t) for t in ins]) if ins else torch.empty(
                0, dtype=torch.uint8)
            outs = [o for lst in output_lists for o in lst]
            return self._gather_bytes(name, flat, lambda whole: self._scatter_into(
                whole, outs, "all_gather_coalesced") or output_lists, "all_gather_coalesced")
        return self._call(prepare)

    def gather(self, output_tensors, input_tensors, opts=None):
        root = opts.rootRank if opts is not None else 0

        def prepare(name):
            t = _one(input_tensors, "gather")
            self._check_root(root)
            outs = self._root_list(output_tensors, root, "gather", "output")

            def place(whole):
                if outs is not None:
                    self._scatter_into(whole, outs, "gather")
                return output_tensors
            return self._gather_bytes(name, t, place, "gather")
        return self._call(prepare)

    # -- scatter: the root's tensors, one to each rank (an all-to-all in which
    # only the root sends)
    def scatter(self, output_tensors, input_tensors, opts=None):
        root = opts.rootRank if opts is not None else 0

        def prepare(name):
            out = _one(output_tensors, "scatter")
            self._check_root(root)
            ins = self._root_list(input_tensors, root, "scatter", "input")
            if ins is not None:
                for t in ins:
                    if t.dtype != out.dtype:
                        raise TypeError("rondo: scatter input dtype %s differs from the output's "
                                        "%s" % (t.dtype, out.dtype))
                parts = [_bytes_of(t) for t in ins]
                send = torch.cat(parts) if parts else torch.empty(0, dtype=torch.uint8)
                counts = [x.numel() for x in parts]
            else:
                send = torch.empty(0, dtype=torch.uint8)
                counts = [0] * self._comm.size
            return self._alltoall_bytes(name, send, counts, "scatter: " + _dtype(out),
                                        lambda whole, got:
                                        self._scatter_into(whole, [out], "scatter") or [out])
        return self._call(prepare)

    # -- reduce-scatter
    def _reduce_scatter(self, name, flat, out, op, what):
        code, rop = _reduction(out, op)
        p = self._comm.size
        src = _host(torch.view_as_real(flat) if flat.is_complex() else flat)
        dst = _host(torch.view_as_real(out) if out.is_complex() else out)
        lo, hi = src.data_ptr(), src.data_ptr() + _nbytes(src)
        if dst.numel() and lo < dst.data_ptr() + _nbytes(dst) and dst.data_ptr() < hi:
            dst = torch.empty_like(dst)  # the output lies in the input (in place)
        row = _numel(out)

        def submit(nm, flags):
            return self._comm._submit_reduce_scatter(_ptr(src), _ptr(dst), p, row, code, rop, nm,
                                                     1.0, 1.0, (flat, src, out, dst),
                                                     tag=_tag(what, out), flags=flags)

        def post(_):
            _copy_back(torch.view_as_real(out) if out.is_complex() else out, dst)
            return [out]
        return self._run(name, submit, post)

    def reduce_scatter(self, output_tensors, input_tensor_lists, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM

        def prepare(name):
            out = _one(output_tensors, "reduce_scatter")
            p = self._comm.size
            if len(input_tensor_lists) != 1 or len(input_tensor_lists[0]) != p:
                raise ValueError("rondo: reduce_scatter needs one list of %d input tensors" % p)
            ins = input_tensor_lists[0]
            for t in ins:
                _check_tensor(t, "reduce_scatter input")
                if t.numel() != out.numel() or t.dtype != out.dtype:
                    raise ValueError("rondo: reduce_scatter inputs must each match the output "
                                     "(%d x %s); one has %d x %s"
                                     % (out.numel(), out.dtype, t.numel(), t.dtype))
            _reduction(out, op)
            flat = torch.cat([_host(t).reshape(-1) for t in ins])
            return self._reduce_scatter(name, flat, out, op, "reduce_scatter")
        return self._call(prepare)

    def _reduce_scatter_base(self, output, input, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM

        def prepare(name):
            _check_tensor(output, "reduce_scatter_tensor output")
            _check_tensor(input, "reduce_scatter_tensor input")
            _check_whole(input, "input", output, "output", self._comm.size,
                         "reduce_scatter_tensor")
            _reduction(output, op)
            return self._reduce_scatter(name, input.reshape(-1), output, op,
                                        "reduce_scatter_tensor")
        return self._call(prepare)

    # -- all-to-all
    def _alltoall_bytes(self, name, send, counts, tag, place):
        """send: uint8 bytes, counts[i] of them for rank i; place(whole,
        recvcounts) -> the future's value."""
        p = self._comm.size
        sendcounts = np.asarray(counts, dtype=np.uintp)
        recvcounts = np.zeros(p, dtype=np.uintp)

        def finish(addr, total):
            whole = torch.empty(int(total), dtype=torch.uint8)
            if total:
                ctypes.memmove(whole.data_ptr(), addr, int(total))
            return whole

        def submit(nm, flags):
            return self._comm._submit_alltoall(_ptr(send), sendcounts, 1, _UINT8, recvcounts, nm,
                                               (send, sendcounts, recvcounts), finish, tag=tag,
                                               flags=flags)

        def post(whole):
            return place(whole, [int(c) for c in recvcounts])
        return self._run(name, submit, post)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        def prepare(name):
            _check_tensor(output, "all_to_all_single output")
            _check_tensor(input, "all_to_all_single input")
            if output.dtype != input.dtype:
                raise TypeError("rondo: all_to_all_single output dtype %s differs from the "
                                "input's %s" % (output.dtype, input.dtype))
            p = self._comm.size
            if input.dim() == 0 or output.dim() == 0 or input.shape[1:] != output.shape[1:]:
                raise ValueError("rondo: all_to_all_single: input %s and output %s need a first "
                                 "dimension and the same others"
                                 % (list(input.shape), list(output.shape)))
            ins = _splits(input, input_split_sizes, p, "input")
            outs = _splits(output, output_split_sizes, p, "output")
            row = math.prod(input.shape[1:]) * input.element_size()
            send = _bytes_of(input)

            def place(whole, got):
                want = [n * row for n in outs]
                if got != want:
                    raise RondoError("RONDO_ERR_MISMATCH",
                                     "rondo: all_to_all_single: received %s bytes from the ranks, "
                                     "output_split_sizes %s make %s" % (got, outs, want),
                                     self._comm.rank)
                self._scatter_into(whole, [output], "all_to_all_single")
                return [output]
            return self._alltoall_bytes(name, send, [n * row for n in ins],
                                        "all_to_all_single: %s rows of %s"
                                        % (_dtype(input), list(input.shape[1:])),
                                        place)
        return self._call(prepare)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        def prepare(name):
            p = self._comm.size
            if len(output_tensors) != p or len(input_tensors) != p:
                raise ValueError("rondo: all_to_all needs %d input and %d output tensors" % (p, p))
            for t in list(input_tensors) + list(output_tensors):
                _check_tensor(t, "all_to_all tensor")
            dtypes = {t.dtype for t in list(input_tensors) + list(output_tensors)}
            if len(dtypes) != 1:
                raise TypeError("rondo: all_to_all tensors must share one dtype (got %s)"
                                % sorted(str(d) for d in dtypes))
            parts = [_bytes_of(t) for t in input_tensors]
            send = torch.cat(parts)

            def place(whole, got):
                want = [_nbytes(o) for o in output_tensors]
                if got != want:
                    raise RondoError("RONDO_ERR_MISMATCH",
                                     "rondo: all_to_all: received %s bytes from the ranks, the "
                                     "output tensors hold %s" % (got, want), self._comm.rank)
                self._scatter_into(whole, list(output_tensors), "all_to_all")
                return list(output_tensors)
            return self._alltoall_bytes(name, send, [x.numel() for x in parts],
                                        "all_to_all: " + _dtype(input_tensors[0]), place)
        return self._call(prepare)

    # -- barrier: an all-reduce of one byte through the engine, in order
    # with the other calls
    def barrier(self, opts=None):
        def prepare(name):
            one = torch.zeros(1, dtype=torch.uint8)
            return self._allreduce(name, one, _UINT8, "max", [], what="barrier")
        return self._call(prepare)

    # -- point-to-point
    def send(self, tensors, dst, tag):
        t = _one(tensors, "send")
        return self._p2p(t, dst, tag, True, _work_maker(_caller(1)))

    def recv(self, tensors, src, tag):
        t = _one(tensors, "recv")
        return self._p2p(t, src, tag, False, _work_maker(_caller(1)))

    def recv_anysource(self, tensors, tag):
        t = _one(tensors, "recv")
        return self._p2p(t, _lib.ANY_SOURCE, tag, False, _PyWork)

    def _reap_open_sends(self):
        """Frees the timed-out sends that completed since."""
        with self._open_lock:
            left = []
            for req, buf in self._open_sends:
                done = ctypes.c_int(0)
                if _lib.p2p_test(req, ctypes.byref(done)) == 0 and done.value:
                    _lib.p2p_wait(ctypes.byref(req), None)
                else:
                    left.append((req, buf))
            self._open_sends = left

    def _p2p(self, t, peer, tag, send, make_work):
        if not isinstance(tag, int) or not 0 <= tag <= _lib.TAG_MAX:
            raise ValueError("rondo: tag %r is outside 0..%d" % (tag, _lib.TAG_MAX))
        if self._open_sends:
            self._reap_open_sends()
        # counts in elements where rondo knows the dtype (a mismatch then
        # names elements), else in bytes
        code = _CODES.get(t.dtype)
        if code is None:
            code, buf = _UINT8, _bytes_of(t) if send else torch.empty(_nbytes(t),
                                                                     dtype=torch.uint8)
        else:
            buf = _host(t) if send else (t if t.device.type == "cpu" and t.is_contiguous()
                                         else torch.empty(t.shape, dtype=t.dtype))
        req = ctypes.c_void_p()
        fn = _lib.isend if send else _lib.irecv
        _raise(fn(self._comm._h, _ptr(buf), buf.numel(), code, int(peer), int(tag),
                  ctypes.byref(req)), self._comm.rank)
        source = [-1]

        def finish():
            r, src = ctypes.c_void_p(req.value), ctypes.c_int(-1)
            st = _lib.p2p_wait(ctypes.byref(r), ctypes.byref(src))
            if st != 0 and r.value:  # a send past the group's timeout stays open
                with self._open_lock:
                    self._open_sends.append((r, buf))
            _raise(st, self._comm.rank)
            source[0] = src.value
            if not send and buf is not t:
                _copy_back(t, buf.view(t.dtype).view(t.shape) if t.numel() else buf)
            return [t]

        def adopt(fut):  # a thread completes the future
            threading.Thread(target=_settle, args=(fut, finish), name="rondo-p2p",
                             daemon=True).start()
        if make_work is _PyWork:
            return _PyWork(finish, adopt, source)
        fut = Future()
        adopt(fut)
        return _create_work_from_future(fut)

    # batch_isend_irecv brackets its calls with these (NCCL groups them)
    def _start_coalescing(self, *args):
        return None

    def _end_coalescing(self, *args):
        return None


class _PyWork(Work):
    """The Work returned to torch.distributed's Python functions. Its wait()
    raises the call's error (a Work made by _create_work_from_future waits
    without raising, and dist.all_reduce would return as if it succeeded),
    and completes the call on the caller's thread: a blocking call costs no
    thread switch. Only when a future is asked for (get_future()), or the
    Work is dropped before anyone waited, does adopt(future) hand the call
    to a thread that completes the future.

    Called from Python only, so the Python object lives as long as the
    caller holds it (a C++ caller, such as DDP, gets a Work made from the
    future: pybind11 would drop a Python subclass's methods as soon as
    Python lets go of it)."""

    _OPEN, _WAITED, _ADOPTED = 0, 1, 2

    def __init__(self, finish, adopt, source=None):
        super().__init__()
        self._finish = finish  # () -> the future's value, blocking
        self._adopt = adopt    # (future) -> None
        self._fut = Future()
        self._lock = threading.Lock()
        self._state = self._OPEN
        self._source = source  # [rank] that finish() fills (recv), or None

    def _take(self, state):
        """Moves an open Work to state; whether this caller did."""
        with self._lock:
            if self._state != self._OPEN:
                return False
            self._state = state
            return True

    def wait(self, timeout=None):
        if self._take(self._WAITED):
            _settle(self._fut, self._finish)
        self._fut.wait()  # raises the call's error
        return True

    def get_future(self):
        if self._take(self._ADOPTED):
            self._adopt(self._fut)
        return self._fut

    def __del__(self):
        if getattr(self, "_state", None) == self._OPEN:
            self.get_future()  # results still reach the tensors, as on gloo

    def is_completed(self):
        return self.get_future().done()

    def is_success(self):
        if not self.is_completed():
            return False
        try:
            self._fut.value()
        except Exception:  # noqa: BLE001 - failed
            return False
        return True

    def exception(self):
        if not self.is_completed():
            return None
        try:
            self._fut.value()
        except Exception as e:  # noqa: BLE001 - what failed is the answer
            return e
        return None

    def result(self):
        self.wait()
        return self._fut.value()

    def _source_rank(self):
        self.wait()
        return self._source[0] if self._source is not None else -1

    source_rank = _source_rank


_TORCH_API = "torch.distributed.distributed_c10d"


def _caller(depth):
    """The frame depth levels above the caller (sys._getframe(depth + 1)),
    or None: a call from C++ on a thread without Python frames (DDP's
    hooks on autograd's device threads, for CUDA tensors) has no caller."""
    try:
        return sys._getframe(depth + 1)
    except ValueError:
        return None


def _work_maker(frame):
    """How a call made from frame is completed (see ProcessGroupRondo._run):
    _INLINE for a blocking call from torch.distributed's Python functions
    (async_op=False), _PyWork for their other calls, a Work made from the
    future for anything else (C++ callers, frame None among them)."""
    if frame is None or frame.f_globals.get("__name__") != _TORCH_API:
        return _create_work_from_future
    return _INLINE if frame.f_locals.get("async_op") is False else _PyWork


class _DoneWork(Work):
    """What a blocking call gets back: the call completed (or raised)
    before the backend returned."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def exception(self):
        return None


_INLINE = object()  # _work_maker's answer for a blocking call
_DONE = _DoneWork()


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


_BLOCKING_OPTS = {}  # (dtype, shape) -> the options of a blocking all_reduce
# rondo._fast's submit-and-wait (_fast.c), where it was built for this Python
_engine_allreduce = getattr(_r._fast, "engine_allreduce", None)


def _blocking_opts(t):
    """The options of a blocking dist.all_reduce of t, and their address:
    its tag (made once per dtype and shape) and RONDO_ASYNC_WAIT_NOW."""
    key = (t.dtype, t.shape)
    o = _BLOCKING_OPTS.get(key)
    if o is None:
        if len(_BLOCKING_OPTS) > 1024:
            _BLOCKING_OPTS.clear()
        opts = _r.Comm._opts(tag=_tag("all_reduce", t), flags=_lib.ASYNC_WAIT_NOW)
        o = _BLOCKING_OPTS[key] = (opts, ctypes.addressof(opts))
    return o


def _tag(what, t):
    """A call's tag: what every rank must pass alike (the engine compares
    it, and a difference quotes both)."""
    return "%s: %s" % (what, _shape(t))


# ---- creation -------------------------------------------------------------------------------

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


# ---- object collectives: every rank first learns whether the pickling worked ------------------

def _rondo_group(group):
    """The ProcessGroupRondo behind group (None: the default group), or None."""
    c10d = dist.distributed_c10d
    try:
        pg = group if group is not None else c10d._get_default_group()
    except (RuntimeError, ValueError):
        return None
    if isinstance(pg, ProcessGroupRondo):
        return pg
    try:  # torch 2: a ProcessGroup wrapping backends
        backend = pg._get_backend(torch.device("cpu"))
    except Exception:  # noqa: BLE001 - not a wrapper, or no CPU backend
        return None
    return backend if isinstance(backend, ProcessGroupRondo) else None


def _global_ranks(group):
    if group is None:
        return None
    try:
        return dist.get_process_group_ranks(group)
    except Exception:  # noqa: BLE001 - an older torch
        return None


def _broadcast_object_list(object_list, src=0, group=None, device=None):
    """torch.distributed.broadcast_object_list, on a rondo group: the sizes
    broadcast first are -1 where the source cannot pickle, so every rank
    raises (the source its pickling error, the others RondoError naming
    it) instead of the others waiting for a broadcast that never comes."""
    if _rondo_group(group) is None or dist.distributed_c10d._rank_not_in_group(group):
        return _original_objects["broadcast_object_list"](object_list, src, group, device)
    me = dist.get_rank()
    datas, err = [], None
    if me == src:
        try:
            datas = [pickle.dumps(obj) for obj in object_list]
        except Exception as e:  # noqa: BLE001 - any pickling failure, alike
            err = e
    if me == src and err is None:
        sizes = torch.tensor([len(d) for d in datas], dtype=torch.int64)
    else:
        sizes = torch.full((len(object_list),), -1, dtype=torch.int64)
    dist.broadcast(sizes, src=src, group=group)
    if err is not None:
        raise err
    if bool((sizes < 0).any()):
        raise RondoError("RONDO_ERR_PEER", "broadcast_object_list: the source, rank %d, cannot "
                         "pickle its objects" % src, me)
    if me == src:
        joined = b"".join(datas)
        payload = torch.frombuffer(bytearray(joined), dtype=torch.uint8) if joined \
            else torch.empty(0, dtype=torch.uint8)
    else:
        payload = torch.empty(int(sizes.sum()), dtype=torch.uint8)
    dist.broadcast(payload, src=src, group=group)
    if me != src:
        raw, at = payload.numpy().tobytes(), 0
        for i, n in enumerate(sizes.tolist()):
            object_list[i] = pickle.loads(raw[at:at + n])
            at += n


_CANNOT_PICKLE = -1   # a rank's status in the first exchange: it cannot pickle
_BAD_ARGUMENTS = -2   # its arguments were rejected (an output list torch refuses, ...)


def _agree(name, status, err, group, what="its object"):
    """The first exchange of an object call: every rank gives its status (a
    size >= 0, or _CANNOT_PICKLE / _BAD_ARGUMENTS with err, the exception it
    caught), all-gathered, so every rank learns every other's. A failing
    rank raises err; the others raise RondoError naming the failing ranks
    ("cannot pickle WHAT", "was called with invalid arguments").
    Returns the statuses, in group order."""
    n = dist.get_world_size(group)
    got = [torch.zeros(1, dtype=torch.int64) for _ in range(n)]
    dist.all_gather(got, torch.tensor([status], dtype=torch.int64), group=group)
    if err is not None:
        raise err
    got = [int(t[0]) for t in got]
    if min(got) >= 0:
        return got
    ranks = _global_ranks(group) or list(range(n))
    why = []
    for code, text in ((_CANNOT_PICKLE, "cannot pickle " + what),
                       (_BAD_ARGUMENTS, "was called with invalid arguments")):
        bad = [str(ranks[r]) for r, k in enumerate(got) if k == code]
        if bad:
            why.append("rank %s %s" % (", ".join(bad), text))
    raise RondoError("RONDO_ERR_PEER", "%s: %s" % (name, "; ".join(why)), dist.get_rank())


def _pickled(obj):
    """(bytes, None), or (b"", the exception) where obj cannot be pickled."""
    try:
        return pickle.dumps(obj), None
    except Exception as e:  # noqa: BLE001 - any pickling failure, alike
        return b"", e


def _padded(data, width):
    t = torch.zeros(width, dtype=torch.uint8)
    if data:
        t[:len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return t


def _all_gather_object(object_list, obj, group=None):
    """torch.distributed.all_gather_object, on a rondo group: the sizes
    gathered first are -1 from a rank that cannot pickle, so every rank
    raises (that rank its pickling error, the others RondoError naming it)."""
    if _rondo_group(group) is None or dist.distributed_c10d._rank_not_in_group(group):
        return _original_objects["all_gather_object"](object_list, obj, group)
    data, err = _pickled(obj)
    sizes = _agree("all_gather_object", _CANNOT_PICKLE if err else len(data), err, group)
    width = max(sizes + [1])
    outs = [torch.empty(width, dtype=torch.uint8) for _ in sizes]
    dist.all_gather(outs, _padded(data, width), group=group)
    for i, (t, k) in enumerate(zip(outs, sizes)):
        object_list[i] = pickle.loads(t[:k].numpy().tobytes())


def _gather_object(obj, object_gather_list=None, dst=0, group=None):
    """torch.distributed.gather_object, on a rondo group: the sizes are
    all-gathered first, -1 from a rank that cannot pickle (-2 from one whose
    output list is wrong: missing or short on dst, given elsewhere), so
    every rank raises (that rank its own error, the others RondoError
    naming it) instead of dst waiting for a gather that never comes."""
    if _rondo_group(group) is None or dist.distributed_c10d._rank_not_in_group(group):
        return _original_objects["gather_object"](obj, object_gather_list, dst, group)
    me, n = dist.get_rank(), dist.get_world_size(group)
    data, err = _pickled(obj)
    status = _CANNOT_PICKLE if err else len(data)
    # torch's own checks, by truth value as torch makes them
    if me == dst and not object_gather_list:
        err = ValueError("Argument ``gather_list`` must be specified on destination rank.")
    elif me != dst and object_gather_list:
        err = ValueError("Argument ``gather_list`` must NOT be specified "
                         "on non-destination ranks.")
    elif me == dst and len(object_gather_list) < n:
        err = ValueError("gather_object: object_gather_list has %d entries for a group of %d"
                         % (len(object_gather_list), n))
    if err is not None and status >= 0:
        status = _BAD_ARGUMENTS
    ranks = _global_ranks(group)
    if ranks and dst not in ranks:  # every rank alike: no exchange yet
        raise ValueError("gather_object: dst, rank %d, is not in the group %s" % (dst, ranks))
    sizes = _agree("gather_object", status, err, group)
    width = max(sizes + [1])
    outs = [torch.empty(width, dtype=torch.uint8) for _ in sizes] if me == dst else None
    dist.gather(_padded(data, width), gather_list=outs, dst=dst, group=group)
    if me == dst:
        for i, (t, k) in enumerate(zip(outs, sizes)):
            object_gather_list[i] = pickle.loads(t[:k].numpy().tobytes())


_LENGTH = struct.Struct("<q")  # the size before each object scatter_object_list sends


def _scatter_object_list(scatter_object_output_list, scatter_object_input_list, src=0,
                         group=None):
    """torch.distributed.scatter_object_list, on a rondo group: every rank
    first all-gathers its status (the source its largest pickled size, or -1
    where it cannot pickle one of its objects; -2 from a rank whose output
    list is not a list of at least one entry, or a source whose input is not
    one object per rank), so every rank raises together. Then one scatter
    of the objects, each slot its size and its bytes."""
    if _rondo_group(group) is None or dist.distributed_c10d._rank_not_in_group(group):
        return _original_objects["scatter_object_list"](
            scatter_object_output_list, scatter_object_input_list, src, group)
    me, n = dist.get_rank(), dist.get_world_size(group)
    status, err, datas = 0, None, []
    if me == src:
        try:
            count = len(scatter_object_input_list)
        except TypeError:
            count = None
        if count != n:
            status = _BAD_ARGUMENTS
            err = ValueError("scatter_object_list: the source needs one object per rank, %d; "
                             "scatter_object_input_list has %s"
                             % (n, "no length" if count is None else count))
        else:
            try:
                datas = [pickle.dumps(obj) for obj in scatter_object_input_list]
                status = max(len(d) for d in datas)
            except Exception as e:  # noqa: BLE001 - any pickling failure, alike
                status, err = _CANNOT_PICKLE, e
    if err is None and (not isinstance(scatter_object_output_list, list)
                        or len(scatter_object_output_list) < 1):
        status = _BAD_ARGUMENTS
        err = RuntimeError("Expected argument scatter_object_output_list to be a list of "
                           "size at least 1.")
    ranks = _global_ranks(group)
    if ranks and src not in ranks:  # every rank alike: no exchange yet
        raise ValueError("scatter_object_list: src, rank %d, is not in the group %s"
                         % (src, ranks))
    at = ranks.index(src) if ranks else src  # src's place in the group
    statuses = _agree("scatter_object_list", status, err, group, "one of its objects")
    width = _LENGTH.size + statuses[at]
    ins = [_padded(_LENGTH.pack(len(d)) + d, width) for d in datas] if me == src else None
    out = torch.empty(width, dtype=torch.uint8)
    dist.scatter(out, scatter_list=ins, src=src, group=group)
    raw = out.numpy().tobytes()
    k = _LENGTH.unpack_from(raw)[0]
    scatter_object_output_list[0] = pickle.loads(raw[_LENGTH.size:_LENGTH.size + k])


_original_objects = {}


def _patch_objects():
    """torch's object calls pickle before their first collective: a failure
    on one rank leaves the others in it. On rondo groups these replace them."""
    c10d = dist.distributed_c10d
    for name, ours in (("broadcast_object_list", _broadcast_object_list),
                       ("all_gather_object", _all_gather_object),
                       ("gather_object", _gather_object),
                       ("scatter_object_list", _scatter_object_list)):
        theirs = getattr(c10d, name, None)
        if theirs is None or theirs is ours:
            continue
        _original_objects[name] = theirs
        setattr(c10d, name, ours)
        if getattr(dist, name, None) is theirs:
            setattr(dist, name, ours)


def _register():
    """Registers the backend (once) and, under an MPI launcher, fills in
    what torch's env:// needs from MPI (rendezvous.py)."""
    if not hasattr(dist.Backend, BACKEND.upper()):
        import inspect
        kw = {"extended_api": True}
        if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
            kw["devices"] = ["cpu", "cuda"]  # torch 2.x asks which devices it serves
        dist.Backend.register_backend(BACKEND, _create, **kw)
    _rendezvous.fill_env_from_mpi()
    _patch_objects()
