/*
 * The stall inspector: requests that wait too long for other ranks are
 * reported (RONDO_STALL_WARN_SEC, by rank 0) and failed
 * (RONDO_STALL_ABORT_SEC or the comm's timeout, on every rank).
 */
#ifndef RONDO_ENGINE_STALL_H
#define RONDO_ENGINE_STALL_H

#include "engine/coordinator.h"

struct engine;

typedef struct {
  double last_full;        /* the last slow path forced for a stall check */
  double last_hold_check;  /* ... for an incomplete group */
  double last_warn;        /* the last warning */
} eng_stall_t;

/* Whether this rank should force a slow path, so that rank 0 sees a
 * possible stall (pending: it has requests; oldest_age: the oldest one's)
 * or a group it holds back (held_age: the oldest held request's). */
int eng_stall_force_slow_path(struct engine *e, int pending, double oldest_age, double held_age);
/* Rank 0: the coordinator's stalled names, warned about at most every
 * RONDO_STALL_WARN_SEC. */
void eng_stall_report(struct engine *e, const eng_stalls_t *stalls);
/* During the rendezvous on the engine thread: requests age while some ranks
 * have not started their engine (arrived: rank 0's list, or NULL). Past the
 * warning time rank 0 names them; past the timeout the requests fail. */
void eng_stall_rendezvous(struct engine *e, const char *arrived);

#endif /* RONDO_ENGINE_STALL_H */
