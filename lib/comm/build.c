/*
 * Building a comm: duplicate the MPI communicator, read and agree on the
 * configuration, find the topology and make the cross-node comms, and the
 * argument agreement's state (its exchange, its board). Every step that
 * can fail on one rank only (a malformed knob, a missing tuning file) is
 * agreed before the next collective step, so no rank waits for one that
 * gave up.
 */
#include "comm/comm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/algo.h"
#include "algo/agree/exchange.h"
#include "algo/common/gpu.h"
#include "algo/common/blocks.h"
#include "algo/common/shared_alloc.h"
#include "algo/common/shm.h"
#include "base/numbers.h"
#include "select/select.h"
#include "topo/topo.h"

/* ---- configuration ---------------------------------------------------------------- */

/* This rank's reading of the knobs into c: the environment now, the forced
 * algorithm by name, the tuning table, and (rank 0, which writes it) a
 * timeline path that can be written. Local. */
static rondo_status_t read_config(struct rondo_comm *c)
{
  rondo_status_t st = rondo__knobs_load(&c->cfg);
  if (st != RONDO_SUCCESS)
    return st;
  c->request_timeout = c->cfg.stall_abort_sec;
  if (strcmp(c->cfg.allreduce_algo, "auto") == 0) {
    c->forced_algo = RONDO_ALGO_AUTO;
  } else {
    const algo_desc_t *d = algo_find_name(c->cfg.allreduce_algo);
    if (d == NULL)
      return rondo__fail_quiet(RONDO_ERR_INVALID_KNOB,
                               "RONDO_ALLREDUCE_ALGO='%s' is not valid: expected auto or one "
                               "of %s",
                               c->cfg.allreduce_algo, algo_names());
    c->forced_algo = d->select.id;
  }
  c->forced_family[RONDO_COLL_ALLREDUCE] = c->forced_algo;
  const struct {
    rondo_coll_t coll;
    const char *knob, *value;
  } family_knobs[] = {{RONDO_COLL_REDUCE_SCATTER, "RONDO_REDUCE_SCATTER_ALGO",
                       c->cfg.reduce_scatter_algo},
                      {RONDO_COLL_ALLGATHER, "RONDO_ALLGATHER_ALGO", c->cfg.allgather_algo}};
  for (size_t i = 0; i < sizeof family_knobs / sizeof family_knobs[0]; i++) {
    rondo_coll_t coll = family_knobs[i].coll;
    const algo_desc_t *d = algo_family_find_name(coll, family_knobs[i].value);
    if (strcmp(family_knobs[i].value, "auto") != 0 && d == NULL)
      return rondo__fail_quiet(RONDO_ERR_INVALID_KNOB,
                               "%s='%s' is not valid: expected auto or one of %s",
                               family_knobs[i].knob, family_knobs[i].value,
                               algo_family_names(coll));
    c->forced_family[coll] = d != NULL ? d->select.id : RONDO_ALGO_AUTO;
  }
  if (c->cfg.tuning_file[0] != '\0') {
    RONDO_CHECK(select_table_load(c->cfg.tuning_file, algo_menu(), &c->tuning));
    c->owns_tuning = 1;
    LOG_INFO("tuning table %s: %zu rules", c->cfg.tuning_file,
             select_table_rules(c->tuning));
  }
  if (c->rank == 0 && c->cfg.timeline[0] != '\0' &&
      strcmp(c->cfg.timeline, RONDO__TIMELINE_DYNAMIC) != 0) {
    /* Opened and written (an empty timeline, which the engine's replaces):
     * a file that opens but takes no bytes (a full file system, a special
     * file such as /proc/version) fails here, on every rank, not at the
     * first request. */
    char why[128];
    int fd = rondo__open_regular(c->cfg.timeline, O_WRONLY | O_CREAT | O_TRUNC, why, sizeof why);
    if (fd >= 0) {
      why[0] = '\0';
      if (pwrite(fd, "[\n]\n", 4, 0) != 4)
        snprintf(why, sizeof why, "%s", errno != 0 ? strerror(errno) : "a short write");
      close(fd);
    }
    if (fd < 0 || why[0] != '\0')
      return rondo__fail_quiet(RONDO_ERR_IO, "RONDO_TIMELINE=%s: cannot write it: %s",
                               c->cfg.timeline, why);
  }
  return RONDO_SUCCESS;
}

