/*
 * rondo.h - the one public header of rondo, an MPI-native collective
 * communication toolkit.
 *
 * Conventions
 *  - Every function that can fail returns a rondo_status_t (RONDO_SUCCESS is
 *    0) and its results through pointers. On failure, rondo_last_error()
 *    holds a one-line message for the calling thread that says what went
 *    wrong and what to do. The few functions that return something else
 *    cannot fail; each says what it returns for an invalid value.
 *  - Enum values are fixed: a value never changes meaning between releases
 *    (new ones are added at the end), so they may be stored or sent.
 *  - Collectives are collective: every rank of the comm calls them with the
 *    same count, dtype, op, algorithm and root. rondo verifies this at every
 *    call before moving data and fails the call on every rank with
 *    RONDO_ERR_MISMATCH, or with the local argument error on the rank that
 *    passed bad arguments (RONDO_ERR_PEER on the others).
 *  - Ownership: rondo never keeps a pointer to a caller's buffer after a
 *    blocking call returns, and never frees one.
 *  - A comm is used by one thread at a time for blocking collectives, as an
 *    MPI communicator is.
 */
#ifndef RONDO_H
#define RONDO_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RONDO_VERSION_MAJOR 0
#define RONDO_VERSION_MINOR 3
#define RONDO_VERSION_PATCH 0
#define RONDO_VERSION_STRING "0.3.0"
/* One integer that orders releases: major * 10000 + minor * 100 + patch. */
#define RONDO_VERSION \
  (RONDO_VERSION_MAJOR * 10000 + RONDO_VERSION_MINOR * 100 + RONDO_VERSION_PATCH)

#if defined(__GNUC__)
#define RONDO_API __attribute__((visibility("default")))
#else
#define RONDO_API
#endif

/*
 * Status codes: X(NAME, value, message). The one list generates the enum and
 * rondo_status_string(); docs/api.md lists them for users.
 */
#define RONDO_STATUS_MAP(X)                                                      \
  X(SUCCESS, 0, "success")                                                     \
  X(ERR_INVALID_ARG, 1, "invalid argument")                                    \
  X(ERR_NULL_BUFFER, 2, "NULL buffer with count > 0")                          \
  X(ERR_INVALID_DTYPE, 3, "invalid data type value")                           \
  X(ERR_INVALID_OP, 4, "invalid reduction op value")                           \
  X(ERR_INVALID_ALGO, 5, "invalid algorithm value")                            \
  X(ERR_COUNT_OVERFLOW, 6, "count x element size overflows size_t")            \
  X(ERR_INVALID_ROOT, 7, "root rank out of range")                             \
  X(ERR_NOT_INITIALIZED, 8,                                                    \
    "rondo is not initialized: call rondo_init() or rondo_comm_create() first") \
  X(ERR_FINALIZED, 9, "rondo was finalized: no call is allowed after rondo_finalize()") \
  X(ERR_INVALID_COMM, 10,                                                      \
    "invalid comm: NULL, destroyed, or not made by rondo_comm_create()")       \
  X(ERR_INVALID_KNOB, 11,                                                      \
    "an environment knob has a malformed value (see rondo_last_error())")      \
  X(ERR_NO_MEMORY, 12, "out of memory")                                        \
  X(ERR_MPI, 13, "an MPI call failed")                                         \
  X(ERR_UNSUPPORTED, 14, "unsupported dtype, op, algorithm or memory kind")    \
  X(ERR_MISMATCH, 15,                                                          \
    "ranks called the collective with different arguments")                    \
  X(ERR_PEER, 16,                                                              \
    "another rank passed invalid arguments; its rondo_last_error() says which") \
  X(ERR_DUPLICATE_NAME, 17, "a request with this name is already in flight")   \
  X(ERR_SHUT_DOWN, 18, "the comm was shut down before the request completed")  \
  X(ERR_STALLED, 19, "the request stalled: some ranks never submitted it")     \
  X(ERR_CUDA, 20, "a CUDA call failed")                                        \
  X(ERR_NCCL, 21, "an NCCL call failed")                                       \
  X(ERR_IO, 22, "an I/O operation failed")                                     \
  X(ERR_INTERNAL, 23, "internal error in rondo (please report it)")           \
  X(ERR_TRUNCATED, 24,                                                         \
    "the output buffer is too small: *needed says how large it must be")                 \
  X(ERR_JOINED, 25,                                                            \
    "a rank has joined (rondo_join) and this request needs every rank") \
  X(ERR_LAUNCH, 26,                                                            \
    "the job could not form: launcher variables, rendezvous or a missing rank")

typedef enum {
#define RONDO_STATUS_ENUM(name, value, msg) RONDO_##name = value,
  RONDO_STATUS_MAP(RONDO_STATUS_ENUM)
#undef RONDO_STATUS_ENUM
  RONDO_STATUS_COUNT
} rondo_status_t;

/* The *_COUNT values grow when a release adds a value; code compiled
 * against an older header sees a smaller one. */
typedef enum {
  RONDO_INT8 = 0,
  RONDO_UINT8 = 1,
  RONDO_INT32 = 2,
  RONDO_INT64 = 3,
  RONDO_FLOAT16 = 4,  /* IEEE 754 binary16 */
  RONDO_BFLOAT16 = 5, /* the upper 16 bits of a binary32 */
  RONDO_FLOAT32 = 6,
  RONDO_FLOAT64 = 7,
  RONDO_INT16 = 8,
  RONDO_DTYPE_COUNT = 9
} rondo_dtype_t;

