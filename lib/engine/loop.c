/*
 * The engine's loop (loop.h).
 *
 * The loop: take new submissions, negotiate (every rank, collectively), run
 * what is ready, complete it. Requests submitted while a cycle runs are
 * taken by the next one, which starts at once: what accumulates during a
 * cycle is fused. While this rank's requests wait for other ranks and
 * nothing new arrives, cycles repeat every RONDO_CYCLE_TIME_MS. When this
 * rank has no request, the thread sleeps on a condition variable; a
 * submission wakes it at once, and otherwise it wakes at growing intervals
 * (up to IDLE_MAX_S) for an empty cycle, since a rank that has work can
 * only proceed when every rank negotiates. An idle engine thus costs a few
 * wake-ups per second, not a spinning core.
 */
#include "engine/loop.h"

#include "comm/comm.h"
#include "engine/assembly.h"
#include "engine/execute.h"
#include "engine/inflight.h"
#include "engine/negotiate.h"
#include "engine/nap.h"
#include "topo/topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define IDLE_MAX_S 0.05      /* longest sleep of an idle engine between cycles */
/* Polls of device batches in flight: from 20 us, doubling to 1 ms. */
#define DEVICE_POLL_MIN_S 20e-6
#define DEVICE_POLL_MAX_S 1e-3
#define SETTLE_S 30e-6       /* a burst of submissions has ended after this quiet */

/* What one cycle leaves for the decision on when to run the next. */
typedef struct {
  int busy;           /* this rank has requests waiting for other ranks (or joined) */
  int progress;       /* the cycle ran something */
  int anyone;         /* some rank has requests in flight */
  int all_stopping;   /* every rank shuts down: the loop ends */
  size_t device_busy; /* device batches still in flight */
} eng_cycle_out_t;

/* After the rendezvous the execution comm is built; the outcome is agreed so
 * that no rank negotiates alone. */
static rondo_status_t startup(struct engine *e)
{
  int anyone = 1;
  eng_hello_wait_t on_thread = {&e->flight, &e->nap, &e->stall, e->owner};
  if (!e->hello.done)
    RONDO_CHECK(eng_rendezvous(&e->hello, 1, &on_thread, &anyone));
  /* The engine thread shares the cores with the application's threads:
   * its waits inside collectives yield at once instead of spinning first. */
  rondo_status_t st = comm_build(e->mpi, e->owner, 1, RONDO_SUCCESS, &e->ctx.exec);
  if (st == RONDO_SUCCESS)
    st = eng_cache_init(&e->cache, e->owner->cfg.cache_capacity);
  if (st == RONDO_SUCCESS)
    st = eng_packet_create(&e->packet, e->owner->node_count, eng_bit_words(e->cache.capacity),
                           e->cache.capacity);
  if (st == RONDO_SUCCESS)
    st = eng_buffers_init(&e->buf, e->size);
  /* (The library's setup checked that rank 0 can write the file.) */
  if (st == RONDO_SUCCESS)
    st = eng_tl_startup(&e->trace, e->owner->cfg.timeline, e->rank, e->created);
  int ok = st == RONDO_SUCCESS, all_ok = 0;
  MPI_Request req;
  MPI_CHECK(MPI_Iallreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, e->mpi, &req));
  RONDO_CHECK(eng_wait(&e->nap, &req));
  if (st == RONDO_SUCCESS && !all_ok)
    st = rondo__fail(RONDO_ERR_PEER, "engine: another rank could not start its engine");
  return st;
}

/* While the application is still submitting a burst (more than one request
 * is queued and the newest is younger than SETTLE_S), waits for it to end,
 * for at most `most` seconds: one negotiation then covers the whole burst
 * instead of a cycle for each piece the thread happened to see. A lone
 * request goes at once. */
