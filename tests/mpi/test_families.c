/*
 * test_families - reduce-scatter and all-gather as families of algorithms:
 * rondo_reduce_scatter(_algo), rondo_reduce_scatterv, rondo_allgather(_algo)
 * and rondo_allgatherv against closed-form results, with the selector's
 * queries (rondo_coll_choice, rondo_coll_algo_available, rondo_coll_explain,
 * rondo_coll_name).
 *
 *  - Membership, written out here: reduce-scatter is served by mpi, ring,
 *    shm, pairwise and recursive_halving, all-gather by mpi, ring, shm,
 *    recursive_doubling and bruck (hierarchical may serve both: run where
 *    available); shm only on one node. Every other id is refused by
 *    rondo_coll_algo_available (RONDO_ERR_UNSUPPORTED, with a reason) and a
 *    call forced onto it fails on every rank without touching recvbuf.
 *  - Variants: the plain call, the _algo call with AUTO, and every id the
 *    comm can run (rondo_coll_algo_available decides per call; a call it
 *    refuses must fail with RONDO_ERR_UNSUPPORTED, and the refusals are
 *    summed up at the end).
 *  - Reduce-scatter: every dtype x op (sum, avg, min, max, prod) on the
 *    exact-value inputs of mpitest.h, recvcount 0 (also NULL buffers), 1, 2,
 *    p+1 and 1009, and a large one (float32 and int32 sum: ~300000 elements,
 *    blocks above 256 KiB, past the ring's and shm's chunks); out of place
 *    and both in-place forms (recvbuf at this rank's block of sendbuf, and
 *    recvbuf == sendbuf: the result at the start). AVG also against what
 *    rondo_allreduce's AVG gives for the same data.
 *  - rondo_reduce_scatterv: uneven counts with zeros, everything to one
 *    rank, equal counts, all zero (NULL buffers), a large uneven split; the
 *    same three forms.
 *  - All-gather: every dtype on pseudo-random bytes, out of place and in
 *    place; rondo_allgatherv with uneven and zero counts, displs with gaps
 *    (kept poison), reversed. Every all-gather result is hashed and must be
 *    identical on every rank.
 *  - Forcing through the knobs: a comm made with RONDO_REDUCE_SCATTER_ALGO
 *    and RONDO_ALLGATHER_ALGO set, for every algorithm, reports it as the
 *    choice and runs the plain and the v calls right. The world comm checks
 *    the knobs it was started with (families-knobs-np3.mpi).
 *  - Errors: different recvcount, dtype, op, algorithm or collective across
 *    ranks fail on every rank with RONDO_ERR_MISMATCH (never a hang), also
 *    different recvcounts to rondo_reduce_scatterv and different counts to
 *    rondo_allgather; overlaps other than the in-place forms fail with
 *    RONDO_ERR_INVALID_ARG (RONDO_ERR_PEER on the other ranks where one rank
 *    alone passes one); invalid algorithm ids. A valid call follows each.
 *
 * At 3 or more ranks (oversubscribed) the matrix is trimmed: the forced
 * algorithms run every dtype x op at recvcounts 1 and p+1 in one form
 * (rotating), 1009 with one op per dtype, and the plain calls one op per
 * (dtype, count); MPITEST_FULL=1 runs everything.
 *
 * MPITEST_ALGOS=name,...: only these variants ("plain", "auto", algorithm
 * names; the knob comms run for the algorithms named).
 */
#include "mpitest.h"

#define PRIME ((size_t)1009)
#define BIG_TOTAL ((size_t)300007)    /* elements of a large call, about */
#define BIG_MIN_BLOCK ((size_t)70001) /* 280 KB of float32: above a 256 KiB chunk */
#define MAX_VARIANTS (RONDO_ALGO_COUNT + 2)

_Static_assert(RONDO_ALGO_COUNT == 14, "a new algorithm id: add its name and family below");
_Static_assert(RONDO_COLL_COUNT == 3, "a new collective: add it below");

#define algo_names mt_algo_names /* mpitest.h's list, id by id */
static const char *const coll_names[RONDO_COLL_COUNT] = {"allreduce", "reduce_scatter",
                                                         "allgather"};

enum { NOT_MEMBER, MEMBER, MAYBE };

/* Which algorithms serve which family, written out independently. */
static int membership(rondo_coll_t coll, int a)
{
  switch (a) {
  case RONDO_ALGO_MPI:
  case RONDO_ALGO_RING:
  case RONDO_ALGO_SHM: return MEMBER;
  case RONDO_ALGO_HIERARCHICAL: return MAYBE;
  case RONDO_ALGO_PAIRWISE:
  case RONDO_ALGO_RECURSIVE_HALVING: return coll == RONDO_COLL_REDUCE_SCATTER ? MEMBER : NOT_MEMBER;
  case RONDO_ALGO_RECURSIVE_DOUBLING:
  case RONDO_ALGO_BRUCK: return coll == RONDO_COLL_ALLGATHER ? MEMBER : NOT_MEMBER;
  default: return NOT_MEMBER;
  }
}

/* The forms of a call: out of place; in place with recvbuf at this rank's
 * block of sendbuf (reduce-scatter) / sendbuf at this rank's block of
 * recvbuf (all-gather); recvbuf == sendbuf (reduce-scatter only). */
enum { OUT, SHARD, START, NFORMS };
static const char *const form_names[NFORMS] = {"out-of-place", "in-place (this rank's block)",
                                               "in-place (recvbuf == sendbuf)"};

typedef struct {
  char name[64];
  int plain;           /* rondo_reduce_scatter / rondo_allgather */
  rondo_algo_t algo;   /* of the _algo call (AUTO: the comm chooses) */
  rondo_algo_t forced; /* the comm's knob for this family (AUTO: none) */
} variant_t;

static int p;
static int nodes;
static rondo_algo_t world_forced[RONDO_COLL_COUNT]; /* the knobs rondo_init saw */
static variant_t rs_vars[MAX_VARIANTS], ag_vars[MAX_VARIANTS];
static size_t n_rs_vars, n_ag_vars;

/* Calls that an algorithm could not run, summed per (family, algorithm). */
static struct {
  long n;
  char first[MT_WHERE_LEN];
  char why[160];
} refused[RONDO_COLL_COUNT][RONDO_ALGO_COUNT];

static unsigned char *out_buf(size_t nbytes, size_t es)
{
  unsigned char *b = mt_alloc(nbytes + MT_GUARD * es);
  memset(b, MT_POISON, nbytes + MT_GUARD * es);
  return b;
}

static int name_listed(const char *list, const char *name)
{
  if (list == NULL || *list == '\0')
    return 1;
  size_t n = strlen(name);
  for (const char *q = list; (q = strstr(q, name)) != NULL; q += n)
    if ((q == list || q[-1] == ',') && (q[n] == ',' || q[n] == '\0'))
      return 1;
  return 0;
}

static int enabled(const char *name) { return name_listed(getenv("MPITEST_ALGOS"), name); }

static rondo_algo_t knob_algo(const char *knob)
{
  const char *v = getenv(knob);
  if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0)
    return RONDO_ALGO_AUTO;
  for (int a = 1; a < RONDO_ALGO_COUNT; a++)
    if (strcmp(v, algo_names[a]) == 0)
      return (rondo_algo_t)a;
  fprintf(stderr, "test_families: %s=%s names no algorithm\n", knob, v);
  return RONDO_ALGO_AUTO;
}

/* What a call of variant v on comm must return: success, or where the
 * algorithm it runs (forced, or the comm's knob) cannot run the call,
 * RONDO_ERR_UNSUPPORTED. */
static rondo_status_t expected(rondo_comm_t comm, rondo_coll_t coll, const variant_t *v,
                               size_t count, rondo_dtype_t dt, rondo_op_t op)
{
  rondo_algo_t a = v->plain || v->algo == RONDO_ALGO_AUTO ? v->forced : v->algo;
  if (a == RONDO_ALGO_AUTO)
    return RONDO_SUCCESS;
  const char *why = NULL;
  rondo_status_t st = rondo_coll_algo_available(comm, coll, a, count, dt, op, &why);
  if (st == RONDO_SUCCESS)
    return RONDO_SUCCESS;
  mt_eq_status_((int)st, RONDO_ERR_UNSUPPORTED, "rondo_coll_algo_available", __LINE__);
  if (refused[coll][a].n++ == 0) {
    memcpy(refused[coll][a].first, mt.where, MT_WHERE_LEN);
    snprintf(refused[coll][a].why, sizeof refused[coll][a].why, "%s", why ? why : "(no reason)");
  }
  return RONDO_ERR_UNSUPPORTED;
}