typedef enum {
  RONDO_SUM = 0,
  RONDO_AVG = 1, /* SUM, then divided by the comm size (see docs/api.md) */
  RONDO_MIN = 2,
  RONDO_MAX = 3,
  RONDO_PROD = 4,
  /* Horovod's Adasum (scale-invariant pairwise combination, docs/api.md):
   * all-reduce only, floating dtypes, host buffers; the adasum algorithm
   * runs it. */
  RONDO_ADASUM = 5,
  RONDO_OP_COUNT = 6
} rondo_op_t;

/* The collective algorithms (docs/algorithms.md): one id space for every
 * family. Each collective's table lists the members it has
 * (lib/algo/allreduce/table.c, lib/algo/reduce_scatter/table.c,
 * lib/algo/allgather/table.c): ring, shm, mpi and hierarchical serve all
 * three; pairwise and recursive_halving are reduce-scatters, bruck an
 * all-gather, recursive_doubling an all-reduce and an all-gather. */
typedef enum {
  RONDO_ALGO_AUTO = 0,
  RONDO_ALGO_MPI = 1,
  RONDO_ALGO_RING = 2,
  RONDO_ALGO_RECURSIVE_DOUBLING = 3,
  RONDO_ALGO_RABENSEIFNER = 4,
  RONDO_ALGO_SHM = 5,
  RONDO_ALGO_HIERARCHICAL = 6,
  RONDO_ALGO_NCCL = 7,
  RONDO_ALGO_STAGED = 8, /* device buffers through pinned host memory */
  RONDO_ALGO_HIERARCHICAL_NCCL = 9, /* device buffers: NCCL in nodes, MPI across */
  RONDO_ALGO_ADASUM = 10, /* op RONDO_ADASUM, and only it */
  RONDO_ALGO_PAIRWISE = 11, /* reduce-scatter */
  RONDO_ALGO_RECURSIVE_HALVING = 12, /* reduce-scatter */
  RONDO_ALGO_BRUCK = 13, /* all-gather */
  RONDO_ALGO_COUNT = 14
} rondo_algo_t;

/* The collectives that have families of algorithms and a selector. */
typedef enum {
  RONDO_COLL_ALLREDUCE = 0,
  RONDO_COLL_REDUCE_SCATTER = 1,
  RONDO_COLL_ALLGATHER = 2,
  RONDO_COLL_COUNT = 3
} rondo_coll_t;

/* Opaque: an MPI communicator (a private duplicate) plus rondo's state. */
typedef struct rondo_comm *rondo_comm_t;

/* ---- status, names, version ------------------------------------------- */

/* Static string for a status; "unknown status" for values outside the list. */
RONDO_API const char *rondo_status_string(rondo_status_t status);
/* The enum name of a status ("RONDO_ERR_MPI"), or "RONDO_UNKNOWN". */
RONDO_API const char *rondo_status_name(rondo_status_t status);
/* Details of the calling thread's last failed call; "" if none. */
RONDO_API const char *rondo_last_error(void);

/* The name queries and rondo_dtype_size() cannot fail: they return NULL
 * (0) for an invalid value. */
/* "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32",
 * "float64", "int16"; NULL for an invalid value. */
RONDO_API const char *rondo_dtype_name(rondo_dtype_t dtype);
RONDO_API rondo_status_t rondo_dtype_from_name(const char *name, rondo_dtype_t *dtype);
/* Bytes per element; 0 for an invalid value. */
RONDO_API size_t rondo_dtype_size(rondo_dtype_t dtype);
/* "sum", "avg", "min", "max", "prod", "adasum"; NULL for an invalid value. */
RONDO_API const char *rondo_op_name(rondo_op_t op);
RONDO_API rondo_status_t rondo_op_from_name(const char *name, rondo_op_t *op);
/* "auto", "mpi", "ring", "recursive_doubling", "rabenseifner", "shm",
 * "hierarchical", "nccl", "staged", "hierarchical_nccl", "adasum",
 * "pairwise", "recursive_halving", "bruck"; NULL for an invalid value. */
RONDO_API const char *rondo_algo_name(rondo_algo_t algo);
RONDO_API rondo_status_t rondo_algo_from_name(const char *name, rondo_algo_t *algo);
/* "allreduce", "reduce_scatter", "allgather"; NULL for an invalid value. */
RONDO_API const char *rondo_coll_name(rondo_coll_t coll);

/* Runtime version; equals the RONDO_VERSION_* macros of the header the
 * library was built with. Any pointer may be NULL. Cannot fail. */
RONDO_API void rondo_version(int *major, int *minor, int *patch);
RONDO_API const char *rondo_version_string(void);

/* Build features (1 or 0). Cannot fail. */
RONDO_API int rondo_cuda_built(void);
RONDO_API int rondo_nccl_built(void);
/* The NCCL version rondo was built with, as NCCL_VERSION_CODE (2.27.3 is
 * 22703); 0 without NCCL. Cannot fail. */
RONDO_API int rondo_nccl_version(void);

/* ---- lifecycle ----------------------------------------------------------- */

