"""The Python probes (tests/probe/py-*.probe): one planted failure per case,
run under mpiexec -n 2 as `py_probe.py CASE`. Each rank prints lines

    rank R: LABEL ok[: detail]
    rank R: LABEL ERROR: ExceptionType[ STATUS]: message

(each with one write(), so the ranks' lines never interleave) and
`rank R: done` at the end. A case that hangs is killed by the probe's time
limit; the .probe file says what every rank must print.
"""
import os
import sys
import threading


def say(text):
    os.write(1, ("rank %d: %s\n" % (RANK, text)).encode(errors="replace"))


def attempt(label, fn):
    """Runs fn(); prints LABEL ok or LABEL ERROR; returns fn's result or None."""
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001 - every failure is what we report
        status = getattr(e, "status", None)
        msg = " ".join(str(e).split())
        say("%s ERROR: %s%s: %s" % (label, type(e).__name__, " " + status if status else "",
                                    msg))
        return None
    say("%s ok" % label)
    return value


def check(label, cond, detail=""):
    say("%s %s%s" % (label, "ok" if cond else "WRONG", ": " + detail if detail else ""))


def np_after(r):
    """The comm still works: a blocking all-reduce gives the right sum."""
    import numpy as np
    got = attempt("after", lambda: r.allreduce(np.ones(3, np.float32)))
    if got is not None:
        check("after data", (got == r.size()).all(), str(got))


def torch_after(hvd):
    import torch
    got = attempt("after", lambda: hvd.allreduce(torch.ones(3), op=hvd.Sum, name="after"))
    if got is not None:
        check("after data", bool((got == hvd.size()).all()), str(got))


# ---- the cases --------------------------------------------------------------------------

def case_np_object():
    """broadcast_object with an object the root cannot pickle, then
    allgather_object with one rank 1 cannot pickle."""
    import rondo as r
    r.init()
    obj = (lambda: 0) if RANK == 0 else None
    attempt("bcast", lambda: r.broadcast_object(obj, 0))
    got = attempt("bcast good", lambda: r.broadcast_object({"a": RANK} if RANK == 0 else None))
    if got is not None:
        check("bcast good data", got == {"a": 0}, repr(got))
    obj = threading.Lock() if RANK == 1 else RANK
    attempt("gather", lambda: r.allgather_object(obj))
    got = attempt("gather good", lambda: r.allgather_object(RANK))
    if got is not None:
        check("gather good data", got == list(range(r.size())), repr(got))
    np_after(r)


def case_torch_object():
    """rondo.torch.broadcast_object / allgather_object, as case_np_object."""
    import rondo.torch as hvd
    hvd.init()
    # (a lock: cloudpickle, which rondo.torch uses where installed, takes lambdas)
    obj = threading.Lock() if RANK == 0 else None
    attempt("bcast", lambda: hvd.broadcast_object(obj, 0, name="bo"))
    got = attempt("bcast good", lambda: hvd.broadcast_object("x%d" % RANK, 0))
    if got is not None:
        check("bcast good data", got == "x0", repr(got))
    obj = threading.Lock() if RANK == 1 else RANK
    attempt("gather", lambda: hvd.allgather_object(obj))
    got = attempt("gather good", lambda: hvd.allgather_object(RANK))
    if got is not None:
        check("gather good data", got == list(range(hvd.size())), repr(got))
    torch_after(hvd)


