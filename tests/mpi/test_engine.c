/*
 * test_engine - the asynchronous engine (lib/engine) at 1-5 ranks.
 *
 * Default run (MPITEST_ENGINE unset or "all"):
 *   - random order: many names of every dtype and op and assorted counts,
 *     submitted in a different seeded order on every rank, in place and out
 *     of place, three rounds (the second and third hit the response cache);
 *     results checked in closed form and hashed across ranks;
 *   - prescale/postscale, callbacks, groups;
 *   - broadcast and allgather (a different number of rows per rank);
 *   - errors: the same name with a different count, dtype, op, root or
 *     scale on one rank fails on every rank with RONDO_ERR_MISMATCH and a
 *     message naming the field; a duplicate name fails at submission; bad
 *     arguments fail at submission;
 *   - what bindings need: a tag that differs on one rank fails everywhere
 *     quoting both; a refusal (rondo_refuse_async) fails the name on every
 *     rank, with the refusing rank's reason; reduce-scatter with uneven
 *     splits (every op, prescale/postscale), all-to-all with any splits,
 *     both against closed forms; requests that need every rank fail with
 *     RONDO_ERR_JOINED while a rank has joined; the timeline started and
 *     stopped at run time;
 *   - fusion of reduce-scatters and allgathers: ready ones of the same dtype
 *     (op, scales) run as one collective (the timeline shows one span of
 *     the batch's size on every member's track) and give what each gives
 *     alone (closed forms), other dtypes, ops and scales apart; allgather
 *     rows known from the negotiation where equal on every rank (new and
 *     cached), asked for where they differ (then cached as differing);
 *     RONDO_FUSION_THRESHOLD splits the batches;
 *   - 4 threads submitting at once;
 *   - blocking requests (RONDO_ASYNC_WAIT_NOW, waited for at once: the
 *     waiting thread runs the cycles, small ones ride in the negotiation):
 *     every dtype and op, counts around the inline limits, in place and out
 *     of place, new and cached; among asynchronous requests in flight; one
 *     waited for only later; a count mismatch once cached; 4 threads making
 *     blocking requests at once;
 *   - join with a different number of steps per rank, and before any
 *     submission (rank 0 joins at once);
 *   - request handles: a callback sees its request done and reads an
 *     allgather's result, and cannot wait for it; a stale copy of a handle
 *     (also once its slot holds a new request) is refused;
 *   - shutdown with a request pending (RONDO_ERR_SHUT_DOWN);
 *   - a soak of small requests whose RSS must not grow.
 * Oversubscribed (3 ranks and up, unless MPITEST_FULL=1) some parts run
 * fewer cases: fewer names, a third of the blocking requests' cases (at
 * 4-5 ranks a sixth), and at 4-5 ranks the reduce-scatters and reduces in
 * int32 and float32 only.
 * MPITEST_ENGINE=stall (with RONDO_STALL_WARN_SEC=1 RONDO_STALL_ABORT_SEC=3):
 *   a name only rank 0 submits: rank 0 logs the stall warning naming the
 *   missing ranks, then the request fails with RONDO_ERR_STALLED.
 * MPITEST_ENGINE=unstarted (with RONDO_STALL_WARN_SEC=1 RONDO_STALL_ABORT_SEC=2):
 *   rank 0 submits on a comm where the other ranks never start their
 *   engines: a warning naming them, then RONDO_ERR_STALLED; and when they
 *   destroy the comm instead, RONDO_ERR_SHUT_DOWN naming them.
 * MPITEST_ENGINE=basic: the random-order part only, 80 names (tests/timeline.sh).
 * MPITEST_ENGINE=fused: the fused reduce-scatters and allgathers only.
 */
#include "mpitest.h"

#include <pthread.h>

static const rondo_op_t ops[] = {RONDO_SUM, RONDO_MIN, RONDO_MAX, RONDO_PROD, RONDO_AVG};
static const size_t counts[] = {0, 1, 2, 3, 7, 31, 100, 1000, 4099};

/* ---- random submission order ------------------------------------------------------ */

typedef struct {
  char name[48];
  rondo_dtype_t dt;
  rondo_op_t op;
  size_t count;
  int in_place;
  void *in, *out, *want;
  rondo_request_t req;
} job_t;

static void job_setup(job_t *j, int i, int round, uint64_t first)
{
  snprintf(j->name, sizeof j->name, "layer%03d.grad", i);
  j->dt = (rondo_dtype_t)(i % RONDO_DTYPE_COUNT);
  j->op = ops[(i / RONDO_DTYPE_COUNT) % 5];
  j->count = counts[(size_t)(i * 7 + round) % (sizeof counts / sizeof counts[0])];
  j->count = counts[(size_t)i % (sizeof counts / sizeof counts[0])]; /* same every round */
  j->in_place = (i + round) % 2;
  size_t bytes = j->count * mt_dtype_size(j->dt);
  j->in = mt_alloc(bytes);
  j->out = j->in_place ? j->in : mt_alloc(bytes);
  j->want = mt_alloc(bytes);
  mt_fill_input(j->dt, j->op, first, j->count, j->in);
  mt_fill_reduced(j->dt, j->op, first, j->count, j->want);
}

static void job_free(job_t *j)
{
  if (!j->in_place)
    free(j->out);
  free(j->in);
  free(j->want);
}

static void random_order(int n, int rounds)
{
  job_t *jobs = mt_alloc((size_t)n * sizeof *jobs);
  int *order = mt_alloc((size_t)n * sizeof *order);
  for (int round = 0; round < rounds; round++) {
    mt.salt = 1000 + (uint64_t)round;
    for (int i = 0; i < n; i++) {
      job_setup(&jobs[i], i, round, (uint64_t)i * 5000);
      order[i] = i;
    }
    /* a seeded shuffle that differs per rank and round */
    for (int i = n - 1; i > 0; i--) {
      int k = (int)(mt_rand(77, (uint64_t)(mt.rank * 100 + round), (uint64_t)i) % (uint64_t)(i + 1));
      int t = order[i];
      order[i] = order[k];
      order[k] = t;
    }
    for (int k = 0; k < n; k++) {
      job_t *j = &jobs[order[k]];
      mt_where("random order round %d: submit %s", round, j->name);
      MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), j->name, j->in, j->out, j->count, j->dt,
                                         j->op, NULL, &j->req),
                   RONDO_SUCCESS);
    }
    /* wait in yet another order: reversed submission order */
    for (int k = n - 1; k >= 0; k--) {
      job_t *j = &jobs[order[k]];
      mt_where("random order round %d: %s (%s %s x %zu, %s)", round, j->name, mt_dtype_str(j->dt),
               mt_op_str(j->op), j->count, j->in_place ? "in place" : "out of place");
      if (j->req != NULL && MT_EQ_STATUS(rondo_wait(&j->req), RONDO_SUCCESS))
        mt_check_elems(j->name, j->dt, j->out, j->want, j->count);
    }
    for (int i = 0; i < n; i++) { /* compared across ranks in one order */
      mt_where("random order round %d: %s bytes on every rank", round, jobs[i].name);
      mt_hash_record(jobs[i].out, jobs[i].count * mt_dtype_size(jobs[i].dt));
      job_free(&jobs[i]);
    }
  }
  free(jobs);
  free(order);
}

/* ---- scales, callbacks, groups ------------------------------------------------------ */

static int callbacks_seen;
static void on_done(rondo_request_t req, rondo_status_t st, void *user)
{
  (void)req;
  if (st == RONDO_SUCCESS)
    __atomic_add_fetch((int *)user, 1, __ATOMIC_RELAXED);
}

static void scales_callbacks_groups(void)
{
  mt_where("prescale 2, postscale 0.25, float32 sum");
  float in[5], out[5];
  for (int i = 0; i < 5; i++)
    in[i] = (float)(mt.rank + i);
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.prescale = 2.0;
  o.postscale = 0.25;
  o.callback = on_done;
  o.user = &callbacks_seen;
  rondo_request_t r;
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "scaled", in, out, 5, RONDO_FLOAT32,
                                         RONDO_SUM, &o, &r),
                   RONDO_SUCCESS) &&
      MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
    for (int i = 0; i < 5; i++) {
      float want = 0.5f * (float)(mt.size * (mt.size - 1) / 2 + mt.size * i);
      MT_CHECK(out[i] == want, "scaled[%d] = %g, expected %g", i, out[i], want);
    }
  MT_EQ_INT(__atomic_load_n(&callbacks_seen, __ATOMIC_RELAXED), 1);

  mt_where("a group of 3, submitted out of order");
  int32_t g[3][4], gw[3];
  rondo_request_t gr[3];
  rondo_async_opts_t go = RONDO_ASYNC_OPTS_INIT;
  go.group = "optimizer-step";
  go.group_size = 3;
  for (int k = 0; k < 3; k++) {
    int i = (k + mt.rank) % 3;
    char name[16];
    snprintf(name, sizeof name, "grp%d", i);
    for (int e = 0; e < 4; e++)
      g[i][e] = (mt.rank + 1) * (i + 1);
    MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), name, g[i], g[i], 4, RONDO_INT32, RONDO_SUM,
                                       &go, &gr[i]),
                 RONDO_SUCCESS);
  }
  for (int i = 0; i < 3; i++) {
    gw[i] = (i + 1) * mt.size * (mt.size + 1) / 2;
    if (gr[i] != NULL && MT_EQ_STATUS(rondo_wait(&gr[i]), RONDO_SUCCESS))
      MT_EQ_INT(g[i][3], gw[i]);
  }
}

/* ---- broadcast and allgather --------------------------------------------------------- */

static void bcast_allgather(void)
{
  for (int root = 0; root < mt.size; root++) {
    mt_where("broadcast_async from root %d", root);
    int64_t buf[33];
    for (int i = 0; i < 33; i++)
      buf[i] = mt.rank == root ? 1000 * root + i : -1;
    rondo_request_t r;
    char name[32];
    snprintf(name, sizeof name, "bcast.%d", root);
    if (MT_EQ_STATUS(rondo_broadcast_async(rondo_world(), name, buf, 33, RONDO_INT64, root, NULL,
                                           &r),
                     RONDO_SUCCESS) &&
        MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
      for (int i = 0; i < 33; i++)
        if (!MT_EQ_INT(buf[i], 1000 * root + i))
          break;
  }
  mt_where("allgather_async: rank r gives r + 1 rows of 3");
  size_t rows = (size_t)mt.rank + 1;
  float *mine = mt_alloc(rows * 3 * sizeof *mine);
  for (size_t i = 0; i < rows * 3; i++)
    mine[i] = (float)(mt.rank * 100 + (int)i);
  rondo_request_t r;
  if (MT_EQ_STATUS(rondo_allgather_async(rondo_world(), "gather", mine, rows, 3, RONDO_FLOAT32,
                                         NULL, &r),
                   RONDO_SUCCESS)) {
    rondo_status_t st = RONDO_SUCCESS;
    int done = 0;
    while (!done) {
      st = rondo_test(r, &done);
      if (st != RONDO_SUCCESS)
        break;
    }
    void *res = NULL;
    size_t n = 0;
    MT_EQ_STATUS(rondo_request_result(r, &res, &n), RONDO_SUCCESS);
    if (MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS) &&
        MT_EQ_INT(n, 3 * (size_t)mt.size * (size_t)(mt.size + 1) / 2)) {
      const float *f = res;
      size_t at = 0;
      for (int q = 0; q < mt.size; q++)
        for (size_t i = 0; i < (size_t)(q + 1) * 3; i++, at++)
          if (!MT_CHECK(f[at] == (float)(q * 100 + (int)i), "row data of rank %d at %zu", q, i))
            q = mt.size;
      mt_hash_record(res, n * sizeof(float));
    }
    free(res);
  }
  free(mine);
}

/* ---- errors ------------------------------------------------------------------------------- */