/* Initializes MPI if nobody has (asking for MPI_THREAD_MULTIPLE), reads the
 * environment knobs and creates the world comm. argc/argv may be NULL.
 * Calling it again after success is a no-op. Without an MPI launcher,
 * where RANK and WORLD_SIZE (torchrun, any launcher) describe a job of
 * several processes, the world forms through rondo's rendezvous on rank 0
 * (docs/launching.md); a rank that does not arrive, or launcher variables
 * that contradict each other or MPI's world, fail with RONDO_ERR_LAUNCH on
 * every rank. */
RONDO_API rondo_status_t rondo_init(int *argc, char ***argv);
/* For a program that calls MPI_Init itself: call this first. Without an MPI
 * launcher, where RANK and WORLD_SIZE describe a job of several processes,
 * it forms the world through rondo's rendezvous, so that the MPI_Init that
 * follows joins it (librondo-mpi's MPI_Init does this). Elsewhere it does
 * nothing. Fails with RONDO_ERR_LAUNCH as rondo_init() does; MPI is then
 * not to be started. Call it once, before MPI_Init. */
RONDO_API rondo_status_t rondo_launch_prepare(void);
/* How this process's world was formed: "an MPI launcher (PMI_RANK is
 * set)", "RANK/WORLD_SIZE, through rondo's rendezvous at HOST:PORT ...", or
 * "one process, no launcher". Cannot fail. */
RONDO_API const char *rondo_launcher(void);
/* Destroys the world comm and every comm still alive, and finalizes MPI if
 * rondo_init() initialized it. Afterwards every call fails with
 * RONDO_ERR_FINALIZED. */
RONDO_API rondo_status_t rondo_finalize(void);
/* The comm over MPI_COMM_WORLD made by rondo_init(); NULL before it and
 * after rondo_finalize(). Cannot fail. */
RONDO_API rondo_comm_t rondo_world(void);

/* Collective over mpi_comm: duplicates it (rondo's traffic never matches the
 * application's) and returns a new comm in *comm (NULL on failure). Works
 * without rondo_init() when the application initialized MPI itself. */
RONDO_API rondo_status_t rondo_comm_create(MPI_Comm mpi_comm, rondo_comm_t *comm);
/* Collective over comm: a new comm of the ranks that passed the same color
 * (>= 0), ordered by key, then by rank in comm; *newcomm is NULL on a rank
 * that passed a negative color (MPI_UNDEFINED). For bindings without MPI
 * handles (Python); C callers may as well split the MPI communicator and
 * call rondo_comm_create. */
RONDO_API rondo_status_t rondo_comm_split(rondo_comm_t comm, int color, int key,
                                          rondo_comm_t *newcomm);
/* Collective over the listed ranks of comm only (the others do not call
 * it): a new comm of ranks[0..nranks-1], in that order, which must be
 * distinct ranks of comm, include the caller and be the same list on every
 * one of them (MPI_Comm_create_group). For frameworks that make a group on
 * its members alone (torch.distributed.new_group). */
RONDO_API rondo_status_t rondo_comm_subset(rondo_comm_t comm, const int *ranks, int nranks,
                                           rondo_comm_t *newcomm);
/* Collective. Frees the comm and sets *comm to NULL. Later calls with a
 * stale copy of the handle fail with RONDO_ERR_INVALID_COMM. */
RONDO_API rondo_status_t rondo_comm_destroy(rondo_comm_t *comm);
/* Local; call it on every rank of comm with the same value. Requests of
 * comm's engine (rondo_*_async, and every blocking call built on them) that
 * wait more than seconds for another rank fail with RONDO_ERR_STALLED on
 * every rank that waits, naming the ranks that did not come: this comm's
 * RONDO_STALL_ABORT_SEC. 0: never. Point-to-point waits (rondo_p2p_wait)
 * give up after it too. For frameworks with per-group timeouts
 * (torch.distributed's timeout=). */
RONDO_API rondo_status_t rondo_comm_set_timeout(rondo_comm_t comm, double seconds);

/* ---- queries -------------------------------------------------------------
 * Local. On failure (an invalid comm, a NULL output pointer) the output is
 * set to -1 (MPI_COMM_NULL) when the pointer is not NULL. */

RONDO_API rondo_status_t rondo_comm_rank(rondo_comm_t comm, int *rank);
RONDO_API rondo_status_t rondo_comm_size(rondo_comm_t comm, int *size);
/* This rank's index on its node, and the ranks of this comm on the node
 * (virtual nodes with RONDO_NODE_SIZE). */
RONDO_API rondo_status_t rondo_comm_local_rank(rondo_comm_t comm, int *local_rank);
RONDO_API rondo_status_t rondo_comm_local_size(rondo_comm_t comm, int *local_size);
RONDO_API rondo_status_t rondo_comm_node_count(rondo_comm_t comm, int *nodes);
/* This rank's node: 0 .. node_count - 1, numbered in the order of each
 * node's lowest rank. MPI_Comm_split(mpi, node_id, rank) gives the node's
 * ranks, virtual nodes included. */
RONDO_API rondo_status_t rondo_comm_node_id(rondo_comm_t comm, int *node_id);
/* The duplicated MPI communicator rondo uses. */
RONDO_API rondo_status_t rondo_comm_mpi(rondo_comm_t comm, MPI_Comm *mpi);

/* Frees memory rondo allocated for the caller (an allgather request's
 * result). NULL is ignored. Cannot fail. */
RONDO_API void rondo_free(void *ptr);

