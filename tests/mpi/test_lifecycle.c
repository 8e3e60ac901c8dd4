/*
 * test_lifecycle - calls before rondo_init(), init, queries, comms made with
 * rondo_comm_create() (on MPI_COMM_WORLD, on an even/odd split, on
 * MPI_COMM_SELF), version and name tables, and every call after
 * rondo_finalize().
 *
 * The program initializes MPI itself (MPI_THREAD_MULTIPLE, as an application
 * embedding rondo would), so rondo_finalize() must leave MPI running and the
 * failure counts can still be summed afterwards.
 */
#include "mpitest.h"

/* What the calls before MPI_Init returned; checked once the harness runs. */
typedef struct {
  rondo_comm_t world;
  rondo_status_t allreduce, barrier;
  int last_error_set;
} pre_init_t;

static pre_init_t calls_before_rondo_init(void)
{
  pre_init_t r;
  int32_t x = 1, y = 0;
  r.world = rondo_world();
  r.allreduce = rondo_allreduce(NULL, &x, &y, 1, RONDO_INT32, RONDO_SUM);
  r.barrier = rondo_barrier(NULL);
  const char *err = rondo_last_error();
  r.last_error_set = err != NULL && err[0] != '\0';
  return r;
}

static void check_pre_init(const pre_init_t *r)
{
  MT_CHECK(r->world == NULL, "rondo_world() before rondo_init");
  MT_EQ_STATUS(r->allreduce, RONDO_ERR_NOT_INITIALIZED);
  MT_EQ_STATUS(r->barrier, RONDO_ERR_NOT_INITIALIZED);
  MT_CHECK(r->last_error_set, "rondo_last_error() non-empty after a failed call");
}

/* SUM and MIN of world rank + 1 over comm, whose members are the world ranks
 * listed in members[0..n). */
static void check_allreduce_on(rondo_comm_t comm, const int *members, int n)
{
  int64_t in[2] = {mt.rank + 1, mt.rank + 1}, sum = 0, min = INT64_MAX;
  for (int i = 0; i < n; i++) {
    sum += members[i] + 1;
    min = members[i] + 1 < min ? members[i] + 1 : min;
  }
  int64_t out[2] = {-1, -1};
  if (MT_EQ_STATUS(rondo_allreduce(comm, &in[0], &out[0], 1, RONDO_INT64, RONDO_SUM),
                   RONDO_SUCCESS))
    MT_EQ_INT(out[0], sum);
  if (MT_EQ_STATUS(rondo_allreduce(comm, &in[1], &out[1], 1, RONDO_INT64, RONDO_MIN),
                   RONDO_SUCCESS))
    MT_EQ_INT(out[1], min);
}

/* The rondo comm mirrors mpi_comm: same rank and size, a duplicate of it. */
static void check_comm_matches(rondo_comm_t c, MPI_Comm mpi_comm)
{
  int r, p, cmp = MPI_UNEQUAL;
  MPI_Comm_rank(mpi_comm, &r);
  MPI_Comm_size(mpi_comm, &p);
  MT_EQ_INT(MT_QUERY(rondo_comm_rank, c), r);
  MT_EQ_INT(MT_QUERY(rondo_comm_size, c), p);
  MPI_Comm dup = MPI_COMM_NULL;
  MT_EQ_STATUS(rondo_comm_mpi(c, &dup), RONDO_SUCCESS);
  MT_CHECK(dup != MPI_COMM_NULL, "rondo_comm_mpi() of a live comm");
  if (dup != MPI_COMM_NULL)
    MPI_Comm_compare(dup, mpi_comm, &cmp);
  MT_CHECK(cmp == MPI_CONGRUENT,
           "rondo's MPI comm is a duplicate (congruent, not identical): "
           "MPI_Comm_compare gave %d",
           cmp);
}

/* node_id against the other queries, real or virtual nodes: the ranks with
 * one id are local ranks 0, 1, ... in rank order, as many as local_size, and
 * the ids are numbered in the order of each node's lowest rank. */
