"""torch.distributed's "rondo" backend under mpiexec at 1-3 ranks
(tests/python/launch):

  - start-up with nothing set (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    unset: importing rondo.torch sets them from MPI), with torchrun's
    variables set, with rank= and world_size=, with init_method="tcp://..."; a
    world size or rank that contradicts MPI fails on every rank;
  - every collective against closed forms: all_reduce (every dtype and op,
    bool and complex), broadcast, all_gather, all_gather_into_tensor,
    reduce_scatter, reduce_scatter_tensor, all_to_all, all_to_all_single
    (even and uneven splits, zero rows), reduce, gather, scatter, barrier,
    all_reduce_coalesced, the object collectives; in place where torch
    says so; strided views (only the view's elements change); async work:
    wait, is_completed, get_future and then(), a Work dropped unwaited,
    more calls in flight than the group has request names; the common
    all_reduce, reduce_scatter_tensor and all_gather_into_tensor through
    rondo._fast and through ctypes (a build without it);
  - point-to-point: send/recv, isend/irecv, batch_isend_irecv, recv from
    any source (the sender returned), tags;
  - new_group subsets, made by their members alone;
  - CUDA tensors where torch has CUDA (the device machine): every dtype
    and op through rondo's device path, a call after work on a side
    stream, data movement, DDP on a CUDA model against gloo;
  - DDP against DDP on a gloo group of the same ranks, same data: equal
    parameters after some steps (bit for bit at 1-2 ranks; 3-4 ranks sum
    in another order, within 1e-6 relative), with no_sync, uneven inputs
    (join), find_unused_parameters, static_graph, gradient_as_bucket_view,
    the fp16 and PowerSGD comm hooks, ZeroRedundancyOptimizer;
  - a group's timeout=: a barrier one rank comes late to fails on every
    rank after the timeout, naming the late rank; the group works after;
  - errors on every rank: a dtype, op, root or split one rank refuses
    raises there (ValueError/TypeError) and RuntimeError on the others
    naming it; shapes, dtypes and ops that differ raise RuntimeError on
    every rank; no test waits on another rank's error (a hang fails the
    run at the launcher's timeout).
"""
import datetime
import math
import os
import threading

import torch
import torch.distributed as dist
import torch.nn as nn
# imported before any group exists: the module captures the world group in a
# default argument when imported while one does, which keeps that group alive
from torch.distributed.optim import ZeroRedundancyOptimizer

# mpiexec sets none of torch's variables; the import fills them in from MPI
for var in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
    os.environ.pop(var, None)
import rondo  # noqa: E402
import rondo.torch  # noqa: E402,F401 - registers the backend
import rondo.torch.distributed as rdist  # noqa: E402
from rondo.torch.distributed import rendezvous  # noqa: E402
import mpitest  # noqa: E402
from mpitest import check, raises, run  # noqa: E402

torch.set_num_threads(1)
rondo.init()
R, N = rondo.rank(), rondo.size()
# test_start_up's groups wait at most this long for the others: a rendezvous
# that cannot complete fails the test with torch's own message, not the
# launcher's timeout.
START = datetime.timedelta(seconds=60)


def close(a, b, tol=0.0):
    return a.shape == b.shape and bool(((a.double() - b.double()).abs() <= tol).all())


