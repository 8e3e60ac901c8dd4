/*
 * test_interpose - librondo-mpi under a plain MPI program. Built twice from
 * this file: test_interpose knows nothing of rondo and runs with
 * librondo-mpi preloaded (a "preload" line in its .mpi file);
 * test_interpose_linked is linked against librondo-mpi (before MPI). Both
 * find rondo_mpi_counts() at run time, so the same checks serve both.
 *
 * Every call is made twice on the same input: through MPI's name (the
 * interposer decides) and through PMPI_ (MPI itself). Both results must
 * equal the closed form and each other, and the interposer's counts must
 * say the call was taken over exactly where this run's RONDO_MPI_INTERCEPT
 * and the call's datatype, op and communicator allow (the rules of
 * interpose/calls.c, restated here independently):
 *   - MPI_Allreduce: every datatype rondo reduces exactly and several it
 *     does not (unsigned, long double: passed), ops SUM PROD MIN MAX and
 *     ones rondo does not have (BAND, LOR, MAXLOC on MPI_2INT and
 *     MPI_DOUBLE_INT, a user-defined op: passed), counts 0 to 4099, in
 *     place and not;
 *   - MPI_Reduce_scatter_block and MPI_Reduce_scatter (uneven recvcounts,
 *     zeros among them, all zero), in place and not, and with a derived
 *     datatype and a user-defined op (passed); MPI_Iallreduce (with
 *     MPI_THREAD_MULTIPLE) waited for together with point-to-point
 *     requests, and on a new communicator first passed, then taken over
 *     once a blocking call made its rondo comm;
 *   - MPI_Allgather, MPI_Allgatherv and MPI_Bcast with contiguous, derived
 *     contiguous and strided (packed) datatypes, mixed across send and
 *     receive sides and across ranks, in place; MPI_Allgatherv with uneven
 *     counts (zeros among them), blocks packed, with gaps, reversed, and
 *     laid out differently on different ranks; MPI_Barrier;
 *   - communicators from MPI_Comm_dup, MPI_Comm_split, MPI_Comm_create,
 *     freed and made again; an intercommunicator (passed);
 *   - MPI_ERRORS_RETURN: counts that differ across ranks (MPI_Allreduce's
 *     count, MPI_Reduce_scatter's and MPI_Allgatherv's recvcounts) fail
 *     with MPI_ERR_ARG on every rank instead of hanging;
 *   - MPITEST_INTERPOSE=mismatch: ranks that disagree on
 *     RONDO_MPI_INTERCEPT all stay inactive (everything goes to MPI);
 *   - MPITEST_INTERPOSE=threads: MPI_THREAD_MULTIPLE, and two threads
 *     reducing on two communicators at once.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "rondo-mpi.h"

#include "base/leakcheck.h" /* RONDO_LEAKCHECK_PAUSE around MPI_Init */

#ifndef TEST_NAME
#define TEST_NAME "test_interpose"
#endif

static int rank, size, checks, failures;
static const char *where = "start";

#define CHECK(cond, ...)                                                                \
  do {                                                                                  \
    checks++;                                                                           \
    if (!(cond)) {                                                                      \
      failures++;                                                                       \
      if (failures <= 40) {                                                             \
        fprintf(stderr, "FAIL rank %d (%s): ", rank, where);                            \
        fprintf(stderr, __VA_ARGS__);                                                   \
        fprintf(stderr, "\n");                                                          \
      }                                                                                 \
    }                                                                                   \
  } while (0)

static int (*counts_fn)(MPI_Comm, rondo_mpi_call_t, long *, long *);
static int (*active_fn)(void);

/* ---- what this run's RONDO_MPI_INTERCEPT asks for -------------------------------------- */

static const char *const names[RONDO_MPI_CALLS] = {
    "allreduce", "iallreduce", "reduce_scatter_block", "allgather",
    "bcast",     "barrier",    "reduce_scatter",       "allgatherv"};
static int on[RONDO_MPI_CALLS];
static long lo[RONDO_MPI_CALLS], hi[RONDO_MPI_CALLS];

/* The grammar of docs/mpi.md, with plain byte counts (the .mpi files use
 * no suffixes). */