static void check_node_id(rondo_comm_t w, int lr, int ls, int nodes)
{
  int id = MT_QUERY(rondo_comm_node_id, w), mine[3] = {id, lr, ls};
  int *all = mt_alloc(3 * (size_t)mt.size * sizeof *all);
  MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD);
  int next_new = 0;
  for (int r = 0; r < mt.size; r++) {
    int rid = all[3 * r], seen = 0;
    for (int q = 0; q < r; q++)
      seen += all[3 * q] == rid;
    if (seen == 0)
      MT_EQ_INT(rid, next_new++);
    MT_EQ_INT(all[3 * r + 1], seen);
  }
  MT_EQ_INT(next_new, nodes);
  int members = 0;
  for (int r = 0; r < mt.size; r++)
    members += all[3 * r] == id;
  MT_EQ_INT(members, ls);
  free(all);
}

/* rank/size/local_rank/local_size/node_count against MPI's own view. */
static void check_queries(rondo_comm_t w)
{
  mt_where("queries on rondo_world()");
  check_comm_matches(w, MPI_COMM_WORLD);
  int lr = MT_QUERY(rondo_comm_local_rank, w), ls = MT_QUERY(rondo_comm_local_size, w);
  int nodes = MT_QUERY(rondo_comm_node_count, w);
  MT_CHECK(ls >= 1 && ls <= mt.size, "1 <= local_size (%d) <= size (%d)", ls, mt.size);
  MT_CHECK(lr >= 0 && lr < ls, "0 <= local_rank (%d) < local_size (%d)", lr, ls);
  MT_CHECK(nodes >= 1 && nodes <= mt.size, "1 <= node_count (%d) <= size (%d)", nodes, mt.size);
  check_node_id(w, lr, ls, nodes);
  const char *virt = getenv("RONDO_NODE_SIZE");
  if (virt && *virt)
    return; /* virtual nodes: only the sanity checks above */
  MPI_Comm node;
  int node_rank, node_size, leader, node_total;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, mt.rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  leader = node_rank == 0;
  MPI_Allreduce(&leader, &node_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MT_EQ_INT(lr, node_rank);
  MT_EQ_INT(ls, node_size);
  MT_EQ_INT(nodes, node_total);
}

static void check_comm_create(void)
{
  int *members = mt_alloc((size_t)mt.size * sizeof *members), n = 0;

  mt_where("rondo_comm_create(MPI_COMM_WORLD)");
  rondo_comm_t c = NULL;
  if (MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS) &&
      MT_CHECK(c != NULL, "*comm set")) {
    MT_CHECK(c != rondo_world(), "a new comm, not the world comm");
    check_comm_matches(c, MPI_COMM_WORLD);
    for (n = 0; n < mt.size; n++)
      members[n] = n;
    check_allreduce_on(c, members, n);
    MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
    MT_CHECK(c == NULL, "rondo_comm_destroy sets *comm to NULL");
  }

  mt_where("rondo_comm_create on the %s ranks (MPI_Comm_split)", mt.rank % 2 ? "odd" : "even");
  MPI_Comm split;
  MPI_Comm_split(MPI_COMM_WORLD, mt.rank % 2, mt.rank, &split);
  if (MT_EQ_STATUS(rondo_comm_create(split, &c), RONDO_SUCCESS) &&
      MT_CHECK(c != NULL, "*comm set")) {
    check_comm_matches(c, split);
    n = 0;
    for (int r = mt.rank % 2; r < mt.size; r += 2)
      members[n++] = r;
    check_allreduce_on(c, members, n);
    MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
    MT_CHECK(c == NULL, "rondo_comm_destroy sets *comm to NULL");
  }
  MPI_Comm_free(&split);

  /* rondo_comm_split: color = rank % 3, reversed order by key; rank 0
   * passes a negative color and gets no comm. */
  mt_where("rondo_comm_split(world, rank %% 3, -rank)");
  int color = mt.rank == 0 ? -1 : mt.rank % 3;
  c = (rondo_comm_t)members;
  if (MT_EQ_STATUS(rondo_comm_split(rondo_world(), color, -mt.rank, &c), RONDO_SUCCESS)) {
    if (color < 0) {
      MT_CHECK(c == NULL, "a negative color gives no comm");
    } else if (MT_CHECK(c != NULL, "*newcomm set")) {
      n = 0;
      for (int r = mt.size - 1; r >= 1; r--) /* key -rank: highest rank first */
        if (r % 3 == color)
          members[n++] = r;
      int rank = -1, size = -1;
      rondo_comm_rank(c, &rank);
      rondo_comm_size(c, &size);
      MT_EQ_INT(size, n);
      MT_CHECK(rank >= 0 && rank < n && members[rank] == mt.rank,
               "rank %d in the split comm is world rank %d", rank, mt.rank);
      check_allreduce_on(c, members, n);
      MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
    }
  }
  /* A NULL pointer on rank 0 only: rank 0 fails with INVALID_ARG, the
   * others with PEER, and nobody waits. */
  c = NULL;
  rondo_status_t split_st = rondo_comm_split(rondo_world(), 0, 0, mt.rank == 0 ? NULL : &c);
  MT_EQ_STATUS(split_st, mt.rank == 0 ? RONDO_ERR_INVALID_ARG : RONDO_ERR_PEER);
  MT_CHECK(c == NULL, "no comm after a failed split");

  mt_where("rondo_comm_create(MPI_COMM_SELF)");
  if (MT_EQ_STATUS(rondo_comm_create(MPI_COMM_SELF, &c), RONDO_SUCCESS) &&
      MT_CHECK(c != NULL, "*comm set")) {
    check_comm_matches(c, MPI_COMM_SELF);
    members[0] = mt.rank;
    check_allreduce_on(c, members, 1);
    MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
  }

  mt_where("rondo_comm_create(MPI_COMM_NULL)");
  c = (rondo_comm_t)members; /* any non-NULL value: must be reset to NULL */
  rondo_status_t st = rondo_comm_create(MPI_COMM_NULL, &c);
  MT_CHECK(st != RONDO_SUCCESS, "rondo_comm_create(MPI_COMM_NULL) fails");
  MT_CHECK(c == NULL, "*comm is NULL after a failed rondo_comm_create");
  free(members);
}

