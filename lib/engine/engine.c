/*
 * The engine's thread and its requests (engine.h lists the files).
 *
 * Threads: application threads submit and wait; one engine thread per comm
 * negotiates and runs. They share the in-flight table, the submission queue
 * and the join/stop flags under e->lock; everything else belongs to the
 * engine thread.
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
#define _GNU_SOURCE /* sched_getcpu, pthread_setaffinity_np */
#include "engine/engine.h"

#include "comm/comm.h"
#include "topo/topo.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define IDLE_MAX_S 0.05      /* longest sleep of an idle engine between cycles */
/* Polls of device batches in flight: from 20 us, doubling to 1 ms. */
#define DEVICE_POLL_MIN_S 20e-6
#define DEVICE_POLL_MAX_S 1e-3
#define SPIN_S 100e-6        /* a busy engine polls (yielding) this long before it sleeps */
#define SPIN_POLLS 64        /* ... or this many polls, on a node with more ranks than cores */
#define POLL_SLEEP_MAX_S 0.002
#define BUSY_FINE_S 0.002    /* a busy engine polls every 20 us for this long */
#define IDLE_POLL_S 0.0005   /* an idle engine's first sleep between polls */
#define IDLE_POLL_MAX_S 0.01
#define SETTLE_S 30e-6       /* a burst of submissions has ended after this quiet */
#define RETRY_MIN_S 50e-6    /* first pause before negotiating again for late ranks */

/* This thread runs an engine's cycles: the engine thread always (1), a
 * helper while it helps (2). Callbacks run there, where rondo_wait must
 * refuse. */
static _Thread_local int in_cycle;
enum { ENGINE_THREAD = 1, HELPER = 2 };

static void sleep_s(double s)
{
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* pthread_cond_timedwait's deadline, s seconds from now. */
static struct timespec deadline(double s)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)s;
  ts.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* An idle engine's nap: s seconds, or until something is submitted.
 * Returns 1 if work arrived (the engine is busy again). */
static int idle_nap(struct engine *e, double s)
{
  struct timespec ts = deadline(s);
  pthread_mutex_lock(&e->lock);
  if (e->queue_head == NULL && !e->stop && !e->join_wanted)
    pthread_cond_timedwait(&e->work, &e->lock, &ts);
  int woke = e->queue_head != NULL || e->stop || e->join_wanted;
  pthread_mutex_unlock(&e->lock);
  return woke;
}

/* A busy engine expects the others within microseconds: it yields a while,
 * then sleeps 20 us at a time for the first 2 ms (a peer that is running
 * arrives within that), then longer, doubling up to 2 ms. How long it
 * yields depends on whose core it is on:
 *   - a helper (the application's own thread, blocked in rondo_wait) and
 *     an engine thread with a core of its own yield for SPIN_S, counted in
 *     time: two ranks that poll back-to-back collectives with a few yields
 *     and then a sleep fall into step with each other's sleeps (each waits
 *     out the other's nap: 60-110 us per collective instead of 4, measured
 *     with MPICH's nonblocking all-reduce);
 *   - an engine thread that shares the application's core (e->follow) and
 *     any thread on a node with more ranks than cores yield SPIN_POLLS
 *     times: each yield hands the core to the application (submitting a
 *     burst, say) and back, and the others need the core more than this
 *     rank needs a quick answer.
 * An idle engine (the last cycle found no work anywhere) is waiting for
 * ranks that sleep too: it sleeps from the start, 0.5 ms doubling up to
 * 10 ms. */
rondo_status_t eng_wait(struct engine *e, MPI_Request *req)
{
  int idle = e->idle;
  double nap = idle ? IDLE_POLL_S : 20e-6, most = idle ? IDLE_POLL_MAX_S : POLL_SLEEP_MAX_S;
  double start = rondo__now();
  int by_time = !e->crowded && (in_cycle == HELPER || !e->follow);
  for (unsigned polls = 0;; polls++) {
    int done = 0;
    MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (done)
      return RONDO_SUCCESS;
    double now = rondo__now();
    if (!idle && (by_time ? now - start < SPIN_S : polls < SPIN_POLLS)) {
      sched_yield();
      continue;
    }
    if (idle && idle_nap(e, nap)) {
      /* local work arrived: the other ranks are probably busy too */
      idle = 0;
      nap = 20e-6;
      most = POLL_SLEEP_MAX_S;
      start = rondo__now();
      continue;
    }
    if (!idle)
      sleep_s(nap);
    if (idle || now - start > BUSY_FINE_S)
      nap = nap * 2 < most ? nap * 2 : most;
  }
}

/* ---- the in-flight table (under e->lock) ------------------------------------------ */

static struct rondo_request **slot_of(struct engine *e, const char *name)
{
  struct rondo_request **p = &e->table[rondo__hash_str(name) % e->table_size];
  while (*p != NULL && strcmp((*p)->name, name) != 0)
    p = &(*p)->hnext;
  return p;
}