/* ---- reduce-scatter ------------------------------------------------------------ */

typedef struct {
  unsigned char *input; /* this rank's sendbuf contents */
  unsigned char *want;  /* this rank's exact block */
  unsigned char *buf;   /* sendbuf (and recvbuf in place) */
  unsigned char *recv;  /* recvbuf out of place */
} rs_bufs_t;

static rondo_status_t rs_call(rondo_comm_t comm, const variant_t *v, const void *s, void *r,
                              size_t rc, rondo_dtype_t dt, rondo_op_t op)
{
  if (v->plain)
    return rondo_reduce_scatter(comm, s, r, rc, dt, op);
  return rondo_reduce_scatter_algo(comm, s, r, rc, dt, op, v->algo);
}

/* Inputs: element j of sendbuf on rank r is mt_value(dt, op, r, j); block b
 * is elements b*rc .. b*rc+rc-1. */
static void rs_prepare(rondo_dtype_t dt, rondo_op_t op, size_t rc, const rs_bufs_t *b)
{
  mt.salt = rc * 31 + 7;
  mt_fill_input(dt, op, 0, rc * (size_t)p, b->input);
  mt_fill_reduced(dt, op, (uint64_t)mt.rank * rc, rc, b->want);
}

static void rs_case(rondo_comm_t comm, const char *tag, const variant_t *v, rondo_dtype_t dt,
                    rondo_op_t op, size_t rc, int form, const rs_bufs_t *b)
{
  size_t es = mt_dtype_size(dt), all = rc * (size_t)p, n = all * es, mine = rc * es;
  size_t guard = MT_GUARD * es;
  mt_where("%sreduce_scatter %s dtype=%s op=%s recvcount=%zu %s", tag, v->name, mt_dtype_str(dt),
           mt_op_str(op), rc, form_names[form]);
  rondo_status_t want = expected(comm, RONDO_COLL_REDUCE_SCATTER, v, rc, dt, op);
  memcpy(b->buf, b->input, n);
  memset(b->buf + n, MT_POISON, guard);
  memset(b->recv, MT_POISON, mine + guard);
  unsigned char *recvbuf = form == OUT     ? b->recv
                           : form == SHARD ? b->buf + (size_t)mt.rank * mine
                                           : b->buf;
  rondo_status_t st = rs_call(comm, v, b->buf, recvbuf, rc, dt, op);
  if (MT_EQ_STATUS(st, want)) {
    if (st == RONDO_SUCCESS) {
      mt_check_elems("this rank's reduced block", dt, recvbuf, b->want, rc);
      if (form == OUT) {
        mt_check_poison("bytes past the end of recvbuf", b->recv + mine, guard);
        mt_check_elems("sendbuf after the call", dt, b->buf, b->input, all);
      }
      mt_check_poison("bytes past the end of sendbuf", b->buf + n, guard);
    } else {
      mt_check_poison("recvbuf after a refused call", b->recv, mine + guard);
      mt_check_elems("sendbuf after a refused call", dt, b->buf, b->input, all);
    }
  }
  if (rc == 0 && form == OUT) {
    mt_where("%sreduce_scatter %s dtype=%s op=%s recvcount=0 NULL buffers", tag, v->name,
             mt_dtype_str(dt), mt_op_str(op));
    MT_EQ_STATUS(rs_call(comm, v, NULL, NULL, 0, dt, op), want);
  }
}

static int rs_selected(size_t vi, int dt, int op, size_t ci, int form, size_t ncounts)
{
  if (mt.full)
    return 1;
  if (form != (int)((vi + (size_t)dt + (size_t)op + ci) % NFORMS))
    return 0;
  const variant_t *v = &rs_vars[vi];
  if (v->plain || v->algo == RONDO_ALGO_AUTO) /* one op per (dtype, count) */
    return (size_t)op == ((size_t)dt + ci + vi) % MT_OPS;
  if (ci == 0 || ci + 1 == ncounts) /* count 0, the prime: one op per dtype */
    return (size_t)op == ((size_t)dt + vi) % MT_OPS;
  return 1;
}

static size_t big_block(void)
{
  size_t rc = BIG_TOTAL / (size_t)p;
  return rc < BIG_MIN_BLOCK ? BIG_MIN_BLOCK : rc;
}

static void test_reduce_scatter(rondo_comm_t comm, const rs_bufs_t *b)
{
  /* 0, 1, 2, p+1, the prime; at 3+ ranks 2 goes */
  size_t counts[5], nc = 0;
  counts[nc++] = 0;
  counts[nc++] = 1;
  if (mt.full)
    counts[nc++] = 2;
  if ((size_t)p + 1 > 2)
    counts[nc++] = (size_t)p + 1;
  counts[nc++] = PRIME;
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++) {
    for (int op = 0; op < MT_OPS; op++) {
      for (size_t ci = 0; ci < nc; ci++) {
        int prepared = 0;
        for (size_t vi = 0; vi < n_rs_vars; vi++)
          for (int form = 0; form < NFORMS; form++) {
            if (!rs_selected(vi, dt, op, ci, form, nc))
              continue;
            if (!prepared)
              rs_prepare((rondo_dtype_t)dt, (rondo_op_t)op, counts[ci], b);
            prepared = 1;
            rs_case(comm, "", &rs_vars[vi], (rondo_dtype_t)dt, (rondo_op_t)op, counts[ci], form, b);
          }
      }
    }
  }
  /* The large count: float32 and int32 sum, every variant, the form
   * rotating (all three at 1-2 ranks). */
  static const rondo_dtype_t big_dts[] = {RONDO_FLOAT32, RONDO_INT32};
  size_t rc = big_block();
  for (size_t k = 0; k < 2; k++) {
    rs_prepare(big_dts[k], RONDO_SUM, rc, b);
    for (size_t vi = 0; vi < n_rs_vars; vi++)
      for (int form = 0; form < NFORMS; form++)
        if (mt.full || (size_t)form == (vi + k) % NFORMS)
          rs_case(comm, "large ", &rs_vars[vi], big_dts[k], RONDO_SUM, rc, form, b);
  }
}

/* AVG is the sum divided as rondo_allreduce's AVG divides it: the same
 * block of an all-reduce of the same data, on values whose average is not
 * exact. */
static void test_avg_like_allreduce(rondo_comm_t comm, const rs_bufs_t *b)
{
  static const rondo_dtype_t dts[] = {RONDO_FLOAT16, RONDO_BFLOAT16, RONDO_FLOAT32, RONDO_INT8,
                                      RONDO_INT64};
  size_t ndt = sizeof dts / sizeof dts[0], rc = (size_t)p + 2;
  for (size_t k = 0; k < ndt; k++) {
    rondo_dtype_t dt = dts[k];
    size_t es = mt_dtype_size(dt), all = rc * (size_t)p;
    mt.salt = 977 + k;
    mt_fill_input(dt, RONDO_AVG, 0, all, b->input);
    mt_where("AVG like rondo_allreduce's: the all-reduce of dtype=%s count=%zu", mt_dtype_str(dt),
             all);
    unsigned char *ar = mt_alloc(all * es);
    if (!MT_EQ_STATUS(rondo_allreduce(comm, b->input, ar, all, dt, RONDO_AVG), RONDO_SUCCESS)) {
      free(ar);
      continue;
    }
    for (size_t vi = 0; vi < n_rs_vars; vi++) {
      int form = (int)((vi + k) % NFORMS);
      if (!mt.full && (vi + k) % 3 != 0)
        continue;
      const variant_t *v = &rs_vars[vi];
      mt_where("AVG like rondo_allreduce's: reduce_scatter %s dtype=%s recvcount=%zu %s", v->name,
               mt_dtype_str(dt), rc, form_names[form]);
      rondo_status_t want = expected(comm, RONDO_COLL_REDUCE_SCATTER, v, rc, dt, RONDO_AVG);
      memcpy(b->buf, b->input, all * es);
      unsigned char *recvbuf = form == OUT     ? b->recv
                               : form == SHARD ? b->buf + (size_t)mt.rank * rc * es
                                               : b->buf;
      rondo_status_t st = rs_call(comm, v, b->buf, recvbuf, rc, dt, RONDO_AVG);
      if (MT_EQ_STATUS(st, want) && st == RONDO_SUCCESS)
        mt_check_elems("block against rondo_allreduce's AVG", dt, recvbuf,
                       ar + (size_t)mt.rank * rc * es, rc);
    }
    free(ar);
  }
}

