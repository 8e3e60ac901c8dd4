/*
 * test_errors - every argument error of the blocking collectives returns its
 * documented status on every rank, leaves the output buffer untouched,
 * leaves rondo_last_error() non-empty, and leaves the comm working (a valid
 * allreduce follows every error).
 *
 *  - the same bad argument on every rank: its own status everywhere;
 *  - a bad argument on rank size-1 only: its status there, RONDO_ERR_PEER on
 *    the others (the cross-rank argument check, always on);
 *  - different counts / dtypes / ops / algorithms / roots across ranks:
 *    RONDO_ERR_MISMATCH everywhere; on one node also where the shm
 *    all-reduce agrees in its first round and other ranks took another path;
 *  - across nodes, where Rabenseifner's data rides in the check: calls that
 *    differ, a bad argument on one rank, in place and not;
 *  - NULL, stale and destroyed comms; reduce_scatter in place; the status
 *    strings. (Algorithms that cannot run on a comm: test_allreduce.)
 * Calls before rondo_init() and after rondo_finalize() are in test_lifecycle.
 */
#include <math.h>

#include "mpitest.h"

#define N 8 /* elements per rank in the valid buffers */
#define BIG_N 8192 /* float32 elements: more than the check's packet carries */
#define MID_N 12000 /* float32 elements: at 4 ranks Rabenseifner's first
                       step beside the packet, its second in the packet's
                       message under MPICH (exchange.c) */

typedef enum {
  ALLREDUCE,
  ALLREDUCE_ALGO,
  BROADCAST,
  ALLGATHER,
  ALLGATHERV,
  REDUCE_SCATTER,
  ALLTOALL,
  BARRIER,
  NCOLLS
} coll_t;

static const char *const coll_names[NCOLLS] = {
    "rondo_allreduce",  "rondo_allreduce_algo", "rondo_broadcast", "rondo_allgather",
    "rondo_allgatherv", "rondo_reduce_scatter", "rondo_alltoall",  "rondo_barrier"};

/* One call's arguments; broadcast uses recv as its buffer. */
typedef struct {
  coll_t coll;
  rondo_comm_t comm;
  const void *send;
  void *recv;
  size_t count; /* allgatherv: sendcount; reduce_scatter: recvcount */
  rondo_dtype_t dtype;
  rondo_op_t op;
  rondo_algo_t algo;
  int root;
  const size_t *recvcounts;
} call_t;

static unsigned char *sbuf, *rbuf; /* size * N float64 each: room for any valid call */
static size_t rbytes;
static size_t *counts_n;    /* N for every rank */
static size_t *counts_huge; /* SIZE_MAX / 2 for every rank */

static call_t valid_call(coll_t coll, rondo_comm_t comm)
{
  call_t c = {coll, comm, sbuf, rbuf, N, RONDO_FLOAT32, RONDO_SUM, RONDO_ALGO_RING, 0, counts_n};
  return c;
}

static rondo_status_t run(const call_t *c)
{
  switch (c->coll) {
  case ALLREDUCE:
    return rondo_allreduce(c->comm, c->send, c->recv, c->count, c->dtype, c->op);
  case ALLREDUCE_ALGO:
    return rondo_allreduce_algo(c->comm, c->send, c->recv, c->count, c->dtype, c->op, c->algo);
  case BROADCAST:
    return rondo_broadcast(c->comm, c->recv, c->count, c->dtype, c->root);
  case ALLGATHER:
    return rondo_allgather(c->comm, c->send, c->recv, c->count, c->dtype);
  case ALLGATHERV:
    return rondo_allgatherv(c->comm, c->send, c->count, c->recv, c->recvcounts, NULL, c->dtype);
  case REDUCE_SCATTER:
    return rondo_reduce_scatter(c->comm, c->send, c->recv, c->count, c->dtype, c->op);
  case ALLTOALL:
    return rondo_alltoall(c->comm, c->send, c->recv, c->count, c->dtype);
  default:
    return rondo_barrier(c->comm);
  }
}