static rondo_status_t table_grow(struct engine *e)
{
  size_t n = e->table_size ? e->table_size * 2 : 256;
  struct rondo_request **t = calloc(n, sizeof *t);
  if (t == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: in-flight table of %zu", n);
  for (size_t i = 0; i < e->table_size; i++) {
    struct rondo_request *r = e->table[i];
    while (r != NULL) {
      struct rondo_request *next = r->hnext;
      size_t b = rondo__hash_str(r->name) % n;
      r->hnext = t[b];
      t[b] = r;
      r = next;
    }
  }
  free(e->table);
  e->table = t;
  e->table_size = n;
  return RONDO_SUCCESS;
}

static void table_remove(struct engine *e, struct rondo_request *req)
{
  struct rondo_request **p = slot_of(e, req->name);
  if (*p == req) {
    *p = req->hnext;
    req->hnext = NULL;
    e->in_flight--;
  }
}

/* ---- completion ---------------------------------------------------------------- */

void eng_complete_many(struct engine *e, struct rondo_request **reqs, size_t n,
                       rondo_status_t st, const char *message)
{
  int callbacks = 0;
  for (size_t i = 0; i < n; i++) {
    struct rondo_request *req = reqs[i];
    if (req->pidx >= 0 && (size_t)req->pidx < e->npending && e->pending[req->pidx] == req)
      e->pending[req->pidx] = NULL;
    req->pidx = -1;
    req->status = st;
    req->message = message != NULL ? strdup(message) : NULL;
    callbacks |= req->callback != NULL && !req->phantom;
  }
  pthread_mutex_lock(&e->lock);
  for (size_t i = 0; i < n; i++)
    if (!reqs[i]->phantom)
      table_remove(e, reqs[i]); /* the name may be submitted again from now on */
  pthread_mutex_unlock(&e->lock);
  /* Callbacks see their request done and can take its result. */
  eng_request_mark_done(reqs, n);
  for (size_t i = 0; callbacks && i < n; i++)
    if (reqs[i]->callback != NULL && !reqs[i]->phantom)
      reqs[i]->callback(reqs[i]->handle, st, reqs[i]->user);
  /* Phantoms and detached refusals are ours to free; a real request may be
   * freed by its caller the moment it is released, so it is not touched
   * after that. */
  for (size_t i = 0; i < n; i++)
    if (reqs[i]->phantom || reqs[i]->detached) {
      eng_request_free(reqs[i]);
      reqs[i] = NULL;
    }
  eng_request_release(reqs, n);
}

void eng_complete(struct engine *e, struct rondo_request *req, rondo_status_t st,
                  const char *message)
{
  eng_complete_many(e, &req, 1, st, message);
}

void eng_find_pending(struct engine *e, const eng_cycle_t *c, struct rondo_request **found)
{
  /* The in-flight table holds exactly the unfinished requests; one lock
   * round for the whole cycle. */
  pthread_mutex_lock(&e->lock);
  for (size_t i = 0; i < c->nresp; i++) {
    if (c->resp[i].req != NULL) { /* the fast path knew it already */
      found[i] = c->resp[i].req;
      continue;
    }
    /* A failure also reaches a request held back with its group (taken
     * from the queue, not announced); the queue's are not the cycle's. */
    struct rondo_request *r = *slot_of(e, c->resp[i].name);
    int held = r != NULL && c->resp[i].type == RESP_ERROR && r->pidx >= 0;
    found[i] = r != NULL && (r->announced || held) ? r : NULL;
  }
  pthread_mutex_unlock(&e->lock);
}

/* Closes the gaps completions left in the pending list (engine thread). */
static void prune_pending(struct engine *e)
{
  size_t k = 0;
  for (size_t i = 0; i < e->npending; i++)
    if (e->pending[i] != NULL) {
      e->pending[k] = e->pending[i];
      e->pending[k]->pidx = (long)k;
      k++;
    }
  e->npending = k;
}

/* ---- the thread ------------------------------------------------------------------ */

static void take_queue(struct engine *e);

/* ---- the rendezvous: every rank's engine, before the first negotiation -------------- */

enum { TAG_HELLO = 1 };

/* Waiting for the rendezvous on the engine thread: requests keep arriving and
 * age. Past RONDO_STALL_WARN_SEC rank 0 names the ranks it has not heard
 * from; past RONDO_STALL_ABORT_SEC every rank fails its waiting requests
 * with RONDO_ERR_STALLED. The rendezvous itself goes on: the missing ranks
 * join it when they first use the engine or destroy the comm. */
static void rendezvous_stall(struct engine *e, const char *arrived)
{
  double warn = e->owner->cfg.stall_warn_sec, abort_after = comm_request_timeout(e->owner);
  double now = rondo__now(), oldest = 0;
  for (size_t i = 0; i < e->npending; i++)
    if (e->pending[i] != NULL && now - e->pending[i]->t_submit > oldest)
      oldest = now - e->pending[i]->t_submit;
  char missing[128] = "the other ranks";
  if (arrived != NULL) {
    size_t used = (size_t)snprintf(missing, sizeof missing, "rank(s) ");
    for (int r = 1, shown = 0; r < e->size && used + 16 < sizeof missing; r++)
      if (!arrived[r])
        used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%d",
                                 shown++ ? "," : "", r);
  }
  if (abort_after > 0 && oldest >= abort_after) {
    char msg[512];
    for (size_t i = 0; i < e->npending; i++) {
      struct rondo_request *r = e->pending[i];
      if (r == NULL || now - r->t_submit < abort_after)
        continue;
      snprintf(msg, sizeof msg,
               "'%s' stalled: %s did not start this comm's engine (no request, no join) "
               "within the comm's timeout of %g s (RONDO_STALL_ABORT_SEC, "
               "rondo_comm_set_timeout)",
               r->name, missing, abort_after);
      eng_complete(e, r, RONDO_ERR_STALLED, msg);
    }
  } else if (warn > 0 && oldest >= warn && e->rank == 0 && now - e->last_stall_warn >= warn) {
    e->last_stall_warn = now;
    LOG_WARN("stall: request(s) waited %.0f s: %s did not start this comm's engine (they "
             "submitted no request and did not join). Every rank must submit the same names; "
             "set RONDO_STALL_ABORT_SEC to fail them instead of waiting",
             oldest, missing);
  }
}

static int hello_count(const struct engine *e)
{
  return e->rank == 0 ? e->size : 2; /* rank 0: the hellos + the reduction */
}