static void read_config(void)
{
  const char *t = getenv("RONDO_MPI_INTERCEPT");
  for (int k = 0; k < RONDO_MPI_CALLS; k++) {
    on[k] = 0;
    lo[k] = 0;
    hi[k] = -1;
  }
  if (t == NULL || strcmp(t, "default") == 0)
    t = "allreduce,barrier,reduce_scatter_block,reduce_scatter,allgather:16384-,allgatherv:16384-";
  if (strcmp(t, "all") == 0) {
    for (int k = 0; k < RONDO_MPI_CALLS; k++)
      on[k] = 1;
    return;
  }
  char list[256];
  snprintf(list, sizeof list, "%s", strcmp(t, "none") == 0 ? "" : t);
  for (char *save = NULL, *it = strtok_r(list, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(it, ':');
    if (colon)
      *colon = '\0';
    for (int k = 0; k < RONDO_MPI_CALLS; k++)
      if (strcmp(it, names[k]) == 0) {
        on[k] = 1;
        if (colon) {
          char *dash = strchr(colon + 1, '-');
          lo[k] = atol(colon + 1);
          hi[k] = dash && dash[1] ? atol(dash + 1) : -1;
        }
      }
  }
}

static int active;

/* Whether the interposer should take a call of `bytes` over. */
static int should(rondo_mpi_call_t call, MPI_Comm comm, size_t bytes, int exact)
{
  int inter = 0, n = 1;
  MPI_Comm_test_inter(comm, &inter);
  MPI_Comm_size(comm, &n);
  return active && on[call] && !inter && n > 1 && exact && bytes > 0 &&
         (long)bytes >= lo[call] && (hi[call] < 0 || (long)bytes <= hi[call]);
}

typedef struct {
  long taken, passed;
} count_t;

static count_t counts(MPI_Comm comm, rondo_mpi_call_t call)
{
  count_t c = {0, 0};
  if (counts_fn != NULL)
    counts_fn(comm, call, &c.taken, &c.passed);
  return c;
}

static void expect(MPI_Comm comm, rondo_mpi_call_t call, count_t before, int taken,
                   const char *what)
{
  if (counts_fn == NULL)
    return;
  count_t now = counts(comm, call);
  long t = now.taken - before.taken, p = now.passed - before.passed;
  if (!active_fn()) /* inactive: it counts nothing */
    CHECK(t == 0 && p == 0, "%s: %ld taken over, %ld passed while inactive", what, t, p);
  else
    CHECK(t == taken && p == !taken, "%s: %ld taken over, %ld passed to MPI; want %s", what,
          t, p, taken ? "taken over" : "passed");
}

/* ---- datatypes and values --------------------------------------------------------------- */

typedef enum { SINT, UINT, FLOAT } kind_t;
typedef struct {
  MPI_Datatype t;
  const char *name;
  int bytes;
  kind_t kind;
  int exact;         /* rondo reduces it (interpose/calls.c's table) */
} dt_t;

static dt_t dts[] = {
    {MPI_FLOAT, "MPI_FLOAT", 4, FLOAT, 1},          {MPI_DOUBLE, "MPI_DOUBLE", 8, FLOAT, 1},
    {MPI_INT, "MPI_INT", 4, SINT, 1},               {MPI_LONG, "MPI_LONG", 8, SINT, 1},
    {MPI_LONG_LONG, "MPI_LONG_LONG", 8, SINT, 1},   {MPI_SHORT, "MPI_SHORT", 2, SINT, 1},
    {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1, SINT, 1},
    {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, UINT, 1},
    {MPI_INT8_T, "MPI_INT8_T", 1, SINT, 1},         {MPI_UINT8_T, "MPI_UINT8_T", 1, UINT, 1},
    {MPI_INT16_T, "MPI_INT16_T", 2, SINT, 1},       {MPI_INT32_T, "MPI_INT32_T", 4, SINT, 1},
    {MPI_INT64_T, "MPI_INT64_T", 8, SINT, 1},       {MPI_REAL, "MPI_REAL", 4, FLOAT, 1},
    {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", 8, FLOAT, 1},
    {MPI_INTEGER, "MPI_INTEGER", 4, SINT, 1},
    {MPI_UNSIGNED, "MPI_UNSIGNED", 4, UINT, 0},     {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", 2, UINT, 0},
    {MPI_UINT64_T, "MPI_UINT64_T", 8, UINT, 0},     {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", 8, UINT, 0},
};
enum { NDT = sizeof dts / sizeof dts[0] };

static void put(const dt_t *d, void *buf, size_t i, double v)
{
  char *p = (char *)buf + i * (size_t)d->bytes;
  if (d->kind == FLOAT) {
    if (d->bytes == 4) {
      float f = (float)v;
      memcpy(p, &f, 4);
    } else {
      memcpy(p, &v, 8);
    }
    return;
  }
  int64_t x = (int64_t)v;
  memcpy(p, &x, (size_t)d->bytes); /* little endian: the low bytes */
}

static double get(const dt_t *d, const void *buf, size_t i)
{
  const char *p = (const char *)buf + i * (size_t)d->bytes;
  if (d->kind == FLOAT) {
    if (d->bytes == 4) {
      float f;
      memcpy(&f, p, 4);
      return f;
    }
    double v;
    memcpy(&v, p, 8);
    return v;
  }
  int64_t x = 0;
  memcpy(&x, p, (size_t)d->bytes);
  if (d->kind == SINT && d->bytes < 8) { /* sign-extend */
    int shift = 64 - 8 * d->bytes;
    x = (int64_t)((uint64_t)x << shift) >> shift;
  }
  return (double)x;
}

/* Rank r's element i: small values every type holds, products included. */
static double value(MPI_Op op, int r, size_t i)
{
  return op == MPI_PROD ? 1 + (double)((r + i) % 2) : (double)((r + 3 * i) % 5);
}

static double reduced(MPI_Op op, int n, size_t i)
{
  double acc = value(op, 0, i);
  for (int r = 1; r < n; r++) {
    double v = value(op, r, i);
    if (op == MPI_SUM)
      acc += v;
    else if (op == MPI_PROD)
      acc *= v;
    else if (op == MPI_MIN)
      acc = v < acc ? v : acc;
    else
      acc = v > acc ? v : acc;
  }
  return acc;
}

/* ---- MPI_Allreduce ------------------------------------------------------------------------ */

static void allreduce_case(MPI_Comm comm, const dt_t *d, MPI_Op op, const char *opname,
                           int count, int in_place)
{
  char what[160];
  snprintf(what, sizeof what, "MPI_Allreduce %s %s x %d %s", d->name, opname, count,
           in_place ? "in place" : "out of place");
  where = what;
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  size_t bytes = (size_t)count * (size_t)d->bytes, alloc = bytes ? bytes : 1;
  char *in = malloc(alloc), *out = malloc(alloc), *ref = malloc(alloc);
  for (size_t i = 0; i < (size_t)count; i++)
    put(d, in, i, value(op, r, i));
  memset(out, 0x5a, alloc);
  memcpy(ref, in, alloc);
  count_t before = counts(comm, RONDO_MPI_ALLREDUCE);
  int rc;
  if (in_place) {
    memcpy(out, in, alloc);
    rc = MPI_Allreduce(MPI_IN_PLACE, out, count, d->t, op, comm);
  } else {
    rc = MPI_Allreduce(in, out, count, d->t, op, comm);
  }
  CHECK(rc == MPI_SUCCESS, "returned %d", rc);
  expect(comm, RONDO_MPI_ALLREDUCE, before, should(RONDO_MPI_ALLREDUCE, comm, bytes, d->exact),
         what);
  rc = PMPI_Allreduce(MPI_IN_PLACE, ref, count, d->t, op, comm);
  CHECK(rc == MPI_SUCCESS, "PMPI_Allreduce returned %d", rc);
  int bad = 0;
  for (size_t i = 0; i < (size_t)count && bad < 3; i++) {
    double want = reduced(op, n, i);
    if (get(d, out, i) != want) {
      bad++;
      CHECK(0, "element %zu is %g, want %g", i, get(d, out, i), want);
    }
  }
  CHECK(bytes == 0 || memcmp(out, ref, bytes) == 0, "differs from PMPI_Allreduce's result");
  free(in);
  free(out);
  free(ref);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
  (void)t;
  for (int i = 0; i < *len; i++)
    ((int *)inout)[i] += ((int *)in)[i];
}

static void allreduce_all(MPI_Comm comm, int big)
{
  static const int counts_big[] = {0, 1, 2, 7, 31, 256, 1000, 4099};
  static const int counts_small[] = {0, 1, 7, 100};
  const int *cs = big ? counts_big : counts_small;
  int ncs = big ? 8 : 4;
  static const struct {
    MPI_Op *op;
    const char *name;
  } ops[] = {{NULL, "MPI_SUM"}, {NULL, "MPI_PROD"}, {NULL, "MPI_MIN"}, {NULL, "MPI_MAX"}};
  MPI_Op opv[4] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
  for (int d = 0; d < NDT; d++)
    for (int o = 0; o < 4; o++)
      for (int c = 0; c < ncs; c++) {
        if (!big && (d + o + c) % 3 != 0)
          continue;
        allreduce_case(comm, &dts[d], opv[o], ops[o].name, cs[c], (d + o + c) % 2);
      }
  /* ops rondo does not have: MPI's, and counted as passed */
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  int x[5], y[5], want;
  for (int i = 0; i < 5; i++)
    x[i] = r + 1 + i;
  count_t before = counts(comm, RONDO_MPI_ALLREDUCE);
  where = "MPI_Allreduce MPI_INT MPI_BAND";
  MPI_Allreduce(x, y, 5, MPI_INT, MPI_BAND, comm);
  PMPI_Allreduce(x, &want, 1, MPI_INT, MPI_BAND, comm);
  CHECK(y[0] == want, "BAND %d, want %d", y[0], want);
  where = "MPI_Allreduce MPI_INT MPI_LOR";
  MPI_Allreduce(x, y, 5, MPI_INT, MPI_LOR, comm);
  CHECK(n == 1 ? y[0] == x[0] : y[0] == 1, "LOR %d", y[0]); /* one rank: MPI copies */
  where = "MPI_Allreduce MPI_2INT MPI_MAXLOC";
  int pair[2] = {r % 3, r}, got[2];
  MPI_Allreduce(pair, got, 1, MPI_2INT, MPI_MAXLOC, comm);
  int maxv = n > 2 ? 2 : n - 1;
  CHECK(got[0] == maxv && got[1] == maxv, "MAXLOC (%d, %d), want (%d, %d)", got[0], got[1], maxv,
        maxv);
  where = "MPI_Allreduce MPI_DOUBLE_INT MPI_MINLOC";
  struct {
    double v;
    int i;
  } di = {(double)(n - r), r}, dgot;
  MPI_Allreduce(&di, &dgot, 1, MPI_DOUBLE_INT, MPI_MINLOC, comm);
  CHECK(dgot.v == 1.0 && dgot.i == n - 1, "MINLOC (%g, %d)", dgot.v, dgot.i);
  where = "MPI_Allreduce MPI_INT user op";
  MPI_Op mine;
  MPI_Op_create(user_sum, 1, &mine);
  MPI_Allreduce(x, y, 5, MPI_INT, mine, comm);
  CHECK(y[0] == n * (n + 1) / 2, "user op sum %d, want %d", y[0], n * (n + 1) / 2);
  MPI_Op_free(&mine);
  where = "MPI_Allreduce of ops rondo does not have";
  count_t now = counts(comm, RONDO_MPI_ALLREDUCE);
  if (counts_fn != NULL && active_fn())
    CHECK(now.taken == before.taken && now.passed == before.passed + 5,
          "ops rondo lacks: %ld taken, %ld passed, want 0 and 5", now.taken - before.taken,
          now.passed - before.passed);
}

/* ---- MPI_Reduce_scatter_block, MPI_Iallreduce ---------------------------------------------- */

static void reduce_scatter_all(MPI_Comm comm)
{
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  static const int rcs[] = {1, 7, 100};
  int pick[] = {0, 1, 2, 16}; /* float, double, int, unsigned */
  MPI_Op opv[] = {MPI_SUM, MPI_MAX};
  for (int p = 0; p < 4; p++)
    for (int o = 0; o < 2; o++)
      for (int c = 0; c < 3; c++)
        for (int in_place = 0; in_place < 2; in_place++) {
          const dt_t *d = &dts[pick[p]];
          char what[128];
          snprintf(what, sizeof what, "MPI_Reduce_scatter_block %s %s x %d %s", d->name,
                   o ? "MPI_MAX" : "MPI_SUM", rcs[c], in_place ? "in place" : "out of place");
          where = what;
          size_t total = (size_t)rcs[c] * (size_t)n, bytes = total * (size_t)d->bytes;
          char *in = malloc(bytes), *out = malloc(bytes), *ref = malloc(bytes);
          for (size_t i = 0; i < total; i++)
            put(d, in, i, value(opv[o], r, i));
          count_t before = counts(comm, RONDO_MPI_REDUCE_SCATTER_BLOCK);
          int rc;
          if (in_place) {
            memcpy(out, in, bytes);
            rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, out, rcs[c], d->t, opv[o], comm);
          } else {
            rc = MPI_Reduce_scatter_block(in, out, rcs[c], d->t, opv[o], comm);
          }
          CHECK(rc == MPI_SUCCESS, "returned %d", rc);
          expect(comm, RONDO_MPI_REDUCE_SCATTER_BLOCK, before,
                 should(RONDO_MPI_REDUCE_SCATTER_BLOCK, comm, bytes, d->exact), what);
          PMPI_Reduce_scatter_block(in, ref, rcs[c], d->t, opv[o], comm);
          for (int j = 0; j < rcs[c]; j++) {
            double want = reduced(opv[o], n, (size_t)r * (size_t)rcs[c] + (size_t)j);
            if (get(d, out, (size_t)j) != want) {
              CHECK(0, "element %d is %g, want %g", j, get(d, out, (size_t)j), want);
              break;
            }
          }
          CHECK(memcmp(out, ref, (size_t)rcs[c] * (size_t)d->bytes) == 0,
                "differs from PMPI's result");
          free(in);
          free(out);
          free(ref);
        }
}

/* A user-defined sum of elements of two ints (MPICH's MPI_SUM does not
 * take derived datatypes). */
static void pair_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
  (void)t;
  for (int i = 0; i < 2 * *len; i++)
    ((int *)inout)[i] += ((int *)in)[i];
}

/* Reductions rondo hands to MPI: a derived datatype (contiguous ints, with
 * a user-defined op) and a user-defined op on MPI_INT, through
 * MPI_Reduce_scatter_block and MPI_Reduce_scatter, in place and not. */
static void reduce_scatter_fallbacks(MPI_Comm comm)
{
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  MPI_Datatype two;
  MPI_Type_contiguous(2, MPI_INT, &two);
  MPI_Type_commit(&two);
  MPI_Op mine, pair;
  MPI_Op_create(user_sum, 1, &mine);
  MPI_Op_create(pair_sum, 1, &pair);
  int *rcounts = malloc((size_t)n * sizeof *rcounts);
  for (int i = 0; i < n; i++)
    rcounts[i] = i % 2 ? 0 : 3; /* in units of the call's datatype */
  for (int form = 0; form < 8; form++) {
    int block_call = form < 4, derived = form % 2, in_place = form / 2 % 2;
    char what[128];
    snprintf(what, sizeof what, "%s %s %s",
             block_call ? "MPI_Reduce_scatter_block" : "MPI_Reduce_scatter",
             derived ? "derived 2 x MPI_INT, user op" : "MPI_INT, user op",
             in_place ? "in place" : "out of place");
    where = what;
    MPI_Datatype t = derived ? two : MPI_INT;
    MPI_Op op = derived ? pair : mine;
    int per = derived ? 2 : 1, total = 0, start = 0;
    for (int i = 0; i < n; i++) {
      int c = block_call ? 3 : rcounts[i];
      if (i < r)
        start += c;
      total += c;
    }
    int mycount = block_call ? 3 : rcounts[r];
    size_t ints = (size_t)total * (size_t)per;
    int *in = malloc((ints + 1) * sizeof *in), *out = malloc((ints + 1) * sizeof *out);
    for (size_t i = 0; i < ints; i++)
      in[i] = (int)(r + 3 * i) % 5;
    memcpy(out, in, ints * sizeof *in);
    rondo_mpi_call_t call = block_call ? RONDO_MPI_REDUCE_SCATTER_BLOCK : RONDO_MPI_REDUCE_SCATTER;
    count_t before = counts(comm, call);
    const void *src = in_place ? MPI_IN_PLACE : in;
    int rc = block_call ? MPI_Reduce_scatter_block(src, out, 3, t, op, comm)
                        : MPI_Reduce_scatter(src, out, rcounts, t, op, comm);
    CHECK(rc == MPI_SUCCESS, "returned %d", rc);
    /* passed to MPI, unless there is nothing to move or one rank */
    expect(comm, call, before, 0, what);
    for (int j = 0; j < mycount * per; j++) {
      size_t i = (size_t)start * (size_t)per + (size_t)j;
      int want = 0;
      for (int q = 0; q < n; q++)
        want += (int)(q + 3 * i) % 5;
      if (out[j] != want) {
        CHECK(0, "element %d is %d, want %d", j, out[j], want);
        break;
      }
    }
    free(in);
    free(out);
  }
  free(rcounts);
  MPI_Op_free(&mine);
  MPI_Op_free(&pair);
  MPI_Type_free(&two);
}

/* MPI_Reduce_scatter's recvcounts for rank count n: pattern p. Zeros
 * among them, uneven, one rank with everything, all zero. */
static void rs_counts(int p, int n, int *counts)
{
  for (int i = 0; i < n; i++) {
    switch (p) {
    case 0: counts[i] = 5 + 3 * i; break;                          /* uneven */
    case 1: counts[i] = i % 2 ? 0 : 1 + i; break;                  /* zeros on odd ranks */
    case 2: counts[i] = i == 0 ? 0 : i == n - 1 ? 1000 : 3; break; /* rank 0 none */
    case 3: counts[i] = i == n - 1 ? 7 : 0; break;                 /* one rank only */
    default: counts[i] = 0; break;                                 /* nothing at all */
    }
  }
}

static void reduce_scatter_v_all(MPI_Comm comm)
{
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  int *rcounts = malloc((size_t)n * sizeof *rcounts);
  int pick[] = {0, 1, 2, 5, 16}; /* float, double, int, short, unsigned */
  MPI_Op opv[] = {MPI_SUM, MPI_MAX, MPI_PROD, MPI_MIN};
  static const char *const opnames[] = {"MPI_SUM", "MPI_MAX", "MPI_PROD", "MPI_MIN"};
  for (int p = 0; p < 5; p++)
    for (int k = 0; k < 5; k++)
      for (int in_place = 0; in_place < 2; in_place++) {
        const dt_t *d = &dts[pick[k]];
        int o = (p + k + in_place) % 4;
        rs_counts(p, n, rcounts);
        size_t total = 0, start = 0;
        for (int i = 0; i < n; i++) {
          if (i < r)
            start += (size_t)rcounts[i];
          total += (size_t)rcounts[i];
        }
        char what[160];
        snprintf(what, sizeof what, "MPI_Reduce_scatter %s %s counts pattern %d (%zu in all) %s",
                 d->name, opnames[o], p, total, in_place ? "in place" : "out of place");
        where = what;
        size_t bytes = total * (size_t)d->bytes, mine = (size_t)rcounts[r] * (size_t)d->bytes;
        char *in = malloc(bytes + 1), *out = malloc(bytes + 1), *ref = malloc(bytes + 1);
        for (size_t i = 0; i < total; i++)
          put(d, in, i, value(opv[o], r, i));
        memset(out, 0x5a, bytes + 1);
        memset(ref, 0x5a, bytes + 1);
        count_t before = counts(comm, RONDO_MPI_REDUCE_SCATTER);
        int rc;
        if (in_place) {
          memcpy(out, in, bytes);
          rc = MPI_Reduce_scatter(MPI_IN_PLACE, out, rcounts, d->t, opv[o], comm);
        } else {
          /* a rank that receives nothing may pass no buffer at all */
          rc = MPI_Reduce_scatter(in, rcounts[r] == 0 && p % 2 ? NULL : out, rcounts, d->t, opv[o],
                                  comm);
        }
        CHECK(rc == MPI_SUCCESS, "returned %d", rc);
        expect(comm, RONDO_MPI_REDUCE_SCATTER, before,
               should(RONDO_MPI_REDUCE_SCATTER, comm, bytes, d->exact), what);
        rc = PMPI_Reduce_scatter(in, ref, rcounts, d->t, opv[o], comm);
        CHECK(rc == MPI_SUCCESS, "PMPI_Reduce_scatter returned %d", rc);
        for (size_t j = 0; j < (size_t)rcounts[r]; j++) {
          double want = reduced(opv[o], n, start + j);
          if (get(d, out, j) != want) {
            CHECK(0, "element %zu is %g, want %g", j, get(d, out, j), want);
            break;
          }
        }
        CHECK(memcmp(out, ref, mine) == 0, "differs from PMPI's result");
        if (!in_place) /* nothing written past this rank's block */
          CHECK((unsigned char)out[mine] == 0x5a, "wrote past its %zu bytes", mine);
        free(in);
        free(out);
        free(ref);
      }
  free(rcounts);
}

static void iallreduce_all(MPI_Comm comm, int threads)
{
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  /* three reductions and a ring exchange in flight together, waited for
   * with one MPI_Waitall */
  where = "MPI_Iallreduce with point-to-point requests";
  enum { C = 1000 };
  static float a[C], b[C];
  static double dd[3];
  int token = r, from = -1;
  for (int i = 0; i < C; i++)
    a[i] = (float)((r + 3 * i) % 5);
  for (int i = 0; i < 3; i++)
    dd[i] = r + i;
  long long q = r, qsum = -1;
  MPI_Request req[5];
  count_t before = counts(comm, RONDO_MPI_IALLREDUCE);
  MPI_Iallreduce(a, b, C, MPI_FLOAT, MPI_SUM, comm, &req[0]);
  MPI_Iallreduce(MPI_IN_PLACE, dd, 3, MPI_DOUBLE, MPI_MAX, comm, &req[1]);
  MPI_Iallreduce(&q, &qsum, 1, MPI_LONG_LONG, MPI_SUM, comm, &req[2]);
  MPI_Irecv(&from, 1, MPI_INT, (r + n - 1) % n, 7, comm, &req[3]);
  MPI_Isend(&token, 1, MPI_INT, (r + 1) % n, 7, comm, &req[4]);
  MPI_Status st[5];
  int rc = MPI_Waitall(5, req, st);
  CHECK(rc == MPI_SUCCESS, "MPI_Waitall returned %d", rc);
  for (int i = 0; i < C; i++)
    if (b[i] != (float)reduced(MPI_SUM, n, (size_t)i)) {
      CHECK(0, "element %d is %g", i, b[i]);
      break;
    }
  for (int i = 0; i < 3; i++)
    CHECK(dd[i] == n - 1 + i, "in place max %d: %g", i, dd[i]);
  CHECK(qsum == (long long)n * (n - 1) / 2, "long long sum %lld", qsum);
  CHECK(from == (r + n - 1) % n, "ring token %d", from);
  if (counts_fn != NULL && active_fn()) {
    count_t now = counts(comm, RONDO_MPI_IALLREDUCE);
    int each = threads && should(RONDO_MPI_IALLREDUCE, comm, 8, 1);
    CHECK(now.taken - before.taken == 3 * each && now.passed - before.passed == 3 * !each,
          "MPI_Iallreduce: %ld taken over, %ld passed", now.taken - before.taken,
          now.passed - before.passed);
  }
  /* MPI_Test until done */
  where = "MPI_Iallreduce and MPI_Test";
  int x = r + 1, y = 0, done = 0;
  MPI_Request one;
  MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, comm, &one);
  for (long spins = 0; !done && spins < 100000000L; spins++)
    MPI_Test(&one, &done, MPI_STATUS_IGNORE);
  CHECK(done && y == n * (n + 1) / 2, "MPI_Test: done %d, sum %d", done, y);
}

/* On a new communicator MPI serves MPI_Iallreduce until a blocking call
 * made its rondo comm. */
static void iallreduce_new_comm(void)
{
  where = "MPI_Iallreduce on a new communicator";
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  int x = 1, y = 0;
  MPI_Request req;
  count_t before = counts(c, RONDO_MPI_IALLREDUCE);
  MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, c, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(y == size, "sum %d", y);
  expect(c, RONDO_MPI_IALLREDUCE, before, 0, where);
  int z = 0;
  MPI_Allreduce(&x, &z, 1, MPI_INT, MPI_SUM, c); /* makes the rondo comm if taken over */
  int made = should(RONDO_MPI_ALLREDUCE, c, 4, 1);
  before = counts(c, RONDO_MPI_IALLREDUCE);
  MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, c, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(y == size, "sum %d", y);
  expect(c, RONDO_MPI_IALLREDUCE, before, made && should(RONDO_MPI_IALLREDUCE, c, 4, 1),
         "MPI_Iallreduce after a blocking call");
  MPI_Comm_free(&c);
}

/* ---- data movement ---------------------------------------------------------------------- */

static void allgather_all(MPI_Comm comm)
{
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  MPI_Datatype strided, three;
  MPI_Type_vector(3, 1, 2, MPI_INT, &strided); /* ints 0, 2, 4 of 5: not flat */
  MPI_Type_commit(&strided);
  MPI_Type_contiguous(3, MPI_INT, &three); /* flat, derived */
  MPI_Type_commit(&three);
  for (int form = 0; form < 6; form++) {
    /* 0: 3 x MPI_INT both sides; 1: strided send, 3 x MPI_INT receive;
     * 2: 3 x MPI_INT send, receive into strided blocks; 3: derived
     * contiguous send; 4: in place, strided receive; 5: in place, MPI_INT */
    static const char *const forms[] = {"MPI_INT",           "strided send",
                                        "strided receive",   "derived contiguous",
                                        "in place, strided", "in place, MPI_INT"};
    char what[96];
    snprintf(what, sizeof what, "MPI_Allgather %s", forms[form]);
    where = what;
    int send[6], mine[3];
    for (int j = 0; j < 3; j++)
      mine[j] = 100 * r + j;
    for (int j = 0; j < 6; j++)
      send[j] = -1;
    int strided_recv = form == 2 || form == 4;
    /* a strided block spans 5 ints (extent of the vector) */
    size_t rcount = strided_recv ? (size_t)n * 5 + 1 : (size_t)n * 3;
    int *recv = malloc(rcount * sizeof *recv), *ref = malloc(rcount * sizeof *ref);
    for (size_t i = 0; i < rcount; i++)
      recv[i] = ref[i] = -7;
    const void *sbuf = send;
    int scount = 3;
    MPI_Datatype stype = MPI_INT, rtype = strided_recv ? strided : MPI_INT;
    int rc_count = strided_recv ? 1 : 3;
    if (form == 1) {
      for (int j = 0; j < 3; j++)
        send[2 * j] = mine[j];
      stype = strided;
      scount = 1;
    } else if (form == 3) {
      memcpy(send, mine, sizeof mine);
      stype = three;
      scount = 1;
    } else {
      memcpy(send, mine, sizeof mine);
    }
    if (form == 4) {
      for (int j = 0; j < 3; j++)
        recv[(size_t)r * 5 + 2 * (size_t)j] = ref[(size_t)r * 5 + 2 * (size_t)j] = mine[j];
      sbuf = MPI_IN_PLACE;
    } else if (form == 5) {
      for (int j = 0; j < 3; j++)
        recv[(size_t)r * 3 + (size_t)j] = ref[(size_t)r * 3 + (size_t)j] = mine[j];
      sbuf = MPI_IN_PLACE;
    }
    count_t before = counts(comm, RONDO_MPI_ALLGATHER);
    int rc = MPI_Allgather(sbuf, scount, stype, recv, rc_count, rtype, comm);
    CHECK(rc == MPI_SUCCESS, "returned %d", rc);
    expect(comm, RONDO_MPI_ALLGATHER, before,
           should(RONDO_MPI_ALLGATHER, comm, (size_t)n * 12, 1), what);
    PMPI_Allgather(sbuf, scount, stype, ref, rc_count, rtype, comm);
    for (int q = 0; q < n; q++)
      for (int j = 0; j < 3; j++) {
        size_t at = strided_recv ? (size_t)q * 5 + 2 * (size_t)j : (size_t)q * 3 + (size_t)j;
        if (recv[at] != 100 * q + j) {
          CHECK(0, "block %d element %d is %d", q, j, recv[at]);
          q = n;
          break;
        }
      }
    CHECK(memcmp(recv, ref, rcount * sizeof *recv) == 0, "differs from PMPI's result");
    free(recv);
    free(ref);
  }
  MPI_Type_free(&strided);
  MPI_Type_free(&three);
}

/* MPI_Allgatherv: block i holds counts[i] ints (1000 i + j), at displs[i]
 * in units of the receive type, which is MPI_INT or, "spaced", an int
 * resized to the extent of two (not flat: packed around rondo's call). */
static void allgatherv_all(MPI_Comm comm)
{
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  MPI_Datatype spaced, three;
  MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &spaced);
  MPI_Type_commit(&spaced);
  MPI_Type_contiguous(3, MPI_INT, &three); /* flat, derived */
  MPI_Type_commit(&three);
  int *vcounts = malloc((size_t)n * sizeof *vcounts), *displs = malloc((size_t)n * sizeof *displs);
  enum { PACKED, GAPS, REVERSED, PER_RANK, LAYOUTS };
  static const char *const layouts[] = {"packed", "with gaps", "reversed",
                                        "packed on even ranks, reversed on odd"};
  /* types: 0 MPI_INT both sides; 1 spaced receive; 2 spaced send; 3 spaced
   * receive on odd ranks only (receive types differ across ranks); 4
   * derived contiguous 3 x MPI_INT on both sides (counts in threes) */
  static const char *const types[] = {"MPI_INT", "spaced receive", "spaced send",
                                      "spaced receive on odd ranks", "3 x MPI_INT derived"};
  for (int cp = 0; cp < 5; cp++)
    for (int layout = 0; layout < LAYOUTS; layout++)
      for (int ty = 0; ty < 5; ty++)
        for (int in_place = 0; in_place < 2; in_place++) {
          if ((cp + layout + ty + in_place) % 2 && cp != 4 && layout != PER_RANK)
            continue; /* half of the plain combinations is enough */
          if (in_place && ty == 2)
            continue; /* no send type in place */
          rs_counts(cp, n, vcounts);
          int unit = ty == 4 ? 3 : 1; /* ints per element of the call's types */
          if (ty == 4)
            for (int i = 0; i < n; i++)
              vcounts[i] = (vcounts[i] + 2) / 3; /* elements of 3 ints */
          int lay = layout == PER_RANK ? (r % 2 ? REVERSED : PACKED) : layout;
          int next = 0;
          for (int k = 0; k < n; k++) {
            int i = lay == REVERSED ? n - 1 - k : k;
            displs[i] = next;
            next += vcounts[i] + (lay == GAPS ? 2 : 0);
          }
          int rspaced = ty == 1 || (ty == 3 && r % 2);
          int stride = rspaced ? 2 : 1; /* ints from one receive element to the next */
          size_t total = 0;
          for (int i = 0; i < n; i++)
            total += (size_t)vcounts[i] * (size_t)unit;
          char what[200];
          snprintf(what, sizeof what, "MPI_Allgatherv counts pattern %d (%zu ints) %s, %s, %s", cp,
                   total, layouts[layout], types[ty], in_place ? "in place" : "out of place");
          where = what;
          size_t len = ((size_t)next * (size_t)unit + 1) * (size_t)stride + 1;
          int *recv = malloc(len * sizeof *recv), *ref = malloc(len * sizeof *ref);
          int *send = malloc(((size_t)vcounts[r] * (size_t)unit * 2 + 1) * sizeof *send);
          for (size_t i = 0; i < len; i++)
            recv[i] = ref[i] = -7;
#define AT(i, j) (((size_t)displs[i] * (size_t)unit + (size_t)(j)) * (size_t)stride)
          /* AT(i, j): the int of recv where element j (in ints) of block i sits */
          int mine = vcounts[r] * unit;
          for (int j = 0; j < mine; j++) {
            send[ty == 2 ? 2 * j : j] = 1000 * r + j;
            if (in_place)
              recv[AT(r, j)] = ref[AT(r, j)] = 1000 * r + j;
          }
          MPI_Datatype stype = ty == 2 ? spaced : ty == 4 ? three : MPI_INT;
          MPI_Datatype rtype = rspaced ? spaced : ty == 4 ? three : MPI_INT;
          /* a rank that sends nothing may pass no buffer at all */
          const void *sbuf = in_place ? MPI_IN_PLACE : vcounts[r] == 0 && ty % 2 ? NULL : send;
          count_t before = counts(comm, RONDO_MPI_ALLGATHERV);
          int rc = MPI_Allgatherv(sbuf, vcounts[r], stype, recv, vcounts, displs, rtype, comm);
          CHECK(rc == MPI_SUCCESS, "returned %d", rc);
          expect(comm, RONDO_MPI_ALLGATHERV, before,
                 should(RONDO_MPI_ALLGATHERV, comm, total * sizeof(int), 1), what);
          rc = PMPI_Allgatherv(sbuf, vcounts[r], stype, ref, vcounts, displs, rtype, comm);
          CHECK(rc == MPI_SUCCESS, "PMPI_Allgatherv returned %d", rc);
          int bad = 0;
          for (int i = 0; i < n && !bad; i++)
            for (int j = 0; j < vcounts[i] * unit; j++)
              if (recv[AT(i, j)] != 1000 * i + j) {
                CHECK(0, "block %d element %d is %d, want %d", i, j, recv[AT(i, j)], 1000 * i + j);
                bad = 1;
                break;
              }
#undef AT
          CHECK(memcmp(recv, ref, len * sizeof *recv) == 0,
                "differs from PMPI's result (gaps included)");
          free(recv);
          free(ref);
          free(send);
        }
  free(vcounts);
  free(displs);
  MPI_Type_free(&spaced);
  MPI_Type_free(&three);
}

