/*
 * The engine, as its comm sees it (engine.h): creation, submission, join,
 * the timeline, and the two-step shutdown.
 */
#define _GNU_SOURCE /* sched_getcpu, pthread_setaffinity_np */
#include "engine/engine.h"

#include "engine/assembly.h"

#include "comm/comm.h"
#include "engine/inflight.h"
#include "engine/loop.h"
#include "topo/topo.h"

#include <sched.h>
#include <stdlib.h>

/* Under e->sync.lock: news for the engine thread (nap.c's naps end on it):
 * a submission, stop or join. */
static int news_locked(void *arg)
{
  struct engine *e = arg;
  return eng_queue_waiting_locked(&e->flight) || e->stop || e->join.wanted;
}

/* The objects' views of each other, and the runners' context (its exec
 * comes with the thread's startup, loop.c). */
static void assemble(struct engine *e)
{
  e->nap.sync = &e->sync;
  e->nap.news_locked = news_locked;
  e->nap.arg = e;
  e->ctx = (eng_run_t){.owner = e->owner,
                       .mpi = e->mpi,
                       .rank = e->rank,
                       .size = e->size,
                       .eng = e,
                       .buf = &e->buf,
                       .trace = &e->trace,
                       .dev = &e->dev,
                       .flight = &e->flight,
                       .failed = &e->failed,
                       .join = &e->join,
                       .nap = &e->nap,
                       .device = &e->device};
  e->neg = (eng_negotiator_t){&e->ctx, &e->cache, &e->packet, &e->stall};
}

/* This rank's part of eng_create: on failure it undoes what it made (each
 * label undoes the step above it and falls through to the earlier ones). */
static rondo_status_t setup(struct engine *e)
{
  rondo_status_t st;
  if (e->mpi != MPI_COMM_NULL)
    MPI_CHECK(MPI_Comm_set_errhandler(e->mpi, MPI_ERRORS_RETURN));
  /* The in-flight table exists from the start: a rank that joins before it
   * ever submitted still looks names up in it. */
  RONDO_CHECK(eng_flight_init(&e->flight, &e->sync, &e->buf));
  RONDO_CHECK_GOTO(eng_hello_init(&e->hello, e->mpi, e->rank, e->size), st, free_flight);
  PT_CHECK_GOTO(pthread_mutex_init(&e->sync.lock, NULL), st, free_hello);
  PT_CHECK_GOTO(pthread_cond_init(&e->sync.work, NULL), st, destroy_lock);
  PT_CHECK_GOTO(pthread_cond_init(&e->sync.done, NULL), st, destroy_work);
  PT_CHECK_GOTO(pthread_mutex_init(&e->trace.lock, NULL), st, destroy_done);
  PT_CHECK_GOTO(pthread_mutex_init(&e->run, NULL), st, destroy_trace_lock);
  return RONDO_SUCCESS;

destroy_trace_lock:
  pthread_mutex_destroy(&e->trace.lock);
destroy_done:
  pthread_cond_destroy(&e->sync.done);
destroy_work:
  pthread_cond_destroy(&e->sync.work);
destroy_lock:
  pthread_mutex_destroy(&e->sync.lock);
free_hello:
  eng_hello_free(&e->hello);
free_flight:
  eng_flight_free(&e->flight);
  return st;
}

/* Undoes a setup that succeeded (another rank's failed). */
static void undo_setup(struct engine *e)
{
  pthread_mutex_destroy(&e->run);
  pthread_mutex_destroy(&e->trace.lock);
  pthread_cond_destroy(&e->sync.done);
  pthread_cond_destroy(&e->sync.work);
  pthread_mutex_destroy(&e->sync.lock);
  eng_hello_free(&e->hello);
  eng_flight_free(&e->flight);
}

rondo_status_t eng_create(rondo_comm_t comm)
{
  /* The collective step first, then this rank's own setup, agreed before
   * anyone goes on: no rank gives up alone. Where no rank's MPI gives
   * MPI_THREAD_MULTIPLE no engine can ever start (eng_start_locked), so it
   * gets no communicator: one fewer to make, which SimGrid's SMPI does
   * with p^2 messages. */
  MPI_Comm mpi = MPI_COMM_NULL;
  if (comm->thread_level_max >= MPI_THREAD_MULTIPLE)
    MPI_CHECK(MPI_Comm_dup(comm->mpi, &mpi));
  struct engine *e = calloc(1, sizeof *e);
  rondo_status_t st;
  if (e == NULL) {
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine");
  } else {
    e->created = rondo__now();
    e->device = -1;
    e->pinned_cpu = -1;
    e->packet.type = MPI_DATATYPE_NULL;
    e->nap.pin_to_submitter =
        comm->topo != NULL && comm->topo->real_local_size >= comm->topo->avail_cores;
    e->nap.oversubscribed = comm->topo != NULL && comm->topo->oversubscribed;
    e->owner = comm;
    e->rank = comm->rank;
    e->size = comm->size;
    e->mpi = mpi;
    assemble(e);
    st = setup(e);
  }
  rondo_status_t all = comm_agree_status(comm, st);
  if (all == RONDO_SUCCESS) {
    comm->engine = e;
    return RONDO_SUCCESS;
  }
  if (st == RONDO_SUCCESS)
    undo_setup(e);
  if (mpi != MPI_COMM_NULL)
    MPI_CHECK_LOG(MPI_Comm_free(&mpi));
  free(e);
  return all;
}

