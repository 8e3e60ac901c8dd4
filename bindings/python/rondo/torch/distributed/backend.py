"""ProcessGroupRondo: every c10d collective of a process group on rondo.

How a call runs. Every collective of a process group becomes one named
request to the engine of the group's rondo comm (the world comm, or one
made by rondo_comm_subset for new_group). Names come from the group's call
counter (modulo _NAME_SLOTS, so a loop's calls repeat their names and the
engine's response cache agrees on them in one step), so ranks match calls
by their order, as torch requires. The engine fuses concurrent all-reduces
(DDP's buckets, async calls), and checks counts, dtypes, ops, roots and
shapes across ranks. Every call returns the same kind of Work, whoever
made it (work.py says who waits for it, and on which thread): the ranks
all make the same requests, whichever thread ends up waiting for them.

Arguments are checked on each rank before anything is submitted
(tensors.py). A rank whose arguments are refused still submits the call's
name as a refusal (rondo_refuse_async) and raises ValueError or TypeError;
the other ranks' call then fails (RuntimeError naming the rank and its
reason) instead of waiting. Mismatches found by the engine (count, dtype,
op, root, shape) fail the call on every rank with RuntimeError.
"""
import ctypes
import itertools
import math
import sys
import threading
import weakref

import numpy as np
import torch
from torch._C._distributed_c10d import ProcessGroup, ReduceOp

import rondo as _r
from rondo import RondoError, _lib

from .._codes import CODES, UINT8 as _UINT8
from .p2p import PointToPoint
from .tensors import (_OP_CODES, _bytes_of, _check_tensor, _check_whole, _copy_back, _dtype,
                      _host, _nbytes, _numel, _one, _op_name, _ptr, _reduction, _shape, _splits,
                      _tag)
from .work import _DONE, _OPEN, Completer, RondoWork

BACKEND = "rondo"

# Request names cycle through this many per group (see _name): a loop of
# 1, 2, 3, 4, 5, 6, 10, 12, ... different calls repeats its names exactly.
_NAME_SLOTS = 60


def _raise(st, rank=-1):
    if st != 0:
        _r._raise_status(st, rank)


def _nothing(_):
    return None


class _RequestWork(RondoWork):
    """The Work of a common call (_submitted): a request submitted by
    address, waited for here, with no closures around it."""

    def __init__(self, req, rank, keep, value, adopt):
        super().__init__(None, None, adopt)
        self._req = req
        self._rank = rank
        self._keep = keep  # what must live until the request is done
        self._value = value

    def _outcome(self):
        if _fast is not None:
            st = _fast.engine_wait(self._req)
        else:
            st = _lib.wait(ctypes.byref(ctypes.c_void_p(self._req)))
        self._keep = None
        _raise(st, self._rank)
        return self._value


# rondo._fast's submissions and wait (_fast.c), where it was built for this
# Python (and is not older than this file); else ctypes
_fast = _r._fast if hasattr(_r._fast, "reduce_scatter_async") else None


def _submit(call, *args):
    """The engine submission `call` (allreduce_async, reduce_scatter_async
    or allgather_into_async: rondo_<call>) with args, plain integers, the
    last the options' address: through rondo._fast's function of that
    name where it was built, else through _lib's (ctypes). The request, or
    minus the submission's status."""
    if _fast is not None:
        return getattr(_fast, call)(*args)
    r = ctypes.c_void_p()
    st = getattr(_lib, call)(*args[:-1], ctypes.cast(args[-1], ctypes.POINTER(_lib.AsyncOpts)),
                             ctypes.byref(r))
    return -st if st != 0 else r.value


_BLOCKING_OPTS = {}  # (call, dtype, shape, flags) -> (options, their address): _blocking_opts


def _blocking_opts(t, flags, what="all_reduce", whole=True):
    """The options of a common call (what) on t: its flags and tag (made
    once per call, dtype and shape: _tag(what, t), or what and the dtype
    alone where whole is false), as the pair (options, their address).
    The caller holds the pair until its submission returns: another
    thread may clear the table meanwhile."""
    key = (what, t.dtype, t.shape if whole else None, flags)
    o = _BLOCKING_OPTS.get(key)
    if o is None:
        if len(_BLOCKING_OPTS) > 1024:
            _BLOCKING_OPTS.clear()
        tag = _tag(what, t) if whole else "%s: %s" % (what, _dtype(t))
        opts = _r.Comm._opts(tag=tag, flags=flags)
        o = _BLOCKING_OPTS[key] = (opts, ctypes.addressof(opts))
    return o


