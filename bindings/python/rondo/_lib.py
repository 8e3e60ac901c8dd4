"""librondo through ctypes: finding the library, the C prototypes, the enums.

The library is looked up in this order:
  1. RONDO_LIBRARY, a path to librondo.so (a build tree:
     build/lib/.libs/librondo.so);
  2. the directory `make install` recorded in _install.py;
  3. the dynamic linker's own search (librondo.so.0 in /usr/local/lib once
     ldconfig has run, or LD_LIBRARY_PATH).
"""
import ctypes
import os

SUCCESS = 0
ERR_INVALID_ARG = 1
ERR_DUPLICATE_NAME = 17
ASYNC_NO_JOIN = 1
ASYNC_WAIT_NOW = 2  # a hint: the caller waits at once (rondo.h)
ANY_SOURCE = -1
TAG_MAX = 16383


def _candidates():
    env = os.environ.get("RONDO_LIBRARY")
    if env:
        return [env], "RONDO_LIBRARY=" + env
    names = []
    try:
        from . import _install  # written by `make install`
        names.append(os.path.join(_install.LIBDIR, "librondo.so.0"))
    except ImportError:
        pass
    names += ["librondo.so.0", "librondo.so"]
    return names, "the installed librondo"


def _load():
    names, where = _candidates()
    errors = []
    for name in names:
        try:
            # RTLD_GLOBAL: MPICH and UCX load plugins that need its symbols.
            return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            errors.append(str(e))
    raise ImportError(
        "rondo: cannot load librondo (%s: %s). Build rondo and set "
        "RONDO_LIBRARY=/path/to/build/lib/.libs/librondo.so, or install it "
        "(make install, then ldconfig) -- see docs/python.md" % (where, "; ".join(errors)))


lib = _load()

c_int_p = ctypes.POINTER(ctypes.c_int)
c_size_p = ctypes.POINTER(ctypes.c_size_t)
vp = ctypes.c_void_p
sz = ctypes.c_size_t
ci = ctypes.c_int


class AsyncOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("prescale", ctypes.c_double),
                ("postscale", ctypes.c_double), ("algo", ctypes.c_int),
                ("callback", ctypes.c_void_p), ("user", ctypes.c_void_p),
                ("group", ctypes.c_char_p), ("group_size", ctypes.c_int),
                ("tag", ctypes.c_char_p), ("flags", ctypes.c_uint)]


def _proto(name, args, res=ci):
    f = getattr(lib, name)
    f.argtypes = args
    f.restype = res
    return f


status_name = _proto("rondo_status_name", [ci], ctypes.c_char_p)
last_error = _proto("rondo_last_error", [], ctypes.c_char_p)
version_string = _proto("rondo_version_string", [], ctypes.c_char_p)
init = _proto("rondo_init", [vp, vp])
finalize = _proto("rondo_finalize", [])
world = _proto("rondo_world", [], vp)
launcher = _proto("rondo_launcher", [], ctypes.c_char_p)
comm_split = _proto("rondo_comm_split", [vp, ci, ci, ctypes.POINTER(vp)])
comm_destroy = _proto("rondo_comm_destroy", [ctypes.POINTER(vp)])
comm_set_timeout = _proto("rondo_comm_set_timeout", [vp, ctypes.c_double])
comm_rank = _proto("rondo_comm_rank", [vp, c_int_p])
comm_size = _proto("rondo_comm_size", [vp, c_int_p])
comm_local_rank = _proto("rondo_comm_local_rank", [vp, c_int_p])
comm_local_size = _proto("rondo_comm_local_size", [vp, c_int_p])
comm_node_count = _proto("rondo_comm_node_count", [vp, c_int_p])
comm_node_id = _proto("rondo_comm_node_id", [vp, c_int_p])
comm_topology = _proto("rondo_comm_topology", [vp, ctypes.c_char_p, sz, c_size_p])
explain = _proto("rondo_explain", [vp, sz, ci, ci, ctypes.c_char_p, sz, c_size_p])
allreduce_algo = _proto("rondo_allreduce_algo", [vp, vp, vp, sz, ci, ci, ci])
broadcast = _proto("rondo_broadcast", [vp, vp, sz, ci, ci])
allgather = _proto("rondo_allgather", [vp, vp, vp, sz, ci])
allgatherv = _proto("rondo_allgatherv", [vp, vp, sz, vp, c_size_p, c_size_p, ci])
reduce_scatter = _proto("rondo_reduce_scatter", [vp, vp, vp, sz, ci, ci])
alltoall = _proto("rondo_alltoall", [vp, vp, vp, sz, ci])
barrier = _proto("rondo_barrier", [vp])
allreduce_async = _proto("rondo_allreduce_async",
                         [vp, ctypes.c_char_p, vp, vp, sz, ci, ci, ctypes.POINTER(AsyncOpts),
                          ctypes.POINTER(vp)])