static void bcast_all(MPI_Comm comm)
{
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  MPI_Datatype strided;
  MPI_Type_vector(4, 1, 3, MPI_DOUBLE, &strided);
  MPI_Type_commit(&strided);
  for (int root = 0; root < n; root += n > 1 ? n - 1 : 1)
    for (int form = 0; form < 3; form++) {
      /* 0: 1000 doubles; 1: strided on every rank; 2: strided on the root,
       * 4 doubles elsewhere (the same bytes) */
      char what[96];
      snprintf(what, sizeof what, "MPI_Bcast form %d root %d", form, root);
      where = what;
      double buf[1000], ref[1000];
      for (int i = 0; i < 1000; i++)
        buf[i] = ref[i] = r == root ? i * 0.5 + root : -1;
      int count = form == 0 ? 1000 : form == 1 || r == root ? 1 : 4;
      MPI_Datatype t = form == 0 || (form == 2 && r != root) ? MPI_DOUBLE : strided;
      count_t before = counts(comm, RONDO_MPI_BCAST);
      int rc = MPI_Bcast(buf, count, t, root, comm);
      CHECK(rc == MPI_SUCCESS, "returned %d", rc);
      expect(comm, RONDO_MPI_BCAST, before,
             should(RONDO_MPI_BCAST, comm, form == 0 ? 8000 : 32, 1), what);
      PMPI_Bcast(ref, count, t, root, comm);
      CHECK(memcmp(buf, ref, sizeof buf) == 0, "differs from PMPI's result");
      /* element i sits at i * (this rank's stride), and came from the
       * root's element i * (the root's stride) */
      int stride = t == strided ? 3 : 1, from = form == 0 ? 1 : 3;
      int elems = form == 0 ? 1000 : 4;
      for (int i = 0; i < elems; i++)
        if (buf[i * stride] != (i * from) * 0.5 + root) {
          CHECK(0, "element %d is %g, want %g", i, buf[i * stride], (i * from) * 0.5 + root);
          break;
        }
    }
  MPI_Type_free(&strided);
  where = "MPI_Barrier";
  count_t before = counts(comm, RONDO_MPI_BARRIER);
  CHECK(MPI_Barrier(comm) == MPI_SUCCESS, "returned an error");
  expect(comm, RONDO_MPI_BARRIER, before, should(RONDO_MPI_BARRIER, comm, 1, 1), where);
}