static void check_version(void)
{
  mt_where("version");
  int major = -1, minor = -1, patch = -1;
  rondo_version(&major, &minor, &patch);
  MT_EQ_INT(major, RONDO_VERSION_MAJOR);
  MT_EQ_INT(minor, RONDO_VERSION_MINOR);
  MT_EQ_INT(patch, RONDO_VERSION_PATCH);
  MT_EQ_INT(RONDO_VERSION, major * 10000 + minor * 100 + patch);
  rondo_version(NULL, NULL, NULL); /* any pointer may be NULL */
  rondo_version(&major, NULL, NULL);
  MT_EQ_INT(major, RONDO_VERSION_MAJOR);
  char s[64];
  snprintf(s, sizeof s, "%d.%d.%d", RONDO_VERSION_MAJOR, RONDO_VERSION_MINOR, RONDO_VERSION_PATCH);
  MT_EQ_STR(RONDO_VERSION_STRING, s);
  MT_EQ_STR(rondo_version_string(), RONDO_VERSION_STRING);
  int cuda = rondo_cuda_built(), nccl = rondo_nccl_built();
  MT_CHECK(cuda == 0 || cuda == 1, "rondo_cuda_built() = %d", cuda);
  MT_CHECK(nccl == 0 || nccl == 1, "rondo_nccl_built() = %d", nccl);
}

/* name(value) is the documented string, from_name(name) gives value back,
 * and invalid values / names are rejected. */