/* ---- reduce_scatterv ------------------------------------------------------------ */

enum { RSV_ZEROS, RSV_ODD, RSV_ONE, RSV_EQUAL, RSV_NONE, RSV_BIG, RSV_PATTERNS };
static const char *const rsv_names[RSV_PATTERNS] = {"uneven with zeros",       "odd ranks only",
                                                    "all to the last rank",    "equal",
                                                    "all zero (NULL buffers)", "large uneven"};

static size_t rsv_count(int pattern, int r)
{
  switch (pattern) {
  case RSV_ZEROS: return r % 3 == 1 ? 0 : (size_t)(2 * r + 1);
  case RSV_ODD: return r % 2 == 0 ? 0 : (size_t)(1000 + 17 * r);
  case RSV_ONE: return r == p - 1 ? (size_t)p + 2 : 0;
  case RSV_EQUAL: return (size_t)p + 1;
  case RSV_NONE: return 0;
  default: return BIG_TOTAL / (size_t)p + (size_t)r * 3;
  }
}

static size_t rsv_capacity(void)
{
  size_t cap = 0;
  for (int pat = 0; pat < RSV_PATTERNS; pat++) {
    size_t t = 0;
    for (int r = 0; r < p; r++)
      t += rsv_count(pat, r);
    cap = t > cap ? t : cap;
  }
  return cap;
}

/* expect: the status every rank must see (success unless a knob forces an
 * algorithm that cannot run it: the caller knows). */
static void rsv_case(rondo_comm_t comm, const char *tag, rondo_dtype_t dt, rondo_op_t op,
                     int pattern, int form, const rs_bufs_t *b)
{
  size_t es = mt_dtype_size(dt), guard = MT_GUARD * es;
  size_t *counts = mt_alloc((size_t)p * sizeof *counts), total = 0, first = 0;
  for (int r = 0; r < p; r++) {
    counts[r] = rsv_count(pattern, r);
    if (r == mt.rank)
      first = total;
    total += counts[r];
  }
  size_t mine = counts[mt.rank], n = total * es;
  mt_where("%sreduce_scatterv counts=%s dtype=%s op=%s total=%zu %s", tag, rsv_names[pattern],
           mt_dtype_str(dt), mt_op_str(op), total, form_names[form]);
  mt.salt = 4099 + (uint64_t)pattern * 131 + total;
  mt_fill_input(dt, op, 0, total, b->input);
  mt_fill_reduced(dt, op, first, mine, b->want);
  memcpy(b->buf, b->input, n);
  memset(b->buf + n, MT_POISON, guard);
  memset(b->recv, MT_POISON, mine * es + guard);
  const void *sendbuf = total == 0 ? NULL : b->buf;
  void *recvbuf = form == OUT     ? (mine == 0 && pattern != RSV_EQUAL ? NULL : b->recv)
                  : form == SHARD ? b->buf + first * es
                                  : b->buf;
  if (total == 0)
    recvbuf = NULL;
  rondo_status_t st = rondo_reduce_scatterv(comm, sendbuf, recvbuf, counts, dt, op);
  if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
    const unsigned char *res = form == OUT ? b->recv : form == SHARD ? b->buf + first * es : b->buf;
    mt_check_elems("this rank's reduced block", dt, res, b->want, mine);
    if (form == OUT) {
      mt_check_poison("bytes past the end of recvbuf", b->recv + mine * es, guard);
      mt_check_elems("sendbuf after the call", dt, b->buf, b->input, total);
    }
    mt_check_poison("bytes past the end of sendbuf", b->buf + n, guard);
  }
  free(counts);
}

static void test_reduce_scatterv(rondo_comm_t comm, const char *tag, int k, const rs_bufs_t *b)
{
  /* full: every dtype x op x pattern x form on the world comm; otherwise
   * one pattern and form per (dtype, op), rotating; on a knob comm (k >= 0)
   * one dtype per (op, pattern). */
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++)
    for (int op = 0; op < MT_OPS; op++)
      for (int pat = 0; pat <= RSV_EQUAL; pat++)
        for (int form = 0; form < NFORMS; form++) {
          int sel;
          if (k >= 0)
            sel = dt == (op + pat + k) % RONDO_DTYPE_COUNT && form == (op + pat + k) % NFORMS;
          else if (mt.full)
            sel = 1;
          else
            sel = pat == (dt + op) % (RSV_EQUAL + 1) && form == (dt + op + pat) % NFORMS;
          if (sel)
            rsv_case(comm, tag, (rondo_dtype_t)dt, (rondo_op_t)op, pat, form, b);
        }
  int kk = k < 0 ? 0 : k;
  rsv_case(comm, tag, (rondo_dtype_t)(kk % RONDO_DTYPE_COUNT), (rondo_op_t)(kk % MT_OPS), RSV_NONE,
           OUT, b);
  rsv_case(comm, tag, RONDO_FLOAT32, RONDO_SUM, RSV_BIG, kk % NFORMS, b);
  if (k < 0 && mt.full)
    for (int form = 0; form < NFORMS; form++)
      rsv_case(comm, tag, RONDO_INT32, RONDO_SUM, RSV_BIG, form, b);
}

/* ---- all-gather ------------------------------------------------------------------ */

typedef struct {
  unsigned char *want; /* every rank's block, in rank order */
  unsigned char *send;
  unsigned char *recv;
} ag_bufs_t;

static uint64_t ag_stream(int kind, rondo_dtype_t dt, int from, size_t count)
{
  return ((((uint64_t)kind * 16 + (uint64_t)dt) * 4096 + (uint64_t)from) << 24) ^ count;
}

static rondo_status_t ag_call(rondo_comm_t comm, const variant_t *v, const void *s, void *r,
                              size_t count, rondo_dtype_t dt)
{
  if (v->plain)
    return rondo_allgather(comm, s, r, count, dt);
  return rondo_allgather_algo(comm, s, r, count, dt, v->algo);
}

static void ag_prepare(rondo_dtype_t dt, size_t count, const ag_bufs_t *b)
{
  size_t n = count * mt_dtype_size(dt);
  for (int r = 0; r < p; r++)
    mt_fill_pattern(b->want + (size_t)r * n, n, ag_stream(5, dt, r, count));
}

static void ag_case(rondo_comm_t comm, const char *tag, const variant_t *v, rondo_dtype_t dt,
                    size_t count, int inplace, const ag_bufs_t *b)
{
  size_t es = mt_dtype_size(dt), n = count * es, total = n * (size_t)p, guard = MT_GUARD * es;
  mt_where("%sallgather %s dtype=%s count=%zu %s", tag, v->name, mt_dtype_str(dt), count,
           form_names[inplace ? SHARD : OUT]);
  rondo_status_t want = expected(comm, RONDO_COLL_ALLGATHER, v, count, dt, RONDO_SUM);
  const unsigned char *own = b->want + (size_t)mt.rank * n;
  memset(b->recv, MT_POISON, total + guard);
  memcpy(b->send, own, n);
  memset(b->send + n, MT_POISON, guard);
  if (inplace)
    memcpy(b->recv + (size_t)mt.rank * n, own, n);
  rondo_status_t st =
      ag_call(comm, v, inplace ? b->recv + (size_t)mt.rank * n : b->send, b->recv, count, dt);
  if (MT_EQ_STATUS(st, want)) {
    if (st == RONDO_SUCCESS) {
      mt_check_elems("gathered blocks", dt, b->recv, b->want, count * (size_t)p);
      mt_check_poison("bytes past the end of recvbuf", b->recv + total, guard);
      if (!inplace) {
        mt_check_elems("sendbuf after the call", dt, b->send, own, count);
        mt_check_poison("bytes past the end of sendbuf", b->send + n, guard);
      }
    } else {
      mt_check_poison("recvbuf before this rank's block after a refused call", b->recv,
                      (size_t)mt.rank * n);
      mt_check_poison("recvbuf after this rank's block after a refused call",
                      b->recv + (size_t)(mt.rank + 1) * n, total - (size_t)(mt.rank + 1) * n);
    }
  }
  mt_hash_record(b->recv, st == RONDO_SUCCESS ? total : 0);
  if (count == 0 && !inplace) {
    mt_where("%sallgather %s dtype=%s count=0 NULL buffers", tag, v->name, mt_dtype_str(dt));
    MT_EQ_STATUS(ag_call(comm, v, NULL, NULL, 0, dt), want);
  }
}

