/* The stall inspector (stall.h). */
#include "engine/stall.h"

#include <math.h>

int eng_stall_force_slow_path(eng_stall_t *s, eng_stall_limits_t lim, double now, int pending,
                              double oldest_age, double held_age)
{
  double limit = INFINITY;
  if (lim.warn > 0)
    limit = lim.warn;
  if (lim.abort > 0 && lim.abort < limit)
    limit = lim.abort;
  int force = 0;
  /* a stall check, at most once a second */
  if (pending && oldest_age >= limit && now - s->last_full >= (limit < 1.0 ? limit : 1.0)) {
    s->last_full = now;
    force = 1;
  }
  /* a group held back here for a while: rank 0 sees it, and fails it at
   * once if another rank's group differs (a model with one more layer) */
  if (held_age >= ENG_STALL_HOLD_CHECK_S && now - s->last_hold_check >= ENG_STALL_HOLD_CHECK_S) {
    s->last_hold_check = now;
    force = 1;
  }
  return force;
}

int eng_stall_warn_due(eng_stall_t *s, eng_stall_limits_t lim, double now, double age)
{
  if (lim.warn <= 0 || age < lim.warn || now - s->last_warn < lim.warn)
    return 0;
  s->last_warn = now;
  return 1;
}

int eng_stall_abort_due(eng_stall_limits_t lim, double age)
{
  return lim.abort > 0 && age >= lim.abort;
}