/* The rendezvous' first half: this rank's hello and its part of the
 * reduction, posted. */
static rondo_status_t hello_post(struct engine *e, int working)
{
  int n = hello_count(e);
  MPI_Request *reqs = e->hello_reqs;
  for (int i = 0; i < n; i++)
    reqs[i] = MPI_REQUEST_NULL;
  e->hello_posted = 1;
  e->hello_working = working;
  e->hello_anyone = 0;
  if (e->rank == 0)
    for (int r = 1; r < e->size; r++)
      MPI_CHECK(MPI_Irecv(NULL, 0, MPI_BYTE, r, TAG_HELLO, e->mpi, &reqs[r - 1]));
  else
    MPI_CHECK(MPI_Isend(NULL, 0, MPI_BYTE, 0, TAG_HELLO, e->mpi, &reqs[0]));
  MPI_CHECK(MPI_Iallreduce(&e->hello_working, &e->hello_anyone, 1, MPI_INT, MPI_MAX, e->mpi,
                           &reqs[n - 1]));
  return RONDO_SUCCESS;
}

/* Whether the rendezvous is complete (*all), without waiting. */
static rondo_status_t hello_test(struct engine *e, int *all)
{
  int n = hello_count(e);
  *all = 1;
  for (int i = 0; i < n; i++) {
    int done = 0;
    MPI_CHECK(MPI_Test(&e->hello_reqs[i], &done, MPI_STATUS_IGNORE));
    if (done && e->hello_arrived != NULL && i < n - 1)
      e->hello_arrived[i + 1] = 1;
    *all &= done;
  }
  return RONDO_SUCCESS;
}

/* The rendezvous is over (st: how): its requests and tables go. */
static void hello_end(struct engine *e, rondo_status_t st)
{
  for (int i = 0; e->hello_posted && st != RONDO_SUCCESS && i < hello_count(e); i++)
    if (e->hello_reqs[i] != MPI_REQUEST_NULL)
      MPI_CHECK_LOG(MPI_Request_free(&e->hello_reqs[i]));
  free(e->hello_reqs);
  free(e->hello_arrived);
  e->hello_reqs = NULL;
  e->hello_arrived = NULL;
  e->hello_posted = 0;
  e->met = 1;
}

/* The first exchange on e->mpi, made by the engine thread when it starts or
 * by a rank that destroys the comm without ever having started its engine
 * (which may have posted it already: engine_leave_begin): every rank says
 * hello to rank 0 (so that rank 0 can name the missing ones), and all learn
 * whether any rank started its engine for work (*anyone). on_thread:
 * waiting requests may stall (rendezvous_stall). */
static rondo_status_t rendezvous(struct engine *e, int working, int on_thread, int *anyone)
{
  rondo_status_t st = e->hello_posted ? RONDO_SUCCESS : hello_post(e, working);
  double nap = 20e-6;
  while (st == RONDO_SUCCESS) {
    int all = 0;
    st = hello_test(e, &all);
    if (st != RONDO_SUCCESS || all)
      break;
    if (on_thread) {
      take_queue(e);
      rendezvous_stall(e, e->hello_arrived);
      prune_pending(e);
      idle_nap(e, nap);
    } else {
      sleep_s(nap);
    }
    nap = nap * 2 < IDLE_POLL_MAX_S ? nap * 2 : IDLE_POLL_MAX_S;
  }
  *anyone = e->hello_anyone;
  hello_end(e, st);
  return st;
}

/* After the rendezvous the execution comm is built; the outcome is agreed so
 * that no rank negotiates alone. */
static rondo_status_t startup(struct engine *e)
{
  int anyone = 1;
  if (!e->met)
    RONDO_CHECK(rendezvous(e, 1, 1, &anyone));
  /* The engine thread shares the cores with the application's threads:
   * its waits inside collectives yield at once instead of spinning first. */
  rondo_status_t st = comm_build(e->mpi, e->owner, 1, RONDO_SUCCESS, &e->exec);
  if (st == RONDO_SUCCESS)
    st = eng_cache_init(&e->cache, e->owner->cfg.cache_capacity);
  if (st == RONDO_SUCCESS)
    st = eng_packets_create(e);
  if (st == RONDO_SUCCESS &&
      (e->by_id = calloc((size_t)e->cache.capacity + 1, sizeof *e->by_id)) == NULL)
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: negotiation bits");
  /* (The library's setup checked that rank 0 can write the file.) */
  if (st == RONDO_SUCCESS)
    st = eng_tl_startup(e);
  int ok = st == RONDO_SUCCESS, all_ok = 0;
  MPI_Request req;
  MPI_CHECK(MPI_Iallreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, e->mpi, &req));
  RONDO_CHECK(eng_wait(e, &req));
  if (st == RONDO_SUCCESS && !all_ok)
    st = rondo__fail(RONDO_ERR_PEER, "engine: another rank could not start its engine");
  return st;
}

/* While the application is still submitting a burst (more than one request
 * is queued and the newest is younger than SETTLE_S), waits for it to end,
 * for at most `most` seconds: one negotiation then covers the whole burst
 * instead of a cycle for each piece the thread happened to see. A lone
 * request goes at once. */
static void settle(struct engine *e, double most)
{
  double start = rondo__now();
  for (;;) {
    pthread_mutex_lock(&e->lock);
    int burst = e->queue_head != NULL && e->queue_head != e->queue_tail;
    double newest = burst ? e->queue_tail->t_submit : 0;
    int go = e->stop || e->join_wanted;
    pthread_mutex_unlock(&e->lock);
    double now = rondo__now();
    if (go || now - newest >= SETTLE_S || now - start >= most)
      return;
    sleep_s(newest + SETTLE_S - now);
  }
}