/* A valid allreduce on comm must still work after an error. */
static void still_works(rondo_comm_t comm)
{
  int32_t in[3], out[3] = {0, 0, 0};
  int p = MT_QUERY(rondo_comm_size, comm), r = MT_QUERY(rondo_comm_rank, comm);
  for (int k = 0; k < 3; k++)
    in[k] = (r + 1) * (k + 1);
  rondo_status_t st = rondo_allreduce(comm, in, out, 3, RONDO_INT32, RONDO_SUM);
  if (MT_EQ_STATUS(st, RONDO_SUCCESS))
    for (int k = 0; k < 3; k++)
      MT_EQ_INT(out[k], (k + 1) * p * (p + 1) / 2);
}

/* Runs c (already named with mt_where), expects want, then checks what a
 * failed call must leave behind; a valid allreduce on works_on (if not NULL)
 * must succeed afterwards. */
static void expect_(int line, const call_t *c, rondo_status_t want, rondo_comm_t works_on)
{
  memset(rbuf, MT_POISON, rbytes);
  rondo_status_t st = run(c);
  mt_eq_status_((int)st, (int)want, coll_names[c->coll], line);
  if (st != RONDO_SUCCESS) {
    const char *err = rondo_last_error();
    MT_CHECK(err != NULL && err[0] != '\0', "rondo_last_error() after a failed call");
    mt_check_poison("recvbuf after the failed call", rbuf, rbytes);
  }
  if (works_on)
    still_works(works_on);
}
#define EXPECT(c, want) expect_(__LINE__, (c), (want), (c)->comm)

static int has_sendbuf(coll_t c)
{
  return c != BROADCAST && c != BARRIER;
}
static int has_op(coll_t c)
{
  return c == ALLREDUCE || c == ALLREDUCE_ALGO || c == REDUCE_SCATTER;
}

/* The same bad argument on every rank (its status everywhere), or on the
 * last rank only (its status there, RONDO_ERR_PEER elsewhere). */
static void argument_errors(rondo_comm_t w, int only_last)
{
  int bad = !only_last || mt.rank == mt.size - 1;
  const char *who = only_last ? "on the last rank only" : "on every rank";
#define BAD_CASE(coll_, what_, mutate, local)                                                      \
  do {                                                                                             \
    call_t c_ = valid_call((coll_), w);                                                            \
    mt_where("%s: %s %s", coll_names[coll_], (what_), who);                                        \
    if (bad) {                                                                                     \
      mutate;                                                                                      \
    }                                                                                              \
    EXPECT(&c_, bad ? (local) : RONDO_ERR_PEER);                                                   \
  } while (0)

  static const rondo_dtype_t bad_dtypes[] = {(rondo_dtype_t)99, RONDO_DTYPE_COUNT,
                                             (rondo_dtype_t)-1};
  static const rondo_op_t bad_ops[] = {(rondo_op_t)99, RONDO_OP_COUNT, (rondo_op_t)-1};
  static const rondo_algo_t bad_algos[] = {(rondo_algo_t)99, RONDO_ALGO_COUNT, (rondo_algo_t)-1};
  for (int k = 0; k < BARRIER; k++) {
    coll_t coll = (coll_t)k;
    if (has_sendbuf(coll))
      BAD_CASE(coll, "NULL sendbuf, count 8", c_.send = NULL, RONDO_ERR_NULL_BUFFER);
    BAD_CASE(coll, coll == BROADCAST ? "NULL buf, count 8" : "NULL recvbuf, count 8",
             c_.recv = NULL, RONDO_ERR_NULL_BUFFER);
    if (coll == ALLREDUCE)
      BAD_CASE(coll, "NULL sendbuf == recvbuf (in place), count 8",
               (c_.send = NULL, c_.recv = NULL), RONDO_ERR_NULL_BUFFER);
    for (size_t i = 0; i < 3; i++) {
      if (i > 0 && coll != ALLREDUCE)
        break; /* every bad value on one call, 99 on the rest */
      char what[64];
      snprintf(what, sizeof what, "dtype %d", (int)bad_dtypes[i]);
      BAD_CASE(coll, what, c_.dtype = bad_dtypes[i], RONDO_ERR_INVALID_DTYPE);
      if (has_op(coll) && (i == 0 || coll == ALLREDUCE)) {
        snprintf(what, sizeof what, "op %d", (int)bad_ops[i]);
        BAD_CASE(coll, what, c_.op = bad_ops[i], RONDO_ERR_INVALID_OP);
      }
    }
    if (coll == ALLREDUCE_ALGO)
      for (size_t i = 0; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof what, "algo %d", (int)bad_algos[i]);
        BAD_CASE(coll, what, c_.algo = bad_algos[i], RONDO_ERR_INVALID_ALGO);
      }
    BAD_CASE(coll, "count SIZE_MAX/2 float32",
             (c_.count = SIZE_MAX / 2, c_.recvcounts = counts_huge), RONDO_ERR_COUNT_OVERFLOW);
    if (coll == BROADCAST) {
      BAD_CASE(coll, "root = size", c_.root = mt.size, RONDO_ERR_INVALID_ROOT);
      BAD_CASE(coll, "root = -1", c_.root = -1, RONDO_ERR_INVALID_ROOT);
      BAD_CASE(coll, "root = INT_MAX", c_.root = INT_MAX, RONDO_ERR_INVALID_ROOT);
    }
    /* in place is recvbuf at this rank's block of sendbuf, or at its start:
     * 4 bytes in is neither */
    if (coll == REDUCE_SCATTER)
      BAD_CASE(coll, "recvbuf overlapping sendbuf 4 bytes in",
               c_.recv = (void *)((const unsigned char *)c_.send + 4), RONDO_ERR_INVALID_ARG);
  }
  /* sendcount must equal recvcounts[rank] */
  BAD_CASE(ALLGATHERV, "sendcount 7 != recvcounts[rank] 8", c_.count = N - 1,
           RONDO_ERR_INVALID_ARG);
