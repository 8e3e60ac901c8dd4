"""rondo.torch, the horovod.torch drop-in, under mpiexec at 1-3 ranks
(tests/python/launch): the collectives on every dtype against closed-form
results; DistributedOptimizer parity (N ranks with N shards end with the
parameters one process gets from the global batch, also with
backward_passes_per_step=2 and fp16 compression); parameter and optimizer
state broadcast; join with uneven steps."""
import torch

import rondo.torch as hvd
from mpitest import check, raises, run

hvd.init()
R, N = hvd.rank(), hvd.size()
torch.set_num_threads(1)

DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]
# Parity bound: float32 gradients averaged over ranks are sums in another
# order than one process's mean over the batch; after 5 SGD steps on this
# model the parameters agree to a few ulps of their size.
PARITY_ATOL = 1e-6


def test_collectives_every_dtype():
    for dt in DTYPES:
        x = (torch.arange(10) % 5 + R + 1).to(dt)
        want = (torch.arange(10) % 5 * N + N * (N + 1) // 2).to(dt)
        got = hvd.allreduce(x, op=hvd.Sum, name="dt.sum.%s" % dt)
        check(got.dtype == dt and torch.equal(got, want), "sum %s: %s want %s", dt, got, want)
        got = hvd.allreduce(x, op=hvd.Max, name="dt.max.%s" % dt)
        check(torch.equal(got, (torch.arange(10) % 5 + N).to(dt)), "max %s", dt)
        got = hvd.allgather(x[: R + 1].contiguous())
        want = torch.cat([(torch.arange(r + 1) % 5 + r + 1).to(dt) for r in range(N)])
        check(got.dtype == dt and torch.equal(got, want), "allgather %s", dt)
        got = hvd.broadcast(x, root_rank=N - 1)
        check(torch.equal(got, (torch.arange(10) % 5 + N).to(dt)), "broadcast %s", dt)


def test_allreduce_variants():
    x = torch.full((3, 4), float(R + 1))
    mean = (N + 1) / 2
    check(torch.equal(hvd.allreduce(x), torch.full((3, 4), mean)), "default is the average")
    check(torch.equal(hvd.allreduce(x, average=False), torch.full((3, 4), N * mean)),
          "average=False sums")
    y = x.clone()
    check(hvd.allreduce_(y, op=hvd.Min) is y and torch.equal(y, torch.ones(3, 4)), "in place")
    h = hvd.allreduce_async(x, name="var.async", op=hvd.Sum)
    out = hvd.synchronize(h)
    check(hvd.poll(h) and torch.equal(out, torch.full((3, 4), N * mean)), "async + poll")
    z = x.clone()
    h = hvd.allreduce_async_(z, name="var.async_", op=hvd.Product)
    prod = 1.0
    for r in range(N):
        prod *= r + 1
    check(hvd.synchronize(h) is z and torch.equal(z, torch.full((3, 4), prod)), "async_")
    got = hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.25)
    check(torch.equal(got, torch.full((3, 4), N * mean * 0.5)), "scales: %s", got[0, 0])
    got = hvd.allreduce(x, compression=hvd.Compression.fp16, op=hvd.Sum)
    check(got.dtype == torch.float32 and torch.equal(got, torch.full((3, 4), N * mean)),
          "fp16 compression returns float32")
    res = hvd.grouped_allreduce([torch.ones(2), torch.full((5,), float(R))], op=hvd.Sum)
    check(torch.equal(res[0], torch.full((2,), float(N))) and
          torch.equal(res[1], torch.full((5,), N * (N - 1) / 2)), "grouped")
    w = torch.ones(4, requires_grad=True)
    s = hvd.allreduce(w * (R + 1), op=hvd.Sum, name="grad.fwd")
    check(torch.equal(s.detach(), torch.full((4,), N * (N + 1) / 2)), "forward with grad")
    s.sum().backward()  # d/dw of sum_r (w (r + 1)) through the all-reduce of gradients
    check(torch.equal(w.grad, torch.full((4,), float(N) * (R + 1))), "allreduce is "
          "differentiable: %s", w.grad)


