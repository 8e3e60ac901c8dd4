/*
 * test_allreduce - rondo_allreduce / rondo_allreduce_algo against exact,
 * independently computed results.
 *
 * Matrix: algorithm (auto, mpi, ring, recursive_doubling, rabenseifner, shm,
 * hierarchical, and plain rondo_allreduce) x dtype (8) x op (5) x count {0, 1, 2, p-1, p, p+1,
 * 1048573} x in place / out of place. Each call checks the status, every
 * result element, that the bytes past the end of the output (and, out of
 * place, the whole sendbuf) are untouched, and that every rank ended with the
 * same bytes (hashes compared across ranks). Count 0 is also run with NULL
 * buffers.
 *
 * At 3 or more ranks the machine is oversubscribed and each message costs
 * milliseconds, so a few parts of the matrix are trimmed (see selected(),
 * printed at the start); MPITEST_FULL=1 runs everything.
 *
 * MPITEST_ALGOS=name,name,... runs only those variants (the virtual-node runs
 * use it to focus on the algorithms that see nodes). shm runs only on a comm
 * within one node; elsewhere it must fail with RONDO_ERR_UNSUPPORTED.
 */
#include "mpitest.h"

#define BIG_COUNT ((size_t)1048573) /* a prime near 2^20: no even split */

typedef struct {
  const char *name;
  int plain; /* rondo_allreduce() instead of rondo_allreduce_algo() */
  rondo_algo_t algo;
} variant_t;

static const variant_t variants[] = {
    {"auto", 0, RONDO_ALGO_AUTO},
    {"mpi", 0, RONDO_ALGO_MPI},
    {"ring", 0, RONDO_ALGO_RING},
    {"recursive_doubling", 0, RONDO_ALGO_RECURSIVE_DOUBLING},
    {"rabenseifner", 0, RONDO_ALGO_RABENSEIFNER},
    {"rondo_allreduce", 1, RONDO_ALGO_AUTO},
    {"shm", 0, RONDO_ALGO_SHM},
    {"hierarchical", 0, RONDO_ALGO_HIERARCHICAL},
};
#define NVARIANTS            (sizeof variants / sizeof variants[0])
#define VARIANT_RABENSEIFNER 4

typedef struct {
  unsigned char *input; /* this rank's input */
  unsigned char *want;  /* the exact result */
  unsigned char *send;
  unsigned char *recv;
} bufs_t;

static rondo_status_t call(rondo_comm_t comm, const variant_t *v, const void *send, void *recv,
                           size_t count, rondo_dtype_t dt, rondo_op_t op)
{
  if (v->plain)
    return rondo_allreduce(comm, send, recv, count, dt, op);
  return rondo_allreduce_algo(comm, send, recv, count, dt, op, v->algo);
}

/* At 3 or more ranks (oversubscribed: milliseconds per message) every
 * algorithm still runs every dtype x op x small count x in/out; trimmed are
 * the big count (once per (variant, dtype): the op rotates with variant +
 * dtype, so every variant meets every op across the dtypes, and in place
 * alternates), plain rondo_allreduce (the same selection as
 * rondo_allreduce_algo(AUTO): one op per (dtype, count), rotating) and the
 * NULL-buffer repeat of count 0 (one op per (variant, dtype)). */
static int big_selected(size_t vi, rondo_dtype_t dt, rondo_op_t op, int inplace)
{
  size_t k = vi + (size_t)dt;
  return (size_t)op == k % MT_OPS && (size_t)inplace == k % 2;
}

static int nodes; /* of the world comm */
static int available[RONDO_ALGO_COUNT]; /* rondo_algo_available() on the world comm */

/* MPITEST_ALGOS, and what the comm can run. */
static int variant_enabled(size_t vi)
{
  const char *list = getenv("MPITEST_ALGOS");
  if (variants[vi].algo != RONDO_ALGO_AUTO && !available[variants[vi].algo])
    return 0;
  if (list == NULL || *list == '\0')
    return 1;
  size_t n = strlen(variants[vi].name);
  for (const char *p = list; (p = strstr(p, variants[vi].name)) != NULL; p += n)
    if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
      return 1;
  return 0;
}

