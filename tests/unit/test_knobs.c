/* The knob table: good values parse to the right field, malformed ones are
 * errors that name the knob and the value, never a silent default. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static rondo__knobs_t k;

static void expect_size(const char *name, const char *text, size_t want)
{
  assert_int_equal(rondo__knob_parse(name, text, &k), RONDO_SUCCESS);
  size_t got = strcmp(name, "RONDO_RING_CHUNK_BYTES") == 0 ? k.ring_chunk
                                                           : k.shm_chunk;
  if (got != want)
    fail_msg("%s=%s parsed to %zu, want %zu", name, text, got, want);
}

static void expect_bad(const char *name, const char *text)
{
  rondo__knobs_t before = k;
  assert_int_equal(rondo__knob_parse(name, text, &k), RONDO_ERR_INVALID_KNOB);
  const char *msg = rondo_last_error();
  if (strstr(msg, name) == NULL || strstr(msg, text) == NULL)
    fail_msg("message '%s' does not name %s and '%s'", msg, name, text);
  assert_memory_equal(&before, &k, sizeof k);
}

static void test_size_values_with_suffixes(void **state)
{
  (void)state;
  expect_size("RONDO_RING_CHUNK_BYTES", "4096", 4096);
  expect_size("RONDO_RING_CHUNK_BYTES", "64K", 65536);
  expect_size("RONDO_RING_CHUNK_BYTES", "64k", 65536);
  expect_size("RONDO_RING_CHUNK_BYTES", "16M", 16u << 20);
  expect_size("RONDO_RING_CHUNK_BYTES", "1G", 1u << 30);
  expect_size("RONDO_RING_CHUNK_BYTES", "4KB", 4096);
  expect_size("RONDO_RING_CHUNK_BYTES", "4KiB", 4096);
  expect_size("RONDO_RING_CHUNK_BYTES", " 128 ", 128);
  expect_size("RONDO_SHM_CHUNK_BYTES", "2M", 2u << 20);
}

static void test_malformed_sizes_are_errors(void **state)
{
  (void)state;
  expect_bad("RONDO_RING_CHUNK_BYTES", "");
  expect_bad("RONDO_RING_CHUNK_BYTES", "abc");
  expect_bad("RONDO_RING_CHUNK_BYTES", "-4");
  expect_bad("RONDO_RING_CHUNK_BYTES", "4X");
  expect_bad("RONDO_RING_CHUNK_BYTES", "12 34");
  expect_bad("RONDO_RING_CHUNK_BYTES", "1.5M");
  expect_bad("RONDO_RING_CHUNK_BYTES", "99999999999999999999999");
  expect_bad("RONDO_SHM_CHUNK_BYTES", "16777216T");
  expect_bad("RONDO_SHM_CHUNK_BYTES", "1K"); /* below the 4 KiB minimum */
  /* below the minimum chunk and above the maximum */
  expect_bad("RONDO_RING_CHUNK_BYTES", "8");
  expect_bad("RONDO_RING_CHUNK_BYTES", "2G");
}

static void test_enum_and_bool_values(void **state)
{
  (void)state;
  assert_int_equal(rondo__knob_parse("RONDO_LOG", "debug", &k), RONDO_SUCCESS);
  assert_int_equal(k.log_level, RONDO_LOG_DEBUG);
  assert_int_equal(rondo__knob_parse("RONDO_LOG", "OFF", &k), RONDO_SUCCESS);
  assert_int_equal(k.log_level, RONDO_LOG_OFF);
  /* An algorithm's name is kept, lower-cased (so ranks agree on "RING" and
   * "ring"); the table checks it when a comm is made (tests/unit/test_args.c,
   * tests/mpi/knobs-bad). */
  assert_int_equal(rondo__knob_parse("RONDO_ALLREDUCE_ALGO", "Rabenseifner", &k),
                   RONDO_SUCCESS);
  assert_string_equal(k.allreduce_algo, "rabenseifner");
  assert_int_equal(rondo__knob_parse("RONDO_ALLREDUCE_ALGO", "recursive_doubling", &k),
                   RONDO_SUCCESS);
  assert_string_equal(k.allreduce_algo, "recursive_doubling");
  expect_bad("RONDO_LOG", "verbose");
  expect_bad("RONDO_LOG", "3");
  expect_bad("RONDO_ALLREDUCE_ALGO", "");
  expect_bad("RONDO_ALLREDUCE_ALGO", "a_name_longer_than_thirty_one_bytes");
  /* removed in 0.2: the argument check always runs */
  assert_int_equal(rondo__knob_parse("RONDO_CHECK_ARGS", "0", &k), RONDO_ERR_INVALID_ARG);
}