/* After the rendezvous at shutdown: if any rank has its engine running,
 * this rank starts its own to take part in the shutdown. */
static void met_at_shutdown(struct engine *e, int anyone)
{
  pthread_mutex_lock(&e->sync.lock);
  if (anyone && eng_start_locked(e) != RONDO_SUCCESS)
    LOG_ERROR("engine: cannot start the thread for the shutdown");
  pthread_mutex_unlock(&e->sync.lock);
}

void eng_leave_begin(rondo_comm_t comm, int can_poll)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return;
  /* Engines negotiate only with each other: a rank that never started its
   * engine meets the others' at the rendezvous, and if any rank has one,
   * starts its own to take part in the shutdown. */
  pthread_mutex_lock(&e->sync.lock);
  e->stop = 1;
  int started = e->started;
  pthread_cond_broadcast(&e->sync.work);
  pthread_mutex_unlock(&e->sync.lock);
  /* No rank's MPI gives MPI_THREAD_MULTIPLE, so no engine can ever start
   * (eng_start_locked): no rendezvous, whose nonblocking all-reduce costs
   * p^2 messages in SimGrid's SMPI. */
  if (comm->thread_level_max < MPI_THREAD_MULTIPLE)
    eng_hello_skip(&e->hello);
  if (started || e->hello.done)
    return;
  if (can_poll && !e->hello.posted) {
    rondo_status_t st = eng_hello_post(&e->hello, 0);
    if (st != RONDO_SUCCESS) {
      LOG_ERROR("engine: shutdown: %s", rondo_last_error());
      eng_hello_end(&e->hello, st);
    }
    return;
  }
  int anyone = 0;
  if (eng_rendezvous(&e->hello, 0, NULL, &anyone) != RONDO_SUCCESS)
    LOG_ERROR("engine: shutdown: %s", rondo_last_error());
  met_at_shutdown(e, anyone);
}

void eng_leave_poll(rondo_comm_t comm)
{
  struct engine *e = comm->engine;
  if (e == NULL || e->started || e->hello.done || !e->hello.posted)
    return;
  int all = 0;
  rondo_status_t st = eng_hello_test(&e->hello, &all);
  if (st != RONDO_SUCCESS)
    LOG_ERROR("engine: shutdown: %s", rondo_last_error());
  if (st != RONDO_SUCCESS || all) {
    int anyone = e->hello.anyone;
    eng_hello_end(&e->hello, st);
    met_at_shutdown(e, st == RONDO_SUCCESS && anyone);
  }
}

void eng_destroy(rondo_comm_t comm, int mpi_usable)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return;
  if (mpi_usable)
    eng_leave_begin(comm, 0);
  comm->engine = NULL;
  if (e->started)
    PT_CHECK_LOG(pthread_join(e->thread, NULL));
  /* A helper may still be leaving eng_help (its request was failed). */
  pthread_mutex_lock(&e->sync.lock);
  while (e->helpers > 0)
    pthread_cond_wait(&e->sync.done, &e->sync.lock);
  pthread_mutex_unlock(&e->sync.lock);
  /* Requests never seen by the thread (it never ran): fail them too. */
  eng_queue_fail_all(&e->flight, RONDO_ERR_SHUT_DOWN,
                     "the comm was destroyed before the request ran");
  if (e->ctx.exec != NULL && mpi_usable)
    comm_free(e->ctx.exec, 1);
  if (mpi_usable && e->mpi != MPI_COMM_NULL)
    MPI_CHECK_LOG(MPI_Comm_free(&e->mpi));
  eng_cache_free(&e->cache);
  eng_tl_set(&e->trace, NULL, 0, 0);
  eng_packet_free(&e->packet, mpi_usable);
  eng_flight_free(&e->flight);
  eng_hello_free(&e->hello); /* never used: no rendezvous */
  eng_buffers_free(&e->buf);
  eng_groups_free(&e->failed);
  /* Requests not yet waited for are all released: rondo_wait() does not
   * touch e (caller.c). */
  pthread_mutex_destroy(&e->sync.lock);
  pthread_cond_destroy(&e->sync.work);
  pthread_cond_destroy(&e->sync.done);
  pthread_mutex_destroy(&e->trace.lock);
  pthread_mutex_destroy(&e->run);
  free(e);
}