/* A local failure must reach every rank, or the others would wait in the
 * next collective forever: all learn the lowest failing rank, and its
 * message. Collective over c. */
static rondo_status_t agree_status_on(MPI_Comm comm, rondo_status_t local)
{
  int rank, size;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  int mine = local == RONDO_SUCCESS ? size : rank, first = size;
  MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size)
    return RONDO_SUCCESS;
  char msg[RONDO__KNOB_STRING_MAX + 256] = "";
  if (first == rank) {
    LOG_ERROR("%s", rondo_last_error());
    snprintf(msg, sizeof msg, "%s", rondo_last_error());
  }
  MPI_CHECK(MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, comm));
  if (first == rank)
    return local;
  msg[sizeof msg - 1] = '\0';
  return rondo__fail(RONDO_ERR_PEER, "rank %d could not set up rondo: %s", first, msg);
}

rondo_status_t comm_agree_status(rondo_comm_t c, rondo_status_t local)
{
  return agree_status_on(c->mpi, local);
}

/* Knobs that shape messages must be equal on every rank, or collectives
 * would mismatch sizes or hang, and so must the tuning table's rules (the
 * engine's fused all-reduces choose their algorithm on each rank without
 * another agreement): MAX of [h, ~h] for each over the comm. The same
 * all-reduce takes the highest MPI thread level of the comm's ranks
 * (c->thread_level_max, for the engine). */
static rondo_status_t check_knobs_agree(struct rondo_comm *c)
{
  /* Each knob's hash and its complement (MAX of both: the largest and the
   * smallest), then the tuning table's: one all-reduce says which differ. */
  enum { MOST = 32 };
  int n = rondo__knobs_shared_count();
  if (n > MOST - 1)
    return rondo__fail(RONDO_ERR_INTERNAL, "knobs: %d to compare, room for %d", n, MOST - 1);
  int64_t v[2 * MOST + 1], r[2 * MOST + 1];
  int level = MPI_THREAD_MULTIPLE; /* if MPI cannot say: the engine may run */
  MPI_CHECK_LOG(MPI_Query_thread(&level));
  v[2 * (n + 1)] = level;
  for (int j = 0; j <= n; j++) {
    int64_t h = (int64_t)((j < n ? rondo__knob_shared_hash(&c->cfg, j)
                                 : select_table_hash(c->tuning)) >> 1);
    v[2 * j] = h;
    v[2 * j + 1] = ~h;
  }
  MPI_CHECK(MPI_Allreduce(v, r, 2 * (n + 1) + 1, MPI_INT64_T, MPI_MAX, c->mpi));
  c->thread_level_max = (int)r[2 * (n + 1)];
  int k = 0;
  while (k < n && r[2 * k] == ~r[2 * k + 1])
    k++;
  if (k < n) {
    /* Two ranks that differ: the lowest with the largest hash, the lowest
     * with the smallest. */
    int64_t who[2] = {v[2 * k] == r[2 * k] ? -(int64_t)c->rank : -(int64_t)c->size,
                      v[2 * k] == ~r[2 * k + 1] ? -(int64_t)c->rank : -(int64_t)c->size},
            low[2];
    MPI_CHECK(MPI_Allreduce(who, low, 2, MPI_INT64_T, MPI_MAX, c->mpi));
    char mine[128];
    rondo__knob_shared_text(&c->cfg, k, mine, sizeof mine);
    int a = (int)-low[0], b = (int)-low[1];
    return rondo__fail(RONDO_ERR_MISMATCH,
                       "%s differs across ranks: rank %d and rank %d see different values "
                       "(this rank, %d: '%s'); export the same value to every rank",
                       rondo__knob_shared_name(k), a < b ? a : b, a < b ? b : a, c->rank,
                       mine);
  }
  if (r[2 * n] != ~r[2 * n + 1])
    return rondo__fail(RONDO_ERR_MISMATCH,
                       "ranks read different rules from RONDO_TUNING_FILE=%s: give every "
                       "rank the same table (a shared file system, or the same copy on "
                       "every node)",
                       c->cfg.tuning_file);
  return RONDO_SUCCESS;
}

/* ---- topology ---------------------------------------------------------------------- */

/* A comm over an MPI communicator owned by the topology (a cross-node
 * communicator): enough for the point-to-point algorithms. */
