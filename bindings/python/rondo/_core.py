"""What every Python front end of rondo shares, NumPy's and torch's alike:
the error, the dtype/op/algorithm codes, request handles, and the engine
submissions by address (a pointer, an element count, a dtype code).

Nothing here knows NumPy arrays or torch tensors: a front end turns its
buffers into addresses and codes and calls Submitter's methods; what must
stay alive while a request runs travels in `keep`. The codes come from the
library (_lib.DTYPES, _lib.OPS, _lib.ALGOS), so there is one numbering.
"""
import ctypes
import threading

from . import _lib


class RondoError(RuntimeError):
    """A failed rondo call. status: the status name ("RONDO_ERR_MISMATCH"),
    message: what rondo said, rank: the rank that raised it."""

    def __init__(self, status, message, rank):
        self.status = status
        self.message = message
        self.rank = rank
        super().__init__("%s on rank %s: %s" % (status, rank, message))


def raise_status(st, rank_):
    """Raises RondoError for a failed status (the thread's last error)."""
    if st != _lib.SUCCESS:
        name = _lib.status_name(st).decode()
        msg = (_lib.last_error() or b"").decode(errors="replace")
        if msg.startswith(name + ": "):
            msg = msg[len(name) + 2:]
        raise RondoError(name, msg, rank_)


# ---- codes: rondo_dtype_t, rondo_op_t, rondo_algo_t ---------------------------------

DTYPE = {name: code for code, name in enumerate(_lib.DTYPES)}  # "float32" -> 6
BFLOAT16 = DTYPE["bfloat16"]
UINT8 = DTYPE["uint8"]

# the op names users write: the library's, and the long forms Horovod and
# the docs use ("average" for "avg")
OP_NAMES = ("sum", "average", "min", "max", "product", "adasum")
OP = {name: code for code, name in enumerate(_lib.OPS)}
OP.update(average=OP["avg"], product=OP["prod"])
assert set(OP_NAMES) <= set(OP), "librondo's op names changed: %s" % (_lib.OPS,)

ALGO = {name: code for code, name in enumerate(_lib.ALGOS)}


def op_code(op):
    if isinstance(op, int) and 0 <= op < len(_lib.OPS):
        return op
    code = OP.get(str(op).lower())
    if code is None:
        raise ValueError("rondo: op %r is not one of %s" % (op, ", ".join(OP_NAMES)))
    return code


def algo_code(algorithm):
    if algorithm is None:
        return 0
    code = ALGO.get(str(algorithm).lower())
    if code is None:
        raise ValueError("rondo: algorithm %r is not one of %s"
                         % (algorithm, ", ".join(_lib.ALGOS)))
    return code


# ---- requests ----------------------------------------------------------------------

_orphans = []       # requests whose Handle was dropped before wait()
_orphans_lock = threading.Lock()


class Handle:
    """An asynchronous request. wait() returns its result (and raises
    RondoError if it failed); done() tells whether it completed. The buffers
    it reads and writes stay alive until it completes, also if this handle
    is dropped first (rondo.shutdown() waits for those)."""

    __slots__ = ("_req", "_keep", "_result", "_rank", "_finish", "__weakref__")

    def __init__(self, req, keep, result, rank, finish=None):
        self._req = req
        self._keep = keep
        self._result = result
        self._rank = rank
        # finish(address, count): the result of a request whose output rondo
        # allocated (allgather, all-to-all), built before rondo frees it
        self._finish = finish

    def done(self):
        if self._req is None:
            return True
        flag = ctypes.c_int(0)
        raise_status(_lib.test(self._req, ctypes.byref(flag)), self._rank)
        return bool(flag.value)

    def wait(self):
        if self._req is not None:
            req = ctypes.c_void_p(self._req)
            self._req = None
            buf, n = ctypes.c_void_p(), ctypes.c_size_t(0)
            st = _lib.wait_result(ctypes.byref(req), ctypes.byref(buf), ctypes.byref(n))
            self._keep = None
            try:
                raise_status(st, self._rank)
                if self._finish is not None:
                    self._result = self._finish(buf.value, n.value)
            finally:
                _lib.free(buf.value)
        return self._result

    def _drop(self):
        """Leaves the request to shutdown() (its buffers stay alive until it
        completes), as if this handle had been dropped."""
        self.__del__()
        self._req = None

    def __del__(self):
        if getattr(self, "_req", None) is not None:
            with _orphans_lock:
                _orphans.append((self._req, self._keep))


