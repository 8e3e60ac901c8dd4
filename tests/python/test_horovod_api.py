"""rondo.torch's Horovod API under mpiexec at 1-3 ranks (tests/python/launch),
in our own words (Horovod's suite itself is run by hand: docs/python.md):

  - build queries, cross ranks; int16 and every other dtype through every
    collective; the async, in-place and grouped forms of each;
  - reduce-scatter with uneven first dimensions, every op, scales (integers
    scaled in float64 and truncated, as Horovod does); all-to-all with
    uneven and zero splits and the received splits;
  - process sets: add, remove, every collective on a set, global roots,
    and the refusals (a non-member, ranks that differ, a duplicate set);
  - the gradients of allgather, broadcast, alltoall, reducescatter and the
    grouped calls, in closed form;
  - Adasum as an op against a reference computed here in float64, and
    DistributedOptimizer with op=Adasum against the same reference;
  - DistributedOptimizer without named_parameters, with groups, with sparse
    gradients (sparse_as_dense both ways), on a process set;
  - broadcast_optimizer_state of an optimizer with no state yet and a
    parameter that needs no gradient; join's last rank and what a joined
    rank refuses; unnamed calls after an uneven join;
  - start_timeline/stop_timeline, with HOROVOD_TIMELINE=DYNAMIC in the
    environment (no file named DYNAMIC appears);
  - every error on every rank: a refused dtype, scalar, splits or root on
    one rank; shapes, dtypes or roots that differ; a duplicate name; an
    object the root cannot pickle; parameter names that differ. Each
    raises on every rank (the refusing rank its own ValueError or
    TypeError, the others HorovodInternalError naming it), and none hangs.
"""
import json
import os
import tempfile
import threading

import torch

import rondo
import rondo.torch as hvd
import mpitest
from mpitest import check, raises, run

hvd.init()
R, N = hvd.rank(), hvd.size()
torch.set_num_threads(1)
HIE = hvd.HorovodInternalError


def close(a, b, tol=0.0):
    return a.shape == b.shape and bool(((a.double() - b.double()).abs() <= tol).all())


def test_build_queries():
    check(hvd.mpi_built() and hvd.mpi_enabled() and hvd.mpi_threads_supported(), "MPI")
    check(not hvd.gloo_built() and not hvd.gloo_enabled() and not hvd.ccl_built() and
          not hvd.ddl_built() and not hvd.rocm_built(), "no gloo, ccl, ddl, rocm")
    v = hvd.nccl_built()
    check(isinstance(v, int) and (v == 0 or v >= 2000), "nccl_built is a version code: %r", v)
    check(isinstance(hvd.cuda_built(), bool), "cuda_built")
    check(hvd.cross_size() * hvd.local_size() == N and 0 <= hvd.cross_rank() < hvd.cross_size(),
          "cross rank %d of %d", hvd.cross_rank(), hvd.cross_size())
    check(hvd.is_homogeneous(), "one node: homogeneous")
    check(hvd.global_process_set.size() == N and hvd.global_process_set.rank() == R,
          "the global process set")


DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64]