def test_errors():
    raises(TypeError, hvd.allreduce, torch.zeros(3, dtype=torch.complex64))
    raises(TypeError, hvd.allreduce, torch.zeros(3, dtype=torch.bool))
    strided = torch.arange(16.0).reshape(4, 4)[:, 0]
    raises(ValueError, hvd.allreduce_, strided)  # in place needs contiguous memory
    check(torch.equal(hvd.allreduce(strided, op=hvd.Sum), strided * N),
          "out of place takes a strided tensor (copied)")
    raises(ValueError, hvd.allreduce, torch.zeros(4), op=hvd.Sum, average=True)
    if torch.cuda.is_available() and not hvd.cuda_built():
        raises(TypeError, hvd.allreduce, torch.zeros(4, device="cuda"))
    if N > 1:
        e = raises(hvd.RondoError, hvd.allreduce, torch.zeros(3 + R), name="err.mismatch")
        check(e is not None and e.status == "RONDO_ERR_MISMATCH", "mismatch: %r", e)


def test_cuda_tensors():
    """CUDA tensors through the C library's device path (nccl at one rank,
    staged where ranks share the GPU): only where torch has CUDA and a
    device, and rondo was built with CUDA (the device machine)."""
    if not (torch.cuda.is_available() and hvd.cuda_built()):
        return
    dev = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
    for dt in (torch.float32, torch.float64, torch.int32, torch.float16, torch.bfloat16):
        x = (torch.arange(1000, device=dev) % 7 + R + 1).to(dt)
        want = ((torch.arange(1000) % 7) * N + N * (N + 1) // 2).to(dt)
        got = hvd.allreduce(x, op=hvd.Sum)
        check(got.is_cuda and torch.equal(got.cpu(), want), "CUDA allreduce %s", dt)
        y = x.clone()
        hvd.allreduce_(y, op=hvd.Max)
        check(torch.equal(y.cpu(), (torch.arange(1000) % 7 + N).to(dt)), "CUDA max %s", dt)
    hs = [hvd.allreduce_async(torch.full((10 + i,), float(R + 1), device=dev), op=hvd.Sum,
                              name="cuda.%d" % i) for i in range(4)]
    for i, h in enumerate(hs):
        check(torch.equal(hvd.synchronize(h).cpu(), torch.full((10 + i,), N * (N + 1) / 2)),
              "fused CUDA request %d", i)


def test_alltoall_join_barrier():
    x = torch.arange(2 * N) + 10 * R
    got = hvd.alltoall(x)
    want = torch.cat([torch.arange(2 * R, 2 * R + 2) + 10 * r for r in range(N)])
    check(torch.equal(got, want), "alltoall %s", got)
    out, received = hvd.alltoall(x, splits=[2] * N)
    check(torch.equal(out, want) and received.tolist() == [2] * N, "equal splits")
    if N > 1:  # uneven: one row to each rank but the last, which gets the rest
        out, received = hvd.alltoall(x, splits=[1] * (N - 1) + [N + 1])
        mine = 1 if R < N - 1 else N + 1
        first = R if R < N - 1 else N - 1
        check(received.tolist() == [mine] * N and torch.equal(out, torch.cat(
            [torch.arange(first, first + mine) + 10 * r for r in range(N)])), "uneven splits")
        raises(ValueError, hvd.alltoall, x, splits=[N + 1] * N)  # more rows than there are
    x = torch.arange(2.0 * N) + R
    got = hvd.reducescatter(x)
    check(torch.equal(got, torch.arange(2.0 * R, 2.0 * R + 2) + (N - 1) / 2), "reducescatter %s",
          got)
    check(torch.equal(hvd.reducescatter(x, op=hvd.Sum),
                      (torch.arange(2.0 * R, 2.0 * R + 2)) * N + N * (N - 1) / 2),
          "reducescatter sum")
    hvd.barrier()
    for k in range(R + 1):
        got = hvd.allreduce(torch.ones(3), op=hvd.Sum, name="join.%d" % k)
        check(torch.equal(got, torch.full((3,), float(N - k))), "uneven step %d", k)
    last = hvd.join()
    check(0 <= last < N, "join returns a rank")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def batch(seed, n=24):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 8, generator=g), torch.randint(0, 4, (n,), generator=g)


