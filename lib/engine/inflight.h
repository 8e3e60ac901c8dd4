/*
 * The requests in flight on one rank, one object that this file alone
 * changes: the table of names (under the engine's lock; the same name may
 * not be in flight twice), the submission queue (under the lock), the
 * pending list the cycles work on (cycles only), and completion, which
 * takes a request out of the table and the list.
 */
#ifndef RONDO_ENGINE_INFLIGHT_H
#define RONDO_ENGINE_INFLIGHT_H

#include <stddef.h>

#include "base/base.h"
#include "engine/buffers.h"
#include "engine/nap.h"
#include "engine/responses.h"

struct rondo_request;

typedef struct {
  eng_sync_t *sync;           /* its lock guards the table and the queue */
  eng_buffers_t *buf;         /* room to run every pending request (take) */
  /* under sync->lock: */
  struct rondo_request **table; /* in-flight names: hash chains */
  size_t table_size, in_flight;
  struct rondo_request *queue_head, *queue_tail; /* submitted, not yet taken */
  /* cycles only (the holder of run): */
  struct rondo_request **pending; /* taken, not complete, in submission order */
  size_t npending, cap_pending;
} eng_flight_t;

/* With the engine: the table exists from the start (a rank that joins
 * before it ever submitted still looks names up in it). */
rondo_status_t eng_flight_init(eng_flight_t *f, eng_sync_t *sync, eng_buffers_t *buf);
void eng_flight_free(eng_flight_t *f);

/* Under sync->lock: whether name is in flight. */
int eng_flight_has_locked(eng_flight_t *f, const char *name);
/* Under sync->lock: room for one more name (the table grows when half
 * full); RONDO_ERR_NO_MEMORY without it. */
rondo_status_t eng_flight_room_locked(eng_flight_t *f);
/* Under sync->lock: req (its name not in flight, checked) goes into the
 * table and at the end of the queue. */
void eng_flight_add_locked(eng_flight_t *f, struct rondo_request *req);
/* Under sync->lock: how many names are in flight; whether the queue has a
 * submission; whether it has more than one (*newest: the last one's
 * submission time). */
static inline size_t eng_in_flight_locked(const eng_flight_t *f) { return f->in_flight; }
static inline int eng_queue_waiting_locked(const eng_flight_t *f) { return f->queue_head != NULL; }
int eng_queue_burst_locked(const eng_flight_t *f, double *newest);
/* Requests never taken (the thread never ran): every one completes with st
 * and why. */
void eng_queue_fail_all(eng_flight_t *f, rondo_status_t st, const char *why);

/* Cycles only: the pending list, read (entries may be NULL: completed). */
static inline size_t eng_pending_count(const eng_flight_t *f) { return f->npending; }
static inline struct rondo_request *eng_pending_at(const eng_flight_t *f, size_t i)
{
  return f->pending[i];
}

/* Takes new submissions into the pending list, in submission order. */
void eng_take_queue(eng_flight_t *f);
/* Closes the gaps completions left in the pending list. */
void eng_prune_pending(eng_flight_t *f);
/* r ran and stays in flight until its GPU work is done (fusion_device.c):
 * no longer pending for the negotiation. */
void eng_pending_drop(eng_flight_t *f, struct rondo_request *r);
/* The thread stops: every pending request completes with st and why. */
void eng_pending_fail_all(eng_flight_t *f, rondo_status_t st, const char *why);
/* found[i] = this rank's pending request named by response i of c, or NULL. */
void eng_find_pending(eng_flight_t *f, const eng_cycle_t *c, struct rondo_request **found);

/* Marks n requests complete: status, message (copied; NULL for none); one
 * lock round and one wake-up; runs the callbacks; frees stand-ins and
 * detached refusals. */
void eng_complete_many(eng_flight_t *f, struct rondo_request **reqs, size_t n,
                       rondo_status_t st, const char *message);
void eng_complete(eng_flight_t *f, struct rondo_request *req, rondo_status_t st,
                  const char *message);

#endif /* RONDO_ENGINE_INFLIGHT_H */