/* Memory every rank of comm's node can read: collective over comm, bytes
 * may differ across ranks. A one-node reduce-scatter (rondo_reduce_scatter,
 * rondo_reduce_scatterv) or all-gather (rondo_allgather) whose input lies
 * in it on every rank, in the same allocation, reads the peers' inputs in
 * place: one copy of the data fewer (docs/api.md, "Shared memory"). Input
 * in it on some ranks only fails with RONDO_ERR_MISMATCH on every rank.
 * *ptr is 64-byte aligned. rondo_mem_free (collective, every rank the same
 * allocation) frees it; rondo_comm_destroy frees what is left. */
RONDO_API rondo_status_t rondo_mem_alloc(rondo_comm_t comm, size_t bytes, void **ptr);
RONDO_API rondo_status_t rondo_mem_free(rondo_comm_t comm, void *ptr);

/* ---- blocking collectives -------------------------------------------------
 * sendbuf == recvbuf means in place. count is in elements.
 * rondo_allreduce() chooses the algorithm (RONDO_ALLREDUCE_ALGO forces one);
 * rondo_allreduce_algo() runs the given one (RONDO_ALGO_AUTO chooses), or
 * fails with RONDO_ERR_UNSUPPORTED on every rank when it cannot run the
 * call (rondo_algo_available() says why). */
/* Both buffers in host memory, or both in the memory of one CUDA device
 * (cudaMalloc, managed): device buffers run the nccl, staged or
 * hierarchical_nccl algorithm (docs/gpu.md); mixed buffers fail with
 * RONDO_ERR_INVALID_ARG. rondo's GPU work runs on a stream of its own,
 * which does not wait for other streams: the data must be ready (the work
 * that wrote them synchronized) when the call is made. */
RONDO_API rondo_status_t rondo_allreduce(rondo_comm_t comm, const void *sendbuf,
                                         void *recvbuf, size_t count,
                                         rondo_dtype_t dtype, rondo_op_t op);
RONDO_API rondo_status_t rondo_allreduce_algo(rondo_comm_t comm, const void *sendbuf,
                                              void *recvbuf, size_t count,
                                              rondo_dtype_t dtype, rondo_op_t op,
                                              rondo_algo_t algo);
/* The algorithm rondo_allreduce() would run for this call. Local. */
RONDO_API rondo_status_t rondo_allreduce_choice(rondo_comm_t comm, size_t count,
                                                rondo_dtype_t dtype, rondo_op_t op,
                                                rondo_algo_t *algo);
/* Whether rondo_allreduce_algo(comm, .., count, dtype, op, algo) can run,
 * from the algorithm table: the rules the selector and the blocking call
 * use (shm needs every rank on one node, nccl a device buffer).
 *  - RONDO_SUCCESS: it can. *why is NULL when the selector would consider
 *    it, else why it would not although it runs ("one node: use shm" for
 *    hierarchical).
 *  - RONDO_ERR_UNSUPPORTED: it cannot; *why says why (also in
 *    rondo_last_error()).
 *  - RONDO_ERR_INVALID_ALGO for auto or a value outside rondo_algo_t.
 * why may be NULL; its strings are static. Local; every rank gets the same
 * answer. rondo_explain() shows the whole choice. */
RONDO_API rondo_status_t rondo_algo_available(rondo_comm_t comm, rondo_algo_t algo,
                                              size_t count, rondo_dtype_t dtype,
                                              rondo_op_t op, const char **why);

/* The same questions for any collective's family: count is the call's
 * count argument (rondo_reduce_scatter()'s recvcount, rondo_allgather()'s
 * count: one rank's block), op is ignored by allgather. rondo_coll_choice
 * says what rondo_reduce_scatter() / rondo_allgather() would run,
 * rondo_coll_algo_available whether an algorithm can run the call (as
 * rondo_algo_available(), which is its RONDO_COLL_ALLREDUCE form). Local. */
RONDO_API rondo_status_t rondo_coll_choice(rondo_comm_t comm, rondo_coll_t coll, size_t count,
                                           rondo_dtype_t dtype, rondo_op_t op,
                                           rondo_algo_t *algo);
RONDO_API rondo_status_t rondo_coll_algo_available(rondo_comm_t comm, rondo_coll_t coll,
                                                   rondo_algo_t algo, size_t count,
                                                   rondo_dtype_t dtype, rondo_op_t op,
                                                   const char **why);

/* The texts below go into (buf, len) as snprintf would: NUL-terminated,
 * truncated when len is too small, which fails with RONDO_ERR_TRUNCATED.
 * *needed (needed may be NULL) gets the bytes the whole text needs, NUL
 * included; buf NULL with len 0 only asks for that size (RONDO_SUCCESS).
 * Local: not collective. */

/* Why rondo_allreduce() would choose what it chooses for this call: every
 * algorithm with its predicted time or why it is not eligible, the choice
 * and the reason (forced, tuning-file rule, or cost model). */
RONDO_API rondo_status_t rondo_explain(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                                       rondo_op_t op, char *buf, size_t len,
                                       size_t *needed);
/* rondo_explain() for any collective's family (count as for
 * rondo_coll_choice()). */
RONDO_API rondo_status_t rondo_coll_explain(rondo_comm_t comm, rondo_coll_t coll,
                                            size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                            char *buf, size_t len, size_t *needed);
/* The same for a call on these buffers: in device memory (CUDA), the
 * choice among the device algorithms (nccl, staged), with a line on which
 * ranks use which GPUs once the comm made its first device call. Host
 * buffers: as rondo_explain(). Both buffers must be in the same memory. */