/* ---- communicators, errors, threads --------------------------------------------------------- */

static void communicators(int big)
{
  MPI_Comm dup, half, sub = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  allreduce_all(dup, 0);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
  allreduce_all(half, 0);
  reduce_scatter_all(half);
  reduce_scatter_v_all(half);
  allgatherv_all(half);
  /* MPI_Comm_create: the first half of the ranks */
  MPI_Group world, first;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int range[1][3] = {{0, (size - 1) / 2, 1}};
  MPI_Group_range_incl(world, 1, range, &first);
  MPI_Comm_create(MPI_COMM_WORLD, first, &sub);
  if (sub != MPI_COMM_NULL) {
    allreduce_all(sub, 0);
    bcast_all(sub);
    MPI_Comm_free(&sub);
  }
  MPI_Group_free(&first);
  MPI_Group_free(&world);
  MPI_Comm_free(&half);
  MPI_Comm_free(&dup);
  /* made again after freeing: a new record, a new rondo comm */
  for (int round = 0; round < (big ? 3 : 2); round++) {
    MPI_Comm again;
    MPI_Comm_dup(MPI_COMM_WORLD, &again);
    allreduce_case(again, &dts[0], MPI_SUM, "MPI_SUM", 17, round % 2);
    MPI_Comm_free(&again);
  }
  /* an intercommunicator between the even and the odd ranks: passed */
  if (size >= 2) {
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 11, &inter);
    where = "MPI_Allreduce on an intercommunicator";
    int x = rank, y = -1;
    count_t before = counts(inter, RONDO_MPI_ALLREDUCE);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, inter);
    int want = 0; /* the sum over the other group */
    for (int q = 0; q < size; q++)
      if (q % 2 != rank % 2)
        want += q;
    CHECK(y == want, "intercommunicator sum %d, want %d", y, want);
    expect(inter, RONDO_MPI_ALLREDUCE, before, 0, where);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
  }
}