/* Where the node has no core to spare (as many ranks as cores, or more:
 * e->nap.pin_to_submitter), the engine thread follows the thread that submits: pinned to
 * its core, each hand-over between the two is a switch on one core. Left
 * free, the kernel spreads them over cores after other work, and every
 * hand-over becomes a cross-core wake-up: 100-250 us instead of 40 us per
 * small blocking request under a VM (docs/engine.md#cycles). With cores to
 * spare the engine stays free to overlap the application's work. Under
 * e->sync.lock, with the thread started. */
static void follow_submitter(struct engine *e)
{
#ifdef __linux__
  int cpu = e->nap.pin_to_submitter ? sched_getcpu() : -1;
  if (cpu < 0 || cpu == e->pinned_cpu)
    return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(e->thread, sizeof set, &set) == 0)
    e->pinned_cpu = cpu;
#else
  (void)e;
#endif
}

rondo_status_t eng_submit(rondo_comm_t comm, struct rondo_request *req)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return rondo__fail(RONDO_ERR_SHUT_DOWN, "this comm has no engine");
  req->eng = e;
  req->pidx = -1;
  req->t_submit = rondo__now();
  req->submitter = pthread_self();
  rondo_status_t st = RONDO_SUCCESS;
  pthread_mutex_lock(&e->sync.lock);
  if (e->stop || e->exited) {
    st = rondo__fail(RONDO_ERR_SHUT_DOWN, "'%s': the comm's engine has shut down%s", req->name,
                     e->fatal ? " after an error" : "");
  } else if (e->join.wanted) {
    st = rondo__fail(RONDO_ERR_INVALID_ARG,
                     "'%s': this rank called rondo_join and may not submit until it returns",
                     req->name);
  } else if (eng_flight_room_locked(&e->flight) != RONDO_SUCCESS) {
    st = RONDO_ERR_NO_MEMORY;
  } else if (eng_flight_has_locked(&e->flight, req->name)) {
    st = rondo__fail(RONDO_ERR_DUPLICATE_NAME,
                     "'%s' is already in flight on this rank: wait for it before submitting "
                     "the name again",
                     req->name);
  } else {
    st = eng_start_locked(e);
  }
  if (st == RONDO_SUCCESS) {
    follow_submitter(e);
    eng_flight_add_locked(&e->flight, req);
    /* A request whose submitter waits for it at once is run by that thread
     * (eng_help): waking the engine thread would only cost two
     * switches. Before startup the thread takes it. */
    if (!req->wait_now || !e->ready)
      pthread_cond_signal(&e->sync.work);
  }
  pthread_mutex_unlock(&e->sync.lock);
  return st;
}

rondo_status_t eng_device(rondo_comm_t comm, int device)
{
  struct engine *e = comm->engine;
  pthread_mutex_lock(&e->sync.lock);
  int have = e->device;
  if (have < 0)
    e->device = device;
  pthread_mutex_unlock(&e->sync.lock);
  if (have >= 0 && have != device)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "this comm's engine runs its device requests on device %d, and this "
                       "request's buffers are on device %d: one device per rank and comm",
                       have, device);
  return RONDO_SUCCESS;
}

rondo_status_t eng_join(rondo_comm_t comm, int *last_rank)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return rondo__fail(RONDO_ERR_SHUT_DOWN, "this comm has no engine");
  rondo_status_t st = RONDO_SUCCESS;
  pthread_mutex_lock(&e->sync.lock);
  if (e->stop || e->exited)
    st = rondo__fail(RONDO_ERR_SHUT_DOWN, "rondo_join: the comm's engine has shut down");
  else if (e->join.wanted)
    st = rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_join: another thread is joining already");
  else
    st = eng_start_locked(e);
  if (st == RONDO_SUCCESS)
    st = eng_join_wait_locked(&e->join, &e->sync, last_rank);
  pthread_mutex_unlock(&e->sync.lock);
  return st;
}

rondo_status_t eng_timeline_mark(rondo_comm_t comm, const char *what)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return rondo__fail(RONDO_ERR_SHUT_DOWN, "this comm has no engine");
  eng_tl_mark(&e->trace, what, rondo__now());
  return RONDO_SUCCESS;
}

rondo_status_t eng_timeline(rondo_comm_t comm, const char *path, int marks)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return rondo__fail(RONDO_ERR_SHUT_DOWN, "this comm has no engine");
  eng_timeline_t *t = NULL;
  if (path != NULL)
    RONDO_CHECK(eng_timeline_open(path, e->rank, e->created, &t));
  eng_tl_set(&e->trace, t, marks, 1);
  return RONDO_SUCCESS;
}
