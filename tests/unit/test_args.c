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
  int v = 5;
  expect_status(rondo_comm_size(NULL, &v), RONDO_ERR_NOT_INITIALIZED);
  assert_int_equal(v, -1);
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
  int rank = -1, size = -1;
  expect_status(rondo_comm_size(world, &size), RONDO_SUCCESS);
  expect_status(rondo_comm_rank(world, &rank), RONDO_SUCCESS);
  assert_int_equal(size, 1);
  assert_int_equal(rank, 0);
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

static void test_root_and_layout_errors(void **state)
{
  (void)state;
  size_t counts[1] = {8}, bad_counts[1] = {7};
  expect_status(rondo_broadcast(world, a, 8, RONDO_FLOAT32, 1), RONDO_ERR_INVALID_ROOT);
  expect_status(rondo_broadcast(world, a, 8, RONDO_FLOAT32, -1), RONDO_ERR_INVALID_ROOT);
  expect_status(rondo_broadcast(world, NULL, 8, RONDO_FLOAT32, 0), RONDO_ERR_NULL_BUFFER);
  expect_status(rondo_broadcast(world, a, 8, RONDO_DTYPE_COUNT, 0), RONDO_ERR_INVALID_DTYPE);
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
  expect_status(rondo_reduce_scatter(world, a, b, 8, RONDO_FLOAT32, RONDO_OP_COUNT),
                RONDO_ERR_INVALID_OP);
  expect_status(rondo_reduce_scatter(world, a, b, 8, RONDO_FLOAT32, RONDO_ADASUM),
                RONDO_ERR_UNSUPPORTED);
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

/* The texts of rondo_explain and rondo_comm_topology: a size query, the
 * exact size, one byte short (truncated, NUL-terminated, the same prefix). */
static void check_text_call(rondo_status_t (*call)(char *, size_t, size_t *), const char *what)
{
  size_t need = 0, again = 0;
  expect_status(call(NULL, 0, &need), RONDO_SUCCESS);
  if (need < 2)
    fail_msg("%s: needs %zu bytes", what, need);
  char *full = malloc(need), *cut = malloc(need);
  assert_non_null(full);
  assert_non_null(cut);
  expect_status(call(full, need, &again), RONDO_SUCCESS);
  assert_int_equal(again, need);
  assert_int_equal(strlen(full), need - 1);
  memset(cut, 'x', need);
  expect_status(call(cut, need - 1, &again), RONDO_ERR_TRUNCATED);
  assert_int_equal(again, need);
  assert_int_equal(strlen(cut), need - 2);
  assert_memory_equal(cut, full, need - 2);
  assert_non_null(strstr(rondo_last_error(), "needs"));
  expect_status(call(NULL, 5, NULL), RONDO_ERR_INVALID_ARG); /* NULL buf with a length */
  expect_status(call(full, need, NULL), RONDO_SUCCESS);     /* needed may be NULL */
  free(full);
  free(cut);
}

static rondo_status_t explain_1k(char *buf, size_t len, size_t *needed)
{
  return rondo_explain(world, 256, RONDO_FLOAT32, RONDO_SUM, buf, len, needed);
}

static rondo_status_t topology(char *buf, size_t len, size_t *needed)
{
  return rondo_comm_topology(world, buf, len, needed);
}

static void test_texts_report_their_size(void **state)
{
  (void)state;
  check_text_call(explain_1k, "rondo_explain");
  check_text_call(topology, "rondo_comm_topology");
}

static void test_algo_available(void **state)
{
  (void)state;
  const char *why = "unset";
  /* One rank, one node: every host algorithm runs, and the selector would
   * consider each but hierarchical (why says so); the device algorithms
   * need device memory. */
  for (int id = RONDO_ALGO_MPI; id < RONDO_ALGO_COUNT; id++) {
    int device = id == RONDO_ALGO_NCCL || id == RONDO_ALGO_STAGED ||
                 id == RONDO_ALGO_HIERARCHICAL_NCCL;
    int adasum = id == RONDO_ALGO_ADASUM;
    rondo_status_t want = device || adasum ? RONDO_ERR_UNSUPPORTED : RONDO_SUCCESS;
    expect_status(rondo_algo_available(world, (rondo_algo_t)id, 8, RONDO_FLOAT32, RONDO_SUM, &why),
                  want);
    if (device)
      assert_string_equal(why, "needs device memory");
    else if (adasum)
      assert_string_equal(why, "runs op adasum only");
    else if (id == RONDO_ALGO_HIERARCHICAL)
      assert_non_null(why != NULL ? strstr(why, "one node") : NULL);
    else
      assert_null(why);
  }
  expect_status(rondo_algo_available(world, RONDO_ALGO_RING, 8, RONDO_FLOAT32, RONDO_SUM, NULL),
                RONDO_SUCCESS);
  /* op adasum: its own algorithm, floating dtypes only */
  expect_status(rondo_algo_available(world, RONDO_ALGO_ADASUM, 8, RONDO_FLOAT32, RONDO_ADASUM,
                                     &why),
                RONDO_SUCCESS);
  assert_null(why);
  expect_status(rondo_algo_available(world, RONDO_ALGO_RING, 8, RONDO_FLOAT32, RONDO_ADASUM, &why),
                RONDO_ERR_UNSUPPORTED);
  assert_string_equal(why, "op adasum runs on the adasum algorithm only");
  expect_status(rondo_algo_available(world, RONDO_ALGO_ADASUM, 8, RONDO_INT32, RONDO_ADASUM, &why),
                RONDO_ERR_UNSUPPORTED);
  assert_non_null(strstr(why, "floating dtype"));
  expect_status(rondo_algo_available(world, RONDO_ALGO_AUTO, 8, RONDO_FLOAT32, RONDO_SUM, &why),
                RONDO_ERR_INVALID_ALGO);
  expect_status(rondo_algo_available(world, RONDO_ALGO_COUNT, 8, RONDO_FLOAT32, RONDO_SUM, &why),
                RONDO_ERR_INVALID_ALGO);
  expect_status(rondo_algo_available(world, RONDO_ALGO_RING, 8, (rondo_dtype_t)99, RONDO_SUM,
                                     &why),
                RONDO_ERR_INVALID_DTYPE);
  expect_status(rondo_algo_available(NULL, RONDO_ALGO_RING, 8, RONDO_FLOAT32, RONDO_SUM, &why),
                RONDO_ERR_INVALID_COMM);
  /* forcing one that cannot run fails with the same reason */
  expect_status(rondo_allreduce_algo(world, a, b, 8, RONDO_FLOAT32, RONDO_SUM, RONDO_ALGO_NCCL),
                RONDO_ERR_UNSUPPORTED);
  assert_non_null(strstr(rondo_last_error(), "the nccl all-reduce cannot run"));
  assert_non_null(strstr(rondo_last_error(), "needs device memory"));
}

/* Each comm reads the knobs when it is made and keeps them. */
static void test_knobs_are_read_per_comm(void **state)
{
  (void)state;
  rondo_comm_t ring = NULL, rd = NULL;
  rondo_algo_t algo;
  setenv("RONDO_ALLREDUCE_ALGO", "RING", 1);
  expect_status(rondo_comm_create(MPI_COMM_WORLD, &ring), RONDO_SUCCESS);
  setenv("RONDO_ALLREDUCE_ALGO", "recursive_doubling", 1);
  expect_status(rondo_comm_create(MPI_COMM_WORLD, &rd), RONDO_SUCCESS);
  unsetenv("RONDO_ALLREDUCE_ALGO");
  expect_status(rondo_allreduce_choice(ring, 8, RONDO_FLOAT32, RONDO_SUM, &algo), RONDO_SUCCESS);
  assert_int_equal(algo, RONDO_ALGO_RING);
  expect_status(rondo_allreduce_choice(rd, 8, RONDO_FLOAT32, RONDO_SUM, &algo), RONDO_SUCCESS);
  assert_int_equal(algo, RONDO_ALGO_RECURSIVE_DOUBLING);
  /* the world comm, made with the defaults, still chooses by itself */
  char text[4096];
  expect_status(rondo_explain(world, 8, RONDO_FLOAT32, RONDO_SUM, text, sizeof text, NULL),
                RONDO_SUCCESS);
  assert_null(strstr(text, "forced"));
  /* a bad name fails only the comm made with it */
  setenv("RONDO_ALLREDUCE_ALGO", "fastest", 1);
  rondo_comm_t bad = (rondo_comm_t)&bad;
  expect_status(rondo_comm_create(MPI_COMM_WORLD, &bad), RONDO_ERR_INVALID_KNOB);
  assert_null(bad);
  unsetenv("RONDO_ALLREDUCE_ALGO");
  expect_status(rondo_allreduce(ring, a, b, 8, RONDO_FLOAT32, RONDO_SUM), RONDO_SUCCESS);
  expect_status(rondo_comm_destroy(&ring), RONDO_SUCCESS);
  expect_status(rondo_comm_destroy(&rd), RONDO_SUCCESS);
}

static void test_rondo_free(void **state)
{
  (void)state;
  rondo_free(NULL); /* ignored */
  rondo_request_t req = NULL;
  void *result = NULL;
  size_t count = 0;
  float row[3] = {1, 2, 3};
  expect_status(rondo_allgather_async(world, "rows", row, 1, 3, RONDO_FLOAT32, NULL, &req),
                RONDO_SUCCESS);
  int done = 0;
  while (!done)
    expect_status(rondo_test(req, &done), RONDO_SUCCESS);
  expect_status(rondo_request_result(req, &result, &count), RONDO_SUCCESS);
  expect_status(rondo_wait(&req), RONDO_SUCCESS);
  assert_int_equal(count, 3);
  assert_memory_equal(result, row, sizeof row);
  rondo_free(result); /* the sanitizer runs see a leak or a double free */
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
  int rank = 5;
  MPI_Comm mpi = MPI_COMM_WORLD;
  expect_status(rondo_comm_rank(stale, &rank), RONDO_ERR_INVALID_COMM);
  assert_int_equal(rank, -1);
  expect_status(rondo_comm_mpi(stale, &mpi), RONDO_ERR_INVALID_COMM);
  assert_true(mpi == MPI_COMM_NULL);
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
      cmocka_unit_test(test_root_and_layout_errors),
      cmocka_unit_test(test_single_rank_results),
      cmocka_unit_test(test_texts_report_their_size),
      cmocka_unit_test(test_algo_available),
      cmocka_unit_test(test_knobs_are_read_per_comm),
      cmocka_unit_test(test_rondo_free),
      cmocka_unit_test(test_destroyed_comm_is_rejected),
      cmocka_unit_test(test_calls_after_finalize_fail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