#undef BAD_CASE
}

/* count x element size fits, but count x element size x comm size does not:
 * the whole receive (or send) buffer of these collectives cannot exist. */
static void total_overflow_errors(rondo_comm_t w)
{
  size_t q = SIZE_MAX / 4; /* x 4 bytes fits, x 4 bytes x 2 ranks does not */
  size_t *counts_quarter = mt_alloc((size_t)mt.size * sizeof *counts_quarter);
  for (int r = 0; r < mt.size; r++)
    counts_quarter[r] = q;
  coll_t colls[] = {ALLGATHER, ALLGATHERV, REDUCE_SCATTER, ALLTOALL};
  for (size_t k = 0; k < sizeof colls / sizeof colls[0]; k++) {
    call_t c = valid_call(colls[k], w);
    c.count = q;
    c.recvcounts = counts_quarter;
    mt_where("%s: count SIZE_MAX/4 float32 on %d ranks (total overflows)", coll_names[c.coll],
             mt.size);
    expect_(__LINE__, &c, RONDO_ERR_COUNT_OVERFLOW, NULL);
    if (colls[k] != ALLGATHERV && mt.size > 1) {
      char want[96];
      snprintf(want, sizeof want, "%zu bytes per rank x %d ranks overflows", q * 4, mt.size);
      MT_CHECK(strstr(rondo_last_error(), want) != NULL, "the message says what overflows: %s",
               rondo_last_error());
    }
    still_works(w);
  }
  free(counts_quarter);
}

/* Different valid arguments on ranks from..size-1: RONDO_ERR_MISMATCH
 * everywhere. */
