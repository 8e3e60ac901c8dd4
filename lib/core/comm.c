/*
 * Library lifecycle and communicators.
 *
 * The library is in one of three states: not initialized, active, finalized.
 * rondo_init() (or the first rondo_comm_create() under an application that
 * initialized MPI itself) makes it active; rondo_finalize() makes it
 * finalized for good. Live comms are kept in a registry so a stale handle is
 * recognized (RONDO_ERR_INVALID_COMM) without ever dereferencing it.
 */
#include "internal.h"

#include "algo/algo.h"
#include "algo/shm.h"
#include "select/select.h"
#include "engine/engine.h"
#include "topo/topo.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { LIB_UNINIT = 0, LIB_ACTIVE, LIB_FINALIZED };

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER; /* serializes rondo_init */
static int lib_state = LIB_UNINIT;
static int lib_owns_mpi;          /* rondo_init() called MPI_Init_thread */
static int lib_finalized_by_mpi;  /* MPI_Finalize came first (on_mpi_finalize) */
static int on_mpi_finalize(MPI_Comm comm, int keyval, void *value, void *extra);
static rondo_comm_t world;
static struct rondo_comm *live;   /* registry of live comms */
struct select_table *rondo__tuning;

static rondo_status_t state_error(int state)
{
  if (state == LIB_FINALIZED)
    return rondo__fail(RONDO_ERR_FINALIZED,
                       "rondo_finalize() was called; no rondo call is allowed after it");
  return rondo__fail(RONDO_ERR_NOT_INITIALIZED,
                     "call rondo_init(), or rondo_comm_create() after MPI_Init()");
}

rondo_status_t rondo__enter(rondo_comm_t comm)
{
  rondo_status_t st = RONDO_SUCCESS;
  pthread_mutex_lock(&lib_lock);
  if (lib_state != LIB_ACTIVE) {
    int state = lib_state;
    pthread_mutex_unlock(&lib_lock);
    return state_error(state);
  }
  struct rondo_comm *c = live;
  while (c != NULL && c != comm)
    c = c->next;
  pthread_mutex_unlock(&lib_lock);
  if (comm == NULL)
    st = rondo__fail(RONDO_ERR_INVALID_COMM, "comm is NULL");
  else if (c == NULL)
    st = rondo__fail(RONDO_ERR_INVALID_COMM,
                     "comm %p was destroyed or not made by rondo_comm_create()",
                     (void *)comm);
  return st;
}

/* Called with lib_lock held. */
static rondo_status_t lib_init_locked(void)
{
  if (lib_state == LIB_ACTIVE)
    return RONDO_SUCCESS;
  if (lib_state == LIB_FINALIZED)
    return RONDO_ERR_FINALIZED;
  int inited = 0, rank = -1;
  MPI_CHECK(MPI_Initialized(&inited));
  if (!inited)
    return rondo__fail(RONDO_ERR_NOT_INITIALIZED,
                       "MPI is not initialized: call rondo_init() or MPI_Init() first");
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  rondo__log_set_rank(rank);
  rondo_status_t st = rondo__knobs_load(&rondo__knobs);
  if (st != RONDO_SUCCESS) {
    LOG_ERROR("%s", rondo_last_error());
    return st;
  }
  rondo__log_level = rondo__knobs.log_level;
  /* Rank 0 writes the timeline: a path it cannot write is a bad knob. */
  if (rank == 0 && rondo__knobs.timeline[0] != '\0') {
    int fd = open(rondo__knobs.timeline, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      st = rondo__fail(RONDO_ERR_IO, "RONDO_TIMELINE=%s: cannot write it: %s",
                       rondo__knobs.timeline, strerror(errno));
      return st;
    }
    close(fd);
  }
  if (rondo__knobs.tuning_file[0] != '\0') {
    st = select_table_load(rondo__knobs.tuning_file, &rondo__tuning);
    if (st != RONDO_SUCCESS) {
      LOG_ERROR("%s", rondo_last_error());
      return st;
    }
    LOG_INFO("tuning table %s: %zu rules", rondo__knobs.tuning_file,
             select_table_rules(rondo__tuning));
  }
  int keyval;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_mpi_finalize, &keyval, NULL) !=
          MPI_SUCCESS ||
      MPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL) != MPI_SUCCESS)
    LOG_WARN("cannot hook MPI_Finalize: call rondo_finalize() before MPI_Finalize()");
  lib_state = LIB_ACTIVE;
  LOG_DEBUG("rondo %s active", RONDO_VERSION_STRING);
  return RONDO_SUCCESS;
}