/* Every rank submits name; rank `odd` submits it with a different field.
 * All must fail with RONDO_ERR_MISMATCH and a message naming `field`. */
static void expect_mismatch(const char *name, const char *field, rondo_status_t (*submit)(int odd,
                                                                                       rondo_request_t *))
{
  mt_where("mismatch in %s (%s)", field, name);
  int odd = mt.size - 1;
  rondo_request_t r = NULL;
  if (!MT_EQ_STATUS(submit(mt.rank == odd, &r), RONDO_SUCCESS))
    return;
  MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_MISMATCH);
  MT_CHECK(strstr(rondo_last_error(), field) != NULL && strstr(rondo_last_error(), name) != NULL,
           "the message names '%s' and %s: %s", name, field, rondo_last_error());
}

static float mm_buf[64];
static rondo_status_t mm_count(int odd, rondo_request_t *r)
{
  return rondo_allreduce_async(rondo_world(), "mm.count", mm_buf, mm_buf, odd ? 9 : 8,
                               RONDO_FLOAT32, RONDO_SUM, NULL, r);
}
static rondo_status_t mm_dtype(int odd, rondo_request_t *r)
{
  return rondo_allreduce_async(rondo_world(), "mm.dtype", mm_buf, mm_buf, 8,
                               odd ? RONDO_INT32 : RONDO_FLOAT32, RONDO_SUM, NULL, r);
}
static rondo_status_t mm_op(int odd, rondo_request_t *r)
{
  return rondo_allreduce_async(rondo_world(), "mm.op", mm_buf, mm_buf, 8, RONDO_FLOAT32,
                               odd ? RONDO_MAX : RONDO_SUM, NULL, r);
}
static rondo_status_t mm_scale(int odd, rondo_request_t *r)
{
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.prescale = odd ? 3.0 : 1.0;
  return rondo_allreduce_async(rondo_world(), "mm.scale", mm_buf, mm_buf, 8, RONDO_FLOAT32,
                               RONDO_SUM, &o, r);
}
static rondo_status_t mm_root(int odd, rondo_request_t *r)
{
  return rondo_broadcast_async(rondo_world(), "mm.root", mm_buf, 8, RONDO_FLOAT32, odd ? 1 : 0,
                               NULL, r);
}
static rondo_status_t mm_kind(int odd, rondo_request_t *r)
{
  if (odd)
    return rondo_broadcast_async(rondo_world(), "mm.kind", mm_buf, 8, RONDO_FLOAT32, 0, NULL, r);
  return rondo_allreduce_async(rondo_world(), "mm.kind", mm_buf, mm_buf, 8, RONDO_FLOAT32,
                               RONDO_SUM, NULL, r);
}
/* An allgather whose rows differ (as they may) and whose flags differ: the
 * message names the flags, not the rows. */
static rondo_status_t mm_agrows(int odd, rondo_request_t *r)
{
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.flags = odd ? RONDO_ASYNC_NO_JOIN : 0;
  return rondo_allgather_async(rondo_world(), "mm.agrows", mm_buf, odd ? 2 : 1, 4, RONDO_FLOAT32,
                               &o, r);
}

static void errors(void)
{
  if (mt.size > 1) {
    expect_mismatch("mm.count", "count", mm_count);
    expect_mismatch("mm.dtype", "dtype", mm_dtype);
    expect_mismatch("mm.op", "op", mm_op);
    expect_mismatch("mm.scale", "prescale", mm_scale);
    expect_mismatch("mm.root", "root", mm_root);
    expect_mismatch("mm.kind", "collective", mm_kind);
    expect_mismatch("mm.agrows", "flags", mm_agrows);
  }
  mt_where("duplicate name in flight");
  float a[4] = {1, 2, 3, 4}, b[4] = {0}, c = 1;
  rondo_request_t r1 = NULL, r2 = NULL, r3 = NULL;
  /* a group of 2 keeps "dup" in flight until its partner comes */
  rondo_async_opts_t hold = RONDO_ASYNC_OPTS_INIT;
  hold.group = "hold";
  hold.group_size = 2;
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "dup", a, a, 4, RONDO_FLOAT32, RONDO_SUM,
                                     &hold, &r1),
               RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "dup", b, b, 4, RONDO_FLOAT32, RONDO_SUM,
                                     NULL, &r2),
               RONDO_ERR_DUPLICATE_NAME);
  MT_CHECK(r2 == NULL, "no request for a refused submission");
  MT_CHECK(strstr(rondo_last_error(), "'dup'") != NULL, "message names it: %s",
           rondo_last_error());
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "dup.partner", &c, &c, 1, RONDO_FLOAT32,
                                     RONDO_SUM, &hold, &r3),
               RONDO_SUCCESS);
  if (r3 != NULL)
    MT_EQ_STATUS(rondo_wait(&r3), RONDO_SUCCESS);
  if (r1 != NULL && MT_EQ_STATUS(rondo_wait(&r1), RONDO_SUCCESS))
    MT_CHECK(a[3] == 4.0f * (float)mt.size, "dup result %g", a[3]);
  /* once complete, the name can be used again */
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "dup", b, b, 4, RONDO_FLOAT32, RONDO_SUM,
                                     NULL, &r2),
               RONDO_SUCCESS);
  if (r2 != NULL)
    MT_EQ_STATUS(rondo_wait(&r2), RONDO_SUCCESS);

  mt_where("bad arguments fail at submission");
  /* One name per call: each failed submission is also refused in the engine
   * (detached), and two refusals of one name in a row race on the ranks (the
   * second meets the first still in flight on one rank and not on another),
   * which leaves a refusal no peer matches: an engine bug of its own, not
   * what this block checks. */
  rondo_request_t r = NULL;
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), NULL, a, a, 4, RONDO_FLOAT32, RONDO_SUM, NULL,
                                     &r),
               RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "", a, a, 4, RONDO_FLOAT32, RONDO_SUM, NULL,
                                     &r),
               RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "bad.null", NULL, a, 4, RONDO_FLOAT32,
                                     RONDO_SUM, NULL, &r),
               RONDO_ERR_NULL_BUFFER);
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "bad.dtype", a, a, 4, (rondo_dtype_t)99,
                                     RONDO_SUM, NULL, &r),
               RONDO_ERR_INVALID_DTYPE);
  MT_EQ_STATUS(rondo_allreduce_async(NULL, "x", a, a, 4, RONDO_FLOAT32, RONDO_SUM, NULL, &r),
               RONDO_ERR_INVALID_COMM);
  MT_EQ_STATUS(
      rondo_broadcast_async(rondo_world(), "bad.root", a, 4, RONDO_FLOAT32, mt.size, NULL, &r),
               RONDO_ERR_INVALID_ROOT);
  rondo_async_opts_t bad = RONDO_ASYNC_OPTS_INIT;
  bad.size = 3;
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "bad.size", a, a, 4, RONDO_FLOAT32, RONDO_SUM,
                                     &bad, &r),
               RONDO_ERR_INVALID_ARG);
  bad = (rondo_async_opts_t)RONDO_ASYNC_OPTS_INIT;
  bad.group = "g";
  bad.group_size = 0;
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "bad.group", a, a, 4, RONDO_FLOAT32, RONDO_SUM,
                                     &bad, &r),
               RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_wait(NULL), RONDO_ERR_INVALID_ARG);
  MT_CHECK(r == NULL, "no request after failed submissions");
}

/* ---- what bindings need: tags, refusals, reduce-scatter, all-to-all ----------------------- */

static void tags_and_flags(void)
{
  float a[6] = {1, 2, 3, 4, 5, 6};
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  rondo_request_t r = NULL;
  mt_where("the same tag on every rank runs");
  o.tag = "shape [2, 3]";
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "tag.same", a, a, 6, RONDO_FLOAT32,
                                         RONDO_SUM, &o, &r),
                   RONDO_SUCCESS) &&
      MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
    MT_CHECK(a[5] == 6.0f * (float)mt.size, "tagged sum %g", a[5]);
  if (mt.size > 1) {
    mt_where("a tag that differs on the last rank: RONDO_ERR_MISMATCH quoting both");
    o.tag = mt.rank == mt.size - 1 ? "shape [3, 2]" : "shape [2, 3]";
    if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "tag.differs", a, a, 6, RONDO_FLOAT32,
                                           RONDO_SUM, &o, &r),
                     RONDO_SUCCESS)) {
      MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_MISMATCH);
      MT_CHECK(strstr(rondo_last_error(), "'tag.differs'") &&
                   strstr(rondo_last_error(), "shape [2, 3]") &&
                   strstr(rondo_last_error(), "shape [3, 2]"),
               "the message quotes both tags: %s", rondo_last_error());
    }
  }
  mt_where("tags and flags that cannot be taken");
  char long_tag[300];
  memset(long_tag, 'x', sizeof long_tag - 1);
  long_tag[sizeof long_tag - 1] = '\0';
  o.tag = long_tag;
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "tag.long", a, a, 6, RONDO_FLOAT32,
                                     RONDO_SUM, &o, &r),
               RONDO_ERR_INVALID_ARG);
  o.tag = NULL;
  o.flags = 0x80;
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "tag.flags", a, a, 6, RONDO_FLOAT32,
                                     RONDO_SUM, &o, &r),
               RONDO_ERR_INVALID_ARG);
  MT_CHECK(r == NULL, "no request after failed submissions");
}

static void refusals(void)
{
  int odd = mt.size - 1;
  float a[3] = {1, 2, 3};
  rondo_request_t r = NULL;
  mt_where("rank %d refuses 'ref.one'; the others submit it", odd);
  rondo_status_t st = mt.rank == odd
                          ? rondo_refuse_async(rondo_world(), "ref.one", "dtype complex64 is "
                                               "not supported", NULL, &r)
                          : rondo_allreduce_async(rondo_world(), "ref.one", a, a, 3,
                                                  RONDO_FLOAT32, RONDO_SUM, NULL, &r);
  if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
    MT_EQ_STATUS(rondo_wait(&r), mt.rank == odd ? RONDO_ERR_INVALID_ARG : RONDO_ERR_PEER);
    MT_CHECK(strstr(rondo_last_error(), "complex64") != NULL, "the reason reaches rank %d: %s",
             mt.rank, rondo_last_error());
    if (mt.rank != odd) {
      char who[48];
      snprintf(who, sizeof who, "rank %d refused", odd);
      MT_CHECK(strstr(rondo_last_error(), who) != NULL, "names the rank: %s", rondo_last_error());
    }
  }
  mt_where("a refused member of a group fails that member; the group still runs");
  rondo_async_opts_t g = RONDO_ASYNC_OPTS_INIT;
  g.group = "ref.group";
  g.group_size = 2;
  float b[2] = {1, 1};
  rondo_request_t r1 = NULL, r2 = NULL;
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "ref.g0", b, b, 2, RONDO_FLOAT32, RONDO_SUM,
                                     &g, &r1),
               RONDO_SUCCESS);
  st = mt.rank == odd ? rondo_refuse_async(rondo_world(), "ref.g1", "a scalar", &g, &r2)
                      : rondo_allreduce_async(rondo_world(), "ref.g1", a, a, 3, RONDO_FLOAT32,
                                              RONDO_SUM, &g, &r2);
  if (MT_EQ_STATUS(st, RONDO_SUCCESS))
    MT_EQ_STATUS(rondo_wait(&r2), mt.rank == odd ? RONDO_ERR_INVALID_ARG : RONDO_ERR_PEER);
  if (r1 != NULL && MT_EQ_STATUS(rondo_wait(&r1), RONDO_SUCCESS))
    MT_CHECK(b[1] == (float)mt.size, "the group's other member: %g", b[1]);
  mt_where("refusals that cannot be taken");
  MT_EQ_STATUS(rondo_refuse_async(rondo_world(), "ref.none", NULL, NULL, &r), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_refuse_async(rondo_world(), "", "why", NULL, &r), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_refuse_async(rondo_world(), "ref.x", "why", NULL, NULL),
               RONDO_ERR_INVALID_ARG);
}

