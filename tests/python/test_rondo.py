"""rondo's Python API on NumPy arrays, under mpiexec at 1-3 ranks
(tests/python/launch): every function and dtype against closed-form
results, identical on every rank; the error mapping; async handles and the
lifetime of their buffers; join with uneven steps; sub-comms."""
import gc
import os

import numpy as np

import rondo
from mpitest import check, raises, run

rondo.init()
R, N = rondo.rank(), rondo.size()

DTYPES = [np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]
OPS = ["sum", "average", "min", "max", "product"]
COUNTS = sorted({0, 1, 2, 7, max(N - 1, 0), N + 1, 257, 1031, 100003})


def inputs(count, dtype, r):
    """Rank r's input: (i % 7) + r + 1, small enough for every dtype."""
    return ((np.arange(count) % 7) + r + 1).astype(dtype)


def expected(count, dtype, op):
    """The reduction over N ranks, computed independently in wide types."""
    base = np.arange(count) % 7
    terms = [(base + r + 1).astype(np.int64) for r in range(N)]
    dt = np.dtype(dtype)
    if op == "min":
        return np.minimum.reduce(terms).astype(dtype) if terms else base.astype(dtype)
    if op == "max":
        return np.maximum.reduce(terms).astype(dtype)
    if op == "product":
        if dt.kind == "f":
            return np.prod(np.stack(terms).astype(np.float64), axis=0).astype(dtype)
        return np.prod(np.stack(terms).astype(dtype), axis=0, dtype=dtype)  # wraps
    s = np.sum(np.stack(terms), axis=0)
    if op == "sum":
        return s.astype(dtype)
    if dt.kind == "f":  # the sum divided by N, in the compute type
        ct = np.float64 if dt == np.float64 else np.float32
        return (s.astype(ct) / ct(N)).astype(dtype)
    wrapped = s.astype(dtype).astype(np.int64)
    return (np.trunc(wrapped / N)).astype(dtype)


def same_everywhere(a):
    """Whether every rank holds the same bytes."""
    digests = rondo.allgather_object(a.tobytes())
    return all(d == digests[0] for d in digests)


def test_basics():
    check(rondo.is_initialized(), "initialized")
    # which path the common all-reduce takes: the launcher expects rondo/_fast
    # where the build made it; RONDO_PYTHON_FAST=0 must turn it off
    if os.environ.get("RONDO_EXPECT_FAST") == "1":
        check(rondo._fast is not None, "rondo._fast loaded (the build made it)")
    if os.environ.get("RONDO_PYTHON_FAST") == "0":
        check(rondo._fast is None, "RONDO_PYTHON_FAST=0: no rondo._fast")
    check(0 <= R < N, "rank %d of %d", R, N)
    check(0 <= rondo.local_rank() < rondo.local_size() <= N, "local rank")
    w = rondo.world()
    check(0 <= w.node_id < w.nodes, "node_id %d of %d nodes", w.node_id, w.nodes)
    check(rondo.version().count(".") == 2, "version %s", rondo.version())
    check("node" in rondo.world().topology(), "topology line")
    check("choice" in rondo.world().explain(1 << 20), "explain")


def test_allreduce_every_dtype_op_count():
    for dt in DTYPES:
        for op in OPS:
            for count in COUNTS:
                if count > 1031 and (op != "sum" or dt not in (np.float32, np.int64)):
                    continue
                x = inputs(count, dt, R)
                want = expected(count, dt, op)
                got = rondo.allreduce(x, op=op)
                ok = got.dtype == np.dtype(dt) and got.shape == x.shape and \
                    np.array_equal(got, want)
                check(ok, "allreduce %s %s count %d: got %s want %s", np.dtype(dt).name, op,
                      count, got[:8], want[:8])
                check(np.array_equal(x, inputs(count, dt, R)), "input untouched")
                if count == 7:
                    y = x.copy()
                    r = rondo.allreduce_(y, op=op)
                    check(r is y and np.array_equal(y, want), "in place %s %s",
                          np.dtype(dt).name, op)
                    check(same_everywhere(got), "identical bytes")