/* Counts that differ across ranks: rondo fails the call on every rank (with
 * MPI_ERRORS_RETURN: an error class back) instead of hanging. */
static void errors(void)
{
  if (!should(RONDO_MPI_ALLREDUCE, MPI_COMM_WORLD, 8, 1) ||
      !should(RONDO_MPI_ALLREDUCE, MPI_COMM_WORLD, 12, 1))
    return;
  where = "MPI_Allreduce with counts that differ across ranks";
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  float x[3] = {1, 2, 3}, y[3];
  int rc = MPI_Allreduce(x, y, rank == 0 ? 3 : 2, MPI_FLOAT, MPI_SUM, c);
  int cls = -1;
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_ARG, "returned %d (class %d), want MPI_ERR_ARG",
        rc, cls);
  /* the communicator still works */
  rc = MPI_Allreduce(x, y, 3, MPI_FLOAT, MPI_SUM, c);
  CHECK(rc == MPI_SUCCESS && y[2] == 3.0f * size, "after the error: %d, %g", rc, y[2]);
  MPI_Comm_free(&c);
}

/* recvcounts that differ across ranks (rank 0 says 2 each, the others 1):
 * MPI_Reduce_scatter and MPI_Allgatherv fail with MPI_ERR_ARG on every
 * rank, where both sides' sizes are taken over. */