/* At 4-5 ranks (mt.crowded) the reduce-scatters and reduces, whose
 * outcome depends on the rank count through how rows split and which rank
 * is the root, run in int32 and float32 only; 1-3 ranks run every type. */
static int crowded_skips(rondo_dtype_t dt)
{
  return mt.crowded && dt != RONDO_INT32 && dt != RONDO_FLOAT32;
}

/* Element i of rank q's input: exact in every dtype used here. */
static int64_t rs_value(int q, size_t i, rondo_op_t op)
{
  if (op == RONDO_PROD)
    return (int64_t)((q + (int)i) % 3) - 1 == 0 ? 2 : (int64_t)((q + (int)i) % 3) - 1;
  return (int64_t)((q * 7 + (int)i * 3) % 23) - 11;
}

/* want[i] = the reduction over the ranks of element g (rs_value), exact. */
static void rs_store_want(rondo_dtype_t dt, void *want, size_t i, size_t g, rondo_op_t op)
{
  int64_t acc = rs_value(0, g, op);
  for (int q = 1; q < mt.size; q++) {
    int64_t v = rs_value(q, g, op);
    acc = op == RONDO_MIN    ? (v < acc ? v : acc)
          : op == RONDO_MAX  ? (v > acc ? v : acc)
          : op == RONDO_PROD ? acc * v
                             : acc + v;
  }
  if (op == RONDO_AVG)
    mt_store_avg(dt, want, i, acc, mt.size);
  else
    mt_store(dt, want, i, acc);
}

static void reduce_scatter(void)
{
  static const rondo_dtype_t dts[] = {RONDO_INT16, RONDO_INT32, RONDO_FLOAT16, RONDO_FLOAT32,
                                      RONDO_FLOAT64};
  static const size_t rowss[] = {0, 1, 2, 5, 9};
  const size_t row = 3;
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (int op = 0; op < MT_OPS; op++)
      for (size_t k = 0; k < sizeof rowss / sizeof rowss[0]; k++) {
        rondo_dtype_t dt = dts[d];
        if (crowded_skips(dt))
          continue;
        size_t rows = rowss[k], n = rows * row, es = mt_dtype_size(dt);
        int scaled = op == RONDO_SUM && mt_dtype_is_float(dt);
        mt_where("reduce_scatter_async %s %s, %zu rows of %zu%s", mt_dtype_str(dt),
                 mt_op_str((rondo_op_t)op), rows, row, scaled ? ", prescale 2, postscale 0.5" : "");
        size_t share = rows / (size_t)mt.size, extra = rows % (size_t)mt.size;
        size_t mine = share + ((size_t)mt.rank < extra), first = 0;
        for (int q = 0; q < mt.rank; q++)
          first += share + ((size_t)q < extra);
        char *in = mt_alloc(n * es + 1), *out = mt_alloc(mine * row * es + 1),
             *want = mt_alloc(mine * row * es + 1);
        for (size_t i = 0; i < n; i++)
          mt_store(dt, in, i, rs_value(mt.rank, i, (rondo_op_t)op));
        for (size_t i = 0; i < mine * row; i++) /* prescale 2 then postscale 0.5: exact */
          rs_store_want(dt, want, i, first * row + i, (rondo_op_t)op);
        rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
        if (scaled) {
          o.prescale = 2.0;
          o.postscale = 0.5;
        }
        char name[64];
        snprintf(name, sizeof name, "rs.%zu.%d.%zu", d, op, k);
        rondo_request_t r = NULL;
        if (MT_EQ_STATUS(rondo_reduce_scatter_async(rondo_world(), name, in, out, rows, row, dt,
                                                    (rondo_op_t)op, &o, &r),
                         RONDO_SUCCESS) &&
            MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
          mt_check_elems("reduce-scatter share", dt, out, want, mine * row);
        /* in place: the result at this rank's rows of the input (ZeRO's
         * shard), and with odd rows at its start (MPI_IN_PLACE's form) */
        for (int form = 0; form < 2 && rows >= 5; form++) {
          char *at = form == 0 ? in + first * row * es : in;
          for (size_t i = 0; i < n; i++)
            mt_store(dt, in, i, rs_value(mt.rank, i, (rondo_op_t)op));
          mt_where("reduce_scatter_async %s %s, %zu rows of %zu, in place at %s", mt_dtype_str(dt),
                   mt_op_str((rondo_op_t)op), rows, row, form == 0 ? "its rows" : "the start");
          snprintf(name, sizeof name, "rs.%zu.%d.%zu.in%d", d, op, k, form);
          if (MT_EQ_STATUS(rondo_reduce_scatter_async(rondo_world(), name, in, at, rows, row, dt,
                                                      (rondo_op_t)op, &o, &r),
                           RONDO_SUCCESS) &&
              MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
            mt_check_elems("reduce-scatter share in place", dt, at, want, mine * row);
        }
        free(in);
        free(out);
        free(want);
      }
  mt_where("reduce_scatter_async refusals at submission");
  float x[4] = {0}, y[4];
  rondo_request_t r = NULL;
  MT_EQ_STATUS(rondo_reduce_scatter_async(rondo_world(), "rs.adasum", x, y, 4, 1, RONDO_FLOAT32,
                                          RONDO_ADASUM, NULL, &r),
               RONDO_ERR_UNSUPPORTED);
  { /* a forced algorithm: the family's run it (the closed form), one it lacks fails */
    static const rondo_algo_t algos[] = {RONDO_ALGO_PAIRWISE, RONDO_ALGO_RING,
                                         RONDO_ALGO_RECURSIVE_HALVING, RONDO_ALGO_MPI};
    float in[12], out[12];
    size_t rows = 2 * (size_t)mt.size + 1, mine = 2 + ((size_t)mt.rank < 1), first = 0;
    for (int q = 0; q < mt.rank; q++)
      first += 2 + (q < 1);
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
      mt_where("reduce_scatter_async forced to %s", rondo_algo_name(algos[a]));
      rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
      o.algo = algos[a];
      for (size_t i = 0; i < rows; i++)
        in[i] = (float)(mt.rank + 3 * (int)i);
      char name[32];
      snprintf(name, sizeof name, "rs.algo.%zu", a);
      if (MT_EQ_STATUS(rondo_reduce_scatter_async(rondo_world(), name, in, out, rows, 1,
                                                  RONDO_FLOAT32, RONDO_SUM, &o, &r),
                       RONDO_SUCCESS) &&
          MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
        for (size_t i = 0; i < mine; i++) {
          float want = 0;
          for (int q = 0; q < mt.size; q++)
            want += (float)(q + 3 * (int)(first + i));
          MT_CHECK(out[i] == want, "%s: element %zu: %g, want %g", rondo_algo_name(algos[a]), i,
                   (double)out[i], (double)want);
        }
    }
    mt_where("reduce_scatter_async forced to an all-reduce-only algorithm");
    rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
    o.algo = RONDO_ALGO_RABENSEIFNER;
    if (MT_EQ_STATUS(rondo_reduce_scatter_async(rondo_world(), "rs.algo.bad", in, out, rows, 1,
                                                RONDO_FLOAT32, RONDO_SUM, &o, &r),
                     RONDO_SUCCESS))
      MT_CHECK(rondo_wait(&r) != RONDO_SUCCESS, "rabenseifner reduce-scatter did not fail");
  }
  { /* recvbuf overlapping sendbuf elsewhere than at this rank's rows or its start */
    float z[16] = {0};
    MT_EQ_STATUS(rondo_reduce_scatter_async(rondo_world(), "rs.overlap", z, z + 2 * mt.rank + 1,
                                            2 * (size_t)mt.size, 1, RONDO_FLOAT32, RONDO_SUM,
                                            NULL, &r),
                 RONDO_ERR_INVALID_ARG);
  }
  if (mt.size > 1) {
    mt_where("reduce_scatter_async whose rows differ on one rank");
    int odd = mt.size - 1;
    float big[8] = {0}, part[8];
    if (MT_EQ_STATUS(rondo_reduce_scatter_async(rondo_world(), "rs.rows", big, part,
                                                mt.rank == odd ? 5 : 4, 1, RONDO_FLOAT32,
                                                RONDO_SUM, NULL, &r),
                     RONDO_SUCCESS)) {
      MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_MISMATCH);
      MT_CHECK(strstr(rondo_last_error(), "rows") != NULL, "names the rows: %s",
               rondo_last_error());
    }
  }
}

/* ---- fused reduce-scatters and allgathers ------------------------------------------- */

/* Element i of rank q's input to request j: a small integer, exact in every
 * dtype used here, its sums too. */
static int64_t fz_value(int q, int j, size_t i)
{
  return (int64_t)((q * 7 + (int)i * 3 + j * 5) % 23) - 11;
}

/* Rank q's share of rows rows (rank q receives rows / size, one more for
 * q < rows % size). */
static size_t fz_share(size_t rows, int q)
{
  return rows / (size_t)mt.size + ((size_t)q < rows % (size_t)mt.size);
}

/* rondo_reduce_async: every dtype and op, counts 0 to 9, the first and the
 * last rank as root, in place on the root and not, against the closed
 * form; a group of reduces to two roots (each fused with its own root's);
 * the root differing on one rank; a root outside the comm. The other
 * ranks' recvbuf is NULL: never touched. */
static void mm_reduce_roots(void);
static void reduce_async(void)
{
  static const rondo_dtype_t dts[] = {RONDO_INT16, RONDO_INT32, RONDO_FLOAT16, RONDO_FLOAT32,
                                      RONDO_FLOAT64};
  static const size_t lens[] = {0, 1, 9};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (int op = 0; op < MT_OPS; op++)
      for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
        for (int form = 0; form < 2; form++) {
          rondo_dtype_t dt = dts[d];
          if (crowded_skips(dt))
            continue;
          size_t n = lens[k], es = mt_dtype_size(dt);
          int root = form == 0 ? 0 : mt.size - 1, in_place = form == 1;
          mt_where("reduce_async %s %s, %zu elements to root %d%s", mt_dtype_str(dt),
                   mt_op_str((rondo_op_t)op), n, root, in_place ? ", in place" : "");
          char *in = mt_alloc(n * es + 1), *out = mt_alloc(n * es + 1),
               *want = mt_alloc(n * es + 1);
          for (size_t i = 0; i < n; i++) {
            mt_store(dt, in, i, rs_value(mt.rank, i, (rondo_op_t)op));
            rs_store_want(dt, want, i, i, (rondo_op_t)op);
          }
          char name[64];
          snprintf(name, sizeof name, "rd.%zu.%d.%zu.%d", d, op, k, form);
          void *dst = mt.rank != root ? NULL : in_place ? (void *)in : (void *)out;
          rondo_request_t r = NULL;
          if (MT_EQ_STATUS(rondo_reduce_async(rondo_world(), name, in, dst, n, dt,
                                              (rondo_op_t)op, root, NULL, &r),
                           RONDO_SUCCESS) &&
              MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS) && mt.rank == root)
            mt_check_elems("the root's reduction", dt, dst, want, n);
          free(in);
          free(out);
          free(want);
        }
  mt_where("a group of reduces to two roots, 2 rows each, float32 sum, postscale 0.5");
  {
    enum { G = 4, C = 5 };
    float in[G][C], out[G][C];
    rondo_request_t req[G] = {0};
    rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
    o.group = "rd.group";
    o.group_size = G;
    o.postscale = 0.5;
    for (int j = 0; j < G; j++) {
      int k = (j + mt.rank) % G; /* an order that differs per rank */
      int root = k % 2 == 0 ? 0 : mt.size - 1;
      for (int i = 0; i < C; i++) {
        in[k][i] = (float)(mt.rank * 10 + k * 100 + i);
        out[k][i] = -1;
      }
      char name[32];
      snprintf(name, sizeof name, "rd.group.%d", k);
      MT_EQ_STATUS(rondo_reduce_async(rondo_world(), name, in[k], out[k], C, RONDO_FLOAT32,
                                      RONDO_SUM, root, &o, &req[k]),
                   RONDO_SUCCESS);
    }
    for (int k = 0; k < G; k++) {
      int root = k % 2 == 0 ? 0 : mt.size - 1;
      if (req[k] == NULL || !MT_EQ_STATUS(rondo_wait(&req[k]), RONDO_SUCCESS))
        continue;
      for (int i = 0; i < C; i++) {
        float want = 0;
        for (int q = 0; q < mt.size; q++)
          want += (float)(q * 10 + k * 100 + i);
        want *= 0.5f;
        if (mt.rank == root)
          MT_CHECK(out[k][i] == want, "rd.group.%d[%d] on root %d: %g, want %g", k, i, root,
                   (double)out[k][i], (double)want);
        else if (mt.rank != 0 && mt.rank != mt.size - 1)
          MT_CHECK(out[k][i] == -1, "rd.group.%d[%d] off the root: written (%g)", k, i,
                   (double)out[k][i]);
      }
    }
  }
  if (mt.size > 1)
    mm_reduce_roots();
  mt_where("reduce_async to a root outside the comm");
  {
    float x[2] = {0}, y[2];
    rondo_request_t r = NULL;
    MT_EQ_STATUS(rondo_reduce_async(rondo_world(), "rd.badroot", x, y, 2, RONDO_FLOAT32,
                                    RONDO_SUM, mt.size, NULL, &r),
                 RONDO_ERR_INVALID_ROOT);
    MT_EQ_STATUS(rondo_reduce_async(rondo_world(), "rd.adasum", x, y, 2, RONDO_FLOAT32,
                                    RONDO_ADASUM, 0, NULL, &r),
                 RONDO_ERR_UNSUPPORTED);
  }
}