static void test_allgather(rondo_comm_t comm, const ag_bufs_t *b)
{
  size_t counts[5], nc = 0;
  counts[nc++] = 0;
  counts[nc++] = 1;
  if (mt.full)
    counts[nc++] = 2;
  if ((size_t)p + 1 > 2)
    counts[nc++] = (size_t)p + 1;
  counts[nc++] = PRIME;
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++) {
    for (size_t ci = 0; ci < nc; ci++) {
      ag_prepare((rondo_dtype_t)dt, counts[ci], b);
      for (size_t vi = 0; vi < n_ag_vars; vi++) {
        const variant_t *v = &ag_vars[vi];
        for (int ip = 0; ip < 2; ip++) {
          int sel = mt.full || ip == (int)((vi + (size_t)dt + ci) % 2);
          if (sel && !mt.full && (v->plain || v->algo == RONDO_ALGO_AUTO))
            sel = (size_t)dt % 3 == (ci + vi) % 3; /* a third of the dtypes */
          if (sel)
            ag_case(comm, "", v, (rondo_dtype_t)dt, counts[ci], ip, b);
        }
      }
    }
    mt_hash_flush();
  }
  /* The large count: float32 and uint8 (odd byte counts), every variant. */
  static const rondo_dtype_t big_dts[] = {RONDO_FLOAT32, RONDO_UINT8};
  size_t count = big_block();
  for (size_t k = 0; k < 2; k++) {
    ag_prepare(big_dts[k], count, b);
    for (size_t vi = 0; vi < n_ag_vars; vi++)
      for (int ip = 0; ip < 2; ip++)
        if (mt.full || (size_t)ip == (vi + k) % 2)
          ag_case(comm, "large ", &ag_vars[vi], big_dts[k], count, ip, b);
  }
  mt_hash_flush();
}

/* Uneven counts with zeros; packed, gapped and reversed layouts (gaps keep
 * their poison). As in test_collectives.c, with a larger uneven pattern. */
enum { PACKED, GAPPED, REVERSED, NLAYOUTS };
static const char *const layout_names[NLAYOUTS] = {"displs=NULL", "gapped displs",
                                                   "reversed gapped displs"};

static size_t agv_count(int pattern, int r)
{
  switch (pattern) {
  case 0: return r % 3 == 1 ? 0 : (size_t)(2 * r + 1);
  case 1: return r % 2 == 0 ? 0 : (size_t)(1000 + 17 * r);
  case 2: return BIG_TOTAL / (size_t)p + (size_t)r * 5;
  default: return 0;
  }
}

static void agv_case(rondo_comm_t comm, const char *tag, rondo_dtype_t dt, int pattern, int layout)
{
  size_t es = mt_dtype_size(dt), *cnt = mt_alloc((size_t)p * sizeof *cnt);
  size_t *displs = mt_alloc((size_t)p * sizeof *displs), extent = 0;
  for (int r = 0; r < p; r++)
    cnt[r] = agv_count(pattern, r);
  for (int k = 0; k < p; k++) {
    int r = layout == REVERSED ? p - 1 - k : k;
    if (layout != PACKED)
      extent += 2 + (size_t)r % 3;
    displs[r] = extent;
    extent += cnt[r];
  }
  if (layout != PACKED)
    extent += 3;
  mt_where("%sallgatherv dtype=%s counts=pattern%d %s extent=%zu", tag, mt_dtype_str(dt), pattern,
           layout_names[layout], extent);
  size_t n = cnt[mt.rank] * es, total = extent * es;
  unsigned char *want = mt_alloc(total + MT_GUARD * es), *recv = out_buf(total, es);
  unsigned char *send = out_buf(n, es);
  memset(want, MT_POISON, total + MT_GUARD * es);
  for (int r = 0; r < p; r++)
    mt_fill_pattern(want + displs[r] * es, cnt[r] * es, ag_stream(6, dt, r, cnt[r] + 7u * pattern));
  memcpy(send, want + displs[mt.rank] * es, n);
  const void *sendbuf = n == 0 && layout != PACKED ? NULL : send;
  void *recvbuf = total == 0 ? NULL : recv;
  rondo_status_t st = rondo_allgatherv(comm, sendbuf, cnt[mt.rank], recvbuf, cnt,
                                       layout == PACKED ? NULL : displs, dt);
  if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
    mt_check_elems("recvbuf (blocks, gaps and guard)", dt, recv, want, extent + MT_GUARD);
    mt_check_elems("sendbuf after the call", dt, send, want + displs[mt.rank] * es, cnt[mt.rank]);
    mt_check_poison("bytes past the end of sendbuf", send + n, MT_GUARD * es);
  }
  mt_hash_record(recv, st == RONDO_SUCCESS ? total : 0);
  free(cnt);
  free(displs);
  free(want);
  free(recv);
  free(send);
}

static void test_allgatherv(rondo_comm_t comm, const char *tag, int k)
{
  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++)
    for (int pattern = 0; pattern < 2; pattern++)
      for (int layout = 0; layout < NLAYOUTS; layout++) {
        int sel = k >= 0 ? dt == (k + pattern * 3 + layout) % RONDO_DTYPE_COUNT
                         : mt.full || layout == (dt + pattern) % NLAYOUTS;
        if (sel)
          agv_case(comm, tag, (rondo_dtype_t)dt, pattern, layout);
      }
  agv_case(comm, tag, RONDO_FLOAT32, 2, k < 0 ? GAPPED : k % NLAYOUTS);
  agv_case(comm, tag, (rondo_dtype_t)((k < 0 ? 0 : k) % RONDO_DTYPE_COUNT), 3, PACKED);
  mt_hash_flush();
}

/* ---- the selector's queries -------------------------------------------------------- */

static void test_names(void)
{
  mt_where("rondo_coll_name and the new algorithm names");
  for (int c = 0; c < RONDO_COLL_COUNT; c++)
    MT_EQ_STR(rondo_coll_name((rondo_coll_t)c), coll_names[c]);
  MT_EQ_STR(rondo_coll_name(RONDO_COLL_COUNT), NULL);
  MT_EQ_STR(rondo_coll_name((rondo_coll_t)-1), NULL);
  for (int a = 0; a < RONDO_ALGO_COUNT; a++) {
    MT_EQ_STR(rondo_algo_name((rondo_algo_t)a), algo_names[a]);
    rondo_algo_t back = (rondo_algo_t)-1;
    MT_EQ_STATUS(rondo_algo_from_name(algo_names[a], &back), RONDO_SUCCESS);
    MT_EQ_INT(back, a);
  }
  MT_EQ_STR(rondo_algo_name(RONDO_ALGO_COUNT), NULL);
}

/* Membership on the world comm, and what a call forced onto an algorithm
 * that cannot run it does. Fills the variant lists. */