/* Takes new submissions into the pending list, in submission order. */
static void take_queue(struct engine *e)
{
  pthread_mutex_lock(&e->lock);
  struct rondo_request *r = e->queue_head;
  e->queue_head = e->queue_tail = NULL;
  pthread_mutex_unlock(&e->lock);
  double now = rondo__now();
  for (; r != NULL; r = r->qnext) {
    r->t_taken = now;
    if (e->npending == e->cap_pending) {
      size_t n = e->cap_pending ? 2 * e->cap_pending : 64;
      struct rondo_request **p = realloc(e->pending, n * sizeof *p);
      if (p == NULL) {
        eng_complete(e, r, RONDO_ERR_NO_MEMORY, "engine: no memory for the pending list");
        continue;
      }
      e->pending = p;
      e->cap_pending = n;
    }
    r->pidx = (long)e->npending;
    e->pending[e->npending++] = r;
  }
}

static eng_failed_group_t *failed_group(struct engine *e, uint64_t group)
{
  for (int i = 0; i < e->nfailed_groups; i++)
    if (e->failed_groups[i].group == group)
      return &e->failed_groups[i];
  return NULL;
}

/* One more member of g failed here; the last one ends the record. */
static void failed_group_count(struct engine *e, eng_failed_group_t *g)
{
  if (--g->left > 0)
    return;
  free(g->message);
  *g = e->failed_groups[--e->nfailed_groups];
}

void eng_group_failed(struct engine *e, const struct rondo_request *req, rondo_status_t st,
                      const char *message)
{
  if (req->sig.group == 0)
    return;
  eng_failed_group_t *g = failed_group(e, req->sig.group);
  if (g == NULL) {
    if (e->nfailed_groups == ENG_FAILED_GROUPS) { /* the oldest goes */
      free(e->failed_groups[0].message);
      memmove(&e->failed_groups[0], &e->failed_groups[1],
              (ENG_FAILED_GROUPS - 1) * sizeof e->failed_groups[0]);
      e->nfailed_groups--;
    }
    g = &e->failed_groups[e->nfailed_groups++];
    g->group = req->sig.group;
    g->left = req->group_size;
    g->status = st;
    g->message = strdup(message != NULL ? message : "");
  }
  failed_group_count(e, g);
}

/* Requests of a group are announced together, once all of them are here;
 * a member of a group that failed here already fails at once. */
static void announce(struct engine *e)
{
  for (size_t i = 0; i < e->npending; i++) {
    struct rondo_request *r = e->pending[i];
    if (r == NULL || r->announced)
      continue;
    if (r->group == NULL) {
      r->announced = 1;
      continue;
    }
    eng_failed_group_t *g = failed_group(e, r->sig.group);
    if (g != NULL) {
      char msg[1024];
      snprintf(msg, sizeof msg, "'%s' fails with its group, which failed before it came: %s",
               r->name, g->message != NULL ? g->message : "");
      rondo_status_t st = g->status;
      failed_group_count(e, g);
      /* a refusing rank gets its own reason, as from a response */
      if (r->sig.kind == ENG_REFUSED)
        eng_complete(e, r, RONDO_ERR_INVALID_ARG, r->reason);
      else
        eng_complete(e, r, st, msg);
      continue;
    }
    int have = 0;
    for (size_t j = 0; j < e->npending; j++)
      have += e->pending[j] != NULL && e->pending[j]->group != NULL &&
              strcmp(e->pending[j]->group, r->group) == 0;
    if (have >= r->group_size)
      for (size_t j = 0; j < e->npending; j++)
        if (e->pending[j] != NULL && e->pending[j]->group != NULL &&
            strcmp(e->pending[j]->group, r->group) == 0)
          e->pending[j]->announced = 1;
  }
}

/* Everyone has joined: agree on the last one and release rondo_join. */
static rondo_status_t finish_join(struct engine *e)
{
  int64_t mine = e->joined ? (int64_t)e->join_cycle * e->size + e->rank : -1, last = -1;
  MPI_Request req;
  MPI_CHECK(MPI_Iallreduce(&mine, &last, 1, MPI_INT64_T, MPI_MAX, e->mpi, &req));
  RONDO_CHECK(eng_wait(e, &req));
  e->joined = 0;
  pthread_mutex_lock(&e->lock);
  e->join_wanted = 0;
  e->join_done = 1;
  e->join_last = (int)(last % e->size);
  pthread_cond_broadcast(&e->done);
  pthread_mutex_unlock(&e->lock);
  return RONDO_SUCCESS;
}

/* A rank shuts down (destroys the comm, finalizes) while this one has
 * joined: it will never join, so rondo_join fails, naming it. */
static void leave_join(struct engine *e, uint64_t stopping)
{
  e->joined = 0;
  pthread_mutex_lock(&e->lock);
  size_t used = 0;
  int shown = 0;
  for (int r = 0; r <= ENG_STOP_RANKS && used + 24 < sizeof e->join_why; r++)
    if (stopping >> r & 1)
      used += (size_t)snprintf(e->join_why + used, sizeof e->join_why - used, "%s%d%s",
                               shown++ ? "," : "", r,
                               r == ENG_STOP_RANKS && e->size > r + 1 ? " or later" : "");
  e->join_wanted = 0;
  e->join_done = -2;
  pthread_cond_broadcast(&e->done);
  pthread_mutex_unlock(&e->lock);
}