def test_every_dtype_every_collective():
    for dt in DTYPES:
        x = (torch.arange(2 * N) % 3 + R).to(dt)
        s = hvd.allreduce(x, op=hvd.Sum)
        check(s.dtype == dt and torch.equal(s, (torch.arange(2 * N) % 3 * N + N * (N - 1) // 2)
                                            .to(dt)), "allreduce %s", dt)
        g = hvd.allgather(x.reshape(N, 2))
        check(torch.equal(g, torch.cat([(torch.arange(2 * N) % 3 + r).to(dt).reshape(N, 2)
                                        for r in range(N)])), "allgather %s", dt)
        b = hvd.broadcast(x, root_rank=N - 1)
        check(torch.equal(b, (torch.arange(2 * N) % 3 + N - 1).to(dt)), "broadcast %s", dt)
        a = hvd.alltoall(x)
        want = torch.cat([(torch.arange(2 * R, 2 * R + 2) % 3 + r).to(dt) for r in range(N)])
        check(torch.equal(a, want), "alltoall %s", dt)
        rs = hvd.reducescatter(x, op=hvd.Max)
        check(torch.equal(rs, (torch.arange(2 * R, 2 * R + 2) % 3 + N - 1).to(dt)),
              "reducescatter %s", dt)
    w = hvd.allreduce(torch.full((3,), 30000, dtype=torch.int16), op=hvd.Sum)
    check(int(w[0]) == (30000 * N + 32768) % 65536 - 32768, "int16 sums wrap: %s", w)


def test_async_and_grouped_forms():
    x = torch.arange(4.0) + R
    tri = N * (N - 1) / 2
    hs = [hvd.broadcast_async(x, 0), hvd.allgather_async(x), hvd.reducescatter_async(
        torch.arange(2.0 * N), op=hvd.Sum), hvd.alltoall_async(torch.arange(float(N)) + R)]
    b, g, rs, (a, splits) = [hvd.synchronize(h) for h in hs]
    check(torch.equal(b, torch.arange(4.0)), "broadcast_async")
    check(torch.equal(g, torch.cat([torch.arange(4.0) + r for r in range(N)])), "allgather_async")
    check(torch.equal(rs, torch.arange(2.0 * R, 2.0 * R + 2) * N), "reducescatter_async")
    check(torch.equal(a, torch.full((N,), float(R)) + torch.arange(float(N))) and
          splits.tolist() == [1] * N, "alltoall_async: %s %s", a, splits)
    check(all(hvd.poll(h) for h in hs), "poll after synchronize")
    y = x.clone()
    h = hvd.broadcast_async_(y, N - 1)
    check(hvd.synchronize(h) is y and torch.equal(y, torch.arange(4.0) + N - 1), "broadcast_async_")
    ts = [torch.full((k + 1,), float(R + k)) for k in range(3)]
    outs = hvd.synchronize(hvd.grouped_allreduce_async(ts, op=hvd.Sum))
    check(all(torch.equal(o, torch.full((k + 1,), tri + N * k)) for k, o in enumerate(outs)),
          "grouped_allreduce_async")
    ins = [t.clone() for t in ts]
    hvd.synchronize(hvd.grouped_allreduce_async_(ins, op=hvd.Max))
    check(all(torch.equal(t, torch.full((k + 1,), float(N - 1 + k))) for k, t in enumerate(ins)),
          "grouped_allreduce_async_")
    ins = [t.clone() for t in ts]
    hvd.grouped_allreduce_(ins, op=hvd.Min)
    check(all(torch.equal(t, torch.full((k + 1,), float(k))) for k, t in enumerate(ins)),
          "grouped_allreduce_ in place")
    gg = hvd.grouped_allgather([torch.full((R + 1, 2), float(R)), torch.ones(1)])
    check(gg[0].shape == (N * (N + 1) // 2, 2) and gg[1].shape == (N,), "grouped_allgather")
    gg = hvd.synchronize(hvd.grouped_allgather_async([torch.ones(2) * R]))
    check(torch.equal(gg[0], torch.arange(float(N)).repeat_interleave(2)), "grouped_allgather_async")
    grs = hvd.grouped_reducescatter([torch.ones(N, 2), torch.arange(float(N))], op=hvd.Sum)
    check(torch.equal(grs[0], torch.full((1, 2), float(N))) and
          torch.equal(grs[1], torch.tensor([float(R * N)])), "grouped_reducescatter")
    grs = hvd.synchronize(hvd.grouped_reducescatter_async([torch.ones(N)]))
    check(torch.equal(grs[0], torch.ones(1)), "grouped_reducescatter_async (Average)")


def _share(rows, r):
    return rows // N + (r < rows % N)


def test_reducescatter_uneven_and_scaled():
    for rows in (0, 1, N + 1, 2 * N + 1, 7):
        first = sum(_share(rows, r) for r in range(R))
        mine = _share(rows, R)
        base = torch.arange(rows * 3, dtype=torch.float64).reshape(rows, 3)
        x = base + R
        got = hvd.reducescatter(x, op=hvd.Sum)
        want = (base * N + N * (N - 1) / 2)[first:first + mine]
        check(torch.equal(got, want), "%d rows, sum: %s", rows, got.shape)
        for op, fn in ((hvd.Min, lambda v: v), (hvd.Max, lambda v: v + N - 1),
                       (hvd.Average, lambda v: v + (N - 1) / 2)):
            got = hvd.reducescatter(x, op=op)
            check(torch.equal(got, fn(base)[first:first + mine]), "%d rows, %s", rows, op)
        p = hvd.reducescatter(torch.full((rows, 2), 2.0), op=hvd.Product)
        check(torch.equal(p, torch.full((mine, 2), 2.0 ** N)), "%d rows, product", rows)
    x = torch.arange(6 * N, dtype=torch.float32).reshape(2 * N, 3) + R
    got = hvd.reducescatter(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0)
    want = (torch.arange(6 * N, dtype=torch.float32).reshape(2 * N, 3) * N + N * (N - 1) / 2)
    check(torch.equal(got, (want * 2)[2 * R:2 * R + 2]), "float scales")
    xi = torch.tensor([[7, -7, 5]] * N, dtype=torch.int32)
    got = hvd.reducescatter(xi, op=hvd.Sum, prescale_factor=0.5, postscale_factor=0.3)
    # each rank: trunc(7 * 0.5) = 3, trunc(-3.5) = -3, trunc(2.5) = 2; the sum, then
    # trunc(sum * 0.3) in float64
    want = [int(v * N * 0.3) for v in (3, -3, 2)]
    check(got.tolist() == [want], "integer scales in float64, truncated: %s vs %s", got, want)
    got = hvd.allreduce(torch.tensor([7, -7, 5], dtype=torch.int64), op=hvd.Sum,
                        prescale_factor=0.5)
    check(got.tolist() == [3 * N, -3 * N, 2 * N], "allreduce integer prescale: %s", got)


def splits_of(case, r):
    """Rows rank r sends to each rank, in three cases: uneven, none at all,
    all to rank 0."""
    return ([(r + d) % 3 for d in range(N)], [0] * N, [2 if d == 0 else 0 for d in range(N)])[case]


def test_alltoall_splits():
    for case in range(3):
        mine = splits_of(case, R)
        rows = sum(mine) + (case == 0)  # case 0 keeps a last row that is not sent
        x = torch.tensor([[100.0 * R + i, i] for i in range(rows)]).reshape(rows, 2)
        want, recv = [], []
        for r in range(N):
            theirs = splits_of(case, r)
            start = sum(theirs[:R])
            want += [[100.0 * r + start + i, start + i] for i in range(theirs[R])]
            recv.append(theirs[R])
        for form in (mine, torch.tensor(mine, dtype=torch.int32)):
            out, got = hvd.alltoall(x, splits=form)
            check(got.dtype == torch.int32 and got.tolist() == recv, "received splits %s: %s",
                  mine, got)
            check(out.tolist() == want, "alltoall splits %s: %s", mine, out.tolist())


def test_process_sets():
    everyone = hvd.add_process_set(list(range(N)))  # its own comm beside the global set's
    check(torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum, process_set=everyone),
                      torch.full((2,), float(N))), "a set of every rank")
    nobody = hvd.add_process_set([])
    check(nobody.size() == 0 and not nobody.included(), "an empty set")
    raises(ValueError, hvd.allreduce, torch.ones(2), process_set=nobody)
    check(hvd.remove_process_set(nobody) and hvd.remove_process_set(everyone), "removed both")
    if N == 1:
        return
    evens = [r for r in range(N) if r % 2 == 0]
    odds = [r for r in range(N) if r % 2 == 1]
    even = hvd.add_process_set(evens)
    odd = hvd.add_process_set(hvd.ProcessSet(odds))
    mine = even if R % 2 == 0 else odd
    ranks = evens if R % 2 == 0 else odds
    check(mine.included() and mine.size() == len(ranks) and mine.rank() == ranks.index(R),
          "set rank %s size %s", mine.rank(), mine.size())
    check(even.process_set_id != 0 and (odd is None or odd.process_set_id not in
                                        (0, even.process_set_id)), "distinct ids")
    x = torch.ones(3) * (R + 1)
    check(torch.equal(hvd.allreduce(x, op=hvd.Sum, process_set=mine),
                      torch.full((3,), float(sum(r + 1 for r in ranks)))), "allreduce on a set")
    check(torch.equal(hvd.allgather(torch.tensor([float(R)]), process_set=mine),
                      torch.tensor([float(r) for r in ranks])), "allgather on a set")
    root = ranks[-1]  # a global rank
    check(torch.equal(hvd.broadcast(x, root, process_set=mine), torch.ones(3) * (root + 1)),
          "broadcast from global root %d", root)
    rs = hvd.reducescatter(torch.ones(len(ranks), 2), op=hvd.Sum, process_set=mine)
    check(torch.equal(rs, torch.full((1, 2), float(len(ranks)))), "reducescatter on a set")
    a = hvd.alltoall(torch.arange(float(len(ranks))) + 10 * R, process_set=mine)
    check(torch.equal(a, torch.tensor([10.0 * r + ranks.index(R) for r in ranks])),
          "alltoall on a set")
    check(hvd.broadcast_object("from %d" % ranks[0], root_rank=ranks[0], process_set=mine) ==
          "from %d" % ranks[0], "broadcast_object on a set")
    check(hvd.allgather_object(R, process_set=mine) == ranks, "allgather_object on a set")
    hvd.barrier(process_set=mine)
    other = odd if R % 2 == 0 else even
    raises(ValueError, hvd.allreduce, x, process_set=other)  # not a member: local
    raises(ValueError, hvd.broadcast, x, 1 - R % 2, process_set=mine)  # root not in the set
    raises(ValueError, hvd.add_process_set, evens)  # exists already: every rank
    e = raises(ValueError, hvd.add_process_set, [R])  # ranks differ across ranks
    check(e is not None and "disagree" in str(e), "names the disagreement: %s", e)
    raises(ValueError, hvd.add_process_set, [0, N])  # out of range
    check(hvd.remove_process_set(even) and even.process_set_id is None, "removed")
    check(not hvd.remove_process_set(even), "removing twice")
    check(not hvd.remove_process_set(hvd.global_process_set), "the global set stays")
    check(hvd.remove_process_set(odd), "removed odd")


def test_gradients():
    x = torch.full((R + 1, 2), float(R), requires_grad=True)
    g = hvd.allgather(x)
    g.backward(torch.arange(float(g.numel())).reshape(g.shape))
    start = sum(r + 1 for r in range(R)) * 2
    check(torch.equal(x.grad, torch.arange(start, start + 2.0 * (R + 1)).reshape(R + 1, 2)),
          "allgather gradient: %s", x.grad)
    for root in range(N):
        y = torch.ones(3, requires_grad=True)
        hvd.broadcast(y, root).sum().backward()
        check(torch.equal(y.grad, torch.ones(3) * (R == root)), "broadcast gradient")
    z = torch.arange(float(N), requires_grad=True)
    out = hvd.alltoall(z)
    (out * (R + 1)).sum().backward()
    check(torch.equal(z.grad, torch.arange(1.0, N + 1.0)), "alltoall gradient: %s", z.grad)
    w = torch.ones(2 * N, 3, requires_grad=True)
    hvd.reducescatter(w, op=hvd.Sum).sum().backward()
    check(torch.equal(w.grad, torch.full((2 * N, 3), float(N))), "reducescatter gradient")
    w = torch.ones(2 * N, 3, requires_grad=True)
    hvd.reducescatter(w, op=hvd.Average, prescale_factor=3.0).sum().backward()
    check(torch.equal(w.grad, torch.full((2 * N, 3), 3.0)), "reducescatter gradient, scaled")
    ts = [torch.ones(2, requires_grad=True), torch.ones(3, requires_grad=True)]
    outs = hvd.grouped_allreduce(ts, op=hvd.Sum)
    (outs[0].sum() + 2 * outs[1].sum()).backward()
    check(torch.equal(ts[0].grad, torch.full((2,), float(N))) and
          torch.equal(ts[1].grad, torch.full((3,), 2.0 * N)), "grouped_allreduce gradient")
    ts = [torch.ones(1, requires_grad=True), torch.ones(2, 2, requires_grad=True)]
    outs = hvd.grouped_allgather(ts)
    (outs[0].sum() + outs[1].sum()).backward()
    check(torch.equal(ts[0].grad, torch.ones(1)) and torch.equal(ts[1].grad, torch.ones(2, 2)),
          "grouped_allgather gradient")
    ts = [torch.ones(N, requires_grad=True)]
    hvd.grouped_reducescatter(ts, op=hvd.Sum)[0].sum().backward()
    check(torch.equal(ts[0].grad, torch.full((N,), float(N))), "grouped_reducescatter gradient")


# ---- Adasum against a float64 reference ----------------------------------------------

def adasum_pair(a, b):
    dot, aa, bb = float((a * b).sum()), float((a * a).sum()), float((b * b).sum())
    ca = 1 - dot / (2 * aa) if aa >= 1.4916681462400413e-154 else 1.0
    cb = 1 - dot / (2 * bb) if bb >= 1.4916681462400413e-154 else 1.0
    return ca * a + cb * b


def adasum_reference(vectors):
    """rondo's tree (docs/api.md): fold ranks 2i, 2i+1 for i < size - 2^k,
    then neighbours, then pairs of pairs."""
    p = len(vectors)
    pof2 = 1
    while pof2 * 2 <= p:
        pof2 *= 2
    rem = p - pof2
    level = [adasum_pair(vectors[2 * k], vectors[2 * k + 1]) if k < rem else vectors[k + rem]
             for k in range(pof2)]
    while len(level) > 1:
        level = [adasum_pair(level[2 * k], level[2 * k + 1]) for k in range(len(level) // 2)]
    return level[0]


def rank_vector(r, n, seed):
    g = torch.Generator().manual_seed(seed * 100 + r)
    return torch.randn(n, generator=g, dtype=torch.float64)


def test_adasum_op():
    for seed, n in ((1, 1), (2, 5), (3, 257)):
        want = adasum_reference([rank_vector(r, n, seed) for r in range(N)])
        mine = rank_vector(R, n, seed)
        got = hvd.allreduce(mine, op=hvd.Adasum)
        check(close(got, want, 1e-12 * float(want.abs().max() + 1)), "float64 adasum n=%d", n)
        got32 = hvd.allreduce(mine.float(), op=hvd.Adasum)
        check(close(got32, want, 1e-5 * float(want.abs().max() + 1)), "float32 adasum n=%d", n)
    ts = [rank_vector(R, k + 2, 7 + k) for k in range(3)]
    outs = hvd.grouped_allreduce(ts, op=hvd.Adasum)
    for k, o in enumerate(outs):
        want = adasum_reference([rank_vector(r, k + 2, 7 + k) for r in range(N)])
        check(close(o, want, 1e-12 * float(want.abs().max() + 1)),
              "grouped adasum: each tensor its own coefficients (%d)", k)
    raises(TypeError, hvd.allreduce, torch.ones(3, dtype=torch.int32), op=hvd.Adasum)
    raises(HIE, hvd.reducescatter, torch.ones(N, 2), op=hvd.Adasum)


def test_adasum_optimizer():
    """op=Adasum: each rank's SGD step is its update; the updates combine
    with Adasum (one rank: the plain step)."""
    torch.manual_seed(5)
    model = torch.nn.Linear(4, 2)
    start = [p.detach().clone() for p in model.parameters()]
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(), op=hvd.Adasum)
    data = [torch.randn(3, 4, generator=torch.Generator().manual_seed(50 + r)) for r in range(N)]
    opt.zero_grad()
    model(data[R]).pow(2).sum().backward()
    opt.step()
    grads = []
    for r in range(N):  # every rank's gradient, recomputed here from its data
        m = torch.nn.Linear(4, 2)
        with torch.no_grad():
            for p, s in zip(m.parameters(), start):
                p.copy_(s)
        m(data[r]).pow(2).sum().backward()
        grads.append([p.grad.double() for p in m.parameters()])
    for i, (p, s) in enumerate(zip(model.parameters(), start)):
        deltas = [-0.1 * g[i].reshape(-1) for g in grads]
        want = s.double() + (adasum_reference(deltas) if N > 1 else deltas[0]).reshape(s.shape)
        check(close(p.detach(), want, 1e-5), "Adasum optimizer, parameter %d", i)


# ---- DistributedOptimizer ---------------------------------------------------------------

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(6, 5)
        self.b = torch.nn.Linear(5, 3)

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


def train_once(options):
    torch.manual_seed(3)
    model = Net()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5), **options(model))
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(60 + R))
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]), opt