RONDO_API rondo_status_t rondo_explain_call(rondo_comm_t comm, const void *sendbuf,
                                            const void *recvbuf, size_t count,
                                            rondo_dtype_t dtype, rondo_op_t op, char *buf,
                                            size_t len, size_t *needed);
/* One line on the comm's topology: nodes (real or virtual), ranks per node,
 * the hardware hwloc sees and whether the node is oversubscribed. */
RONDO_API rondo_status_t rondo_comm_topology(rondo_comm_t comm, char *buf, size_t len,
                                             size_t *needed);

/* Broadcast, allgather and reduce-scatter take host buffers, or CUDA
 * device buffers as rondo_allreduce does (docs/gpu.md); alltoall and
 * allgatherv host buffers only. */
/* buf: input on root, output elsewhere. */
RONDO_API rondo_status_t rondo_broadcast(rondo_comm_t comm, void *buf, size_t count,
                                         rondo_dtype_t dtype, int root);
/* recvbuf holds size * count elements, rank i's block at i * count. In
 * place: sendbuf is this rank's block of recvbuf. rondo chooses the
 * algorithm (RONDO_ALLGATHER_ALGO forces one); rondo_allgather_algo() runs
 * the given one (RONDO_ALGO_AUTO chooses) or fails with
 * RONDO_ERR_UNSUPPORTED on every rank when it cannot run the call. */
RONDO_API rondo_status_t rondo_allgather(rondo_comm_t comm, const void *sendbuf,
                                         void *recvbuf, size_t count,
                                         rondo_dtype_t dtype);
RONDO_API rondo_status_t rondo_allgather_algo(rondo_comm_t comm, const void *sendbuf,
                                              void *recvbuf, size_t count,
                                              rondo_dtype_t dtype, rondo_algo_t algo);
/* Rank i contributes recvcounts[i] elements (sendcount must equal
 * recvcounts[rank]), placed at displs[i] elements into recvbuf; displs may be
 * NULL for packed blocks. recvcounts and displs are read, not kept. */
RONDO_API rondo_status_t rondo_allgatherv(rondo_comm_t comm, const void *sendbuf,
                                          size_t sendcount, void *recvbuf,
                                          const size_t *recvcounts, const size_t *displs,
                                          rondo_dtype_t dtype);
/* sendbuf holds size * recvcount elements; rank i receives the reduction of
 * block i. Any op but RONDO_ADASUM (AVG divides by the comm size). In
 * place: recvbuf is this rank's block of sendbuf (sendbuf + rank *
 * recvcount elements, the shard of Megatron and FSDP) or sendbuf itself
 * (MPI_IN_PLACE's form: the result at the start); sendbuf is then
 * scratch. Other overlaps fail. rondo chooses the algorithm
 * (RONDO_REDUCE_SCATTER_ALGO forces one); rondo_reduce_scatter_algo() runs
 * the given one, as rondo_allreduce_algo() does. */
RONDO_API rondo_status_t rondo_reduce_scatter(rondo_comm_t comm, const void *sendbuf,
                                              void *recvbuf, size_t recvcount,
                                              rondo_dtype_t dtype, rondo_op_t op);
RONDO_API rondo_status_t rondo_reduce_scatter_algo(rondo_comm_t comm, const void *sendbuf,
                                                   void *recvbuf, size_t recvcount,
                                                   rondo_dtype_t dtype, rondo_op_t op,
                                                   rondo_algo_t algo);
/* Uneven blocks: rank i receives recvcounts[i] elements (0 allowed), the
 * reduction of elements [sum of recvcounts[j < i], + recvcounts[i]) of
 * sendbuf. recvcounts (size entries) must be equal on every rank and is
 * read, not kept. In place as rondo_reduce_scatter(), recvbuf at this
 * rank's block. Host buffers. */
RONDO_API rondo_status_t rondo_reduce_scatterv(rondo_comm_t comm, const void *sendbuf,
                                               void *recvbuf, const size_t *recvcounts,
                                               rondo_dtype_t dtype, rondo_op_t op);
/* Block i of sendbuf (count elements) goes to rank i; block j of recvbuf
 * comes from rank j. */
RONDO_API rondo_status_t rondo_alltoall(rondo_comm_t comm, const void *sendbuf,
                                        void *recvbuf, size_t count,
                                        rondo_dtype_t dtype);
RONDO_API rondo_status_t rondo_barrier(rondo_comm_t comm);

/* ---- asynchronous named collectives (the fusion engine) ---------------------
 * A request is matched across ranks by its name: every rank submits the same
 * names, in any order, from any thread. A background thread per comm
 * negotiates which names every rank has submitted, fuses ready all-reduces
 * of the same dtype, op and scales into one buffer and runs one selected
 * all-reduce per buffer (docs/engine.md). Buffers must stay valid and
 * untouched until the request completes. Every request is released by
 * rondo_wait(), also when it failed or has a callback.
 *
 * Errors reach every rank as a failed request with a message: the same name
 * with different count, dtype, op, scales or root on some rank
 * (RONDO_ERR_MISMATCH), a stall past RONDO_STALL_ABORT_SEC
 * (RONDO_ERR_STALLED), a comm destroyed with requests pending
 * (RONDO_ERR_SHUT_DOWN), a request whose tag differs across ranks
 * (RONDO_ERR_MISMATCH), one that a rank refused (rondo_refuse_async:
 * RONDO_ERR_PEER) or that needs every rank while some joined
 * (RONDO_ERR_JOINED). A name already in flight on this rank fails at
 * submission (RONDO_ERR_DUPLICATE_NAME). Needs MPI_THREAD_MULTIPLE
 * (rondo_init asks for it). */
