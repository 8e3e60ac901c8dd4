/* The status list: every code has a distinct, real message and name, and the
 * names of dtypes, ops and algorithms round-trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

static void test_every_status_has_a_message(void **state)
{
  (void)state;
  for (int s = 0; s < RONDO_STATUS_COUNT; s++) {
    const char *msg = rondo_status_string((rondo_status_t)s);
    assert_non_null(msg);
    assert_true(strlen(msg) > 5);
    assert_string_not_equal(msg, "unknown status");
    assert_string_not_equal(rondo_status_name((rondo_status_t)s), "RONDO_UNKNOWN");
  }
  assert_string_equal(rondo_status_string(RONDO_STATUS_COUNT), "unknown status");
  assert_string_equal(rondo_status_string((rondo_status_t)-1), "unknown status");
  assert_string_equal(rondo_status_name(RONDO_ERR_MPI), "RONDO_ERR_MPI");
}

static void test_status_messages_are_distinct(void **state)
{
  (void)state;
  for (int a = 0; a < RONDO_STATUS_COUNT; a++)
    for (int b = a + 1; b < RONDO_STATUS_COUNT; b++) {
      assert_string_not_equal(rondo_status_string((rondo_status_t)a),
                              rondo_status_string((rondo_status_t)b));
      assert_string_not_equal(rondo_status_name((rondo_status_t)a),
                              rondo_status_name((rondo_status_t)b));
    }
}

static void test_success_is_zero(void **state)
{
  (void)state;
  assert_int_equal(RONDO_SUCCESS, 0);
}

/* Enum values are part of the ABI (rondo.h): written out here with their
 * names, so a change to any of them fails this test. A *_COUNT row has no
 * name (NULL; "RONDO_UNKNOWN" for the status list). */