def test_optimizer_options():
    named, _ = train_once(lambda m: {"named_parameters": m.named_parameters()})
    unnamed, opt = train_once(lambda m: {})
    # fused differently, summed in another order at 3 ranks: a few ulps
    check(close(unnamed, named, 1e-6), "without named_parameters: the same training")
    names = set(opt._parameter_names.values())
    check(len(names) == len(opt._parameter_names), "unique default names")
    check(all(n == names for n in hvd.allgather_object(names)), "the same names on every rank")
    for groups in (2, "list"):
        got, _ = train_once(lambda m: {"named_parameters": m.named_parameters(), "groups":
                                       [[m.a.weight, m.b.weight]] if groups == "list" else groups})
        check(close(got, named, 1e-6), "groups=%s: the same training as ungrouped", groups)
    every = hvd.allgather_object(named.numpy().tobytes())
    check(all(b == every[0] for b in every), "identical parameters on every rank")
    raises(ValueError, hvd.DistributedOptimizer, torch.optim.SGD(Net().parameters(), lr=1),
           op=hvd.Sum, gradient_predivide_factor=2.0)
    raises(ValueError, hvd.DistributedOptimizer, torch.optim.SGD(Net().parameters(), lr=1),
           backward_passes_per_step=0)
    m = Net()
    raises(ValueError, hvd.DistributedOptimizer, torch.optim.SGD(m.parameters(), lr=1),
           named_parameters=list(m.named_parameters())[:1])