typedef struct rondo_request *rondo_request_t;

/* Runs on the engine thread when a request completes (status is its result);
 * it must not block or call rondo_wait(). */
typedef void (*rondo_callback_t)(rondo_request_t req, rondo_status_t status, void *user);

/* Options, extensible: set size to sizeof(rondo_async_opts_t), or start from
 * RONDO_ASYNC_OPTS_INIT. NULL options mean the defaults. */
typedef struct {
  size_t size;
  double prescale;      /* inputs are multiplied by this before the reduction (1) */
  double postscale;     /* results are multiplied by this after it (1); AVG adds 1/size */
  rondo_algo_t algo;    /* RONDO_ALGO_AUTO: the selector picks per fused buffer */
  rondo_callback_t callback;
  void *user;           /* passed to the callback */
  const char *group;    /* requests with the same group name are fused together:
                           none of them runs before all have been submitted
                           (NULL: no group) */
  int group_size;       /* how many requests the group has (>= 1) */
  /* Since 0.3 (a struct whose size ends before a field gets its default): */
  const char *tag;      /* NULL, or at most 255 bytes that every rank must pass
                           alike for this name (a binding passes the tensor's
                           shape, "17x23x57"): a difference fails the request
                           on every rank with RONDO_ERR_MISMATCH quoting both.
                           Copied. */
  unsigned flags;       /* RONDO_ASYNC_* */
  struct rondo_queue *queue; /* NULL, or a queue the request goes to when it
                           completes (rondo_queue_wait) */
} rondo_async_opts_t;

/* Fail with RONDO_ERR_JOINED on every rank while a rank has joined, instead
 * of letting joined ranks serve the request (Horovod's rule for everything
 * but all-reduce). Reduce-scatter and all-to-all always behave so. */
#define RONDO_ASYNC_NO_JOIN 1u
/* A hint, not compared across ranks: the caller calls rondo_wait() on this
 * request right after submitting it (a blocking call built on the engine).
 * The engine thread is then not woken for it: the waiting thread runs the
 * negotiation and the collective itself, without the two thread hand-overs
 * a request otherwise costs (docs/engine.md#who-runs-the-cycles). A request
 * with the flag that nobody waits for still runs, at the engine thread's
 * next wake-up (within RONDO_CYCLE_TIME_MS while this rank has other
 * requests in flight, else within 50 ms). */
#define RONDO_ASYNC_WAIT_NOW 2u

#define RONDO_ASYNC_OPTS_INIT {sizeof(rondo_async_opts_t), 1.0, 1.0, RONDO_ALGO_AUTO, NULL, NULL, NULL, 0, NULL, 0, NULL}

/* recvbuf may equal sendbuf (in place). name: any non-empty string of at
 * most 255 bytes, copied. */
RONDO_API rondo_status_t rondo_allreduce_async(rondo_comm_t comm, const char *name,
                                               const void *sendbuf, void *recvbuf, size_t count,
                                               rondo_dtype_t dtype, rondo_op_t op,
                                               const rondo_async_opts_t *opts,
                                               rondo_request_t *req);
/* buf: input on root, output elsewhere. Scales and algo of opts are ignored. */
RONDO_API rondo_status_t rondo_broadcast_async(rondo_comm_t comm, const char *name, void *buf,
                                               size_t count, rondo_dtype_t dtype, int root,
                                               const rondo_async_opts_t *opts,
                                               rondo_request_t *req);
/* Rank i contributes rows_i rows of row_count elements each (rows may differ
 * per rank, row_count may not). The result, every rank's rows in rank order,
 * is allocated by rondo: rondo_request_result() gives it before rondo_wait();
 * the caller frees it with rondo_free(). */
RONDO_API rondo_status_t rondo_allgather_async(rondo_comm_t comm, const char *name,
                                               const void *sendbuf, size_t rows,
                                               size_t row_count, rondo_dtype_t dtype,
                                               const rondo_async_opts_t *opts,
                                               rondo_request_t *req);
/* rondo_allgather_async into the caller's buffer, without the allocation
 * (FSDP's all_gather_into_tensor): recvbuf has room for recv_rows rows of
 * row_count elements, and the ranks' rows must add up to exactly recv_rows
 * (else the cycle's allgathers fail on every rank). sendbuf may be this
 * rank's rows inside recvbuf (in place: after the rows of the ranks before
 * it) or any other buffer. rondo_request_result() gives NULL. Host
 * buffers. */
RONDO_API rondo_status_t rondo_allgather_into_async(rondo_comm_t comm, const char *name,
                                                    const void *sendbuf, size_t rows,
                                                    void *recvbuf, size_t recv_rows,
                                                    size_t row_count, rondo_dtype_t dtype,
                                                    const rondo_async_opts_t *opts,
                                                    rondo_request_t *req);