static int selected(size_t vi, rondo_dtype_t dt, rondo_op_t op, size_t count, int inplace)
{
  if (!variant_enabled(vi))
    return 0;
  if (mt.full)
    return 1;
  if (count == BIG_COUNT)
    return big_selected(vi, dt, op, inplace);
  if (variants[vi].plain)
    return (size_t)op == ((size_t)dt + count) % MT_OPS;
  return 1;
}

static int null_selected(size_t vi, rondo_dtype_t dt, rondo_op_t op)
{
  return mt.full || (size_t)op == (vi + (size_t)dt) % MT_OPS;
}

/* One call on buffers prepared from b->input; checks and records the hash. */
static void run_case(rondo_comm_t comm, const char *tag, const variant_t *v, rondo_dtype_t dt,
                     rondo_op_t op, size_t count, int inplace, const bufs_t *b)
{
  size_t es = mt_dtype_size(dt), n = count * es, guard = MT_GUARD * es;
  mt_where("%s%s dtype=%s op=%s count=%zu %s", tag, v->name, mt_dtype_str(dt), mt_op_str(op), count,
           inplace ? "in-place" : "out-of-place");
  memcpy(inplace ? b->recv : b->send, b->input, n);
  memset((inplace ? b->recv : b->send) + n, MT_POISON, guard);
  if (!inplace)
    memset(b->recv, MT_POISON, n + guard);

  rondo_status_t st = call(comm, v, inplace ? b->recv : b->send, b->recv, count, dt, op);
  if (MT_EQ_STATUS(st, RONDO_SUCCESS)) {
    mt_check_elems("result", dt, b->recv, b->want, count);
    mt_check_poison("bytes past the end of recvbuf", b->recv + n, guard);
    if (!inplace) {
      mt_check_elems("sendbuf after the call", dt, b->send, b->input, count);
      mt_check_poison("bytes past the end of sendbuf", b->send + n, guard);
    }
  }
  mt_hash_record(b->recv, n);

  if (count == 0 && null_selected((size_t)(v - variants), dt, op)) {
    /* NULL buffers are allowed with count 0 */
    mt_where("%s%s dtype=%s op=%s count=0 NULL %s", tag, v->name, mt_dtype_str(dt), mt_op_str(op),
             inplace ? "sendbuf and recvbuf" : "sendbuf");
    memset(b->recv, MT_POISON, guard);
    st = call(comm, v, NULL, inplace ? NULL : b->recv, 0, dt, op);
    MT_EQ_STATUS(st, RONDO_SUCCESS);
    if (!inplace)
      mt_check_poison("recvbuf with count 0", b->recv, guard);
  }
}

/* Runs the selected (variant, in place) cases of one (dtype, op, count). */
static void run_block(rondo_comm_t comm, rondo_dtype_t dt, rondo_op_t op, size_t count,
                      const bufs_t *b)
{
  int any = 0;
  for (size_t vi = 0; vi < NVARIANTS; vi++)
    for (int ip = 0; ip < 2; ip++)
      any |= selected(vi, dt, op, count, ip);
  if (!any)
    return;
  mt.salt = count;
  mt_fill_input(dt, op, 0, count, b->input);
  mt_fill_reduced(dt, op, 0, count, b->want);
  for (size_t vi = 0; vi < NVARIANTS; vi++)
    for (int ip = 0; ip < 2; ip++)
      if (selected(vi, dt, op, count, ip))
        run_case(comm, "", &variants[vi], dt, op, count, ip, b);
}

static void print_big_plan(void)
{
  if (mt.full || mt.rank != 0)
    return;
  printf("test_allreduce: %d ranks are oversubscribed here (MPITEST_FULL=1 runs all): plain\n"
         "rondo_allreduce runs one op per (dtype, count) at the small counts, count 0 with\n"
         "NULL buffers one op per (algorithm, dtype), and count %zu only for\n"
         "(algorithm: dtype/op/in|out):\n",
         mt.size, BIG_COUNT);
  for (size_t vi = 0; vi < NVARIANTS; vi++) {
    if (!variant_enabled(vi))
      continue;
    printf("  %s:", variants[vi].name);
    for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++)
      for (int op = 0; op < MT_OPS; op++)
        for (int ip = 0; ip < 2; ip++)
          if (big_selected(vi, (rondo_dtype_t)dt, (rondo_op_t)op, ip))
            printf(" %s/%s/%s", mt_dtype_str((rondo_dtype_t)dt), mt_op_str((rondo_op_t)op),
                   ip ? "in" : "out");
    printf("\n");
  }
  fflush(stdout);
}