static void mismatch_errors(rondo_comm_t w)
{
#define MISMATCH_CASE(from_, coll_, what_, mutate)                                                 \
  do {                                                                                             \
    call_t c_ = valid_call((coll_), w);                                                            \
    mt_where("%s: %s on ranks %d-%d", coll_names[coll_], what_, (from_), mt.size - 1);             \
    if (mt.rank >= (from_)) {                                                                      \
      mutate;                                                                                      \
    }                                                                                              \
    EXPECT(&c_, RONDO_ERR_MISMATCH);                                                               \
  } while (0)
  /* The last rank alone. */
  int last = mt.size - 1;
  MISMATCH_CASE(last, ALLREDUCE, "count 7 instead of 8", c_.count = N - 1);
  MISMATCH_CASE(last, ALLREDUCE, "dtype float64 instead of float32", c_.dtype = RONDO_FLOAT64);
  MISMATCH_CASE(last, ALLREDUCE, "dtype int32 instead of float32 (same size)",
                c_.dtype = RONDO_INT32);
  MISMATCH_CASE(last, ALLREDUCE, "op max instead of sum", c_.op = RONDO_MAX);
  MISMATCH_CASE(last, ALLREDUCE, "op avg instead of sum", c_.op = RONDO_AVG);
  MISMATCH_CASE(last, ALLREDUCE_ALGO, "algo recursive_doubling instead of ring",
                c_.algo = RONDO_ALGO_RECURSIVE_DOUBLING);
  MISMATCH_CASE(last, ALLREDUCE_ALGO, "count 0 instead of 8", c_.count = 0);
  MISMATCH_CASE(last, BROADCAST, "root 1 instead of 0", c_.root = 1);
  MISMATCH_CASE(last, BROADCAST, "count 9 instead of 8", c_.count = N + 1);
  MISMATCH_CASE(last, BROADCAST, "dtype int8 instead of float32", c_.dtype = RONDO_INT8);
  MISMATCH_CASE(last, ALLGATHER, "count 7 instead of 8", c_.count = N - 1);
  MISMATCH_CASE(last, REDUCE_SCATTER, "recvcount 7 instead of 8", c_.count = N - 1);
  MISMATCH_CASE(last, REDUCE_SCATTER, "op min instead of sum", c_.op = RONDO_MIN);
  MISMATCH_CASE(last, ALLTOALL, "dtype float16 instead of float32", c_.dtype = RONDO_FLOAT16);
  /* Same count and dtype, different collective. */
  MISMATCH_CASE(last, ALLGATHER, "rondo_alltoall instead of rondo_allgather",
                c_.coll = ALLTOALL);
  MISMATCH_CASE(last, ALLREDUCE_ALGO, "rondo_reduce_scatter instead of rondo_allreduce_algo",
                c_.coll = REDUCE_SCATTER);
  /* The upper half of the ranks against the lower: across hosts, ranks that
   * agree among themselves on each host, and the hosts disagree. */
  int half = mt.size / 2;
  MISMATCH_CASE(half, ALLREDUCE, "count 7 instead of 8", c_.count = N - 1);
  MISMATCH_CASE(half, ALLREDUCE, "op max instead of sum", c_.op = RONDO_MAX);
  MISMATCH_CASE(half, ALLREDUCE_ALGO, "algo rabenseifner instead of ring",
                c_.algo = RONDO_ALGO_RABENSEIFNER);
  MISMATCH_CASE(half, BROADCAST, "root 1 instead of 0", c_.root = 1);
#undef MISMATCH_CASE
  /* The mpi algorithm: across nodes a small call's data rides in the
   * check's packet (packet.c). Two such calls that differ; one that
   * rides against one too large to ride; after a valid call of 1 KiB (the
   * room is then 1 KiB), 800 bytes that ride against 1200 that do not, and
   * 800 bytes on the lower half of the ranks against 200 on the upper (on
   * two nodes of 2 each node agrees within, and where one rank a node
   * carries data from 387 bytes across, the first's stays home, the
   * second's crosses from every rank). */
  /* The all-gather's recursive doubling and the reduce-scatter's recursive
   * halving carry the check in their steps across nodes (ag_rd.c,
   * rs_halving.c): counts that differ on the last rank, and the upper half
   * against the lower, fail everywhere with recvbuf untouched; a valid call
   * rides after. */
  for (int k = 0; k < 3; k++) {
    int differs = k == 0 ? mt.rank == last : k == 1 ? mt.rank >= mt.size / 2 : 0;
    size_t count = differs ? N - 1 : N;
    mt_where("allgather by recursive_doubling: count %zu on %s, %d elsewhere", (size_t)N - 1,
             k == 0 ? "the last rank" : k == 1 ? "the upper half" : "no rank", N);
    for (int i = 0; i < mt.size * N; i++)
      ((float *)sbuf)[i] = (float)(mt.rank * 100 + i);
    memset(rbuf, MT_POISON, rbytes);
    rondo_status_t st = rondo_allgather_algo(w, sbuf, rbuf, count, RONDO_FLOAT32,
                                             RONDO_ALGO_RECURSIVE_DOUBLING);
    if (k < 2) {
      MT_EQ_STATUS(st, RONDO_ERR_MISMATCH);
      mt_check_poison("recvbuf after the failed call", rbuf, rbytes);
      still_works(w);
    } else if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
      for (int q = 0; q < mt.size; q++)
        for (int i = 0; i < N; i++)
          MT_CHECK(((float *)rbuf)[q * N + i] == (float)(q * 100 + i),
                   "block %d element %d: %g", q, i, (double)((float *)rbuf)[q * N + i]);
    }
    /* the reduce-scatter's recursive halving likewise (rs_halving.c) */
    mt_where("reduce_scatter by recursive_halving: recvcount %zu on %s, %d elsewhere",
             (size_t)N - 1, k == 0 ? "the last rank" : k == 1 ? "the upper half" : "no rank", N);
    memset(rbuf, MT_POISON, rbytes);
    st = rondo_reduce_scatter_algo(w, sbuf, rbuf, count, RONDO_FLOAT32, RONDO_SUM,
                                   RONDO_ALGO_RECURSIVE_HALVING);
    if (k < 2) {
      MT_EQ_STATUS(st, RONDO_ERR_MISMATCH);
      mt_check_poison("recvbuf after the failed call", rbuf, rbytes);
      still_works(w);
    } else if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
      for (int i = 0; i < N; i++) { /* sum over ranks q of q * 100 + (rank * N + i) */
        float want = (float)(100 * mt.size * (mt.size - 1) / 2 + mt.size * (mt.rank * N + i));
        MT_CHECK(((float *)rbuf)[i] == want, "element %d: %g, expected %g", i,
                 (double)((float *)rbuf)[i], (double)want);
      }
    }
  }
  size_t counts[][2] = {{N, N - 1}, {N, BIG_N}, {200, 300}, {200, 50}};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    call_t c = valid_call(ALLREDUCE_ALGO, w);
    c.algo = RONDO_ALGO_MPI;
    if (k >= 2) {
      c.count = 256;
      mt_where("mpi: count 256 on every rank");
      EXPECT(&c, RONDO_SUCCESS);
    }
    int upper = k == 3 ? mt.rank >= mt.size / 2 : mt.rank == last;
    c.count = counts[k][upper];
    mt_where("mpi: count %zu on %s, %zu on the others", counts[k][1],
             k == 3 ? "the upper half" : "the last rank", counts[k][0]);
    EXPECT(&c, RONDO_ERR_MISMATCH);
  }
}

