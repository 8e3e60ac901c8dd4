/*
 * The library's lifecycle and the registry of live comms: making a comm
 * (rondo_comm_create, which rondo_init uses for the world) and freeing
 * comms (rondo_comm_destroy and rondo_finalize).
 *
 * The library is in one of three states: not initialized, active, finalized.
 * rondo_init() (or the first rondo_comm_create() under an application that
 * initialized MPI itself) makes it active; rondo_finalize() makes it
 * finalized for good. Live comms are kept in a registry so a stale handle is
 * recognized (RONDO_ERR_INVALID_COMM) without ever dereferencing it.
 */
#include "api/api.h"

#include <pthread.h>
#include <stdlib.h>

#include "algo/algo.h"
#include "base/leakcheck.h"
#include "comm/comm.h"
#include "engine/engine.h"
#include "launch/launch.h"
#include "topo/topo.h"

enum { LIB_UNINIT = 0, LIB_ACTIVE, LIB_FINALIZED };

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER; /* serializes rondo_init */
static int lib_state = LIB_UNINIT;
static int lib_owns_mpi;          /* rondo_init() called MPI_Init_thread */
static int lib_finalized_by_mpi;  /* MPI_Finalize came first (on_mpi_finalize) */
static int on_mpi_finalize(MPI_Comm comm, int keyval, void *value, void *extra);
static rondo_comm_t world;
static struct rondo_comm *live;   /* registry of live comms */

static rondo_status_t state_error(int state)
{
  if (state == LIB_FINALIZED)
    return rondo__fail(RONDO_ERR_FINALIZED,
                       "rondo_finalize() was called; no rondo call is allowed after it");
  return rondo__fail(RONDO_ERR_NOT_INITIALIZED,
                     "call rondo_init(), or rondo_comm_create() after MPI_Init()");
}

rondo_status_t api_enter(rondo_comm_t comm)
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
  /* MPI started by the application, as one process of many the launcher
   * describes (rondo_init checks the world before it gets here). */
  RONDO_CHECK(launch_check_world(0));
  /* The log level and subsystems are the process's; every other knob is
   * read by each comm (lib/comm), which also reports a malformed RONDO_LOG
   * or RONDO_LOG_SUBSYS on every rank. */
  rondo__log_from_env();
  rondo__clear_error();
  int keyval;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_mpi_finalize, &keyval, NULL) !=
          MPI_SUCCESS ||
      MPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL) != MPI_SUCCESS)
    LOG_WARN("cannot hook MPI_Finalize: call rondo_finalize() before MPI_Finalize()");
  lib_state = LIB_ACTIVE;
  LOG_DEBUG("rondo %s active", RONDO_VERSION_STRING);
  return RONDO_SUCCESS;
}

int api_lib_active(void)
{
  pthread_mutex_lock(&lib_lock);
  int active = lib_state == LIB_ACTIVE;
  pthread_mutex_unlock(&lib_lock);
  return active;
}

rondo_status_t api_lib_init(void)
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
    /* No MPI launcher: the world forms through rondo's rendezvous
     * (lib/launch) when the launcher's variables describe one. */
    RONDO_CHECK(launch_before_mpi());
    int rc;
    RONDO_LEAKCHECK_PAUSE(rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    if (rc != MPI_SUCCESS)
      return rondo__mpi_fail(rc, "MPI_Init_thread", __FILE__, __LINE__);
    pthread_mutex_lock(&lib_lock);
    lib_owns_mpi = 1;
    pthread_mutex_unlock(&lib_lock);
  } else {
    MPI_CHECK(MPI_Query_thread(&provided));
  }
  RONDO_CHECK(launch_check_world(1));
  /* The library's setup (knobs, tuning table) happens in rondo_comm_create,
   * which agrees on its outcome with every rank. */
  rondo_comm_t w = NULL;
  RONDO_CHECK(rondo_comm_create(MPI_COMM_WORLD, &w));
  if (provided < MPI_THREAD_MULTIPLE) /* logged once RONDO_LOG is read */
    LOG_INFO("MPI provides thread level %d, not MPI_THREAD_MULTIPLE", provided);
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

const char *rondo_launcher(void) { return launch_describe(); }

rondo_status_t rondo_launch_prepare(void)
{
  int inited = 0;
  MPI_CHECK(MPI_Initialized(&inited));
  if (inited)
    return rondo__fail(RONDO_ERR_LAUNCH, "rondo_launch_prepare: MPI is already initialized; "
                                         "call it before MPI_Init");
  return launch_before_mpi();
}

rondo_comm_t rondo_world(void)
{
  pthread_mutex_lock(&lib_lock);
  rondo_comm_t w = lib_state == LIB_ACTIVE ? world : NULL;
  pthread_mutex_unlock(&lib_lock);
  return w;
}

void api_register(rondo_comm_t c)
{
  pthread_mutex_lock(&lib_lock);
  c->next = live;
  live = c;
  pthread_mutex_unlock(&lib_lock);
}

int api_unregister(rondo_comm_t c)
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

/* ---- making and freeing comms ------------------------------------------------ */