def case_tdist_object():
    """rondo.torch.distributed's object calls on the rondo backend (every
    rank raises together, the group goes on); then torch's own
    broadcast_object_list with an object the source cannot pickle: the
    source raises, the other rank's broadcast fails at the group's timeout
    (the group is out of step afterwards, as torch leaves it)."""
    import datetime
    import time
    import torch
    import torch.distributed as dist
    import rondo.torch.distributed as rdist
    dist.init_process_group("rondo", timeout=datetime.timedelta(seconds=3))
    objs = [(lambda: 0) if RANK == 0 else None]
    attempt("bcast", lambda: rdist.broadcast_object_list(objs, src=0))
    objs = ["x%d" % RANK]
    attempt("bcast good", lambda: rdist.broadcast_object_list(objs, src=0))
    check("bcast good data", objs == ["x0"], repr(objs))
    out = [None] * dist.get_world_size()
    attempt("gather", lambda: rdist.all_gather_object(out, threading.Lock() if RANK == 1
                                                      else RANK))
    out = [None] * dist.get_world_size()
    attempt("gather good", lambda: rdist.all_gather_object(out, RANK))
    check("gather good data", out == list(range(dist.get_world_size())), repr(out))
    t = torch.ones(3)
    attempt("after", lambda: dist.all_reduce(t))
    check("after data", bool((t == dist.get_world_size()).all()), str(t))
    objs = ["y%d" % RANK]
    attempt("torch bcast good", lambda: dist.broadcast_object_list(objs, src=0))
    check("torch bcast good data", objs == ["y0"], repr(objs))
    objs = [(lambda: 0) if RANK == 0 else None]
    start = time.monotonic()
    attempt("torch bcast", lambda: dist.broadcast_object_list(objs, src=0))
    if RANK == 0:
        time.sleep(5)  # still here when the other rank's wait times out
    else:
        check("torch bcast timeout", time.monotonic() - start < 20)
    dist.destroy_process_group()


def _tdist_after(torch, dist):
    t = torch.ones(3)
    attempt("after", lambda: dist.all_reduce(t))
    check("after data", bool((t == dist.get_world_size()).all()), str(t))


def case_tdist_gather_object():
    """rondo.torch.distributed.gather_object on the rondo backend: an object a
    non-destination rank cannot pickle, one the destination cannot pickle,
    an output list where there must be none; then a good gather."""
    import torch
    import torch.distributed as dist
    import rondo.torch.distributed as rdist
    dist.init_process_group("rondo")
    n = dist.get_world_size()
    out = [None] * n if RANK == 0 else None
    attempt("gather", lambda: rdist.gather_object(threading.Lock() if RANK == 1 else RANK,
                                                  out, dst=0))
    out = [None] * n if RANK == 1 else None
    attempt("gather dst", lambda: rdist.gather_object((lambda: 0) if RANK == 1 else RANK,
                                                      out, dst=1))
    out = [None] * n  # a list on rank 0 too, which is not the destination
    attempt("gather args", lambda: rdist.gather_object(RANK, out, dst=1))
    out = [None] * n if RANK == 1 else None
    obj = {"rank": RANK, "pad": "x" * (100 * RANK)}
    attempt("gather good", lambda: rdist.gather_object(obj, out, dst=1))
    want = [{"rank": r, "pad": "x" * (100 * r)} for r in range(n)] if RANK == 1 else None
    check("gather good data", out == want, repr(out)[:80])
    _tdist_after(torch, dist)
    dist.destroy_process_group()


def case_tdist_scatter_object():
    """rondo.torch.distributed.scatter_object_list on the rondo backend: a
    source list with an object it cannot pickle, an empty output list on
    rank 1; then a good scatter from rank 1."""
    import torch
    import torch.distributed as dist
    import rondo.torch.distributed as rdist
    dist.init_process_group("rondo")
    n = dist.get_world_size()
    out = [None]
    objs = [r if r != 1 else (lambda: 0) for r in range(n)] if RANK == 0 else None
    attempt("scatter", lambda: rdist.scatter_object_list(out, objs, src=0))
    objs = list(range(n)) if RANK == 0 else None
    attempt("scatter args", lambda: rdist.scatter_object_list([] if RANK == 1 else [None],
                                                              objs, src=0))
    out = [None, "kept"]
    objs = [("to", r, "x" * (100 * r)) for r in range(n)] if RANK == 1 else None
    attempt("scatter good", lambda: rdist.scatter_object_list(out, objs, src=1))
    check("scatter good data", out == [("to", RANK, "x" * (100 * RANK)), "kept"],
          repr(out)[:80])
    _tdist_after(torch, dist)
    dist.destroy_process_group()