/* Every rank contributes rows x row_count elements (the same rows and
 * row_count everywhere). The rows of the reduction are split as evenly as
 * possible: rank i receives rows / size rows, one more for i < rows % size,
 * starting after those of the ranks before it; recvbuf holds its share
 * (rows_i x row_count elements). In place as rondo_reduce_scatter():
 * recvbuf at this rank's rows of sendbuf (ZeRO's and Megatron's shard) or
 * sendbuf itself (the result at the start); sendbuf is then scratch. Other
 * overlaps fail. Any op but RONDO_ADASUM; prescale and postscale as for an
 * all-reduce; opts->algo forces a reduce-scatter algorithm (AUTO: the
 * selector picks per fused buffer; one the family lacks fails the request
 * on every rank). Host buffers. */
RONDO_API rondo_status_t rondo_reduce_scatter_async(rondo_comm_t comm, const char *name,
                                                    const void *sendbuf, void *recvbuf,
                                                    size_t rows, size_t row_count,
                                                    rondo_dtype_t dtype, rondo_op_t op,
                                                    const rondo_async_opts_t *opts,
                                                    rondo_request_t *req);
/* A reduce to root: the reduction of every rank's count elements lands in
 * root's recvbuf (which may be sendbuf: in place); the other ranks' recvbuf
 * is not used (NULL allowed). Any op but RONDO_ADASUM; prescale and
 * postscale as for an all-reduce. Runs as a reduce-scatter whose rows all
 * go to the root, fused with the requests of the same root, dtype, op and
 * scales (torch.distributed's reduce). Host buffers. */
RONDO_API rondo_status_t rondo_reduce_async(rondo_comm_t comm, const char *name,
                                            const void *sendbuf, void *recvbuf, size_t count,
                                            rondo_dtype_t dtype, rondo_op_t op, int root,
                                            const rondo_async_opts_t *opts,
                                            rondo_request_t *req);
/* All-to-all with any split: sendcounts[i] rows of row_count elements go to
 * rank i, packed in rank order in sendbuf (sendcounts is copied; row_count
 * must be equal everywhere). Every rank receives the rows each rank sent it,
 * in rank order, in a buffer rondo allocates: rondo_request_result() gives
 * it (freed with rondo_free()); recvcounts (size entries, the caller's,
 * valid until completion) gets the rows from each rank. Host buffers. */
RONDO_API rondo_status_t rondo_alltoallv_async(rondo_comm_t comm, const char *name,
                                               const void *sendbuf, const size_t *sendcounts,
                                               size_t row_count, rondo_dtype_t dtype,
                                               size_t *recvcounts,
                                               const rondo_async_opts_t *opts,
                                               rondo_request_t *req);
/* For bindings that check their arguments before calling rondo: this rank
 * cannot take part in the request called name, because of reason (copied,
 * at most 255 bytes kept). The name is matched like any other request (of
 * opts only group, group_size and queue count) and, once every rank has
 * submitted it, fails everywhere: here with RONDO_ERR_INVALID_ARG and
 * reason, on the other ranks with RONDO_ERR_PEER naming this rank and
 * reason. A refusal thus never leaves the other ranks waiting. */
RONDO_API rondo_status_t rondo_refuse_async(rondo_comm_t comm, const char *name,
                                            const char *reason, const rondo_async_opts_t *opts,
                                            rondo_request_t *req);
/* *done = 1 once the request completed (successfully or not). */
RONDO_API rondo_status_t rondo_test(rondo_request_t req, int *done);
/* Waits for completion, returns the request's status (its message becomes
 * rondo_last_error() of this thread), releases the request, sets *req = NULL. */
RONDO_API rondo_status_t rondo_wait(rondo_request_t *req);
/* A completed allgather's or all-to-all's result: *buf (ownership passes to
 * the caller, who frees it with rondo_free()) and its element count. Other
 * requests: *buf = NULL, *count = 0. */
RONDO_API rondo_status_t rondo_request_result(rondo_request_t req, void **buf, size_t *count);
/* rondo_wait(), handing over the result as rondo_request_result() does
 * (*buf NULL and *count 0 when there is none or the request failed). */
RONDO_API rondo_status_t rondo_wait_result(rondo_request_t *req, void **buf, size_t *count);
/* Completion queues: one thread waits for whichever of many requests
 * completes first (a binding completing futures). A request submitted with
 * opts.queue is put on the queue when it completes, successfully or not;
 * rondo_queue_wait takes it off, and rondo_wait then releases it without
 * blocking. Any thread may wait; a queue is not tied to a comm. */
typedef struct rondo_queue *rondo_queue_t;
RONDO_API rondo_status_t rondo_queue_create(rondo_queue_t *queue);
/* Takes the oldest completed request off the queue into *req, waiting up to
 * timeout seconds (< 0: without limit) for one; *req = NULL when the time
 * ran out. Fails with RONDO_ERR_SHUT_DOWN once the queue is closed and
 * empty. */
RONDO_API rondo_status_t rondo_queue_wait(rondo_queue_t queue, double timeout,
                                          rondo_request_t *req);
/* Sends a request submitted without a queue to this one, as if it had been
 * submitted with it (at once if it has completed): for a caller that first
 * meant to wait itself. Fails with RONDO_ERR_INVALID_ARG for a released
 * request, one on a queue already, or one a thread is waiting for. */
RONDO_API rondo_status_t rondo_queue_add(rondo_queue_t queue, rondo_request_t req);
/* Wakes every waiter: from now on rondo_queue_wait returns what is queued,
 * then RONDO_ERR_SHUT_DOWN. Requests still in flight keep arriving. */