static void test_enum_values_are_pinned(void **state)
{
  (void)state;
  const struct {
    int value, pinned;
    const char *name, *want;
  } v[] = {
      {RONDO_INT8, 0, rondo_dtype_name(RONDO_INT8), "int8"},
      {RONDO_UINT8, 1, rondo_dtype_name(RONDO_UINT8), "uint8"},
      {RONDO_INT32, 2, rondo_dtype_name(RONDO_INT32), "int32"},
      {RONDO_INT64, 3, rondo_dtype_name(RONDO_INT64), "int64"},
      {RONDO_FLOAT16, 4, rondo_dtype_name(RONDO_FLOAT16), "float16"},
      {RONDO_BFLOAT16, 5, rondo_dtype_name(RONDO_BFLOAT16), "bfloat16"},
      {RONDO_FLOAT32, 6, rondo_dtype_name(RONDO_FLOAT32), "float32"},
      {RONDO_FLOAT64, 7, rondo_dtype_name(RONDO_FLOAT64), "float64"},
      {RONDO_INT16, 8, rondo_dtype_name(RONDO_INT16), "int16"},
      {RONDO_DTYPE_COUNT, 9, rondo_dtype_name(RONDO_DTYPE_COUNT), NULL},
      {RONDO_SUM, 0, rondo_op_name(RONDO_SUM), "sum"},
      {RONDO_AVG, 1, rondo_op_name(RONDO_AVG), "avg"},
      {RONDO_MIN, 2, rondo_op_name(RONDO_MIN), "min"},
      {RONDO_MAX, 3, rondo_op_name(RONDO_MAX), "max"},
      {RONDO_PROD, 4, rondo_op_name(RONDO_PROD), "prod"},
      {RONDO_ADASUM, 5, rondo_op_name(RONDO_ADASUM), "adasum"},
      {RONDO_OP_COUNT, 6, rondo_op_name(RONDO_OP_COUNT), NULL},
      {RONDO_ALGO_AUTO, 0, rondo_algo_name(RONDO_ALGO_AUTO), "auto"},
      {RONDO_ALGO_MPI, 1, rondo_algo_name(RONDO_ALGO_MPI), "mpi"},
      {RONDO_ALGO_RING, 2, rondo_algo_name(RONDO_ALGO_RING), "ring"},
      {RONDO_ALGO_RECURSIVE_DOUBLING, 3, rondo_algo_name(RONDO_ALGO_RECURSIVE_DOUBLING),
       "recursive_doubling"},
      {RONDO_ALGO_RABENSEIFNER, 4, rondo_algo_name(RONDO_ALGO_RABENSEIFNER), "rabenseifner"},
      {RONDO_ALGO_SHM, 5, rondo_algo_name(RONDO_ALGO_SHM), "shm"},
      {RONDO_ALGO_HIERARCHICAL, 6, rondo_algo_name(RONDO_ALGO_HIERARCHICAL), "hierarchical"},
      {RONDO_ALGO_NCCL, 7, rondo_algo_name(RONDO_ALGO_NCCL), "nccl"},
      {RONDO_ALGO_STAGED, 8, rondo_algo_name(RONDO_ALGO_STAGED), "staged"},
      {RONDO_ALGO_HIERARCHICAL_NCCL, 9, rondo_algo_name(RONDO_ALGO_HIERARCHICAL_NCCL),
       "hierarchical_nccl"},
      {RONDO_ALGO_ADASUM, 10, rondo_algo_name(RONDO_ALGO_ADASUM), "adasum"},
      {RONDO_ALGO_PAIRWISE, 11, rondo_algo_name(RONDO_ALGO_PAIRWISE), "pairwise"},
      {RONDO_ALGO_RECURSIVE_HALVING, 12, rondo_algo_name(RONDO_ALGO_RECURSIVE_HALVING),
       "recursive_halving"},
      {RONDO_ALGO_BRUCK, 13, rondo_algo_name(RONDO_ALGO_BRUCK), "bruck"},
      {RONDO_ALGO_COUNT, 14, rondo_algo_name(RONDO_ALGO_COUNT), NULL},
      {RONDO_COLL_ALLREDUCE, 0, rondo_coll_name(RONDO_COLL_ALLREDUCE), "allreduce"},
      {RONDO_COLL_REDUCE_SCATTER, 1, rondo_coll_name(RONDO_COLL_REDUCE_SCATTER),
       "reduce_scatter"},
      {RONDO_COLL_ALLGATHER, 2, rondo_coll_name(RONDO_COLL_ALLGATHER), "allgather"},
      {RONDO_COLL_COUNT, 3, rondo_coll_name(RONDO_COLL_COUNT), NULL},
      {RONDO_ERR_INVALID_ARG, 1, rondo_status_name(RONDO_ERR_INVALID_ARG), "RONDO_ERR_INVALID_ARG"},
      {RONDO_ERR_MISMATCH, 15, rondo_status_name(RONDO_ERR_MISMATCH), "RONDO_ERR_MISMATCH"},
      {RONDO_ERR_PEER, 16, rondo_status_name(RONDO_ERR_PEER), "RONDO_ERR_PEER"},
      {RONDO_ERR_INTERNAL, 23, rondo_status_name(RONDO_ERR_INTERNAL), "RONDO_ERR_INTERNAL"},
      {RONDO_ERR_TRUNCATED, 24, rondo_status_name(RONDO_ERR_TRUNCATED), "RONDO_ERR_TRUNCATED"},
      {RONDO_ERR_JOINED, 25, rondo_status_name(RONDO_ERR_JOINED), "RONDO_ERR_JOINED"},
      {RONDO_ERR_LAUNCH, 26, rondo_status_name(RONDO_ERR_LAUNCH), "RONDO_ERR_LAUNCH"},
      {RONDO_STATUS_COUNT, 27, rondo_status_name(RONDO_STATUS_COUNT), "RONDO_UNKNOWN"},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    assert_int_equal(v[i].value, v[i].pinned);
    if (v[i].want == NULL)
      assert_null(v[i].name);
    else
      assert_string_equal(v[i].name, v[i].want);
  }
}