/* A valid shm all-reduce of 5 elements of x ((rank + 1) everywhere) works. */
static void shm_still_works(rondo_comm_t w, const float *x, float *y)
{
  float want = (float)(mt.size * (mt.size + 1) / 2);
  if (MT_EQ_STATUS(rondo_allreduce_algo(w, x, y, 5, RONDO_FLOAT32, RONDO_SUM, RONDO_ALGO_SHM),
                   RONDO_SUCCESS))
    MT_CHECK(y[0] == want && y[4] == want, "shm afterwards: %g", (double)y[0]);
}

/* The shm all-reduce agrees in its first round, with the data (agree.c,
 * shm.c). Mismatches that put ranks on that path and others on the separate
 * check, or make one rank fail its own arguments, still fail on every rank,
 * and the comm's shm sequence stays in step: a valid shm call follows each. */
static void folded_agreement(rondo_comm_t w)
{
  int last = mt.rank == mt.size - 1;
  enum { BIG = 1 << 18 };
  float *x = mt_alloc(BIG * sizeof *x), *y = mt_alloc(BIG * sizeof *y);
  for (int i = 0; i < BIG; i++)
    x[i] = (float)(mt.rank + 1);
  mt_where("shm: a first call makes the window");
  shm_still_works(w, x, y);
  mt_where("shm forced, count 5 vs 6 on the last rank (both agree in shm's first round)");
  MT_EQ_STATUS(rondo_allreduce_algo(w, x, y, last ? 6 : 5, RONDO_FLOAT32, RONDO_SUM, RONDO_ALGO_SHM),
               RONDO_ERR_MISMATCH);
  shm_still_works(w, x, y);
  mt_where("auto, count 5 vs 2^18 on the last rank (shm here, another algorithm there)");
  MT_EQ_STATUS(rondo_allreduce(w, x, y, last ? BIG : 5, RONDO_FLOAT32, RONDO_SUM),
               RONDO_ERR_MISMATCH);
  MT_CHECK(strstr(rondo_last_error(), "count") != NULL, "the message names the count: %s",
           rondo_last_error());
  shm_still_works(w, x, y);
  mt_where("shm on the others, ring on the last rank (the folded check meets the separate one)");
  MT_EQ_STATUS(rondo_allreduce_algo(w, x, y, 5, RONDO_FLOAT32, RONDO_SUM,
                                    last ? RONDO_ALGO_RING : RONDO_ALGO_SHM),
               RONDO_ERR_MISMATCH);
  MT_CHECK(strstr(rondo_last_error(), "algorithm") != NULL, "the message names the algorithm: %s",
           rondo_last_error());
  shm_still_works(w, x, y);
  mt_where("shm forced, a NULL recvbuf on the last rank");
  MT_EQ_STATUS(rondo_allreduce_algo(w, x, last ? NULL : y, 5, RONDO_FLOAT32, RONDO_SUM,
                                    RONDO_ALGO_SHM),
               last ? RONDO_ERR_NULL_BUFFER : RONDO_ERR_PEER);
  shm_still_works(w, x, y);
  mt_where("rondo_barrier on the last rank, an shm all-reduce on the others");
  rondo_status_t st = last ? rondo_barrier(w)
                           : rondo_allreduce_algo(w, x, y, 5, RONDO_FLOAT32, RONDO_SUM,
                                                  RONDO_ALGO_SHM);
  MT_EQ_STATUS(st, RONDO_ERR_MISMATCH);
  shm_still_works(w, x, y);
  free(x);
  free(y);
}