static void wait_for_burst_end(struct engine *e, double most)
{
  double start = rondo__now();
  for (;;) {
    pthread_mutex_lock(&e->sync.lock);
    double newest;
    eng_queue_burst_locked(&e->flight, &newest);
    int go = e->stop || e->join.wanted;
    pthread_mutex_unlock(&e->sync.lock);
    double now = rondo__now();
    if (go || now - newest >= SETTLE_S || now - start >= most)
      return;
    eng_sleep(newest + SETTLE_S - now);
  }
}

/* The thread stops: whatever is still in flight fails. */
static void fail_everything(struct engine *e, rondo_status_t st, const char *why)
{
  eng_take_queue(&e->flight);
  eng_pending_fail_all(&e->flight, st, why);
  pthread_mutex_lock(&e->sync.lock);
  e->exited = 1;
  eng_join_abandon_locked(&e->join);
  pthread_cond_broadcast(&e->sync.done);
  pthread_mutex_unlock(&e->sync.lock);
}


/* One cycle, under e->run: take the new submissions, negotiate with every
 * rank, run what is ready, complete it. What it leaves for the decision on
 * when to run the next goes to *ret. */
static rondo_status_t run_cycle(struct engine *e, int wait_burst, eng_cycle_out_t *ret)
{
  double t0 = rondo__now();
  pthread_mutex_lock(&e->sync.lock);
  int stopping = e->stop;
  int join = e->join.wanted && !e->join.joined;
  pthread_mutex_unlock(&e->sync.lock);
  if (wait_burst)
    wait_for_burst_end(e, e->owner->cfg.cycle_time_ms * 1e-3);
  eng_take_queue(&e->flight);
  eng_groups_announce(&e->failed, &e->flight);
  /* A joining rank's own requests still in flight go first (they complete
   * as usual, served by the other ranks); it joins once it has none. */
  if (join && eng_pending_count(&e->flight) == 0 && e->dev.n == 0)
    eng_join_enter(&e->join, e->cycle);
  if (eng_pending_count(&e->flight) > 0 || stopping || e->join.joined)
    e->nap.idle = 0; /* this rank has work: the others are likely to have it too */
  eng_cycle_t cyc;
  RONDO_CHECK(eng_negotiate(&e->neg, stopping, &cyc));
  e->cycle++;
  if (cyc.nresp > 0 && eng_tl_on(&e->trace)) {
    char args[96];
    snprintf(args, sizeof args, "{\"responses\":%zu,\"slow_path\":%d}", cyc.nresp,
             cyc.slow_path);
    eng_tl_span(&e->trace, "engine", "CYCLE_NEGOTIATION", t0, rondo__now(), args);
    eng_tl_cycle(&e->trace, t0);
  }
  /* After a slow path every rank agrees it can run the cycle (memory). */
  if (eng_execute_prepare(&e->ctx, &cyc) == RONDO_SUCCESS)
    eng_execute(&e->ctx, &cyc);
  eng_cycle_out_t out;
  out.device_busy = e->dev.n > 0 ? eng_poll_device(&e->ctx) : 0;
  eng_prune_pending(&e->flight);
  /* Busy: this rank has requests waiting for other ranks (or joined).
   * Work pending only elsewhere waits for this rank's application, whose
   * submission wakes the thread: negotiating again early would add an
   * empty cycle to every request. */
  out.busy = eng_pending_count(&e->flight) > 0 || e->join.joined;
  out.progress = cyc.nresp > 0 || cyc.inline_done > 0;
  out.anyone = cyc.anyone_pending;
  out.all_stopping = cyc.all_stopping;
  rondo_status_t st = RONDO_SUCCESS;
  if (cyc.all_joined && e->join.joined)
    st = eng_join_finish(&e->join, &e->nap, e->mpi, e->rank, e->size);
  else if (e->join.joined && cyc.stopping != 0 && !cyc.all_stopping)
    eng_join_leave(&e->join, &e->sync, e->size, cyc.stopping);
  eng_cycle_free(&cyc);
  e->nap.idle = !out.busy && !out.device_busy && !out.anyone;
  *ret = out;
  return st;
}