def test_sparse_gradients():
    results = []
    for dense in (False, True):
        torch.manual_seed(4)
        emb = torch.nn.Embedding(10, 3, sparse=True)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=1.0),
                                       sparse_as_dense=dense)
        idx = torch.tensor([[R % 10, 3], [5, (2 * R + 1) % 10]])
        opt.zero_grad()
        emb(idx).sum().backward()
        opt.step()
        results.append(emb.weight.detach().clone())
    check(close(results[0], results[1], 1e-6), "sparse allgather and sparse_as_dense agree")
    torch.manual_seed(4)
    ref = torch.nn.Embedding(10, 3).weight.detach().clone()
    counts = torch.zeros(10)
    for r in range(N):
        for i in (r % 10, 3, 5, (2 * r + 1) % 10):
            counts[i] += 1
    check(close(results[0], ref - counts[:, None] / N, 1e-6), "the averaged sparse gradient")


def test_optimizer_on_a_process_set():
    if N < 2:
        return
    members = [0, 1] if N > 2 else [0]
    first = hvd.add_process_set(members)
    torch.manual_seed(7)
    model = torch.nn.Linear(3, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.3),
                                   named_parameters=model.named_parameters(), process_set=first)
    opt.zero_grad()
    model(torch.full((2, 3), float(R + 1))).sum().backward()
    opt.step()
    w = hvd.allgather(model.weight.detach())
    if N > 2:
        check(torch.equal(w[0], w[1]), "ranks 0 and 1 step together")
    check(not torch.equal(w[-1], w[0]), "a rank outside the set steps alone")
    hvd.remove_process_set(first)