/* Across nodes Rabenseifner's halving carries the check (exchange.c):
 * data moves before the check has passed. Ranks whose calls differ still
 * exchange, and drop, each other's data; a failed call leaves recvbuf as it
 * was, in place too; and a valid call gives the sum afterwards. */
static void riding_agreement(rondo_comm_t w)
{
  int last = mt.rank == mt.size - 1, upper = mt.rank >= mt.size / 2;
  struct {
    const char *what;
    size_t count;    /* on the ranks that differ; N on the others */
    int only_last;   /* else the upper half differs */
    int in_place;
    rondo_algo_t algo; /* on the ranks that differ */
    rondo_status_t want_there; /* on the ranks that differ (the others: want_here) */
    rondo_status_t want_here;
  } cases[] = {
      {"count 7 instead of 8 on the last rank", N - 1, 1, 0, RONDO_ALGO_RABENSEIFNER,
       RONDO_ERR_MISMATCH, RONDO_ERR_MISMATCH},
      {"count 7 instead of 8 on the upper half", N - 1, 0, 0, RONDO_ALGO_RABENSEIFNER,
       RONDO_ERR_MISMATCH, RONDO_ERR_MISMATCH},
      {"count 8192 instead of 8 on the upper half, in place", BIG_N, 0, 1,
       RONDO_ALGO_RABENSEIFNER, RONDO_ERR_MISMATCH, RONDO_ERR_MISMATCH},
      {"count 12000 instead of 8 on the last rank", MID_N, 1, 0, RONDO_ALGO_RABENSEIFNER,
       RONDO_ERR_MISMATCH, RONDO_ERR_MISMATCH},
      {"count 7 instead of 8 on the last rank, in place", N - 1, 1, 1, RONDO_ALGO_RABENSEIFNER,
       RONDO_ERR_MISMATCH, RONDO_ERR_MISMATCH},
      /* below p' elements: blocks of one element or none, empty messages */
      {"count 1 instead of 8 on the upper half", 1, 0, 0, RONDO_ALGO_RABENSEIFNER,
       RONDO_ERR_MISMATCH, RONDO_ERR_MISMATCH},
      {"mpi (riding in the packet) on the last rank", N, 1, 0, RONDO_ALGO_MPI,
       RONDO_ERR_MISMATCH, RONDO_ERR_MISMATCH},
      {"ring on the upper half", N, 0, 0, RONDO_ALGO_RING, RONDO_ERR_MISMATCH,
       RONDO_ERR_MISMATCH},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int differs = cases[k].only_last ? last : upper;
    call_t c = valid_call(ALLREDUCE_ALGO, w);
    c.algo = differs ? cases[k].algo : RONDO_ALGO_RABENSEIFNER;
    c.count = differs ? cases[k].count : N;
    if (cases[k].in_place)
      c.send = c.recv;
    mt_where("rabenseifner across nodes: %s", cases[k].what);
    EXPECT(&c, differs ? cases[k].want_there : cases[k].want_here);
  }
  call_t c = valid_call(ALLREDUCE_ALGO, w);
  c.algo = RONDO_ALGO_RABENSEIFNER;
  mt_where("rabenseifner across nodes: a NULL recvbuf on the last rank");
  if (last)
    c.recv = NULL;
  EXPECT(&c, last ? RONDO_ERR_NULL_BUFFER : RONDO_ERR_PEER);
  mt_where("rabenseifner across nodes: rondo_barrier on the last rank");
  c = valid_call(last ? BARRIER : ALLREDUCE_ALGO, w);
  c.algo = RONDO_ALGO_RABENSEIFNER;
  EXPECT(&c, RONDO_ERR_MISMATCH);
  /* and then a valid one, in place and not, of N, of BIG_N, of MID_N and
   * of 1 element (below p': empty blocks) */
  for (int k = 0; k < 8; k++) {
    size_t n = k < 2 ? N : k < 4 ? BIG_N : k < 6 ? MID_N : 1;
    float *x = mt_alloc(n * sizeof *x), *y = mt_alloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++)
      x[i] = (float)((mt.rank + 1) * (int)(i % 7 + 1));
    mt_where("rabenseifner across nodes: a valid call of %zu, %s", n,
             k % 2 ? "in place" : "out of place");
    rondo_status_t st = rondo_allreduce_algo(w, x, k % 2 ? x : y, n, RONDO_FLOAT32, RONDO_SUM,
                                             RONDO_ALGO_RABENSEIFNER);
    const float *r = k % 2 ? x : y;
    if (MT_EQ_STATUS(st, RONDO_SUCCESS))
      for (size_t i = 0; i < n; i++)
        if (r[i] != (float)(mt.size * (mt.size + 1) / 2 * (int)(i % 7 + 1))) {
          MT_CHECK(0, "element %zu: %g", i, (double)r[i]);
          break;
        }
    free(x);
    free(y);
  }
}