static void check_names(void)
{
  mt_where("algorithm names");
  for (int a = 0; a < RONDO_ALGO_COUNT; a++) {
    MT_EQ_STR(rondo_algo_name((rondo_algo_t)a), mt_algo_str((rondo_algo_t)a));
    rondo_algo_t back = (rondo_algo_t)99;
    MT_EQ_STATUS(rondo_algo_from_name(mt_algo_str((rondo_algo_t)a), &back), RONDO_SUCCESS);
    MT_EQ_INT(back, a);
  }
  rondo_algo_t algo;
  MT_CHECK(rondo_algo_from_name("bogus", &algo) != RONDO_SUCCESS, "\"bogus\" rejected");
  MT_CHECK(rondo_algo_from_name("", &algo) != RONDO_SUCCESS, "\"\" rejected");
  MT_CHECK(rondo_algo_from_name(NULL, &algo) != RONDO_SUCCESS, "NULL rejected");
  MT_CHECK(rondo_algo_name(RONDO_ALGO_COUNT) == NULL, "rondo_algo_name(RONDO_ALGO_COUNT)");
  MT_CHECK(rondo_algo_name((rondo_algo_t)99) == NULL, "rondo_algo_name(99)");

  mt_where("collective names");
  static const char *const colls[RONDO_COLL_COUNT] = {"allreduce", "reduce_scatter",
                                                      "allgather"};
  for (int c = 0; c < RONDO_COLL_COUNT; c++)
    MT_EQ_STR(rondo_coll_name((rondo_coll_t)c), colls[c]);
  MT_CHECK(rondo_coll_name(RONDO_COLL_COUNT) == NULL, "rondo_coll_name(RONDO_COLL_COUNT)");
  MT_CHECK(rondo_coll_name((rondo_coll_t)-1) == NULL, "rondo_coll_name(-1)");

  mt_where("dtype names and sizes");
  for (int d = 0; d < RONDO_DTYPE_COUNT; d++) {
    MT_EQ_STR(rondo_dtype_name((rondo_dtype_t)d), mt_dtype_str((rondo_dtype_t)d));
    MT_EQ_INT(rondo_dtype_size((rondo_dtype_t)d), mt_dtype_size((rondo_dtype_t)d));
    rondo_dtype_t back = (rondo_dtype_t)99;
    MT_EQ_STATUS(rondo_dtype_from_name(mt_dtype_str((rondo_dtype_t)d), &back), RONDO_SUCCESS);
    MT_EQ_INT(back, d);
  }
  rondo_dtype_t dtype;
  MT_CHECK(rondo_dtype_from_name("bogus", &dtype) != RONDO_SUCCESS, "\"bogus\" rejected");
  MT_CHECK(rondo_dtype_from_name(NULL, &dtype) != RONDO_SUCCESS, "NULL rejected");
  MT_CHECK(rondo_dtype_name(RONDO_DTYPE_COUNT) == NULL, "rondo_dtype_name(RONDO_DTYPE_COUNT)");
  MT_CHECK(rondo_dtype_name((rondo_dtype_t)99) == NULL, "rondo_dtype_name(99)");
  MT_EQ_INT(rondo_dtype_size(RONDO_DTYPE_COUNT), 0);
  MT_EQ_INT(rondo_dtype_size((rondo_dtype_t)99), 0);

  mt_where("op names");
  for (int o = 0; o < RONDO_OP_COUNT; o++) {
    MT_EQ_STR(rondo_op_name((rondo_op_t)o), mt_op_str((rondo_op_t)o));
    rondo_op_t back = (rondo_op_t)99;
    MT_EQ_STATUS(rondo_op_from_name(mt_op_str((rondo_op_t)o), &back), RONDO_SUCCESS);
    MT_EQ_INT(back, o);
  }
  rondo_op_t op;
  MT_CHECK(rondo_op_from_name("bogus", &op) != RONDO_SUCCESS, "\"bogus\" rejected");
  MT_CHECK(rondo_op_from_name(NULL, &op) != RONDO_SUCCESS, "NULL rejected");
  MT_CHECK(rondo_op_name(RONDO_OP_COUNT) == NULL, "rondo_op_name(RONDO_OP_COUNT)");
  MT_CHECK(rondo_op_name((rondo_op_t)99) == NULL, "rondo_op_name(99)");
}