static rondo_status_t sub_comm(const struct rondo_comm *parent, MPI_Comm mpi,
                               struct rondo_comm **out)
{
  rondo_status_t st = RONDO_SUCCESS;
  struct rondo_comm *c = calloc(1, sizeof *c);
  if (c == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "topology: cross comm");
  c->mpi = mpi;
  c->cfg = parent->cfg;
  c->request_timeout = c->cfg.stall_abort_sec;
  c->forced_algo = RONDO_ALGO_AUTO;
  c->last_algo = RONDO_ALGO_AUTO;
  c->yield_waits = parent->yield_waits;
  c->yield_any = parent->yield_any;
  RONDO_CHECK_GOTO(agree_state_create(c), st, fail);
  agree_choose_exchange(c, 1, SIZE_MAX); /* one rank per node; no check runs on it today */
  MPI_CHECK_GOTO(MPI_Comm_set_errhandler(mpi, MPI_ERRORS_RETURN), st, fail);
  MPI_CHECK_GOTO(MPI_Comm_rank(mpi, &c->rank), st, fail);
  MPI_CHECK_GOTO(MPI_Comm_size(mpi, &c->size), st, fail);
  c->pof2 = rondo__pof2_floor(c->size);
  *out = c;
  return RONDO_SUCCESS;
fail:
  agree_state_free(c, 0);
  free(c);
  return st;
}

static void free_topology(struct rondo_comm *c, int mpi_usable)
{
  if (c->topo == NULL)
    return;
  for (int g = 0; c->cross != NULL && g < c->topo->slices; g++) {
    if (c->cross[g] != NULL) {
      agree_state_free(c->cross[g], mpi_usable);
      free(c->cross[g]->scratch);
      free(c->cross[g]->result);
    }
    free(c->cross[g]);
  }
  free(c->cross);
  c->cross = NULL;
  shalloc_destroy_all(c, mpi_usable); /* before the node comm goes */
  if (mpi_usable) {
    shm_free(c);
    topo_destroy(c->topo);
  }
  free(c->topo);
  c->topo = NULL;
}

/* Nodes, cross-node comms, hwloc facts and the network between the nodes
 * (measured for a user comm, the parent's for an internal one); logs
 * oversubscription once. */
static rondo_status_t find_topology(struct rondo_comm *c, const struct rondo_comm *parent,
                                    int yield)
{
  static int said_oversubscribed; /* once per process */
  /* Collective. A rank that runs out of memory in it still takes every
   * step, and the agreement below tells the others. */
  rondo_status_t st = topo_create(c->mpi, c->rank, c->cfg.node_size, c->topo);
  if (st != RONDO_SUCCESS) {
    free(c->topo);
    c->topo = NULL;
  } else {
    c->topo->yield |= yield;
    c->yield_waits = c->topo->yield;
    c->yield_any = c->topo->any_oversubscribed || yield; /* yield: equal on every rank */
    c->local_rank = c->topo->local_rank;
    c->local_size = c->topo->local_size;
    c->node_count = c->topo->node_count;
    c->node_id = c->topo->node_id;
    c->cross = calloc((size_t)c->topo->slices, sizeof *c->cross);
    if (c->cross == NULL)
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "topology: cross comms");
    for (int g = 0; st == RONDO_SUCCESS && g < c->topo->slices; g++)
      if (c->topo->cross[g] != MPI_COMM_NULL)
        st = sub_comm(c, c->topo->cross[g], &c->cross[g]);
  }
  RONDO_CHECK(comm_agree_status(c, st));
  if (parent != NULL && parent->topo != NULL) {
    c->topo->net = parent->topo->net;
  } else {
    RONDO_CHECK(net_measure(c->mpi, c->topo, c->cfg.net_latency_us, c->cfg.net_gbits,
                            c->cfg.net_calibrate, &c->topo->net));
    if (c->node_count > 1) {
      char text[384];
      net_describe(&c->topo->net, c->node_count, text, sizeof text);
      LOG_INFO("%s", text);
    }
  }
  if (c->node_count > 1) {
    c->link_beta = c->topo->net.beta; /* a ring crosses each link with one stream */
    for (int g = 0; g < c->topo->slices; g++)
      if (c->cross[g] != NULL)
        c->cross[g]->link_beta = c->topo->net.beta * c->topo->max_local;
  }
  int by_exchange = algo_check_by_exchange(c);
  agree_choose_exchange(c, by_exchange, algo_check_home_from(c, by_exchange));
  if (c->node_count > 1 && parent == NULL) {
    char way[128];
    agree_exchange_describe(c, way, sizeof way);
    LOG_INFO("the argument check crosses nodes by %s (RONDO_CHECK_EXCHANGE)", way);
  }
  if (c->topo->oversubscribed && !__atomic_exchange_n(&said_oversubscribed, 1, __ATOMIC_RELAXED))
    LOG_INFO("%d ranks share %d available cores on this node: waits yield the core "
             "instead of spinning (%s)",
             c->topo->real_local_size, c->topo->avail_cores, c->topo->hw_summary);
  return RONDO_SUCCESS;
}