static void test_membership(rondo_comm_t comm)
{
  static const rondo_coll_t colls[] = {RONDO_COLL_REDUCE_SCATTER, RONDO_COLL_ALLGATHER};
  for (size_t k = 0; k < 2; k++) {
    rondo_coll_t coll = colls[k];
    variant_t *vars = coll == RONDO_COLL_REDUCE_SCATTER ? rs_vars : ag_vars;
    size_t *nv = coll == RONDO_COLL_REDUCE_SCATTER ? &n_rs_vars : &n_ag_vars;
    rondo_algo_t forced = world_forced[coll];
    *nv = 0;
    if (enabled("plain")) {
      variant_t v = {"", 1, RONDO_ALGO_AUTO, forced};
      snprintf(v.name, sizeof v.name, "%s",
               coll == RONDO_COLL_REDUCE_SCATTER ? "rondo_reduce_scatter" : "rondo_allgather");
      vars[(*nv)++] = v;
    }
    if (enabled("auto")) {
      variant_t v = {"auto", 0, RONDO_ALGO_AUTO, forced};
      vars[(*nv)++] = v;
    }
    for (int a = 1; a < RONDO_ALGO_COUNT; a++) {
      int m = membership(coll, a);
      int want = m == MEMBER && (a != RONDO_ALGO_SHM || nodes == 1);
      const char *why = NULL;
      mt_where("rondo_coll_algo_available(%s, %s) on %d node(s)", coll_names[coll], algo_names[a],
               nodes);
      rondo_status_t st = rondo_coll_algo_available(comm, coll, (rondo_algo_t)a, 1000,
                                                    RONDO_FLOAT32, RONDO_SUM, &why);
      if (m == MAYBE) {
        MT_CHECK(st == RONDO_SUCCESS || st == RONDO_ERR_UNSUPPORTED, "status %s",
                 mt_status_name(st));
        if (st != RONDO_SUCCESS && mt.rank == 0)
          printf("test_families: note: %s %s does not run on this comm: %s\n", coll_names[coll],
                 algo_names[a], why ? why : "(no reason)");
      } else
        MT_EQ_STATUS(st, want ? RONDO_SUCCESS : RONDO_ERR_UNSUPPORTED);
      if (st != RONDO_SUCCESS) {
        MT_CHECK(why != NULL && why[0] != '\0', "a reason why %s cannot run", algo_names[a]);
        /* forced anyway: refused on every rank, recvbuf untouched */
        mt_where("%s forced onto %s, which cannot run it", coll_names[coll], algo_names[a]);
        float *x = mt_alloc((size_t)p * sizeof *x);
        unsigned char *y = out_buf((size_t)p * 4, 4);
        for (int i = 0; i < p; i++)
          x[i] = (float)i;
        rondo_status_t fst =
            coll == RONDO_COLL_REDUCE_SCATTER
                ? rondo_reduce_scatter_algo(comm, x, y, 1, RONDO_FLOAT32, RONDO_SUM,
                                            (rondo_algo_t)a)
                : rondo_allgather_algo(comm, x, y, 1, RONDO_FLOAT32, (rondo_algo_t)a);
        MT_EQ_STATUS(fst, RONDO_ERR_UNSUPPORTED);
        mt_check_poison("recvbuf of the refused call", y, ((size_t)p + MT_GUARD) * 4);
        free(x);
        free(y);
      }
      if (st == RONDO_SUCCESS && enabled(algo_names[a])) {
        variant_t v = {"", 0, (rondo_algo_t)a, forced};
        snprintf(v.name, sizeof v.name, "%s", algo_names[a]);
        vars[(*nv)++] = v;
      }
    }
    /* not algorithms */
    mt_where("rondo_coll_algo_available(%s) of auto and of ids out of range", coll_names[coll]);
    const char *why = NULL;
    MT_EQ_STATUS(
        rondo_coll_algo_available(comm, coll, RONDO_ALGO_AUTO, 8, RONDO_FLOAT32, RONDO_SUM, &why),
        RONDO_ERR_INVALID_ALGO);
    MT_EQ_STATUS(
        rondo_coll_algo_available(comm, coll, RONDO_ALGO_COUNT, 8, RONDO_FLOAT32, RONDO_SUM, &why),
        RONDO_ERR_INVALID_ALGO);
    MT_EQ_STATUS(
        rondo_coll_algo_available(comm, coll, (rondo_algo_t)-1, 8, RONDO_FLOAT32, RONDO_SUM, &why),
        RONDO_ERR_INVALID_ALGO);
  }
  /* The all-reduce family through the general query: as
   * rondo_algo_available says. */
  for (int a = 1; a < RONDO_ALGO_COUNT; a++) {
    mt_where("rondo_coll_algo_available(allreduce, %s) as rondo_algo_available", algo_names[a]);
    MT_EQ_STATUS(rondo_coll_algo_available(comm, RONDO_COLL_ALLREDUCE, (rondo_algo_t)a, 1000,
                                           RONDO_FLOAT32, RONDO_SUM, NULL),
                 rondo_algo_available(comm, (rondo_algo_t)a, 1000, RONDO_FLOAT32, RONDO_SUM, NULL));
  }
  mt_where("rondo_coll_algo_available of a collective out of range");
  MT_CHECK(rondo_coll_algo_available(comm, RONDO_COLL_COUNT, RONDO_ALGO_RING, 8, RONDO_FLOAT32,
                                     RONDO_SUM, NULL) != RONDO_SUCCESS,
           "coll %d refused", RONDO_COLL_COUNT);
  mt_where("rondo_coll_algo_available(reduce_scatter, ring) of op adasum");
  MT_CHECK(rondo_coll_algo_available(comm, RONDO_COLL_REDUCE_SCATTER, RONDO_ALGO_RING, 8,
                                     RONDO_FLOAT32, RONDO_ADASUM, NULL) != RONDO_SUCCESS,
           "op adasum refused");

  /* Invalid ids through the calls: refused on every rank. */
  float *x = mt_alloc((size_t)p * sizeof *x);
  unsigned char *y = out_buf((size_t)p * 4, 4);
  for (int i = 0; i < p; i++)
    x[i] = (float)i;
  static const int bad_ids[] = {RONDO_ALGO_COUNT, -1, 1000};
  for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
    mt_where("rondo_reduce_scatter_algo with algorithm id %d", bad_ids[i]);
    MT_EQ_STATUS(rondo_reduce_scatter_algo(comm, x, y, 1, RONDO_FLOAT32, RONDO_SUM,
                                           (rondo_algo_t)bad_ids[i]),
                 RONDO_ERR_INVALID_ALGO);
    mt_where("rondo_allgather_algo with algorithm id %d", bad_ids[i]);
    MT_EQ_STATUS(rondo_allgather_algo(comm, x, y, 1, RONDO_FLOAT32, (rondo_algo_t)bad_ids[i]),
                 RONDO_ERR_INVALID_ALGO);
    mt_check_poison("recvbuf after an invalid algorithm", y, ((size_t)p + MT_GUARD) * 4);
  }
  free(x);
  free(y);
  mt_hash_flush();
}