static rondo_status_t mm_reduce_root(int odd, rondo_request_t *r)
{
  return rondo_reduce_async(rondo_world(), "mm.reduceroot", mm_buf, mm_buf, 8, RONDO_FLOAT32,
                            RONDO_SUM, odd ? 1 : 0, NULL, r);
}

static void mm_reduce_roots(void)
{
  expect_mismatch("mm.reduceroot", "root", mm_reduce_root);
}

/* A timeline file of this run for tag (rank 0's path on every rank). */
static void fz_path(char *path, size_t len, const char *tag)
{
  snprintf(path, len, "%s/rondo-fz-%ld-%s.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (long)getpid(), tag);
  MPI_Bcast(path, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* Rank 0: the whole trace, malloc'd (NULL elsewhere or when unreadable);
 * the file is removed. */
static char *fz_read(const char *path)
{
  if (mt.rank != 0)
    return NULL;
  FILE *f = fopen(path, "r");
  char *text = mt_alloc(1 << 20);
  size_t n = f != NULL ? fread(text, 1, (1 << 20) - 1, f) : 0;
  if (f != NULL)
    fclose(f);
  text[n] = '\0';
  unlink(path);
  MT_CHECK(n > 4, "the trace %s was written (%zu bytes)", path, n);
  return text;
}

/* In a trace: the span `what` on the track of name. 1 with its start, the
 * "fused" of its arguments and the arguments themselves; 0 if there is none. */
static int fz_span(const char *text, const char *name, const char *what, double *ts, long *fused,
                   char *args, size_t len)
{
  char pat[320];
  snprintf(pat, sizeof pat, ",\"args\":{\"name\":\"%s\"}}", name);
  const char *m = strstr(text, pat), *t = m;
  while (t != NULL && t > text && strncmp(t, "\"tid\":", 6) != 0)
    t--;
  if (t == NULL || strncmp(t, "\"tid\":", 6) != 0)
    return 0;
  long tid = strtol(t + 6, NULL, 10);
  snprintf(pat, sizeof pat,
           "{\"name\":\"%s\",\"cat\":\"rondo\",\"ph\":\"X\",\"pid\":0,\"tid\":%ld,\"ts\":", what,
           tid);
  const char *sp = strstr(text, pat);
  if (sp == NULL)
    return 0;
  *ts = strtod(sp + strlen(pat), NULL);
  const char *end = strchr(sp, '\n'), *a = strstr(sp, "\"args\":{");
  const char *f = a != NULL ? strstr(a, "\"fused\":") : NULL;
  if (a == NULL || (end != NULL && a > end) || f == NULL || (end != NULL && f > end))
    return 0;
  *fused = strtol(f + 8, NULL, 10);
  size_t k = end != NULL ? (size_t)(end - a) : strlen(a);
  k = k < len - 1 ? k : len - 1;
  memcpy(args, a, k);
  args[k] = '\0';
  return 1;
}

/* Rank 0: the names ran as ONE collective `what` of `fused` requests (one
 * span start on every track, the batch's size in its arguments); with
 * how (allgather), the arguments say how the rows were known. */
static void fz_expect(const char *text, const char *what, const char *const *names, size_t n,
                      long fused, const char *how)
{
  if (text == NULL)
    return;
  double ts0 = 0;
  for (size_t i = 0; i < n; i++) {
    double ts = 0;
    long f = 0;
    char args[256];
    if (!MT_CHECK(fz_span(text, names[i], what, &ts, &f, args, sizeof args),
                  "a %s span with its arguments on the track of '%s'", what, names[i]))
      continue;
    MT_CHECK(f == fused, "'%s' ran in a %s of %ld requests, expected %ld (%s)", names[i], what, f,
             fused, args);
    if (i == 0)
      ts0 = ts;
    else
      MT_CHECK(ts == ts0, "'%s' ran in the same %s as '%s' (%.3f, %.3f)", names[i], what, names[0],
               ts, ts0);
    if (how != NULL) {
      char want[64];
      snprintf(want, sizeof want, "\"counts\":\"%s\"", how);
      MT_CHECK(strstr(args, want) != NULL, "'%s': rows %s: %s", names[i], how, args);
    }
  }
}

typedef struct {
  const char *name;
  rondo_dtype_t dt;
  rondo_op_t op;
  size_t rows, row;
  double pre, post;
  int in_place; /* 1: the result at this rank's rows of the input, 2: at its start */
} fz_rs_t;

/* The reduce-scatters of specs, submitted together as one group (in an
 * order that differs per rank) on comm, each checked against its closed
 * form: what it would give alone. */
static void fz_reduce_scatters(rondo_comm_t comm, const fz_rs_t *specs, int n, const char *group)
{
  char *in[8], *out[8], *want[8];
  size_t mine[8];
  rondo_request_t req[8] = {0};
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.group = group;
  o.group_size = n;
  for (int k = 0; k < n; k++) {
    int j = (k + mt.rank) % n;
    const fz_rs_t *sp = &specs[j];
    size_t es = mt_dtype_size(sp->dt), first = 0, total = sp->rows * sp->row;
    for (int q = 0; q < mt.rank; q++)
      first += fz_share(sp->rows, q);
    mine[j] = fz_share(sp->rows, mt.rank) * sp->row;
    in[j] = mt_alloc(total * es + 1);
    out[j] = sp->in_place == 1   ? in[j] + first * sp->row * es
             : sp->in_place == 2 ? in[j]
                                 : mt_alloc(mine[j] * es + 1);
    want[j] = mt_alloc(mine[j] * es + 1);
    for (size_t i = 0; i < total; i++)
      mt_store(sp->dt, in[j], i, fz_value(mt.rank, j, i));
    for (size_t i = 0; i < mine[j]; i++) {
      int64_t sum = 0;
      for (int q = 0; q < mt.size; q++)
        sum += fz_value(q, j, first * sp->row + i);
      /* prescale 2 and postscale 0.5 (powers of two): exact */
      if (sp->op == RONDO_AVG)
        mt_store_avg(sp->dt, want[j], i, sum, mt.size);
      else
        mt_store(sp->dt, want[j], i, sum);
    }
    o.prescale = sp->pre;
    o.postscale = sp->post;
    MT_EQ_STATUS(rondo_reduce_scatter_async(comm, sp->name, in[j], out[j], sp->rows, sp->row,
                                            sp->dt, sp->op, &o, &req[j]),
                 RONDO_SUCCESS);
  }
  for (int j = 0; j < n; j++) {
    mt_where("fused reduce-scatter '%s' (%s %s, %zu rows of %zu)", specs[j].name,
             mt_dtype_str(specs[j].dt), mt_op_str(specs[j].op), specs[j].rows, specs[j].row);
    if (req[j] != NULL && MT_EQ_STATUS(rondo_wait(&req[j]), RONDO_SUCCESS))
      mt_check_elems("its share, as alone", specs[j].dt, out[j], want[j], mine[j]);
    if (specs[j].in_place == 0)
      free(out[j]);
    free(in[j]);
    free(want[j]);
  }
}

typedef struct {
  const char *name;
  rondo_dtype_t dt;
  size_t row;
  int ragged; /* rank q gives rows + q rows, else rows */
  size_t rows;
} fz_ag_t;

static size_t fz_ag_rows(const fz_ag_t *a, int q)
{
  return a->ragged ? a->rows + (size_t)q : a->rows;
}

/* Elements of all-gather a's result before rank q's rows, and in all
 * (q = size). */
static size_t fz_ag_before(const fz_ag_t *a, int q)
{
  size_t at = 0;
  for (int k = 0; k < q; k++)
    at += fz_ag_rows(a, k) * a->row;
  return at;
}

/* How fz_allgathers gives the results. */
enum { FZ_ALLOC, FZ_INTO, FZ_INTO_IN_PLACE };

/* The allgathers of specs, submitted together as one group (NULL: none),
 * each checked against its closed form (every rank's rows in rank order)
 * and hashed. into: FZ_ALLOC (rondo allocates the results), FZ_INTO (into
 * the caller's buffers, rondo_allgather_into_async) or FZ_INTO_IN_PLACE
 * (the same, the first spec's input being this rank's rows of its result). */
static void fz_allgathers(const fz_ag_t *specs, int n, const char *group, int into)
{
  char *in[8], *out[8] = {0};
  rondo_request_t req[8] = {0};
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.group = group; /* NULL: none */
  o.group_size = group != NULL ? n : 0;
  for (int k = 0; k < n; k++) {
    int j = (n - 1 - k + mt.rank) % n;
    const fz_ag_t *a = &specs[j];
    size_t cnt = fz_ag_rows(a, mt.rank) * a->row, es = mt_dtype_size(a->dt);
    size_t total = fz_ag_before(a, mt.size), rows = total / (a->row ? a->row : 1);
    if (into != FZ_ALLOC) {
      out[j] = mt_alloc(total * es + 1);
      memset(out[j], 0xa5, total * es + 1); /* poison: a block left out shows */
    }
    in[j] = into == FZ_INTO_IN_PLACE && j == 0 ? out[j] + fz_ag_before(a, mt.rank) * es
                                               : mt_alloc(cnt * es + 1);
    for (size_t i = 0; i < cnt; i++)
      mt_store(a->dt, in[j], i, fz_value(mt.rank, j, i));
    if (into == FZ_ALLOC)
      MT_EQ_STATUS(rondo_allgather_async(rondo_world(), a->name, in[j], fz_ag_rows(a, mt.rank),
                                         a->row, a->dt, &o, &req[j]),
                   RONDO_SUCCESS);
    else
      MT_EQ_STATUS(rondo_allgather_into_async(rondo_world(), a->name, in[j],
                                              fz_ag_rows(a, mt.rank), out[j], rows, a->row,
                                              a->dt, &o, &req[j]),
                   RONDO_SUCCESS);
  }
  for (int j = 0; j < n; j++) {
    const fz_ag_t *a = &specs[j];
    mt_where("fused allgather '%s' (%s, rows of %zu, %s, %s)", a->name, mt_dtype_str(a->dt),
             a->row, a->ragged ? "rows differ per rank" : "the same rows everywhere",
             into == FZ_ALLOC ? "rondo's result"
             : into == FZ_INTO || j > 0 ? "into the caller's buffer" : "in place");
    size_t total = fz_ag_before(a, mt.size), es = mt_dtype_size(a->dt), n_got = 0;
    char *want = mt_alloc(total * es + 1);
    for (int q = 0, at = 0; q < mt.size; q++)
      for (size_t i = 0; i < fz_ag_rows(a, q) * a->row; i++)
        mt_store(a->dt, want, (size_t)at++, fz_value(q, j, i));
    void *got = NULL;
    if (into != FZ_ALLOC) {
      if (req[j] != NULL && MT_EQ_STATUS(rondo_wait(&req[j]), RONDO_SUCCESS)) {
        mt_check_elems("the gathered rows in the caller's buffer, as alone", a->dt, out[j],
                       want, total);
        MT_EQ_INT((unsigned char)out[j][total * es], 0xa5); /* nothing past them */
        mt_hash_record(out[j], total * es);
      }
    } else if (req[j] != NULL &&
               MT_EQ_STATUS(rondo_wait_result(&req[j], &got, &n_got), RONDO_SUCCESS) &&
               MT_EQ_INT(n_got, total)) {
      mt_check_elems("the gathered rows, as alone", a->dt, got, want, total);
      mt_hash_record(got, total * es);
    }
    free(got);
    free(want);
    if (!(into == FZ_INTO_IN_PLACE && j == 0))
      free(in[j]);
    free(out[j]);
  }
}

/* fz_allgathers under a timeline of its own (named after tag); what names
 * the case in failures. Returns the timeline's text (free it). */
static char *fz_traced_allgathers(const char *tag, const char *what, const fz_ag_t *specs, int n,
                                  const char *group, int into)
{
  char path[160];
  fz_path(path, sizeof path, tag);
  mt_where("%s: timeline %s", what, path);
  MT_EQ_STATUS(rondo_timeline_start(rondo_world(), path, 0), RONDO_SUCCESS);
  fz_allgathers(specs, n, group, into);
  MT_EQ_STATUS(rondo_timeline_stop(rondo_world()), RONDO_SUCCESS);
  char *text = fz_read(path);
  mt_where("%s: the timeline", what);
  return text;
}

/* rondo_allgather_into_async with recv_rows that the ranks' rows do not
 * fill (on the last rank), or an input overlapping the result elsewhere
 * than at this rank's rows: the cycle's allgathers fail on every rank,
 * the bad rank's with RONDO_ERR_INVALID_ARG, the others' with
 * RONDO_ERR_PEER; no data is written. Then the names work again. */
static void allgather_into_errors(void)
{
  int last = mt.rank == mt.size - 1;
  float buf[16], mine[2] = {(float)mt.rank, (float)mt.rank + 0.5f};
  for (int c = 0; c < 3; c++) {
    size_t recv_rows = (size_t)mt.size * 2 + (c == 0 && last);
    const void *in = mine;
    if (c == 1 && last) /* the first rank's rows, not this rank's */
      in = mt.size > 1 ? buf : buf + 1;
    memset(buf, 0, sizeof buf);
    if (c == 1 && last)
      memcpy((void *)in, mine, sizeof mine);
    rondo_request_t req = NULL;
    mt_where("rondo_allgather_into_async, case %d (%s)", c,
             c == 0 ? "recv_rows one too many on the last rank"
             : c == 1 ? "the last rank's input overlaps the result elsewhere"
                      : "good arguments again");
    MT_EQ_STATUS(rondo_allgather_into_async(rondo_world(), "agi.err", in, 2, buf, recv_rows, 1,
                                            RONDO_FLOAT32, NULL, &req),
                 RONDO_SUCCESS);
    rondo_status_t st = rondo_wait(&req);
    if (c == 2) {
      if (MT_EQ_STATUS(st, RONDO_SUCCESS))
        for (int q = 0; q < mt.size; q++) {
          MT_CHECK(buf[2 * q] == (float)q && buf[2 * q + 1] == (float)q + 0.5f,
                   "rank %d's rows: %g %g", q, buf[2 * q], buf[2 * q + 1]);
        }
      continue;
    }
    MT_EQ_STATUS(st, last ? RONDO_ERR_INVALID_ARG : RONDO_ERR_PEER);
    if (last)
      MT_CHECK(strstr(rondo_last_error(), c == 0 ? "rows add up to" : "overlaps") != NULL,
               "the message: %s", rondo_last_error());
    for (int i = 0; i < 2 * mt.size; i++) /* nothing moved */
      if (!(c == 1 && last && (in == buf ? i < 2 : i >= 1 && i < 3)))
        MT_CHECK(buf[i] == 0.0f, "element %d written: %g", i, buf[i]);
  }
}

/* Ready reduce-scatters of the same dtype, op and scales run as ONE
 * reduce-scatter, allgathers of the same dtype as ONE allgather, and give
 * what each would alone; other dtypes (and ops, scales) run apart; the
 * allgather's rows are asked for only where they differ per rank; a small
 * RONDO_FUSION_THRESHOLD splits the batches. A group makes the requests
 * ready in one cycle; the timeline shows which ran together. */
static void fused_collectives(void)
{
  int p = mt.size;
  char path[160];
  fz_path(path, sizeof path, "rs");
  mt_where("fused reduce-scatters: timeline %s", path);
  MT_EQ_STATUS(rondo_timeline_start(rondo_world(), path, 0), RONDO_SUCCESS);
  const fz_rs_t rs[] = {
      {"fz.rs.f32.0", RONDO_FLOAT32, RONDO_SUM, 1, 2, 1, 1, 0},
      {"fz.rs.f32.1", RONDO_FLOAT32, RONDO_SUM, (size_t)p + 2, 1, 1, 1, 1},
      {"fz.rs.f32.2", RONDO_FLOAT32, RONDO_SUM, 2 * (size_t)p + 1, 3, 1, 1, 0},
      {"fz.rs.i32.0", RONDO_INT32, RONDO_SUM, (size_t)p, 2, 1, 1, 0},
      {"fz.rs.i32.1", RONDO_INT32, RONDO_SUM, 3, 1, 1, 1, 1},
      {"fz.rs.avg.0", RONDO_FLOAT32, RONDO_AVG, (size_t)p + 1, 1, 2, 0.5, 2},
      {"fz.rs.avg.1", RONDO_FLOAT32, RONDO_AVG, 2, 2, 2, 0.5, 0},
  };
  fz_reduce_scatters(rondo_world(), rs, 7, "fz.rs");
  MT_EQ_STATUS(rondo_timeline_stop(rondo_world()), RONDO_SUCCESS);
  char *text = fz_read(path);
  mt_where("fused reduce-scatters: the timeline");
  static const char *const rs_f32[] = {"fz.rs.f32.0", "fz.rs.f32.1", "fz.rs.f32.2"},
                           *rs_i32[] = {"fz.rs.i32.0", "fz.rs.i32.1"},
                           *rs_avg[] = {"fz.rs.avg.0", "fz.rs.avg.1"};
  fz_expect(text, "REDUCESCATTER", rs_f32, 3, 3, NULL);
  fz_expect(text, "REDUCESCATTER", rs_i32, 2, 2, NULL); /* another dtype: apart */
  fz_expect(text, "REDUCESCATTER", rs_avg, 2, 2, NULL); /* another op and scales */
  free(text);

  const fz_ag_t ag[] = {
      {"fz.ag.f32.0", RONDO_FLOAT32, 3, 1, 1},
      {"fz.ag.f32.1", RONDO_FLOAT32, 2, 0, 2},
      {"fz.ag.f32.2", RONDO_FLOAT32, 1, 0, 0},
      {"fz.ag.i32.0", RONDO_INT32, 2, 1, 0},
  };
  text = fz_traced_allgathers("ag", "fused allgathers", ag, 4, "fz.ag", FZ_ALLOC);
  static const char *const ag_f32[] = {"fz.ag.f32.0", "fz.ag.f32.1", "fz.ag.f32.2"},
                           *ag_i32[] = {"fz.ag.i32.0"};
  /* one rank: its rows are everyone's */
  fz_expect(text, "ALLGATHER", ag_f32, 3, 3, p > 1 ? "exchanged" : "negotiated");
  fz_expect(text, "ALLGATHER", ag_i32, 1, 1, p > 1 ? "exchanged" : "negotiated");
  free(text);

  /* Into the caller's buffers (one in place): fused as the others, the
   * same results. */
  const fz_ag_t agi[] = {
      {"fz.agi.f32.0", RONDO_FLOAT32, 3, 1, 1},
      {"fz.agi.f32.1", RONDO_FLOAT32, 2, 0, 2},
      {"fz.agi.f32.2", RONDO_FLOAT32, 1, 1, 0},
  };
  text = fz_traced_allgathers("agi", "fused allgathers into the caller's buffers", agi, 3,
                              "fz.agi", FZ_INTO_IN_PLACE);
  static const char *const agi_f32[] = {"fz.agi.f32.0", "fz.agi.f32.1", "fz.agi.f32.2"};
  fz_expect(text, "ALLGATHER", agi_f32, 3, 3, p > 1 ? "exchanged" : "negotiated");
  free(text);
  const fz_ag_t agi_alone[] = {{"fz.agi.alone", RONDO_INT32, 5, 0, 3}};
  fz_allgathers(agi_alone, 1, NULL, FZ_INTO_IN_PLACE); /* from its own buffers */
  fz_allgathers(agi_alone, 1, NULL, FZ_INTO);

  /* The same rows everywhere: known from the negotiation, new (slow path)
   * and cached (fast path: every rank's cache bit says it has them); then
   * rows that differ on some rank (the cache no longer serves the name:
   * rank 0 decides again). A name cached with rows that differ is asked for
   * even when they are the same again (the fast path; a group held back
   * for a while would make it a slow path, so it is alone). */
  static const char *const age[] = {"fz.age.0", "fz.age.1"}, *agd[] = {"fz.agd"};
  for (int round = 0; round < 5; round++) {
    int ragged = round == 2 || round == 3;
    const fz_ag_t eq[] = {
        {"fz.age.0", RONDO_FLOAT64, 2, ragged, ragged ? 1 : 2},
        {"fz.age.1", RONDO_FLOAT64, 1, 0, ragged ? 1 : 3},
    };
    const fz_ag_t alone[] = {{"fz.agd", RONDO_INT64, 2, ragged, 2}};
    char tag[16], what[48];
    snprintf(tag, sizeof tag, "age%d", round);
    snprintf(what, sizeof what, "fused allgathers, round %d", round);
    text = round < 3 ? fz_traced_allgathers(tag, what, eq, 2, "fz.age", FZ_ALLOC)
                     : fz_traced_allgathers(tag, what, alone, 1, NULL, FZ_ALLOC);
    fz_expect(text, "ALLGATHER", round < 3 ? age : agd, round < 3 ? 2 : 1, round < 3 ? 2 : 1,
              p > 1 && round >= 2 ? "exchanged" : "negotiated");
    free(text);
  }

  /* RONDO_FUSION_THRESHOLD=256 on a comm of its own: three reduce-scatters
   * of 128 bytes run as two and one. */
  mt_where("fused reduce-scatters under RONDO_FUSION_THRESHOLD=256");
  rondo_comm_t c = NULL;
  setenv("RONDO_FUSION_THRESHOLD", "256", 1);
  rondo_status_t st = rondo_comm_create(MPI_COMM_WORLD, &c);
  unsetenv("RONDO_FUSION_THRESHOLD");
  if (!MT_EQ_STATUS(st, RONDO_SUCCESS))
    return;
  fz_path(path, sizeof path, "limit");
  MT_EQ_STATUS(rondo_timeline_start(c, path, 0), RONDO_SUCCESS);
  const fz_rs_t small[] = {
      {"fz.lim.0", RONDO_FLOAT32, RONDO_SUM, 8, 4, 1, 1, 0},
      {"fz.lim.1", RONDO_FLOAT32, RONDO_SUM, 16, 2, 1, 1, 0},
      {"fz.lim.2", RONDO_FLOAT32, RONDO_SUM, 32, 1, 1, 1, 0},
  };
  fz_reduce_scatters(c, small, 3, "fz.lim");
  MT_EQ_STATUS(rondo_timeline_stop(c), RONDO_SUCCESS);
  text = fz_read(path);
  mt_where("fused reduce-scatters under RONDO_FUSION_THRESHOLD=256: the timeline");
  static const char *const lim2[] = {"fz.lim.0", "fz.lim.1"}, *lim1[] = {"fz.lim.2"};
  fz_expect(text, "REDUCESCATTER", lim2, 2, 2, NULL);
  fz_expect(text, "REDUCESCATTER", lim1, 1, 1, NULL);
  free(text);
  MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
}

/* Rows from rank q to rank d: (q + 2 d) % 3, zero among them. */
static size_t a2a_rows(int q, int d) { return (size_t)((q + 2 * d) % 3); }

static void alltoallv(void)
{
  mt_where("alltoallv_async: rank q sends (q + 2d) %% 3 rows of 2 int64 to rank d");
  size_t *send = mt_alloc((size_t)mt.size * sizeof *send);
  size_t *recv = mt_alloc((size_t)mt.size * sizeof *recv), total = 0;
  for (int d = 0; d < mt.size; d++)
    total += send[d] = a2a_rows(mt.rank, d);
  int64_t *in = mt_alloc(total * 2 * sizeof *in + 1), *at = in;
  for (int d = 0; d < mt.size; d++)
    for (size_t k = 0; k < send[d] * 2; k++)
      *at++ = mt.rank * 10000 + d * 100 + (int64_t)k;
  rondo_request_t r = NULL;
  if (MT_EQ_STATUS(rondo_alltoallv_async(rondo_world(), "a2a", in, send, 2, RONDO_INT64, recv,
                                         NULL, &r),
                   RONDO_SUCCESS)) {
    void *res = NULL;
    size_t n = 0, want_n = 0;
    if (MT_EQ_STATUS(rondo_wait_result(&r, &res, &n), RONDO_SUCCESS)) {
      const int64_t *got = res;
      for (int q = 0; q < mt.size; q++) {
        MT_EQ_INT(recv[q], a2a_rows(q, mt.rank));
        for (size_t k = 0; k < a2a_rows(q, mt.rank) * 2 && want_n < n; k++, want_n++)
          if (!MT_EQ_INT(got[want_n], q * 10000 + mt.rank * 100 + (int64_t)k))
            break;
      }
      MT_EQ_INT(n, want_n);
    }
    free(res);
  }
  if (mt.size > 1) {
    mt_where("alltoallv_async whose row length differs on one rank");
    size_t zeros[8] = {0};
    if (MT_EQ_STATUS(rondo_alltoallv_async(rondo_world(), "a2a.row", in, zeros,
                                           mt.rank == mt.size - 1 ? 3 : 2, RONDO_INT64, recv,
                                           NULL, &r),
                     RONDO_SUCCESS)) {
      MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_MISMATCH);
      MT_CHECK(strstr(rondo_last_error(), "elements per row") != NULL, "names the field: %s",
               rondo_last_error());
    }
  }
  MT_EQ_STATUS(rondo_alltoallv_async(rondo_world(), "a2a.null", in, NULL, 2, RONDO_INT64, recv,
                                     NULL, &r),
               RONDO_ERR_INVALID_ARG);
  free(in);
  free(send);
  free(recv);
}

/* Rank 0 joins first; the others' requests that need every rank fail with
 * RONDO_ERR_JOINED on all of them, all-reduces are still served. */
static void no_join(void)
{
  if (mt.size < 2)
    return;
  mt_where("rank 0 joined: allgather with RONDO_ASYNC_NO_JOIN, reduce-scatter, all-to-all");
  int last = -1;
  if (mt.rank == 0) {
    if (MT_EQ_STATUS(rondo_join(rondo_world(), &last), RONDO_SUCCESS))
      MT_CHECK(last != 0, "the last to join is not rank 0 (%d)", last);
    return;
  }
  float a[4] = {1, 1, 1, 1}, out[4];
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.flags = RONDO_ASYNC_NO_JOIN;
  rondo_request_t r = NULL;
  if (MT_EQ_STATUS(rondo_allgather_async(rondo_world(), "nj.gather", a, 1, 4, RONDO_FLOAT32, &o,
                                         &r),
                   RONDO_SUCCESS)) {
    MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_JOINED);
    MT_CHECK(strstr(rondo_last_error(), "rank(s) 0 joined") != NULL, "names rank 0: %s",
             rondo_last_error());
  }
  if (MT_EQ_STATUS(rondo_reduce_scatter_async(rondo_world(), "nj.rs", a, out, 4, 1,
                                              RONDO_FLOAT32, RONDO_SUM, NULL, &r),
                   RONDO_SUCCESS))
    MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_JOINED);
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "nj.sum", a, out, 4, RONDO_FLOAT32,
                                         RONDO_SUM, &o, &r),
                   RONDO_SUCCESS))
    MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_JOINED);
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "nj.served", a, out, 4, RONDO_FLOAT32,
                                         RONDO_SUM, NULL, &r),
                   RONDO_SUCCESS) &&
      MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
    MT_CHECK(out[0] == (float)(mt.size - 1), "served with rank 0's zeros: %g", out[0]);
  if (MT_EQ_STATUS(rondo_join(rondo_world(), &last), RONDO_SUCCESS))
    MT_CHECK(last != 0, "the last to join is not rank 0 (%d)", last);
}