static void test_int_and_string_values(void **state)
{
  (void)state;
  assert_int_equal(rondo__knob_parse("RONDO_NODE_SIZE", "2", &k), RONDO_SUCCESS);
  assert_int_equal(k.node_size, 2);
  assert_int_equal(rondo__knob_parse("RONDO_NODE_SIZE", "0", &k), RONDO_SUCCESS);
  assert_int_equal(k.node_size, 0);
  expect_bad("RONDO_NODE_SIZE", "-1");
  expect_bad("RONDO_NODE_SIZE", "two");
  expect_bad("RONDO_NODE_SIZE", "2.5");
  expect_bad("RONDO_NODE_SIZE", "");
  assert_int_equal(rondo__knob_parse("RONDO_TUNING_FILE", "/tmp/rondo.tune", &k), RONDO_SUCCESS);
  assert_string_equal(k.tuning_file, "/tmp/rondo.tune");
  char longpath[600];
  memset(longpath, 'x', sizeof longpath - 1);
  longpath[sizeof longpath - 1] = '\0';
  assert_int_equal(rondo__knob_parse("RONDO_TUNING_FILE", longpath, &k), RONDO_ERR_INVALID_KNOB);
}

static void test_unknown_knob_name(void **state)
{
  (void)state;
  assert_int_equal(rondo__knob_parse("RONDO_NO_SUCH_KNOB", "1", &k), RONDO_ERR_INVALID_ARG);
}

static void test_defaults_from_empty_environment(void **state)
{
  (void)state;
  rondo_knob_info_t info;
  for (int i = 0; i < rondo_knob_count(); i++) {
    assert_int_equal(rondo_knob_get(i, &info), RONDO_SUCCESS);
    unsetenv(info.name);
  }
  rondo__knobs_t d;
  assert_int_equal(rondo__knobs_load(&d), RONDO_SUCCESS);
  assert_int_equal(d.log_level, RONDO_LOG_WARN);
  assert_string_equal(d.allreduce_algo, "auto");
  assert_int_equal(d.ring_chunk, 256 * 1024);
  /* Every knob documents itself and its default parses. */
  for (int i = 0; i < rondo_knob_count(); i++) {
    assert_int_equal(rondo_knob_get(i, &info), RONDO_SUCCESS);
    assert_true(strncmp(info.name, "RONDO_", 6) == 0);
    assert_true(strlen(info.doc) > 10);
    assert_int_equal(rondo__knob_parse(info.name, info.default_value, &k), RONDO_SUCCESS);
  }
  assert_int_equal(rondo_knob_get(rondo_knob_count(), &info), RONDO_ERR_INVALID_ARG);
  assert_int_equal(rondo_knob_get(-1, &info), RONDO_ERR_INVALID_ARG);
}

static void test_environment_load_reports_bad_value(void **state)
{
  (void)state;
  rondo__knobs_t d;
  memset(&d, 0x5a, sizeof d);
  rondo__knobs_t before = d;
  setenv("RONDO_RING_CHUNK_BYTES", "lots", 1);
  assert_int_equal(rondo__knobs_load(&d), RONDO_ERR_INVALID_KNOB);
  assert_non_null(strstr(rondo_last_error(), "RONDO_RING_CHUNK_BYTES='lots'"));
  assert_memory_equal(&d, &before, sizeof d);
  setenv("RONDO_RING_CHUNK_BYTES", "1M", 1);
  assert_int_equal(rondo__knobs_load(&d), RONDO_SUCCESS);
  assert_int_equal(d.ring_chunk, 1u << 20);
  rondo_knob_info_t info;
  for (int i = 0; i < rondo_knob_count(); i++) {
    assert_int_equal(rondo_knob_get(i, &info), RONDO_SUCCESS);
    if (strcmp(info.name, "RONDO_RING_CHUNK_BYTES") == 0)
      assert_string_equal(info.current, "1048576");
  }
  unsetenv("RONDO_RING_CHUNK_BYTES");
}