def test_broadcast_optimizer_state_without_state():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.index = torch.nn.Parameter(torch.tensor([1, 3]), requires_grad=False)
            self.values = torch.nn.Parameter(torch.rand(4))

    torch.manual_seed(20 + R)
    model = Model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    check(model.index.grad is None, "no gradient made for a parameter that needs none")
    check(model.values.grad is not None and torch.equal(model.values.grad, torch.zeros(4)),
          "zero gradients made the state")
    state = opt.state_dict()["state"]
    check(len(state) == 1, "state for the trainable parameter: %s", list(state))
    blobs = hvd.allgather_object([v.numpy().tobytes() for s in state.values()
                                  for v in s.values() if torch.is_tensor(v)])
    check(all(b == blobs[0] for b in blobs), "the same state everywhere")
    opt2 = torch.optim.Adam(torch.nn.Linear(2, 2).parameters(), lr=0.1 * (R + 1))
    hvd.broadcast_optimizer_state(opt2, root_rank=0)
    check(opt2.param_groups[0]["lr"] == 0.1 and isinstance(opt2.param_groups[0]["betas"], tuple),
          "hyperparameters from the root, their types kept")


def test_sync_batch_norm():
    """Each rank normalizes its part of one batch with the whole batch's
    statistics: outputs, running statistics and input gradients are those
    of torch's BatchNorm on the whole batch; the weight and bias gradients
    are this rank's part (DistributedOptimizer sums them up)."""
    g = torch.Generator().manual_seed(31)
    whole = torch.randn(2 * N, 3, 4, generator=g, dtype=torch.float64) * 3 + 1
    upstream = torch.randn(2 * N, 3, 4, generator=g, dtype=torch.float64)
    ref = torch.nn.BatchNorm1d(3).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor([1.5, -0.5, 2.0]))
        ref.bias.copy_(torch.tensor([0.1, 0.2, 0.3]))
    sync = hvd.SyncBatchNorm(3).double()
    sync.load_state_dict(ref.state_dict())
    x_all = whole.clone().requires_grad_()
    out_all = ref(x_all)  # once: each training call moves the running statistics
    (out_all * upstream).sum().backward()
    x = whole[2 * R:2 * R + 2].clone().requires_grad_()
    y = sync(x)
    (y * upstream[2 * R:2 * R + 2]).sum().backward()
    check(close(y.detach(), out_all[2 * R:2 * R + 2].detach(), 1e-12), "outputs")
    check(close(sync.running_mean, ref.running_mean, 1e-12) and
          close(sync.running_var, ref.running_var, 1e-12), "running statistics")
    check(close(x.grad, x_all.grad[2 * R:2 * R + 2], 1e-12), "input gradients")
    wsum = hvd.allreduce(sync.weight.grad, op=hvd.Sum)
    check(close(wsum, ref.weight.grad, 1e-12), "weight gradients add up to the whole batch's")
    sync.eval()
    check(close(sync(x.detach()), ref.eval()(x.detach()), 1e-12), "eval: running statistics")
    raises(ValueError, sync, torch.ones(3))