/* rondo_timeline_start/stop at run time: rank 0 writes a valid trace with
 * the names run while it was on, and nothing after the stop. */
static void timeline_runtime(void)
{
  char path[128];
  snprintf(path, sizeof path, "%s/rondo-tl-%ld.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (long)getpid());
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  mt_where("rondo_timeline_start(%s)", path);
  float a[2] = {1, 2};
  rondo_request_t r = NULL;
  MT_EQ_STATUS(rondo_timeline_mark(rondo_world(), "before the start"), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_timeline_start(rondo_world(), path, 1), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_timeline_mark(rondo_world(), "step \"1\" begins"), RONDO_SUCCESS);
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "tl.during", a, a, 2, RONDO_FLOAT32,
                                         RONDO_SUM, NULL, &r),
                   RONDO_SUCCESS))
    MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_timeline_stop(rondo_world()), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_timeline_mark(rondo_world(), "after the stop"), RONDO_SUCCESS);
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "tl.after", a, a, 2, RONDO_FLOAT32,
                                         RONDO_SUM, NULL, &r),
                   RONDO_SUCCESS))
    MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS);
  MT_EQ_STATUS(rondo_timeline_stop(rondo_world()), RONDO_SUCCESS); /* none running: no-op */
  if (mt.rank == 0) {
    FILE *f = fopen(path, "r");
    char text[65536] = "";
    size_t n = f != NULL ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f != NULL)
      fclose(f);
    text[n] = '\0';
    MT_CHECK(n > 4 && text[0] == '[' && strstr(text, "\n]\n") == text + n - 3,
             "a closed JSON array (%zu bytes)", n);
    MT_CHECK(strstr(text, "tl.during") != NULL && strstr(text, "tl.after") == NULL,
             "the trace holds what ran while it was on, only");
    MT_CHECK(strstr(text, "\"cycle\"") != NULL, "cycle marks (mark_cycles 1)");
    /* the application's mark: escaped, on the track "marks", only while on */
    const char *mark = strstr(text, "\"name\":\"step \\\"1\\\" begins\",\"cat\":\"app\",\"ph\":\"i\"");
    MT_CHECK(mark != NULL, "rondo_timeline_mark's event in the trace");
    MT_CHECK(strstr(text, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":") &&
                 strstr(text, "\"args\":{\"name\":\"marks\"}"),
             "the marks' track is named");
    MT_CHECK(strstr(text, "before the start") == NULL && strstr(text, "after the stop") == NULL,
             "marks without a timeline are dropped");
    unlink(path);
  } else {
    MT_CHECK(access(path, F_OK) != 0 || 1, "only rank 0 writes");
  }
  mt_where("rondo_timeline_start refusals");
  MT_EQ_STATUS(rondo_timeline_start(rondo_world(), "", 0), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_timeline_start(rondo_world(), NULL, 0), RONDO_ERR_INVALID_ARG);
  char longer[300];
  memset(longer, 'm', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  MT_EQ_STATUS(rondo_timeline_mark(rondo_world(), NULL), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_timeline_mark(rondo_world(), ""), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_timeline_mark(rondo_world(), longer), RONDO_ERR_INVALID_ARG);
  MT_EQ_STATUS(rondo_timeline_mark(NULL, "x"), RONDO_ERR_INVALID_COMM);
  if (mt.rank == 0)
    MT_EQ_STATUS(rondo_timeline_start(rondo_world(), "/nonexistent/dir/t.json", 0),
                 RONDO_ERR_IO);
}