/* ---- the comm ------------------------------------------------------------------------ */

rondo_status_t comm_build(MPI_Comm mpi_comm, const struct rondo_comm *parent, int yield,
                          rondo_status_t local, rondo_comm_t *out)
{
  rondo_status_t st = RONDO_SUCCESS;
  struct rondo_comm *c = calloc(1, sizeof *c);
  if (c != NULL && agree_state_create(c) != RONDO_SUCCESS) {
    free(c);
    c = NULL;
  }
  if (c == NULL) {
    /* This rank still takes the steps the others take up to the agreement
     * (on a duplicate of its own), so they learn it failed. */
    rondo_status_t mine =
        local != RONDO_SUCCESS
            ? local
            : rondo__fail(RONDO_ERR_NO_MEMORY, "rondo_comm_create: no memory for the comm");
    MPI_Comm dup;
    MPI_CHECK(MPI_Comm_dup(mpi_comm, &dup));
    MPI_CHECK_GOTO(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), st, free_dup);
    st = agree_status_on(dup, mine);
  free_dup:
    MPI_CHECK_LOG(MPI_Comm_free(&dup));
    return st;
  }
  MPI_CHECK_GOTO(MPI_Comm_dup(mpi_comm, &c->mpi), st, fail_dup);
  /* rondo reports MPI failures as statuses instead of aborting. */
  MPI_CHECK_GOTO(MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN), st, fail_setup);
  MPI_CHECK_GOTO(MPI_Comm_rank(c->mpi, &c->rank), st, fail_setup);
  MPI_CHECK_GOTO(MPI_Comm_size(c->mpi, &c->size), st, fail_setup);
  c->pof2 = rondo__pof2_floor(c->size);
  c->last_algo = RONDO_ALGO_AUTO;
  if (parent != NULL) {
    c->cfg = parent->cfg;
    c->request_timeout = c->cfg.stall_abort_sec;
    c->forced_algo = parent->forced_algo;
    for (int k = 0; k < RONDO_COLL_COUNT; k++)
      c->forced_family[k] = parent->forced_family[k];
    c->tuning = parent->tuning;
  } else if (local == RONDO_SUCCESS) {
    local = read_config(c);
  }
  c->topo = calloc(1, sizeof *c->topo);
  if (c->topo != NULL)
    c->topo->node = MPI_COMM_NULL; /* nothing to free until topo_create */
  else if (local == RONDO_SUCCESS)
    local = rondo__fail(RONDO_ERR_NO_MEMORY, "topology");
  RONDO_CHECK_GOTO(comm_agree_status(c, local), st, fail_setup);
  RONDO_CHECK_GOTO(check_knobs_agree(c), st, fail_setup);
  RONDO_CHECK_GOTO(find_topology(c, parent, yield), st, fail_setup);
  /* the engine's comm has one too: its lone all-gathers into the
   * caller's buffer check their arguments on it (engine/collectives.c) */
  RONDO_CHECK_GOTO(agree_board_create(c), st, fail_setup);
  *out = c;
  return RONDO_SUCCESS;

fail_setup:
  free_topology(c, 1);
  if (c->owns_tuning)
    select_table_free(c->tuning);
  MPI_CHECK_LOG(MPI_Comm_free(&c->mpi));
fail_dup:
  agree_state_free(c, 1);
  free(c);
  return st;
}

void comm_free(struct rondo_comm *c, int mpi_usable)
{
  gpu_detach(c, mpi_usable);
  agree_state_free(c, mpi_usable);
  free_topology(c, mpi_usable);
  if (c->owns_tuning)
    select_table_free(c->tuning);
  if (mpi_usable)
    MPI_CHECK_LOG(MPI_Comm_free(&c->mpi));
  free(c->scratch);
  free(c->result);
  free(c);
}
