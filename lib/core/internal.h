/*
 * Internal declarations shared by the modules of librondo. Nothing here is
 * exported: the library is built with -fvisibility=hidden and only the
 * RONDO_API functions of rondo.h are visible. Core helpers use the rondo__
 * prefix; other modules use their own (reduce_, algo_).
 */
#ifndef RONDO_INTERNAL_H
#define RONDO_INTERNAL_H

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rondo.h"

/* ---- hashing ----------------------------------------------------------------
 * FNV-1a, 64 bits: names in hash tables, and argument and knob signatures
 * compared across ranks (so it must be the same function everywhere). */
#define RONDO__FNV_INIT 1469598103934665603ull

static inline uint64_t rondo__fnv(uint64_t h, const void *data, size_t n)
{
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static inline uint64_t rondo__hash_str(const char *s)
{
  return rondo__fnv(RONDO__FNV_INIT, s, strlen(s));
}

/* ---- logging --------------------------------------------------------------
 * RONDO_LOG=off|error|warn|info|debug. The level test happens before any
 * argument is evaluated, so a disabled level costs one load and a branch. */
typedef enum {
  RONDO_LOG_OFF = 0,
  RONDO_LOG_ERROR,
  RONDO_LOG_WARN,
  RONDO_LOG_INFO,
  RONDO_LOG_DEBUG
} rondo__log_level_t;

extern int rondo__log_level;
void rondo__log_write(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sets the rank shown in the prefix of every log line (and in MPI and
 * pthread failure messages). */
void rondo__log_set_rank(int rank);
/* That rank, or -1 before it is known. */
int rondo__log_rank(void);

#define RONDO__LOG(level, ...)                                                 \
  do {                                                                         \
    if (rondo__log_level >= (level))                                           \
      rondo__log_write((level), __VA_ARGS__);                                  \
  } while (0)
#define LOG_ERROR(...) RONDO__LOG(RONDO_LOG_ERROR, __VA_ARGS__)
#define LOG_WARN(...) RONDO__LOG(RONDO_LOG_WARN, __VA_ARGS__)
#define LOG_INFO(...) RONDO__LOG(RONDO_LOG_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) RONDO__LOG(RONDO_LOG_DEBUG, __VA_ARGS__)

/* ---- errors ---------------------------------------------------------------
 * rondo__fail() records a message for rondo_last_error() (thread-local),
 * logs it at error level and returns the status, so a failure site is one
 * line: `return rondo__fail(RONDO_ERR_NULL_BUFFER, "sendbuf is NULL ...")`. */
rondo_status_t rondo__fail(rondo_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Same, without logging (for errors the caller reports itself). */
rondo_status_t rondo__fail_quiet(rondo_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rondo__clear_error(void);
/* Converts a failed MPI call into RONDO_ERR_MPI with the call, the MPI error
 * string, the rank and the source location. */
rondo_status_t rondo__mpi_fail(int mpi_rc, const char *call, const char *file,
                               int line);
/* The same for a pthread call that returned errno value err:
 * RONDO_ERR_INTERNAL (RONDO_ERR_NO_MEMORY for EAGAIN/ENOMEM). */
rondo_status_t rondo__pthread_fail(int err, const char *call, const char *file, int line);

/* The check macros: every MPI call goes through MPI_CHECK (return the
 * failure), MPI_CHECK_GOTO (set st and jump to label) or, where a failure
 * cannot be returned (freeing in teardown), MPI_CHECK_LOG (log it).
 * PT_CHECK and PT_CHECK_GOTO do the same for the pthread calls that can fail
 * in a correct program (create, init, join); locking and signalling a
 * mutex or condition made by pthread_*_init with default attributes cannot,
 * and are not checked. */
#define MPI_CHECK_GOTO(call, st, label)                                        \
  do {                                                                         \
    int mpi_rc_ = (call);                                                      \
    if (mpi_rc_ != MPI_SUCCESS) {                                              \
      (st) = rondo__mpi_fail(mpi_rc_, #call, __FILE__, __LINE__);              \
      goto label;                                                              \
    }                                                                          \
  } while (0)
#define MPI_CHECK(call)                                                        \
  do {                                                                         \
    int mpi_rc_ = (call);                                                      \
    if (mpi_rc_ != MPI_SUCCESS)                                                \
      return rondo__mpi_fail(mpi_rc_, #call, __FILE__, __LINE__);              \
  } while (0)
#define MPI_CHECK_LOG(call)                                                    \
  do {                                                                         \
    int mpi_rc_ = (call);                                                      \
    if (mpi_rc_ != MPI_SUCCESS)                                                \
      (void)rondo__mpi_fail(mpi_rc_, #call, __FILE__, __LINE__);               \
  } while (0)
#define PT_CHECK(call)                                                         \
  do {                                                                         \
    int pt_rc_ = (call);                                                       \
    if (pt_rc_ != 0)                                                           \
      return rondo__pthread_fail(pt_rc_, #call, __FILE__, __LINE__);           \
  } while (0)
#define PT_CHECK_LOG(call)                                                     \
  do {                                                                         \
    int pt_rc_ = (call);                                                       \
    if (pt_rc_ != 0)                                                           \
      (void)rondo__pthread_fail(pt_rc_, #call, __FILE__, __LINE__);            \
  } while (0)
#define PT_CHECK_GOTO(call, st, label)                                         \
  do {                                                                         \
    int pt_rc_ = (call);                                                       \
    if (pt_rc_ != 0) {                                                         \
      (st) = rondo__pthread_fail(pt_rc_, #call, __FILE__, __LINE__);           \
      goto label;                                                              \
    }                                                                          \
  } while (0)
/* For rondo calls: propagate a failure. */
#define RONDO_CHECK(call)                                                      \
  do {                                                                         \
    rondo_status_t rc_ = (call);                                               \
    if (rc_ != RONDO_SUCCESS)                                                  \
      return rc_;                                                              \
  } while (0)
#define RONDO_CHECK_GOTO(call, st, label)                                      \
  do {                                                                         \
    (st) = (call);                                                             \
    if ((st) != RONDO_SUCCESS)                                                 \
      goto label;                                                              \
  } while (0)

/* ---- knobs ----------------------------------------------------------------
 * The parsed values of the knob table (lib/core/knobs.c is the one place
 * that names, defaults and documents them). */
#define RONDO__KNOB_STRING_MAX 512

typedef struct {
  int log_level;          /* RONDO_LOG */
  int allreduce_algo;     /* RONDO_ALLREDUCE_ALGO (rondo_algo_t) */
  size_t ring_chunk;      /* RONDO_RING_CHUNK_BYTES */
  char tuning_file[RONDO__KNOB_STRING_MAX]; /* RONDO_TUNING_FILE ("" for none) */
  int node_size;          /* RONDO_NODE_SIZE (0: real nodes) */
  size_t shm_chunk;       /* RONDO_SHM_CHUNK_BYTES */
  size_t fusion_threshold; /* RONDO_FUSION_THRESHOLD (0: no fusion) */
  double cycle_time_ms;   /* RONDO_CYCLE_TIME_MS */
  int cache_capacity;     /* RONDO_CACHE_CAPACITY (0: no cache) */
  char timeline[RONDO__KNOB_STRING_MAX]; /* RONDO_TIMELINE ("" for none) */
  double stall_warn_sec;  /* RONDO_STALL_WARN_SEC (0: no warning) */
  double stall_abort_sec; /* RONDO_STALL_ABORT_SEC (0: never) */
} rondo__knobs_t;

extern rondo__knobs_t rondo__knobs;

/* The RONDO_TUNING_FILE table, loaded by the library init (NULL if none). */
struct select_table;
extern struct select_table *rondo__tuning;

/* Reads every knob from the environment into *out. On a malformed value
 * returns RONDO_ERR_INVALID_KNOB with a message naming the knob and the
 * value; *out is then unchanged. */
rondo_status_t rondo__knobs_load(rondo__knobs_t *out);
/* A hash of the knobs that must be equal on every rank (they change message
 * sizes or the algorithm), and their names for error messages. */
uint64_t rondo__knobs_hash(const rondo__knobs_t *k);
const char *rondo__knobs_shared_names(void);
/* Parses one knob value given as a string (for tests and the loader). */
rondo_status_t rondo__knob_parse(const char *name, const char *text,
                                 rondo__knobs_t *out);

/* ---- library state and comms --------------------------------------------- */

struct topo;
struct shm_state;

struct rondo_comm {
  MPI_Comm mpi;      /* private duplicate of the user's communicator */
  int rank, size;
  int local_rank, local_size, node_count;
  int pof2;          /* largest power of two <= size */
  void *scratch;     /* per-comm scratch, grown on demand */
  size_t scratch_bytes;
  struct topo *topo; /* nodes, cross communicators, hwloc (lib/topo) */
  struct shm_state *shm;      /* the node's shared window, made on first use */
  struct rondo_comm **cross;  /* [topo->slices]: comms over topo->cross[g], or NULL */
  struct engine *engine;      /* the asynchronous engine (lib/engine), or NULL */
  struct rondo__board *board; /* argument board of a one-node user comm, or NULL */
  int yield_waits;   /* the node is oversubscribed: point-to-point waits poll
                        and yield the core (algo_waitall) instead of MPI_Wait,
                        which spins for a whole time slice */
  /* The last AUTO decision: repeated calls of one size (a training loop)
   * skip the cost model. Knobs and the tuning table are fixed after init. */
  size_t last_count, last_bytes;
  int last_algo;     /* rondo_algo_t; RONDO_ALGO_AUTO: none yet */
  struct rondo_comm *next;    /* registry of live comms */
};

/* RONDO_SUCCESS if the library is usable and comm is a live handle. */
rondo_status_t rondo__enter(rondo_comm_t comm);
/* 1 while the library is initialized and not finalized. */
int rondo__lib_active(void);
/* Lazily initializes the library state (knobs, logging) when the application
 * initialized MPI itself and calls rondo_comm_create() without rondo_init(). */
rondo_status_t rondo__lib_init(void);
/* A comm for internal use (the engine's): everything rondo_comm_create()
 * makes but the registry entry and an engine; with yield, its waits yield
 * the core at once, as on an oversubscribed node. Collective. */
rondo_status_t rondo__comm_build(MPI_Comm mpi_comm, int yield, rondo_comm_t *out);
void rondo__comm_free(rondo_comm_t comm);
/* One all-reduce on comm without the argument check: algo AUTO selects
 * (cached per comm), op AVG divides by the comm size. For the engine. */
rondo_status_t rondo__allreduce_run(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                    rondo_algo_t algo);
/* Returns a scratch buffer of at least bytes (valid until the next call). */
rondo_status_t rondo__scratch(rondo_comm_t comm, size_t bytes, void **buf);

/* ---- collective argument agreement (agree.c) ---------------------------------
 * Every collective entry point fills a signature of the arguments that must
 * be equal on every rank; rondo__agree() checks local validity and equality
 * on all ranks before any data moves: in shared memory on a one-node comm,
 * with one small MPI all-reduce across nodes. */
#define RONDO__SIG_MAX 6
typedef struct {
  const char *what;                 /* "rondo_allreduce"; compared too */
  int n;                            /* fields used */
  const char *field[RONDO__SIG_MAX];
  int64_t value[RONDO__SIG_MAX];
} rondo__sig_t;

void rondo__sig_add(rondo__sig_t *sig, const char *field, int64_t value);
/* local: this rank's argument check result. Returns local if it failed,
 * RONDO_ERR_PEER if another rank's failed, RONDO_ERR_MISMATCH if a field
 * differs across ranks, else RONDO_SUCCESS. Collective. */
rondo_status_t rondo__agree(rondo_comm_t comm, rondo_status_t local,
                            const rondo__sig_t *sig);
/* The shared-memory board of a one-node comm (none elsewhere): made when a
 * user comm is created, freed with it. */
rondo_status_t rondo__board_create(rondo_comm_t comm);
void rondo__board_free(rondo_comm_t comm, int mpi_usable);
int rondo__board_active(rondo_comm_t comm);
/* rondo__agree in two halves, on a comm with a board: post this rank's
 * signature, then wait for every rank's and compare. The shm all-reduce
 * posts after copying its first round in, so the board's wait is also the
 * wait for everyone's data (shm.c). */
void rondo__agree_post(rondo_comm_t comm, rondo_status_t local, const rondo__sig_t *sig);
/* bench/agree_cost only: 1 skips the agreement, to time a call without it. */
extern int rondo__agree_skip;
rondo_status_t rondo__agree_finish(rondo_comm_t comm, rondo_status_t local,
                                   const rondo__sig_t *sig);

/* Local argument checks shared by the entry points. */
rondo_status_t rondo__check_dtype(rondo_dtype_t dtype);
rondo_status_t rondo__check_op(rondo_op_t op);
rondo_status_t rondo__check_buffer(const void *buf, size_t count, const char *name);
/* bytes = count * dtype size, or RONDO_ERR_COUNT_OVERFLOW. */
rondo_status_t rondo__bytes(size_t count, size_t esize, size_t *bytes);

#endif /* RONDO_INTERNAL_H */
