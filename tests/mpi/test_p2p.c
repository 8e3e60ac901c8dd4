/*
 * test_p2p: what bindings build framework process groups from.
 *   - point-to-point (rondo_isend, rondo_irecv, rondo_p2p_wait): every
 *     dtype, counts 0/1/prime/large, a ring and all pairs, tags kept apart,
 *     order within a tag, RONDO_ANY_SOURCE with the sender reported, a
 *     count that differs (both counts named), bad arguments;
 *   - rondo_comm_subset: every subset of up to 4 ranks made by its members
 *     alone, collectives on it, bad lists;
 *   - completion queues: requests complete into the queue in completion
 *     order, not submission order; requests added after submission, in
 *     flight or complete; timeout; close; destroy refused while requests
 *     are in flight.
 */
#include "mpitest.h"

#include <time.h>

/* ---- point-to-point ---------------------------------------------------------------- */

static void p2p_ring(rondo_comm_t w)
{
  int p = mt.size, r = mt.rank, right = (r + 1) % p, left = (r + p - 1) % p;
  size_t counts[] = {0, 1, 7, 1021, 1 << 17};
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++)
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      size_t n = counts[c], es = mt_dtype_size((rondo_dtype_t)dt);
      if (n > 1021 && dt != RONDO_FLOAT32)
        continue;
      mt_where("ring %s count %zu", mt_dtype_str((rondo_dtype_t)dt), n);
      char *out = mt_alloc(n * es + 1), *in = mt_alloc(n * es + 1), *want = mt_alloc(n * es + 1);
      mt_fill_pattern(out, n * es, (uint64_t)r * 977 + c);
      mt_fill_pattern(want, n * es, (uint64_t)left * 977 + c);
      memset(in, MT_POISON, n * es + 1);
      rondo_p2p_t rq = NULL, sq = NULL;
      MT_EQ_STATUS(rondo_irecv(w, in, n, (rondo_dtype_t)dt, left, 5, &rq), RONDO_SUCCESS);
      MT_EQ_STATUS(rondo_isend(w, out, n, (rondo_dtype_t)dt, right, 5, &sq), RONDO_SUCCESS);
      int from = -7;
      MT_EQ_STATUS(rondo_p2p_wait(&sq, &from), RONDO_SUCCESS);
      MT_EQ_INT(from, right);
      MT_EQ_STATUS(rondo_p2p_wait(&rq, &from), RONDO_SUCCESS);
      MT_EQ_INT(from, left);
      MT_CHECK(rq == NULL && sq == NULL, "the waits cleared the handles");
      MT_CHECK(memcmp(in, want, n * es) == 0, "the ring's data arrived intact");
      mt_check_poison("past the received elements", in + n * es, 1);
      free(out);
      free(in);
      free(want);
    }
}

/* Every ordered pair, two tags posted in the opposite order on the receiver,
 * and three messages of one tag that must arrive in order. */
static void p2p_pairs_tags_order(rondo_comm_t w)
{
  int p = mt.size, r = mt.rank;
  for (int a = 0; a < p; a++)
    for (int b = 0; b < p; b++) {
      if (a == b || (r != a && r != b))
        continue;
      mt_where("pair %d -> %d", a, b);
      int32_t v[5], got[5] = {0};
      if (r == a) {
        rondo_p2p_t q[5];
        for (int i = 0; i < 5; i++) {
          v[i] = 1000 * a + 10 * b + i;
          /* tags: 1, 2, then three of tag 3 */
          MT_EQ_STATUS(rondo_isend(w, &v[i], 1, RONDO_INT32, b, i < 2 ? i + 1 : 3, &q[i]),
                       RONDO_SUCCESS);
        }
        for (int i = 0; i < 5; i++)
          MT_EQ_STATUS(rondo_p2p_wait(&q[i], NULL), RONDO_SUCCESS);
      } else {
        rondo_p2p_t q[5];
        /* tag 2 first, then tag 1: tags keep them apart */
        MT_EQ_STATUS(rondo_irecv(w, &got[1], 1, RONDO_INT32, a, 2, &q[1]), RONDO_SUCCESS);
        MT_EQ_STATUS(rondo_irecv(w, &got[0], 1, RONDO_INT32, a, 1, &q[0]), RONDO_SUCCESS);
        for (int i = 2; i < 5; i++)
          MT_EQ_STATUS(rondo_irecv(w, &got[i], 1, RONDO_INT32, a, 3, &q[i]), RONDO_SUCCESS);
        for (int i = 4; i >= 0; i--)
          MT_EQ_STATUS(rondo_p2p_wait(&q[i], NULL), RONDO_SUCCESS);
        for (int i = 0; i < 5; i++)
          MT_EQ_INT(got[i], 1000 * a + 10 * b + i);
      }
    }
}