/* The engine's knobs: defaults, the number type, and Horovod's names as
 * fallbacks that count only when rondo's own knob is unset. */
static void test_engine_knobs_and_horovod_fallbacks(void **state)
{
  (void)state;
  static const char *const names[] = {"RONDO_FUSION_THRESHOLD", "RONDO_CYCLE_TIME_MS",
                                      "RONDO_TIMELINE", "HOROVOD_FUSION_THRESHOLD",
                                      "HOROVOD_CYCLE_TIME", "HOROVOD_TIMELINE"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    unsetenv(names[i]);
  rondo__knobs_t d;
  assert_int_equal(rondo__knobs_load(&d), RONDO_SUCCESS);
  assert_int_equal(d.fusion_threshold, (size_t)64 << 20);
  assert_true(d.cycle_time_ms == 1.0);
  assert_int_equal(d.cache_capacity, 1024);
  assert_string_equal(d.timeline, "");
  assert_true(d.stall_warn_sec == 60.0 && d.stall_abort_sec == 0.0);

  setenv("HOROVOD_FUSION_THRESHOLD", "1048576", 1);
  setenv("HOROVOD_CYCLE_TIME", "0.5", 1);
  setenv("HOROVOD_TIMELINE", "/tmp/hvd.json", 1);
  assert_int_equal(rondo__knobs_load(&d), RONDO_SUCCESS);
  assert_int_equal(d.fusion_threshold, 1048576);
  assert_true(d.cycle_time_ms == 0.5);
  assert_string_equal(d.timeline, "/tmp/hvd.json");

  setenv("RONDO_FUSION_THRESHOLD", "0", 1); /* rondo's own name wins */
  setenv("RONDO_CYCLE_TIME_MS", "2.5", 1);
  assert_int_equal(rondo__knobs_load(&d), RONDO_SUCCESS);
  assert_int_equal(d.fusion_threshold, 0);
  assert_true(d.cycle_time_ms == 2.5);

  setenv("HOROVOD_CYCLE_TIME", "soon", 1); /* ignored: rondo's knob is set */
  assert_int_equal(rondo__knobs_load(&d), RONDO_SUCCESS);
  unsetenv("RONDO_CYCLE_TIME_MS"); /* now the bad fallback counts, with its own name */
  assert_int_equal(rondo__knobs_load(&d), RONDO_ERR_INVALID_KNOB);
  assert_non_null(strstr(rondo_last_error(), "RONDO_CYCLE_TIME_MS='soon'"));
  assert_int_equal(rondo__knob_parse("RONDO_CYCLE_TIME_MS", "-1", &d), RONDO_ERR_INVALID_KNOB);
  assert_int_equal(rondo__knob_parse("RONDO_STALL_ABORT_SEC", "1e2", &d), RONDO_SUCCESS);
  assert_true(d.stall_abort_sec == 100.0);
  /* decimal only, as documented: no hex, no infinity, no NaN */
  assert_int_equal(rondo__knob_parse("RONDO_CYCLE_TIME_MS", "0x10", &d), RONDO_ERR_INVALID_KNOB);
  assert_int_equal(rondo__knob_parse("RONDO_CYCLE_TIME_MS", "inf", &d), RONDO_ERR_INVALID_KNOB);
  assert_int_equal(rondo__knob_parse("RONDO_STALL_WARN_SEC", "nan", &d), RONDO_ERR_INVALID_KNOB);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    unsetenv(names[i]);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_size_values_with_suffixes),
      cmocka_unit_test(test_malformed_sizes_are_errors),
      cmocka_unit_test(test_enum_and_bool_values),
      cmocka_unit_test(test_int_and_string_values),
      cmocka_unit_test(test_unknown_knob_name),
      cmocka_unit_test(test_defaults_from_empty_environment),
      cmocka_unit_test(test_environment_load_reports_bad_value),
      cmocka_unit_test(test_engine_knobs_and_horovod_fallbacks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
