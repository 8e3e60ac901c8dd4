"""rondo's object collectives for torch.distributed: broadcast_object_list,
all_gather_object, gather_object and scatter_object_list with torch's
arguments, under rondo.torch.distributed.

torch's own functions work on a rondo group too, but they pickle before
their first collective: a rank that cannot pickle its object raises
there, and the others wait in that collective until the group's timeout
(init_process_group(timeout=...)) fails it (RONDO_ERR_STALLED); the group
is then out of step (those ranks made one call more) and must be
destroyed. These versions first exchange every rank's status (the pickled
size, or a failure), so every rank raises together, at once, and the group
goes on: the failing rank its own error, the others RondoError
(RONDO_ERR_PEER) naming it. On a group of another backend they call
torch's own functions. rondo.torch.distributed never replaces torch's.
"""
import pickle
import struct

import torch
import torch.distributed as dist

from rondo import RondoError

from .backend import ProcessGroupRondo

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list"]


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


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """torch.distributed.broadcast_object_list, on a rondo group: the sizes
    broadcast first are -1 where the source cannot pickle, so every rank
    raises (the source its pickling error, the others RondoError naming
    it) instead of the others waiting for a broadcast that never comes."""
    if _rondo_group(group) is None or dist.distributed_c10d._rank_not_in_group(group):
        return dist.broadcast_object_list(object_list, src, group, device)
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


def all_gather_object(object_list, obj, group=None):
    """torch.distributed.all_gather_object, on a rondo group: the sizes
    gathered first are -1 from a rank that cannot pickle, so every rank
    raises (that rank its pickling error, the others RondoError naming it)."""
    if _rondo_group(group) is None or dist.distributed_c10d._rank_not_in_group(group):
        return dist.all_gather_object(object_list, obj, group)
    data, err = _pickled(obj)
    sizes = _agree("all_gather_object", _CANNOT_PICKLE if err else len(data), err, group)
    width = max(sizes + [1])
    outs = [torch.empty(width, dtype=torch.uint8) for _ in sizes]
    dist.all_gather(outs, _padded(data, width), group=group)
    for i, (t, k) in enumerate(zip(outs, sizes)):
        object_list[i] = pickle.loads(t[:k].numpy().tobytes())


def gather_object(obj, object_gather_list=None, dst=0, group=None):
    """torch.distributed.gather_object, on a rondo group: the sizes are
    all-gathered first, -1 from a rank that cannot pickle (-2 from one whose
    output list is wrong: missing or short on dst, given elsewhere), so
    every rank raises (that rank its own error, the others RondoError
    naming it) instead of dst waiting for a gather that never comes."""
    if _rondo_group(group) is None or dist.distributed_c10d._rank_not_in_group(group):
        return dist.gather_object(obj, object_gather_list, dst, group)
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


def scatter_object_list(scatter_object_output_list, scatter_object_input_list, src=0,
                         group=None):
    """torch.distributed.scatter_object_list, on a rondo group: every rank
    first all-gathers its status (the source its largest pickled size, or -1
    where it cannot pickle one of its objects; -2 from a rank whose output
    list is not a list of at least one entry, or a source whose input is not
    one object per rank), so every rank raises together. Then one scatter
    of the objects, each slot its size and its bytes."""
    if _rondo_group(group) is None or dist.distributed_c10d._rank_not_in_group(group):
        return dist.scatter_object_list(
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