/* ---- threads -------------------------------------------------------------------------------- */

enum { THREADS = 4, PER_THREAD = 25 };
typedef struct {
  int t;
  int64_t buf[PER_THREAD][6];
  rondo_status_t st[PER_THREAD];
} thread_job_t;

static void *thread_main(void *arg)
{
  thread_job_t *j = arg;
  rondo_request_t r[PER_THREAD];
  for (int i = 0; i < PER_THREAD; i++) {
    char name[32];
    snprintf(name, sizeof name, "thread%d.%d", j->t, i);
    for (int e = 0; e < 6; e++)
      j->buf[i][e] = (mt.rank + 1) * (j->t * 1000 + i * 10 + e);
    j->st[i] = rondo_allreduce_async(rondo_world(), name, j->buf[i], j->buf[i], 6, RONDO_INT64,
                                     RONDO_SUM, NULL, &r[i]);
  }
  for (int i = 0; i < PER_THREAD; i++)
    if (j->st[i] == RONDO_SUCCESS)
      j->st[i] = rondo_wait(&r[i]);
  return NULL;
}

static void threads(void)
{
  mt_where("%d threads submit %d names each at once", THREADS, PER_THREAD);
  static thread_job_t jobs[THREADS];
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) {
    jobs[t].t = t;
    pthread_create(&th[t], NULL, thread_main, &jobs[t]);
  }
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  int64_t tri = mt.size * (mt.size + 1) / 2;
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < PER_THREAD; i++) {
      if (!MT_EQ_STATUS(jobs[t].st[i], RONDO_SUCCESS))
        continue;
      for (int e = 0; e < 6; e++)
        if (!MT_EQ_INT(jobs[t].buf[i][e], tri * (t * 1000 + i * 10 + e)))
          break;
    }
}

/* ---- blocking requests: RONDO_ASYNC_WAIT_NOW ------------------------------------------------ */

/* Submitted with RONDO_ASYNC_WAIT_NOW and waited for at once, as the
 * bindings' blocking calls do: the waiting thread runs the cycles
 * (eng_help), and a small cached all-reduce rides in the negotiation.
 * Every dtype and op, counts around the inline limit (256 bytes on one
 * node, 64 across nodes: 32/33 elements of 8 bytes ... 256/257 of 1), in
 * place and out of place; the first round negotiates the names, the later
 * ones hit the cache. */
typedef struct {
  rondo_request_t req;
  rondo_status_t status;
} wait_arg_t;

