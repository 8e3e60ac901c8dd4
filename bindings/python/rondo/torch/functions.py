"""Model and optimizer state, and any picklable object, across the ranks:
Horovod's horovod.torch.functions on rondo.torch's collectives.

Each function first checks that every rank means the same thing (the
parameter names, shapes and dtypes; the optimizer's state layout): a
difference raises ValueError on every rank, naming what differs, instead of
leaving requests that never match. An object the root cannot pickle (or a
rank cannot, for allgather_object) fails the call on every rank too.
"""
import hashlib
import pickle

import torch

from rondo import rank as _r_rank

from .ops import _refuse, _root, allgather, broadcast_, broadcast_async_, synchronize
from .process_sets import comm_of, global_process_set

try:  # Horovod pickles with cloudpickle; plain pickle where it is missing
    import cloudpickle as _pickler
except ImportError:
    _pickler = pickle

__all__ = ["broadcast_parameters", "broadcast_optimizer_state", "broadcast_object",
           "allgather_object"]


def _describe(items):
    return ["%s %s %s" % (name, tuple(t.shape), str(t.dtype).replace("torch.", ""))
            for name, t in items]


def _agree_layout(what, items, process_set):
    """Every rank must pass the same names, shapes and dtypes: one short
    digest is gathered, the lists themselves only when they differ."""
    layout = _describe(items)
    digest = hashlib.sha1("\n".join(layout).encode()).hexdigest()
    digests = allgather_object(digest, process_set=process_set)
    if len(set(digests)) == 1:
        return
    layouts = allgather_object(layout, process_set=process_set)
    other = next(r for r, d in enumerate(digests) if d != digests[0])
    a, b = layouts[0], layouts[other]
    only_a = [x for x in a if x not in b][:3]
    only_b = [x for x in b if x not in a][:3]
    raise ValueError("%s: the ranks disagree on what they broadcast: the first rank has %s, "
                     "rank %d of the set has %s (%d and %d entries)"
                     % (what, only_a or "none other", other, only_b or "none other",
                        len(a), len(b)))


def _named(params):
    """(name, tensor) pairs from a state_dict, a list of parameters or of
    (name, parameter) pairs (named_parameters()); names may be None."""
    if isinstance(params, dict):
        return sorted(params.items())
    try:
        items = list(params)
    except TypeError:
        raise ValueError("broadcast_parameters: params must be a dict, or an iterable of "
                         "tensors or (name, tensor) pairs, not %s" % type(params).__name__) \
            from None
    return [p if isinstance(p, tuple) else (None, p) for p in items]


def broadcast_parameters(params, root_rank=0, process_set=global_process_set):
    """Broadcasts parameters in place from root_rank (a global rank): a
    state_dict, named_parameters() or parameters(). Every rank must pass the
    same names, shapes and dtypes (ValueError on every rank otherwise)."""
    items = [(n, p) for n, p in _named(params) if isinstance(p, torch.Tensor)]
    _agree_layout("broadcast_parameters", [(str(n), p) for n, p in items], process_set)
    pending = []
    for name, p in items:
        data = p.data if isinstance(p, torch.nn.Parameter) else p
        target = data if data.is_contiguous() else data.contiguous()
        pending.append((data, target, broadcast_async_(target, root_rank, name,
                                                        process_set=process_set)))
    for data, target, handle in pending:
        synchronize(handle)
        if target is not data:
            with torch.no_grad():
                data.copy_(target)


def _is_distributed(optimizer):
    return getattr(type(optimizer), "_rondo_distributed", False)


def _initialize_state(optimizer, model):
    """A new optimizer has no state yet: zero gradients and one step of the
    wrapped optimizer make it (Horovod's way), so that every rank holds the
    same layout before the broadcast."""
    sparse = set()
    if model is not None:
        for m in model.modules():
            if isinstance(m, torch.nn.Embedding) and m.sparse:
                sparse.update(id(p) for p in m.parameters())
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad and p not in optimizer.state:
                p.grad = p.data.new(p.size()).zero_()
                if isinstance(optimizer, torch.optim.SparseAdam) or id(p) in sparse:
                    p.grad = p.grad.to_sparse()
    if _is_distributed(optimizer):
        # the wrapped class's step: the distributed one would all-reduce,
        # which the other ranks (with state already) do not
        super(type(optimizer), optimizer).step()
    else:
        optimizer.step()