def test_start_up():
    # nothing was set: importing rondo.torch filled in torch's variables from MPI
    check(os.environ.get("RANK") == str(R) and os.environ.get("WORLD_SIZE") == str(N)
          and os.environ.get("MASTER_ADDR") and os.environ.get("MASTER_PORT"),
          "variables after import: %s", {k: os.environ.get(k) for k in
                                          ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")})
    ports = rondo.world().allgather_object(os.environ.get("MASTER_PORT"))
    check(len(set(ports)) == 1, "MASTER_PORT differs across ranks: %s", ports)
    dist.init_process_group("rondo", timeout=START)
    check(dist.is_initialized() and dist.get_backend() == "rondo", "backend %s",
          dist.get_backend())
    check(dist.get_rank() == R and dist.get_world_size() == N, "rank %d of %d",
          dist.get_rank(), dist.get_world_size())
    _destroy()
    # what torchrun sets: used as given (rank 0 shares its port over MPI)
    held = _new_master_port()
    os.environ.update(RANK=str(R), WORLD_SIZE=str(N), MASTER_ADDR="127.0.0.1")
    dist.init_process_group("rondo", timeout=START)
    _let_go(held)
    t = torch.ones(3)
    dist.all_reduce(t)
    check(torch.equal(t, torch.full((3,), float(N))), "all_reduce after a torchrun start")
    _destroy()
    # rank= and world_size= given. Each start-up in this process gets a port
    # of its own: torch's env:// store of the last group may still be
    # closing on rank 0 while another rank connects (gloo's too).
    held = _new_master_port()
    dist.init_process_group("rondo", rank=R, world_size=N, timeout=START)
    _let_go(held)
    check(dist.get_rank() == R, "rank= given")
    _destroy()
    # init_method tcp:// (torch's own rendezvous)
    held, port = _reserved_port()
    dist.init_process_group("rondo", init_method="tcp://127.0.0.1:%d" % port, rank=R,
                            world_size=N, timeout=START)
    _let_go(held)
    t = torch.ones(2)
    dist.all_reduce(t)
    check(torch.equal(t, torch.full((2,), float(N))), "all_reduce after a tcp:// start")
    _destroy()
    # contradicting MPI: every rank raises, nobody waits. A store of each
    # rank's own: torch's env:// would wait for a world that never comes
    # before the backend could say so, as it does for gloo.
    e = raises(ValueError, dist.init_process_group, "rondo", store=dist.HashStore(), rank=R,
               world_size=N + 1)
    check(e is not None and "MPI" in str(e), "a world size that is not MPI's: %s", e)
    if N > 1:
        e = raises(ValueError, dist.init_process_group, "rondo", store=dist.HashStore(),
                   rank=(R + 1) % N, world_size=N)
        check(e is not None and "MPI rank" in str(e), "ranks that are not MPI's: %s", e)
    # the group the other tests use keeps torch's default timeout (long)
    held = _new_master_port()
    dist.init_process_group("rondo")
    _let_go(held)


def _destroy():
    # Every rank is past init_process_group's store barrier before rank 0,
    # whose store serves it, destroys the group (torch's own race, gloo's
    # too: a rank polling the store of a group rank 0 just destroyed gets
    # "Broken pipe").
    dist.barrier()
    dist.destroy_process_group()


def _new_master_port():
    """A new MASTER_PORT on every rank; returns what holds it on rank 0."""
    held, port = _reserved_port()
    os.environ["MASTER_PORT"] = str(port)
    return held


def _reserved_port():
    """A port rank 0 holds (rendezvous.reserve_port: no MPI connection can
    take it before torch's store binds it) and every rank knows: (the
    holding socket on rank 0 else None, port)."""
    held, port = rendezvous.reserve_port() if R == 0 else (None, None)
    return held, rondo.world().broadcast_object(port, 0)


def _let_go(held):
    if held is not None:
        held.close()


DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64]
OPS = [(dist.ReduceOp.SUM, "sum"), (dist.ReduceOp.PRODUCT, "prod"), (dist.ReduceOp.MIN, "min"),
       (dist.ReduceOp.MAX, "max"), (dist.ReduceOp.AVG, "avg")]


def _values(dt, count, rank):
    """Small values every dtype holds exactly, products included."""
    base = torch.arange(count) % 3
    if dt == torch.bool:
        return ((base + rank) % 2).bool()
    return (base + (rank % 2)).to(dt)


def _reduced(dt, op, count):
    vals = [_values(dt, count, r).double() for r in range(N)]
    if op == "sum":
        out = sum(vals)
    elif op == "prod":
        out = vals[0]
        for v in vals[1:]:
            out = out * v
    elif op == "min":
        out = torch.stack(vals).min(0).values
    elif op == "max":
        out = torch.stack(vals).max(0).values
    else:
        out = sum(vals) / N
        if not dt.is_floating_point:
            out = out.trunc()
    return out.to(dt)


def test_all_reduce_every_dtype_and_op():
    for dt in DTYPES:
        for op, name in OPS:
            for count in (0, 1, 7, 1000):
                t = _values(dt, count, R)
                want = _reduced(dt, name, count)
                dist.all_reduce(t, op=op)
                check(torch.equal(t, want), "all_reduce %s %s count %d: %s, want %s", dt, name,
                      count, t[:6].tolist(), want[:6].tolist())
    # bool: logical or / and
    for op, fn in ((dist.ReduceOp.SUM, any), (dist.ReduceOp.MAX, any), (dist.ReduceOp.BOR, any),
                   (dist.ReduceOp.PRODUCT, all), (dist.ReduceOp.MIN, all),
                   (dist.ReduceOp.BAND, all)):
        t = _values(torch.bool, 6, R)
        dist.all_reduce(t, op=op)
        want = torch.tensor([fn(bool(_values(torch.bool, 6, r)[i]) for r in range(N))
                             for i in range(6)])
        check(torch.equal(t, want), "bool all_reduce %s", op)
    # complex: sum of both parts
    c = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64) * (R + 1)
    dist.all_reduce(c)
    check(torch.equal(c, torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64) *
                      (N * (N + 1) // 2)), "complex all_reduce %s", c)
    # a non-contiguous tensor, in place
    m = torch.ones(4, 6)[:, ::2] * (R + 1)
    dist.all_reduce(m)
    check(torch.equal(m, torch.full((4, 3), float(N * (N + 1) // 2))), "non-contiguous")


def test_async_work_and_futures():
    t = torch.ones(5) * R
    w = dist.all_reduce(t, async_op=True)
    check(w.wait() is not None and w.is_completed(), "wait, is_completed")
    check(torch.equal(t, torch.full((5,), float(N * (N - 1) // 2))), "async all_reduce")
    fut = dist.all_reduce(torch.ones(3), async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2)
    check(torch.equal(doubled.wait(), torch.full((3,), 2.0 * N)), "get_future().then()")
    # many in flight at once, waited in reverse order
    ts = [torch.full((k + 1,), float(R + k)) for k in range(8)]
    works = [dist.all_reduce(x, async_op=True) for x in ts]
    for w in reversed(works):
        w.wait()
    check(all(torch.equal(ts[k], torch.full((k + 1,), float(N * (N - 1) // 2 + N * k)))
              for k in range(8)), "8 async all_reduces")
    # more calls of one kind in flight than the group has names (60): the
    # names repeat, the later calls wait for the earlier ones of that name
    ts = [torch.full((3,), float(R + k)) for k in range(150)]
    works = [dist.all_reduce(x, async_op=True) for x in ts]
    for w in works:
        w.wait()
    check(all(torch.equal(ts[k], torch.full((3,), float(N * (N - 1) // 2 + N * k)))
              for k in range(150)), "150 async all_reduces of one shape")
    # a Work dropped without a wait still completes its call (as on gloo),
    # and one whose future is asked for after the wait has it done
    t = torch.full((4, 2), float(R))[:, 0]  # not contiguous: copied back at completion
    dist.all_reduce(t, async_op=True)  # dropped at once
    w = dist.all_reduce(torch.ones(1), async_op=True)
    w.wait()
    check(w.get_future().done() and w.is_completed(), "future of a waited Work")
    for _ in range(200):
        if torch.equal(t, torch.full((4,), float(N * (N - 1) // 2))):
            break
        threading.Event().wait(0.01)
    check(torch.equal(t, torch.full((4,), float(N * (N - 1) // 2))), "dropped Work: %s", t)
    # blocking on some ranks, async_op=True on others: the same call
    for k in range(3):
        t = torch.full((4,), float(R + k))
        w = dist.all_reduce(t, async_op=(R + k) % 2 == 0)
        if w is not None:
            w.wait()
        check(torch.equal(t, torch.full((4,), float(N * (N - 1) // 2 + N * k))),
              "blocking on some ranks, async on others: %s", t)
    # is_completed() does not wait
    w = dist.all_reduce(torch.ones(2), async_op=True)
    while not w.is_completed():
        threading.Event().wait(0.001)
    check(w.wait(), "is_completed, then wait")


def test_data_movement():
    for dt in (torch.float32, torch.int64, torch.bool, torch.complex128, torch.float16):
        b = _values(dt, 5, R) if dt != torch.complex128 else torch.full((5,), 1j * R,
                                                                          dtype=dt)
        dist.broadcast(b, N - 1)
        want = _values(dt, 5, N - 1) if dt != torch.complex128 else torch.full(
            (5,), 1j * (N - 1), dtype=dt)
        check(torch.equal(b, want), "broadcast %s", dt)
        outs = [torch.zeros(3, dtype=dt) for _ in range(N)]
        dist.all_gather(outs, torch.full((3,), R, dtype=dt) if dt != torch.bool else
                        torch.full((3,), bool(R % 2)))
        check(all(torch.equal(o, torch.full((3,), r, dtype=dt) if dt != torch.bool else
                              torch.full((3,), bool(r % 2))) for r, o in enumerate(outs)),
              "all_gather %s", dt)
    big = torch.empty(N * 4)
    dist._all_gather_base(big, torch.arange(4.0) + 10 * R)
    check(torch.equal(big, torch.cat([torch.arange(4.0) + 10 * r for r in range(N)])),
          "all_gather_into_tensor")
    # reduce-scatter: list form and tensor form
    out = torch.zeros(2)
    dist.reduce_scatter(out, [torch.full((2,), float(R + i)) for i in range(N)])
    check(torch.equal(out, torch.full((2,), float(N * (N - 1) // 2 + N * R))), "reduce_scatter")
    whole = torch.arange(3.0 * N) + R
    out = torch.zeros(3)
    dist._reduce_scatter_base(out, whole, op=dist.ReduceOp.MAX)
    check(torch.equal(out, torch.arange(3.0 * R, 3.0 * R + 3) + N - 1),
          "reduce_scatter_tensor MAX")
    # in place: the output is this rank's chunk of the input
    whole = torch.ones(2 * N) * (R + 1)
    chunk = whole[2 * R:2 * R + 2]
    dist._reduce_scatter_base(chunk, whole)
    check(torch.equal(chunk, torch.full((2,), float(N * (N + 1) // 2))),
          "reduce_scatter_tensor in place")
    # reduce: the root gets it, the others keep theirs
    t = torch.full((4,), float(R + 1))
    dist.reduce(t, dst=N - 1)
    check(torch.equal(t, torch.full((4,), float(N * (N + 1) // 2) if R == N - 1 else
                                    float(R + 1))), "reduce")
    # every dtype and op the backend takes, on root 0, a strided root tensor
    for dt, op, want in ((torch.int64, dist.ReduceOp.MIN, lambda: 1),
                         (torch.float64, dist.ReduceOp.MAX, lambda: N),
                         (torch.int32, dist.ReduceOp.PRODUCT, lambda: math.factorial(N)),
                         (torch.float32, dist.ReduceOp.AVG, lambda: (N + 1) / 2)):
        base = torch.zeros(5, 2, dtype=dt)
        base[:, 0] = R + 1
        t = base[:, 0]  # strided: every other element
        dist.reduce(t, dst=0, op=op)
        check(torch.equal(t, torch.full((5,), want(), dtype=dt) if R == 0 else
                          torch.full((5,), R + 1, dtype=dt)) and bool((base[:, 1] == 0).all()),
              "reduce %s %s: %s" % (dt, op, t.tolist()))
    z = torch.full((3,), complex(R, -R), dtype=torch.complex64)
    dist.reduce(z, dst=N - 1)
    s = N * (N - 1) // 2
    check(torch.equal(z, torch.full((3,), complex(s, -s), dtype=torch.complex64))
          if R == N - 1 else torch.equal(z, torch.full((3,), complex(R, -R),
                                                       dtype=torch.complex64)),
          "reduce complex64")
    b = torch.tensor([R == 0, True, False])
    dist.reduce(b, dst=0, op=dist.ReduceOp.BOR)
    check(R != 0 or b.tolist() == [True, True, False], "reduce bool BOR: %s" % b.tolist())
    # gather / scatter
    got = [torch.zeros(2, dtype=torch.int32) for _ in range(N)] if R == 0 else None
    dist.gather(torch.tensor([R, -R], dtype=torch.int32), got, dst=0)
    if R == 0:
        check(all(torch.equal(g, torch.tensor([r, -r], dtype=torch.int32))
                  for r, g in enumerate(got)), "gather")
    mine = torch.zeros(3)
    parts = [torch.full((3,), float(10 * r)) for r in range(N)] if R == N - 1 else None
    dist.scatter(mine, parts, src=N - 1)
    check(torch.equal(mine, torch.full((3,), float(10 * R))), "scatter")
    dist.barrier()
    ts = [torch.ones(2) * R, torch.ones(3, dtype=torch.float32) * 2]
    dist.all_reduce_coalesced(ts)
    check(torch.equal(ts[0], torch.full((2,), float(N * (N - 1) // 2))) and
          torch.equal(ts[1], torch.full((3,), 2.0 * N)), "all_reduce_coalesced")


class _Counted:
    """rondo._fast or rondo._lib, counting the engine submissions made
    through it (the attributes named *_async)."""

    def __init__(self, inner):
        self.inner, self.calls = inner, {}

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if not name.endswith("_async"):
            return attr

        def counted(*args):
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*args)
        return counted


def test_common_calls_through_ctypes():
    """The common all_reduce, reduce_scatter_tensor and all_gather_into_tensor
    submit through rondo._fast where the build made it (the launcher says
    so: RONDO_EXPECT_FAST); without it (a Python without headers, an older
    build) the same requests go through ctypes. Both paths, each checked to
    be the one taken, against closed forms; dtypes that differ across
    ranks fail on every rank either way."""
    backend = rdist.backend
    fast, lib = backend._fast, backend._lib
    if os.environ.get("RONDO_EXPECT_FAST") == "1":
        check(fast is not None, "the backend uses rondo._fast (the build made it)")
    paths = [("ctypes", None, _Counted(lib))]
    if fast is not None:
        paths.append(("rondo._fast", _Counted(fast), lib))
    for label, path_fast, path_lib in paths:
        backend._fast, backend._lib = path_fast, path_lib
        try:
            t = torch.full((7,), float(R + 1))
            dist.all_reduce(t)
            check(torch.equal(t, torch.full((7,), float(N * (N + 1) // 2))), "%s: all_reduce", label)
            whole = torch.arange(5.0 * N) * (R + 1)
            out = torch.zeros(5)
            dist._reduce_scatter_base(out, whole)
            check(torch.equal(out, (torch.arange(5.0 * R, 5.0 * R + 5)) * (N * (N + 1) // 2)),
                  "%s: reduce_scatter_tensor", label)
            chunk = whole[5 * R:5 * R + 5]
            dist._reduce_scatter_base(chunk, whole, op=dist.ReduceOp.AVG)
            check(close(chunk, torch.arange(5.0 * R, 5.0 * R + 5) * (N + 1) / 2, 1e-5),
                  "%s: reduce_scatter_tensor AVG in place", label)
            big = torch.zeros(3 * N, dtype=torch.int64)
            dist.all_gather_into_tensor(big, torch.arange(3) + 100 * R)
            check(torch.equal(big, torch.cat([torch.arange(3) + 100 * r for r in range(N)])),
                  "%s: all_gather_into_tensor", label)
            empty = torch.zeros(0)
            dist._reduce_scatter_base(empty, torch.zeros(0))
            dist.all_gather_into_tensor(empty, torch.zeros(0))
            if N > 1:  # dtypes that differ across ranks: every rank fails
                odd = torch.zeros(N, dtype=torch.float64 if R == 0 else torch.float32)
                raises(RuntimeError, dist._reduce_scatter_base, odd[R:R + 1], odd)
                raises(RuntimeError, dist.all_gather_into_tensor, odd, odd[R:R + 1])
            # each call went the path under test
            calls = (path_fast or path_lib).calls
            check(calls.get("allreduce_async", 0) >= 1 and calls.get("reduce_scatter_async", 0) >= 3
                  and calls.get("allgather_into_async", 0) >= 2,
                  "%s: the calls took that path: %s", label, calls)
        finally:
            backend._fast, backend._lib = fast, lib


def test_all_to_all():
    # even: N rows of 2 per rank
    x = torch.arange(2.0 * N).reshape(N, 2) + 100 * R
    out = torch.empty(N, 2)
    dist.all_to_all_single(out, x)
    want = torch.stack([torch.arange(2.0 * R, 2.0 * R + 2) + 100 * r for r in range(N)])
    check(torch.equal(out, want), "all_to_all_single even")
    # uneven: rank r sends j+1 rows to rank j (one value each: 10*r + j), zero rows where
    # j + 1 + r is a multiple of 3
    send = [0 if (j + 1 + R) % 3 == 0 else j + 1 for j in range(N)]
    recv = [0 if (R + 1 + r) % 3 == 0 else R + 1 for r in range(N)]
    x = torch.cat([torch.full((s,), float(10 * R + j)) for j, s in enumerate(send)])
    out = torch.empty(sum(recv))
    dist.all_to_all_single(out, x, output_split_sizes=recv, input_split_sizes=send)
    want = torch.cat([torch.full((n,), float(10 * r + R)) for r, n in enumerate(recv)])
    check(torch.equal(out, want), "all_to_all_single uneven: %s", out.tolist())
    outs = [torch.empty(R + 1, dtype=torch.int64) for _ in range(N)]
    dist.all_to_all(outs, [torch.full((j + 1,), R * 10 + j, dtype=torch.int64)
                           for j in range(N)])
    check(all(torch.equal(o, torch.full((R + 1,), r * 10 + R, dtype=torch.int64))
              for r, o in enumerate(outs)), "all_to_all lists")


def _strided(values):
    """A view of every other element of a (n, 2) tensor whose second column
    is a sentinel, -7: what lands outside the view shows there."""
    whole = torch.full((values.numel(), 2), -7, dtype=values.dtype)
    whole[:, 0] = values
    return whole, whole[:, 0]


def test_not_contiguous():
    tri = float(N * (N - 1) // 2)
    whole, v = _strided(torch.arange(5.0) + R)
    dist.all_reduce(v)
    check(torch.equal(v, torch.arange(5.0) * N + tri) and bool((whole[:, 1] == -7).all()),
          "all_reduce of a strided view: %s", whole.tolist())
    whole, v = _strided(torch.arange(3.0) + R)
    w = dist.all_reduce(v, async_op=True)
    w.wait()
    check(torch.equal(v, torch.arange(3.0) * N + tri), "async all_reduce of a strided view")
    whole, v = _strided(torch.full((4,), float(R)))
    dist.broadcast(v, N - 1)
    check(torch.equal(v, torch.full((4,), float(N - 1))) and bool((whole[:, 1] == -7).all()),
          "broadcast into a strided view: %s", whole.tolist())
    whole, v = _strided(torch.full((3,), float(R)))
    outs = [torch.zeros(3) for _ in range(N)]
    dist.all_gather(outs, v)
    check(all(torch.equal(o, torch.full((3,), float(r))) for r, o in enumerate(outs)),
          "all_gather of a strided view")
    wholes = [_strided(torch.zeros(2)) for _ in range(N)]
    dist.all_gather([x[1] for x in wholes], torch.full((2,), float(R)))
    check(all(torch.equal(x[1], torch.full((2,), float(r))) and bool((x[0][:, 1] == -7).all())
              for r, x in enumerate(wholes)), "all_gather into strided views")
    whole, v = _strided(torch.zeros(2))
    dist.reduce_scatter(v, [torch.full((2,), float(R + i)) for i in range(N)])
    check(torch.equal(v, torch.full((2,), tri + N * R)) and bool((whole[:, 1] == -7).all()),
          "reduce_scatter into a strided view: %s", whole.tolist())
    # integers: rows of a transposed matrix
    m = (torch.arange(6, dtype=torch.int64).reshape(2, 3) + R).t()
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    check(torch.equal(m, (torch.arange(6, dtype=torch.int64).reshape(2, 3) + N - 1).t()),
          "all_reduce MAX of a transposed int64 matrix")


def test_objects():
    # torch's own functions, then rondo's, on the rondo group
    for api in (dist, rdist):
        objs = [None] * N
        api.all_gather_object(objs, {"rank": R, "name": "r%d" % R})
        check(objs == [{"rank": r, "name": "r%d" % r} for r in range(N)],
              "all_gather_object (%s)", api.__name__)
        lst = [("x", R), None] if R == 0 else [None, None]
        api.broadcast_object_list(lst, src=0)
        check(lst == [("x", 0), None], "broadcast_object_list %s", lst)
        got = [None] * N if R == N - 1 else None
        api.gather_object({"r": R}, got, dst=N - 1)
        check(R != N - 1 or got == [{"r": r} for r in range(N)], "gather_object %s", got)
        out = [None]
        api.scatter_object_list(out, [("to", r) for r in range(N)] if R == 0 else None, src=0)
        check(out == [("to", R)], "scatter_object_list %s", out)
        # sizes that differ by rank, a root other than 0, an output list longer than 1
        got = [None] * N if R == 0 else None
        api.gather_object("g" * (50 * R), got, dst=0)
        check(R != 0 or got == ["g" * (50 * r) for r in range(N)], "gather_object to 0 %s", got)
        out = [None, "kept"]
        api.scatter_object_list(out, [{"to": r, "pad": b"p" * (70 * r)} for r in range(N)]
                                if R == N - 1 else None, src=N - 1)
        check(out == [{"to": R, "pad": b"p" * (70 * R)}, "kept"],
              "scatter_object_list from %d %s", N - 1, out)
    # on a group whose ranks are not the world's: src and dst are global ranks
    members = list(range(1, N)) if N > 1 else [0]
    g = dist.new_group(members)
    if R in members:
        last = members[-1]
        got = [None] * len(members) if R == last else None
        dist.gather_object(("from", R), got, dst=last, group=g)
        check(R != last or got == [("from", r) for r in members],
              "gather_object on %s to %d %s", members, last, got)
        # rondo's own: torch 1.13's scatter_object_list compares src with the
        # global rank where scatter wants it (it fails on gloo too)
        out = [None]
        rdist.scatter_object_list(out, [("to", r) for r in members] if R == last else None,
                                  src=last, group=g)
        check(out == [("to", R)], "scatter_object_list on %s from %d %s", members, last, out)


def test_point_to_point():
    if N == 1:
        return
    right, left = (R + 1) % N, (R - 1) % N
    # a ring with isend/irecv, two tags apart
    a, b = torch.zeros(4), torch.zeros(2, dtype=torch.int64)
    reqs = [dist.irecv(b, left, tag=2), dist.irecv(a, left, tag=1),
            dist.isend(torch.full((4,), float(R)), right, tag=1),
            dist.isend(torch.tensor([R, 7], dtype=torch.int64), right, tag=2)]
    for q in reqs:
        q.wait()
    check(torch.equal(a, torch.full((4,), float(left))) and
          torch.equal(b, torch.tensor([left, 7])), "isend/irecv ring with tags")
    ops = [dist.P2POp(dist.isend, torch.full((3,), float(R)), right),
           dist.P2POp(dist.irecv, a[:3], left)]
    for q in dist.batch_isend_irecv(ops):
        q.wait()
    check(torch.equal(a[:3], torch.full((3,), float(left))), "batch_isend_irecv")
    # blocking, and from any source: rank 0 hears from everyone
    if R == 0:
        seen = set()
        for _ in range(N - 1):
            x = torch.zeros(1)
            src = dist.recv(x)
            seen.add(src)
            check(x.item() == src * 1.5, "recv from any source: %s from %d", x.item(), src)
        check(seen == set(range(1, N)), "every sender once: %s", seen)
    else:
        dist.send(torch.tensor([R * 1.5]), 0)


def test_new_group():
    # every rank calls new_group for every subset; only members use it
    subsets = [list(range(N))] + [[r] for r in range(N)]
    if N > 2:
        subsets += [[0, N - 1], list(range(1, N))]
    groups = [dist.new_group(s) for s in subsets]
    for s, g in zip(subsets, groups):
        if R not in s:
            check(g == dist.GroupMember.NON_GROUP_MEMBER, "not a member of %s", s)
            continue
        t = torch.full((2,), float(R))
        dist.all_reduce(t, group=g)
        check(torch.equal(t, torch.full((2,), float(sum(s)))), "all_reduce on %s", s)
        b = torch.full((1,), float(R))
        dist.broadcast(b, src=s[-1], group=g)
        check(b.item() == s[-1], "broadcast from global rank %d on %s", s[-1], s)
        check(dist.get_rank(g) == s.index(R), "group rank")


class _Net(nn.Module):
    def __init__(self, unused=False):
        super().__init__()
        self.a = nn.Linear(6, 16)
        self.b = nn.Linear(16, 3)
        self.spare = nn.Linear(16, 3) if unused else None

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def _train(pg, steps, **ddp_kwargs):
    """DDP on pg: the same seeds and data on every backend."""
    torch.manual_seed(1)
    net = _Net(unused=ddp_kwargs.pop("unused", False))
    hook = ddp_kwargs.pop("hook", None)
    no_sync = ddp_kwargs.pop("no_sync", False)
    uneven = ddp_kwargs.pop("uneven", False)
    zero = ddp_kwargs.pop("zero", False)
    model = nn.parallel.DistributedDataParallel(net, process_group=pg, **ddp_kwargs)
    if hook is not None:
        model.register_comm_hook(*hook())
    if zero:
        opt = ZeroRedundancyOptimizer(model.parameters(), torch.optim.SGD, lr=0.05,
                                      process_group=pg)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    g = torch.Generator().manual_seed(100 + R)
    n = steps + (R if uneven else 0)
    ctx = model.join() if uneven else _nothing()
    with ctx:
        for step in range(n):
            x = torch.randn(8, 6, generator=g)
            y = torch.randn(8, 3, generator=g)
            if no_sync and step % 2 == 0:
                with model.no_sync():
                    nn.functional.mse_loss(model(x), y).backward()
                continue
            opt.zero_grad(set_to_none=False) if not no_sync else None
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            if no_sync:
                opt.zero_grad()
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()])


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_ddp_against_gloo():
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    gloo = dist.new_group(backend="gloo")
    # at 1-2 ranks every sum is a + b in either order: equal bits
    tol = 0.0 if N <= 2 else 1e-6
    cases = [("default", {}), ("no_sync", {"no_sync": True}),
             ("uneven inputs", {"uneven": True}),
             ("find_unused_parameters", {"unused": True, "find_unused_parameters": True}),
             ("static_graph", {"static_graph": True}),
             ("gradient_as_bucket_view", {"gradient_as_bucket_view": True}),
             ("small buckets", {"bucket_cap_mb": 0.001}),
             ("fp16 hook", {"hook": lambda: (None, default_hooks.fp16_compress_hook)}),
             ("ZeroRedundancyOptimizer", {"zero": True})]
    for name, kw in cases:
        mine = _train(None, 4, **dict(kw))
        theirs = _train(gloo, 4, **dict(kw))
        scale = float(theirs.abs().max())
        check(close(mine, theirs, tol * scale), "DDP %s: rondo and gloo differ by %g", name,
              float((mine - theirs).abs().max()))
        # every rank holds the same parameters
        first = mine.clone()
        dist.broadcast(first, 0)
        check(torch.equal(first, mine), "DDP %s: the ranks agree", name)

    def powersgd():
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=1,
                                            start_powerSGD_iter=2, random_seed=0)
        return state, powerSGD_hook.powerSGD_hook
    if torch.cuda.is_available():
        # torch's PowerSGD hook synchronizes CUDA on the gradient's device
        # whenever CUDA is available (torch 2.x), which fails for CPU
        # tensors whatever the backend: gloo must fail the same way.
        e = raises(Exception, _train, gloo, 4, hook=powersgd)
        check(e is not None and "cuda" in str(e).lower(),
              "PowerSGD on CPU tensors with CUDA present: gloo raised %r", e)
        return
    mine = _train(None, 4, hook=powersgd)
    first = mine.clone()
    dist.broadcast(first, 0)
    check(torch.equal(first, mine), "DDP PowerSGD hook: the ranks agree")


def test_cuda():
    """CUDA tensors (where torch has CUDA: the device machine; this file's
    other tests are CPU-only): all-reduces through rondo's device path after
    torch's current stream, the data movement through host memory, DDP on a
    CUDA model against gloo. The ranks share the machine's GPU(s)."""
    if not torch.cuda.is_available():
        return
    dev = torch.device("cuda", R % torch.cuda.device_count())
    for dt in DTYPES:
        for op, name in OPS:
            for count in (0, 1, 7, 1000):
                t = _values(dt, count, R).to(dev)
                dist.all_reduce(t, op=op)
                want = _reduced(dt, name, count)
                check(torch.equal(t.cpu(), want), "CUDA all_reduce %s %s count %d: %s, want %s",
                      dt, name, count, t[:6].tolist(), want[:6].tolist())
    # work queued on a side stream before the call: the call sees its result
    side = torch.cuda.Stream(dev)
    with torch.cuda.stream(side):
        x = torch.full((1 << 20,), float(R + 1), device=dev) * 2
        w = dist.all_reduce(x, async_op=True)
        w.wait()
        side.synchronize()
    check(torch.equal(x.cpu(), torch.full((1 << 20,), float(N * (N + 1)))),
          "CUDA all_reduce after work on a side stream")
    b = torch.full((5,), float(R), device=dev)
    dist.broadcast(b, N - 1)
    check(torch.equal(b.cpu(), torch.full((5,), float(N - 1))), "CUDA broadcast")
    outs = [torch.zeros(3, device=dev) for _ in range(N)]
    dist.all_gather(outs, torch.full((3,), float(R), device=dev))
    check(all(torch.equal(o.cpu(), torch.full((3,), float(r))) for r, o in enumerate(outs)),
          "CUDA all_gather")
    out = torch.zeros(2, device=dev)
    dist.reduce_scatter(out, [torch.full((2,), float(R + i), device=dev) for i in range(N)])
    check(torch.equal(out.cpu(), torch.full((2,), float(N * (N - 1) // 2 + N * R))),
          "CUDA reduce_scatter")
    # DDP on a CUDA model, rondo against gloo, the same start and data
    gloo = dist.new_group(backend="gloo")

    def train(pg):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(dev)
        model = nn.parallel.DistributedDataParallel(net, device_ids=[dev.index],
                                                    process_group=pg)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(200 + R)
        for _ in range(4):
            x, y = torch.randn(8, 16, generator=g).to(dev), torch.randn(8, 4, generator=g).to(dev)
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        return torch.cat([p.detach().reshape(-1).cpu() for p in net.parameters()])
    mine, theirs = train(None), train(gloo)
    check(close(mine, theirs, 1e-6 * float(theirs.abs().max())),
          "CUDA DDP: rondo and gloo differ by %g", float((mine - theirs).abs().max()))


def test_coalescing_manager():
    """torch's _coalescing_manager: the collectives made inside run when it
    ends, as one engine group, each kind as ONE fused collective (the
    timeline's spans say how many were fused), with the values of separate
    calls; a wait inside the block fails alike on every rank instead of
    hanging; a call refused on one rank fails on every rank."""
    import json
    import tempfile
    from torch.distributed.distributed_c10d import _coalescing_manager, _get_default_group
    pg = _get_default_group()
    path = os.path.join(tempfile.gettempdir(), "rondo-tdist-coalesce-%d.json" % os.getppid())
    a, b = torch.full((5,), float(R + 1)), torch.arange(3.0) * (R + 1)
    f1, f2 = torch.arange(float(2 * N)) + R, torch.ones(3 * N) * R
    s1, s2 = torch.empty(2), torch.empty(3)
    i1, i2 = torch.full((2,), float(R)), torch.full((1,), float(-R))
    o1, o2 = torch.empty(2 * N), torch.empty(N)
    tri = N * (N + 1) / 2
    pg._comm.timeline_start(path)
    reqs = []
    with _coalescing_manager(pg, reqs):
        works = [dist.all_reduce(a, async_op=True), dist.all_reduce(b, async_op=True),
                 dist.reduce_scatter_tensor(s1, f1, async_op=True),
                 dist.reduce_scatter_tensor(s2, f2, async_op=True),
                 dist.all_gather_into_tensor(o1, i1, async_op=True),
                 dist.all_gather_into_tensor(o2, i2, async_op=True)]
    for w in works:
        w.wait()
    pg._comm.timeline_stop()
    check(torch.equal(a, torch.full((5,), tri)), "all_reduce a: %s", a)
    check(torch.equal(b, torch.arange(3.0) * tri), "all_reduce b: %s", b)
    sums = torch.arange(float(2 * N)) * N + N * (N - 1) / 2
    check(torch.equal(s1, sums[2 * R:2 * R + 2]), "reduce_scatter s1: %s", s1)
    check(torch.equal(s2, torch.full((3,), N * (N - 1) / 2)), "reduce_scatter s2: %s", s2)
    check(torch.equal(o1, torch.arange(float(N)).repeat_interleave(2)), "all_gather o1: %s", o1)
    check(torch.equal(o2, -torch.arange(float(N))), "all_gather o2: %s", o2)
    if R == 0:
        fused = {}
        with open(path) as f:
            events = json.load(f)
        for e in events:
            if e.get("ph") == "X" and e.get("name") in ("ALLREDUCE", "REDUCESCATTER",
                                                        "ALLGATHER"):
                fused.setdefault(e["name"], []).append(e["args"]["fused"])
        want = {"ALLREDUCE": [2, 2], "REDUCESCATTER": [2, 2], "ALLGATHER": [2, 2]}
        check(fused == want, "one fused collective per kind: %s", fused)
        os.unlink(path)
    # waiting inside the block: refused alike on every rank, then the block runs
    x = torch.ones(2)
    try:
        with _coalescing_manager(pg, []):
            dist.all_reduce(x)  # blocking: waits inside
        check(False, "a wait inside the block raised")
    except RuntimeError as e:
        check("before the block ended" in str(e), "the wait inside: %s", e)
    dist.barrier()
    check(torch.equal(x, torch.full((2,), float(N))), "the call still ran at the end: %s", x)
    # one rank's bad call inside the block fails on every rank, nothing hangs
    y = torch.ones(3)
    try:
        with _coalescing_manager(pg, []):
            w1 = dist.all_reduce(y, async_op=True)
            w2 = (dist.all_reduce(torch.ones(2, dtype=torch.bool), op=dist.ReduceOp.AVG,
                                  async_op=True) if R == N - 1 else
                  dist.all_reduce(torch.ones(2), async_op=True))
        w1.wait()
        w2.wait()
        check(False, "a refused call inside the block fails")
    except (ValueError, RuntimeError) as e:
        check(isinstance(e, ValueError) == (R == N - 1), "the refusal: %r", e)
    dist.barrier()
    z = torch.ones(2)
    dist.all_reduce(z)
    check(torch.equal(z, torch.full((2,), float(N))), "all_reduce after the blocks")


def one_rank(bad, good, exc, what):
    """mpitest.one_rank: the others raise RuntimeError."""
    mpitest.one_rank(bad, good, exc, RuntimeError, what)


def test_errors_on_every_rank():
    x = torch.ones(4)
    one_rank(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32), op=dist.ReduceOp.BXOR),
             lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32)), ValueError, "an op")
    one_rank(lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool), op=dist.ReduceOp.AVG),
             lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool)), ValueError,
             "AVG of bool")
    one_rank(lambda: dist.all_to_all_single(torch.empty(N), torch.ones(N),
                                            input_split_sizes=[N + 1] + [0] * (N - 1)),
             lambda: dist.all_to_all_single(torch.empty(N), torch.ones(N)), ValueError,
             "splits past the end")
    one_rank(lambda: dist.reduce_scatter(torch.zeros(2), [torch.ones(3)] * N),
             lambda: dist.reduce_scatter(torch.zeros(2), [torch.ones(2)] * N), ValueError,
             "reduce_scatter inputs of another size")
    # a root outside the group on every rank: every rank refuses alike
    e = raises(ValueError, dist.broadcast, x, N)
    check(e is not None and "root rank" in str(e), "a root outside: %s", e)
    if N == 1:
        return
    for call, what in ((lambda: dist.all_reduce(torch.ones(3 + R)), "counts"),
                       (lambda: dist.all_reduce(torch.ones(4, 3) if R == 0 else
                                                torch.ones(3, 4)), "shapes with one count"),
                       (lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32 if R else
                                                           torch.float32)), "dtypes"),
                       (lambda: dist.all_reduce(torch.ones(3), op=dist.ReduceOp.MAX if R else
                                                dist.ReduceOp.SUM), "ops"),
                       (lambda: dist.broadcast(torch.ones(2), src=R), "roots")):
        e = raises(RuntimeError, call)
        check(e is not None and ("differ" in str(e) or "MISMATCH" in str(e)),
              "%s differ: %s", what, e)
    # a rank that receives more or fewer elements than were sent
    if R == 0:
        dist.send(torch.ones(3), 1)
    elif R == 1:
        e = raises(RuntimeError, dist.recv, torch.zeros(4), 0)
        check(e is not None and "expected 4 elements" in str(e), "recv count: %s", e)
    dist.barrier()
    # the group still works afterwards
    t = torch.ones(2)
    dist.all_reduce(t)
    check(torch.equal(t, torch.full((2,), float(N))), "all_reduce after the errors")


def test_timeout():
    # A group's timeout= is honoured: the last rank comes 2.5 s late to a
    # barrier of a group with a 1 s timeout. Every rank raises after about
    # 1 s of waiting, naming the ranks that did not come, with " timeout "
    # in the message (PyTorch's test_barrier_timeout_* match that); the
    # group then still works. At 2 ranks only: at 3 the same wait, with one
    # more early rank (the suite's 3-rank run is its longest).
    if N != 2:
        return
    import time
    g = dist.new_group(list(range(N)), timeout=datetime.timedelta(seconds=1))
    dist.barrier(group=g)
    late = N - 1
    if R == late:
        time.sleep(2.5)
    t0 = time.time()
    e = raises(RuntimeError, dist.barrier, group=g)
    waited = time.time() - t0
    check(e is not None and " timeout " in str(e), "a barrier past its timeout: %s", e)
    if R != late:
        check(e is not None and "rank(s) %d did not submit it" % late in str(e),
              "the early rank names the late one: %s", e)
    # (an exception at all shows the timeout was honoured: without it the
    # early rank's barrier returns once the late rank comes)
    check(waited >= 0.9, "rank %d gave up after %.2f s, before its 1 s timeout", R, waited)
    # The late rank failed a second later than the others; once all are
    # back in step (a barrier of the world group, whose timeout is long),
    # the group works.
    dist.barrier()
    t = torch.ones(3)
    dist.all_reduce(t, group=g)
    check(torch.equal(t, torch.full((3,), float(N))), "all_reduce on the group after a timeout")
    dist.destroy_process_group(g)


def test_p2p_timeout():
    # Point-to-point calls honour the group's timeout too. A receive that
    # no message comes for raises after about 1 s, naming the rank and the
    # tag, and is withdrawn: the late message goes to the next receive. A
    # send too big for MPI to send before its receive raises, stays open
    # (MPI cannot withdraw it) and completes once the receive comes. The
    # ranks fall into step again on the world group (long timeout).
    if N == 1:
        return
    import time
    g = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=1))
    if R == 1:
        t0 = time.time()
        e = raises(RuntimeError, dist.recv, torch.zeros(2), src=0, group=g, tag=3)
        waited = time.time() - t0
        check(e is not None and "no message from rank 0 with tag 3 within the comm's timeout"
              in str(e), "a receive past its timeout: %s", e)
        check(0.9 <= waited < 30, "the receive gave up after %.2f s (timeout 1 s)", waited)
    dist.barrier()
    if R == 0:
        dist.send(torch.tensor([5.0, 6.0]), dst=1, group=g, tag=3)
    elif R == 1:
        got = torch.zeros(2)
        dist.recv(got, src=0, group=g, tag=3)
        check(torch.equal(got, torch.tensor([5.0, 6.0])), "the late message: %s", got)
    big = torch.arange(1 << 18, dtype=torch.float32)
    if R == 0:
        e = raises(RuntimeError, dist.send, big, dst=1, group=g, tag=4)
        check(e is not None and "rank 1 has not received the message with tag 4" in str(e),
              "a send past its timeout: %s", e)
        check(len(g._open_sends) == 1, "the send stays open (%d)", len(g._open_sends))
    dist.barrier()
    if R == 1:
        got = torch.zeros(1 << 18)
        dist.recv(got, src=0, group=g, tag=4)
        check(torch.equal(got, big), "the send that timed out arrives whole")
    dist.barrier()
    if R == 0:
        dist.send(torch.ones(1), dst=1, group=g, tag=5)
        check(not g._open_sends, "a completed open send is freed (%d)", len(g._open_sends))
    elif R == 1:
        dist.recv(torch.ones(1), src=0, group=g, tag=5)
    dist.barrier()
    if R < 2:
        dist.destroy_process_group(g)


def test_destroy_leaves_no_thread():
    dist.destroy_process_group()
    import gc
    gc.collect()
    for _ in range(200):  # the last thread exits after rondo's linger time (1 s)
        left = [t.name for t in threading.enumerate() if t.name.startswith("rondo-")]
        if not left:
            break
        threading.Event().wait(0.05)
    check(not left, "threads left after destroy_process_group: %s", left)


run("test_torch_distributed", [test_start_up, test_all_reduce_every_dtype_and_op,
                               test_async_work_and_futures, test_not_contiguous,
                               test_data_movement, test_common_calls_through_ctypes,
                               test_cuda, test_all_to_all,
                               test_objects, test_point_to_point, test_new_group,
                               test_ddp_against_gloo, test_errors_on_every_rank,
                               test_coalescing_manager, test_timeout, test_p2p_timeout,
                               test_destroy_leaves_no_thread])
