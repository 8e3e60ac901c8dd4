"""rondo for Python: MPI-native collectives on NumPy arrays.

    import numpy as np, rondo
    rondo.init()
    total = rondo.allreduce(np.ones(4, np.float32))      # a new array
    rondo.shutdown()

Run it under mpiexec (mpiexec -n 2 python3 script.py). Every function is a
collective over the world comm unless called on a Comm from Comm.split().
Errors from rondo raise RondoError (status name, message, rank); arrays
rondo cannot take raise TypeError or ValueError, and the other ranks of
that call get RondoError("RONDO_ERR_PEER") instead of waiting. See
docs/python.md.
"""
import atexit
import ctypes
import itertools
import math
import operator
import os
import pickle
import sys

import numpy as np

# The compiled part (rondo/_fast*.so) may lie in the build tree's copy of
# this directory, on PYTHONPATH beside the sources (docs/python.md).
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

from . import _lib  # noqa: E402 - after the path
from ._core import (ALGO, BFLOAT16, DTYPE, OP, Handle, RondoError, Submitter,  # noqa: E402
                    algo_code, op_code)
from ._core import finish_group as _finish_group  # noqa: E402
from ._core import raise_status as _raise_status  # noqa: E402
from ._core import reap as _reap  # noqa: E402

__all__ = [
    "RondoError", "Comm", "Handle", "init", "shutdown", "is_initialized", "rank", "size",
    "local_rank", "local_size", "world", "allreduce", "allreduce_", "allreduce_async",
    "grouped_allreduce", "broadcast", "broadcast_", "allgather", "alltoall", "reduce_scatter",
    "barrier", "join", "broadcast_object", "allgather_object", "version",
]


def version():
    return _lib.version_string().decode()


# ---- dtypes and ops ----------------------------------------------------------------

_NP_DTYPES = {np.dtype(name): code for name, code in DTYPE.items() if name != "bfloat16"}


def dtype_code(dtype, as_bfloat16=False):
    """rondo's dtype for a NumPy dtype. bfloat16: a dtype named "bfloat16"
    (ml_dtypes), or uint16 data with as_bfloat16=True."""
    dt = np.dtype(dtype)
    if as_bfloat16:
        if dt.itemsize != 2:
            raise TypeError("rondo: bfloat16 data must be 2-byte elements (a uint16 view), not %s"
                            % dt)
        return BFLOAT16
    code = _NP_DTYPES.get(dt)
    if code is None and dt.name == "bfloat16":
        return BFLOAT16
    if code is None:
        raise TypeError("rondo: dtype %s is not supported (int8, uint8, int16, int32, int64, "
                        "float16, float32, float64; bfloat16 as a uint16 view with "
                        "dtype='bfloat16')" % dt)
    return code


def _load_fast():
    """rondo._fast (_fast.c), the common blocking all-reduce in C, set up
    with this module's tables; None where it was not built or
    RONDO_PYTHON_FAST=0 (then every call takes the Python path)."""
    if os.environ.get("RONDO_PYTHON_FAST", "1") == "0":
        return None
    try:
        from . import _fast
    except ImportError:
        return None
    formats = {memoryview(np.empty(0, dt)).format: code for dt, code in _NP_DTYPES.items()}
    address = ctypes.cast(_lib.allreduce_algo, ctypes.c_void_p).value
    _fast.setup(address, np.ndarray, formats, dict(OP), {None: 0, **ALGO})
    # (an older build of _fast lacks some of the engine calls: rondo.torch.distributed
    # then makes them all through ctypes)
    if hasattr(_fast, "reduce_scatter_async"):
        _fast.setup_engine(*(ctypes.cast(f, ctypes.c_void_p).value for f in (
            _lib.allreduce_async, _lib.wait, _lib.reduce_scatter_async,
            _lib.allgather_into_async)))
    return _fast


_fast = _load_fast()


# ---- the library's state -----------------------------------------------------------

