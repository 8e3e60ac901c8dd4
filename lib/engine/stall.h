/*
 * The stall inspector: requests that wait too long for other ranks are
 * reported (RONDO_STALL_WARN_SEC, by rank 0) and failed
 * (RONDO_STALL_ABORT_SEC or the comm's timeout, on every rank). A small
 * object, as Horovod's is: handed the time, the ages and the two limits, it
 * says whether a look, a warning or a failure is due, and remembers when it
 * last said so. It knows nothing of the engine; negotiate.c and
 * handshake.c act on its answers. tests/unit/test_stall.c checks it.
 */
#ifndef RONDO_ENGINE_STALL_H
#define RONDO_ENGINE_STALL_H

#include "base/comm.h"

typedef struct {
  double warn;             /* RONDO_STALL_WARN_SEC: report after this long (0: never) */
  double abort;            /* the comm's request timeout: fail after this long (0: never) */
} eng_stall_limits_t;

typedef struct {
  double last_full;        /* the last slow path forced for a stall check */
  double last_hold_check;  /* ... for an incomplete group */
  double last_warn;        /* the last warning */
} eng_stall_t;

/* How long a rank holds back the requests of an incomplete group before
 * it shows them to rank 0 (and again at this interval): groups come in
 * bursts, so a group still incomplete after this long is likely one that
 * differs across ranks. */
#define ENG_STALL_HOLD_CHECK_S 0.2

/* The comm's limits now (rondo_comm_set_timeout may change the second). */
static inline eng_stall_limits_t eng_stall_limits(const struct rondo_comm *c)
{
  return (eng_stall_limits_t){c->cfg.stall_warn_sec, comm_request_timeout(c)};
}

/* Whether this rank should force a slow path now, so that rank 0 sees a
 * possible stall (pending: it has requests; oldest_age: the oldest one's,
 * past the first limit; at most once a second) or a group it holds back
 * (held_age: the oldest held request's; every ENG_STALL_HOLD_CHECK_S). */
int eng_stall_force_slow_path(eng_stall_t *s, eng_stall_limits_t lim, double now, int pending,
                              double oldest_age, double held_age);
/* Whether a warning about requests that waited age seconds is due now: age
 * past lim.warn, and no warning within the last lim.warn seconds; records
 * it when it is. */
int eng_stall_warn_due(eng_stall_t *s, eng_stall_limits_t lim, double now, double age);
/* Whether a request that waited age seconds must fail. */
int eng_stall_abort_due(eng_stall_limits_t lim, double age);

#endif /* RONDO_ENGINE_STALL_H */