broadcast_async = _proto("rondo_broadcast_async",
                         [vp, ctypes.c_char_p, vp, sz, ci, ci, ctypes.POINTER(AsyncOpts),
                          ctypes.POINTER(vp)])
reduce_scatter_async = _proto("rondo_reduce_scatter_async",
                              [vp, ctypes.c_char_p, vp, vp, sz, sz, ci, ci,
                               ctypes.POINTER(AsyncOpts), ctypes.POINTER(vp)])
reduce_async = _proto("rondo_reduce_async",
                      [vp, ctypes.c_char_p, vp, vp, sz, ci, ci, ci, ctypes.POINTER(AsyncOpts),
                       ctypes.POINTER(vp)])
alltoallv_async = _proto("rondo_alltoallv_async",
                         [vp, ctypes.c_char_p, vp, c_size_p, sz, ci, c_size_p,
                          ctypes.POINTER(AsyncOpts), ctypes.POINTER(vp)])
allgather_async = _proto("rondo_allgather_async",
                         [vp, ctypes.c_char_p, vp, sz, sz, ci, ctypes.POINTER(AsyncOpts),
                          ctypes.POINTER(vp)])
allgather_into_async = _proto("rondo_allgather_into_async",
                              [vp, ctypes.c_char_p, vp, sz, vp, sz, sz, ci,
                               ctypes.POINTER(AsyncOpts), ctypes.POINTER(vp)])
refuse_async = _proto("rondo_refuse_async",
                      [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(AsyncOpts),
                       ctypes.POINTER(vp)])
request_result = _proto("rondo_request_result", [vp, ctypes.POINTER(vp), c_size_p])
wait_result = _proto("rondo_wait_result", [ctypes.POINTER(vp), ctypes.POINTER(vp), c_size_p])
free = _proto("rondo_free", [vp], None)
mem_alloc = _proto("rondo_mem_alloc", [vp, sz, ctypes.POINTER(vp)])
mem_free = _proto("rondo_mem_free", [vp, vp])
timeline_start = _proto("rondo_timeline_start", [vp, ctypes.c_char_p, ci])
timeline_stop = _proto("rondo_timeline_stop", [vp])
timeline_mark = _proto("rondo_timeline_mark", [vp, ctypes.c_char_p])
nccl_version = _proto("rondo_nccl_version", [])
test = _proto("rondo_test", [vp, c_int_p])
wait = _proto("rondo_wait", [ctypes.POINTER(vp)])
join = _proto("rondo_join", [vp, c_int_p])
comm_subset = _proto("rondo_comm_subset", [vp, c_int_p, ci, ctypes.POINTER(vp)])
queue_create = _proto("rondo_queue_create", [ctypes.POINTER(vp)])
queue_wait = _proto("rondo_queue_wait", [vp, ctypes.c_double, ctypes.POINTER(vp)])
queue_close = _proto("rondo_queue_close", [vp])
queue_add = _proto("rondo_queue_add", [vp, vp])
queue_destroy = _proto("rondo_queue_destroy", [ctypes.POINTER(vp)])
isend = _proto("rondo_isend", [vp, vp, sz, ci, ci, ci, ctypes.POINTER(vp)])
irecv = _proto("rondo_irecv", [vp, vp, sz, ci, ci, ci, ctypes.POINTER(vp)])
p2p_wait = _proto("rondo_p2p_wait", [ctypes.POINTER(vp), c_int_p])
p2p_test = _proto("rondo_p2p_test", [vp, c_int_p])
dtype_name = _proto("rondo_dtype_name", [ci], ctypes.c_char_p)
op_name = _proto("rondo_op_name", [ci], ctypes.c_char_p)
algo_name = _proto("rondo_algo_name", [ci], ctypes.c_char_p)


def _names(query):
    """The library's own names of an enum's values, in code order: value i
    is named query(i), up to the first value it does not know."""
    names = []
    while True:
        name = query(len(names))
        if name is None:
            return tuple(names)
        names.append(name.decode())


# rondo_dtype_t, rondo_op_t and rondo_algo_t by their position: the
# library numbers them, so no table here can drift from rondo.h.
DTYPES = _names(dtype_name)  # "int8", "uint8", ...
OPS = _names(op_name)        # "sum", "avg", "min", "max", "prod", "adasum"
ALGOS = _names(algo_name)    # "auto", "mpi", "ring", ...