_world = None
_initialized = False


def init():
    """Initializes rondo (and MPI, with MPI_THREAD_MULTIPLE, unless the
    process already did). Idempotent."""
    global _world, _initialized
    if _initialized:
        return
    st = _lib.init(None, None)
    # librondo took the rendezvous key out of the C environment; take it out
    # of Python's copy too, so that subprocesses started with os.environ do
    # not inherit it (docs/launching.md#who-can-join).
    os.environ.pop("RONDO_RENDEZVOUS_KEY", None)
    if st != _lib.SUCCESS:
        _raise_status(st, -1)
    _world = Comm(_lib.world(), owned=False)
    _initialized = True


def is_initialized():
    return _initialized


def shutdown():
    """Finalizes rondo (and MPI if rondo started it). Collective. Called at
    exit if the program did not. Requests still in flight, dropped or not,
    do not hold it up: rondo_finalize fails them (RONDO_ERR_SHUT_DOWN) --
    a dropped request that some rank never made would otherwise be waited
    for forever -- and the dropped ones are released afterwards."""
    global _world, _initialized
    if not _initialized:
        return
    _reap()
    _initialized = False
    _world = None
    st = _lib.finalize()
    _reap(block=True)  # every request has completed now: this only releases
    _raise_status(st, -1)


atexit.register(shutdown)


def launcher():
    """How this process's world was formed (an MPI launcher, or which
    variables and rendezvous); what rondo-info prints under "launcher"."""
    return _lib.launcher().decode()


def world():
    if not _initialized:
        raise RondoError("RONDO_ERR_NOT_INITIALIZED", "call rondo.init() first", -1)
    return _world


def rank():
    return world().rank


def size():
    return world().size


def local_rank():
    return world().local_rank


def local_size():
    return world().local_size


# ---- buffers -----------------------------------------------------------------------

def _ptr(a):
    return a.ctypes.data


def _check_array(a, what, writable=False):
    """The reason rondo cannot use a, or None."""
    if not isinstance(a, np.ndarray):
        return TypeError("rondo: %s must be a numpy.ndarray, not %s" % (what, type(a).__name__))
    if not a.flags.c_contiguous:
        return ValueError("rondo: %s must be C-contiguous (use numpy.ascontiguousarray)" % what)
    if writable and not a.flags.writeable:
        return ValueError("rondo: %s is read-only and cannot be reduced in place" % what)
    return None


# ---- comms -------------------------------------------------------------------------