static void errors_v(void)
{
  size_t one = (size_t)size * sizeof(float), two = 2 * one;
  int *rcounts = malloc((size_t)size * sizeof *rcounts),
      *displs = malloc((size_t)size * sizeof *displs);
  for (int i = 0; i < size; i++) {
    rcounts[i] = rank == 0 ? 2 : 1;
    displs[i] = i * rcounts[i];
  }
  float in[64], out[64];
  for (int i = 0; i < 64; i++)
    in[i] = (float)i;
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  if (size <= 32 && should(RONDO_MPI_REDUCE_SCATTER, c, one, 1) &&
      should(RONDO_MPI_REDUCE_SCATTER, c, two, 1)) {
    where = "MPI_Reduce_scatter with recvcounts that differ across ranks";
    int rc = MPI_Reduce_scatter(in, out, rcounts, MPI_FLOAT, MPI_SUM, c), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_ARG, "returned %d (class %d), want MPI_ERR_ARG", rc,
          cls);
    for (int i = 0; i < size; i++)
      rcounts[i] = 2;
    rc = MPI_Reduce_scatter(in, out, rcounts, MPI_FLOAT, MPI_SUM, c);
    CHECK(rc == MPI_SUCCESS && out[1] == (2.0f * rank + 1) * size, "after the error: %d, %g", rc,
          out[1]);
  }
  for (int i = 0; i < size; i++)
    rcounts[i] = rank == 0 ? 2 : 1;
  if (size <= 32 && should(RONDO_MPI_ALLGATHERV, c, one, 1) &&
      should(RONDO_MPI_ALLGATHERV, c, two, 1)) {
    where = "MPI_Allgatherv with recvcounts that differ across ranks";
    int rc = MPI_Allgatherv(in, rcounts[rank], MPI_FLOAT, out, rcounts, displs, MPI_FLOAT, c),
        cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_ARG, "returned %d (class %d), want MPI_ERR_ARG", rc,
          cls);
    for (int i = 0; i < size; i++) {
      rcounts[i] = 1;
      displs[i] = size - 1 - i;
    }
    float me = (float)rank;
    rc = MPI_Allgatherv(&me, 1, MPI_FLOAT, out, rcounts, displs, MPI_FLOAT, c);
    CHECK(rc == MPI_SUCCESS && out[0] == (float)(size - 1), "after the error: %d, %g", rc, out[0]);
  }
  MPI_Comm_free(&c);
  free(rcounts);
  free(displs);
}