def test_allreduce_shapes_algorithms_scales():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) + R
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4) * N + N * (N - 1) / 2
    check(np.array_equal(rondo.allreduce(x), want), "3-d array")
    algos = ["auto", "mpi", "ring", "recursive_doubling", "rabenseifner"]
    if rondo.world().nodes == 1:
        algos.append("shm")
    for a in algos:
        check(np.array_equal(rondo.allreduce(x, algorithm=a), want), "algorithm %s", a)
    out = np.empty_like(x)
    check(rondo.allreduce(x, out=out) is out and np.array_equal(out, want), "out=")
    raises(ValueError, rondo.allreduce, x, out=np.empty(3, np.float32))
    got = rondo.allreduce(x, prescale=2.0, postscale=0.5)
    check(np.array_equal(got, want), "prescale 2, postscale 0.5: %s", got.ravel()[:4])
    got = rondo.allreduce(np.ones(5, np.float64), postscale=0.25)
    check(np.array_equal(got, np.full(5, N * 0.25)), "postscale")
    s = rondo.allreduce(np.array(R + 1.0))
    check(s.shape == () and s == N * (N + 1) / 2, "0-d array")


def test_bfloat16():
    f = np.array([1.0, 2.0, -3.0, 0.5, 256.0], np.float32) * (R + 1)
    bf = (f.view(np.uint32) >> 16).astype(np.uint16)
    got = rondo.allreduce(bf, dtype="bfloat16")
    back = (got.astype(np.uint32) << 16).view(np.float32)
    want = np.array([1.0, 2.0, -3.0, 0.5, 256.0], np.float32) * (N * (N + 1) / 2)
    check(np.array_equal(back, want), "bfloat16 sum: %s want %s", back, want)
    raises(TypeError, rondo.allreduce, np.zeros(3, np.float32), dtype="bfloat16")


def test_bad_arrays():
    e = raises(ValueError, rondo.allreduce, np.zeros((4, 4), np.float32)[:, 1])
    check(e is not None and "contiguous" in str(e), "says contiguous: %s", e)
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    check(np.array_equal(rondo.allreduce(ro), np.zeros(4, np.float32)), "read-only input ok")
    e = raises(ValueError, rondo.allreduce_, ro)
    check(e is not None and "read-only" in str(e), "says read-only: %s", e)
    e = raises(TypeError, rondo.allreduce, np.zeros(4, np.complex64))
    check(e is not None and "complex64" in str(e), "names the dtype: %s", e)
    raises(TypeError, rondo.allreduce, [1, 2, 3])
    raises(ValueError, rondo.allreduce, np.zeros(4, np.float32), op="median")
    raises(ValueError, rondo.allreduce, np.zeros(4, np.float32), algorithm="magic")
    raises(ValueError, rondo.allreduce, np.zeros(4, np.float32), op=["sum"])
    raises(ValueError, rondo.allreduce_, np.zeros(4, np.float32), op=["sum"])
    # out= that the fast path must hand to the careful one
    x = np.ones(4, np.float32)
    e = raises(ValueError, rondo.allreduce, ro, out=ro)
    check(e is not None and "read-only" in str(e), "read-only out=: %s", e)
    raises(ValueError, rondo.allreduce, x, out=np.empty(4, np.float64))
    raises(ValueError, rondo.allreduce, x, out=np.empty((2, 2), np.float32))
    raises(ValueError, rondo.allreduce, x, out=np.empty(8, np.float32)[::2])
    raises(TypeError, rondo.allreduce, x, out=[0.0] * 4)
    # a byte-swapped float32 is not rondo's float32: refused, never reduced as one
    e = raises(TypeError, rondo.allreduce, np.ones(4, np.dtype(">f4")))
    check(e is not None, "big-endian float32 refused")
    check(np.array_equal(rondo.allreduce(x), np.full(4, N, np.float32)),
          "a valid call after the refusals")


def test_errors_reach_every_rank():
    if N < 2:
        return
    # One rank's bad array: ValueError there, RondoError(PEER) elsewhere.
    x = np.zeros((4, 4), np.float32)
    if R == 1:
        raises(ValueError, rondo.allreduce, x[:, 0])
    else:
        e = raises(rondo.RondoError, rondo.allreduce, x[:, 0].copy())
        check(e is not None and e.status == "RONDO_ERR_PEER" and e.rank == R,
              "PEER with the rank: %r", e)
        check(e is not None and "rank 1" in e.message, "names rank 1: %s", e and e.message)
    # Different counts: RONDO_ERR_MISMATCH on every rank.
    e = raises(rondo.RondoError, rondo.allreduce, np.zeros(3 + R, np.float32))
    check(e is not None and e.status == "RONDO_ERR_MISMATCH", "mismatch: %r", e)
    check(e is not None and "count" in e.message, "says count: %s", e and e.message)
    # Still usable afterwards.
    check(np.array_equal(rondo.allreduce(np.ones(3, np.int32)), np.full(3, N, np.int32)),
          "usable after errors")