/* Rank 0 receives one message from every other rank with RONDO_ANY_SOURCE. */
static void p2p_any_source(rondo_comm_t w)
{
  mt_where("any source");
  if (mt.rank != 0) {
    int64_t v = 100 + mt.rank;
    rondo_p2p_t q;
    MT_EQ_STATUS(rondo_isend(w, &v, 1, RONDO_INT64, 0, 9, &q), RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_SUCCESS);
    return;
  }
  int seen = 0;
  for (int i = 1; i < mt.size; i++) {
    int64_t v = 0;
    int from = -1;
    rondo_p2p_t q;
    MT_EQ_STATUS(rondo_irecv(w, &v, 1, RONDO_INT64, RONDO_ANY_SOURCE, 9, &q), RONDO_SUCCESS);
    int done = -1;
    MT_EQ_STATUS(rondo_p2p_test(q, &done), RONDO_SUCCESS);
    MT_CHECK(done == 0 || done == 1, "rondo_p2p_test says 0 or 1 (%d)", done);
    MT_EQ_STATUS(rondo_p2p_wait(&q, &from), RONDO_SUCCESS);
    MT_CHECK(from >= 1 && from < mt.size && v == 100 + from,
             "the value (%lld) is the one rank %d sent", (long long)v, from);
    seen |= 1 << from;
  }
  MT_EQ_INT(seen, ((1 << mt.size) - 1) & ~1);
}

/* A receive of another count: both counts in the message; a longer message
 * is refused as truncated. The receiver's buffer past its count is intact. */
static void p2p_count_mismatch(rondo_comm_t w)
{
  if (mt.size < 2 || mt.rank > 1)
    return;
  mt_where("count mismatch");
  float v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, in[8];
  for (int round = 0; round < 2; round++) {
    /* round 0: 3 sent, 4 expected; round 1: 5 sent, 4 expected */
    size_t sent = round == 0 ? 3 : 5;
    rondo_p2p_t q;
    if (mt.rank == 0) {
      MT_EQ_STATUS(rondo_isend(w, v, sent, RONDO_FLOAT32, 1, 0, &q), RONDO_SUCCESS);
      MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_SUCCESS);
      continue;
    }
    memset(in, MT_POISON, sizeof in);
    MT_EQ_STATUS(rondo_irecv(w, in, 4, RONDO_FLOAT32, 0, 0, &q), RONDO_SUCCESS);
    rondo_status_t st = rondo_p2p_wait(&q, NULL);
    if (round == 0) {
      MT_EQ_STATUS(st, RONDO_ERR_MISMATCH);
      MT_CHECK(strstr(rondo_last_error(), "12 bytes") != NULL &&
                   strstr(rondo_last_error(), "expected 4 elements") != NULL,
               "the message names both counts: %s", rondo_last_error());
    } else {
      MT_EQ_STATUS(st, RONDO_ERR_TRUNCATED);
      MT_CHECK(strstr(rondo_last_error(), "4 elements") != NULL, "message: %s",
               rondo_last_error());
    }
    MT_CHECK(q == NULL, "a failed wait frees the request too");
    mt_check_poison("past the receive's count", in + 4, 4 * sizeof(float));
  }
}