/* The thread stops: whatever is still in flight fails. */
static void fail_everything(struct engine *e, rondo_status_t st, const char *why)
{
  take_queue(e);
  for (size_t i = 0; i < e->npending; i++)
    if (e->pending[i] != NULL)
      eng_complete(e, e->pending[i], st, why);
  e->npending = 0;
  pthread_mutex_lock(&e->lock);
  e->exited = 1;
  if (e->join_wanted) {
    e->join_wanted = 0;
    e->join_done = -1;
  }
  pthread_cond_broadcast(&e->done);
  pthread_mutex_unlock(&e->lock);
}


int eng_in_cycle(void)
{
  return in_cycle;
}

/* One cycle, under e->run: take the new submissions, negotiate with every
 * rank, run what is ready, complete it. What it leaves for the decision on
 * when to run the next goes to *ret. */
static rondo_status_t run_cycle(struct engine *e, int settle_first, eng_cycle_out_t *ret)
{
  double t0 = rondo__now();
  pthread_mutex_lock(&e->lock);
  int stopping = e->stop;
  int join = e->join_wanted && !e->joined;
  pthread_mutex_unlock(&e->lock);
  if (settle_first)
    settle(e, e->owner->cfg.cycle_time_ms * 1e-3);
  take_queue(e);
  announce(e);
  /* A joining rank's own requests still in flight go first (they complete
   * as usual, served by the other ranks); it joins once it has none. */
  if (join && e->npending == 0 && e->ninflight == 0) {
    e->joined = 1;
    e->join_cycle = e->cycle;
  }
  if (e->npending > 0 || stopping || e->joined)
    e->idle = 0; /* this rank has work: the others are likely to have it too */
  eng_cycle_t cyc;
  RONDO_CHECK(eng_negotiate(e, stopping, &cyc));
  e->cycle++;
  if (cyc.nresp > 0 && eng_tl_on(e)) {
    char args[96];
    snprintf(args, sizeof args, "{\"responses\":%zu,\"slow_path\":%d}", cyc.nresp,
             cyc.slow_path);
    eng_tl_span(e, "engine", "CYCLE_NEGOTIATION", t0, rondo__now(), args);
    eng_tl_cycle(e, t0);
  }
  eng_execute(e, &cyc);
  eng_cycle_out_t out;
  out.device_busy = e->ninflight > 0 ? eng_poll_device(e) : 0;
  prune_pending(e);
  /* Busy: this rank has requests waiting for other ranks (or joined).
   * Work pending only elsewhere waits for this rank's application, whose
   * submission wakes the thread: negotiating again early would add an
   * empty cycle to every request. */
  out.busy = e->npending > 0 || e->joined;
  out.progress = cyc.nresp > 0 || cyc.inline_done > 0;
  out.anyone = cyc.anyone_pending;
  out.all_stopping = cyc.all_stopping;
  rondo_status_t st = RONDO_SUCCESS;
  if (cyc.all_joined && e->joined)
    st = finish_join(e);
  else if (e->joined && cyc.stopping != 0 && !cyc.all_stopping)
    leave_join(e, cyc.stopping);
  eng_cycle_free(&cyc);
  e->idle = !out.busy && !out.device_busy && !out.anyone;
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
  pthread_mutex_lock(&e->lock);
  int due = 1;
  if (o.progress || o.busy)
    t->idle = t->cycle_s; /* work is flowing: the next wake-up comes soon */
  if (e->queue_head != NULL || e->stop || e->join_wanted) {
    t->idle = t->cycle_s; /* new work: negotiate again at once */
    t->retry = RETRY_MIN_S;
  } else if (o.device_busy) {
    /* GPU work in flight: poll it soon (its events are not signals), and
     * wake for new submissions meanwhile */
    struct timespec ts = deadline(t->device_nap);
    due = pthread_cond_timedwait(&e->work, &e->lock, &ts) == ETIMEDOUT;
    t->device_nap = t->device_nap * 2 < DEVICE_POLL_MAX_S ? t->device_nap * 2 : DEVICE_POLL_MAX_S;
  } else if (o.busy) {
    /* Requests wait for other ranks, which are most likely still
     * submitting the same burst: ask again soon, then less and less
     * often while nothing becomes ready, up to the cycle time. */
    t->idle = t->cycle_s;
    t->retry = o.progress ? RETRY_MIN_S : 2 * t->retry;
    if (t->retry > t->cycle_s)
      t->retry = t->cycle_s;
    double until = rondo__now() + t->retry;
    while (!e->stop && e->queue_head == NULL && rondo__now() < until) {
      struct timespec ts = deadline(until - rondo__now());
      if (pthread_cond_timedwait(&e->work, &e->lock, &ts) == ETIMEDOUT)
        break;
    }
  } else {
    struct timespec ts = deadline(t->idle);
    due = pthread_cond_timedwait(&e->work, &e->lock, &ts) == ETIMEDOUT;
    t->idle = t->idle * 2 < IDLE_MAX_S ? t->idle * 2 : IDLE_MAX_S;
    if (t->idle < 1e-4)
      t->idle = 1e-4;
  }
  if (!o.device_busy)
    t->device_nap = DEVICE_POLL_MIN_S;
  pthread_mutex_unlock(&e->lock);
  return due;
}

/* Whether a helper runs the cycles now (engine_help): the engine thread
 * then leaves them to it and waits until the helper leaves work behind (it
 * signals) or its own timer runs out. */
static int helped(struct engine *e)
{
  pthread_mutex_lock(&e->lock);
  int h = e->helpers > 0 && !e->stop && !e->join_wanted;
  pthread_mutex_unlock(&e->lock);
  return h;
}

/* Whether this rank has anything for a cycle (under e->run). */
static int has_work(struct engine *e)
{
  pthread_mutex_lock(&e->lock);
  int work = e->queue_head != NULL || e->stop || e->join_wanted;
  pthread_mutex_unlock(&e->lock);
  return work || e->npending > 0 || e->joined || e->ninflight > 0;
}