def _model(extra):
    import torch
    torch.manual_seed(1)
    layers = [torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)]
    if extra:
        layers.append(torch.nn.Linear(2, 2))
    return torch.nn.Sequential(*layers)


def case_optimizer_params():
    """DistributedOptimizer over a model with an extra layer on rank 1."""
    import torch
    import rondo.torch as hvd
    hvd.init()
    model = _model(RANK == 1)
    opt = attempt("construct", lambda: hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters()))
    if opt is not None:
        def step():
            opt.zero_grad()
            model(torch.ones(1, 4)).sum().backward()
            opt.step()
        attempt("step", step)
    torch_after(hvd)


def case_optimizer_names():
    """DistributedOptimizer: as many parameters everywhere, one name differs."""
    import torch
    import rondo.torch as hvd
    hvd.init()
    model = _model(False)
    named = [("rank%d.%s" % (RANK, n) if n == "1.bias" else n, p)
             for n, p in model.named_parameters()]
    opt = attempt("construct", lambda: hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=named))
    if opt is not None:
        def step():
            opt.zero_grad()
            model(torch.ones(1, 4)).sum().backward()
            opt.step()
        attempt("step", step)
    torch_after(hvd)


def case_broadcast_parameters():
    """broadcast_parameters of state dicts whose keys differ, shapes alike."""
    import torch
    import rondo.torch as hvd
    hvd.init()
    if RANK == 0:
        state = {"a": torch.full((3,), 1.0), "b": torch.full((3,), 2.0)}
    else:
        state = {"a": torch.zeros(3), "c": torch.zeros(3)}
    attempt("bcast params", lambda: hvd.broadcast_parameters(state, root_rank=0))
    if RANK != 0:
        check("untouched", bool((state["a"] == 0).all() and (state["c"] == 0).all()),
              str(state))
    good = {"a": torch.full((2,), float(RANK + 5))}
    attempt("bcast good", lambda: hvd.broadcast_parameters(good, root_rank=0))
    check("bcast good data", bool((good["a"] == 5).all()), str(good["a"]))
    torch_after(hvd)