def test_join():
    for first in range(N):
        steps = 0 if R == first else 2
        for s in range(steps):
            got = hvd.allreduce(torch.ones(2) * (R + 1), op=hvd.Sum, name="join.%d" % s)
            check(torch.equal(got, torch.full((2,), N * (N + 1) / 2 - (first + 1))),
                  "served with zeros by the joined rank")
        if R != first and N > 1:
            root = (first + 1) % N  # a rank that has not joined
            for call in (lambda: hvd.allgather(torch.ones(1)), lambda: hvd.broadcast(
                    torch.ones(1), root_rank=root), lambda: hvd.reducescatter(torch.ones(N)),
                         lambda: hvd.alltoall(torch.ones(N))):
                e = raises(HIE, call)
                check(e is not None and e.status == "RONDO_ERR_JOINED", "joined: %s", e)
        last = hvd.join()
        check(last != first or N == 1, "the last to join is not the first (%d)", last)
        check(hvd.allgather_object(last) == [last] * N, "every rank gets the same last rank")
        # unnamed calls match again after an uneven join
        check(torch.equal(hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.full((1,), float(N))),
              "unnamed after join")


def test_timeline():
    check(not os.path.exists("DYNAMIC"), "HOROVOD_TIMELINE=DYNAMIC made no file")
    path = os.path.join(tempfile.gettempdir(), "rondo-hvd-timeline-%d.json" % os.getppid())
    hvd.start_timeline(path, mark_cycles=True)
    rondo.world().timeline_mark("a step")
    hvd.allreduce(torch.ones(3), name="tl.during")
    hvd.stop_timeline()
    rondo.world().timeline_mark("after the stop")
    try:
        rondo.world().timeline_mark("")
        check(False, "an empty mark is refused")
    except rondo.RondoError as e:
        check(e.status == "RONDO_ERR_INVALID_ARG", "an empty mark: %s", e)
    hvd.allreduce(torch.ones(3), name="tl.after")
    if R == 0:
        events = json.load(open(path))
        names = {e["args"]["name"] for e in events if e.get("ph") == "M"}
        check("tl.during" in names and "tl.after" not in names, "timeline tracks: %s", names)
        check(any(e.get("name") == "cycle" for e in events), "cycle marks")
        marks = [e["name"] for e in events if e.get("cat") == "app"]
        check(marks == ["a step"], "the program's marks while the timeline ran: %s", marks)
        os.unlink(path)
    hvd.barrier()