/* Below the largest power of two <= size elements Rabenseifner's blocks are
 * of one element or none: its first halving steps gather the data on fewer
 * ranks and its last doubling steps spread it again. Still right, on every
 * dtype's kind of op. */
static void test_rabenseifner_below_pof2(rondo_comm_t comm, const bufs_t *b)
{
  int pof2 = 1;
  while (pof2 * 2 <= mt.size)
    pof2 *= 2;
  if (pof2 == 1)
    return; /* only count 0 is below 1: covered by the matrix */
  static const struct {
    rondo_dtype_t dt;
    rondo_op_t op;
  } cases[] = {{RONDO_FLOAT32, RONDO_SUM},
               {RONDO_INT8, RONDO_PROD},
               {RONDO_FLOAT16, RONDO_AVG},
               {RONDO_INT64, RONDO_MAX}};
  size_t counts[2] = {1, (size_t)pof2 - 1};
  for (size_t c = 0; c < (counts[1] == 1 ? 1u : 2u); c++)
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      mt.salt = 1000 + c;
      mt_fill_input(cases[k].dt, cases[k].op, 0, counts[c], b->input);
      mt_fill_reduced(cases[k].dt, cases[k].op, 0, counts[c], b->want);
      run_case(comm, "below pof2 elements ", &variants[VARIANT_RABENSEIFNER], cases[k].dt,
               cases[k].op, counts[c], (int)(k % 2), b);
    }
}