static void test_names_round_trip(void **state)
{
  (void)state;
  for (int d = 0; d < RONDO_DTYPE_COUNT; d++) {
    rondo_dtype_t back;
    assert_int_equal(rondo_dtype_from_name(rondo_dtype_name((rondo_dtype_t)d), &back),
                     RONDO_SUCCESS);
    assert_int_equal(back, d);
    assert_true(rondo_dtype_size((rondo_dtype_t)d) > 0);
  }
  for (int o = 0; o < RONDO_OP_COUNT; o++) {
    rondo_op_t back;
    assert_int_equal(rondo_op_from_name(rondo_op_name((rondo_op_t)o), &back), RONDO_SUCCESS);
    assert_int_equal(back, o);
  }
  for (int a = 0; a < RONDO_ALGO_COUNT; a++) {
    rondo_algo_t back;
    assert_int_equal(rondo_algo_from_name(rondo_algo_name((rondo_algo_t)a), &back),
                     RONDO_SUCCESS);
    assert_int_equal(back, a);
  }
  assert_string_equal(rondo_algo_name(RONDO_ALGO_RECURSIVE_DOUBLING), "recursive_doubling");
  assert_int_equal(rondo_dtype_size(RONDO_BFLOAT16), 2);
  assert_int_equal(rondo_dtype_size(RONDO_FLOAT64), 8);
}

static void test_bad_names_are_rejected(void **state)
{
  (void)state;
  rondo_dtype_t d;
  rondo_op_t o;
  rondo_algo_t a;
  assert_int_equal(rondo_dtype_from_name("float128", &d), RONDO_ERR_INVALID_DTYPE);
  assert_non_null(strstr(rondo_last_error(), "float128"));
  assert_int_equal(rondo_op_from_name("xor", &o), RONDO_ERR_INVALID_OP);
  assert_int_equal(rondo_algo_from_name("tree", &a), RONDO_ERR_INVALID_ALGO);
  assert_int_equal(rondo_algo_from_name(NULL, &a), RONDO_ERR_INVALID_ALGO);
  assert_null(rondo_dtype_name(RONDO_DTYPE_COUNT));
  assert_null(rondo_op_name((rondo_op_t)-1));
  assert_null(rondo_algo_name(RONDO_ALGO_COUNT));
  assert_null(rondo_algo_name((rondo_algo_t)-1));
  assert_null(rondo_coll_name(RONDO_COLL_COUNT));
  assert_null(rondo_coll_name((rondo_coll_t)-1));
  assert_int_equal(rondo_dtype_size((rondo_dtype_t)42), 0);
}

static void test_version_matches_header(void **state)
{
  (void)state;
  int major = -1, minor = -1, patch = -1;
  rondo_version(&major, &minor, &patch);
  assert_int_equal(major, RONDO_VERSION_MAJOR);
  assert_int_equal(minor, RONDO_VERSION_MINOR);
  assert_int_equal(patch, RONDO_VERSION_PATCH);
  assert_string_equal(rondo_version_string(), RONDO_VERSION_STRING);
  char built[32];
  snprintf(built, sizeof built, "%d.%d.%d", major, minor, patch);
  assert_string_equal(built, RONDO_VERSION_STRING);
  assert_string_equal(RONDO_VERSION_STRING, PACKAGE_VERSION);
  rondo_version(NULL, NULL, NULL); /* any pointer may be NULL */
}

static void test_last_error_is_per_thread_message(void **state)
{
  (void)state;
  rondo__clear_error();
  assert_string_equal(rondo_last_error(), "");
  assert_int_equal(rondo__fail_quiet(RONDO_ERR_IO, "disk %d full", 3), RONDO_ERR_IO);
  assert_string_equal(rondo_last_error(), "RONDO_ERR_IO: disk 3 full");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_status_has_a_message),
      cmocka_unit_test(test_status_messages_are_distinct),
      cmocka_unit_test(test_success_is_zero),
      cmocka_unit_test(test_enum_values_are_pinned),
      cmocka_unit_test(test_names_round_trip),
      cmocka_unit_test(test_bad_names_are_rejected),
      cmocka_unit_test(test_version_matches_header),
      cmocka_unit_test(test_last_error_is_per_thread_message),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