static void test_choice(rondo_comm_t comm, const char *tag, rondo_algo_t knob_rs,
                        rondo_algo_t knob_ag)
{
  static const rondo_coll_t colls[] = {RONDO_COLL_REDUCE_SCATTER, RONDO_COLL_ALLGATHER};
  static const rondo_dtype_t dts[] = {RONDO_FLOAT32, RONDO_INT8, RONDO_FLOAT64};
  size_t counts[] = {1, (size_t)p + 1, PRIME, big_block()};
  for (size_t k = 0; k < 2; k++) {
    rondo_coll_t coll = colls[k];
    rondo_algo_t knob = coll == RONDO_COLL_REDUCE_SCATTER ? knob_rs : knob_ag;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        rondo_op_t op = c % 2 && coll == RONDO_COLL_REDUCE_SCATTER ? RONDO_AVG : RONDO_SUM;
        mt_where("%srondo_coll_choice(%s) count=%zu dtype=%s op=%s", tag, coll_names[coll],
                 counts[c], mt_dtype_str(dts[d]), mt_op_str(op));
        rondo_algo_t a = (rondo_algo_t)-1;
        rondo_status_t st = rondo_coll_choice(comm, coll, counts[c], dts[d], op, &a);
        int32_t rec = -2;
        if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
          rec = (int32_t)a;
          if (knob != RONDO_ALGO_AUTO) {
            MT_EQ_STR(rondo_algo_name(a), algo_names[knob]);
          } else if (MT_CHECK(a > RONDO_ALGO_AUTO && a < RONDO_ALGO_COUNT, "a valid choice (%d)",
                              (int)a)) {
            MT_CHECK(membership(coll, a) != NOT_MEMBER, "%s serves %s", algo_names[a],
                     coll_names[coll]);
            const char *why = NULL;
            MT_EQ_STATUS(rondo_coll_algo_available(comm, coll, a, counts[c], dts[d], op, &why),
                         RONDO_SUCCESS);
          }
          if (a > RONDO_ALGO_AUTO && a < RONDO_ALGO_COUNT && (c == 1 || c == 3) && d == 0) {
            char text[4096] = "", want[64];
            size_t needed = 0;
            mt_where("%srondo_coll_explain(%s) count=%zu dtype=%s op=%s", tag, coll_names[coll],
                     counts[c], mt_dtype_str(dts[d]), mt_op_str(op));
            if (MT_EQ_STATUS(rondo_coll_explain(comm, coll, counts[c], dts[d], op, text,
                                                sizeof text, &needed),
                             RONDO_SUCCESS)) {
              snprintf(want, sizeof want, "choice: %s (", algo_names[a]);
              MT_CHECK(strstr(text, want) != NULL, "'%s' in: %s", want, text);
              MT_EQ_INT(needed, strlen(text) + 1);
              if (knob != RONDO_ALGO_AUTO) {
                snprintf(want, sizeof want, "forced by %s",
                         coll == RONDO_COLL_REDUCE_SCATTER ? "RONDO_REDUCE_SCATTER_ALGO"
                                                           : "RONDO_ALLGATHER_ALGO");
                MT_CHECK(strstr(text, want) != NULL, "'%s' in: %s", want, text);
              }
              /* every member the comm can run is priced (named) */
              for (int m = 1; m < RONDO_ALGO_COUNT; m++)
                if (membership(coll, m) == MEMBER &&
                    rondo_coll_algo_available(comm, coll, (rondo_algo_t)m, counts[c], dts[d], op,
                                              NULL) == RONDO_SUCCESS)
                  MT_CHECK(strstr(text, algo_names[m]) != NULL, "%s named in: %s", algo_names[m],
                           text);
              char small[8];
              size_t need2 = 0;
              MT_EQ_STATUS(rondo_coll_explain(comm, coll, counts[c], dts[d], op, small,
                                              sizeof small, &need2),
                           RONDO_ERR_TRUNCATED);
              MT_EQ_INT(need2, needed);
              MT_CHECK(memchr(small, '\0', sizeof small) != NULL, "truncated text terminated");
            }
          }
        }
        mt_hash_record(&rec, sizeof rec); /* the same choice on every rank */
      }
  }
  mt_where("%srondo_coll_choice(allreduce) as rondo_allreduce_choice", tag);
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    rondo_algo_t a = (rondo_algo_t)-1, b = (rondo_algo_t)-2;
    MT_EQ_STATUS(
        rondo_coll_choice(comm, RONDO_COLL_ALLREDUCE, counts[c], RONDO_FLOAT32, RONDO_SUM, &a),
        RONDO_SUCCESS);
    MT_EQ_STATUS(rondo_allreduce_choice(comm, counts[c], RONDO_FLOAT32, RONDO_SUM, &b),
                 RONDO_SUCCESS);
    MT_EQ_INT(a, b);
  }
  mt_where("%srondo_coll_choice with bad arguments", tag);
  MT_EQ_STATUS(
      rondo_coll_choice(comm, RONDO_COLL_REDUCE_SCATTER, 8, RONDO_FLOAT32, RONDO_SUM, NULL),
      RONDO_ERR_INVALID_ARG);
  rondo_algo_t a = RONDO_ALGO_AUTO;
  MT_CHECK(rondo_coll_choice(comm, RONDO_COLL_COUNT, 8, RONDO_FLOAT32, RONDO_SUM, &a) !=
               RONDO_SUCCESS,
           "coll %d refused", RONDO_COLL_COUNT);
  char text[64];
  MT_CHECK(rondo_coll_explain(comm, RONDO_COLL_COUNT, 8, RONDO_FLOAT32, RONDO_SUM, text,
                              sizeof text, NULL) != RONDO_SUCCESS,
           "coll %d refused by rondo_coll_explain", RONDO_COLL_COUNT);
  mt_hash_flush();
}

/* ---- errors: mismatches and overlaps -------------------------------------------------- */

/* A valid reduce-scatter and all-gather on comm still work. */
static void still_works(rondo_comm_t comm)
{
  enum { RC = 3 };
  int32_t *in = mt_alloc((size_t)p * RC * sizeof *in), out[RC] = {0, 0, 0};
  for (int j = 0; j < p * RC; j++)
    in[j] = (mt.rank + 1) * (j + 1);
  if (MT_EQ_STATUS(rondo_reduce_scatter(comm, in, out, RC, RONDO_INT32, RONDO_SUM), RONDO_SUCCESS))
    for (int k = 0; k < RC; k++)
      MT_EQ_INT(out[k], (mt.rank * RC + k + 1) * p * (p + 1) / 2);
  int32_t mine = 1000 + mt.rank;
  if (MT_EQ_STATUS(rondo_allgather(comm, &mine, in, 1, RONDO_INT32), RONDO_SUCCESS))
    for (int r = 0; r < p; r++)
      MT_EQ_INT(in[r], 1000 + r);
  free(in);
}

typedef struct {
  int coll; /* 0 reduce_scatter, 1 allgather, 2 reduce_scatterv */
  const variant_t *v;
  size_t count;
  rondo_dtype_t dt;
  rondo_op_t op;
  rondo_algo_t algo;
  const size_t *counts;
} mcall_t;

static unsigned char *msend, *mrecv;
static size_t mbytes;

static rondo_status_t mcall_run(rondo_comm_t comm, const mcall_t *c)
{
  memset(mrecv, MT_POISON, mbytes);
  variant_t v = *c->v;
  v.algo = c->algo;
  if (c->coll == 0)
    return rs_call(comm, &v, msend, mrecv, c->count, c->dt, c->op);
  if (c->coll == 1)
    return ag_call(comm, &v, msend, mrecv, c->count, c->dt);
  return rondo_reduce_scatterv(comm, msend, mrecv, c->counts, c->dt, c->op);
}

static void expect_mismatch(rondo_comm_t comm, const mcall_t *c, int line)
{
  rondo_status_t st = mcall_run(comm, c);
  mt_eq_status_((int)st, RONDO_ERR_MISMATCH, "the mismatched call", line);
  const char *err = rondo_last_error();
  MT_CHECK(err != NULL && err[0] != '\0', "rondo_last_error() after the mismatch");
  mt_check_poison("recvbuf after the mismatch", mrecv, mbytes);
  still_works(comm);
}

