/*
 * The requests in flight on one rank: the table of names (under e->lock;
 * the same name may not be in flight twice), the pending list the cycles
 * work on (cycles only), and completion, which takes a request out of both.
 */
#ifndef RONDO_ENGINE_INFLIGHT_H
#define RONDO_ENGINE_INFLIGHT_H

#include <stddef.h>

#include "base/base.h"
#include "engine/responses.h"

struct engine;
struct rondo_request;

/* Under e->lock: the table's slot for name (*slot is NULL if it is not in
 * flight), growing the table, adding a request. */
struct rondo_request **eng_table_slot(struct engine *e, const char *name);
rondo_status_t eng_table_grow(struct engine *e);

/* Takes new submissions into the pending list, in submission order. */
void eng_take_queue(struct engine *e);
/* Closes the gaps completions left in the pending list. */
void eng_prune_pending(struct engine *e);
/* r ran and stays in flight until its GPU work is done (fusion_device.c):
 * no longer pending for the negotiation. */
void eng_pending_drop(struct engine *e, struct rondo_request *r);
/* The thread stops: every pending request completes with st and why. */
void eng_pending_fail_all(struct engine *e, rondo_status_t st, const char *why);
/* found[i] = this rank's pending request named by response i of c, or NULL. */
void eng_find_pending(struct engine *e, const eng_cycle_t *c, struct rondo_request **found);

/* Marks n requests complete: status, message (copied; NULL for none); one
 * lock round and one wake-up; runs the callbacks; frees stand-ins and
 * detached refusals. */
void eng_complete_many(struct engine *e, struct rondo_request **reqs, size_t n,
                       rondo_status_t st, const char *message);
void eng_complete(struct engine *e, struct rondo_request *req, rondo_status_t st,
                  const char *message);

#endif /* RONDO_ENGINE_INFLIGHT_H */