static void p2p_bad_arguments(rondo_comm_t w)
{
  mt_where("p2p bad arguments");
  float x = 0;
  rondo_p2p_t q = (rondo_p2p_t)&x;
  MT_EQ_STATUS(rondo_isend(w, &x, 1, RONDO_FLOAT32, mt.size, 0, &q), RONDO_ERR_INVALID_ARG);
  MT_CHECK(q == NULL, "a refused start clears *req");
  MT_EQ_STATUS(rondo_isend(w, &x, 1, RONDO_FLOAT32, RONDO_ANY_SOURCE, 0, &q),
               RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_irecv(w, &x, 1, RONDO_FLOAT32, -2, 0, &q), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_isend(w, &x, 1, RONDO_FLOAT32, 0, RONDO_TAG_MAX + 1, &q),
               RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_isend(w, &x, 1, RONDO_FLOAT32, 0, -1, &q), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_isend(w, NULL, 1, RONDO_FLOAT32, 0, 0, &q), RONDO_ERR_NULL_BUFFER);
  MT_EQ_STATUS(rondo_isend(w, &x, 1, (rondo_dtype_t)99, 0, 0, &q), RONDO_ERR_INVALID_DTYPE);
  MT_EQ_STATUS(rondo_isend(w, &x, 1, RONDO_FLOAT32, 0, 0, NULL), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_isend(NULL, &x, 1, RONDO_FLOAT32, 0, 0, &q), RONDO_ERR_INVALID_COMM);
  MT_EQ_STATUS(rondo_p2p_wait(NULL, NULL), RONDO_ERR_INVALID_ARG);
  q = NULL;
  MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_ERR_INVALID_ARG);
  int done;
  MT_EQ_STATUS(rondo_p2p_test(NULL, &done), RONDO_ERR_INVALID_ARG);
  /* a message to itself, count 0 */
  rondo_p2p_t a, b;
  MT_EQ_STATUS(rondo_irecv(w, NULL, 0, RONDO_INT8, mt.rank, 7, &a), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_isend(w, NULL, 0, RONDO_INT8, mt.rank, 7, &b), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_p2p_wait(&b, NULL), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_p2p_wait(&a, NULL), RONDO_SUCCESS);
}

/* rondo's own collectives on the comm do not take user messages: a message
 * posted before an all-reduce is received after it, intact. */
static void p2p_apart_from_collectives(rondo_comm_t w)
{
  if (mt.size < 2)
    return;
  mt_where("p2p and collectives");
  int p = mt.size, r = mt.rank;
  double v = 3.5 + r, got = 0, sum = 1, total = 0;
  rondo_p2p_t s, q;
  MT_EQ_STATUS(rondo_isend(w, &v, 1, RONDO_FLOAT64, (r + 1) % p, 0, &s), RONDO_SUCCESS);
  for (int algo = RONDO_ALGO_RING; algo <= RONDO_ALGO_RABENSEIFNER; algo++)
    MT_EQ_STATUS(rondo_allreduce_algo(w, &sum, &total, 1, RONDO_FLOAT64, RONDO_SUM,
                                      (rondo_algo_t)algo),
                 RONDO_SUCCESS);
  MT_CHECK(total == p, "the all-reduce is right (%g)", total);
  MT_EQ_STATUS(rondo_irecv(w, &got, 1, RONDO_FLOAT64, (r + p - 1) % p, 0, &q), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_p2p_wait(&s, NULL), RONDO_SUCCESS);
  MT_CHECK(got == 3.5 + (r + p - 1) % p, "the message arrived intact (%g)", got);
}

/* The comm's timeout (rondo_comm_set_timeout) ends a wait with
 * RONDO_ERR_STALLED naming the peer and the tag. A receive is withdrawn and
 * the late message goes to the next receive; a send stays open and
 * completes when the receive comes. Ranks 0 and 1, on a comm of their own. */