/* The engine thread's timing between cycles. */
typedef struct {
  double cycle_s;    /* RONDO_CYCLE_TIME_MS */
  double idle;       /* an idle engine's next nap */
  double retry;      /* a busy engine's next pause */
  double device_nap; /* the next poll of device batches in flight */
} loop_timing_t;

/* After a cycle of its own (o: what it left): the engine thread sleeps
 * until the next one is due. Returns 1 when it is due by time, 0 when a
 * signal came first (a submission, stop, join, a helper that left work
 * behind): the thread then runs a cycle only if this rank has something to
 * do. A helper's cycles do not count here: an idle engine's empty cycles
 * stay as rare as they were before the helper came (otherwise they would
 * come every RONDO_CYCLE_TIME_MS and cut into the helper's next call). */
static int pause_after_cycle(struct engine *e, loop_timing_t *t, eng_cycle_out_t o)
{
  pthread_mutex_lock(&e->sync.lock);
  int due = 1;
  if (o.progress || o.busy)
    t->idle = t->cycle_s; /* work is flowing: the next wake-up comes soon */
  if (eng_queue_waiting_locked(&e->flight) || e->stop || e->join.wanted) {
    t->idle = t->cycle_s; /* new work: negotiate again at once */
    t->retry = ENG_RETRY_MIN_S;
  } else if (o.device_busy) {
    /* GPU work in flight: poll it soon (its events are not signals), and
     * wake for new submissions meanwhile */
    struct timespec ts = eng_deadline(t->device_nap);
    due = pthread_cond_timedwait(&e->sync.work, &e->sync.lock, &ts) == ETIMEDOUT;
    t->device_nap = t->device_nap * 2 < DEVICE_POLL_MAX_S ? t->device_nap * 2 : DEVICE_POLL_MAX_S;
  } else if (o.busy) {
    /* Requests wait for other ranks, which are most likely still
     * submitting the same burst: ask again soon, then less and less
     * often while nothing becomes ready, up to the cycle time. */
    t->idle = t->cycle_s;
    t->retry = o.progress ? ENG_RETRY_MIN_S : 2 * t->retry;
    if (t->retry > t->cycle_s)
      t->retry = t->cycle_s;
    double until = rondo__now() + t->retry;
    while (!e->stop && !eng_queue_waiting_locked(&e->flight) && rondo__now() < until) {
      struct timespec ts = eng_deadline(until - rondo__now());
      if (pthread_cond_timedwait(&e->sync.work, &e->sync.lock, &ts) == ETIMEDOUT)
        break;
    }
  } else {
    struct timespec ts = eng_deadline(t->idle);
    due = pthread_cond_timedwait(&e->sync.work, &e->sync.lock, &ts) == ETIMEDOUT;
    t->idle = t->idle * 2 < IDLE_MAX_S ? t->idle * 2 : IDLE_MAX_S;
    if (t->idle < 1e-4)
      t->idle = 1e-4;
  }
  if (!o.device_busy)
    t->device_nap = DEVICE_POLL_MIN_S;
  pthread_mutex_unlock(&e->sync.lock);
  return due;
}

/* Whether a helper runs the cycles now (eng_help): the engine thread
 * then leaves them to it and waits until the helper leaves work behind (it
 * signals) or its own timer runs out. */
static int helper_running(struct engine *e)
{
  pthread_mutex_lock(&e->sync.lock);
  int h = e->helpers > 0 && !e->stop && !e->join.wanted;
  pthread_mutex_unlock(&e->sync.lock);
  return h;
}

/* Whether this rank has anything for a cycle (under e->run). */
static int has_work(struct engine *e)
{
  pthread_mutex_lock(&e->sync.lock);
  int work = eng_queue_waiting_locked(&e->flight) || e->stop || e->join.wanted;
  pthread_mutex_unlock(&e->sync.lock);
  return work || eng_pending_count(&e->flight) > 0 || e->join.joined || e->dev.n > 0;
}