static void *engine_main(void *arg)
{
  struct engine *e = arg;
#ifdef PR_SET_TIMERSLACK
  /* The engine's naps are tens of microseconds; Linux would stretch each by
   * its default 50 us slack. */
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
  in_cycle = ENGINE_THREAD;
  pthread_mutex_lock(&e->run);
  e->idle = 1; /* the other ranks' engines may start much later */
  rondo_status_t st = startup(e);
  e->idle = 0;
  pthread_mutex_unlock(&e->run);
  pthread_mutex_lock(&e->lock);
  e->ready = st == RONDO_SUCCESS;
  pthread_mutex_unlock(&e->lock);
  loop_timing_t t = {e->owner->cfg.cycle_time_ms * 1e-3, 0, RETRY_MIN_S, DEVICE_POLL_MIN_S};
  t.idle = t.cycle_s;
  int due = 1; /* the first cycle runs at once */
  eng_cycle_out_t last = {0};
  while (st == RONDO_SUCCESS) {
    if (helped(e)) {
      due = pause_after_cycle(e, &t, last);
      continue;
    }
    pthread_mutex_lock(&e->run);
    pthread_mutex_lock(&e->lock);
    int broken = e->broken;
    pthread_mutex_unlock(&e->lock);
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
  eng_drain_device(e);
  if (st != RONDO_SUCCESS) {
    LOG_ERROR("engine stopped: %s", rondo_last_error());
    pthread_mutex_lock(&e->lock);
    e->fatal = st;
    pthread_mutex_unlock(&e->lock);
    fail_everything(e, st, "the engine stopped after an error (see the log)");
  } else {
    fail_everything(e, RONDO_ERR_SHUT_DOWN,
                    "the comm was destroyed (or rondo finalized) before this request completed");
  }
  pthread_mutex_unlock(&e->run);
  return NULL;
}

/* ---- helpers: rondo_wait runs the cycles of its own request ----------------------- */

int engine_help_begin(struct engine *e, const struct rondo_request *req)
{
  if (!req->wait_now || req->device >= 0 || in_cycle)
    return 0;
  pthread_mutex_lock(&e->lock);
  /* Only a request alone in flight: with others (async requests, DDP's
   * buckets) the engine thread paces the cycles, as it always did. */
  int ok = e->ready && !e->exited && !e->stop && !e->join_wanted && !e->broken &&
           e->in_flight == 1;
  if (ok)
    e->helpers++;
  else
    pthread_cond_signal(&e->work); /* engine_submit left it to this thread */
  pthread_mutex_unlock(&e->lock);
  return ok;
}

void engine_help(struct engine *e, struct rondo_request *req)
{
  double cycle_s = e->owner->cfg.cycle_time_ms * 1e-3, retry = RETRY_MIN_S;
  pthread_mutex_lock(&e->run);
  in_cycle = HELPER;
  while (!eng_request_released(req)) {
    pthread_mutex_lock(&e->lock);
    int go = !e->exited && !e->stop && !e->join_wanted && !e->broken && e->in_flight == 1;
    pthread_mutex_unlock(&e->lock);
    if (!go)
      break; /* the engine thread takes over: other requests, shutdown, join, failure */
    eng_cycle_out_t out;
    rondo_status_t st = run_cycle(e, 0, &out);
    if (st != RONDO_SUCCESS || out.all_stopping) {
      pthread_mutex_lock(&e->lock);
      e->broken = 1;
      e->broken_st = st;
      pthread_mutex_unlock(&e->lock);
      break;
    }
    if (eng_request_released(req))
      break;
    /* Not ready on every rank yet: as a busy engine thread does, ask again
     * soon, then less and less often, at once when something is submitted */
    retry = out.progress ? RETRY_MIN_S : 2 * retry;
    if (retry > cycle_s)
      retry = cycle_s;
    pthread_mutex_lock(&e->lock);
    double until = rondo__now() + retry;
    while (!e->stop && e->queue_head == NULL && rondo__now() < until) {
      struct timespec ts = deadline(until - rondo__now());
      if (pthread_cond_timedwait(&e->work, &e->lock, &ts) == ETIMEDOUT)
        break;
    }
    pthread_mutex_unlock(&e->lock);
  }
  in_cycle = 0;
  int more = e->npending > 0 || e->ninflight > 0;
  pthread_mutex_unlock(&e->run);
  pthread_mutex_lock(&e->lock);
  e->helpers--;
  /* What is left (other threads' requests, a failure, the shutdown) is the
   * engine thread's again (it may be waiting for this helper to leave);
   * engine_destroy waits for the last helper. */
  if (more || e->queue_head != NULL || e->broken || e->stop || e->join_wanted)
    pthread_cond_broadcast(&e->work);
  pthread_cond_broadcast(&e->done);
  pthread_mutex_unlock(&e->lock);
}

/* Under e->lock. */
static rondo_status_t start_locked(struct engine *e)
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
  PT_CHECK(pthread_create(&e->thread, NULL, engine_main, e));
  e->started = 1;
  return RONDO_SUCCESS;
}

/* ---- the comm's side -------------------------------------------------------------- */

