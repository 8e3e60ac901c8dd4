"""Horovod's process sets on rondo: each registered ProcessSet is a rondo
comm over its ranks (rondo.Comm.split of the world), with an engine of its
own, so its collectives never wait for ranks outside it.

add_process_set and remove_process_set are collective over every rank, as
in Horovod with HOROVOD_DYNAMIC_PROCESS_SETS=1 (rondo needs no such
setting); every rank must pass the same ranks, and a difference raises
ValueError on every rank. Process sets made from an mpi4py communicator are
not supported (docs/python.md).
"""
import hashlib

import rondo as _r

__all__ = ["ProcessSet", "global_process_set", "add_process_set", "remove_process_set"]


class ProcessSet:
    """A set of ranks (global ranks, kept sorted) that run collectives
    together. Pass it to hvd.init(process_sets=[...]) or add_process_set();
    once registered, process_set_id is set and size(), rank() answer."""

    def __init__(self, ranks):
        try:
            ranks = sorted(ranks)
        except TypeError:
            raise ValueError("ProcessSet takes a list of ranks (rondo has no mpi4py "
                             "communicators: docs/python.md)") from None
        if any(not isinstance(r, int) or isinstance(r, bool) for r in ranks):
            raise ValueError("ProcessSet takes a list of integer ranks, got %r" % (ranks,))
        self.ranks = ranks
        self.process_set_id = None
        self.mpi_comm = None
        self._comm = None  # the rondo comm, on the ranks it includes

    def size(self):
        """The number of ranks, or None before the set is registered."""
        return None if self.process_set_id is None else len(self.ranks)

    def rank(self):
        """This process's rank within the set (None before registration, or
        where the set does not include it). Collectives still take global
        ranks for their roots, as in Horovod."""
        if self.process_set_id is None or not self.included():
            return None
        return self.ranks.index(_r.rank())

    def included(self):
        """Whether this process belongs to the set (None without ranks)."""
        if self.ranks is None:
            return None
        return _r.rank() in self.ranks

    def __repr__(self):
        return "ProcessSet(process_set_id=%s, ranks=%s)" % (self.process_set_id, self.ranks)

    __str__ = __repr__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0

_sets = {}      # process_set_id -> ProcessSet, the registered ones but the global
_next_id = [1]


def _setup_global():
    """At hvd.init(): the global set is the world comm."""
    global_process_set.ranks = list(range(_r.size()))
    global_process_set._comm = _r.world()


def _forget_all():
    """At hvd.shutdown(): rondo destroys the comms itself."""
    for ps in _sets.values():
        ps.process_set_id = None
        ps._comm = None
    _sets.clear()
    _next_id[0] = 1
    global_process_set._comm = None


def comm_of(process_set):
    """The rondo comm a collective on process_set runs on. ValueError where
    the set is not registered or does not include this rank: a local error,
    as in Horovod (the set's members do not expect this rank)."""
    if process_set is None:
        process_set = global_process_set
    if not isinstance(process_set, ProcessSet):
        raise ValueError("process_set must be a ProcessSet, not %s" % type(process_set).__name__)
    if process_set is global_process_set or process_set.process_set_id == 0:
        return _r.world()
    if process_set.process_set_id is None or process_set._comm is None:
        if process_set.process_set_id is not None and not process_set.included():
            raise ValueError("rank %d is not a member of %s" % (_r.rank(), process_set))
        raise ValueError("%s is not registered: pass it to hvd.init(process_sets=...) or "
                         "hvd.add_process_set() first" % process_set)
    return process_set._comm


def _agree(what, text):
    """Every rank's text (its view of the call) must be the same: a short
    digest goes round, and the texts only when they differ, so that every
    rank raises the same ValueError naming the first two that differ."""
    world = _r.world()
    digest = hashlib.sha1(text.encode()).hexdigest()
    digests = world.allgather_object(digest)
    if len(set(digests)) == 1:
        return
    texts = world.allgather_object(text)
    first = digests[0]
    other = next(i for i, d in enumerate(digests) if d != first)
    raise ValueError("%s: ranks disagree: rank 0 passed %s, rank %d passed %s"
                     % (what, texts[0], other, texts[other]))


def add_process_set(process_set):
    """Registers a process set (a ProcessSet or a list of ranks) and
    returns it. Collective: every rank calls it with the same ranks. A set
    may hold every rank (a comm of its own beside the global set's) or none
    (it runs nothing); two registered sets may not hold the same ranks."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    size = _r.size()
    ranks = process_set.ranks
    problem = ""
    if process_set.process_set_id is not None:
        problem = "%s is registered already" % process_set
    elif len(set(ranks)) != len(ranks):
        problem = "ranks %s repeat" % ranks
    elif ranks and (ranks[0] < 0 or ranks[-1] >= size):
        problem = "ranks %s are not all in 0..%d" % (ranks, size - 1)
    elif any(ps.ranks == ranks for ps in _sets.values()):
        problem = "a process set with ranks %s exists already" % ranks
    _agree("add_process_set", "%s%s" % (ranks, " (refused: %s)" % problem if problem else ""))
    if problem:
        raise ValueError("add_process_set: " + problem)
    me = _r.rank()
    comm = _r.world().split(0 if me in ranks else -1, ranks.index(me) if me in ranks else 0)
    process_set._comm = comm
    process_set.process_set_id = _next_id[0]
    _next_id[0] += 1
    _sets[process_set.process_set_id] = process_set
    return process_set


def remove_process_set(process_set):
    """Unregisters a process set and frees its comm. Collective: every rank
    calls it for the same set. Returns False for the global set and for a
    set that is not registered (on every rank alike)."""
    pid = getattr(process_set, "process_set_id", None)
    _agree("remove_process_set", "process set %s" % pid)
    if pid is None or pid == 0 or pid not in _sets:
        return False
    del _sets[pid]
    comm, process_set._comm = process_set._comm, None
    process_set.process_set_id = None
    if comm is not None:
        comm.destroy()
    return True