def reap(block=False):
    """Releases dropped requests that completed (all of them if block)."""
    with _orphans_lock:
        pending = list(_orphans)
        _orphans.clear()
    left = []
    for req, keep in pending:
        flag = ctypes.c_int(1)
        if not block:
            _lib.test(req, ctypes.byref(flag))
        if flag.value:
            r, buf, n = ctypes.c_void_p(req), ctypes.c_void_p(), ctypes.c_size_t(0)
            _lib.wait_result(ctypes.byref(r), ctypes.byref(buf), ctypes.byref(n))
            _lib.free(buf.value)  # its status and result went to nobody: dropped
        else:
            left.append((req, keep))
    if left:
        with _orphans_lock:
            _orphans.extend(left)


def finish_group(handles):
    """The results of a group's handles. After a failure the rest are
    waited for only if they completed: a request of the group the other
    ranks never made (a rank passed more items) would never complete; it is
    dropped (shutdown() releases it). Raises the first failure."""
    results, err = [], None
    for h in handles:
        if err is not None:
            try:
                done = h.done()
            except RondoError:
                done = True
            if not done:
                h._drop()
                continue
        try:
            results.append(h.wait())
        except RondoError as e:
            err = err or e
    if err is not None:
        raise err
    return results


def async_opts(prescale=1.0, postscale=1.0, algorithm=None, group=None, group_size=0, tag=None,
               flags=0):
    """A request's rondo_async_opts_t. tag: text every rank must pass alike
    (rondo.torch: the tensor's shape); flags: _lib.ASYNC_*."""
    return _lib.AsyncOpts(ctypes.sizeof(_lib.AsyncOpts), float(prescale), float(postscale),
                          algo_code(algorithm), None, None,
                          group.encode() if group else None, int(group_size),
                          tag.encode() if tag else None, int(flags))