int rondo__lib_active(void)
{
  pthread_mutex_lock(&lib_lock);
  int active = lib_state == LIB_ACTIVE;
  pthread_mutex_unlock(&lib_lock);
  return active;
}

rondo_status_t rondo__lib_init(void)
{
  pthread_mutex_lock(&lib_lock);
  rondo_status_t st = lib_init_locked();
  pthread_mutex_unlock(&lib_lock);
  if (st == RONDO_ERR_FINALIZED)
    return state_error(LIB_FINALIZED);
  return st;
}

static rondo_status_t init_locked(int *argc, char ***argv)
{
  int inited = 0, finalized = 0, provided = MPI_THREAD_MULTIPLE;
  pthread_mutex_lock(&lib_lock);
  int state = lib_state;
  int have_world = world != NULL;
  pthread_mutex_unlock(&lib_lock);
  if (state == LIB_FINALIZED)
    return state_error(state);
  if (have_world)
    return RONDO_SUCCESS;

  MPI_CHECK(MPI_Finalized(&finalized));
  if (finalized)
    return rondo__fail(RONDO_ERR_NOT_INITIALIZED,
                       "MPI was already finalized; rondo cannot start");
  MPI_CHECK(MPI_Initialized(&inited));
  if (!inited) {
    MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    pthread_mutex_lock(&lib_lock);
    lib_owns_mpi = 1;
    pthread_mutex_unlock(&lib_lock);
  } else {
    MPI_CHECK(MPI_Query_thread(&provided));
  }
  /* The library's setup (knobs, tuning table) happens in rondo_comm_create,
   * which agrees on its outcome with every rank. */
  if (provided < MPI_THREAD_MULTIPLE)
    LOG_INFO("MPI provides thread level %d, not MPI_THREAD_MULTIPLE", provided);
  rondo_comm_t w = NULL;
  RONDO_CHECK(rondo_comm_create(MPI_COMM_WORLD, &w));
  pthread_mutex_lock(&lib_lock);
  world = w;
  pthread_mutex_unlock(&lib_lock);
  return RONDO_SUCCESS;
}

rondo_status_t rondo_init(int *argc, char ***argv)
{
  pthread_mutex_lock(&init_lock);
  rondo_status_t st = init_locked(argc, argv);
  pthread_mutex_unlock(&init_lock);
  return st;
}

rondo_comm_t rondo_world(void)
{
  pthread_mutex_lock(&lib_lock);
  rondo_comm_t w = lib_state == LIB_ACTIVE ? world : NULL;
  pthread_mutex_unlock(&lib_lock);
  return w;
}

static int largest_pof2(int n)
{
  int p = 1;
  while (p * 2 <= n)
    p *= 2;
  return p;
}

/* A local failure during comm creation (a malformed knob, a missing tuning
 * file) must reach every rank, or the others would wait in the next
 * collective forever: all learn the lowest failing rank, and its message.
 * Collective over c. */
static rondo_status_t agree_status(struct rondo_comm *c, rondo_status_t local)
{
  int mine = local == RONDO_SUCCESS ? c->size : c->rank, first = c->size;
  MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c->mpi));
  if (first == c->size)
    return RONDO_SUCCESS;
  char msg[RONDO__KNOB_STRING_MAX + 256] = "";
  if (first == c->rank)
    snprintf(msg, sizeof msg, "%s", rondo_last_error());
  MPI_CHECK(MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, c->mpi));
  if (first == c->rank)
    return local;
  msg[sizeof msg - 1] = '\0';
  return rondo__fail(RONDO_ERR_PEER, "rank %d could not set up rondo: %s", first, msg);
}

/* Knobs that shape messages must be equal on every rank, or collectives
 * would mismatch sizes or hang: checked once per comm, MAX of [h, ~h]. */
static rondo_status_t check_knobs_agree(struct rondo_comm *c)
{
  int64_t h = (int64_t)(rondo__knobs_hash(&rondo__knobs) >> 1), v[2] = {h, ~h}, r[2];
  MPI_CHECK(MPI_Allreduce(v, r, 2, MPI_INT64_T, MPI_MAX, c->mpi));
  if (r[0] != ~r[1])
    return rondo__fail(RONDO_ERR_MISMATCH,
                       "ranks see different values of %s: export the same values to "
                       "every rank",
                       rondo__knobs_shared_names());
  return RONDO_SUCCESS;
}