typedef struct {
  MPI_Comm comm;
  int t, bad;
} thread_job_t;

static void *thread_main(void *arg)
{
  thread_job_t *j = arg;
  for (int i = 0; i < 200; i++) {
    double v[5], w[5];
    for (int e = 0; e < 5; e++)
      v[e] = rank + 10 * j->t + e + i;
    MPI_Allreduce(v, w, 5, MPI_DOUBLE, MPI_SUM, j->comm);
    for (int e = 0; e < 5; e++)
      if (w[e] != (double)size * (size - 1) / 2 + (double)size * (10 * j->t + e + i))
        j->bad++;
  }
  return NULL;
}

static void threads(void)
{
  where = "two threads on two communicators";
  thread_job_t jobs[2];
  pthread_t th[2];
  for (int t = 0; t < 2; t++) {
    jobs[t].t = t;
    jobs[t].bad = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
  }
  for (int t = 0; t < 2; t++)
    pthread_create(&th[t], NULL, thread_main, &jobs[t]);
  for (int t = 0; t < 2; t++) {
    pthread_join(th[t], NULL);
    CHECK(jobs[t].bad == 0, "thread %d: %d wrong elements", t, jobs[t].bad);
    count_t c = counts(jobs[t].comm, RONDO_MPI_ALLREDUCE);
    CHECK(counts_fn == NULL || !active_fn() || c.taken + c.passed == 200, "thread %d: %ld + %ld calls", t,
          c.taken, c.passed);
    MPI_Comm_free(&jobs[t].comm);
  }
}