static void *loop_main(void *arg)
{
  struct engine *e = arg;
#ifdef PR_SET_TIMERSLACK
  /* The engine's naps are tens of microseconds; Linux would stretch each by
   * its default 50 us slack. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
  eng_set_in_cycle(ENG_THREAD_ENGINE);
  pthread_mutex_lock(&e->run);
  e->nap.idle = 1; /* the other ranks' engines may start much later */
  rondo_status_t st = startup(e);
  e->nap.idle = 0;
  pthread_mutex_unlock(&e->run);
  pthread_mutex_lock(&e->sync.lock);
  e->ready = st == RONDO_SUCCESS;
  pthread_mutex_unlock(&e->sync.lock);
  loop_timing_t t = {e->owner->cfg.cycle_time_ms * 1e-3, 0, ENG_RETRY_MIN_S, DEVICE_POLL_MIN_S};
  t.idle = t.cycle_s;
  int due = 1; /* the first cycle runs at once */
  eng_cycle_out_t last = {0};
  while (st == RONDO_SUCCESS) {
    if (helper_running(e)) {
      due = pause_after_cycle(e, &t, last);
      continue;
    }
    pthread_mutex_lock(&e->run);
    pthread_mutex_lock(&e->sync.lock);
    int broken = e->broken;
    pthread_mutex_unlock(&e->sync.lock);
    if (broken) {
      /* a helper's cycle failed (or found every rank stopping) */
      st = e->broken_st;
      pthread_mutex_unlock(&e->run);
      break;
    }
    if (!due && !has_work(e)) {
      /* woken for work that a helper did meanwhile */
      pthread_mutex_unlock(&e->run);
      due = pause_after_cycle(e, &t, last);
      continue;
    }
    st = run_cycle(e, 1, &last);
    pthread_mutex_unlock(&e->run);
    if (st != RONDO_SUCCESS || last.all_stopping)
      break;
    due = pause_after_cycle(e, &t, last);
  }
  /* GPU work still queued finishes (or fails) before the requests of the
   * shutdown are failed and the buffers freed. */
  pthread_mutex_lock(&e->run);
  eng_drain_device(&e->ctx);
  if (st != RONDO_SUCCESS) {
    LOG_ERROR("engine stopped: %s", rondo_last_error());
    pthread_mutex_lock(&e->sync.lock);
    e->fatal = st;
    pthread_mutex_unlock(&e->sync.lock);
    fail_everything(e, st, "the engine stopped after an error (see the log)");
  } else {
    fail_everything(e, RONDO_ERR_SHUT_DOWN,
                    "the comm was destroyed (or rondo finalized) before this request completed");
  }
  pthread_mutex_unlock(&e->run);
  return NULL;
}

/* ---- helpers: rondo_wait runs the cycles of its own request ----------------------- */

int eng_help_begin(struct engine *e, const struct rondo_request *req)
{
  if (!req->wait_now || req->device >= 0 || eng_in_cycle())
    return 0;
  /* Only the thread that submitted it, as the hint promised: another one
   * (a framework's completion thread, DDP's futures) waits while the
   * submitter computes on, and its cycles would contend with that for the
   * cores; the engine thread, pinned beside the submitter, runs them. */
  int submitter = pthread_equal(req->submitter, pthread_self());
  pthread_mutex_lock(&e->sync.lock);
  /* Only a request alone in flight: with others (async requests, DDP's
   * buckets) the engine thread paces the cycles, as it always did. */
  int ok = submitter && e->ready && !e->exited && !e->stop && !e->join.wanted && !e->broken &&
           eng_in_flight_locked(&e->flight) == 1;
  if (ok)
    e->helpers++;
  else
    pthread_cond_signal(&e->sync.work); /* eng_submit left it to this thread */
  pthread_mutex_unlock(&e->sync.lock);
  return ok;
}