def test_async_handles():
    x = np.arange(10, dtype=np.float32) + R
    h = rondo.allreduce_async(x, name="async.one")
    got = h.wait()
    want = np.arange(10, dtype=np.float32) * N + N * (N - 1) / 2
    check(np.array_equal(got, want), "async result %s", got)
    check(h.done(), "done after wait")
    check(h.wait() is got, "wait twice gives the same result")
    # in place through out=
    y = x.copy()
    h = rondo.allreduce_async(y, name="async.inplace", out=y, op="max")
    check(h.wait() is y and np.array_equal(y, np.arange(10, dtype=np.float32) + N - 1),
          "in place async max")
    # unnamed requests, many at once (fused by the engine)
    hs = [rondo.allreduce_async(np.full(100, i + R, np.int64)) for i in range(20)]
    for i, hh in enumerate(hs):
        check(np.array_equal(hh.wait(), np.full(100, N * i + N * (N - 1) // 2, np.int64)),
              "unnamed request %d", i)
    # a name in flight twice on a rank fails at submission: rank 0 submits
    # while the others have not (they wait at the barrier), so it is still
    # in flight there
    if N > 1:
        if R == 0:
            h1 = rondo.allreduce_async(x, name="async.dup")
            e = raises(rondo.RondoError, rondo.allreduce_async, x, name="async.dup")
            check(e is not None and e.status == "RONDO_ERR_DUPLICATE_NAME", "duplicate: %r", e)
            rondo.barrier()
        else:
            rondo.barrier()
            h1 = rondo.allreduce_async(x, name="async.dup")
        h1.wait()
    # grouped
    res = rondo.grouped_allreduce([np.full(3, R, np.int32), np.full(5, 1.0, np.float64)])
    check(np.array_equal(res[0], np.full(3, N * (N - 1) // 2, np.int32)) and
          np.array_equal(res[1], np.full(5, float(N))), "grouped allreduce")


def test_buffer_lifetime():
    # The caller drops its arrays before the request completes.
    h = rondo.allreduce_async(np.full(1 << 16, R + 1, np.float64), name="life.input")
    gc.collect()
    got = h.wait()
    check(np.array_equal(got, np.full(1 << 16, N * (N + 1) / 2)), "input kept alive")
    # ... and the handle too: shutdown or a later submission releases it.
    rondo.allreduce_async(np.full(1 << 16, 1.0), name="life.dropped")
    gc.collect()
    check(np.array_equal(rondo.allreduce_async(np.ones(4), name="life.after").wait(),
                         np.full(4, float(N))), "works after a dropped handle")


def test_mismatch_async():
    if N < 2:
        return
    h = rondo.allreduce_async(np.zeros(4 + R, np.float32), name="async.mismatch")
    e = raises(rondo.RondoError, h.wait)
    check(e is not None and e.status == "RONDO_ERR_MISMATCH", "async mismatch: %r", e)


def test_join_uneven_steps():
    # rank r submits r + 1 steps, then joins; joined ranks contribute zeros.
    for k in range(R + 1):
        got = rondo.allreduce_async(np.full(6, R + 1, np.int32), name="join.step%d" % k).wait()
        want = sum(r + 1 for r in range(N) if r >= k)
        check(np.array_equal(got, np.full(6, want, np.int32)), "step %d: %s want %d", k, got,
              want)
    last = rondo.join()
    check(0 <= last < N, "join returns a rank: %d", last)
    check(len(set(rondo.allgather_object(last))) == 1, "every rank names the same last rank")


def test_broadcast():
    for root in range(N):
        x = np.arange(9, dtype=np.int64) * (R + 1)
        got = rondo.broadcast(x, root_rank=root)
        check(np.array_equal(got, np.arange(9) * (root + 1)), "broadcast from %d", root)
        check(np.array_equal(x, np.arange(9) * (R + 1)), "broadcast leaves the input")
        y = np.full((2, 2), R, np.float16)
        check(rondo.broadcast_(y, root) is y and np.array_equal(y, np.full((2, 2), root,
                                                                           np.float16)),
              "broadcast_ in place")
    if N > 1:
        e = raises(rondo.RondoError, rondo.broadcast, np.zeros(3), root_rank=N)
        check(e is not None and e.status == "RONDO_ERR_INVALID_ROOT", "bad root: %r", e)


def test_allgather():
    x = np.full((R + 1, 3), R, np.int32)
    got = rondo.allgather(x)
    want = np.concatenate([np.full((r + 1, 3), r, np.int32) for r in range(N)])
    check(np.array_equal(got, want), "allgather of uneven first dims")
    got = rondo.allgather(np.array([R * 1.5]))
    check(np.array_equal(got, np.arange(N) * 1.5), "allgather 1-d")
    if N > 1:
        e = raises(ValueError, rondo.allgather, np.zeros((2, 2 + R), np.float32))
        check(e is not None and "differ" in str(e), "trailing dims differ: %s", e)


def test_alltoall_reduce_scatter():
    x = np.arange(2 * N, dtype=np.int64) + 100 * R
    got = rondo.alltoall(x)
    want = np.concatenate([np.arange(2 * R, 2 * R + 2) + 100 * r for r in range(N)])
    check(np.array_equal(got, want), "alltoall %s want %s", got, want)
    raises(ValueError, rondo.alltoall, np.zeros(2 * N + 1)) if N > 1 else None
    x = np.arange(3 * N, dtype=np.float32) + R
    got = rondo.reduce_scatter(x)
    want = (np.arange(3 * R, 3 * R + 3, dtype=np.float32) * N + N * (N - 1) / 2)
    check(np.array_equal(got, want), "reduce_scatter %s want %s", got, want)
    got = rondo.reduce_scatter(x, op="min")
    check(np.array_equal(got, np.arange(3 * R, 3 * R + 3, dtype=np.float32)), "rs min")


def test_shared_memory():
    """shared_empty's arrays: reduce_scatter reads them in place on one
    node (over 2 KiB: shm.c), identical results elsewhere; the refusals."""
    x = rondo.shared_empty((3 * N, 700), np.float32)
    check(x.shape == (3 * N, 700) and x.dtype == np.float32 and x.flags.c_contiguous
          and x.flags.writeable, "a writable C-contiguous array %s %s", x.shape, x.dtype)
    base = np.arange(x.size, dtype=np.float32).reshape(x.shape) % 251
    for call in range(2):  # the comm's first shm call agrees first; the second reads in place
        x[...] = base + R + call
        got = rondo.reduce_scatter(x)
        want = base[3 * R:3 * R + 3] * N + N * (N - 1) / 2 + N * call
        check(np.array_equal(got, want), "reduce_scatter of shared input, call %d", call)
    small = rondo.shared_empty(7, np.int64)  # an int: one dimension
    check(small.shape == (7,) and small.dtype == np.int64, "shape 7: %s", small.shape)
    e = raises(rondo.RondoError, rondo.shared_free, x[1:])
    check(e is not None and e.status == "RONDO_ERR_INVALID_ARG", "a view: %r", e)
    e = raises(ValueError, rondo.shared_empty, (2, -1))
    check(e is not None and "negative" in str(e), "negative shape: %s", e)
    raises(TypeError, rondo.shared_empty, (2.5,))  # never truncated
    rondo.shared_free(None)  # nothing, on every rank
    rondo.shared_free(small)
    rondo.shared_free(x)


def test_objects_barrier():
    obj = {"rank": R, "list": list(range(R))}
    got = rondo.broadcast_object(obj if R == 0 else None, root_rank=0)
    check(got == {"rank": 0, "list": []}, "broadcast_object %r", got)
    got = rondo.allgather_object(("r", R))
    check(got == [("r", r) for r in range(N)], "allgather_object %r", got)
    rondo.barrier()


def test_split():
    sub = rondo.world().split(R % 2, key=-R)
    members = [r for r in range(N) if r % 2 == R % 2][::-1]
    check(sub is not None and sub.size == len(members) and members[sub.rank] == R,
          "split comm %r", sub)
    got = sub.allreduce(np.array([R + 1], np.int64))
    check(got[0] == sum(m + 1 for m in members), "allreduce on the split comm")
    sub.destroy()
    none = rondo.world().split(-1 if R == 0 else 0)
    check((none is None) == (R == 0), "negative color gives None")
    if none is not None:
        none.destroy()


run("test_rondo", [test_basics, test_allreduce_every_dtype_op_count,
                   test_allreduce_shapes_algorithms_scales, test_bfloat16, test_bad_arrays,
                   test_errors_reach_every_rank, test_async_handles, test_buffer_lifetime,
                   test_mismatch_async, test_join_uneven_steps, test_broadcast, test_allgather,
                   test_alltoall_reduce_scatter, test_shared_memory, test_objects_barrier, test_split])