int main(int argc, char **argv)
{
  const char *mode = getenv("MPITEST_INTERPOSE");
  mode = mode != NULL ? mode : "";
  if (strcmp(mode, "mismatch") == 0) {
    /* before MPI_Init: rank 0 asks for allreduce, the others for nothing
     * (the rank as Hydra's PMI or Open MPI's launcher gives it) */
    const char *pmi = getenv("PMI_RANK");
    if (pmi == NULL)
      pmi = getenv("OMPI_COMM_WORLD_RANK");
    setenv("RONDO_MPI_INTERCEPT", pmi != NULL && atoi(pmi) == 0 ? "allreduce" : "none", 1);
  }
  int thread_mode = strcmp(mode, "threads") == 0;
  if (thread_mode) {
    int provided = 0;
    RONDO_LEAKCHECK_PAUSE(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  } else {
    RONDO_LEAKCHECK_PAUSE(MPI_Init(&argc, &argv));
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  read_config();
  counts_fn = (int (*)(MPI_Comm, rondo_mpi_call_t, long *, long *))dlsym(RTLD_DEFAULT,
                                                                         "rondo_mpi_counts");
  active_fn = (int (*)(void))dlsym(RTLD_DEFAULT, "rondo_mpi_active");
  where = "setup";
  CHECK(counts_fn != NULL && active_fn != NULL,
        "librondo-mpi is not loaded (rondo_mpi_counts not found)");
  active = active_fn != NULL && active_fn();
  if (strcmp(mode, "mismatch") == 0) {
    CHECK(!active, "ranks that disagree on RONDO_MPI_INTERCEPT left it active");
    active = 0;
    for (int k = 0; k < RONDO_MPI_CALLS; k++)
      on[k] = 0;
  } else {
    CHECK(active, "librondo-mpi is not active");
  }
  int big = size <= 2;
  allreduce_all(MPI_COMM_WORLD, big);
  reduce_scatter_all(MPI_COMM_WORLD);
  reduce_scatter_v_all(MPI_COMM_WORLD);
  reduce_scatter_fallbacks(MPI_COMM_WORLD);
  if (!thread_mode)
    on[RONDO_MPI_IALLREDUCE] = 0; /* needs MPI_THREAD_MULTIPLE: passed */
  iallreduce_all(MPI_COMM_WORLD, thread_mode);
  iallreduce_new_comm();
  allgather_all(MPI_COMM_WORLD);
  allgatherv_all(MPI_COMM_WORLD);
  bcast_all(MPI_COMM_WORLD);
  communicators(big);
  errors();
  errors_v();
  if (thread_mode)
    threads();
  where = "the end";
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%s (%d ranks): %d checks, %d failed\n", TEST_NAME, size, checks, all);
  MPI_Finalize();
  return all != 0;
}