class Submitter:
    """Engine submissions by address on one comm (self._h, the comm's
    handle; self.rank; self._auto_name(kind), its counter of unnamed
    requests). rondo.Comm is one; rondo.torch submits through it.

    keep holds what must stay alive until the request completes, its last
    item the result. Unnamed requests of every kind share the comm's
    counter, so every rank must submit them in the same order."""

    _opts = staticmethod(async_opts)

    def _name(self, name, kind):
        """A request's name (bytes): name as given, or this comm's next for
        kind."""
        if isinstance(name, bytes):
            return name
        return (name or self._auto_name(kind)).encode()

    def _handle(self, st, req, keep, finish=None):
        raise_status(st, self.rank)
        return Handle(req.value, keep, keep[-1] if keep else None, self.rank, finish)

    def _submit_allreduce(self, src, dst, count, code, op, name, algorithm, prescale,
                          postscale, keep, group=None, group_size=0, tag=None, flags=0):
        reap()
        opts = async_opts(prescale, postscale, algorithm, group, group_size, tag, flags)
        req = ctypes.c_void_p()
        st = _lib.allreduce_async(self._h, self._name(name, "allreduce"), src, dst, count, code,
                                  op_code(op), ctypes.byref(opts), ctypes.byref(req))
        return self._handle(st, req, keep)

    def _submit_broadcast(self, buf, count, code, root, name, keep, group=None, group_size=0,
                          tag=None, flags=0):
        reap()
        opts = async_opts(group=group, group_size=group_size, tag=tag, flags=flags)
        req = ctypes.c_void_p()
        st = _lib.broadcast_async(self._h, self._name(name, "broadcast"), buf, count, code,
                                  int(root), ctypes.byref(opts), ctypes.byref(req))
        return self._handle(st, req, keep)

    def _submit_allgather(self, src, rows, row_count, code, name, keep, finish, group=None,
                          group_size=0, tag=None, flags=0):
        reap()
        opts = async_opts(group=group, group_size=group_size, tag=tag, flags=flags)
        req = ctypes.c_void_p()
        st = _lib.allgather_async(self._h, self._name(name, "allgather"), src, rows, row_count,
                                  code, ctypes.byref(opts), ctypes.byref(req))
        return self._handle(st, req, keep, finish)

    def _submit_allgather_into(self, src, rows, dst, recv_rows, row_count, code, name, keep,
                               group=None, group_size=0, tag=None, flags=0):
        """The all-gather of rows rows (row_count elements each) from every
        rank into dst, which holds recv_rows rows: every rank's, in rank
        order (src may be this rank's rows inside dst)."""
        reap()
        opts = async_opts(group=group, group_size=group_size, tag=tag, flags=flags)
        req = ctypes.c_void_p()
        st = _lib.allgather_into_async(self._h, self._name(name, "allgather"), src, rows, dst,
                                       recv_rows, row_count, code, ctypes.byref(opts),
                                       ctypes.byref(req))
        return self._handle(st, req, keep)

    def _submit_reduce_scatter(self, src, dst, rows, row_count, code, op, name, prescale,
                               postscale, keep, group=None, group_size=0, tag=None, flags=0):
        reap()
        opts = async_opts(prescale, postscale, None, group, group_size, tag, flags)
        req = ctypes.c_void_p()
        st = _lib.reduce_scatter_async(self._h, self._name(name, "reducescatter"), src, dst,
                                       rows, row_count, code, op_code(op), ctypes.byref(opts),
                                       ctypes.byref(req))
        return self._handle(st, req, keep)

    def _submit_reduce(self, src, dst, count, code, op, root, name, prescale, postscale, keep,
                       group=None, group_size=0, tag=None, flags=0):
        """dst: the root's result (src itself in place), None elsewhere."""
        reap()
        opts = async_opts(prescale, postscale, None, group, group_size, tag, flags)
        req = ctypes.c_void_p()
        st = _lib.reduce_async(self._h, self._name(name, "reduce"), src, dst, count, code,
                               op_code(op), root, ctypes.byref(opts), ctypes.byref(req))
        return self._handle(st, req, keep)

    def _submit_alltoall(self, src, sendcounts, row_count, code, recvcounts, name, keep, finish,
                         tag=None, flags=0):
        """sendcounts, recvcounts: numpy uintp arrays of self.size rows (kept
        alive by keep: rondo fills recvcounts when the request completes)."""
        reap()
        opts = async_opts(tag=tag, flags=flags)
        req = ctypes.c_void_p()
        st = _lib.alltoallv_async(self._h, self._name(name, "alltoall"), src,
                                  sendcounts.ctypes.data_as(_lib.c_size_p), row_count, code,
                                  recvcounts.ctypes.data_as(_lib.c_size_p), ctypes.byref(opts),
                                  ctypes.byref(req))
        return self._handle(st, req, keep, finish)

    def _submit_refusal(self, name, reason, group=None, group_size=0):
        """This rank cannot take part in the request `name` (already made by
        _name or given): it fails on every rank once all submitted it, with
        reason on the others (RONDO_ERR_PEER)."""
        reap()
        opts = async_opts(group=group, group_size=group_size)
        req = ctypes.c_void_p()
        st = _lib.refuse_async(self._h, name if isinstance(name, bytes) else name.encode(),
                               str(reason).encode(errors="replace")[:255], ctypes.byref(opts),
                               ctypes.byref(req))
        return self._handle(st, req, (None,))
