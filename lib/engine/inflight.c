/*
 * The requests in flight on one rank (inflight.h).
 */
#include "engine/inflight.h"

#include "engine/request.h"

#include <stdlib.h>
#include <string.h>

static rondo_status_t table_grow(eng_flight_t *f);

rondo_status_t eng_flight_init(eng_flight_t *f, eng_sync_t *sync, eng_buffers_t *buf)
{
  f->sync = sync;
  f->buf = buf;
  return table_grow(f);
}

void eng_flight_free(eng_flight_t *f)
{
  free(f->table);
  f->table = NULL;
  free(f->pending);
  f->pending = NULL;
}

/* ---- the in-flight table and the queue (under the lock) ----------------------------- */

/* The table's slot for name (*slot is NULL if it is not in flight). */
static struct rondo_request **table_slot(eng_flight_t *f, const char *name)
{
  struct rondo_request **p = &f->table[rondo__hash_str(name) % f->table_size];
  while (*p != NULL && strcmp((*p)->name, name) != 0)
    p = &(*p)->hnext;
  return p;
}

static rondo_status_t table_grow(eng_flight_t *f)
{
  size_t n = f->table_size ? f->table_size * 2 : 256;
  struct rondo_request **t = calloc(n, sizeof *t);
  if (t == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: in-flight table of %zu", n);
  for (size_t i = 0; i < f->table_size; i++) {
    struct rondo_request *r = f->table[i];
    while (r != NULL) {
      struct rondo_request *next = r->hnext;
      size_t b = rondo__hash_str(r->name) % n;
      r->hnext = t[b];
      t[b] = r;
      r = next;
    }
  }
  free(f->table);
  f->table = t;
  f->table_size = n;
  return RONDO_SUCCESS;
}

int eng_flight_has_locked(eng_flight_t *f, const char *name)
{
  return *table_slot(f, name) != NULL;
}

rondo_status_t eng_flight_room_locked(eng_flight_t *f)
{
  if (f->in_flight * 2 >= f->table_size && table_grow(f) != RONDO_SUCCESS)
    return RONDO_ERR_NO_MEMORY;
  return RONDO_SUCCESS;
}

void eng_flight_add_locked(eng_flight_t *f, struct rondo_request *req)
{
  struct rondo_request **slot = table_slot(f, req->name);
  *slot = req;
  f->in_flight++;
  if (f->queue_tail != NULL)
    f->queue_tail->qnext = req;
  else
    f->queue_head = req;
  f->queue_tail = req;
}

int eng_queue_burst_locked(const eng_flight_t *f, double *newest)
{
  int burst = f->queue_head != NULL && f->queue_head != f->queue_tail;
  *newest = burst ? f->queue_tail->t_submit : 0;
  return burst;
}

void eng_queue_fail_all(eng_flight_t *f, rondo_status_t st, const char *why)
{
  for (struct rondo_request *r = f->queue_head; r != NULL;) {
    struct rondo_request *next = r->qnext;
    eng_complete(f, r, st, why);
    r = next;
  }
}

static void table_remove(eng_flight_t *f, struct rondo_request *req)
{
  struct rondo_request **p = table_slot(f, req->name);
  if (*p == req) {
    *p = req->hnext;
    req->hnext = NULL;
    f->in_flight--;
  }
}

/* ---- completion ---------------------------------------------------------------- */

void eng_complete_many(eng_flight_t *f, struct rondo_request **reqs, size_t n,
                       rondo_status_t st, const char *message)
{
  int callbacks = 0;
  for (size_t i = 0; i < n; i++) {
    struct rondo_request *req = reqs[i];
    eng_pending_drop(f, req);
    req->completed = 1;
    req->status = st;
    req->message = message != NULL ? strdup(message) : NULL;
    callbacks |= req->callback != NULL && !req->stand_in;
  }
  pthread_mutex_lock(&f->sync->lock);
  for (size_t i = 0; i < n; i++)
    if (!reqs[i]->stand_in)
      table_remove(f, reqs[i]); /* the name may be submitted again from now on */
  pthread_mutex_unlock(&f->sync->lock);
  /* Callbacks see their request done and can take its result. */
  eng_request_mark_done(reqs, n);
  for (size_t i = 0; callbacks && i < n; i++)
    if (reqs[i]->callback != NULL && !reqs[i]->stand_in)
      reqs[i]->callback(reqs[i]->handle, st, reqs[i]->user);
  /* Stand-ins and detached refusals are ours to free; a real request may
   * be freed by its caller the moment it is released, so it is not touched
   * after that. */
  for (size_t i = 0; i < n; i++)
    if (reqs[i]->stand_in || reqs[i]->detached) {
      eng_request_free(reqs[i]);
      reqs[i] = NULL;
    }
  eng_request_release(reqs, n);
}

void eng_complete(eng_flight_t *f, struct rondo_request *req, rondo_status_t st,
                  const char *message)
{
  eng_complete_many(f, &req, 1, st, message);
}

void eng_find_pending(eng_flight_t *f, const eng_cycle_t *c, struct rondo_request **found)
{
  /* The in-flight table holds exactly the unfinished requests; one lock
   * round for the whole cycle. */
  pthread_mutex_lock(&f->sync->lock);
  for (size_t i = 0; i < c->nresp; i++) {
    if (c->resp[i].req != NULL) { /* the fast path knew it already */
      found[i] = c->resp[i].req;
      continue;
    }
    /* A failure also reaches a request held back with its group (taken
     * from the queue, not announced); the queue's are not the cycle's. */
    struct rondo_request *r = *table_slot(f, c->resp[i].name);
    int held = r != NULL && c->resp[i].type == RESP_ERROR && r->pidx >= 0;
    found[i] = r != NULL && (r->announced || held) ? r : NULL;
  }
  pthread_mutex_unlock(&f->sync->lock);
}

void eng_prune_pending(eng_flight_t *f)
{
  size_t k = 0;
  for (size_t i = 0; i < f->npending; i++)
    if (f->pending[i] != NULL) {
      f->pending[k] = f->pending[i];
      f->pending[k]->pidx = (long)k;
      k++;
    }
  f->npending = k;
}

/* ---- the pending list (cycles only) ------------------------------------------------ */

void eng_pending_drop(eng_flight_t *f, struct rondo_request *r)
{
  if (r->pidx >= 0 && (size_t)r->pidx < f->npending && f->pending[r->pidx] == r)
    f->pending[r->pidx] = NULL;
  r->pidx = -1;
}

void eng_pending_fail_all(eng_flight_t *f, rondo_status_t st, const char *why)
{
  for (size_t i = 0; i < f->npending; i++)
    if (f->pending[i] != NULL)
      eng_complete(f, f->pending[i], st, why);
  f->npending = 0;
}

void eng_take_queue(eng_flight_t *f)
{
  pthread_mutex_lock(&f->sync->lock);
  struct rondo_request *r = f->queue_head;
  f->queue_head = f->queue_tail = NULL;
  pthread_mutex_unlock(&f->sync->lock);
  double now = rondo__now();
  for (; r != NULL; r = r->qnext) {
    r->t_taken = now;
    if (f->npending == f->cap_pending) {
      size_t n = f->cap_pending ? 2 * f->cap_pending : 64;
      struct rondo_request **p = realloc(f->pending, n * sizeof *p);
      if (p == NULL) {
        eng_complete(f, r, RONDO_ERR_NO_MEMORY, "engine: no memory for the pending list");
        continue;
      }
      f->pending = p;
      f->cap_pending = n;
    }
    /* Room to run it, with every other pending request, in one cycle: the
     * fast path then never allocates (buffers.c). Short of it, it fails
     * here, before any rank hears of it. */
    if (eng_buffers_reserve(f->buf, f->npending + 1) != RONDO_SUCCESS) {
      eng_complete(f, r, RONDO_ERR_NO_MEMORY, "engine: no memory to run the request");
      continue;
    }
    r->pidx = (long)f->npending;
    f->pending[f->npending++] = r;
  }
}