static void p2p_timeouts(rondo_comm_t w)
{
  if (mt.size < 2)
    return;
  mt_where("p2p timeouts");
  rondo_comm_t c = NULL;
  MT_EQ_STATUS(rondo_comm_split(w, mt.rank < 2 ? 0 : -1, 0, &c), RONDO_SUCCESS);
  if (mt.rank >= 2) {
    MT_CHECK(c == NULL, "a negative color gets no comm");
    return;
  }
  MT_EQ_STATUS(rondo_comm_set_timeout(c, 0.3), RONDO_SUCCESS);
  double one = 1, sum = 0;
  /* a receive that times out, then the late message */
  int v = 0;
  rondo_p2p_t q = NULL;
  if (mt.rank == 1) {
    MT_EQ_STATUS(rondo_irecv(c, &v, 1, RONDO_INT32, 0, 5, &q), RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_ERR_STALLED);
    MT_CHECK(strstr(rondo_last_error(), "no message from rank 0 with tag 5") != NULL &&
                 strstr(rondo_last_error(), "0.3 s") != NULL,
             "the message names the rank, the tag and the timeout: %s", rondo_last_error());
    MT_CHECK(q == NULL, "a withdrawn receive is freed");
    MT_EQ_STATUS(rondo_irecv(c, &v, 1, RONDO_INT32, RONDO_ANY_SOURCE, 5, &q), RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_ERR_STALLED);
    MT_CHECK(strstr(rondo_last_error(), "no message from any rank with tag 5") != NULL,
             "message: %s", rondo_last_error());
  }
  MT_EQ_STATUS(rondo_allreduce(c, &one, &sum, 1, RONDO_FLOAT64, RONDO_SUM), RONDO_SUCCESS);
  int late = 42;
  if (mt.rank == 0) {
    MT_EQ_STATUS(rondo_isend(c, &late, 1, RONDO_INT32, 1, 5, &q), RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_SUCCESS);
  } else {
    MT_EQ_STATUS(rondo_irecv(c, &v, 1, RONDO_INT32, 0, 5, &q), RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_SUCCESS);
    MT_EQ_INT(v, 42);
  }
  /* a send that times out (too big for MPI to send before the receive),
   * waited on again once the receive is posted */
  enum { N = 1 << 18 };
  int *big = malloc(N * sizeof *big);
  MT_CHECK(big != NULL, "memory");
  if (big == NULL)
    return;
  for (int i = 0; i < N; i++)
    big[i] = mt.rank == 0 ? i * 7 : -1;
  if (mt.rank == 0) {
    MT_EQ_STATUS(rondo_isend(c, big, N, RONDO_INT32, 1, 6, &q), RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_ERR_STALLED);
    MT_CHECK(strstr(rondo_last_error(), "rank 1 has not received the message with tag 6") !=
                 NULL,
             "the message names the rank and the tag: %s", rondo_last_error());
    MT_CHECK(q != NULL, "a send that timed out stays open");
  }
  MT_EQ_STATUS(rondo_allreduce(c, &one, &sum, 1, RONDO_FLOAT64, RONDO_SUM), RONDO_SUCCESS);
  if (mt.rank == 0) {
    MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_SUCCESS);
    MT_CHECK(q == NULL, "the second wait completes the send");
  } else {
    MT_EQ_STATUS(rondo_irecv(c, big, N, RONDO_INT32, 0, 6, &q), RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_p2p_wait(&q, NULL), RONDO_SUCCESS);
    int bad = 0;
    for (int i = 0; i < N; i++)
      bad += big[i] != i * 7;
    MT_EQ_INT(bad, 0);
  }
  free(big);
  MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
}

/* ---- subsets ----------------------------------------------------------------------- */