/* NULL comm, and a destroyed comm's stale handle. */
static void comm_errors(void)
{
  for (int k = 0; k < NCOLLS; k++) {
    call_t c = valid_call((coll_t)k, NULL);
    mt_where("%s: NULL comm", coll_names[k]);
    EXPECT(&c, RONDO_ERR_INVALID_COMM);
  }
  mt_where("queries on a NULL comm");
  MT_QUERIES_REFUSED(NULL, RONDO_ERR_INVALID_COMM);
  /* a NULL output pointer, on a live comm */
  MT_EQ_STATUS(rondo_comm_rank(rondo_world(), NULL), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_size(rondo_world(), NULL), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_local_rank(rondo_world(), NULL), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_local_size(rondo_world(), NULL), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_node_count(rondo_world(), NULL), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_node_id(rondo_world(), NULL), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_mpi(rondo_world(), NULL), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_set_timeout(NULL, 1), RONDO_ERR_INVALID_COMM);
  MT_EQ_STATUS(rondo_comm_set_timeout(rondo_world(), -1), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_set_timeout(rondo_world(), NAN), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_set_timeout(rondo_world(), 2e6), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_set_timeout(rondo_world(), 0), RONDO_SUCCESS);
  MT_CHECK(strstr(rondo_launcher(), "MPI launcher") != NULL ||
               strstr(rondo_launcher(), "one process") != NULL,
           "rondo_launcher() under mpiexec: '%s'", rondo_launcher());
  rondo_algo_t algo = RONDO_ALGO_COUNT;
  MT_EQ_STATUS(rondo_allreduce_choice(NULL, N, RONDO_FLOAT32, RONDO_SUM, &algo),
               RONDO_ERR_INVALID_COMM);
  rondo_comm_t none = NULL;
  MT_EQ_STATUS(rondo_comm_destroy(&none), RONDO_ERR_INVALID_COMM);
  rondo_status_t st = rondo_comm_destroy(NULL);
  MT_CHECK(st == RONDO_ERR_INVALID_ARG || st == RONDO_ERR_INVALID_COMM,
           "rondo_comm_destroy(NULL) returned %s", mt_status_name(st));

  mt_where("rondo_comm_create(MPI_COMM_WORLD) then destroy");
  rondo_comm_t c = NULL;
  if (!MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS) || c == NULL) {
    MT_CHECK(c != NULL, "rondo_comm_create set *comm");
    return;
  }
  rondo_comm_t stale = c;
  still_works(c);
  MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
  MT_CHECK(c == NULL, "rondo_comm_destroy sets *comm to NULL");
  for (int k = 0; k < NCOLLS; k++) {
    call_t call = valid_call((coll_t)k, stale);
    mt_where("%s: a destroyed comm's stale handle", coll_names[k]);
    expect_(__LINE__, &call, RONDO_ERR_INVALID_COMM, NULL);
  }
  mt_where("queries and destroy on a stale handle");
  MT_QUERIES_REFUSED(stale, RONDO_ERR_INVALID_COMM);
  MT_EQ_STATUS(rondo_comm_destroy(&stale), RONDO_ERR_INVALID_COMM);
}

