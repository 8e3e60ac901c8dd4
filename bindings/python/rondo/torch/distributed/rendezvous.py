"""How the processes of a rondo process group find each other
(docs/launching.md).

MPI always carries the data. What differs is who starts MPI's world:

- An MPI launcher (mpiexec, srun --mpi=pmi2): MPI knows its world. torch's
  own env:// rendezvous still needs RANK, WORLD_SIZE, MASTER_ADDR and
  MASTER_PORT; fill_env_from_mpi() sets the missing ones from MPI when
  rondo.torch is imported, so init_process_group("rondo") needs nothing
  else. torch's env:// handler itself is torch's, untouched.
- Any other launcher (torchrun, torch.multiprocessing.spawn, a scheduler):
  form_world() uses the store torch hands the backend. Rank 0 chooses where
  rondo's rendezvous listens and publishes it in the store; every rank then
  starts rondo (and MPI) through it, as rank `rank` of `size`
  (lib/launch serves MPI's start-up there).
"""
import atexit
import contextlib
import os
import socket

import rondo as _r

# Variables only an MPI launcher sets (lib/launch/variables.c has the same list).
MPI_LAUNCHER_VARS = ("PMI_FD", "PMI_PORT", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE")
TORCH_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
STORE_KEY = "rondo/rendezvous"


def mpi_launcher():
    """The variable that shows an MPI launcher started this process, or None."""
    return next((v for v in MPI_LAUNCHER_VARS if v in os.environ), None)


def my_address():
    """An address of this host other hosts can reach: a non-loopback IPv4
    address its name resolves to, else the name (set MASTER_ADDR or
    RONDO_RENDEZVOUS where neither is right)."""
    name = socket.gethostname()
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_INET)
    except OSError:
        return name
    for info in infos:
        addr = info[4][0]
        if not addr.startswith("127."):
            return addr
    return name


def reserve_port():
    """A TCP port for a server that starts later, and a socket that holds
    it until then: (socket, port). The socket is bound to the port with
    SO_REUSEADDR and does not listen, so the kernel gives the port to no
    other bind or outgoing connection in the meantime (a port only looked
    up and let go can be taken by MPI's own connections before the server
    binds it), while the server, binding with SO_REUSEADDR as torch's store
    and rondo's rendezvous do, still can (one that binds without it gets
    EADDRINUSE; a child forked meanwhile holds the port too). Close the
    socket once the server is bound."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", 0))
        return s, s.getsockname()[1]
    except OSError:
        s.close()
        raise


# The port fill_env_from_mpi() chose for torch's store, held for the life of
# the process: torch binds it at each init_process_group, maybe several times.
_master_port_held = None


def fill_env_from_mpi():
    """Under an MPI launcher, sets whichever of RANK, WORLD_SIZE,
    MASTER_ADDR and MASTER_PORT is missing from MPI's world (MPI starts
    here): rank 0 reserves a free port and every rank learns it. Does nothing
    elsewhere, or when all four are set."""
    if mpi_launcher() is None:
        return
    missing = [k for k in TORCH_VARS if not os.environ.get(k)]
    if not missing:
        return
    _r.init()
    world = _r.world()
    global _master_port_held
    where = None
    if world.rank == 0:
        port = os.environ.get("MASTER_PORT")
        try:
            if not port:
                if _master_port_held is not None:
                    _master_port_held.close()
                _master_port_held, port = reserve_port()
                atexit.register(_master_port_held.close)
            where = (os.environ.get("MASTER_ADDR")
                     or ("127.0.0.1" if world.nodes == 1 else my_address()), str(port))
        except OSError as e:  # every rank learns it, none waits
            where = ("error", "rank 0 found no port for torch's store: %s" % e)
    where = world.broadcast_object(where, 0)
    if where[0] == "error":
        raise RuntimeError("rondo: %s; set MASTER_PORT" % where[1])
    values = {"RANK": str(world.rank), "WORLD_SIZE": str(world.size),
              "MASTER_ADDR": where[0], "MASTER_PORT": where[1]}
    for k in missing:
        os.environ[k] = values[k]


@contextlib.contextmanager
def _environment(**values):
    """os.environ with values set, as it was afterwards."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def form_world(store, rank, size):
    """Starts rondo's world for a torch process group of `size` processes
    in which this one is `rank`, and returns it. Under an MPI launcher, or
    when rondo already runs, that is MPI's world (the caller checks it
    matches). Otherwise through the store: rank 0 publishes the rendezvous
    address (RONDO_RENDEZVOUS, or MASTER_ADDR, else this host's address,
    and a port it holds until its rondo listens there), every rank reads it
    and starts rondo there."""
    if _r.is_initialized() or mpi_launcher() is not None or size == 1:
        with _environment(RANK=str(rank), WORLD_SIZE=str(size)) if mpi_launcher() is None \
                else contextlib.nullcontext():
            _r.init()
        return _r.world()
    held = None
    if rank == 0:
        where = os.environ.get("RONDO_RENDEZVOUS")
        if not where:
            try:
                held, port = reserve_port()
            except OSError as e:
                store.set(STORE_KEY, "error: rank 0 found no port for rondo's rendezvous: %s" % e)
                raise
            where = "%s:%d" % (os.environ.get("MASTER_ADDR") or my_address(), port)
        store.set(STORE_KEY, where)
    else:
        where = store.get(STORE_KEY).decode()
        if where.startswith("error: "):
            raise RuntimeError("rondo: %s" % where[7:])
    try:
        with _environment(RANK=str(rank), WORLD_SIZE=str(size), RONDO_RENDEZVOUS=where):
            _r.init()
    finally:
        if held is not None:
            held.close()
    return _r.world()
