/* The log filter: RONDO_LOG_SUBSYS's grammar, the subsystem of a file, and
 * the LOG_* macros, which evaluate no argument of a call the level or the
 * subsystem turns off, and name the subsystem while one is picked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

static unsigned bit(int s) { return 1u << s; }

static void test_subsys_parse(void **state)
{
  (void)state;
  unsigned m = 0;
  char why[256];
  unsigned other = bit(RONDO__SUBSYS_OTHER);
  assert_int_equal(rondo__log_subsys_parse("all", &m, why, sizeof why), 0);
  assert_int_equal(m, RONDO__SUBSYS_ALL);
  assert_int_equal(rondo__log_subsys_parse("engine,ALGO", &m, why, sizeof why), 0);
  assert_int_equal(m, bit(RONDO__SUBSYS_ENGINE) | bit(RONDO__SUBSYS_ALGO) | other);
  assert_int_equal(rondo__log_subsys_parse("^launch,interpose", &m, why, sizeof why), 0);
  assert_int_equal(m, RONDO__SUBSYS_ALL & ~bit(RONDO__SUBSYS_LAUNCH) & ~bit(RONDO__SUBSYS_INTERPOSE));
  const char *bad[] = {"", "engines", "engine,", "^", ",algo", "engine algo"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    m = 7;
    if (rondo__log_subsys_parse(bad[i], &m, why, sizeof why) != -1 || m != 7 ||
        strstr(why, "engine") == NULL)
      fail_msg("'%s' was not refused with the list of names (why: %s)", bad[i], why);
  }
}

static void test_knob(void **state)
{
  (void)state;
  rondo__knobs_t k;
  assert_int_equal(rondo__knob_parse("RONDO_LOG_SUBSYS", NULL, &k), RONDO_SUCCESS);
  assert_int_equal(k.log_subsys, RONDO__SUBSYS_ALL);
  assert_int_equal(rondo__knob_parse("RONDO_LOG_SUBSYS", "comm", &k), RONDO_SUCCESS);
  assert_int_equal(k.log_subsys, bit(RONDO__SUBSYS_COMM) | bit(RONDO__SUBSYS_OTHER));
  assert_int_equal(rondo__knob_parse("RONDO_LOG_SUBSYS", "bogus", &k), RONDO_ERR_INVALID_KNOB);
  assert_non_null(strstr(rondo_last_error(), "RONDO_LOG_SUBSYS='bogus'"));
}

static void test_subsys_of(void **state)
{
  (void)state;
  assert_int_equal(rondo__log_subsys_of("../lib/engine/cache.c"), RONDO__SUBSYS_ENGINE);
  assert_int_equal(rondo__log_subsys_of("/src/rondo/lib/base/log.c"), RONDO__SUBSYS_BASE);
  assert_int_equal(rondo__log_subsys_of("lib/algo/shm.h"), RONDO__SUBSYS_ALGO);
  assert_int_equal(rondo__log_subsys_of("interpose/calls.c"), RONDO__SUBSYS_INTERPOSE);
  assert_int_equal(rondo__log_subsys_of("../tests/unit/test_log.c"), RONDO__SUBSYS_OTHER);
  assert_int_equal(rondo__log_subsys_of("lib/rondo.h"), RONDO__SUBSYS_OTHER);
  assert_int_equal(rondo__log_subsys_of("build.c"), RONDO__SUBSYS_OTHER);
  assert_string_equal(rondo__log_subsys_name(RONDO__SUBSYS_TOPO), "topo");
  assert_null(rondo__log_subsys_name(RONDO__SUBSYS_OTHER));
}

/* ---- the macros, with stderr captured ------------------------------------------ */

static int evaluated;
static int count(void) { return ++evaluated; }

static char captured[4096];

/* Runs fn with stderr going to a file; its text in captured. */
static void capture(void (*fn)(void))
{
  fflush(stderr);
  int saved = dup(2);
  FILE *f = tmpfile();
  assert_non_null(f);
  dup2(fileno(f), 2);
  fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(f);
  size_t n = fread(captured, 1, sizeof captured - 1, f);
  captured[n] = '\0';
  fclose(f);
}

/* Call sites whose file is in lib/engine and lib/algo, as __FILE__ says. */
#line 1 "../lib/engine/log_site.c"
static void engine_info(void) { LOG_INFO("engine says %d", count()); }
static void engine_warn(void) { LOG_WARN("engine warns %d", count()); }
static void engine_debug(void) { LOG_DEBUG("engine debugs %d", count()); }
#line 1 "../lib/algo/log_site.c"
static void algo_info(void) { LOG_INFO("algo says %d", count()); }
#line 100 "tests/unit/test_log.c"

static void test_macros(void **state)
{
  (void)state;
  rondo__log_set_rank(3);
  rondo__log_level = RONDO_LOG_INFO;
  rondo__log_set_subsys(RONDO__SUBSYS_ALL);
  evaluated = 0;
  capture(engine_info);
  assert_int_equal(evaluated, 1);
  assert_string_equal(captured, "[rondo 3] INFO engine says 1\n"); /* unfiltered: no name */

  /* the level first: debug is off, its argument never evaluated */
  capture(engine_debug);
  assert_int_equal(evaluated, 1);
  assert_string_equal(captured, "");

  /* only algo: engine's info is off, unevaluated; algo's names its subsystem */
  rondo__log_set_subsys(bit(RONDO__SUBSYS_ALGO));
  capture(engine_info);
  assert_int_equal(evaluated, 1);
  assert_string_equal(captured, "");
  capture(algo_info);
  assert_int_equal(evaluated, 2);
  assert_string_equal(captured, "[rondo 3] INFO algo: algo says 2\n");
  /* a warning is shown whatever the subsystems */
  capture(engine_warn);
  assert_int_equal(evaluated, 3);
  assert_string_equal(captured, "[rondo 3] WARN engine: engine warns 3\n");
  /* but not below its level */
  rondo__log_level = RONDO_LOG_ERROR;
  capture(engine_warn);
  assert_int_equal(evaluated, 3);
  assert_string_equal(captured, "");

  rondo__log_level = RONDO_LOG_WARN;
  rondo__log_set_subsys(RONDO__SUBSYS_ALL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_subsys_parse),
      cmocka_unit_test(test_knob),
      cmocka_unit_test(test_subsys_of),
      cmocka_unit_test(test_macros),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
