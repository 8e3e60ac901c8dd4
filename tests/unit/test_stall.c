/* The engine's stall inspector (lib/engine/stall.c): when a rank forces a
 * slow path so that rank 0 can see a stall or a held group, when a warning
 * is due and when a request must fail, for given times, ages and limits.
 * No MPI and no clock: the test hands it the time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "engine/stall.h"

static eng_stall_t fresh(void)
{
  eng_stall_t s;
  memset(&s, 0, sizeof s);
  return s;
}

static void young_requests_force_nothing(void **state)
{
  (void)state;
  eng_stall_t s = fresh();
  eng_stall_limits_t lim = {60, 0};
  assert_false(eng_stall_force_slow_path(&s, lim, 100, 1, 59.9, 0));
  assert_false(eng_stall_force_slow_path(&s, lim, 100, 0, 1000, 0)); /* nothing pending */
  /* no limits at all: never */
  assert_false(eng_stall_force_slow_path(&s, (eng_stall_limits_t){0, 0}, 100, 1, 1e9, 0));
}

static void an_old_request_forces_a_look_once_a_second(void **state)
{
  (void)state;
  eng_stall_t s = fresh();
  eng_stall_limits_t lim = {60, 0};
  assert_true(eng_stall_force_slow_path(&s, lim, 100, 1, 60, 0));
  assert_false(eng_stall_force_slow_path(&s, lim, 100.5, 1, 60.5, 0));
  assert_true(eng_stall_force_slow_path(&s, lim, 101, 1, 61, 0));
  /* the smaller limit counts, and below a second looks come that often */
  s = fresh();
  lim = (eng_stall_limits_t){60, 0.25};
  assert_true(eng_stall_force_slow_path(&s, lim, 10, 1, 0.25, 0));
  assert_false(eng_stall_force_slow_path(&s, lim, 10.2, 1, 0.45, 0));
  assert_true(eng_stall_force_slow_path(&s, lim, 10.25, 1, 0.5, 0));
  s = fresh();
  lim = (eng_stall_limits_t){0, 5}; /* no warning, a timeout */
  assert_false(eng_stall_force_slow_path(&s, lim, 10, 1, 4.9, 0));
  assert_true(eng_stall_force_slow_path(&s, lim, 10, 1, 5, 0));
}

static void a_held_group_is_shown_every_hold_interval(void **state)
{
  (void)state;
  eng_stall_t s = fresh();
  eng_stall_limits_t lim = {60, 0};
  double h = ENG_STALL_HOLD_CHECK_S;
  assert_false(eng_stall_force_slow_path(&s, lim, 50, 0, 0, h * 0.9));
  assert_true(eng_stall_force_slow_path(&s, lim, 50, 0, 0, h));
  assert_false(eng_stall_force_slow_path(&s, lim, 50 + h * 0.5, 0, 0, h * 1.5));
  assert_true(eng_stall_force_slow_path(&s, lim, 50 + h, 0, 0, h * 2));
  /* the two clocks are apart: a held group's look does not delay a stall's */
  assert_true(eng_stall_force_slow_path(&s, lim, 50 + h, 1, 60, 0));
}

static void warnings_come_at_most_once_per_warning_time(void **state)
{
  (void)state;
  eng_stall_t s = fresh();
  eng_stall_limits_t lim = {60, 0};
  assert_false(eng_stall_warn_due(&s, lim, 100, 59));
  assert_true(eng_stall_warn_due(&s, lim, 100, 60));
  assert_false(eng_stall_warn_due(&s, lim, 159, 119));
  assert_true(eng_stall_warn_due(&s, lim, 160, 120));
  /* warnings off */
  s = fresh();
  assert_false(eng_stall_warn_due(&s, (eng_stall_limits_t){0, 10}, 100, 1e9));
}

static void requests_fail_past_the_timeout_only(void **state)
{
  (void)state;
  assert_false(eng_stall_abort_due((eng_stall_limits_t){60, 0}, 1e9)); /* no timeout */
  assert_false(eng_stall_abort_due((eng_stall_limits_t){60, 30}, 29.99));
  assert_true(eng_stall_abort_due((eng_stall_limits_t){60, 30}, 30));
  assert_true(eng_stall_abort_due((eng_stall_limits_t){0, 0.5}, 0.5));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(young_requests_force_nothing),
      cmocka_unit_test(an_old_request_forces_a_look_once_a_second),
      cmocka_unit_test(a_held_group_is_shown_every_hold_interval),
      cmocka_unit_test(warnings_come_at_most_once_per_warning_time),
      cmocka_unit_test(requests_fail_past_the_timeout_only),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