def _plain(t):
    """A contiguous dense CPU tensor: the common calls' case."""
    return isinstance(t, torch.Tensor) and t.is_cpu and not t.is_sparse and t.is_contiguous()


def _in_place_ok(src, n, dst, m, rank):
    """Whether dst (m bytes) may be the engine's reduce-scatter output for
    src (n bytes): apart from it, at this rank's block, or at its start."""
    if m == 0 or dst + m <= src or src + n <= dst:
        return True
    return dst == src or dst == src + rank * m


_uids = itertools.count()          # local: names the completion threads


class ProcessGroupRondo(PointToPoint, ProcessGroup):
    """A torch ProcessGroup on a rondo comm (see the module's docstring;
    point-to-point calls are p2p.py's)."""

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
        self._slots = [None] * _NAME_SLOTS  # the last Work of each name
        self._last = None  # the Work of the group's last call
        self._done = Completer(str(uid))
        # sends whose wait timed out: MPI cannot withdraw them, so each stays
        # open with its buffer until the receive comes (_reap_open_sends)
        self._open_sends = []
        self._open_lock = threading.Lock()
        self._tl = threading.local()  # the slot of the call this thread makes
        self._prefix = prefix
        self._coalescing = None  # the deferred calls of an open _coalescing_manager
        self._coalesced = itertools.count()  # its groups' numbers
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
        engine's response cache agrees on in one step. The Work that last
        had the name is completed first if nobody has (work.py): it came
        earlier on every rank, so its request completes."""
        slot = next(self._seq) % _NAME_SLOTS
        last = self._slots[slot]
        if last is not None:
            self._slots[slot] = None
            if last._state != _DONE:
                last.settle_quietly()
        return slot, self._names[slot]

    def _work(self, await_request, post):
        """The Work of the call this thread is making (work.py)."""
        return self._hold(RondoWork(await_request, post, self._done.adopt), self._tl.slot)

    def _hold(self, work, slot):
        """work, the group's last call from now on, held in its name's slot
        until the name comes round."""
        last = self._last
        # the group's last call, unclaimed and held by nobody but the group
        # (dropped, or held by C++ only): its completion threads take it
        if last is not None and last._state == _OPEN and sys.getrefcount(last) <= 4:
            last.get_future()
        self._last = self._slots[slot] = work
        return work

    def _wait_now(self):
        """The flags of the next call: RONDO_ASYNC_WAIT_NOW when the group's
        last call is done (a run of blocking calls: the caller's wait()
        then runs the engine's cycles), else none (async calls, DDP's
        buckets: the engine thread is woken at once, and paces them). The
        engine takes the hint only while a request is alone in flight
        anyway (docs/engine.md, "Who runs the cycles")."""
        last = self._last
        return _lib.ASYNC_WAIT_NOW if last is None or last._state == _DONE else 0

    def _run(self, name, submit, post):
        """One call: submit(name, flags, **group) -> rondo.Handle; post(result)
        -> the call's value. Inside _coalescing_manager the call is kept for
        _end_coalescing (unless its submit says groups = False)."""
        if self._coalescing is not None and getattr(submit, "groups", True):
            return self._defer(name, submit, post)
        h = submit(name, self._wait_now())
        self._tl.submitted = True  # errors from here on are the call's, not refusals
        return self._work(h.wait, post)

    def _refuse(self, name, err):
        """This rank refuses the call `name`: the others' fail; err is raised.
        Inside _coalescing_manager the refusal joins the block's group."""
        def submit(nm, flags, **group):
            return self._comm._submit_refusal(nm, err, **group)
        try:
            if self._coalescing is not None:
                self._defer(name, submit, _nothing)
            else:
                self._work(submit(name, 0).wait, _nothing)  # released when the name comes round
        except RondoError:
            pass  # the engine is gone: nobody waits there either
        raise err

    def _call(self, prepare):
        """Runs prepare(name) -> Work; an argument error it raises is refused
        (every rank fails instead of waiting) and raised here."""
        name = self._slot_name()
        self._tl.submitted = False
        try:
            return prepare(name)
        except (ValueError, TypeError, RondoError) as err:
            if self._tl.submitted:
                raise  # the call itself failed (on every rank)
            self._refuse(name, err)

    def _slot_name(self):
        """The next call's name, its slot kept for _work."""
        slot, name = self._name()
        self._tl.slot = slot
        return name

    def _submitted(self, slot, name, req, keep, value):
        """The Work of a common call (all_reduce, reduce_scatter_tensor,
        all_gather_into_tensor on plain tensors), submitted by address
        without the general path's closures: req is the request, or minus
        the submission's status (then this rank refuses the name). keep:
        what must live until the call is done; value: the Work's."""
        if req < 0:
            self._tl.slot = slot
            try:
                _raise(-req, self._comm.rank)
            except RondoError as err:
                self._refuse(name, err)
        return self._hold(_RequestWork(req, self._comm.rank, keep, value, self._done.adopt), slot)

    # -- all-reduce
    def allreduce(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        # The common call: one contiguous CPU tensor of a reducible dtype
        # with a plain op. The same request as the general path's, made
        # without its closures and wrappers, which cost more than the call.
        t = tensors[0] if len(tensors) == 1 else None
        code = CODES.get(getattr(t, "dtype", None))
        opc = _OP_CODES.get(_op_name(op))
        if (opc is not None and code is not None and t.is_cpu and t.is_contiguous()
                and not t.is_sparse and self._coalescing is None):
            slot, name = self._name()
            n = t.numel()
            p = t.data_ptr() if n > 0 else None
            opts = _blocking_opts(t, self._wait_now())
            req = _submit("allreduce_async", self._comm._h, name, p, p, n, code, opc, opts[1])
            return self._submitted(slot, name, req, None, tensors)

        def prepare(name):
            t = _one(tensors, "all_reduce")
            code, rop = _reduction(t, op)
            return self._allreduce(name, t, code, rop, [t], what="all_reduce")
        return self._call(prepare)

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

        def submit(nm, flags, **group):
            return self._comm._submit_allreduce(_ptr(buf), _ptr(buf), n, code, rop, nm, None,
                                                1.0, 1.0, (t, buf, dst), tag=_tag(what, t),
                                                flags=flags, **group)

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

            def submit(nm, flags, **group):
                return self._comm._submit_allreduce(
                    _ptr(flat), _ptr(flat), flat.numel(), code, rop, nm, None, 1.0, 1.0,
                    (ts, flat), tag="all_reduce_coalesced: %s"
                    % [_shape(t) for t in ts], flags=flags, **group)

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

    # -- reduce: the reduction lands on the root only (rondo_reduce_async); the
    # other ranks' tensors are read, not written
    def reduce(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        root = opts.rootRank if opts is not None else 0

        def prepare(name):
            t = _one(tensors, "reduce")
            self._check_root(root)
            code, rop = _reduction(t, op)
            real = torch.view_as_real(t) if t.is_complex() else t
            buf = _host(real)
            mine = self._comm.rank == root

            def submit(nm, flags, **group):
                return self._comm._submit_reduce(_ptr(buf), _ptr(buf) if mine else None,
                                                 _numel(t), code, rop, root, nm, 1.0, 1.0,
                                                 (t, buf), tag=_tag("reduce", t), flags=flags,
                                                 **group)

            def post(_):
                if mine:
                    _copy_back(real, buf)
                return [t]
            return self._run(name, submit, post)
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

            def submit(nm, flags, **group):
                return self._comm._submit_broadcast(_ptr(buf), buf.numel(), _UINT8, root, nm,
                                                    (t, buf), tag=_tag("broadcast", t),
                                                    flags=flags, **group)

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

        def submit(nm, flags, **group):
            return self._comm._submit_allgather(_ptr(buf), buf.numel(), 1, _UINT8, nm, (t, buf),
                                                finish, tag="%s: %s" % (what, _dtype(t)),
                                                flags=flags, **group)

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
        """all_gather_into_tensor: every rank's input, in rank order, straight
        into output's memory (the engine's all-gather into the caller's
        buffer: no count exchange, no result to copy), in place where input
        is this rank's part of output."""
        p = self._comm.size
        if (self._coalescing is None and _plain(input) and _plain(output)
                and output.dtype == input.dtype and output.numel() == input.numel() * p):
            nb = input.numel() * input.element_size()
            src = input.data_ptr() if nb else None
            dst = output.data_ptr() if nb else None
            slot, name = self._name()
            opts = _blocking_opts(input, self._wait_now(), "all_gather_into_tensor", whole=False)
            req = _submit("allgather_into_async", self._comm._h, name, src, nb, dst, nb * p, 1,
                          _UINT8, opts[1])
            return self._submitted(slot, name, req, input, output)

        def prepare(name):
            _check_tensor(input, "_allgather_base input")
            _check_tensor(output, "_allgather_base output")
            _check_whole(output, "output", input, "input", self._comm.size,
                         "all_gather_into_tensor")
            src = _bytes_of(input)
            dst = _host(output)
            dst = dst if dst.is_contiguous() else torch.empty_like(
                dst, memory_format=torch.contiguous_format)
            total = _nbytes(dst)

            def submit(nm, flags, **group):
                return self._comm._submit_allgather_into(
                    _ptr(src), src.numel(), dst.data_ptr() if total else None, total, 1,
                    _UINT8, nm, (input, src, output, dst),
                    tag="all_gather_into_tensor: %s" % _dtype(input), flags=flags, **group)

            def post(_):
                if dst.data_ptr() != output.data_ptr():
                    _copy_back(output, dst)
                return output
            return self._run(name, submit, post)
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
        if not _in_place_ok(src.data_ptr(), _nbytes(src), dst.data_ptr(), _nbytes(dst),
                            self._comm.rank):
            dst = torch.empty_like(dst)  # the output lies elsewhere in the input
        row = _numel(out)

        def submit(nm, flags, **group):
            return self._comm._submit_reduce_scatter(_ptr(src), _ptr(dst), p, row, code, rop, nm,
                                                     1.0, 1.0, (flat, src, out, dst),
                                                     tag=_tag(what, out), flags=flags, **group)

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
        p = self._comm.size
        code = CODES.get(getattr(output, "dtype", None))
        opc = _OP_CODES.get(_op_name(op))
        if (self._coalescing is None and code is not None and opc is not None and _plain(input)
                and _plain(output) and input.dtype == output.dtype
                and input.numel() == output.numel() * p):
            row = output.numel()
            nb = row * output.element_size()
            lo, d = input.data_ptr(), output.data_ptr()
            if _in_place_ok(lo, nb * p, d, nb, self._comm.rank):
                slot, name = self._name()
                opts = _blocking_opts(output, self._wait_now(), "reduce_scatter_tensor")
                lo, d = (lo, d) if nb else (None, None)
                req = _submit("reduce_scatter_async", self._comm._h, name, lo, d, p, row, code,
                              opc, opts[1])
                return self._submitted(slot, name, req, input, [output])

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

        def submit(nm, flags, **group):
            return self._comm._submit_alltoall(_ptr(send), sendcounts, 1, _UINT8, recvcounts, nm,
                                               (send, sendcounts, recvcounts), finish, tag=tag,
                                               flags=flags)
        submit.groups = False  # runs at once, also inside _coalescing_manager

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

    # -- coalescing: torch's _coalescing_manager brackets calls with these.
    # The collectives made in between are kept, then submitted as one engine
    # group: none runs before all are in, and those of one kind (all-reduces
    # of a dtype, reduce-scatters, all-gathers) run as one fused collective,
    # as NCCL runs a group's calls. Point-to-point calls and all-to-alls run
    # at once, as outside.
    def _defer(self, name, submit, post):
        calls, owner = self._coalescing
        if len(calls) >= _NAME_SLOTS:  # every rank stops at the same call
            raise RuntimeError("rondo: at most %d collectives inside one _coalescing_manager"
                               % _NAME_SLOTS)
        box = []
        sent = threading.Event()

        def await_request():
            if not sent.is_set() and threading.get_ident() == owner:
                raise RuntimeError("rondo: a call inside _coalescing_manager was waited for "
                                   "before the block ended: its collective runs at the end "
                                   "(use async_op=True and wait after the block)")
            sent.wait()
            if isinstance(box[0], BaseException):
                raise box[0]
            return box[0].wait()
        self._tl.submitted = True  # an error from here on is the call's
        work = self._work(await_request, post)
        calls.append((name, submit, box, sent, work))
        return work

    def _start_coalescing(self, *args):
        if self._coalescing is not None:
            raise RuntimeError("rondo: _coalescing_manager blocks do not nest")
        self._coalescing = ([], threading.get_ident())

    def _end_coalescing(self, *args):
        """Submits the block's collectives as one group; returns a Work that
        completes when all of them have (and raises the first one's error)."""
        if self._coalescing is None:
            raise RuntimeError("rondo: _end_coalescing without _start_coalescing")
        calls, _ = self._coalescing
        self._coalescing = None
        opts = {"group": "%scoalesced.%d" % (self._prefix, next(self._coalesced)),
                "group_size": len(calls)}
        for name, submit, box, sent, _ in calls:
            try:
                box.append(submit(name, 0, **opts))
            except (RondoError, ValueError, TypeError) as e:
                box.append(e)  # raised by the call's wait; the others' fail too:
                try:
                    self._comm._submit_refusal(name, e, **opts)
                except RondoError:
                    pass  # the engine is gone
            sent.set()
        works = [c[4] for c in calls]

        def await_all():
            for w in works:
                w.wait()
            return None
        return RondoWork(await_all, _nothing, self._done.adopt)