/* A comm over an MPI communicator owned by someone else (the topology's
 * cross-node communicators): enough for the point-to-point algorithms. */
static rondo_status_t sub_comm(MPI_Comm mpi, struct rondo_comm **out)
{
  rondo_status_t st = RONDO_SUCCESS;
  struct rondo_comm *c = calloc(1, sizeof *c);
  if (c == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "topology: cross comm");
  c->mpi = mpi;
  MPI_CHECK_GOTO(MPI_Comm_set_errhandler(mpi, MPI_ERRORS_RETURN), st, fail);
  MPI_CHECK_GOTO(MPI_Comm_rank(mpi, &c->rank), st, fail);
  MPI_CHECK_GOTO(MPI_Comm_size(mpi, &c->size), st, fail);
  c->pof2 = largest_pof2(c->size);
  *out = c;
  return RONDO_SUCCESS;
fail:
  free(c);
  return st;
}

static void free_topology(struct rondo_comm *c, int mpi_usable)
{
  if (c->topo == NULL)
    return;
  for (int g = 0; c->cross != NULL && g < c->topo->slices; g++) {
    if (c->cross[g] != NULL)
      free(c->cross[g]->scratch);
    free(c->cross[g]);
  }
  free(c->cross);
  c->cross = NULL;
  if (mpi_usable) {
    shm_free(c);
    topo_destroy(c->topo);
  }
  free(c->topo);
  c->topo = NULL;
}

/* Nodes, cross-node comms and hwloc facts; logs oversubscription once. */
static rondo_status_t find_topology(struct rondo_comm *c, int yield)
{
  static int warned;
  c->topo = calloc(1, sizeof *c->topo);
  if (c->topo == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "topology");
  rondo_status_t st = topo_create(c, c->topo);
  if (st != RONDO_SUCCESS) {
    free(c->topo);
    c->topo = NULL;
    return st;
  }
  c->topo->yield |= yield;
  c->local_rank = c->topo->local_rank;
  c->local_size = c->topo->local_size;
  c->node_count = c->topo->node_count;
  c->cross = calloc((size_t)c->topo->slices, sizeof *c->cross);
  if (c->cross == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "topology: cross comms");
  for (int g = 0; g < c->topo->slices; g++) {
    if (c->topo->cross[g] == MPI_COMM_NULL)
      continue;
    RONDO_CHECK(sub_comm(c->topo->cross[g], &c->cross[g]));
    c->cross[g]->yield_waits = c->topo->yield;
  }
  c->yield_waits = c->topo->yield;
  if (c->topo->oversubscribed && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    LOG_WARN("%d ranks share %d available cores on this node: waits yield the core "
             "instead of spinning (%s)",
             c->topo->real_local_size, c->topo->avail_cores, c->topo->hw_summary);
  return RONDO_SUCCESS;
}

/* Everything of a comm but the registry and the engine, over mpi_comm
 * (duplicated); yield: its waits yield at once (topo_t.yield); local: this
 * rank's library setup, agreed first. Collective. */
static rondo_status_t comm_build(MPI_Comm mpi_comm, int yield, rondo_status_t local,
                                 struct rondo_comm **out)
{
  rondo_status_t st = RONDO_SUCCESS;
  struct rondo_comm *c = calloc(1, sizeof *c);
  if (c == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "rondo_comm_create: no memory for the comm");
  MPI_CHECK_GOTO(MPI_Comm_dup(mpi_comm, &c->mpi), st, fail_dup);
  /* rondo reports MPI failures as statuses instead of aborting. */
  MPI_CHECK_GOTO(MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN), st, fail_setup);
  MPI_CHECK_GOTO(MPI_Comm_rank(c->mpi, &c->rank), st, fail_setup);
  MPI_CHECK_GOTO(MPI_Comm_size(c->mpi, &c->size), st, fail_setup);
  c->pof2 = largest_pof2(c->size);
  c->last_algo = RONDO_ALGO_AUTO;
  RONDO_CHECK_GOTO(agree_status(c, local), st, fail_setup);
  RONDO_CHECK_GOTO(check_knobs_agree(c), st, fail_setup);
  RONDO_CHECK_GOTO(find_topology(c, yield), st, fail_setup);
  *out = c;
  return RONDO_SUCCESS;

fail_setup:
  free_topology(c, 1);
  MPI_CHECK_LOG(MPI_Comm_free(&c->mpi));
fail_dup:
  free(c);
  return st;
}