/* Every call after rondo_finalize() fails with RONDO_ERR_FINALIZED. */
static void check_after_finalize(rondo_comm_t stale_world, rondo_comm_t alive)
{
  int32_t x = 1, y = 0;
  mt_where("after rondo_finalize");
  MT_EQ_STATUS(rondo_allreduce(stale_world, &x, &y, 1, RONDO_INT32, RONDO_SUM),
               RONDO_ERR_FINALIZED);
  MT_EQ_STATUS(
      rondo_allreduce_algo(stale_world, &x, &y, 1, RONDO_INT32, RONDO_SUM, RONDO_ALGO_RING),
      RONDO_ERR_FINALIZED);
  MT_EQ_STATUS(rondo_barrier(stale_world), RONDO_ERR_FINALIZED);
  MT_EQ_STATUS(rondo_broadcast(stale_world, &x, 1, RONDO_INT32, 0), RONDO_ERR_FINALIZED);
  MT_EQ_STATUS(rondo_allreduce(NULL, &x, &y, 1, RONDO_INT32, RONDO_SUM), RONDO_ERR_FINALIZED);
  MT_EQ_INT(y, 0);
  const char *err = rondo_last_error();
  MT_CHECK(err != NULL && err[0] != '\0', "rondo_last_error() after a failed call");

  mt_where("after rondo_finalize: a comm left alive (destroyed by rondo_finalize)");
  MT_EQ_STATUS(rondo_allreduce(alive, &x, &y, 1, RONDO_INT32, RONDO_SUM), RONDO_ERR_FINALIZED);
  MT_EQ_STATUS(rondo_comm_destroy(&alive), RONDO_ERR_FINALIZED);

  mt_where("after rondo_finalize: lifecycle calls");
  rondo_comm_t c = (rondo_comm_t)&x; /* any non-NULL value: must be reset to NULL */
  MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_ERR_FINALIZED);
  MT_CHECK(c == NULL, "*comm is NULL after a failed rondo_comm_create");
  MT_EQ_STATUS(rondo_init(NULL, NULL), RONDO_ERR_FINALIZED);
  MT_EQ_STATUS(rondo_finalize(), RONDO_ERR_FINALIZED);
  MT_QUERIES_REFUSED(stale_world, RONDO_ERR_FINALIZED);

  int finalized = 1;
  MPI_Finalized(&finalized);
  MT_CHECK(!finalized, "rondo_finalize left MPI (initialized by the application) running");
}

/* MPITEST_LIFECYCLE=mpi-first: the application finalizes MPI while rondo's
 * engine thread runs (an asynchronous request completed, the engine keeps
 * negotiating idle cycles), and calls rondo_finalize afterwards, or never.
 * rondo shuts itself down inside MPI_Finalize: no crash, and the later
 * rondo_finalize succeeds. The checks are summed before MPI_Finalize; what
 * happens after it shows in the exit status. */
static int mpi_first(int *argc, char ***argv)
{
  int provided;
  RONDO_LEAKCHECK_PAUSE(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  mt_start("test_lifecycle");
  mt_where("an asynchronous request, then MPI_Finalize before rondo_finalize");
  rondo_comm_t c = NULL;
  if (MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS)) {
    float x = 1;
    rondo_request_t r;
    if (MT_EQ_STATUS(rondo_allreduce_async(c, "before.finalize", &x, &x, 1, RONDO_FLOAT32,
                                           RONDO_SUM, NULL, &r),
                     RONDO_SUCCESS) &&
        MT_EQ_STATUS(rondo_wait(&r), RONDO_SUCCESS))
      MT_CHECK(x == (float)mt.size, "x = %g", x);
  }
  int rc = mt_finish();
  MPI_Finalize();
  rondo_status_t st = rondo_finalize();
  if (st != RONDO_SUCCESS) {
    fprintf(stderr, "rank %d: rondo_finalize after MPI_Finalize: %s\n", mt.rank,
            rondo_last_error());
    rc = 1;
  }
  int32_t one = 1;
  if (rondo_allreduce(c, &one, &one, 1, RONDO_INT32, RONDO_SUM) != RONDO_ERR_FINALIZED) {
    fprintf(stderr, "rank %d: a call after the shutdown is not RONDO_ERR_FINALIZED\n", mt.rank);
    rc = 1;
  }
  return rc;
}

/* MPITEST_LIFECYCLE=serialized: MPI below MPI_THREAD_MULTIPLE on every
 * rank. Blocking collectives work; an asynchronous request fails with
 * RONDO_ERR_UNSUPPORTED, which names the thread level; no engine can run,
 * so a comm's destruction and rondo_finalize skip the engines' rendezvous
 * and succeed. */