def test_grouped_forms_fuse():
    """grouped_reducescatter and grouped_allgather run as ONE collective of
    the fused buffer each (the engine's timeline shows one REDUCESCATTER and
    one ALLGATHER span, fused over the group's tensors), with the results
    of separate calls."""
    path = os.path.join(tempfile.gettempdir(), "rondo-hvd-fused-%d.json" % os.getppid())
    ins = [torch.arange(float(N * 3)).reshape(N, 3) * (R + 1), torch.full((2 * N,), float(R)),
           torch.ones(N, 2, dtype=torch.float32) * (R - 1)]
    shards = [torch.full((2, k), float(R + k)) for k in (1, 2, 3)]
    apart_rs = [hvd.reducescatter(t, op=hvd.Sum, name="apart.rs.%d" % i) for i, t in enumerate(ins)]
    apart_ag = [hvd.allgather(t, name="apart.ag.%d" % i) for i, t in enumerate(shards)]
    hvd.start_timeline(path)
    rs = hvd.grouped_reducescatter(ins, op=hvd.Sum, name="fused.rs")
    ag = hvd.grouped_allgather(shards, name="fused.ag")
    hvd.stop_timeline()
    for i in range(len(ins)):
        check(torch.equal(rs[i], apart_rs[i]), "grouped_reducescatter %d: %s against %s", i,
              rs[i], apart_rs[i])
        want = torch.cat([torch.full((2, i + 1), float(q + i + 1)) for q in range(N)])
        check(torch.equal(ag[i], want) and torch.equal(ag[i], apart_ag[i]),
              "grouped_allgather %d", i)
    if R == 0:
        events = json.load(open(path))
        spans = {}
        for e in events:
            if e.get("ph") == "X" and e.get("name") in ("REDUCESCATTER", "ALLGATHER"):
                spans.setdefault(e["name"], []).append(e.get("args", {}).get("fused"))
        # one span per tensor's track, each saying the whole group was fused
        check(spans.get("REDUCESCATTER") == [3, 3, 3], "reduce-scatter spans: %s", spans)
        check(spans.get("ALLGATHER") == [3, 3, 3], "all-gather spans: %s", spans)
        os.unlink(path)
    hvd.barrier()