def broadcast_optimizer_state(optimizer, root_rank=0, model=None,
                              process_set=global_process_set):
    """Gives every rank root_rank's optimizer state: per-parameter tensors
    (momentum, ...) in place, scalars and hyperparameters as objects. A rank
    whose optimizer has no state yet makes it first. model: to find sparse
    parameters (sparse embeddings), as in Horovod."""
    if isinstance(optimizer, torch.optim.LBFGS):
        # its state is nested and holds None: the whole state_dict travels
        state = broadcast_object(optimizer.state_dict(), root_rank, process_set=process_set)
        optimizer.load_state_dict(state)
        return
    if len(optimizer.state_dict()["state"]) == 0:
        _initialize_state(optimizer, model)
    state_dict = optimizer.state_dict()
    tensors, scalars, setters = [], {}, {}
    for index, group in enumerate(state_dict["param_groups"]):
        for key, value in sorted(group.items()):
            if key == "params":
                continue
            name = "group%d.%s" % (index, key)
            scalars[name] = value
            setters[name] = _option_setter(optimizer, index, key)
        for pid in group["params"]:
            for key, value in sorted(state_dict["state"].get(pid, {}).items()):
                name = "state%d.%s" % (pid, key)
                if torch.is_tensor(value):
                    tensors.append((name, value))
                else:
                    scalars[name] = value
                    setters[name] = _state_setter(state_dict, pid, key)
    layout = tensors + [(n, torch.empty(0)) for n in sorted(scalars)]
    _agree_layout("broadcast_optimizer_state", layout, process_set)
    if not tensors and not scalars:
        return  # a stateless optimizer
    broadcast_parameters(tensors, root_rank, process_set)
    for name, value in broadcast_object(scalars, root_rank, process_set=process_set).items():
        setters[name](value)


def _option_setter(optimizer, index, key):
    def put(value):
        optimizer.param_groups[index][key] = value
    return put


def _state_setter(state_dict, pid, key):
    def put(value):
        state_dict["state"][pid][key] = value  # the optimizer's own dict
    return put


def broadcast_object(obj=None, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's obj (pickled; cloudpickle where installed), on every rank
    of the set. An object the root cannot pickle raises there and
    HorovodInternalError on the others."""
    comm = comm_of(process_set)
    base = comm._name(name, "broadcast_object").decode()
    names = [("%s.sz" % base).encode(), ("%s.t" % base).encode()]
    # a refusal goes to the first name only: the others stop at its failure
    try:
        root = _root(comm, process_set, root_rank)
    except ValueError as e:
        _refuse(comm, names[:1], e, True)
    try:
        data = _pickler.dumps(obj) if comm.rank == root else b""
    except Exception as e:  # noqa: BLE001 - any pickling failure is refused alike
        _refuse(comm, names[:1], ValueError("broadcast_object: the root, rank %d, cannot pickle its "
                                        "object: %s" % (_r_rank(), e)), True)
    size = torch.tensor([len(data)], dtype=torch.int64)
    broadcast_(size, root_rank, names[0].decode(), process_set)
    buf = torch.frombuffer(bytearray(data), dtype=torch.uint8) if comm.rank == root \
        else torch.empty(int(size[0]), dtype=torch.uint8)
    broadcast_(buf, root_rank, names[1].decode(), process_set)
    return obj if comm.rank == root else _pickler.loads(buf.numpy().tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """Every rank's obj (pickled), as a list in the set's rank order."""
    comm = comm_of(process_set)
    base = comm._name(name, "allgather_object").decode()
    names = [("%s.sz" % base).encode(), ("%s.t" % base).encode()]
    try:
        data = _pickler.dumps(obj)
    except Exception as e:  # noqa: BLE001 - any pickling failure is refused alike
        _refuse(comm, names[:1], ValueError("allgather_object: rank %d cannot pickle its object: "
                                        "%s" % (_r_rank(), e)), True)
    sizes = allgather(torch.tensor([len(data)], dtype=torch.int64), names[0].decode(),
                      process_set)
    gathered = allgather(torch.frombuffer(bytearray(data), dtype=torch.uint8)
                         if data else torch.empty(0, dtype=torch.uint8),
                         names[1].decode(), process_set).numpy().tobytes()
    out, at = [], 0
    for n in sizes.tolist():
        out.append(_pickler.loads(gathered[at:at + n]))
        at += n
    return out