def train_reference(steps):
    """One process, the global batch."""
    torch.manual_seed(1)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for s in range(steps):
        x, y = batch(s)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model


def train_distributed(steps, passes=1, compression=hvd.Compression.none):
    """N ranks, each its shard of the global batch, cut into `passes`
    micro-batches whose losses are scaled by 1/passes."""
    torch.manual_seed(1 + R)  # different starts: broadcast_parameters must fix them
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                   backward_passes_per_step=passes, compression=compression)
    torch.manual_seed(1)
    ref_start = Net()
    if R == 0:
        model.load_state_dict(ref_start.state_dict())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    per = 24 // N  # 24 samples: equal shards and micro-batches at 1-4 ranks
    assert per * N == 24 and per % passes == 0, "the shards must be equal"
    for s in range(steps):
        x, y = batch(s)
        xs, ys = x[R * per:(R + 1) * per], y[R * per:(R + 1) * per]
        opt.zero_grad()
        m = per // passes
        for k in range(passes):
            out = model(xs[k * m:(k + 1) * m])
            loss = torch.nn.functional.cross_entropy(out, ys[k * m:(k + 1) * m]) / passes
            loss.backward()
        if N > 1:  # every gradient went out from its hook, during backward
            check(len(opt._handles) == len(list(model.parameters())),
                  "hooks submitted %d of %d gradients", len(opt._handles),
                  len(list(model.parameters())))
        opt.step()
    return model


def tobytes(tensors):
    return b"".join(t.detach().numpy().tobytes() for t in tensors)


def max_diff(a, b):
    return max((pa - pb).abs().max().item() for pa, pb in zip(a.parameters(), b.parameters()))


def test_optimizer_parity():
    ref = train_reference(5)
    for passes in (1, 2):
        model = train_distributed(5, passes)
        d = max_diff(model, ref)
        if R == 0:
            print("parity: %d ranks, backward_passes_per_step=%d: max |diff| %.3g" % (N, passes, d))
        check(d <= PARITY_ATOL, "%d ranks, backward_passes_per_step=%d: max |diff| %.3g > %g",
              N, passes, d, PARITY_ATOL)
        blobs = hvd.allgather_object(tobytes(model.parameters()))
        check(all(b == blobs[0] for b in blobs), "identical parameters on every rank")
    model = train_distributed(5, 1, hvd.Compression.fp16)
    d = max_diff(model, ref)
    check(d <= 1e-2, "fp16 compression: max |diff| %.3g", d)


def test_broadcast_state():
    torch.manual_seed(10 + R)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * (R + 1), momentum=0.9)
    if R == 0:  # only the root has momentum buffers
        x, y = batch(99)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    params = tobytes(model.parameters())
    state = opt.state_dict()
    mom = tobytes(state["state"][k]["momentum_buffer"] for k in sorted(state["state"]))
    got = hvd.allgather_object((params, mom, state["param_groups"][0]["lr"]))
    check(all(g[0] == got[0][0] for g in got), "parameters broadcast")
    check(all(g[1] == got[0][1] for g in got), "momentum broadcast")
    check(all(abs(g[2] - 0.1) < 1e-12 for g in got), "lr broadcast")
    named = list(model.named_parameters())
    hvd.broadcast_parameters(named, root_rank=N - 1)


run("test_torch", [test_collectives_every_dtype, test_allreduce_variants, test_errors,
                   test_cuda_tensors, test_alltoall_join_barrier, test_optimizer_parity,
                   test_broadcast_state])