# ---- errors on every rank -----------------------------------------------------------------

def one_rank(bad, good, exc, what):
    """mpitest.one_rank: the others raise HIE."""
    mpitest.one_rank(bad, good, exc, HIE, what)


def test_errors_on_every_rank():
    x = torch.ones(4)
    one_rank(lambda: hvd.allreduce(torch.ones(4, dtype=torch.bool)), lambda: hvd.allreduce(x),
             TypeError, "a dtype")
    one_rank(lambda: hvd.allgather(torch.tensor(1.0)), lambda: hvd.allgather(x), ValueError,
             "a scalar allgather")
    one_rank(lambda: hvd.alltoall(x, splits=[5] + [0] * (N - 1)),
             lambda: hvd.alltoall(torch.ones(N)), ValueError, "splits past the end")
    one_rank(lambda: hvd.alltoall(x, splits=torch.ones(N)),
             lambda: hvd.alltoall(torch.ones(N)), ValueError, "float splits")
    one_rank(lambda: hvd.broadcast(x, N), lambda: hvd.broadcast(x, 0), ValueError,
             "a root outside")
    one_rank(lambda: hvd.allreduce(x, op="median"), lambda: hvd.allreduce(x), ValueError,
             "an op")
    one_rank(lambda: hvd.grouped_allreduce([x, torch.ones(2, dtype=torch.complex64)]),
             lambda: hvd.grouped_allreduce([x, x]), TypeError, "a group with a bad member")
    one_rank(lambda: hvd.broadcast_object(threading.Lock(), root_rank=0),
             lambda: hvd.broadcast_object(None, root_rank=0), ValueError,
             "an object the root cannot pickle")
    one_rank(lambda: hvd.allgather_object(threading.Lock()), lambda: hvd.allgather_object(R),
             ValueError, "an object a rank cannot pickle")
    raises(ValueError, hvd.reducescatter, torch.tensor(float(R)))  # scalars: every rank
    raises(ValueError, hvd.alltoall, torch.ones(N + 1) if N > 1 else torch.tensor(1.0))
    if N == 1:
        return
    for call, what in ((lambda: hvd.allreduce(torch.ones(17, 4) if R == 0 else torch.ones(4, 17)),
                        "shapes with one count"),
                       (lambda: hvd.allreduce(torch.ones(3, dtype=torch.int32 if R else
                                                         torch.float32)), "dtypes"),
                       (lambda: hvd.allgather(torch.ones(2, 3 + R)), "row shapes"),
                       (lambda: hvd.broadcast(x, R), "roots"),
                       (lambda: hvd.reducescatter(torch.ones(N + R)), "reducescatter rows")):
        e = raises(HIE, call)
        check(e is not None and e.status == "RONDO_ERR_MISMATCH", "%s differ: %s", what, e)
    if R == 0:
        h = hvd.allreduce_async(x, name="dup")
        raises(ValueError, hvd.allreduce_async, x, name="dup")
    hvd.barrier()
    if R > 0:
        h = hvd.allreduce_async(x, name="dup")
    check(torch.equal(hvd.synchronize(h), x), "the first request of a duplicate name runs")
    e = raises(ValueError, hvd.broadcast_parameters, {"w%d" % R: torch.ones(2)}, 0)
    check(e is not None and "disagree" in str(e), "parameter names: %s", e)
    raises(ValueError, hvd.broadcast_parameters, {"w": torch.ones(2 + R)}, 0)


run("test_horovod_api", [test_build_queries, test_every_dtype_every_collective,
                         test_async_and_grouped_forms, test_reducescatter_uneven_and_scaled,
                         test_alltoall_splits, test_process_sets, test_gradients, test_adasum_op,
                         test_adasum_optimizer, test_optimizer_options, test_sparse_gradients,
                         test_optimizer_on_a_process_set,
                         test_broadcast_optimizer_state_without_state, test_sync_batch_norm,
                         test_join, test_timeline, test_grouped_forms_fuse,
                         test_errors_on_every_rank])