class Comm(Submitter):
    """A rondo comm: the world comm (rondo.world()) or one made by split().
    Its engine submissions by address are Submitter's (_core.py)."""

    def __init__(self, handle, owned=True):
        self._h = handle
        self._owned = owned
        self._names = itertools.count()
        out = ctypes.c_int()
        for field, fn in (("rank", _lib.comm_rank), ("size", _lib.comm_size),
                          ("local_rank", _lib.comm_local_rank),
                          ("local_size", _lib.comm_local_size),
                          ("nodes", _lib.comm_node_count),
                          ("node_id", _lib.comm_node_id)):
            _raise_status(fn(handle, ctypes.byref(out)), -1)
            setattr(self, field, out.value)

    def __repr__(self):
        return "<rondo.Comm rank %d of %d, %d node(s)>" % (self.rank, self.size, self.nodes)

    def split(self, color, key=0):
        """Collective: a new Comm of the ranks that passed the same color
        (>= 0), ordered by key; None on ranks that pass a negative color."""
        out = ctypes.c_void_p()
        _raise_status(_lib.comm_split(self._h, int(color), int(key), ctypes.byref(out)),
                      self.rank)
        return Comm(out.value) if out.value else None

    def subset(self, ranks):
        """Collective over the listed ranks only (the others do not call
        it): a new Comm of those ranks of this comm, in list order."""
        ranks = [int(r) for r in ranks]
        arr = (ctypes.c_int * max(len(ranks), 1))(*ranks)
        out = ctypes.c_void_p()
        _raise_status(_lib.comm_subset(self._h, arr, len(ranks), ctypes.byref(out)), self.rank)
        return Comm(out.value)

    def set_timeout(self, seconds):
        """Requests on this comm that wait more than seconds for another
        rank fail on every rank that waits (RONDO_ERR_STALLED, naming the
        ranks that did not come); 0: never. Call it with the same value on
        every rank."""
        _raise_status(_lib.comm_set_timeout(self._h, float(seconds)), self.rank)

    def destroy(self):
        """Collective: frees the comm (its pending requests fail)."""
        if self._owned and self._h:
            h = ctypes.c_void_p(self._h)
            self._h = None
            _raise_status(_lib.comm_destroy(ctypes.byref(h)), self.rank)

    def topology(self):
        buf = ctypes.create_string_buffer(1024)
        _lib.comm_topology(self._h, buf, len(buf), None)
        return buf.value.decode()

    def explain(self, nbytes, dtype=np.float32, op="sum"):
        """Why allreduce picks what it picks for nbytes of dtype."""
        code = dtype_code(dtype)
        count = int(nbytes) // np.dtype(dtype).itemsize if code != BFLOAT16 else int(nbytes) // 2
        need = ctypes.c_size_t(0)
        _lib.explain(self._h, count, code, op_code(op), None, 0, ctypes.byref(need))
        buf = ctypes.create_string_buffer(need.value)
        _raise_status(_lib.explain(self._h, count, code, op_code(op), buf, need.value, None),
                      self.rank)
        return buf.value.decode()

    def _auto_name(self, kind):
        return "%s.noname.%d" % (kind, next(self._names))

    # -- the local failure protocol: a rank that cannot take part still
    # enters the collective with an invalid dtype, so rondo's argument check
    # fails the call on every rank (RONDO_ERR_PEER on the others), then
    # raises its own reason.
    def _refuse(self, err, call):
        call()
        raise err

    # -- all-reduce ---------------------------------------------------------------
    def _allreduce_into(self, src, dst, codes, prescale, postscale):
        if prescale != 1.0:
            scaled = np.empty_like(src)
            np.multiply(src, prescale, out=scaled, casting="unsafe")
            src = scaled
        st = _lib.allreduce_algo(self._h, src.ctypes.data, dst.ctypes.data, src.size, *codes)
        _raise_status(st, self.rank)
        if postscale != 1.0:
            np.multiply(dst, postscale, out=dst, casting="unsafe")
        return dst

    def _refuse_allreduce(self, err):
        self._refuse(err, lambda: _lib.allreduce_algo(self._h, None, None, 0, 99, 0, 0))

    def _validate_allreduce(self, array, op, algorithm, dtype, writable):
        err = _check_array(array, "array", writable)
        if err is None:
            try:
                return dtype_code(array.dtype, dtype == "bfloat16"), op_code(op), \
                    algo_code(algorithm)
            except (TypeError, ValueError) as e:
                err = e
        self._refuse_allreduce(err)

    def allreduce(self, array, op="sum", name=None, algorithm=None, prescale=1.0,
                  postscale=1.0, dtype=None, out=None):
        """The reduction of array over the comm's ranks, as a new array, or
        into out (same shape and dtype, C-contiguous and writable): reusing
        out spares large arrays the page faults of a fresh one per call.
        name is accepted for Horovod's signature; blocking calls need none."""
        if _fast is not None and dtype is None and prescale == 1.0 and postscale == 1.0:
            if out is None and type(array) is np.ndarray:
                out = np.empty_like(array)
            st = _fast.allreduce(self._h, array, out, op, algorithm)  # the common call in C
            if st == 0:
                return out
            if st > 0:
                _raise_status(st, self.rank)
        codes = self._validate_allreduce(array, op, algorithm, dtype, False)
        if out is None:
            out = np.empty_like(array)
        else:
            err = _check_array(out, "out", writable=True)
            if err is None and (out.shape != array.shape or out.dtype != array.dtype):
                err = ValueError("rondo: out must have the array's shape %s and dtype %s"
                                 % (array.shape, array.dtype))
            if err is not None:
                self._refuse_allreduce(err)
        return self._allreduce_into(array, out, codes, prescale, postscale)

    def allreduce_(self, array, op="sum", name=None, algorithm=None, prescale=1.0,
                   postscale=1.0, dtype=None):
        """In place: array holds the reduction afterwards; returns it."""
        if _fast is not None and dtype is None and prescale == 1.0 and postscale == 1.0:
            st = _fast.allreduce(self._h, array, array, op, algorithm)  # the common call in C
            if st == 0:
                return array
            if st > 0:
                _raise_status(st, self.rank)
        codes = self._validate_allreduce(array, op, algorithm, dtype, True)
        if prescale != 1.0:
            np.multiply(array, prescale, out=array, casting="unsafe")
        return self._allreduce_into(array, array, codes, 1.0, postscale)

    def allreduce_async(self, array, op="sum", name=None, algorithm=None, prescale=1.0,
                        postscale=1.0, dtype=None, out=None, group=None, group_size=0):
        """Submits an all-reduce to the fusion engine under name (every rank
        must use the same names; None: a per-comm counter, so every rank must
        submit its unnamed requests in the same order). Returns a Handle whose
        wait() gives the result (out, or a new array; out=array is in place)."""
        _reap()
        # the name first: a rank that refuses still uses up its unnamed slot
        name = self._name(name, "allreduce")
        err = None
        try:
            for arr, what, writable in ((array, "array", False), (out, "out", True)):
                if arr is not None or what == "array":
                    err = err or _check_array(arr, what, writable)
            if err is None:
                code = dtype_code(array.dtype, dtype == "bfloat16")
                op_code(op)
                algo_code(algorithm)
                if out is not None and (out.shape != array.shape or out.dtype != array.dtype):
                    err = ValueError("rondo: out must have the array's shape and dtype")
        except (TypeError, ValueError) as e:
            err = e
        if err is not None:
            # refused by name: the other ranks' requests of that name fail
            # (RONDO_ERR_PEER) instead of waiting for this rank
            self._submit_refusal(name, err, group, group_size)._drop()
            raise err
        if out is None:
            out = np.empty_like(array)
        return self._submit_allreduce(_ptr(array), _ptr(out), array.size, code, op, name,
                                      algorithm, prescale, postscale, (array, out), group,
                                      group_size)

    def timeline_start(self, path, mark_cycles=False):
        """Starts this comm's engine timeline (a Chrome trace) in path: rank 0
        writes it, the others only check the arguments. See docs/engine.md."""
        _raise_status(_lib.timeline_start(self._h, os.fsencode(path), int(bool(mark_cycles))),
                      self.rank)

    def timeline_stop(self):
        _raise_status(_lib.timeline_stop(self._h), self.rank)

    def timeline_mark(self, what):
        """Marks this moment in the timeline (rank 0's, while one is open):
        a step's phases beside the engine's spans (bench/step_breakdown.py)."""
        _raise_status(_lib.timeline_mark(self._h, what.encode()), self.rank)

    def grouped_allreduce(self, arrays, op="sum", name=None, algorithm=None, prescale=1.0,
                          postscale=1.0):
        """All-reduces a list of arrays as one fused group; a list of results.
        Every rank must pass as many arrays: the group's size is part of
        what the engine compares, so a difference fails the call on every
        rank (RONDO_ERR_MISMATCH) instead of leaving one rank waiting for
        the requests the others never make. An array this rank cannot take is
        refused for the whole group (RONDO_ERR_PEER on the others)."""
        arrays = list(arrays)
        base = name or self._auto_name("grouped_allreduce")
        n = len(arrays)
        names = [("%s.%d" % (base, i)).encode() for i in range(max(n, 1))]
        err = None if n else ValueError("rondo.grouped_allreduce: no arrays")
        try:
            for a in arrays:
                err = err or _check_array(a, "each array")
            if err is None:
                codes = [dtype_code(a.dtype) for a in arrays]
                op_code(op)
                algo_code(algorithm)
        except (TypeError, ValueError) as e:
            err = e
        if err is not None:
            _finish_group([self._submit_refusal(nm, err, base, len(names)) for nm in names])
            raise err
        hs = []
        try:
            for a, code, nm in zip(arrays, codes, names):
                out = np.empty_like(a)
                hs.append(self._submit_allreduce(_ptr(a), _ptr(out), a.size, code, op, nm,
                                                 algorithm, prescale, postscale, (a, out), base,
                                                 n))
        except RondoError:
            _finish_group(hs)
            raise
        return _finish_group(hs)

    # -- broadcast ----------------------------------------------------------------
    def broadcast_(self, array, root_rank=0):
        """In place: every rank's array becomes root_rank's; returns it."""
        err = _check_array(array, "array", writable=True)
        if err is None:
            try:
                code = dtype_code(array.dtype)
            except TypeError as e:
                err = e
        if err is not None:
            self._refuse(err, lambda: _lib.broadcast(self._h, None, 0, 99, int(root_rank)))
        _raise_status(_lib.broadcast(self._h, _ptr(array), array.size, code, int(root_rank)),
                      self.rank)
        return array

    def broadcast(self, array, root_rank=0):
        """root_rank's array, as a new array on every rank."""
        out = np.array(array, copy=True, order="C") if isinstance(array, np.ndarray) else array
        return self.broadcast_(out, root_rank)

    # -- allgather ----------------------------------------------------------------
    def allgather(self, array):
        """Every rank's array concatenated along the first dimension, in rank
        order; the first dimension may differ across ranks, the others and
        the dtype may not (ValueError on every rank)."""
        err = _check_array(array, "array")
        code = -1
        if err is None:
            try:
                code = dtype_code(array.dtype)
            except TypeError as e:
                err = e
        arr = array if err is None else np.zeros(0, np.int8)
        if err is None and arr.ndim == 0:
            arr = arr.reshape(1)
        rows = arr.shape[0] if arr.ndim else 0
        row = int(np.prod(arr.shape[1:])) if arr.ndim > 1 else 1
        # [rows, row elements, dtype, trailing-shape hash] from every rank
        meta = np.array([rows, row, code, hash(arr.shape[1:]) & 0x7fffffffffff], np.int64)
        if err is not None:
            meta[:] = -1
        allmeta = np.empty((self.size, 4), np.int64)
        _raise_status(_lib.allgather(self._h, _ptr(meta), _ptr(allmeta), 4, 3), self.rank)
        if err is not None:
            raise err
        bad = [r for r in range(self.size) if allmeta[r, 0] < 0]
        if bad:
            raise RondoError("RONDO_ERR_PEER",
                             "rondo.allgather: rank %d passed an array rondo cannot take"
                             % bad[0], self.rank)
        if (allmeta[:, 1:] != allmeta[0, 1:]).any():
            raise ValueError("rondo.allgather: ranks passed arrays whose dtypes or shapes beyond "
                             "the first dimension differ")
        counts = (allmeta[:, 0] * allmeta[:, 1]).astype(np.uintp)
        out = np.empty((int(allmeta[:, 0].sum()),) + arr.shape[1:], arr.dtype)
        cp = counts.ctypes.data_as(_lib.c_size_p)
        _raise_status(_lib.allgatherv(self._h, _ptr(arr), arr.size, _ptr(out), cp, None, code),
                      self.rank)
        return out

    # -- alltoall, reduce_scatter ---------------------------------------------------
    def alltoall(self, array):
        """Block i (the first dimension cut into size equal blocks) goes to
        rank i; the result holds block j from rank j."""
        err = _check_array(array, "array")
        if err is None:
            try:
                code = dtype_code(array.dtype)
                if array.ndim == 0 or array.shape[0] % self.size:
                    raise ValueError("rondo.alltoall: the first dimension (%s) must be a "
                                     "multiple of the comm size %d"
                                     % (array.shape[0] if array.ndim else "scalar", self.size))
            except (TypeError, ValueError) as e:
                err = e
        if err is not None:
            self._refuse(err, lambda: _lib.alltoall(self._h, None, None, 0, 99))
        out = np.empty_like(array)
        _raise_status(_lib.alltoall(self._h, _ptr(array), _ptr(out), array.size // self.size,
                                    code), self.rank)
        return out

    def reduce_scatter(self, array, op="sum"):
        """The reduction of block rank (the first dimension cut into size
        equal blocks) of every rank's array."""
        err = _check_array(array, "array")
        if err is None:
            try:
                code = dtype_code(array.dtype)
                opc = op_code(op)
                if array.ndim == 0 or array.shape[0] % self.size:
                    raise ValueError("rondo.reduce_scatter: the first dimension must be a "
                                     "multiple of the comm size %d" % self.size)
            except (TypeError, ValueError) as e:
                err = e
        if err is not None:
            self._refuse(err, lambda: _lib.reduce_scatter(self._h, None, None, 0, 99, 0))
        out = np.empty((array.shape[0] // self.size,) + array.shape[1:], array.dtype)
        _raise_status(_lib.reduce_scatter(self._h, _ptr(array), _ptr(out), out.size, code, opc),
                      self.rank)
        return out

    # -- shared memory ---------------------------------------------------------------
    def shared_empty(self, shape, dtype=np.float32):
        """Collective: a new C-contiguous array (uninitialized) in memory
        that every rank of this rank's node can read (rondo_mem_alloc,
        docs/api.md "Shared memory"); shape and dtype may differ across
        ranks. On one node, reduce_scatter of arrays in one such
        allocation on every rank reads the peers' arrays in place. Free it
        with shared_free, collectively; neither the array nor a view of it
        may be used after that (its memory is unmapped), and destroy()
        frees what is left."""
        err = None
        try:
            dt = np.dtype(dtype)
            dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            dims = tuple(operator.index(d) for d in dims)  # integers only, never truncated
            if any(d < 0 for d in dims):
                raise ValueError("rondo.shared_empty: a negative dimension in %s" % (dims,))
            nbytes = math.prod(dims) * dt.itemsize
            if nbytes > sys.maxsize:
                raise ValueError("rondo.shared_empty: %s of %s is %d bytes, too many"
                                 % (dims, dt, nbytes))
        except (TypeError, ValueError) as e:
            err = e
        ptr = ctypes.c_void_p()
        if err is not None:  # the others' call fails too instead of waiting
            _lib.mem_alloc(self._h, 0, None)
            raise err
        _raise_status(_lib.mem_alloc(self._h, nbytes, ctypes.byref(ptr)), self.rank)
        raw = (ctypes.c_char * max(nbytes, 1)).from_address(ptr.value)
        return np.frombuffer(raw, np.uint8, nbytes).view(dt).reshape(dims)

    def shared_free(self, array):
        """Collective: frees the memory of an array shared_empty returned
        (the same one on every rank)."""
        ptr = array.__array_interface__["data"][0] if isinstance(array, np.ndarray) else 0
        _raise_status(_lib.mem_free(self._h, ptr or None), self.rank)

    # -- the rest ------------------------------------------------------------------
    def barrier(self):
        _raise_status(_lib.barrier(self._h), self.rank)

    def join(self):
        """This rank has no more requests (uneven data): it serves the
        others' all-reduces with zeros until every rank has joined. Returns
        the rank that joined last. Afterwards the ranks' counters of unnamed
        requests agree again (a rank that joined early made fewer calls)."""
        _reap(block=True)
        last = ctypes.c_int(-1)
        _raise_status(_lib.join(self._h, ctypes.byref(last)), self.rank)
        count = np.array([next(self._names)], np.int64)
        _raise_status(_lib.allreduce_algo(self._h, count.ctypes.data, count.ctypes.data, 1, 3,
                                          op_code("max"), 0), self.rank)
        self._names = itertools.count(int(count[0]))
        return last.value

    def broadcast_object(self, obj=None, root_rank=0):
        """root_rank's obj (pickled), on every rank. An object the root
        cannot pickle raises its pickling error there and RondoError
        (RONDO_ERR_PEER, naming the root) on the others: the size every
        rank receives first says -1 then."""
        data, err = b"", None
        if self.rank == root_rank:
            try:
                data = pickle.dumps(obj)
            except Exception as e:  # noqa: BLE001 - any pickling failure, alike
                err = e
        n = int(self.broadcast_(np.array([-1 if err is not None else len(data)], np.int64),
                                root_rank)[0])
        if err is not None:
            raise err
        if n < 0:
            raise RondoError("RONDO_ERR_PEER", "rondo.broadcast_object: the root, rank %d, "
                             "cannot pickle its object" % root_rank, self.rank)
        buf = np.frombuffer(data, np.uint8).copy() if self.rank == root_rank \
            else np.empty(n, np.uint8)
        self.broadcast_(buf, root_rank)
        return obj if self.rank == root_rank else pickle.loads(buf.tobytes())

    def allgather_object(self, obj):
        """Every rank's obj (pickled), as a list in rank order. An object a
        rank cannot pickle raises its pickling error there and RondoError
        (RONDO_ERR_PEER, naming the rank) on the others: the sizes gathered
        first say -1 for it."""
        try:
            data, err = np.frombuffer(pickle.dumps(obj), np.uint8), None
        except Exception as e:  # noqa: BLE001 - any pickling failure, alike
            data, err = np.zeros(0, np.uint8), e
        sizes = self.allgather(np.array([-1 if err is not None else data.size], np.int64))
        if err is not None:
            raise err
        bad = [r for r, n in enumerate(sizes) if n < 0]
        if bad:
            raise RondoError("RONDO_ERR_PEER", "rondo.allgather_object: rank %s cannot pickle "
                             "its object" % ", ".join(map(str, bad)), self.rank)
        flat = self.allgather(data)
        out, at = [], 0
        for n in sizes:
            out.append(pickle.loads(flat[at:at + int(n)].tobytes()))
            at += int(n)
        return out

def _w(name):
    method = getattr(Comm, name)

    def call(*args, **kwargs):
        if _world is None:
            world()  # raises: not initialized
        return method(_world, *args, **kwargs)
    call.__name__ = name
    call.__doc__ = method.__doc__
    return call


# the two hot calls forward by position, without _w's *args/**kwargs
def allreduce(array, op="sum", name=None, algorithm=None, prescale=1.0, postscale=1.0,
              dtype=None, out=None):
    return (_world or world()).allreduce(array, op, name, algorithm, prescale, postscale,
                                         dtype, out)


def allreduce_(array, op="sum", name=None, algorithm=None, prescale=1.0, postscale=1.0,
               dtype=None):
    return (_world or world()).allreduce_(array, op, name, algorithm, prescale, postscale,
                                          dtype)


allreduce.__doc__ = Comm.allreduce.__doc__
allreduce_.__doc__ = Comm.allreduce_.__doc__
allreduce_async = _w("allreduce_async")
grouped_allreduce = _w("grouped_allreduce")
broadcast = _w("broadcast")
broadcast_ = _w("broadcast_")
allgather = _w("allgather")
alltoall = _w("alltoall")
reduce_scatter = _w("reduce_scatter")
shared_empty = _w("shared_empty")
shared_free = _w("shared_free")
barrier = _w("barrier")
join = _w("join")
broadcast_object = _w("broadcast_object")
allgather_object = _w("allgather_object")