static int serialized(int *argc, char ***argv)
{
  int provided;
  RONDO_LEAKCHECK_PAUSE(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
  mt_start("test_lifecycle");
  mt_where("rondo_init under MPI_THREAD_SERIALIZED");
  if (!MT_EQ_STATUS(rondo_init(argc, argv), RONDO_SUCCESS)) {
    int rc = mt_finish();
    MPI_Finalize();
    return rc;
  }
  rondo_comm_t c = NULL;
  if (MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &c), RONDO_SUCCESS)) {
    mt_where("a blocking all-reduce");
    int32_t x = mt.rank + 1, y = 0;
    if (MT_EQ_STATUS(rondo_allreduce(c, &x, &y, 1, RONDO_INT32, RONDO_SUM), RONDO_SUCCESS))
      MT_EQ_INT(y, mt.size * (mt.size + 1) / 2);
    mt_where("an asynchronous all-reduce");
    float f = 1;
    rondo_request_t r = NULL;
    rondo_status_t st =
        rondo_allreduce_async(c, "needs.a.thread", &f, &f, 1, RONDO_FLOAT32, RONDO_SUM, NULL, &r);
    if (st == RONDO_SUCCESS)
      st = rondo_wait(&r);
    if (MT_EQ_STATUS(st, RONDO_ERR_UNSUPPORTED))
      MT_CHECK(strstr(rondo_last_error(), "MPI_THREAD_MULTIPLE") != NULL, "the message: %s",
               rondo_last_error());
    mt_where("rondo_comm_destroy");
    MT_EQ_STATUS(rondo_comm_destroy(&c), RONDO_SUCCESS);
  }
  mt_where("rondo_finalize");
  MT_EQ_STATUS(rondo_finalize(), RONDO_SUCCESS);
  int rc = mt_finish();
  MPI_Finalize();
  return rc;
}

int main(int argc, char **argv)
{
  const char *mode = getenv("MPITEST_LIFECYCLE");
  if (mode != NULL && strcmp(mode, "mpi-first") == 0)
    return mpi_first(&argc, &argv);
  if (mode != NULL && strcmp(mode, "serialized") == 0)
    return serialized(&argc, &argv);
  /* Before MPI and rondo exist: nothing may crash, NULL comms are refused. */
  pre_init_t before_mpi = calls_before_rondo_init();

  int provided;
  RONDO_LEAKCHECK_PAUSE(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  mt_start("test_lifecycle");
  mt_where("before MPI_Init");
  check_pre_init(&before_mpi);
  mt_where("after MPI_Init, before rondo_init");
  pre_init_t before_rondo = calls_before_rondo_init();
  check_pre_init(&before_rondo);

  /* rondo_comm_create works without rondo_init once MPI is up. */
  mt_where("rondo_comm_create(MPI_COMM_WORLD) before rondo_init");
  rondo_comm_t early = NULL;
  if (MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &early), RONDO_SUCCESS) &&
      MT_CHECK(early != NULL, "*comm set")) {
    int64_t in = 1, out = 0;
    if (MT_EQ_STATUS(rondo_allreduce(early, &in, &out, 1, RONDO_INT64, RONDO_SUM), RONDO_SUCCESS))
      MT_EQ_INT(out, mt.size);
    MT_EQ_STATUS(rondo_comm_destroy(&early), RONDO_SUCCESS);
  }
  MT_CHECK(rondo_world() == NULL, "rondo_world() is still NULL before rondo_init");

  mt_where("rondo_init");
  if (!MT_EQ_STATUS(rondo_init(&argc, &argv), RONDO_SUCCESS)) {
    int rc = mt_finish();
    MPI_Finalize();
    return rc;
  }
  rondo_comm_t w = rondo_world();
  MT_CHECK(w != NULL, "rondo_world() after rondo_init");
  MT_EQ_STATUS(rondo_init(&argc, &argv), RONDO_SUCCESS); /* a second call is a no-op */
  MT_CHECK(rondo_world() == w, "rondo_world() unchanged by a second rondo_init");

  if (w)
    check_queries(w);
  check_comm_create();
  check_version();
  check_names();

  /* A comm still alive at rondo_finalize is destroyed by it. */
  mt_where("rondo_comm_create for a comm left alive at rondo_finalize");
  rondo_comm_t alive = NULL;
  MT_EQ_STATUS(rondo_comm_create(MPI_COMM_WORLD, &alive), RONDO_SUCCESS);

  mt_where("rondo_finalize");
  MT_EQ_STATUS(rondo_finalize(), RONDO_SUCCESS);
  check_after_finalize(w, alive);

  int rc = mt_finish();
  MPI_Finalize();
  return rc;
}