static void subsets(rondo_comm_t w)
{
  int p = mt.size;
  /* every non-empty subset (p <= 5: at most 31), members only call */
  for (int mask = 1; mask < (1 << p); mask++) {
    if (!(mask >> mt.rank & 1))
      continue;
    int ranks[8], n = 0;
    /* the list in descending order: the new ranks follow the list */
    for (int q = p - 1; q >= 0; q--)
      if (mask >> q & 1)
        ranks[n++] = q;
    mt_where("subset %#x", mask);
    rondo_comm_t sub = NULL;
    if (!MT_EQ_STATUS(rondo_comm_subset(w, ranks, n, &sub), RONDO_SUCCESS))
      continue;
    int me = -1, size = -1, want = 0;
    while (ranks[want] != mt.rank)
      want++;
    MT_EQ_STATUS(rondo_comm_rank(sub, &me), RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_comm_size(sub, &size), RONDO_SUCCESS);
    MT_EQ_INT(me, want);
    MT_EQ_INT(size, n);
    int64_t x = mt.rank, s = 0;
    MT_EQ_STATUS(rondo_allreduce(sub, &x, &s, 1, RONDO_INT64, RONDO_SUM), RONDO_SUCCESS);
    int64_t expect = 0;
    for (int i = 0; i < n; i++)
      expect += ranks[i];
    MT_EQ_INT(s, expect);
    MT_EQ_STATUS(rondo_comm_destroy(&sub), RONDO_SUCCESS);
  }
  mt_where("subset bad lists");
  rondo_comm_t sub = (rondo_comm_t)&p;
  int bad[2] = {mt.rank, mt.rank};
  MT_EQ_STATUS(rondo_comm_subset(w, bad, 2, &sub), RONDO_ERR_INVALID_ARG);
  MT_CHECK(sub == NULL, "a refused subset clears *newcomm");
  if (p > 1)
    MT_CHECK(strstr(rondo_last_error(), "twice") != NULL, "message: %s", rondo_last_error());
  int out[1] = {p};
  MT_EQ_STATUS(rondo_comm_subset(w, out, 1, &sub), RONDO_ERR_INVALID_ARG);
  if (p > 1) {
    int other[1] = {(mt.rank + 1) % p};
    MT_EQ_STATUS(rondo_comm_subset(w, other, 1, &sub), RONDO_ERR_INVALID_ARG);
    MT_CHECK(strstr(rondo_last_error(), "not in the list") != NULL, "message: %s",
             rondo_last_error());
  }
  MT_EQ_STATUS(rondo_comm_subset(w, NULL, 1, &sub), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_subset(w, bad, 0, &sub), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_comm_subset(w, bad, 1, NULL), RONDO_ERR_INVALID_ARG);
}

/* ---- completion queues ------------------------------------------------------------- */