static void status_strings(void)
{
  mt_where("status strings");
#define CHECK_STATUS(name, value, msg)                                                             \
  MT_EQ_INT(RONDO_##name, value);                                                                  \
  MT_EQ_STR(rondo_status_string(RONDO_##name), msg);                                               \
  MT_EQ_STR(rondo_status_name(RONDO_##name), "RONDO_" #name);
  RONDO_STATUS_MAP(CHECK_STATUS)
#undef CHECK_STATUS
  for (int s = 0; s < RONDO_STATUS_COUNT; s++) {
    const char *str = rondo_status_string((rondo_status_t)s);
    MT_CHECK(str != NULL && str[0] != '\0' && strcmp(str, "unknown status") != 0,
             "rondo_status_string(%d) = \"%s\"", s, str ? str : "(NULL)");
  }
  int outside[] = {RONDO_STATUS_COUNT, -1, 999};
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
    MT_EQ_STR(rondo_status_string((rondo_status_t)outside[i]), "unknown status");
    MT_EQ_STR(rondo_status_name((rondo_status_t)outside[i]), "RONDO_UNKNOWN");
  }
}

int main(int argc, char **argv)
{
  if (mt_rondo_start(&argc, &argv, "test_errors") != 0)
    return 1;
  rondo_comm_t w = rondo_world();
  MT_CHECK(w != NULL, "rondo_world() after rondo_init");
  mt_where("before any failed call");
  MT_EQ_STR(rondo_last_error(), "");

  rbytes = ((size_t)mt.size * N + BIG_N + MT_GUARD) * 8;
  sbuf = mt_alloc(rbytes);
  rbuf = mt_alloc(rbytes);
  memset(sbuf, 0, rbytes);
  counts_n = mt_alloc((size_t)mt.size * sizeof *counts_n);
  counts_huge = mt_alloc((size_t)mt.size * sizeof *counts_huge);
  for (int r = 0; r < mt.size; r++) {
    counts_n[r] = N;
    counts_huge[r] = SIZE_MAX / 2;
  }

  status_strings();
  if (w) {
    argument_errors(w, 0);
    if (mt.size >= 2)
      total_overflow_errors(w);
    comm_errors();
    if (mt.size >= 2) {
      argument_errors(w, 1);
      mismatch_errors(w);
      if (MT_QUERY(rondo_comm_node_count, w) == 1)
        folded_agreement(w);
      else
        riding_agreement(w);
    }
  }

  free(sbuf);
  free(rbuf);
  free(counts_n);
  free(counts_huge);
  int rc = mt_finish();
  rondo_finalize();
  return rc;
}