/* How the cycles' collectives on the execution comm wait: yield at once
 * (the engine thread's cycles: it shares the cores with the application's
 * threads; comm_build at startup made it so), or, for the application's
 * thread blocked in rondo_wait, as a blocking call does (spin first;
 * yield only on an oversubscribed node). Under run: only the thread
 * running the cycles reads these. */
static void exec_waits_yield(struct engine *e, int yield)
{
  struct rondo_comm *x = e->ctx.exec;
  x->yield_waits = x->topo->yield = yield || x->topo->oversubscribed;
}

void eng_help(struct engine *e, struct rondo_request *req)
{
  double cycle_s = e->owner->cfg.cycle_time_ms * 1e-3, retry = ENG_RETRY_MIN_S;
  pthread_mutex_lock(&e->run);
  eng_set_in_cycle(ENG_THREAD_HELPER);
  exec_waits_yield(e, 0);
  /* req->completed: written by whoever held run when it completed (this
   * thread, or the engine thread before this one took run) */
  while (!req->completed) {
    pthread_mutex_lock(&e->sync.lock);
    int go = !e->exited && !e->stop && !e->join.wanted && !e->broken &&
             eng_in_flight_locked(&e->flight) == 1;
    pthread_mutex_unlock(&e->sync.lock);
    if (!go)
      break; /* the engine thread takes over: other requests, shutdown, join, failure */
    eng_cycle_out_t out;
    rondo_status_t st = run_cycle(e, 0, &out);
    if (st != RONDO_SUCCESS || out.all_stopping) {
      pthread_mutex_lock(&e->sync.lock);
      e->broken = 1;
      e->broken_st = st;
      pthread_mutex_unlock(&e->sync.lock);
      break;
    }
    if (req->completed)
      break;
    /* Not ready on every rank yet: as a busy engine thread does, ask again
     * soon, then less and less often, at once when something is submitted */
    retry = out.progress ? ENG_RETRY_MIN_S : 2 * retry;
    if (retry > cycle_s)
      retry = cycle_s;
    pthread_mutex_lock(&e->sync.lock);
    double until = rondo__now() + retry;
    while (!e->stop && !eng_queue_waiting_locked(&e->flight) && rondo__now() < until) {
      struct timespec ts = eng_deadline(until - rondo__now());
      if (pthread_cond_timedwait(&e->sync.work, &e->sync.lock, &ts) == ETIMEDOUT)
        break;
    }
    pthread_mutex_unlock(&e->sync.lock);
  }
  exec_waits_yield(e, 1);
  eng_set_in_cycle(0);
  int more = eng_pending_count(&e->flight) > 0 || e->dev.n > 0;
  pthread_mutex_unlock(&e->run);
  pthread_mutex_lock(&e->sync.lock);
  e->helpers--;
  /* What is left (other threads' requests, a failure, the shutdown) is the
   * engine thread's again (it may be waiting for this helper to leave);
   * eng_destroy waits for the last helper. */
  if (more || eng_queue_waiting_locked(&e->flight) || e->broken || e->stop || e->join.wanted)
    pthread_cond_broadcast(&e->sync.work);
  pthread_cond_broadcast(&e->sync.done);
  pthread_mutex_unlock(&e->sync.lock);
}

rondo_status_t eng_start_locked(struct engine *e)
{
  if (e->started)
    return RONDO_SUCCESS;
  int provided = 0;
  MPI_CHECK(MPI_Query_thread(&provided));
  if (provided < MPI_THREAD_MULTIPLE)
    return rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "asynchronous requests need MPI_THREAD_MULTIPLE (MPI provides level "
                       "%d): initialize MPI with MPI_Init_thread, or let rondo_init do it",
                       provided);
  PT_CHECK(pthread_create(&e->thread, NULL, loop_main, e));
  e->started = 1;
  return RONDO_SUCCESS;
}