static void comm_free(struct rondo_comm *c, int mpi_usable)
{
  if (c->engine != NULL)
    engine_destroy(c, mpi_usable);
  rondo__board_free(c, mpi_usable);
  free_topology(c, mpi_usable);
  if (mpi_usable)
    MPI_CHECK_LOG(MPI_Comm_free(&c->mpi));
  free(c->scratch);
  free(c);
}

rondo_status_t rondo__comm_build(MPI_Comm mpi_comm, int yield, rondo_comm_t *out)
{
  return comm_build(mpi_comm, yield, RONDO_SUCCESS, out);
}

void rondo__comm_free(rondo_comm_t comm) { comm_free(comm, 1); }

rondo_status_t rondo_comm_create(MPI_Comm mpi_comm, rondo_comm_t *comm)
{
  rondo_status_t st = RONDO_SUCCESS;
  if (comm == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_create: comm pointer is NULL");
  *comm = NULL;
  /* A setup failure that MPI can still report (a bad knob on this rank) is
   * agreed with the other ranks by comm_build, so none of them waits. */
  rondo_status_t init = rondo__lib_init();
  if (init == RONDO_ERR_FINALIZED || init == RONDO_ERR_NOT_INITIALIZED)
    return init;
  if (mpi_comm == MPI_COMM_NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_create: MPI_COMM_NULL");

  struct rondo_comm *c = NULL;
  RONDO_CHECK(comm_build(mpi_comm, 0, init, &c));
  st = rondo__board_create(c);
  if (st != RONDO_SUCCESS) {
    comm_free(c, 1);
    return st;
  }
  /* The engine's communicators are made now, while every rank is here; its
   * thread starts with the first asynchronous request. */
  st = engine_create(c);
  if (st != RONDO_SUCCESS) {
    comm_free(c, 1);
    return st;
  }

  pthread_mutex_lock(&lib_lock);
  c->next = live;
  live = c;
  pthread_mutex_unlock(&lib_lock);
  LOG_DEBUG("comm %p: rank %d of %d, local %d of %d, %d node(s)", (void *)c,
            c->rank, c->size, c->local_rank, c->local_size, c->node_count);
  *comm = c;
  return RONDO_SUCCESS;
}

/* Takes c out of the registry; returns 0 if it was not there. */
static int unregister(struct rondo_comm *c)
{
  int found = 0;
  pthread_mutex_lock(&lib_lock);
  for (struct rondo_comm **p = &live; *p != NULL; p = &(*p)->next) {
    if (*p == c) {
      *p = c->next;
      found = 1;
      break;
    }
  }
  if (world == c)
    world = NULL;
  pthread_mutex_unlock(&lib_lock);
  return found;
}

rondo_status_t rondo_comm_destroy(rondo_comm_t *comm)
{
  if (comm == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_destroy: comm pointer is NULL");
  RONDO_CHECK(rondo__enter(*comm));
  if (!unregister(*comm))
    return rondo__fail(RONDO_ERR_INVALID_COMM, "comm was destroyed concurrently");
  comm_free(*comm, 1);
  *comm = NULL;
  return RONDO_SUCCESS;
}

/* Tears the library down. by_mpi: called from inside MPI_Finalize (the
 * application finalized MPI first): MPI still works, and is not finalized
 * again here. */
static rondo_status_t finalize(int by_mpi)
{
  pthread_mutex_lock(&lib_lock);
  int state = lib_state;
  int owns_mpi = lib_owns_mpi && !by_mpi;
  struct rondo_comm *list = live;
  if (state == LIB_ACTIVE) {
    lib_state = LIB_FINALIZED;
    lib_finalized_by_mpi = by_mpi;
    live = NULL;
    world = NULL;
  }
  pthread_mutex_unlock(&lib_lock);

  if (state != LIB_ACTIVE) {
    /* rondo_init() may have started MPI and then failed on a bad knob. */
    if (state == LIB_UNINIT && owns_mpi) {
      pthread_mutex_lock(&lib_lock);
      lib_owns_mpi = 0;
      lib_state = LIB_FINALIZED;
      pthread_mutex_unlock(&lib_lock);
      PMPI_Finalize();
      return RONDO_SUCCESS;
    }
    /* MPI_Finalize already did it (see on_mpi_finalize). */
    if (state == LIB_FINALIZED && lib_finalized_by_mpi && !by_mpi)
      return RONDO_SUCCESS;
    return by_mpi ? RONDO_SUCCESS : state_error(state);
  }
  int mpi_finalized = 0;
  MPI_CHECK_LOG(MPI_Finalized(&mpi_finalized));
  while (list != NULL) {
    struct rondo_comm *next = list->next;
    comm_free(list, !mpi_finalized);
    list = next;
  }
  if (!mpi_finalized)
    algo_mpi_op_free();
  topo_shutdown();
  select_table_free(rondo__tuning);
  rondo__tuning = NULL;
  if (owns_mpi && !mpi_finalized)
    MPI_CHECK(PMPI_Finalize());
  return RONDO_SUCCESS;
}

rondo_status_t rondo_finalize(void) { return finalize(0); }

/* MPI_Finalize through the MPI profiling interface: an application that
 * finalizes MPI before rondo (embedded use) gets rondo shut down first, while
 * MPI still serves every thread. MPI requires that no other thread be inside
 * MPI when MPI_Finalize starts; rondo's engine threads would be, and some MPI
 * libraries then fail (MPICH asserts on a mutex left locked). A tool that
 * defines MPI_Finalize itself and is loaded first takes precedence: then the
 * MPI_COMM_SELF hook below still shuts rondo down, inside MPI_Finalize. */
RONDO_API int MPI_Finalize(void)
{
  finalize(1);
  return PMPI_Finalize();
}

/* MPI deletes the attributes of MPI_COMM_SELF first thing in MPI_Finalize,
 * while MPI still works: an application that finalizes MPI before rondo
 * gets rondo shut down there (its engine threads stopped, its comms freed)
 * instead of engine threads calling into a finalized MPI. */
static int on_mpi_finalize(MPI_Comm comm, int keyval, void *value, void *extra)
{
  (void)comm;
  (void)keyval;
  (void)value;
  (void)extra;
  if (rondo__lib_active())
    LOG_WARN("MPI_Finalize was called before rondo_finalize, and rondo's own MPI_Finalize "
             "was bypassed: rondo shuts down inside MPI_Finalize, where MPI may no longer "
             "serve its engine threads. Call rondo_finalize() first");
  finalize(1);
  return MPI_SUCCESS;
}

/* ---- queries ---------------------------------------------------------------- */

#define COMM_QUERY(fn, field)                                                  \
  int fn(rondo_comm_t comm)                                                    \
  {                                                                            \
    return rondo__enter(comm) == RONDO_SUCCESS ? comm->field : -1;             \
  }
COMM_QUERY(rondo_comm_rank, rank)
COMM_QUERY(rondo_comm_size, size)
COMM_QUERY(rondo_comm_local_rank, local_rank)
COMM_QUERY(rondo_comm_local_size, local_size)
COMM_QUERY(rondo_comm_node_count, node_count)
#undef COMM_QUERY

MPI_Comm rondo_comm_mpi(rondo_comm_t comm)
{
  return rondo__enter(comm) == RONDO_SUCCESS ? comm->mpi : MPI_COMM_NULL;
}

rondo_status_t rondo_comm_topology(rondo_comm_t comm, char *buf, size_t len)
{
  RONDO_CHECK(rondo__enter(comm));
  if (buf == NULL || len == 0)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_topology: no buffer");
  const topo_t *t = comm->topo;
  int n = snprintf(buf, len,
                   "%d ranks on %d %snode(s) of %d-%d ranks; this rank: node %d, local rank "
                   "%d of %d; hardware: %s; %d ranks share %d available cores%s",
                   comm->size, t->node_count, rondo__knobs.node_size ? "virtual " : "",
                   t->min_local, t->max_local, t->node_id, t->local_rank, t->local_size,
                   t->hw_summary, t->real_local_size, t->avail_cores,
                   t->oversubscribed ? " (oversubscribed: waits yield)" : "");
  if (n < 0 || (size_t)n >= len)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_topology: needs %d bytes", n + 1);
  return RONDO_SUCCESS;
}

rondo_status_t rondo__scratch(rondo_comm_t comm, size_t bytes, void **buf)
{
  if (bytes > comm->scratch_bytes) {
    free(comm->scratch);
    comm->scratch = malloc(bytes);
    if (comm->scratch == NULL) {
      comm->scratch_bytes = 0;
      return rondo__fail(RONDO_ERR_NO_MEMORY, "no memory for %zu bytes of scratch",
                         bytes);
    }
    comm->scratch_bytes = bytes;
  }
  *buf = comm->scratch;
  return RONDO_SUCCESS;
}