static void test_mismatch(rondo_comm_t comm)
{
  if (p < 2)
    return;
  enum { N = 8 };
  int last = mt.rank == p - 1, upper = mt.rank >= p / 2;
  for (size_t i = 0; i < mbytes; i++)
    msend[i] = (unsigned char)(i % 7); /* small valid values in any dtype */
  size_t *counts = mt_alloc((size_t)p * sizeof *counts);
  for (size_t vi = 0; vi < n_rs_vars; vi++) {
    const variant_t *v = &rs_vars[vi];
    mcall_t c = {0, v, N, RONDO_FLOAT32, RONDO_SUM, v->algo, NULL};
    mt_where("reduce_scatter %s: recvcount 7 instead of 8 on rank %d", v->name, p - 1);
    if (last)
      c.count = N - 1;
    expect_mismatch(comm, &c, __LINE__);
    mt_where("reduce_scatter %s: dtype float64 instead of float32 on rank %d", v->name, p - 1);
    c.count = N;
    if (last)
      c.dt = RONDO_FLOAT64;
    expect_mismatch(comm, &c, __LINE__);
    if (!mt.full && vi > 1)
      continue;
    mt_where("reduce_scatter %s: dtype int32 instead of float32 on rank %d", v->name, p - 1);
    c.dt = last ? RONDO_INT32 : RONDO_FLOAT32;
    expect_mismatch(comm, &c, __LINE__);
    mt_where("reduce_scatter %s: op min instead of sum on rank %d", v->name, p - 1);
    c.dt = RONDO_FLOAT32;
    if (last)
      c.op = RONDO_MIN;
    expect_mismatch(comm, &c, __LINE__);
    mt_where("reduce_scatter %s: recvcount 9 on ranks %d-%d, 8 below", v->name, p / 2, p - 1);
    c.op = RONDO_SUM;
    c.count = upper ? N + 1 : N;
    expect_mismatch(comm, &c, __LINE__);
  }
  /* different algorithms */
  if (n_rs_vars >= 4) {
    const variant_t *a = &rs_vars[n_rs_vars - 1], *b = &rs_vars[n_rs_vars - 2];
    mcall_t c = {0, a, N, RONDO_FLOAT32, RONDO_SUM, last ? b->algo : a->algo, NULL};
    mt_where("reduce_scatter: algorithm %s instead of %s on rank %d", b->name, a->name, p - 1);
    expect_mismatch(comm, &c, __LINE__);
  }
  /* reduce_scatterv: different recvcounts, the same total */
  for (int r = 0; r < p; r++)
    counts[r] = N;
  if (last) {
    counts[0] = N - 1;
    counts[1] = N + 1;
  }
  {
    variant_t plain = {"rondo_reduce_scatterv", 1, RONDO_ALGO_AUTO, RONDO_ALGO_AUTO};
    mcall_t c = {2, &plain, 0, RONDO_FLOAT32, RONDO_SUM, RONDO_ALGO_AUTO, counts};
    mt_where("reduce_scatterv: recvcounts[0..1] 7,9 instead of 8,8 on rank %d", p - 1);
    expect_mismatch(comm, &c, __LINE__);
    counts[0] = counts[1] = N;
    if (last)
      counts[p - 1] = N + 2;
    mt_where("reduce_scatterv: recvcounts[%d] 10 instead of 8 on rank %d", p - 1, p - 1);
    expect_mismatch(comm, &c, __LINE__);
    counts[p - 1] = N;
    mt_where("reduce_scatterv: dtype int32 instead of float32 on rank %d", p - 1);
    c.dt = last ? RONDO_INT32 : RONDO_FLOAT32;
    expect_mismatch(comm, &c, __LINE__);
  }
  for (size_t vi = 0; vi < n_ag_vars; vi++) {
    const variant_t *v = &ag_vars[vi];
    mcall_t c = {1, v, N, RONDO_FLOAT32, RONDO_SUM, v->algo, NULL};
    mt_where("allgather %s: count 7 instead of 8 on rank %d", v->name, p - 1);
    if (last)
      c.count = N - 1;
    expect_mismatch(comm, &c, __LINE__);
    if (!mt.full && vi > 1)
      continue;
    mt_where("allgather %s: dtype int32 instead of float32 on rank %d", v->name, p - 1);
    c.count = N;
    c.dt = last ? RONDO_INT32 : RONDO_FLOAT32;
    expect_mismatch(comm, &c, __LINE__);
    mt_where("allgather %s: count 9 on ranks %d-%d, 8 below", v->name, p / 2, p - 1);
    c.dt = RONDO_FLOAT32;
    c.count = upper ? N + 1 : N;
    expect_mismatch(comm, &c, __LINE__);
  }
  if (n_ag_vars >= 4) {
    const variant_t *a = &ag_vars[n_ag_vars - 1], *b = &ag_vars[n_ag_vars - 2];
    mcall_t c = {1, a, N, RONDO_FLOAT32, RONDO_SUM, last ? b->algo : a->algo, NULL};
    mt_where("allgather: algorithm %s instead of %s on rank %d", b->name, a->name, p - 1);
    expect_mismatch(comm, &c, __LINE__);
  }
  /* a different collective, the same count and dtype */
  {
    variant_t plain = {"plain", 1, RONDO_ALGO_AUTO, RONDO_ALGO_AUTO};
    mcall_t c = {last ? 1 : 0, &plain, N, RONDO_FLOAT32, RONDO_SUM, RONDO_ALGO_AUTO, NULL};
    mt_where("rondo_allgather on rank %d, rondo_reduce_scatter on the others", p - 1);
    expect_mismatch(comm, &c, __LINE__);
    for (int r = 0; r < p; r++)
      counts[r] = N;
    mcall_t d = {last ? 2 : 0, &plain, N, RONDO_FLOAT32, RONDO_SUM, RONDO_ALGO_AUTO, counts};
    mt_where("rondo_reduce_scatterv on rank %d, rondo_reduce_scatter on the others (same "
             "counts)",
             p - 1);
    rondo_status_t st = mcall_run(comm, &d);
    /* the same blocks either way: a mismatch, or (if the two are one
     * collective to rondo) a correct result; never a hang */
    MT_CHECK(st == RONDO_ERR_MISMATCH || st == RONDO_SUCCESS, "status %s", mt_status_name(st));
    int32_t ok = st == RONDO_SUCCESS, lo = 0, hi = 0;
    MPI_Allreduce(&ok, &lo, 1, MPI_INT32_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&ok, &hi, 1, MPI_INT32_T, MPI_MAX, MPI_COMM_WORLD);
    MT_CHECK(lo == hi, "the same outcome on every rank");
    still_works(comm);
  }
  free(counts);
  mt_hash_flush();
}

/* Overlaps other than the in-place forms: RONDO_ERR_INVALID_ARG, and no
 * byte of either buffer changes. */
static void expect_overlap(rondo_comm_t comm, int coll, const variant_t *v, unsigned char *region,
                           size_t region_bytes, const void *s, void *r, size_t count,
                           const size_t *counts, int bad_here, int anywhere_bad, int line)
{
  unsigned char *before = mt_alloc(region_bytes);
  for (size_t i = 0; i < region_bytes; i++)
    region[i] = (unsigned char)(i * 13 % 7);
  memcpy(before, region, region_bytes);
  rondo_status_t st;
  if (coll == 0)
    st = rs_call(comm, v, s, r, count, RONDO_FLOAT32, RONDO_SUM);
  else if (coll == 1)
    st = ag_call(comm, v, s, r, count, RONDO_FLOAT32);
  else
    st = rondo_reduce_scatterv(comm, s, r, counts, RONDO_FLOAT32, RONDO_SUM);
  rondo_status_t want = bad_here       ? RONDO_ERR_INVALID_ARG
                        : anywhere_bad ? RONDO_ERR_PEER
                                       : RONDO_SUCCESS;
  mt_eq_status_((int)st, (int)want, "the overlapping call", line);
  if (want != RONDO_SUCCESS)
    mt_check_elems("buffers after the refused call", RONDO_UINT8, region, before, region_bytes);
  free(before);
  still_works(comm);
}

static void test_overlap(rondo_comm_t comm)
{
  enum { N = 8 };
  size_t all = (size_t)p * N, es = 4, bytes = (all + 4 * N) * es;
  unsigned char *region = mt_alloc(bytes);
  float *f = (float *)region;
  size_t *counts = mt_alloc((size_t)p * sizeof *counts), first = (size_t)mt.rank * N;
  for (int r = 0; r < p; r++)
    counts[r] = N;
  for (size_t vi = 0; vi < n_rs_vars; vi++) {
    const variant_t *v = &rs_vars[vi];
    int every = mt.full || vi == 0;
    mt_where("reduce_scatter %s: recvbuf = sendbuf + this rank's block + 1 element", v->name);
    expect_overlap(comm, 0, v, region, bytes, f, f + first + 1, N, NULL, 1, 1, __LINE__);
    if (!every)
      continue;
    mt_where("reduce_scatter %s: recvbuf = sendbuf + 1 element", v->name);
    expect_overlap(comm, 0, v, region, bytes, f, f + 1, N, NULL, 1, 1, __LINE__);
    mt_where("reduce_scatter %s: recvbuf over the end of sendbuf (+ %zu elements)", v->name,
             all - 1);
    expect_overlap(comm, 0, v, region, bytes, f, f + all - 1, N, NULL, 1, 1, __LINE__);
    mt_where("reduce_scatter %s: sendbuf = recvbuf + 1 element", v->name);
    expect_overlap(comm, 0, v, region, bytes, f + 1, f, N, NULL, 1, 1, __LINE__);
    if (p >= 3) { /* a block neither this rank's nor block 0 (recvbuf == sendbuf) */
      size_t other = mt.rank + 1 < p ? (size_t)mt.rank + 1 : 1;
      mt_where("reduce_scatter %s: recvbuf at another rank's block (not block 0)", v->name);
      expect_overlap(comm, 0, v, region, bytes, f, f + other * N, N, NULL, 1, 1, __LINE__);
    }
    if (p >= 2) {
      int last = mt.rank == p - 1;
      mt_where("reduce_scatter %s: recvbuf = sendbuf + 1 element on rank %d only", v->name, p - 1);
      expect_overlap(comm, 0, v, region, bytes, f, last ? f + 1 : f + first, N, NULL, last, 1,
                     __LINE__);
    }
  }
  mt_where("reduce_scatterv: recvbuf = sendbuf + this rank's block + 1 element");
  expect_overlap(comm, 2, &rs_vars[0], region, bytes, f, f + first + 1, 0, counts, 1, 1, __LINE__);
  mt_where("reduce_scatterv: sendbuf = recvbuf + 1 element");
  expect_overlap(comm, 2, &rs_vars[0], region, bytes, f + 1, f, 0, counts, 1, 1, __LINE__);
  for (size_t vi = 0; vi < n_ag_vars; vi++) {
    const variant_t *v = &ag_vars[vi];
    mt_where("allgather %s: sendbuf = recvbuf + this rank's block + 1 element", v->name);
    expect_overlap(comm, 1, v, region, bytes, f + first + 1, f, N, NULL, 1, 1, __LINE__);
    if (!(mt.full || vi == 0))
      continue;
    mt_where("allgather %s: recvbuf = sendbuf + 1 element", v->name);
    expect_overlap(comm, 1, v, region, bytes, f, f + 1, N, NULL, 1, 1, __LINE__);
    if (p >= 2) {
      mt_where("allgather %s: sendbuf at the next rank's block", v->name);
      expect_overlap(comm, 1, v, region, bytes, f + (size_t)((mt.rank + 1) % p) * N, f, N, NULL, 1,
                     1, __LINE__);
    }
  }
  free(counts);
  free(region);
}

