/*
 * The requests in flight on one rank (inflight.h).
 */
#include "engine/inflight.h"

#include "engine/engine.h"

#include <stdlib.h>
#include <string.h>

/* ---- the in-flight table (under e->lock) ------------------------------------------ */

struct rondo_request **eng_table_slot(struct engine *e, const char *name)
{
  struct rondo_request **p = &e->table[rondo__hash_str(name) % e->table_size];
  while (*p != NULL && strcmp((*p)->name, name) != 0)
    p = &(*p)->hnext;
  return p;
}

rondo_status_t eng_table_grow(struct engine *e)
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
  struct rondo_request **p = eng_table_slot(e, req->name);
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
    req->completed = 1;
    req->status = st;
    req->message = message != NULL ? strdup(message) : NULL;
    callbacks |= req->callback != NULL && !req->stand_in;
  }
  pthread_mutex_lock(&e->lock);
  for (size_t i = 0; i < n; i++)
    if (!reqs[i]->stand_in)
      table_remove(e, reqs[i]); /* the name may be submitted again from now on */
  pthread_mutex_unlock(&e->lock);
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
    struct rondo_request *r = *eng_table_slot(e, c->resp[i].name);
    int held = r != NULL && c->resp[i].type == RESP_ERROR && r->pidx >= 0;
    found[i] = r != NULL && (r->announced || held) ? r : NULL;
  }
  pthread_mutex_unlock(&e->lock);
}

void eng_prune_pending(struct engine *e)
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

/* ---- the pending list (cycles only) ------------------------------------------------ */

void eng_pending_drop(struct engine *e, struct rondo_request *r)
{
  if (r->pidx >= 0 && (size_t)r->pidx < e->npending && e->pending[r->pidx] == r)
    e->pending[r->pidx] = NULL;
  r->pidx = -1;
}

void eng_pending_fail_all(struct engine *e, rondo_status_t st, const char *why)
{
  for (size_t i = 0; i < e->npending; i++)
    if (e->pending[i] != NULL)
      eng_complete(e, e->pending[i], st, why);
  e->npending = 0;
}

void eng_take_queue(struct engine *e)
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
    /* Room to run it, with every other pending request, in one cycle: the
     * fast path then never allocates (buffers.c). Short of it, it fails
     * here, before any rank hears of it. */
    if (eng_buffers_reserve(&e->buf, e->npending + 1) != RONDO_SUCCESS) {
      eng_complete(e, r, RONDO_ERR_NO_MEMORY, "engine: no memory to run the request");
      continue;
    }
    r->pidx = (long)e->npending;
    e->pending[e->npending++] = r;
  }
}