def case_broadcast_optimizer_state():
    """broadcast_optimizer_state of optimizers over differently named models."""
    import torch
    import rondo.torch as hvd
    hvd.init()
    model = _model(RANK == 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    attempt("bcast state", lambda: hvd.broadcast_optimizer_state(opt, root_rank=0))
    torch_after(hvd)


def case_np_join_pending():
    """rondo.join() while this rank still has an all-reduce in flight."""
    import numpy as np
    import rondo as r
    r.init()
    a = np.full(4, RANK + 1.0, np.float32)
    h = r.allreduce_async(a, name="pending")
    if RANK == 1:
        last = attempt("join", r.join)
        got = attempt("wait", h.wait)
    else:
        got = attempt("wait", h.wait)
        last = attempt("join", r.join)
    if got is not None:
        check("data", (got == 3).all(), str(got))
    np_after(r)


def case_torch_join_pending():
    """rondo.torch.join() with an allreduce_async of this rank pending."""
    import torch
    import rondo.torch as hvd
    hvd.init()
    t = torch.full((4,), RANK + 1.0)
    h = hvd.allreduce_async(t, name="pending", op=hvd.Sum)
    if RANK == 1:
        attempt("join", hvd.join)
        got = attempt("wait", lambda: hvd.synchronize(h))
    else:
        got = attempt("wait", lambda: hvd.synchronize(h))
        attempt("join", hvd.join)
    if got is not None:
        check("data", bool((got == 3).all()), str(got))
    torch_after(hvd)


def case_exit_dropped():
    """Each rank submits an all-reduce no other rank makes, drops its handle
    and exits: the exit path must end (the requests fail with
    RONDO_ERR_SHUT_DOWN), not wait for them."""
    import numpy as np
    import rondo as r
    r.init()
    np_after(r)
    h = r.allreduce_async(np.ones(4, np.float32), name="only-rank-%d" % RANK)
    del h
    say("dropped")


def case_exit_dropped_torch():
    """As exit-dropped, through rondo.torch, and with a second handle still
    referenced at exit."""
    import torch
    import rondo.torch as hvd
    hvd.init()
    torch_after(hvd)
    global KEEP
    KEEP = hvd.allreduce_async(torch.ones(4), name="kept-by-rank-%d" % RANK)
    h = hvd.allreduce_async(torch.ones(4), name="only-rank-%d" % RANK)
    del h
    say("dropped")


def case_torch_set_leave():
    """Horovod's API at 3 ranks: a process set of ranks 0 and 2; rank 2
    raises and exits (its atexit shutdown finalizes rondo) while ranks 0 and
    1 wait for it in hvd.barrier(), then in an all-reduce on the global set.
    Both calls raise on both ranks, naming rank 2, instead of waiting."""
    import torch
    import rondo.torch as hvd
    hvd.init()
    ps = attempt("add_process_set", lambda: hvd.add_process_set([0, 2]))
    if RANK == 2:
        say("leaving")
        raise SystemExit(3)
    import time
    time.sleep(0.3)
    attempt("barrier", hvd.barrier)
    attempt("allreduce", lambda: hvd.allreduce(torch.ones(3), op=hvd.Sum, name="after-leave"))
    del ps


def case_np_grouped_count():
    """grouped_allreduce with 3 arrays on rank 0 and 2 on rank 1."""
    import numpy as np
    import rondo as r
    r.init()
    n = 3 if RANK == 0 else 2
    attempt("grouped", lambda: r.grouped_allreduce([np.ones(4, np.float32)] * n))
    got = attempt("grouped good", lambda: r.grouped_allreduce([np.ones(2, np.float32)] * 2))
    if got is not None:
        check("grouped good data", all((g == r.size()).all() for g in got), str(got))
    np_after(r)


def case_torch_grouped_count():
    """rondo.torch.grouped_allreduce with 3 tensors on rank 0 and 2 on rank 1."""
    import torch
    import rondo.torch as hvd
    hvd.init()
    n = 3 if RANK == 0 else 2
    attempt("grouped", lambda: hvd.grouped_allreduce([torch.ones(4)] * n, op=hvd.Sum))
    got = attempt("grouped good", lambda: hvd.grouped_allreduce([torch.ones(2)] * 2, op=hvd.Sum))
    if got is not None:
        check("grouped good data", all(bool((g == hvd.size()).all()) for g in got), str(got))
    torch_after(hvd)


def case_np_async_refused():
    """allreduce_async with an array rank 1 cannot pass (complex, then
    non-contiguous, then None): rank 1 raises at submission, rank 0's wait
    fails naming rank 1, instead of waiting for it."""
    import numpy as np
    import rondo as r
    r.init()
    good = np.ones(4, np.float32)
    for label, bad in (("complex", np.ones(4, np.complex64)),
                       ("strided", np.ones(8, np.float32)[::2]), ("none", None)):
        if RANK == 1:
            attempt(label + " submit", lambda: r.allreduce_async(bad))
        else:
            h = attempt(label + " submit", lambda: r.allreduce_async(good))
            if h is not None:
                attempt(label + " wait", h.wait)
    np_after(r)
    h = attempt("async after", lambda: r.allreduce_async(np.ones(2, np.float32)))
    if h is not None:
        got = attempt("async after wait", h.wait)
        if got is not None:
            check("async after data", (got == r.size()).all(), str(got))


CASES = {name[5:].replace("_", "-"): fn for name, fn in globals().items()
         if name.startswith("case_")}

if __name__ == "__main__":
    RANK = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit("usage: py_probe.py CASE (%s)" % ", ".join(sorted(CASES)))
    CASES[sys.argv[1]]()
    say("done")