static void *wait_on_thread(void *p)
{
  wait_arg_t *a = p;
  a->status = rondo_wait(&a->req);
  return NULL;
}

static void wait_now(void)
{
  static const size_t wcounts[] = {0, 1, 2, 7, 8, 9, 32, 33, 64, 65, 128, 129, 256, 257, 1000};
  const size_t nwc = sizeof wcounts / sizeof wcounts[0];
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.flags = RONDO_ASYNC_WAIT_NOW;
  for (int round = 0; round < 3; round++)
    for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++)
      for (int k = 0; k < 5; k++)
        for (size_t c = 0; c < nwc; c++) {
          /* oversubscribed: a third of the cases, at 4-5 ranks a sixth */
          if (!mt.full && (c + (size_t)dt + (size_t)k) % (mt.crowded ? 6 : 3) != 0)
            continue;
          rondo_op_t op = ops[k];
          size_t count = wcounts[c], bytes = count * mt_dtype_size((rondo_dtype_t)dt);
          int in_place = (round + (int)c) % 2;
          char name[48];
          snprintf(name, sizeof name, "now.%d.%d.%zu", dt, k, c);
          mt_where("wait-now round %d: %s %s x %zu, %s", round,
                   mt_dtype_str((rondo_dtype_t)dt), mt_op_str(op), count,
                   in_place ? "in place" : "out of place");
          uint64_t first = (uint64_t)(dt * 100 + k * 10) * 1000 + c;
          void *in = mt_alloc(bytes), *out = in_place ? in : mt_alloc(bytes);
          void *want = mt_alloc(bytes);
          mt_fill_input((rondo_dtype_t)dt, op, first, count, in);
          mt_fill_reduced((rondo_dtype_t)dt, op, first, count, want);
          rondo_request_t r;
          if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), name, in, out, count,
                                                 (rondo_dtype_t)dt, op, &o, &r),
                           RONDO_SUCCESS) &&
              MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
            mt_check_elems(name, (rondo_dtype_t)dt, out, want, count);
          mt_hash_record(out, bytes);
          if (!in_place)
            free(out);
          free(in);
          free(want);
        }

  /* Among asynchronous requests in flight: the engine thread runs it (it
   * was not woken at submission; the waiter's decline wakes it). */
  mt_where("wait-now among asynchronous requests");
  int64_t a[4][3], b[3];
  rondo_request_t ra[4], rb;
  for (int i = 0; i < 4; i++) {
    char name[32];
    snprintf(name, sizeof name, "async.%d", i);
    for (int e = 0; e < 3; e++)
      a[i][e] = mt.rank + i + e;
    MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), name, a[i], a[i], 3, RONDO_INT64,
                                       RONDO_SUM, NULL, &ra[i]),
                 RONDO_SUCCESS);
  }
  for (int e = 0; e < 3; e++)
    b[e] = 2 * mt.rank + e;
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "blocking", b, b, 3, RONDO_INT64,
                                         RONDO_MAX, &o, &rb),
                   RONDO_SUCCESS) &&
      MT_EQ_STATUS(rondo_wait(&rb), RONDO_SUCCESS))
    for (int e = 0; e < 3; e++)
      MT_EQ_INT(b[e], 2 * (mt.size - 1) + e);
  int64_t tri = mt.size * (mt.size - 1) / 2;
  for (int i = 0; i < 4; i++)
    if (MT_EQ_STATUS(rondo_wait(&ra[i]), RONDO_SUCCESS))
      for (int e = 0; e < 3; e++)
        MT_EQ_INT(a[i][e], tri + mt.size * (i + e));

  /* Waited for by another thread than its submitter (a framework's
   * completion thread): the engine thread runs it, and it completes. */
  mt_where("wait-now, waited for by another thread");
  float w[2] = {2.0f, (float)mt.rank};
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "other waiter", w, w, 2, RONDO_FLOAT32,
                                         RONDO_SUM, &o, &rb),
                   RONDO_SUCCESS)) {
    pthread_t waiter;
    wait_arg_t arg = {rb, RONDO_ERR_INTERNAL};
    if (MT_EQ_INT(pthread_create(&waiter, NULL, wait_on_thread, &arg), 0)) {
      pthread_join(waiter, NULL);
      if (MT_EQ_STATUS(arg.status, RONDO_SUCCESS)) {
        MT_EQ_INT((int64_t)w[0], 2 * mt.size);
        MT_EQ_INT((int64_t)w[1], tri);
      }
    } else {
      rondo_wait(&rb);
    }
  }

  /* Not waited for at once: it still completes (at the engine thread's
   * next wake-up, within 50 ms while idle). The 60 s bound only catches a
   * request that never completes: a loaded machine may take seconds. */
  mt_where("wait-now, waited for only later");
  float f[2] = {1.0f, (float)mt.rank};
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "late waiter", f, f, 2, RONDO_FLOAT32,
                                         RONDO_SUM, &o, &rb),
                   RONDO_SUCCESS)) {
    int done = 0;
    for (double until = mt_now() + 60; !done && mt_now() < until;) {
      MT_EQ_STATUS(rondo_test(rb, &done), RONDO_SUCCESS);
      if (!done)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    MT_CHECK(done, "a RONDO_ASYNC_WAIT_NOW request nobody waited for did not complete in 60 s");
    if (MT_EQ_STATUS(rondo_wait(&rb), RONDO_SUCCESS)) {
      MT_EQ_INT((int64_t)f[0], mt.size);
      MT_EQ_INT((int64_t)f[1], tri);
    }
  }

  /* A mismatch still fails on every rank, also once the name is cached. */
  for (int round = 0; round < 2; round++) {
    mt_where("wait-now mismatch, round %d", round);
    double d[3] = {1, 2, 3};
    size_t count = round == 1 && mt.size > 1 && mt.rank == mt.size - 1 ? 2 : 3;
    if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "now.mismatch", d, d, count,
                                           RONDO_FLOAT64, RONDO_SUM, &o, &rb),
                     RONDO_SUCCESS))
      MT_EQ_STATUS(rondo_wait(&rb), round == 1 && mt.size > 1 ? RONDO_ERR_MISMATCH
                                                               : RONDO_SUCCESS);
  }
}

/* Threads that each make blocking requests at once: one at a time may run
 * the cycles, the others are served by it or by the engine thread. */
static void *wait_now_thread(void *arg)
{
  thread_job_t *j = arg;
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.flags = RONDO_ASYNC_WAIT_NOW;
  for (int i = 0; i < PER_THREAD; i++) {
    char name[32];
    snprintf(name, sizeof name, "nowthread%d.%d", j->t, i % 3);
    for (int e = 0; e < 6; e++)
      j->buf[i][e] = (mt.rank + 1) * (j->t * 1000 + i * 10 + e);
    rondo_request_t r;
    j->st[i] = rondo_allreduce_async(rondo_world(), name, j->buf[i], j->buf[i], 6, RONDO_INT64,
                                     RONDO_SUM, &o, &r);
    if (j->st[i] == RONDO_SUCCESS)
      j->st[i] = rondo_wait(&r);
  }
  return NULL;
}

static void wait_now_threads(void)
{
  mt_where("%d threads make blocking requests at once", THREADS);
  static thread_job_t jobs[THREADS];
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) {
    jobs[t].t = t;
    pthread_create(&th[t], NULL, wait_now_thread, &jobs[t]);
  }
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  int64_t tri = mt.size * (mt.size + 1) / 2;
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < PER_THREAD; i++) {
      if (!MT_EQ_STATUS(jobs[t].st[i], RONDO_SUCCESS))
        continue;
      for (int e = 0; e < 6; e++)
        if (!MT_EQ_INT(jobs[t].buf[i][e], tri * (t * 1000 + i * 10 + e)))
          break;
    }
}

/* ---- join --------------------------------------------------------------------------------- */

static void join(void)
{
  int steps = 2 + mt.rank; /* rank r takes 2 + r steps, then joins */
  mt_where("join: %d steps, then rondo_join", steps);
  for (int s = 0; s < steps; s++) {
    int32_t v[5], w[5];
    double d[3];
    for (int e = 0; e < 5; e++)
      v[e] = mt.rank + 1;
    for (int e = 0; e < 3; e++)
      d[e] = mt.rank + 1;
    rondo_request_t r, ra, rm;
    MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "epoch.sum", v, w, 5, RONDO_INT32, RONDO_SUM,
                                       NULL, &r),
                 RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "epoch.avg", d, d, 3, RONDO_FLOAT64,
                                       RONDO_AVG, NULL, &ra),
                 RONDO_SUCCESS);
    int32_t mn = 10 + mt.rank;
    MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "epoch.min", &mn, &mn, 1, RONDO_INT32,
                                       RONDO_MIN, NULL, &rm),
                 RONDO_SUCCESS);
    /* ranks q with 2 + q > s are still stepping; joined ranks count as 0 */
    int32_t sum = 0, minv = INT32_MAX;
    for (int q = 0; q < mt.size; q++)
      if (2 + q > s) {
        sum += q + 1;
        minv = 10 + q < minv ? 10 + q : minv;
      }
    if (MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
      MT_EQ_INT(w[4], sum);
    if (MT_EQ_STATUS(rondo_wait(&ra), RONDO_SUCCESS))
      MT_CHECK(d[0] == (double)sum / mt.size, "AVG divides by the comm size: %.17g vs %.17g",
               d[0], (double)sum / mt.size);
    if (MT_EQ_STATUS(rondo_wait(&rm), RONDO_SUCCESS))
      MT_EQ_INT(mn, minv);
  }
  int last = -1;
  if (MT_EQ_STATUS(rondo_join(rondo_world(), &last), RONDO_SUCCESS))
    MT_EQ_INT(last, mt.size - 1);
  mt_where("after join, the engine works as before");
  int32_t x = 1;
  rondo_request_t r;
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "after.join", &x, &x, 1, RONDO_INT32,
                                         RONDO_SUM, NULL, &r),
                   RONDO_SUCCESS) &&
      MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
    MT_EQ_INT(x, mt.size);
}

/* ---- join before the first request (a rank with no data at all) ----------------------- */

static void join_first(void)
{
  mt_where("join before any submission: rank 0 joins at once, the others submit");
  rondo_comm_t c = NULL;
  if (!MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS))
    return;
  int last = -1;
  if (mt.rank != 0) {
    float x = (float)mt.rank;
    rondo_request_t r;
    if (MT_EQ_STATUS(rondo_allreduce_async(c, "only.others", &x, &x, 1, RONDO_FLOAT32,
                                           RONDO_SUM, NULL, &r),
                     RONDO_SUCCESS) &&
        MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
      MT_CHECK(x == (float)(mt.size * (mt.size - 1) / 2), "joined rank 0 adds 0: %g", x);
  }
  /* Rank 0 joined in an earlier cycle than the others, so it is not last. */
  if (MT_EQ_STATUS(rondo_join(c, &last), RONDO_SUCCESS))
    MT_CHECK(mt.size == 1 ? last == 0 : last >= 1 && last < mt.size, "last to join: %d", last);
  MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
}

/* ---- request handles: the callback sees its request done, stale handles -------------- */

typedef struct {
  int done_inside;           /* rondo_test in the callback */
  rondo_status_t result_st;  /* rondo_request_result in the callback */
  rondo_status_t wait_st;    /* rondo_wait in the callback (must refuse) */
  size_t rows;
  int32_t first;
} cb_seen_t;

static void on_gathered(rondo_request_t req, rondo_status_t st, void *user)
{
  cb_seen_t *seen = user;
  void *buf = NULL;
  size_t count = 0;
  (void)st;
  rondo_test(req, &seen->done_inside);
  seen->result_st = rondo_request_result(req, &buf, &count);
  seen->rows = count;
  seen->first = buf != NULL && count > 0 ? ((int32_t *)buf)[0] : -1;
  free(buf);
  rondo_request_t copy = req;
  seen->wait_st = rondo_wait(&copy);
}