int main(int argc, char **argv)
{
  rondo_comm_t comm;
  int start = mt_exact_start(&argc, &argv, "test_allreduce", &comm);
  if (start != -1)
    return start;

  nodes = MT_QUERY(rondo_comm_node_count, comm);
  if (mt.rank == 0)
    printf("test_allreduce: %d node(s), this node has %d rank(s)%s%s\n", nodes,
           MT_QUERY(rondo_comm_local_size, comm), getenv("MPITEST_ALGOS") ? ", MPITEST_ALGOS=" : "",
           getenv("MPITEST_ALGOS") ? getenv("MPITEST_ALGOS") : "");
  /* What the comm can run, against the rules written out here: every host
   * algorithm, but shm only on one node; the device algorithms (nccl,
   * staged) never on these host buffers; adasum only op adasum
   * (test_adasum.c); the ids after adasum are reduce-scatter's and
   * all-gather's (test_families.c), no all-reduce's. An algorithm that
   * cannot run fails the call on every rank, saying why. */
  for (int a = RONDO_ALGO_AUTO + 1; a < RONDO_ALGO_COUNT; a++) {
    int device = a == RONDO_ALGO_NCCL || a == RONDO_ALGO_STAGED ||
                 a == RONDO_ALGO_HIERARCHICAL_NCCL;
    int other = a > RONDO_ALGO_ADASUM;
    int want = !device && !other && a != RONDO_ALGO_ADASUM && (a != RONDO_ALGO_SHM || nodes == 1);
    const char *why = NULL;
    mt_where("rondo_algo_available(%s) on %d node(s)", mt_algo_str((rondo_algo_t)a), nodes);
    rondo_status_t st = rondo_algo_available(comm, (rondo_algo_t)a, 1000, RONDO_FLOAT32,
                                             RONDO_SUM, &why);
    available[a] = st == RONDO_SUCCESS;
    MT_EQ_STATUS(st, want ? RONDO_SUCCESS : RONDO_ERR_UNSUPPORTED);
    if (other)
      MT_EQ_STR(why, "it is not an all-reduce algorithm");
    if (!want) {
      float x = 1, y = -1;
      MT_CHECK(why != NULL && why[0] != '\0', "a reason for %s", mt_algo_str((rondo_algo_t)a));
      MT_EQ_STATUS(rondo_allreduce_algo(comm, &x, &y, 1, RONDO_FLOAT32, RONDO_SUM,
                                        (rondo_algo_t)a),
                   RONDO_ERR_UNSUPPORTED);
      MT_CHECK(y == -1, "%s wrote recvbuf although it cannot run", mt_algo_str((rondo_algo_t)a));
    }
  }

  /* MPITEST_EXTRA_COUNTS=n,n,...: more counts (the multi-node runs add the
   * edges of the argument check's inline data, AGREE_INLINE_BYTES). */
  size_t p = (size_t)mt.size, counts[15], ncounts = 0;
  size_t wanted[15] = {0, 1, 2, p - 1, p, p + 1, BIG_COUNT}, nwanted = 7;
  const char *extra = getenv("MPITEST_EXTRA_COUNTS");
  for (char *end; extra != NULL && *extra != '\0' && nwanted < 15; extra = end + (*end == ',')) {
    unsigned long long v = strtoull(extra, &end, 10);
    if (end == extra || v > BIG_COUNT) {
      fprintf(stderr, "MPITEST_EXTRA_COUNTS: expected counts up to %zu, separated by commas\n",
              BIG_COUNT);
      return 99;
    }
    wanted[nwanted++] = (size_t)v;
  }
  for (size_t i = 0; i < nwanted; i++) { /* dedupe: p-1 may equal 0, 1 or 2 */
    int dup = 0;
    for (size_t j = 0; j < ncounts; j++)
      dup |= counts[j] == wanted[i];
    if (!dup)
      counts[ncounts++] = wanted[i];
  }

  /* What rondo_explain must say, on every rank, of the big float32 count
   * across the nodes: MPITEST_RING=whole or pipelined, how the ring crosses
   * (algo_ring_chunk); MPITEST_HIER_STRIPES=k, that hierarchical pipelines
   * it in k stripes (algo_hier_stripes); MPITEST_RAB_RADIX=k, that
   * Rabenseifner's doubling of one element goes in radix k
   * (algo_rab_radix). */
  const char *ring = getenv("MPITEST_RING"), *stripes = getenv("MPITEST_HIER_STRIPES");
  const char *radix = getenv("MPITEST_RAB_RADIX");
  if (radix != NULL) {
    char text[4096] = "", want[64];
    mt_where("rondo_explain names the radix of Rabenseifner's doubling");
    if (MT_EQ_STATUS(rondo_explain(comm, 1, RONDO_FLOAT32, RONDO_SUM, text, sizeof text, NULL),
                     RONDO_SUCCESS)) {
      snprintf(want, sizeof want, "doubling in radix %s (", radix);
      MT_CHECK(strstr(text, want) != NULL, "'%s' in: %s", want, text);
    }
  }
  if (ring != NULL || stripes != NULL) {
    char text[4096] = "", want[64];
    mt_where("rondo_explain names the ring's chunking and the hierarchical stripes");
    if (MT_EQ_STATUS(rondo_explain(comm, BIG_COUNT, RONDO_FLOAT32, RONDO_SUM, text, sizeof text,
                                   NULL),
                     RONDO_SUCCESS)) {
      if (ring != NULL) {
        snprintf(want, sizeof want, "ring across nodes: %s",
                 strcmp(ring, "whole") == 0 ? "each segment whole" : "pipelined");
        MT_CHECK(strstr(text, want) != NULL, "'%s' in: %s", want, text);
      }
      if (stripes != NULL) {
        snprintf(want, sizeof want, "pipelined in %s stripes", stripes);
        MT_CHECK(strstr(text, want) != NULL, "'%s' in: %s", want, text);
      }
    }
  }

  size_t cap = (BIG_COUNT + MT_GUARD) * 8;
  bufs_t b = {mt_alloc(cap), mt_alloc(cap), mt_alloc(cap), mt_alloc(cap)};
  print_big_plan();

  for (int dt = 0; dt < RONDO_DTYPE_COUNT; dt++) {
    for (int op = 0; op < MT_OPS; op++)
      for (size_t c = 0; c < ncounts; c++)
        run_block(comm, (rondo_dtype_t)dt, (rondo_op_t)op, counts[c], &b);
    mt_hash_flush();
  }
  if (variant_enabled(VARIANT_RABENSEIFNER))
    test_rabenseifner_below_pof2(comm, &b);

  free(b.input);
  free(b.want);
  free(b.send);
  free(b.recv);
  int rc = mt_finish();
  rondo_finalize();
  return rc;
}