rondo_status_t engine_create(rondo_comm_t comm)
{
  rondo_status_t st = RONDO_SUCCESS;
  /* The collective step first, then this rank's own setup, agreed before
   * anyone goes on: no rank gives up alone. */
  MPI_Comm mpi;
  MPI_CHECK(MPI_Comm_dup(comm->mpi, &mpi));
  struct engine *e = calloc(1, sizeof *e);
  int made = 0; /* the lock, the two conditions, the timeline's lock */
  if (e == NULL) {
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine");
    goto agree;
  }
  e->created = rondo__now();
  e->device = -1;
  e->pinned_cpu = -1;
  e->packet = MPI_DATATYPE_NULL;
  e->follow = comm->topo != NULL && comm->topo->real_local_size >= comm->topo->avail_cores;
  e->crowded = comm->topo != NULL && comm->topo->oversubscribed;
  e->owner = comm;
  e->rank = comm->rank;
  e->size = comm->size;
  e->mpi = mpi;
  MPI_CHECK_GOTO(MPI_Comm_set_errhandler(e->mpi, MPI_ERRORS_RETURN), st, agree);
  /* The in-flight table exists from the start: a rank that joins before it
   * ever submitted still looks names up in it. */
  RONDO_CHECK_GOTO(table_grow(e), st, agree);
  e->hello_reqs = malloc((size_t)(e->rank == 0 ? e->size : 2) * sizeof *e->hello_reqs);
  e->hello_arrived = e->rank == 0 ? calloc((size_t)e->size, 1) : NULL;
  if (e->hello_reqs == NULL || (e->rank == 0 && e->hello_arrived == NULL)) {
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: rendezvous");
    goto agree;
  }
  PT_CHECK_GOTO(pthread_mutex_init(&e->lock, NULL), st, agree);
  made = 1;
  PT_CHECK_GOTO(pthread_cond_init(&e->work, NULL), st, agree);
  made = 2;
  PT_CHECK_GOTO(pthread_cond_init(&e->done, NULL), st, agree);
  made = 3;
  PT_CHECK_GOTO(pthread_mutex_init(&e->tl_lock, NULL), st, agree);
  made = 4;
  PT_CHECK_GOTO(pthread_mutex_init(&e->run, NULL), st, agree);
  made = 5;
agree:
  st = comm_agree_status(comm, st);
  if (st == RONDO_SUCCESS) {
    comm->engine = e;
    return RONDO_SUCCESS;
  }
  if (made >= 5)
    pthread_mutex_destroy(&e->run);
  if (made >= 4)
    pthread_mutex_destroy(&e->tl_lock);
  if (made >= 3)
    pthread_cond_destroy(&e->done);
  if (made >= 2)
    pthread_cond_destroy(&e->work);
  if (made >= 1)
    pthread_mutex_destroy(&e->lock);
  if (e != NULL) {
    free(e->table);
    free(e->hello_reqs);
    free(e->hello_arrived);
  }
  MPI_CHECK_LOG(MPI_Comm_free(&mpi));
  free(e);
  return st;
}

/* After the rendezvous at shutdown: if any rank has its engine running,
 * this rank starts its own to take part in the shutdown. */
static void met_at_shutdown(struct engine *e, int anyone)
{
  pthread_mutex_lock(&e->lock);
  if (anyone && start_locked(e) != RONDO_SUCCESS)
    LOG_ERROR("engine: cannot start the thread for the shutdown");
  pthread_mutex_unlock(&e->lock);
}

void engine_leave_begin(rondo_comm_t comm, int can_poll)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return;
  /* Engines negotiate only with each other: a rank that never started its
   * engine meets the others' at the rendezvous, and if any rank has one,
   * starts its own to take part in the shutdown. */
  pthread_mutex_lock(&e->lock);
  e->stop = 1;
  int started = e->started;
  pthread_cond_broadcast(&e->work);
  pthread_mutex_unlock(&e->lock);
  if (started || e->met)
    return;
  if (can_poll && !e->hello_posted) {
    rondo_status_t st = hello_post(e, 0);
    if (st != RONDO_SUCCESS) {
      LOG_ERROR("engine: shutdown: %s", rondo_last_error());
      hello_end(e, st);
    }
    return;
  }
  int anyone = 0;
  if (rendezvous(e, 0, 0, &anyone) != RONDO_SUCCESS)
    LOG_ERROR("engine: shutdown: %s", rondo_last_error());
  met_at_shutdown(e, anyone);
}

void engine_leave_poll(rondo_comm_t comm)
{
  struct engine *e = comm->engine;
  if (e == NULL || e->started || e->met || !e->hello_posted)
    return;
  int all = 0;
  rondo_status_t st = hello_test(e, &all);
  if (st != RONDO_SUCCESS)
    LOG_ERROR("engine: shutdown: %s", rondo_last_error());
  if (st != RONDO_SUCCESS || all) {
    int anyone = e->hello_anyone;
    hello_end(e, st);
    met_at_shutdown(e, st == RONDO_SUCCESS && anyone);
  }
}

void engine_destroy(rondo_comm_t comm, int mpi_usable)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return;
  if (mpi_usable)
    engine_leave_begin(comm, 0);
  comm->engine = NULL;
  if (e->started)
    PT_CHECK_LOG(pthread_join(e->thread, NULL));
  /* A helper may still be leaving engine_help (its request was failed). */
  pthread_mutex_lock(&e->lock);
  while (e->helpers > 0)
    pthread_cond_wait(&e->done, &e->lock);
  pthread_mutex_unlock(&e->lock);
  /* Requests never seen by the thread (it never ran): fail them too. */
  for (struct rondo_request *r = e->queue_head; r != NULL;) {
    struct rondo_request *next = r->qnext;
    eng_complete(e, r, RONDO_ERR_SHUT_DOWN, "the comm was destroyed before the request ran");
    r = next;
  }
  if (e->exec != NULL && mpi_usable)
    comm_free(e->exec, 1);
  if (mpi_usable)
    MPI_CHECK_LOG(MPI_Comm_free(&e->mpi));
  eng_cache_free(&e->cache);
  eng_tl_set(e, NULL, 0, 0);
  free(e->pending);
  eng_packets_free(e, mpi_usable);
  free(e->by_id);
  free(e->table);
  free(e->hello_reqs); /* never used: no rendezvous */
  free(e->hello_arrived);
  free(e->fusion);
  free(e->identity);
  for (int i = 0; i < e->nfailed_groups; i++)
    free(e->failed_groups[i].message);
  /* Requests not yet waited for are all released: rondo_wait() does not
   * touch e (request.c). */
  pthread_mutex_destroy(&e->lock);
  pthread_cond_destroy(&e->work);
  pthread_cond_destroy(&e->done);
  pthread_mutex_destroy(&e->tl_lock);
  pthread_mutex_destroy(&e->run);
  free(e);
}

