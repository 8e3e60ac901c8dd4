/*
 * The ground floor of librondo (docs/architecture.md): hashing, logging,
 * error reporting, the MPI/pthread check macros and the knob table. Every
 * other layer includes this; it includes nothing of theirs. Nothing here is
 * exported: the library is built with -fvisibility=hidden and only the
 * RONDO_API functions of rondo.h are visible. Base helpers use the rondo__
 * prefix; each layer above uses its own (reduce_, topo_, select_, algo_,
 * comm_, engine_/eng_, api_).
 */
#ifndef RONDO_BASE_H
#define RONDO_BASE_H

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "rondo.h"

#include "base/pmpi.h" /* rondo calls MPI collectives by their PMPI_ names */

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

/* ---- time -------------------------------------------------------------------
 * Seconds on the monotonic clock: every deadline and timeout in rondo. */
static inline double rondo__now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- logging --------------------------------------------------------------
 * RONDO_LOG=off|error|warn|info|debug picks the level, RONDO_LOG_SUBSYS the
 * subsystems (lib/'s folders, and librondo-mpi's "interpose"). A call's
 * subsystem is the folder its file is in, found from __FILE__ the first
 * time the call passes the level test and kept in a static of the call
 * site, so call sites name no subsystem. The level test comes first and the
 * subsystem test second, both before any argument is evaluated: a call
 * disabled by level costs one load and a compare, one disabled by
 * subsystem a second load and a bit test, and neither formats anything.
 * The subsystems filter info and debug lines only: an error or a warning is
 * something to act on, shown at its level whatever the subsystems (and
 * rondo__fail's errors are logged from lib/base whichever layer failed). */
typedef enum {
  RONDO_LOG_OFF = 0,
  RONDO_LOG_ERROR,
  RONDO_LOG_WARN,
  RONDO_LOG_INFO,
  RONDO_LOG_DEBUG
} rondo__log_level_t;

/* In the order of rondo__log_subsys_name(). RONDO__SUBSYS_OTHER is a file
 * in none of these folders (a test, a tool): always shown. */
typedef enum {
  RONDO__SUBSYS_BASE = 0,
  RONDO__SUBSYS_REDUCE,
  RONDO__SUBSYS_TOPO,
  RONDO__SUBSYS_LAUNCH,
  RONDO__SUBSYS_SELECT,
  RONDO__SUBSYS_DEVICE,
  RONDO__SUBSYS_ALGO,
  RONDO__SUBSYS_COMM,
  RONDO__SUBSYS_ENGINE,
  RONDO__SUBSYS_API,
  RONDO__SUBSYS_INTERPOSE,
  RONDO__SUBSYS_OTHER,
  RONDO__SUBSYS_COUNT = RONDO__SUBSYS_OTHER
} rondo__subsys_t;
/* Every subsystem, and RONDO__SUBSYS_OTHER. */
#define RONDO__SUBSYS_ALL ((1u << (RONDO__SUBSYS_OTHER + 1)) - 1u)

extern int rondo__log_level;
/* Bit s set: subsystem s is shown (RONDO__SUBSYS_OTHER's bit always is). */
extern unsigned rondo__log_subsys;
void rondo__log_write(int level, int subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets the rank shown in the prefix of every log line (and in MPI and
 * pthread failure messages). */
void rondo__log_set_rank(int rank);
/* That rank, or -1 before it is known. */
int rondo__log_rank(void);
/* Sets the level and the subsystems from RONDO_LOG and RONDO_LOG_SUBSYS
 * (a malformed value leaves its setting as it was: each comm made reports
 * it, lib/comm). */
void rondo__log_from_env(void);
/* Sets the subsystems: a mask of rondo__subsys_t bits. Lines name their
 * subsystem ("INFO engine: ...") while the mask is not RONDO__SUBSYS_ALL. */
void rondo__log_set_subsys(unsigned mask);
/* "engine"; NULL for RONDO__SUBSYS_OTHER and beyond. */
const char *rondo__log_subsys_name(int subsys);
/* The subsystem of a source file: the folder it is in ("../lib/engine/
 * cache.c": RONDO__SUBSYS_ENGINE), else RONDO__SUBSYS_OTHER. */
int rondo__log_subsys_of(const char *file);
/* RONDO_LOG_SUBSYS's grammar: "all" (every subsystem), a list of
 * names ("engine,algo": only those), or "^" and a list (all but those);
 * case-insensitive. 0 with *mask set, or -1 with what is wrong in why. */
int rondo__log_subsys_parse(const char *text, unsigned *mask, char *why, size_t len);

/* Whether a call site at level (which passed the level test) is shown;
 * *site caches its file's subsystem (-1: not known yet; two threads that
 * both compute it store the same value). */
static inline int rondo__log_site_shown(int *site, const char *file, int level)
{
  int s = __atomic_load_n(site, __ATOMIC_RELAXED);
  if (s < 0) {
    s = rondo__log_subsys_of(file);
    __atomic_store_n(site, s, __ATOMIC_RELAXED);
  }
  return level <= RONDO_LOG_WARN ||
         ((__atomic_load_n(&rondo__log_subsys, __ATOMIC_RELAXED) >> s) & 1u);
}

#define RONDO__LOG(level, ...)                                                 \
  do {                                                                         \
    if (rondo__log_level >= (level)) {                                         \
      static int rondo__log_site_ = -1;                                        \
      if (rondo__log_site_shown(&rondo__log_site_, __FILE__, (level)))         \
        rondo__log_write((level), rondo__log_site_, __VA_ARGS__);              \
    }                                                                          \
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
/* rondo_last_error() without its leading status name ("RONDO_ERR_CUDA: "),
 * to pass a failure's text on under its status. */
const char *rondo__last_error_text(void);
/* Converts a failed MPI call into RONDO_ERR_MPI with the call, the MPI error
 * string, the rank and the source location. */
rondo_status_t rondo__mpi_fail(int mpi_rc, const char *call, const char *file,
                               int line);
/* The same for a pthread call that returned errno value err:
 * RONDO_ERR_INTERNAL (RONDO_ERR_NO_MEMORY for EAGAIN/ENOMEM). */
rondo_status_t rondo__pthread_fail(int err, const char *call, const char *file, int line);
/* Collective over comm: RONDO_SUCCESS if every rank's local preparation
 * (local: its buffers, say) succeeded, else local on the ranks where it
 * failed and RONDO_ERR_PEER ("another rank could not get <what>") on the
 * others. Asked before a collective step that a failed rank cannot take,
 * so that no rank enters one the others skip. */
rondo_status_t rondo__agree_ready(MPI_Comm comm, rondo_status_t local, const char *what);

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
 * The parsed values of the knob table (lib/base/knobs.c is the one place
 * that names, defaults and documents them). Each comm reads its own copy
 * when it is created (struct rondo_comm's cfg); nothing reads the
 * environment after that. */
#define RONDO__KNOB_STRING_MAX 512
#define RONDO__KNOB_NAME_MAX 32

/* RONDO_CHECK_EXCHANGE's values, in its table's order. */
enum { RONDO__CHECK_AUTO = 0, RONDO__CHECK_RONDO = 1, RONDO__CHECK_MPI = 2 };

/* RONDO_TIMELINE's value for "no file now: rondo_timeline_start() starts
 * one" (Horovod's HOROVOD_TIMELINE=DYNAMIC). */
#define RONDO__TIMELINE_DYNAMIC "DYNAMIC"

typedef struct {
  int log_level;          /* RONDO_LOG */
  unsigned log_subsys;    /* RONDO_LOG_SUBSYS: a mask of rondo__subsys_t bits */
  char allreduce_algo[RONDO__KNOB_NAME_MAX]; /* RONDO_ALLREDUCE_ALGO: an algorithm's name, checked
                             against lib/algo's table when a comm is made */
  char reduce_scatter_algo[RONDO__KNOB_NAME_MAX]; /* RONDO_REDUCE_SCATTER_ALGO: the same for
                             reduce-scatter's family */
  char allgather_algo[RONDO__KNOB_NAME_MAX]; /* RONDO_ALLGATHER_ALGO: the same for
                             all-gather's family */
  size_t ring_chunk;      /* RONDO_RING_CHUNK_BYTES */
  char tuning_file[RONDO__KNOB_STRING_MAX]; /* RONDO_TUNING_FILE ("" for none) */
  int node_size;          /* RONDO_NODE_SIZE (0: real nodes) */
  size_t shm_chunk;       /* RONDO_SHM_CHUNK_BYTES */
  size_t fusion_threshold; /* RONDO_FUSION_THRESHOLD (0: no fusion) */
  double cycle_time_ms;   /* RONDO_CYCLE_TIME_MS */
  int cache_capacity;     /* RONDO_CACHE_CAPACITY (0: no cache) */
  char timeline[RONDO__KNOB_STRING_MAX]; /* RONDO_TIMELINE ("" for none, DYNAMIC for
                                            rondo_timeline_start's) */
  double stall_warn_sec;  /* RONDO_STALL_WARN_SEC (0: no warning) */
  double stall_abort_sec; /* RONDO_STALL_ABORT_SEC (0: never) */
  double net_latency_us;  /* RONDO_NET_LATENCY_US (0: measure) */
  double net_gbits;       /* RONDO_NET_GBITS (0: measure) */
  int net_calibrate;      /* RONDO_NET_CALIBRATE: 0 off, 1 on */
  int check_exchange;     /* RONDO_CHECK_EXCHANGE: RONDO__CHECK_AUTO, _RONDO or _MPI */
  size_t hier_chunk;      /* RONDO_HIER_CHUNK_BYTES */
  int rab_radix;          /* RONDO_RAB_RADIX: 0 auto, k: radix 2^k (its table's order) */
  size_t stage_chunk;     /* RONDO_STAGE_CHUNK_BYTES */
  double device_timeout_sec; /* RONDO_DEVICE_TIMEOUT_SEC (0: never) */
  char mpi_intercept[RONDO__KNOB_STRING_MAX]; /* RONDO_MPI_INTERCEPT (librondo-mpi's
                                                 list, checked there) */
  char rendezvous[RONDO__KNOB_STRING_MAX]; /* RONDO_RENDEZVOUS ("" for MASTER_ADDR:MASTER_PORT+1) */
  double rendezvous_timeout_sec;          /* RONDO_RENDEZVOUS_TIMEOUT_SEC */
  char rendezvous_key_file[RONDO__KNOB_STRING_MAX]; /* RONDO_RENDEZVOUS_KEY_FILE ("" for none) */
  int rendezvous_open;                    /* RONDO_RENDEZVOUS_OPEN: 0 off, 1 on */
} rondo__knobs_t;

/* Reads every knob from the environment into *out. On a malformed value
 * returns RONDO_ERR_INVALID_KNOB with a message naming the knob and the
 * value; *out is then unchanged. */
rondo_status_t rondo__knobs_load(rondo__knobs_t *out);
/* The knobs that must be equal on every rank (they change message sizes,
 * nodes or the algorithm), j = 0 .. rondo__knobs_shared_count() - 1: the
 * name, a hash of k's value, and k's value as text. */
int rondo__knobs_shared_count(void);
const char *rondo__knob_shared_name(int j);
uint64_t rondo__knob_shared_hash(const rondo__knobs_t *k, int j);
void rondo__knob_shared_text(const rondo__knobs_t *k, int j, char *buf, size_t len);
/* open(2) (flags: O_RDONLY, O_WRONLY | O_CREAT ...) of a file rondo reads or
 * writes, which must be a regular file: never blocks on a FIFO, refuses
 * devices and directories. -1 with the reason in why (files.c). */
int rondo__open_regular(const char *path, int flags, char *why, size_t len);

/* Parses one knob value given as a string (for tests and the loader). */
rondo_status_t rondo__knob_parse(const char *name, const char *text,
                                 rondo__knobs_t *out);

#endif /* RONDO_BASE_H */
