/*
 * The stall inspector (stall.h).
 */
#include "engine/stall.h"

#include "comm/comm.h"
#include "engine/engine.h"
#include "engine/inflight.h"

#include <math.h>
#include <stdio.h>

/* How long a rank holds back the requests of an incomplete group before
 * it shows them to rank 0 (and again at this interval): groups come in
 * bursts, so a group still incomplete after this long is likely one that
 * differs across ranks. */
#define HOLD_CHECK_S 0.2

int eng_stall_force_slow_path(struct engine *e, int pending, double oldest_age, double held_age)
{
  double warn = e->owner->cfg.stall_warn_sec, abort_after = comm_request_timeout(e->owner);
  double limit = INFINITY;
  if (warn > 0)
    limit = warn;
  if (abort_after > 0 && abort_after < limit)
    limit = abort_after;
  double now = rondo__now();
  int force = 0;
  /* a stall check, at most once a second */
  if (pending && oldest_age >= limit && now - e->stall.last_full >= (limit < 1.0 ? limit : 1.0)) {
    e->stall.last_full = now;
    force = 1;
  }
  /* a group held back here for a while: rank 0 sees it, and fails it at
   * once if another rank's group differs (a model with one more layer) */
  if (held_age >= HOLD_CHECK_S && now - e->stall.last_hold_check >= HOLD_CHECK_S) {
    e->stall.last_hold_check = now;
    force = 1;
  }
  return force;
}

void eng_stall_report(struct engine *e, const eng_stalls_t *stalls)
{
  double warn = e->owner->cfg.stall_warn_sec, now = rondo__now();
  if (stalls->stalled == 0 || now - e->stall.last_warn < warn)
    return;
  e->stall.last_warn = now;
  LOG_WARN("stall: %d request(s) waited more than %.0f s for other ranks: %s%s. "
           "Every rank must submit the same names; set RONDO_STALL_ABORT_SEC to fail "
           "them instead of waiting",
           stalls->stalled, warn, stalls->line, stalls->stalled > 5 ? ", ..." : "");
}

/* Waiting for the rendezvous on the engine thread: requests keep arriving and
 * age. Past RONDO_STALL_WARN_SEC rank 0 names the ranks it has not heard
 * from; past RONDO_STALL_ABORT_SEC every rank fails its waiting requests
 * with RONDO_ERR_STALLED. The rendezvous itself goes on: the missing ranks
 * join it when they first use the engine or destroy the comm. */
void eng_stall_rendezvous(struct engine *e, const char *arrived)
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
  } else if (warn > 0 && oldest >= warn && e->rank == 0 && now - e->stall.last_warn >= warn) {
    e->stall.last_warn = now;
    LOG_WARN("stall: request(s) waited %.0f s: %s did not start this comm's engine (they "
             "submitted no request and did not join). Every rank must submit the same names; "
             "set RONDO_STALL_ABORT_SEC to fail them instead of waiting",
             oldest, missing);
  }
}