rondo_status_t rondo_comm_create(MPI_Comm mpi_comm, rondo_comm_t *comm)
{
  if (comm != NULL)
    *comm = NULL;
  /* A failure MPI can still report (a bad knob, a NULL output pointer on
   * this rank) is agreed with the other ranks by comm_build, so none of
   * them waits. */
  rondo_status_t init = api_lib_init();
  if (init == RONDO_ERR_FINALIZED || init == RONDO_ERR_NOT_INITIALIZED)
    return init;
  if (mpi_comm == MPI_COMM_NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_create: MPI_COMM_NULL");
  if (comm == NULL && init == RONDO_SUCCESS)
    init = rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_create: comm pointer is NULL");

  struct rondo_comm *c = NULL;
  RONDO_CHECK(comm_build(mpi_comm, NULL, 0, init, &c));
  /* The engine's communicators are made now, while every rank is here; its
   * thread starts with the first asynchronous request. */
  rondo_status_t st = eng_create(c);
  if (st != RONDO_SUCCESS) {
    comm_free(c, 1);
    return st;
  }
  api_register(c);
  LOG_DEBUG("comm %p: rank %d of %d, local %d of %d, %d node(s)", (void *)c, c->rank,
            c->size, c->local_rank, c->local_size, c->node_count);
  *comm = c;
  return RONDO_SUCCESS;
}

/* Leaves comms[0..n) at once, then destroys each. */
static void free_comms(rondo_comm_t *comms, int n, int mpi_usable)
{
  /* Until every rank destroys each comm too, this rank answers the others'
   * blocking collectives on it (they fail with RONDO_ERR_SHUT_DOWN) and its
   * engine fails their requests and joins: no rank waits on it forever. */
  if (mpi_usable) {
    for (int i = 0; i < n; i++)
      if (comms[i]->size > 1)
        eng_leave_begin(comms[i], agree_leave_polls(comms[i]));
    if (agree_leave(comms, n, eng_leave_poll) != RONDO_SUCCESS)
      LOG_ERROR("rondo_comm_destroy: %s", rondo_last_error());
  }
  for (int i = 0; i < n; i++) {
    if (comms[i]->engine != NULL)
      eng_destroy(comms[i], mpi_usable);
    comm_free(comms[i], mpi_usable);
  }
}

void api_comm_free(rondo_comm_t c, int mpi_usable) { free_comms(&c, 1, mpi_usable); }

void api_comms_free(struct rondo_comm *list, int mpi_usable)
{
  int n = 0;
  for (struct rondo_comm *c = list; c != NULL; c = c->next)
    n++;
  rondo_comm_t *comms = calloc((size_t)n + 1, sizeof *comms);
  if (comms == NULL) { /* no memory: one after the other */
    while (list != NULL) {
      struct rondo_comm *next = list->next;
      api_comm_free(list, mpi_usable);
      list = next;
    }
    return;
  }
  n = 0;
  for (struct rondo_comm *c = list; c != NULL; c = c->next)
    comms[n++] = c;
  free_comms(comms, n, mpi_usable);
  free(comms);
}

/* PMPI_Finalize. Built against MPICH, on a job that spans nodes: after an
 * MPI_Barrier on MPI_COMM_WORLD and with MPICH's UCX endpoint closes
 * skipped (lib/api/mpich_ucx.c), as MPICH 4.0.2 can hang in MPI_Finalize
 * over UCX on TCP otherwise. One node, or another MPI library: straight to
 * PMPI_Finalize. */
static int finalize_mpi(void)
{
  launch_finalizing();
  if (!api_mpich_ucx_workaround())
    return PMPI_Finalize();
  MPI_Comm node = MPI_COMM_NULL;
  int world_size = 1, node_size = 1;
  if (PMPI_Comm_size(MPI_COMM_WORLD, &world_size) == MPI_SUCCESS &&
      PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
          MPI_SUCCESS) {
    PMPI_Comm_size(node, &node_size);
    PMPI_Comm_free(&node);
  }
  if (node_size < world_size) {
    PMPI_Barrier(MPI_COMM_WORLD);
    api_mpich_skip_close(1);
  }
  int rc = PMPI_Finalize();
  api_mpich_skip_close(0);
  return rc;
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
    /* rondo_init() started MPI and failed before the library became active
     * (a failed comm, on a bad knob say, leaves it active: the path below). */
    if (state == LIB_UNINIT && owns_mpi) {
      pthread_mutex_lock(&lib_lock);
      lib_owns_mpi = 0;
      lib_state = LIB_FINALIZED;
      pthread_mutex_unlock(&lib_lock);
      finalize_mpi();
      launch_after_mpi();
      return RONDO_SUCCESS;
    }
    /* MPI_Finalize already did it (see on_mpi_finalize). */
    if (state == LIB_FINALIZED && lib_finalized_by_mpi && !by_mpi)
      return RONDO_SUCCESS;
    return by_mpi ? RONDO_SUCCESS : state_error(state);
  }
  int mpi_finalized = 0;
  MPI_CHECK_LOG(MPI_Finalized(&mpi_finalized));
  api_comms_free(list, !mpi_finalized);
  if (!mpi_finalized) {
    algo_mpi_op_free();
    agree_packet_free();
  }
  topo_shutdown();
  if (owns_mpi && !mpi_finalized) {
    MPI_CHECK(finalize_mpi());
    launch_after_mpi();
  }
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
  int rc = finalize_mpi();
  launch_after_mpi(); /* rank 0 of a rendezvous: the others finalize through it */
  return rc;
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
  if (api_lib_active())
    LOG_WARN("MPI_Finalize was called before rondo_finalize, and rondo's own MPI_Finalize "
             "was bypassed: rondo shuts down inside MPI_Finalize, where MPI may no longer "
             "serve its engine threads. Call rondo_finalize() first");
  launch_finalizing();
  finalize(1);
  return MPI_SUCCESS;
}
