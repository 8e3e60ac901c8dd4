/* Argument validation at every entry point, on one rank: each mistake gets
 * its own documented status and a message, never a crash. (The cross-rank
 * cases, RONDO_ERR_PEER and RONDO_ERR_MISMATCH, are in tests/mpi/test_errors.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "rondo.h"

static rondo_comm_t world;
static float a[8], b[8];

#define expect_status(call, want)                                              \
  do {                                                                         \
    rondo_status_t got_ = (call);                                              \
    if (got_ != (want))                                                        \
      fail_msg("%s returned %s, want %s (%s)", #call, rondo_status_name(got_), \
               rondo_status_name(want), rondo_last_error());                   \
    if (got_ != RONDO_SUCCESS && rondo_last_error()[0] == '\0')                \
      fail_msg("%s failed without a message", #call);                          \
  } while (0)

static void test_calls_before_init_fail(void **state)
{
  (void)state;
  assert_null(rondo_world());
  expect_status(rondo_allreduce(NULL, a, b, 8, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_NOT_INITIALIZED);
  expect_status(rondo_barrier(NULL), RONDO_ERR_NOT_INITIALIZED);
  assert_int_equal(rondo_comm_size(NULL), -1);
}

static void test_bad_knob_fails_init_then_retry_works(void **state)
{
  (void)state;
  setenv("RONDO_ALLREDUCE_ALGO", "fastest", 1);
  expect_status(rondo_init(NULL, NULL), RONDO_ERR_INVALID_KNOB);
  assert_non_null(strstr(rondo_last_error(), "RONDO_ALLREDUCE_ALGO='fastest'"));
  assert_null(rondo_world());
  unsetenv("RONDO_ALLREDUCE_ALGO");
  expect_status(rondo_init(NULL, NULL), RONDO_SUCCESS);
  expect_status(rondo_init(NULL, NULL), RONDO_SUCCESS); /* again: a no-op */
  world = rondo_world();
  assert_non_null(world);
  assert_int_equal(rondo_comm_size(world), 1);
  assert_int_equal(rondo_comm_rank(world), 0);
}