/* ---- the knobs on comms of their own ------------------------------------------------- */

static void set_or_unset(const char *name, const char *value)
{
  if (value != NULL)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

static void test_knob_comms(rs_bufs_t *rb, ag_bufs_t *ab)
{
  rondo_algo_t rs_list[RONDO_ALGO_COUNT], ag_list[RONDO_ALGO_COUNT];
  size_t nrs = 0, nag = 0;
  for (size_t vi = 0; vi < n_rs_vars; vi++)
    if (!rs_vars[vi].plain && rs_vars[vi].algo != RONDO_ALGO_AUTO)
      rs_list[nrs++] = rs_vars[vi].algo;
  for (size_t vi = 0; vi < n_ag_vars; vi++)
    if (!ag_vars[vi].plain && ag_vars[vi].algo != RONDO_ALGO_AUTO)
      ag_list[nag++] = ag_vars[vi].algo;
  size_t n = nrs > nag ? nrs : nag;
  const char *old_rs = getenv("RONDO_REDUCE_SCATTER_ALGO"),
             *old_ag = getenv("RONDO_ALLGATHER_ALGO");
  char *keep_rs = old_rs ? strdup(old_rs) : NULL, *keep_ag = old_ag ? strdup(old_ag) : NULL;
  for (size_t k = 0; k < n; k++) {
    rondo_algo_t rs = nrs ? rs_list[k % nrs] : RONDO_ALGO_AUTO;
    rondo_algo_t ag = nag ? ag_list[k % nag] : RONDO_ALGO_AUTO;
    char tag[64];
    snprintf(tag, sizeof tag, "[knobs: rs=%s ag=%s] ", algo_names[rs], algo_names[ag]);
    mt_where("%srondo_comm_create", tag);
    set_or_unset("RONDO_REDUCE_SCATTER_ALGO", algo_names[rs]);
    set_or_unset("RONDO_ALLGATHER_ALGO", algo_names[ag]);
    rondo_comm_t c = NULL;
    rondo_status_t st = rondo_comm_create(MPI_COMM_WORLD, &c);
    set_or_unset("RONDO_REDUCE_SCATTER_ALGO", keep_rs);
    set_or_unset("RONDO_ALLGATHER_ALGO", keep_ag);
    if (!MT_EQ_STATUS(st, RONDO_SUCCESS))
      continue;
    test_choice(c, tag, rs, ag);
    variant_t vrs = {"rondo_reduce_scatter", 1, RONDO_ALGO_AUTO, rs};
    variant_t vauto = {"auto", 0, RONDO_ALGO_AUTO, rs};
    for (int op = 0; op < MT_OPS; op++) {
      rondo_dtype_t dt = (rondo_dtype_t)((op + (int)k) % RONDO_DTYPE_COUNT);
      size_t rc = op == 0 ? PRIME : (size_t)p + 1;
      rs_prepare(dt, (rondo_op_t)op, rc, rb);
      rs_case(c, tag, op % 2 ? &vauto : &vrs, dt, (rondo_op_t)op, rc,
              (int)((k + (size_t)op) % NFORMS), rb);
    }
    rs_prepare(RONDO_FLOAT32, RONDO_SUM, big_block(), rb);
    rs_case(c, tag, &vrs, RONDO_FLOAT32, RONDO_SUM, big_block(), (int)(k % NFORMS), rb);
    test_reduce_scatterv(c, tag, (int)k, rb);
    variant_t vag = {"rondo_allgather", 1, RONDO_ALGO_AUTO, ag};
    size_t agc[] = {(size_t)p + 1, PRIME, big_block()};
    for (size_t ci = 0; ci < 3; ci++) {
      rondo_dtype_t dt = (rondo_dtype_t)((k + ci * 4) % RONDO_DTYPE_COUNT);
      ag_prepare(dt, agc[ci], ab);
      ag_case(c, tag, &vag, dt, agc[ci], (int)((k + ci) % 2), ab);
    }
    test_allgatherv(c, tag, (int)k);
    mt_where("%srondo_comm_destroy", tag);
    MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
  }
  free(keep_rs);
  free(keep_ag);
}

static void print_refusals(void)
{
  if (mt.rank != 0)
    return;
  for (int c = 0; c < RONDO_COLL_COUNT; c++)
    for (int a = 0; a < RONDO_ALGO_COUNT; a++)
      if (refused[c][a].n)
        printf("test_families: note: %s %s refused %ld call(s) that it was asked to run, "
               "first [%s]: %s\n",
               coll_names[c], algo_names[a], refused[c][a].n, refused[c][a].first,
               refused[c][a].why);
  fflush(stdout);
}

int main(int argc, char **argv)
{
  rondo_comm_t comm;
  int start = mt_exact_start(&argc, &argv, "test_families", &comm);
  if (start != -1)
    return start;
  p = mt.size;
  nodes = MT_QUERY(rondo_comm_node_count, comm);
  world_forced[RONDO_COLL_REDUCE_SCATTER] = knob_algo("RONDO_REDUCE_SCATTER_ALGO");
  world_forced[RONDO_COLL_ALLGATHER] = knob_algo("RONDO_ALLGATHER_ALGO");

  test_names();
  test_membership(comm);
  if (mt.rank == 0) {
    printf("test_families: %d node(s); reduce-scatter variants:", nodes);
    for (size_t i = 0; i < n_rs_vars; i++)
      printf(" %s", rs_vars[i].name);
    printf("; all-gather variants:");
    for (size_t i = 0; i < n_ag_vars; i++)
      printf(" %s", ag_vars[i].name);
    printf("%s\n", mt.full ? "" : " (trimmed matrix: MPITEST_FULL=1 runs all)");
    fflush(stdout);
  }
  test_choice(comm, "", world_forced[RONDO_COLL_REDUCE_SCATTER],
              world_forced[RONDO_COLL_ALLGATHER]);

  size_t cap = big_block() * (size_t)p, v = rsv_capacity();
  if (v > cap)
    cap = v;
  if (PRIME * (size_t)p > cap)
    cap = PRIME * (size_t)p;
  size_t cap_bytes = (cap + MT_GUARD) * 8;
  rs_bufs_t rb = {mt_alloc(cap_bytes), mt_alloc(cap_bytes), mt_alloc(cap_bytes),
                  mt_alloc(cap_bytes)};
  ag_bufs_t ab = {mt_alloc(cap_bytes), mt_alloc(cap_bytes), mt_alloc(cap_bytes)};

  test_reduce_scatter(comm, &rb);
  test_avg_like_allreduce(comm, &rb);
  test_reduce_scatterv(comm, "", -1, &rb);
  test_allgather(comm, &ab);
  test_allgatherv(comm, "", -1);

  mbytes = (size_t)p * 16 * 8 + 64;
  msend = mt_alloc(mbytes);
  mrecv = mt_alloc(mbytes);
  test_mismatch(comm);
  test_overlap(comm);
  free(msend);
  free(mrecv);

  test_knob_comms(&rb, &ab);

  print_refusals();
  free(rb.input);
  free(rb.want);
  free(rb.buf);
  free(rb.recv);
  free(ab.want);
  free(ab.send);
  free(ab.recv);
  int rc = mt_finish();
  rondo_finalize();
  return rc;
}
