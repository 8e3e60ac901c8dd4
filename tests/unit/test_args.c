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
  /* in place is recvbuf at this rank's block of sendbuf or at sendbuf
   * itself (both a here, rank 0); a recvbuf overlapping sendbuf anywhere
   * else is an error */
  expect_status(rondo_reduce_scatter(world, a, a + 1, 4, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_INVALID_ARG);
  assert_non_null(strstr(rondo_last_error(), "overlap"));
  expect_status(rondo_reduce_scatter(world, a + 4, a, 8, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_INVALID_ARG);
  expect_status(rondo_reduce_scatterv(world, a, a + 1, counts, RONDO_FLOAT32, RONDO_SUM),
                RONDO_ERR_INVALID_ARG);
  {
    float in[8], want[8];
    for (int i = 0; i < 8; i++)
      in[i] = want[i] = (float)i * 0.5f - 1.0f;
    expect_status(rondo_reduce_scatter(world, in, in, 8, RONDO_FLOAT32, RONDO_SUM),
                  RONDO_SUCCESS);
    assert_memory_equal(in, want, sizeof in);
    expect_status(rondo_reduce_scatter(world, in, in, 8, RONDO_FLOAT32, RONDO_AVG),
                  RONDO_SUCCESS);
    assert_memory_equal(in, want, sizeof in);
    for (int algo = RONDO_ALGO_AUTO; algo < RONDO_ALGO_COUNT; algo++)
      if (algo == RONDO_ALGO_AUTO ||
          rondo_coll_algo_available(world, RONDO_COLL_REDUCE_SCATTER, (rondo_algo_t)algo, 8,
                                    RONDO_FLOAT32, RONDO_SUM, NULL) == RONDO_SUCCESS) {
        expect_status(rondo_reduce_scatter_algo(world, in, in, 8, RONDO_FLOAT32, RONDO_MAX,
                                                (rondo_algo_t)algo),
                      RONDO_SUCCESS);
        assert_memory_equal(in, want, sizeof in);
      }
    expect_status(rondo_reduce_scatterv(world, in, in, counts, RONDO_FLOAT32, RONDO_SUM),
                  RONDO_SUCCESS);
    assert_memory_equal(in, want, sizeof in);
  }
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
   * need device memory. The ids after adasum name reduce-scatter and
   * all-gather algorithms: no all-reduce runs them. */
  for (int id = RONDO_ALGO_MPI; id < RONDO_ALGO_COUNT; id++) {
    int device = id == RONDO_ALGO_NCCL || id == RONDO_ALGO_STAGED ||
                 id == RONDO_ALGO_HIERARCHICAL_NCCL;
    int adasum = id == RONDO_ALGO_ADASUM;
    int other = id > RONDO_ALGO_ADASUM;
    rondo_status_t want = device || adasum || other ? RONDO_ERR_UNSUPPORTED : RONDO_SUCCESS;
    why = "unset";
    expect_status(rondo_algo_available(world, (rondo_algo_t)id, 8, RONDO_FLOAT32, RONDO_SUM, &why),
                  want);
    /* the same question through the family form */
    const char *why2 = "unset";
    expect_status(rondo_coll_algo_available(world, RONDO_COLL_ALLREDUCE, (rondo_algo_t)id, 8,
                                            RONDO_FLOAT32, RONDO_SUM, &why2),
                  want);
    assert_ptr_equal(why2, why);
    if (device)
      assert_string_equal(why, "needs device memory");
    else if (adasum)
      assert_string_equal(why, "runs op adasum only");
    else if (other) {
      assert_string_equal(why, "it is not an all-reduce algorithm");
      assert_non_null(strstr(rondo_last_error(), rondo_algo_name((rondo_algo_t)id)));
      /* forcing it fails the same way, and writes nothing */
      float x[1] = {1}, y[1] = {-1};
      expect_status(rondo_allreduce_algo(world, x, y, 1, RONDO_FLOAT32, RONDO_SUM,
                                         (rondo_algo_t)id),
                    RONDO_ERR_UNSUPPORTED);
      assert_non_null(strstr(rondo_last_error(), "not an all-reduce algorithm"));
      assert_true(y[0] == -1);
    } else if (id == RONDO_ALGO_HIERARCHICAL)
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

/* The reduce-scatter and all-gather families, written out here (rondo.h,
 * docs/algorithms.md): on one rank every member runs and the selector would
 * consider each but hierarchical (one node: why says so); every other id
 * is not the family's. */
static void test_coll_algo_available(void **state)
{
  (void)state;
  static const struct {
    rondo_coll_t coll;
    unsigned members; /* bits of ids */
    const char *not_member;
  } fam[] = {
      {RONDO_COLL_REDUCE_SCATTER,
       1u << RONDO_ALGO_MPI | 1u << RONDO_ALGO_RING | 1u << RONDO_ALGO_PAIRWISE |
           1u << RONDO_ALGO_RECURSIVE_HALVING | 1u << RONDO_ALGO_SHM |
           1u << RONDO_ALGO_HIERARCHICAL,
       "it is not a reduce-scatter algorithm"},
      {RONDO_COLL_ALLGATHER,
       1u << RONDO_ALGO_MPI | 1u << RONDO_ALGO_RING | 1u << RONDO_ALGO_RECURSIVE_DOUBLING |
           1u << RONDO_ALGO_BRUCK | 1u << RONDO_ALGO_SHM | 1u << RONDO_ALGO_HIERARCHICAL,
       "it is not an all-gather algorithm"},
  };
  for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
    rondo_coll_t coll = fam[f].coll;
    const char *why = "unset";
    for (int id = RONDO_ALGO_MPI; id < RONDO_ALGO_COUNT; id++) {
      int member = (fam[f].members >> id) & 1u;
      why = "unset";
      rondo_status_t got = rondo_coll_algo_available(world, coll, (rondo_algo_t)id, 8,
                                                     RONDO_FLOAT32, RONDO_SUM, &why);
      if (got != (member ? RONDO_SUCCESS : RONDO_ERR_UNSUPPORTED))
        fail_msg("%s %s: %s (%s)", rondo_coll_name(coll), rondo_algo_name((rondo_algo_t)id),
                 rondo_status_name(got), rondo_last_error());
      if (member && id == RONDO_ALGO_HIERARCHICAL) {
        assert_non_null(why != NULL ? strstr(why, "one node") : NULL);
      } else if (member) {
        assert_null(why);
      } else if (id == RONDO_ALGO_NCCL || id == RONDO_ALGO_STAGED) {
        /* members for device buffers: not on these host buffers */
        assert_non_null(why);
        assert_string_equal(why, "needs device memory");
        assert_non_null(strstr(rondo_last_error(), rondo_algo_name((rondo_algo_t)id)));
      } else {
        assert_non_null(why);
        assert_string_equal(why, fam[f].not_member);
        assert_non_null(strstr(rondo_last_error(), rondo_algo_name((rondo_algo_t)id)));
      }
      /* why may be NULL */
      expect_status(rondo_coll_algo_available(world, coll, (rondo_algo_t)id, 8, RONDO_FLOAT32,
                                              RONDO_SUM, NULL),
                    member ? RONDO_SUCCESS : RONDO_ERR_UNSUPPORTED);
    }
    /* the choice is a member */
    rondo_algo_t choice = RONDO_ALGO_AUTO;
    expect_status(rondo_coll_choice(world, coll, 8, RONDO_FLOAT32, RONDO_SUM, &choice),
                  RONDO_SUCCESS);
    assert_true(choice > RONDO_ALGO_AUTO && choice < RONDO_ALGO_COUNT);
    assert_true((fam[f].members >> choice) & 1u);
    /* auto and values outside rondo_algo_t are no algorithm */
    why = NULL;
    expect_status(rondo_coll_algo_available(world, coll, RONDO_ALGO_AUTO, 8, RONDO_FLOAT32,
                                            RONDO_SUM, &why),
                  RONDO_ERR_INVALID_ALGO);
    assert_non_null(why);
    expect_status(rondo_coll_algo_available(world, coll, RONDO_ALGO_COUNT, 8, RONDO_FLOAT32,
                                            RONDO_SUM, &why),
                  RONDO_ERR_INVALID_ALGO);
    expect_status(rondo_coll_algo_available(world, coll, (rondo_algo_t)-1, 8, RONDO_FLOAT32,
                                            RONDO_SUM, &why),
                  RONDO_ERR_INVALID_ALGO);
    /* forcing a non-member fails, and writes nothing */
    int outsider = coll == RONDO_COLL_REDUCE_SCATTER ? RONDO_ALGO_BRUCK : RONDO_ALGO_PAIRWISE;
    float x[1] = {1}, y[1] = {-1};
    if (coll == RONDO_COLL_REDUCE_SCATTER)
      expect_status(rondo_reduce_scatter_algo(world, x, y, 1, RONDO_FLOAT32, RONDO_SUM,
                                              (rondo_algo_t)outsider),
                    RONDO_ERR_UNSUPPORTED);
    else
      expect_status(rondo_allgather_algo(world, x, y, 1, RONDO_FLOAT32, (rondo_algo_t)outsider),
                    RONDO_ERR_UNSUPPORTED);
    assert_true(y[0] == -1);
  }
  /* reduce-scatter runs no adasum; all-gather ignores the op */
  expect_status(rondo_coll_algo_available(world, RONDO_COLL_REDUCE_SCATTER, RONDO_ALGO_RING, 8,
                                          RONDO_FLOAT32, RONDO_ADASUM, NULL),
                RONDO_ERR_UNSUPPORTED);
  expect_status(rondo_coll_algo_available(world, RONDO_COLL_ALLGATHER, RONDO_ALGO_RING, 8,
                                          RONDO_FLOAT32, RONDO_ADASUM, NULL),
                RONDO_SUCCESS);
  /* a value outside rondo_coll_t */
  expect_status(rondo_coll_algo_available(world, RONDO_COLL_COUNT, RONDO_ALGO_RING, 8,
                                          RONDO_FLOAT32, RONDO_SUM, NULL),
                RONDO_ERR_INVALID_ARG);
  expect_status(rondo_coll_algo_available(NULL, RONDO_COLL_ALLGATHER, RONDO_ALGO_RING, 8,
                                          RONDO_FLOAT32, RONDO_SUM, NULL),
                RONDO_ERR_INVALID_COMM);
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
  /* into the caller's buffer: nothing to hand over, nothing to free */
  float out[3] = {0}, big[4] = {0};
  expect_status(rondo_allgather_into_async(world, "rows.into", row, 1, out, 1, 3, RONDO_FLOAT32,
                                           NULL, &req),
                RONDO_SUCCESS);
  result = row;
  expect_status(rondo_wait_result(&req, &result, &count), RONDO_SUCCESS);
  assert_null(result);
  assert_memory_equal(out, row, sizeof row);
  /* local argument errors fail the call at once */
  expect_status(rondo_allgather_into_async(world, "rows.into", row, 2, big, 1, 2, RONDO_FLOAT32,
                                           NULL, &req),
                RONDO_ERR_INVALID_ARG);
  assert_non_null(strstr(rondo_last_error(), "exceed recv_rows"));
  expect_status(rondo_allgather_into_async(world, "rows.into", row, 1, NULL, 1, 3, RONDO_FLOAT32,
                                           NULL, &req),
                RONDO_ERR_NULL_BUFFER);
  assert_non_null(strstr(rondo_last_error(), "recvbuf"));
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
      cmocka_unit_test(test_coll_algo_available),
      cmocka_unit_test(test_knobs_are_read_per_comm),
      cmocka_unit_test(test_rondo_free),
      cmocka_unit_test(test_destroyed_comm_is_rejected),
      cmocka_unit_test(test_calls_after_finalize_fail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