static void test_allreduce_argument_errors(void **state)
{
  (void)state;
  expect_status(rondo_allreduce(world, NULL, b, 8, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_NULL_BUFFER);
  expect_status(rondo_allreduce(world, a, NULL, 8, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_NULL_BUFFER);
  expect_status(rondo_allreduce(world, NULL, NULL, 0, RONDO_FLOAT32, RONDO_SUM),
                RONDO_SUCCESS);
  expect_status(rondo_allreduce(world, a, b, 8, (rondo_dtype_t)99, RONDO_SUM),
                RONDO_ERR_INVALID_DTYPE);
  expect_status(rondo_allreduce(world, a, b, 8, (rondo_dtype_t)-1, RONDO_SUM),
                RONDO_ERR_INVALID_DTYPE);
  expect_status(rondo_allreduce(world, a, b, 8, RONDO_FLOAT32, (rondo_op_t)99),
                RONDO_ERR_INVALID_OP);
  expect_status(rondo_allreduce_algo(world, a, b, 8, RONDO_FLOAT32, RONDO_SUM,
                                     (rondo_algo_t)99),
                RONDO_ERR_INVALID_ALGO);
  expect_status(rondo_allreduce(world, a, b, SIZE_MAX / 2, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_COUNT_OVERFLOW);
  /* validation order: the dtype is reported before the buffers */
  expect_status(rondo_allreduce(world, NULL, NULL, 8, (rondo_dtype_t)99, RONDO_SUM),
                RONDO_ERR_INVALID_DTYPE);
}

static void test_unbuilt_algorithms_are_unsupported(void **state)
{
  (void)state;
  rondo_algo_t unbuilt[] = {RONDO_ALGO_NCCL};
  for (size_t i = 0; i < sizeof unbuilt / sizeof unbuilt[0]; i++) {
    expect_status(rondo_allreduce_algo(world, a, b, 8, RONDO_FLOAT32, RONDO_SUM, unbuilt[i]),
                  RONDO_ERR_UNSUPPORTED);
    assert_non_null(strstr(rondo_last_error(), rondo_algo_name(unbuilt[i])));
  }
}

static void test_root_and_layout_errors(void **state)
{
  (void)state;
  size_t counts[1] = {8}, bad_counts[1] = {7};
  expect_status(rondo_broadcast(world, a, 8, RONDO_FLOAT32, 1), RONDO_ERR_INVALID_ROOT);
  expect_status(rondo_broadcast(world, a, 8, RONDO_FLOAT32, -1), RONDO_ERR_INVALID_ROOT);
  expect_status(rondo_broadcast(world, NULL, 8, RONDO_FLOAT32, 0), RONDO_ERR_NULL_BUFFER);
  expect_status(rondo_broadcast(world, a, 8, (rondo_dtype_t)8, 0), RONDO_ERR_INVALID_DTYPE);
  expect_status(rondo_allgather(world, a, NULL, 8, RONDO_FLOAT32), RONDO_ERR_NULL_BUFFER);
  expect_status(rondo_allgather(world, a, b, SIZE_MAX / 4, RONDO_FLOAT64),
                RONDO_ERR_COUNT_OVERFLOW);
  expect_status(rondo_allgatherv(world, a, 8, b, NULL, NULL, RONDO_FLOAT32),
                RONDO_ERR_INVALID_ARG);
  expect_status(rondo_allgatherv(world, a, 8, b, bad_counts, NULL, RONDO_FLOAT32),
                RONDO_ERR_INVALID_ARG);
  expect_status(rondo_allgatherv(world, a, 8, b, counts, NULL, RONDO_FLOAT32), RONDO_SUCCESS);
  assert_memory_equal(a, b, sizeof a);
  expect_status(rondo_reduce_scatter(world, a, a, 8, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_INVALID_ARG);
  expect_status(rondo_reduce_scatter(world, a, b, 8, RONDO_FLOAT32, (rondo_op_t)5),
                RONDO_ERR_INVALID_OP);
  expect_status(rondo_alltoall(world, a, a, 8, RONDO_FLOAT32), RONDO_ERR_INVALID_ARG);
  expect_status(rondo_alltoall(world, NULL, b, 8, RONDO_FLOAT32), RONDO_ERR_NULL_BUFFER);
}

static void test_single_rank_results(void **state)
{
  (void)state;
  for (int i = 0; i < 8; i++)
    a[i] = (float)i - 3.5f;
  for (int algo = RONDO_ALGO_AUTO; algo <= RONDO_ALGO_HIERARCHICAL; algo++) {
    memset(b, 0, sizeof b);
    expect_status(rondo_allreduce_algo(world, a, b, 8, RONDO_FLOAT32, RONDO_AVG,
                                       (rondo_algo_t)algo),
                  RONDO_SUCCESS);
    assert_memory_equal(a, b, sizeof a);
  }
  rondo_algo_t choice;
  expect_status(rondo_allreduce_choice(world, 8, RONDO_FLOAT32, RONDO_SUM, &choice),
                RONDO_SUCCESS);
  assert_true(choice > RONDO_ALGO_AUTO && choice < RONDO_ALGO_COUNT);
  expect_status(rondo_allreduce_choice(world, 8, RONDO_FLOAT32, RONDO_SUM, NULL),
                RONDO_ERR_INVALID_ARG);
}

static void test_destroyed_comm_is_rejected(void **state)
{
  (void)state;
  rondo_comm_t c = NULL, stale;
  expect_status(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS);
  stale = c;
  expect_status(rondo_allreduce(c, a, b, 8, RONDO_FLOAT32, RONDO_SUM), RONDO_SUCCESS);
  expect_status(rondo_comm_destroy(&c), RONDO_SUCCESS);
  assert_null(c);
  expect_status(rondo_allreduce(stale, a, b, 8, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_INVALID_COMM);
  expect_status(rondo_comm_destroy(&stale), RONDO_ERR_INVALID_COMM);
  expect_status(rondo_allreduce(NULL, a, b, 8, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_INVALID_COMM);
  assert_int_equal(rondo_comm_rank(stale), -1);
  assert_true(rondo_comm_mpi(stale) == MPI_COMM_NULL);
  expect_status(rondo_comm_create(MPI_COMM_NULL, &c), RONDO_ERR_INVALID_ARG);
  expect_status(rondo_comm_create(MPI_COMM_WORLD, NULL), RONDO_ERR_INVALID_ARG);
  expect_status(rondo_comm_destroy(NULL), RONDO_ERR_INVALID_ARG);
}

static void test_calls_after_finalize_fail(void **state)
{
  (void)state;
  expect_status(rondo_finalize(), RONDO_SUCCESS);
  expect_status(rondo_allreduce(world, a, b, 8, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_FINALIZED);
  expect_status(rondo_init(NULL, NULL), RONDO_ERR_FINALIZED);
  expect_status(rondo_finalize(), RONDO_ERR_FINALIZED);
  assert_null(rondo_world());
}

int main(void)
{
  setenv("RONDO_LOG", "off", 1); /* the errors below are expected */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_calls_before_init_fail),
      cmocka_unit_test(test_bad_knob_fails_init_then_retry_works),
      cmocka_unit_test(test_allreduce_argument_errors),
      cmocka_unit_test(test_unbuilt_algorithms_are_unsupported),
      cmocka_unit_test(test_root_and_layout_errors),
      cmocka_unit_test(test_single_rank_results),
      cmocka_unit_test(test_destroyed_comm_is_rejected),
      cmocka_unit_test(test_calls_after_finalize_fail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