/* Where the node has no core to spare (as many ranks as cores, or more:
 * e->follow), the engine thread follows the thread that submits: pinned to
 * its core, each hand-over between the two is a switch on one core. Left
 * free, the kernel spreads them over cores after other work, and every
 * hand-over becomes a cross-core wake-up: 100-250 us instead of 40 us per
 * small blocking request under a VM (docs/engine.md#cycles). With cores to
 * spare the engine stays free to overlap the application's work. Under
 * e->lock, with the thread started. */
static void follow_submitter(struct engine *e)
{
#ifdef __linux__
  int cpu = e->follow ? sched_getcpu() : -1;
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

rondo_status_t engine_submit(rondo_comm_t comm, struct rondo_request *req)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return rondo__fail(RONDO_ERR_SHUT_DOWN, "this comm has no engine");
  req->eng = e;
  req->pidx = -1;
  req->t_submit = rondo__now();
  rondo_status_t st = RONDO_SUCCESS;
  pthread_mutex_lock(&e->lock);
  if (e->stop || e->exited) {
    st = rondo__fail(RONDO_ERR_SHUT_DOWN, "'%s': the comm's engine has shut down%s", req->name,
                     e->fatal ? " after an error" : "");
  } else if (e->join_wanted) {
    st = rondo__fail(RONDO_ERR_INVALID_ARG,
                     "'%s': this rank called rondo_join and may not submit until it returns",
                     req->name);
  } else if (e->in_flight * 2 >= e->table_size && table_grow(e) != RONDO_SUCCESS) {
    st = RONDO_ERR_NO_MEMORY;
  } else if (*slot_of(e, req->name) != NULL) {
    st = rondo__fail(RONDO_ERR_DUPLICATE_NAME,
                     "'%s' is already in flight on this rank: wait for it before submitting "
                     "the name again",
                     req->name);
  } else {
    st = start_locked(e);
  }
  if (st == RONDO_SUCCESS) {
    follow_submitter(e);
    struct rondo_request **slot = slot_of(e, req->name);
    *slot = req;
    e->in_flight++;
    if (e->queue_tail != NULL)
      e->queue_tail->qnext = req;
    else
      e->queue_head = req;
    e->queue_tail = req;
    /* A request whose submitter waits for it at once is run by that thread
     * (engine_help): waking the engine thread would only cost two
     * switches. Before startup the thread takes it. */
    if (!req->wait_now || !e->ready)
      pthread_cond_signal(&e->work);
  }
  pthread_mutex_unlock(&e->lock);
  return st;
}

rondo_status_t engine_device(rondo_comm_t comm, int device)
{
  struct engine *e = comm->engine;
  pthread_mutex_lock(&e->lock);
  int have = e->device;
  if (have < 0)
    e->device = device;
  pthread_mutex_unlock(&e->lock);
  if (have >= 0 && have != device)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "this comm's engine runs its device requests on device %d, and this "
                       "request's buffers are on device %d: one device per rank and comm",
                       have, device);
  return RONDO_SUCCESS;
}

rondo_status_t engine_join(rondo_comm_t comm, int *last_rank)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return rondo__fail(RONDO_ERR_SHUT_DOWN, "this comm has no engine");
  rondo_status_t st = RONDO_SUCCESS;
  pthread_mutex_lock(&e->lock);
  if (e->stop || e->exited)
    st = rondo__fail(RONDO_ERR_SHUT_DOWN, "rondo_join: the comm's engine has shut down");
  else if (e->join_wanted)
    st = rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_join: another thread is joining already");
  else
    st = start_locked(e);
  if (st == RONDO_SUCCESS) {
    e->join_wanted = 1;
    e->join_done = 0;
    pthread_cond_signal(&e->work);
    while (e->join_done == 0)
      pthread_cond_wait(&e->done, &e->lock);
    if (e->join_done == -2)
      st = rondo__fail(RONDO_ERR_SHUT_DOWN,
                       "rondo_join: rank(s) %s destroyed the comm (or finalized rondo) while "
                       "this rank had joined: they will not join",
                       e->join_why);
    else if (e->join_done < 0)
      st = rondo__fail(RONDO_ERR_SHUT_DOWN, "rondo_join: the engine shut down first");
    else if (last_rank != NULL)
      *last_rank = e->join_last;
    e->join_done = 0;
  }
  pthread_mutex_unlock(&e->lock);
  return st;
}

rondo_status_t engine_timeline(rondo_comm_t comm, const char *path, int marks)
{
  struct engine *e = comm->engine;
  if (e == NULL)
    return rondo__fail(RONDO_ERR_SHUT_DOWN, "this comm has no engine");
  eng_timeline_t *t = NULL;
  if (path != NULL)
    RONDO_CHECK(eng_timeline_open(path, e->rank, e->created, &t));
  eng_tl_set(e, t, marks, 1);
  return RONDO_SUCCESS;
}