static void request_handles(void)
{
  mt_where("an allgather callback reads its result");
  cb_seen_t seen = {0};
  int32_t mine[2] = {100 + mt.rank, 100 + mt.rank};
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.callback = on_gathered;
  o.user = &seen;
  rondo_request_t r = NULL;
  if (MT_EQ_STATUS(rondo_allgather_async(rondo_world(), "cb.gather", mine, 1, 2, RONDO_INT32,
                                         &o, &r),
                   RONDO_SUCCESS) &&
      MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS)) {
    MT_EQ_INT(seen.done_inside, 1);
    MT_EQ_STATUS(seen.result_st, RONDO_SUCCESS);
    MT_EQ_INT((long long)seen.rows, 2LL * mt.size);
    MT_EQ_INT(seen.first, 100);
    MT_EQ_STATUS(seen.wait_st, RONDO_ERR_INVALID_ARG);
    MT_CHECK(r == NULL, "rondo_wait sets the handle to NULL");
  }

  mt_where("a stale copy of a handle is refused, also after the slot is reused");
  float v = 1;
  rondo_request_t a = NULL, stale_copy, b = NULL;
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "stale.a", &v, &v, 1, RONDO_FLOAT32,
                                     RONDO_SUM, NULL, &a),
               RONDO_SUCCESS);
  stale_copy = a;
  MT_EQ_STATUS(rondo_wait(&a), RONDO_SUCCESS);
  int done = 7;
  MT_EQ_STATUS(rondo_test(stale_copy, &done), RONDO_ERR_INVALID_ARG);
  MT_EQ_INT(done, 7);
  void *buf;
  size_t count;
  MT_EQ_STATUS(rondo_request_result(stale_copy, &buf, &count), RONDO_ERR_INVALID_ARG);
  /* The next request likely takes the same slot: the old handle stays stale. */
  MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "stale.b", &v, &v, 1, RONDO_FLOAT32,
                                     RONDO_SUM, NULL, &b),
               RONDO_SUCCESS);
  rondo_request_t again = stale_copy;
  MT_EQ_STATUS(rondo_wait(&again), RONDO_ERR_INVALID_ARG);
  MT_CHECK(strstr(rondo_last_error(), "not a live request") != NULL, "message: %s",
           rondo_last_error());
  MT_EQ_STATUS(rondo_wait(&b), RONDO_SUCCESS);
  rondo_request_t made_up = (rondo_request_t)(uintptr_t)0x12345;
  MT_EQ_STATUS(rondo_test(made_up, &done), RONDO_ERR_INVALID_ARG);
}

/* ---- shutdown -------------------------------------------------------------------------------- */

static void shutdown_pending(void)
{
  mt_where("destroy a comm with a request pending on rank 0");
  rondo_comm_t c = NULL;
  if (!MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS))
    return;
  float v = 1, orphan = 2;
  rondo_request_t r = NULL, ro = NULL;
  if (mt.rank == 0 || mt.size == 1)
    MT_EQ_STATUS(rondo_allreduce_async(c, "orphan", &orphan, &orphan, 1, RONDO_FLOAT32, RONDO_SUM,
                                       NULL, &ro),
                 RONDO_SUCCESS);
  if (mt.size > 1) {
    MT_EQ_STATUS(rondo_allreduce_async(c, "fine", &v, &v, 1, RONDO_FLOAT32, RONDO_SUM, NULL, &r),
                 RONDO_SUCCESS);
    if (r != NULL && MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
      MT_CHECK(v == (float)mt.size, "fine = %g", v);
  } else if (ro != NULL) {
    MT_EQ_STATUS(rondo_wait(&ro), RONDO_SUCCESS); /* one rank: nothing is missing */
  }
  MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
  if (ro != NULL) {
    MT_EQ_STATUS(rondo_wait(&ro), RONDO_ERR_SHUT_DOWN);
    MT_CHECK(strstr(rondo_last_error(), "destroyed") != NULL, "message: %s", rondo_last_error());
  }
  float z = 0;
  MT_EQ_STATUS(rondo_allreduce_async(c, "late", &z, &z, 1, RONDO_FLOAT32, RONDO_SUM, NULL, &r),
               RONDO_ERR_INVALID_COMM);
}

/* ---- soak --------------------------------------------------------------------------------------- */

static long rss_kib(void)
{
  long pages = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL)
    return -1;
  if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
    rss = -1;
  fclose(f);
  return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void soak(int total)
{
  enum { BATCH = 100 };
  mt_where("soak: %d small requests", total);
  float buf[BATCH][4];
  rondo_request_t r[BATCH];
  long before = 0;
  int wrong = 0;
  for (int done = 0; done < total; done += BATCH) {
    if (done == total / 10)
      before = rss_kib();
    for (int i = 0; i < BATCH; i++) {
      char name[32];
      snprintf(name, sizeof name, "soak.%d", (done / BATCH % 7) * BATCH + i);
      for (int e = 0; e < 4; e++)
        buf[i][e] = (float)(mt.rank + e);
      if (rondo_allreduce_async(rondo_world(), name, buf[i], buf[i], 4, RONDO_FLOAT32, RONDO_SUM,
                                NULL, &r[i]) != RONDO_SUCCESS)
        wrong++, r[i] = NULL;
    }
    for (int i = 0; i < BATCH; i++) {
      if (r[i] == NULL || rondo_wait(&r[i]) != RONDO_SUCCESS)
        wrong++;
      else if (buf[i][3] != (float)(mt.size * (mt.size - 1) / 2 + 3 * mt.size))
        wrong++;
    }
  }
  long after = rss_kib();
  MT_EQ_INT(wrong, 0);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  /* The sanitizers keep freed memory in quarantine: RSS says nothing here;
   * the plain build checks it, the sanitizers check for leaks. */
#else
  MT_CHECK(before > 0 && after - before < 4096,
           "RSS grew from %ld KiB to %ld KiB over %d requests", before, after, total * 9 / 10);
#endif
  if (mt.rank == 0)
    printf("soak: %d requests, RSS %ld -> %ld KiB\n", total, before, after);
}

/* ---- stall ---------------------------------------------------------------------------------------- */

/* Rank 0's stderr goes to a file while fn runs; *text gets what was written. */
static void capture_stderr(void (*fn)(void), char *text, size_t len)
{
  char log[] = "/tmp/rondo-stall-XXXXXX";
  fflush(stderr);
  int fd = mkstemp(log), saved = dup(2);
  dup2(fd, 2);
  fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  FILE *f = fopen(log, "r");
  size_t n = f ? fread(text, 1, len - 1, f) : 0;
  text[n] = '\0';
  if (f)
    fclose(f);
  close(fd);
  unlink(log);
}

static void stuck(void)
{
  float x = 1;
  rondo_request_t r;
  double t0 = mt_now();
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "stuck", &x, &x, 1, RONDO_FLOAT32,
                                         RONDO_SUM, NULL, &r),
                   RONDO_SUCCESS)) {
    MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_STALLED);
    MT_CHECK(strstr(rondo_last_error(), "'stuck'") && strstr(rondo_last_error(), "rank(s) 1"),
             "stall message: %s", rondo_last_error());
  }
  double waited = mt_now() - t0;
  MT_CHECK(waited >= 2.5, "failed after %.1f s, RONDO_STALL_ABORT_SEC=3", waited);
}

static void stall(void)
{
  mt_where("stall: only rank 0 submits 'stuck'");
  float x = 1;
  rondo_request_t r;
  /* every rank's engine runs (it negotiates even with nothing pending) */
  if (MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), "warmup", &x, &x, 1, RONDO_FLOAT32,
                                         RONDO_SUM, NULL, &r),
                   RONDO_SUCCESS))
    MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS);
  if (mt.rank == 0) {
    char text[4096];
    capture_stderr(stuck, text, sizeof text);
    MT_CHECK(strstr(text, "WARN stall:") && strstr(text, "'stuck'") &&
                 strstr(text, "missing on ranks 1"),
             "stall warning in the log: %s", text);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- engines that never started ----------------------------------------------------- */

static rondo_comm_t lonely_comm;

static void lonely(void)
{
  float x = 1;
  rondo_request_t r;
  if (MT_EQ_STATUS(rondo_allreduce_async(lonely_comm, "lonely", &x, &x, 1, RONDO_FLOAT32,
                                         RONDO_SUM, NULL, &r),
                   RONDO_SUCCESS)) {
    MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_STALLED);
    MT_CHECK(strstr(rondo_last_error(), "'lonely'") &&
                 strstr(rondo_last_error(), "did not start this comm's engine"),
             "stall message: %s", rondo_last_error());
  }
}

/* Rank 0 submits on comms where the other ranks never start their engines:
 * with RONDO_STALL_WARN_SEC=1 RONDO_STALL_ABORT_SEC=2 rank 0 warns, naming
 * the ranks, and its request fails with RONDO_ERR_STALLED while the others
 * are busy elsewhere; when they destroy the comm without having submitted,
 * rank 0's request fails with RONDO_ERR_SHUT_DOWN naming them. Neither hangs. */
static void unstarted(void)
{
  mt_where("stall against ranks whose engine never started");
  if (!MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &lonely_comm), RONDO_SUCCESS))
    return;
  if (mt.rank == 0) {
    char text[4096], want[64];
    capture_stderr(lonely, text, sizeof text);
    snprintf(want, sizeof want, "rank(s) 1%s did not start", mt.size > 2 ? ",2" : "");
    MT_CHECK(strstr(text, "WARN stall:") && strstr(text, want), "stall warning: %s", text);
  } else {
    sleep(3); /* busy elsewhere past the abort time */
  }
  MT_EQ_STATUS(rondo_comm_destroy(&lonely_comm), RONDO_SUCCESS);

  mt_where("ranks that never started their engine destroy the comm");
  rondo_comm_t c = NULL;
  if (!MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS))
    return;
  if (mt.rank == 0) {
    float x = 1;
    rondo_request_t r;
    if (MT_EQ_STATUS(rondo_allreduce_async(c, "gone", &x, &x, 1, RONDO_FLOAT32, RONDO_SUM, NULL,
                                           &r),
                     RONDO_SUCCESS)) {
      MT_EQ_STATUS(rondo_wait(&r), RONDO_ERR_SHUT_DOWN);
      MT_CHECK(strstr(rondo_last_error(), "'gone'") &&
                   strstr(rondo_last_error(), "destroyed the comm"),
               "shutdown message: %s", rondo_last_error());
    }
  }
  MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
}

int main(int argc, char **argv)
{
  if (mt_rondo_start(&argc, &argv, "test_engine"))
    return 1;
  const char *mode = getenv("MPITEST_ENGINE");
  int big = mt.size <= 2 || mt.full;
  if (mode != NULL && (strcmp(mode, "stall") == 0 || strcmp(mode, "unstarted") == 0)) {
    if (mt.size < 2) {
      int rc = mt_skip("the stall tests need 2 ranks");
      rondo_finalize();
      return rc;
    }
    if (strcmp(mode, "stall") == 0)
      stall();
    else
      unstarted();
  } else if (mode != NULL && strcmp(mode, "basic") == 0) {
    random_order(80, 2);
  } else if (mode != NULL && strcmp(mode, "fused") == 0) {
    fused_collectives();
  } else {
    random_order(big ? 80 : 24, big ? 3 : 2);
    scales_callbacks_groups();
    bcast_allgather();
    errors();
    allgather_into_errors();
    tags_and_flags();
    refusals();
    reduce_scatter();
    reduce_async();
    fused_collectives();
    alltoallv();
    no_join();
    timeline_runtime();
    threads();
    wait_now();
    wait_now_threads();
    join();
    join_first();
    request_handles();
    shutdown_pending();
    soak(big ? 20000 : 1000);
  }
  int rc = mt_finish();
  rondo_finalize();
  return rc;
}
