/*
 * Request handles and their completion (request.h).
 *
 * A rondo_request_t is not a pointer to the request but a handle: a slot of
 * one process-wide table and the slot's generation, packed into the
 * pointer-sized public type. rondo_wait() frees the slot and bumps its
 * generation, so a stale copy of a handle (waited for already, or never a
 * request) is recognized and refused with RONDO_ERR_INVALID_ARG instead of
 * reading freed memory, even after the slot holds another request.
 *
 * Completion has two steps, both under the table's lock, with the
 * request's callback in between:
 *   done      the status and result are final: rondo_test() says done and
 *             rondo_request_result() hands the result over, also from
 *             inside the callback;
 *   released  the engine will not touch the request again: rondo_wait()
 *             may free it.
 * rondo_wait() (caller.c) sleeps on the table's condition variable, never on
 * the engine's, so it does not depend on the comm still existing.
 *
 * A completion queue (rondo_queue_t) gets a request's handle when it is
 * released. Each request attached to a queue reserves its place at
 * submission, so putting it there (under the table's lock, then the
 * queue's) never needs memory.
 */
#include "engine/request.h"

#include <pthread.h>

#include <errno.h>
#include <stdlib.h>
#include <time.h>

struct rondo_queue {
  pthread_mutex_t lock;
  pthread_cond_t ready;
  rondo_request_t *items; /* a ring of cap handles */
  size_t head, count, cap;
  size_t attached;        /* requests in flight that will come here */
  int closed;
};

static void queue_put(struct rondo_queue *q, rondo_request_t h);

typedef struct {
  struct rondo_request *req; /* NULL: free */
  uint32_t gen;              /* bumped when the slot is freed */
  uint32_t next_free;        /* free list, 1-based (0: end) */
} slot_t;

static struct {
  pthread_mutex_t lock;
  pthread_cond_t released;   /* a request was released */
  slot_t *slots;
  uint32_t used, cap, free_head;
} tab = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0};

/* Handles are (generation << 32 | slot + 1): never 0, so never NULL. */
static rondo_request_t pack(uint32_t index, uint32_t gen)
{
  return (rondo_request_t)(uintptr_t)((uint64_t)gen << 32 | (uint64_t)(index + 1));
}

/* The live request behind h, or NULL. Under tab.lock. */
static struct rondo_request *lookup(rondo_request_t h)
{
  uint64_t v = (uint64_t)(uintptr_t)h;
  uint32_t index = (uint32_t)(v & 0xffffffffu), gen = (uint32_t)(v >> 32);
  if (index == 0 || index > tab.used || tab.slots[index - 1].req == NULL ||
      tab.slots[index - 1].gen != gen)
    return NULL;
  return tab.slots[index - 1].req;
}

static rondo_status_t stale(const char *fn)
{
  return rondo__fail(RONDO_ERR_INVALID_ARG,
                     "%s: not a live request (rondo_wait() released it already, or the handle "
                     "was never a request)",
                     fn);
}

rondo_status_t eng_request_register(struct rondo_request *r)
{
  _Static_assert(sizeof(uintptr_t) >= 8, "request handles need 64-bit pointers");
  pthread_mutex_lock(&tab.lock);
  uint32_t index;
  if (tab.free_head != 0) {
    index = tab.free_head - 1;
    tab.free_head = tab.slots[index].next_free;
  } else {
    if (tab.used == tab.cap) {
      uint32_t cap = tab.cap ? 2 * tab.cap : 256;
      slot_t *s = cap > tab.cap ? realloc(tab.slots, cap * sizeof *s) : NULL;
      if (s == NULL) {
        pthread_mutex_unlock(&tab.lock);
        return rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': no memory for the request table", r->name);
      }
      tab.slots = s;
      tab.cap = cap;
    }
    index = tab.used++;
    tab.slots[index].gen = 1;
  }
  tab.slots[index].req = r;
  tab.slots[index].next_free = 0;
  r->handle = pack(index, tab.slots[index].gen);
  pthread_mutex_unlock(&tab.lock);
  return RONDO_SUCCESS;
}

/* Frees r's slot. Under tab.lock. */
static void unregister(struct rondo_request *r)
{
  uint32_t index = (uint32_t)((uint64_t)(uintptr_t)r->handle & 0xffffffffu) - 1;
  tab.slots[index].req = NULL;
  tab.slots[index].gen++;
  tab.slots[index].next_free = tab.free_head;
  tab.free_head = index + 1;
}

void eng_request_forget(struct rondo_request *r)
{
  pthread_mutex_lock(&tab.lock);
  unregister(r);
  pthread_mutex_unlock(&tab.lock);
}

void eng_request_mark_done(struct rondo_request **reqs, size_t n)
{
  pthread_mutex_lock(&tab.lock);
  for (size_t i = 0; i < n; i++)
    if (reqs[i] != NULL && !reqs[i]->stand_in)
      reqs[i]->done = 1;
  pthread_mutex_unlock(&tab.lock);
}

void eng_request_release(struct rondo_request **reqs, size_t n)
{
  pthread_mutex_lock(&tab.lock);
  for (size_t i = 0; i < n; i++)
    if (reqs[i] != NULL && !reqs[i]->stand_in) {
      reqs[i]->released = 1;
      if (reqs[i]->queue != NULL)
        queue_put(reqs[i]->queue, reqs[i]->handle);
    }
  pthread_cond_broadcast(&tab.released);
  pthread_mutex_unlock(&tab.lock);
}