static void queues(rondo_comm_t w)
{
  mt_where("queue");
  rondo_queue_t q = NULL;
  MT_EQ_STATUS(rondo_queue_create(&q), RONDO_SUCCESS);
  rondo_request_t got = (rondo_request_t)&q;
  /* empty: the timeout runs out */
  MT_EQ_STATUS(rondo_queue_wait(q, 0.01, &got), RONDO_SUCCESS);
  MT_CHECK(got == NULL, "an empty queue times out with NULL");
  /* Two requests: "late" submitted first, but rank 0 submits it only after
   * "early" completed, so "early" reaches the queue first. */
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.queue = q;
  float a = 1, b = 2;
  rondo_request_t late = NULL, early = NULL;
  if (mt.rank != 0)
    MT_EQ_STATUS(rondo_allreduce_async(w, "q.late", &a, &a, 1, RONDO_FLOAT32, RONDO_SUM, &o, &late),
                 RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_allreduce_async(w, "q.early", &b, &b, 1, RONDO_FLOAT32, RONDO_SUM, &o, &early),
               RONDO_SUCCESS);
  rondo_request_t first = NULL;
  MT_EQ_STATUS(rondo_queue_wait(q, -1, &first), RONDO_SUCCESS);
  MT_CHECK(first == early, "the request that completed first comes first");
  /* destroy is refused while "late" is in flight (or queued) */
  if (mt.rank != 0) {
    MT_EQ_STATUS(rondo_queue_destroy(&q), RONDO_ERR_INVALID_ARG);
    MT_CHECK(q != NULL, "a refused destroy keeps the queue");
  }
  if (mt.rank == 0)
    MT_EQ_STATUS(rondo_allreduce_async(w, "q.late", &a, &a, 1, RONDO_FLOAT32, RONDO_SUM, &o, &late),
                 RONDO_SUCCESS);
  rondo_request_t second = NULL;
  MT_EQ_STATUS(rondo_queue_wait(q, 60, &second), RONDO_SUCCESS);
  MT_CHECK(second == late, "then the other");
  MT_EQ_STATUS(rondo_wait(&early), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_wait(&late), RONDO_SUCCESS);
  MT_CHECK(a == mt.size && b == 2 * mt.size, "both results are right (%g, %g)", a, b);
  /* a failed request (a refusal) arrives too, with its status at the wait */
  MT_EQ_STATUS(rondo_refuse_async(w, "q.refused", "test refusal", &o, &late), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_queue_wait(q, 60, &second), RONDO_SUCCESS);
  MT_CHECK(second == late, "the refused request arrives");
  MT_EQ_STATUS(rondo_wait(&late), RONDO_ERR_INVALID_ARG);
  /* rondo_queue_add: a request submitted without a queue, added while in
   * flight (rank 0 submits only after the add) and after completing */
  rondo_async_opts_t plain = RONDO_ASYNC_OPTS_INIT;
  a = 1;
  if (mt.rank != 0) {
    MT_EQ_STATUS(rondo_allreduce_async(w, "q.added", &a, &a, 1, RONDO_FLOAT32, RONDO_SUM, &plain,
                                       &late),
                 RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_queue_add(q, late), RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_queue_add(q, late), RONDO_ERR_INVALID_ARG); /* on a queue already */
  }
  MT_EQ_STATUS(rondo_barrier(w), RONDO_SUCCESS);
  if (mt.rank == 0) {
    MT_EQ_STATUS(rondo_allreduce_async(w, "q.added", &a, &a, 1, RONDO_FLOAT32, RONDO_SUM, &plain,
                                       &late),
                 RONDO_SUCCESS);
    int done = 0;
    struct timespec pause = {0, 200000};
    while (rondo_test(late, &done) == RONDO_SUCCESS && !done)
      nanosleep(&pause, NULL); /* until it completed: added after that */
    MT_CHECK(done, "q.added completes");
    MT_EQ_STATUS(rondo_queue_add(q, late), RONDO_SUCCESS);
  }
  MT_EQ_STATUS(rondo_queue_wait(q, 60, &second), RONDO_SUCCESS);
  MT_CHECK(second == late, "an added request arrives");
  MT_EQ_STATUS(rondo_wait(&late), RONDO_SUCCESS);
  MT_CHECK(a == mt.size, "its result is right (%g)", a);
  MT_EQ_STATUS(rondo_queue_add(q, second), RONDO_ERR_INVALID_ARG); /* released */
  MT_EQ_STATUS(rondo_queue_add(NULL, second), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_queue_add(q, NULL), RONDO_ERR_INVALID_ARG);
  /* close: what is queued first, then SHUT_DOWN */
  MT_EQ_STATUS(rondo_allreduce_async(w, "q.last", &b, &b, 1, RONDO_FLOAT32, RONDO_SUM, &o, &late),
               RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_wait(&late), RONDO_SUCCESS); /* released: it is on the queue */
  MT_EQ_STATUS(rondo_queue_close(q), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_queue_wait(q, -1, &second), RONDO_SUCCESS);
  MT_CHECK(second != NULL, "a closed queue still hands out what it holds");
  MT_EQ_STATUS(rondo_queue_wait(q, -1, &second), RONDO_ERR_SHUT_DOWN);
  MT_CHECK(second == NULL, "then it is shut");
  MT_EQ_STATUS(rondo_queue_destroy(&q), RONDO_SUCCESS);
  MT_CHECK(q == NULL, "destroy clears the handle");
  MT_EQ_STATUS(rondo_queue_destroy(&q), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_queue_create(NULL), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_queue_wait(NULL, 0, &second), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_queue_close(NULL), RONDO_ERR_INVALID_ARG);
}

int main(int argc, char **argv)
{
  if (mt_rondo_start(&argc, &argv, "test_p2p"))
    return 1;
  rondo_comm_t w = rondo_world();
  p2p_ring(w);
  p2p_pairs_tags_order(w);
  p2p_any_source(w);
  p2p_count_mismatch(w);
  p2p_bad_arguments(w);
  p2p_apart_from_collectives(w);
  p2p_timeouts(w);
  subsets(w);
  queues(w);
  int rc = mt_finish();
  rondo_finalize();
  return rc;
}