RONDO_API rondo_status_t rondo_queue_close(rondo_queue_t queue);
/* Frees the queue and sets *queue = NULL. Fails with RONDO_ERR_INVALID_ARG
 * while requests submitted with it are in flight or queued (wait for them
 * first); no thread may be waiting on it. */
RONDO_API rondo_status_t rondo_queue_destroy(rondo_queue_t *queue);

/* For uneven data: this rank has no more requests. Until every rank has
 * joined, it takes part in the all-reduces the others still submit with the
 * op's identity (zero for SUM and AVG, so AVG divides by the full comm
 * size), in allgathers with no rows, in broadcasts as a receiver. Blocks
 * until every rank has joined; *last_rank (may be NULL) gets the rank that
 * joined last. This rank's requests still in flight complete first, as
 * usual (the join begins once it has none; they may still be waited on
 * after it returns). */
RONDO_API rondo_status_t rondo_join(rondo_comm_t comm, int *last_rank);

/* The engine's timeline (a Chrome trace, docs/engine.md), started or moved
 * to path at run time: what RONDO_TIMELINE=path does when the comm is made
 * (RONDO_TIMELINE=DYNAMIC starts none and leaves it to this call). Rank 0
 * writes the file; the other ranks only check the arguments, so every rank
 * may call it alike. mark_cycles: a mark for every engine cycle that ran
 * something. A timeline already running is closed first. Local. */
RONDO_API rondo_status_t rondo_timeline_start(rondo_comm_t comm, const char *path,
                                              int mark_cycles);
/* Closes the timeline (a valid JSON file); without one, a no-op. Local. */
RONDO_API rondo_status_t rondo_timeline_stop(rondo_comm_t comm);
/* Marks this moment in the timeline with what (1-255 bytes), on a track of
 * the application's ("marks"), on the engine's clock: a training step's
 * phases beside the engine's spans (bench/step_breakdown.py reads them).
 * Rank 0's marks are written, while a timeline is open (RONDO_TIMELINE's
 * opens when the comm's engine starts, at its first request); otherwise a
 * no-op. Local; cheap enough to call every step. */
RONDO_API rondo_status_t rondo_timeline_mark(rondo_comm_t comm, const char *what);

/* ---- point-to-point -----------------------------------------------------------
 * For frameworks whose API has send and receive (torch.distributed). Host
 * buffers. A message matches a receive on the same comm with the same tag
 * (0 <= tag <= RONDO_TAG_MAX) from that source; between two ranks, messages
 * of one tag arrive in the order they were sent. rondo's own traffic never
 * matches them. The receive's count must equal the message's: a
 * difference fails the receive (RONDO_ERR_MISMATCH, or RONDO_ERR_TRUNCATED
 * for a longer message) and names both counts. Waits sleep between polls:
 * a rank waiting for a message that is late does not spin. */
#define RONDO_ANY_SOURCE (-1)
#define RONDO_TAG_MAX 16383
typedef struct rondo_p2p *rondo_p2p_t;
/* Starts sending count elements of buf to rank dest; buf must stay valid and
 * unchanged until rondo_p2p_wait returns. */
RONDO_API rondo_status_t rondo_isend(rondo_comm_t comm, const void *buf, size_t count,
                                     rondo_dtype_t dtype, int dest, int tag, rondo_p2p_t *req);
/* Starts receiving count elements into buf from rank source (or
 * RONDO_ANY_SOURCE). */
RONDO_API rondo_status_t rondo_irecv(rondo_comm_t comm, void *buf, size_t count,
                                     rondo_dtype_t dtype, int source, int tag, rondo_p2p_t *req);
/* *done = 1 once the transfer completed (the wait will not block). */
RONDO_API rondo_status_t rondo_p2p_test(rondo_p2p_t req, int *done);
/* Waits for the transfer, frees the request and sets *req = NULL; *source
 * (may be NULL) gets the sender of a receive, the destination of a send.
 * Gives up after the comm's timeout (rondo_comm_set_timeout, else
 * RONDO_STALL_ABORT_SEC; 0: never), counted from the wait's start, with
 * RONDO_ERR_STALLED: a receive not matched yet is then withdrawn and freed
 * (a message that comes later goes to the next receive that matches it); a
 * send stays open, *req unchanged, because MPI cannot withdraw a send that
 * started: wait on it again, and keep buf unchanged until it completes. */
RONDO_API rondo_status_t rondo_p2p_wait(rondo_p2p_t *req, int *source);

/* ---- environment knobs ------------------------------------------------------
 * Every knob is a row in one table (docs/knobs.md); rondo-info prints it. */
typedef struct {
  const char *name;       /* "RONDO_LOG" */
  const char *type;       /* "enum", "size", "int", "string", "number", "name", "list" */
  const char *default_value;
  const char *current;    /* the value in effect (parsed, normalized) */
  const char *doc;        /* one line */
} rondo_knob_info_t;

/* Cannot fail. */
RONDO_API int rondo_knob_count(void);
/* Fills *info for knob i (0 <= i < rondo_knob_count()). name, type,
 * default_value and doc are static; current is the environment's value now
 * (what the next comm made will read; each comm keeps the values it read
 * when it was made) and stays valid until the next rondo_knob_get() of the
 * same knob. */
RONDO_API rondo_status_t rondo_knob_get(int i, rondo_knob_info_t *info);

#ifdef __cplusplus
}
#endif
#endif /* RONDO_H */