/* ---- for caller.c --------------------------------------------------------------- */

void eng_handles_lock(void) { pthread_mutex_lock(&tab.lock); }
void eng_handles_unlock(void) { pthread_mutex_unlock(&tab.lock); }
struct rondo_request *eng_handle_lookup(rondo_request_t h) { return lookup(h); }
void eng_handles_wait_released(void) { pthread_cond_wait(&tab.released, &tab.lock); }
void eng_handle_unregister(struct rondo_request *r) { unregister(r); }
rondo_status_t eng_handle_stale(const char *fn) { return stale(fn); }

void eng_request_free(struct rondo_request *r)
{
  free(r->result);
  free(r->message);
  free(r->group);
  free(r->name);
  free(r->tag);
  free(r->reason);
  free(r->sendcounts);
  free(r);
}

/* ---- completion queues ------------------------------------------------------------ */

rondo_status_t eng_queue_create(struct rondo_queue **out)
{
  struct rondo_queue *q = calloc(1, sizeof *q);
  if (q == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "rondo_queue_create: no memory");
  int rc = pthread_mutex_init(&q->lock, NULL);
  if (rc == 0 && (rc = pthread_cond_init(&q->ready, NULL)) != 0)
    pthread_mutex_destroy(&q->lock);
  if (rc != 0) {
    free(q);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "rondo_queue_create: pthread error %d", rc);
  }
  *out = q;
  return RONDO_SUCCESS;
}

/* Room for every attached request and every queued one. */
rondo_status_t eng_queue_attach(struct rondo_queue *q)
{
  pthread_mutex_lock(&q->lock);
  rondo_status_t st = RONDO_SUCCESS;
  if (q->attached + q->count == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 64;
    rondo_request_t *items = malloc(cap * sizeof *items);
    if (items == NULL) {
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "no memory for the completion queue");
    } else {
      for (size_t i = 0; i < q->count; i++)
        items[i] = q->items[(q->head + i) % q->cap];
      free(q->items);
      q->items = items;
      q->head = 0;
      q->cap = cap;
    }
  }
  if (st == RONDO_SUCCESS)
    q->attached++;
  pthread_mutex_unlock(&q->lock);
  return st;
}

rondo_status_t eng_queue_add(struct rondo_queue *q, rondo_request_t h)
{
  pthread_mutex_lock(&tab.lock);
  struct rondo_request *r = lookup(h);
  rondo_status_t st = RONDO_SUCCESS;
  if (r == NULL)
    st = stale("rondo_queue_add");
  else if (r->queue != NULL)
    st = rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_queue_add: '%s' is on a queue already", r->name);
  else if (r->waiting)
    st = rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_queue_add: a thread is waiting for '%s'",
                     r->name);
  else if ((st = eng_queue_attach(q)) == RONDO_SUCCESS) {
    r->queue = q;
    if (r->released)
      queue_put(q, h);
  }
  pthread_mutex_unlock(&tab.lock);
  return st;
}

void eng_queue_detach(struct rondo_queue *q)
{
  pthread_mutex_lock(&q->lock);
  q->attached--;
  pthread_mutex_unlock(&q->lock);
}

/* Under tab.lock; the place was reserved by eng_queue_attach. */
static void queue_put(struct rondo_queue *q, rondo_request_t h)
{
  pthread_mutex_lock(&q->lock);
  q->attached--;
  q->items[(q->head + q->count) % q->cap] = h;
  q->count++;
  pthread_cond_signal(&q->ready);
  pthread_mutex_unlock(&q->lock);
}

rondo_status_t eng_queue_wait(struct rondo_queue *q, double timeout, rondo_request_t *req)
{
  struct timespec until;
  if (timeout >= 0) {
    clock_gettime(CLOCK_REALTIME, &until);
    double s = timeout > 1e6 ? 1e6 : timeout;
    until.tv_sec += (time_t)s;
    until.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
  }
  pthread_mutex_lock(&q->lock);
  int timed_out = 0;
  while (q->count == 0 && !q->closed && !timed_out) {
    if (timeout < 0)
      pthread_cond_wait(&q->ready, &q->lock);
    else
      timed_out = pthread_cond_timedwait(&q->ready, &q->lock, &until) == ETIMEDOUT;
  }
  rondo_status_t st = RONDO_SUCCESS;
  if (q->count > 0) {
    *req = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
  } else if (q->closed) {
    st = rondo__fail_quiet(RONDO_ERR_SHUT_DOWN, "rondo_queue_wait: the queue was closed");
  }
  pthread_mutex_unlock(&q->lock);
  return st;
}

void eng_queue_close(struct rondo_queue *q)
{
  pthread_mutex_lock(&q->lock);
  q->closed = 1;
  pthread_cond_broadcast(&q->ready);
  pthread_mutex_unlock(&q->lock);
}

rondo_status_t eng_queue_destroy(struct rondo_queue *q)
{
  pthread_mutex_lock(&q->lock);
  size_t busy = q->attached + q->count;
  pthread_mutex_unlock(&q->lock);
  if (busy > 0)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_queue_destroy: %zu request(s) still in flight or queued; wait for "
                       "them first",
                       busy);
  pthread_cond_destroy(&q->ready);
  pthread_mutex_destroy(&q->lock);
  free(q->items);
  free(q);
  return RONDO_SUCCESS;
}
