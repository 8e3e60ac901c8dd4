/*
 * Comms as users see them: create and destroy (collective), the queries,
 * the topology line, and rondo_free for memory rondo hands out.
 */
#include "api/api.h"

#include <stdio.h>
#include <stdlib.h>

#include "algo/agree.h"
#include "comm/comm.h"
#include "engine/engine.h"
#include "topo/topo.h"

rondo_status_t rondo_comm_create(MPI_Comm mpi_comm, rondo_comm_t *comm)
{
  if (comm != NULL)
    *comm = NULL;
  /* A failure MPI can still report (a bad knob, a NULL output pointer on
   * this rank) is agreed with the other ranks by comm_build, so none of
   * them waits. */
  rondo_status_t init = api_lib_init();
  if (init == RONDO_ERR_FINALIZED || init == RONDO_ERR_NOT_INITIALIZED)
    return init;
  if (mpi_comm == MPI_COMM_NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_create: MPI_COMM_NULL");
  if (comm == NULL && init == RONDO_SUCCESS)
    init = rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_create: comm pointer is NULL");

  struct rondo_comm *c = NULL;
  RONDO_CHECK(comm_build(mpi_comm, NULL, 0, init, &c));
  /* The engine's communicators are made now, while every rank is here; its
   * thread starts with the first asynchronous request. */
  rondo_status_t st = eng_create(c);
  if (st != RONDO_SUCCESS) {
    comm_free(c, 1);
    return st;
  }
  api_register(c);
  LOG_DEBUG("comm %p: rank %d of %d, local %d of %d, %d node(s)", (void *)c, c->rank,
            c->size, c->local_rank, c->local_size, c->node_count);
  *comm = c;
  return RONDO_SUCCESS;
}

rondo_status_t rondo_comm_split(rondo_comm_t comm, int color, int key, rondo_comm_t *newcomm)
{
  if (newcomm != NULL)
    *newcomm = NULL;
  RONDO_CHECK(api_enter(comm));
  /* The collectives' argument check: a bad argument on one rank fails the
   * call on all, or the others would wait in MPI_Comm_split. */
  rondo_status_t st = newcomm != NULL ? RONDO_SUCCESS
                                      : rondo__fail(RONDO_ERR_INVALID_ARG,
                                                    "rondo_comm_split: newcomm pointer is NULL");
  agree_sig_t sig = {.coll = AGREE_COMM_SPLIT};
  RONDO_CHECK(agree_call(comm, st, &sig));
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split(comm->mpi, color < 0 ? MPI_UNDEFINED : color, key, &sub));
  if (sub == MPI_COMM_NULL)
    return RONDO_SUCCESS;
  st = rondo_comm_create(sub, newcomm);
  MPI_CHECK_LOG(MPI_Comm_free(&sub));
  return st;
}

/* MPI_Comm_create_group's tag: subsets are made one at a time per comm. */
#define SUBSET_TAG 6731

rondo_status_t rondo_comm_subset(rondo_comm_t comm, const int *ranks, int nranks,
                                 rondo_comm_t *newcomm)
{
  if (newcomm == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_subset: newcomm pointer is NULL");
  *newcomm = NULL;
  RONDO_CHECK(api_enter(comm));
  if (ranks == NULL || nranks < 1 || nranks > comm->size)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_comm_subset: give 1 to %d ranks (got %d%s)", comm->size, nranks,
                       ranks == NULL ? ", ranks NULL" : "");
  /* Local checks only: the ranks left out do not call, so there is no one
   * to agree with before the group exists. */
  int me = 0;
  for (int i = 0; i < nranks; i++) {
    if (ranks[i] < 0 || ranks[i] >= comm->size)
      return rondo__fail(RONDO_ERR_INVALID_ARG,
                         "rondo_comm_subset: rank %d is not a rank of this comm (0..%d)",
                         ranks[i], comm->size - 1);
    for (int j = 0; j < i; j++)
      if (ranks[j] == ranks[i])
        return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_subset: rank %d is listed twice",
                           ranks[i]);
    me += ranks[i] == comm->rank;
  }
  if (!me)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_comm_subset: this rank (%d) is not in the list; only the listed "
                       "ranks call it",
                       comm->rank);
  MPI_Group all, some;
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_group(comm->mpi, &all));
  int rc = MPI_Group_incl(all, nranks, ranks, &some);
  MPI_CHECK_LOG(MPI_Group_free(&all));
  if (rc != MPI_SUCCESS)
    return rondo__mpi_fail(rc, "MPI_Group_incl", __FILE__, __LINE__);
  rc = MPI_Comm_create_group(comm->mpi, some, SUBSET_TAG, &sub);
  MPI_CHECK_LOG(MPI_Group_free(&some));
  if (rc != MPI_SUCCESS)
    return rondo__mpi_fail(rc, "MPI_Comm_create_group", __FILE__, __LINE__);
  rondo_status_t st = rondo_comm_create(sub, newcomm);
  MPI_CHECK_LOG(MPI_Comm_free(&sub));
  return st;
}

/* Leaves comms[0..n) at once, then destroys each. */
static void free_comms(rondo_comm_t *comms, int n, int mpi_usable)
{
  /* Until every rank destroys each comm too, this rank answers the others'
   * blocking collectives on it (they fail with RONDO_ERR_SHUT_DOWN) and its
   * engine fails their requests and joins: no rank waits on it forever. */
  if (mpi_usable) {
    for (int i = 0; i < n; i++)
      if (comms[i]->size > 1)
        eng_leave_begin(comms[i], agree_leave_polls(comms[i]));
    if (agree_leave(comms, n, eng_leave_poll) != RONDO_SUCCESS)
      LOG_ERROR("rondo_comm_destroy: %s", rondo_last_error());
  }
  for (int i = 0; i < n; i++) {
    if (comms[i]->engine != NULL)
      eng_destroy(comms[i], mpi_usable);
    comm_free(comms[i], mpi_usable);
  }
}

void api_comm_free(rondo_comm_t c, int mpi_usable) { free_comms(&c, 1, mpi_usable); }

void api_comms_free(struct rondo_comm *list, int mpi_usable)
{
  int n = 0;
  for (struct rondo_comm *c = list; c != NULL; c = c->next)
    n++;
  rondo_comm_t *comms = calloc((size_t)n + 1, sizeof *comms);
  if (comms == NULL) { /* no memory: one after the other */
    while (list != NULL) {
      struct rondo_comm *next = list->next;
      api_comm_free(list, mpi_usable);
      list = next;
    }
    return;
  }
  n = 0;
  for (struct rondo_comm *c = list; c != NULL; c = c->next)
    comms[n++] = c;
  free_comms(comms, n, mpi_usable);
  free(comms);
}

rondo_status_t rondo_comm_destroy(rondo_comm_t *comm)
{
  if (comm == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_destroy: comm pointer is NULL");
  RONDO_CHECK(api_enter(*comm));
  if (!api_unregister(*comm))
    return rondo__fail(RONDO_ERR_INVALID_COMM, "comm was destroyed concurrently");
  api_comm_free(*comm, 1);
  *comm = NULL;
  return RONDO_SUCCESS;
}

/* ---- queries ---------------------------------------------------------------- */

#define COMM_QUERY(fn, field)                                                  \
  rondo_status_t fn(rondo_comm_t comm, int *out)                               \
  {                                                                            \
    if (out == NULL)                                                           \
      return rondo__fail(RONDO_ERR_INVALID_ARG, #fn ": the output pointer is NULL"); \
    *out = -1;                                                                 \
    RONDO_CHECK(api_enter(comm));                                              \
    *out = comm->field;                                                        \
    return RONDO_SUCCESS;                                                      \
  }
COMM_QUERY(rondo_comm_rank, rank)
COMM_QUERY(rondo_comm_size, size)
COMM_QUERY(rondo_comm_local_rank, local_rank)
COMM_QUERY(rondo_comm_local_size, local_size)
COMM_QUERY(rondo_comm_node_count, node_count)
#undef COMM_QUERY

rondo_status_t rondo_comm_set_timeout(rondo_comm_t comm, double seconds)
{
  RONDO_CHECK(api_enter(comm));
  if (!(seconds >= 0 && seconds <= 1e6))
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_comm_set_timeout: %g s is not from 0 (never) to 1e6", seconds);
  __atomic_store(&comm->request_timeout, &seconds, __ATOMIC_RELAXED);
  return RONDO_SUCCESS;
}

rondo_status_t rondo_comm_mpi(rondo_comm_t comm, MPI_Comm *mpi)
{
  if (mpi == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_mpi: the output pointer is NULL");
  *mpi = MPI_COMM_NULL;
  RONDO_CHECK(api_enter(comm));
  *mpi = comm->mpi;
  return RONDO_SUCCESS;
}

rondo_status_t api_text_result(const char *fn, int want, char *buf, size_t len,
                               size_t *needed)
{
  if (want < 0)
    return rondo__fail(RONDO_ERR_INTERNAL, "%s: cannot format the text", fn);
  if (needed != NULL)
    *needed = (size_t)want + 1;
  if (buf == NULL && len == 0)
    return RONDO_SUCCESS; /* a size query */
  if ((size_t)want >= len)
    return rondo__fail(RONDO_ERR_TRUNCATED, "%s: the text needs %d bytes, buf has %zu", fn,
                       want + 1, len);
  return RONDO_SUCCESS;
}

rondo_status_t rondo_comm_topology(rondo_comm_t comm, char *buf, size_t len, size_t *needed)
{
  RONDO_CHECK(api_enter(comm));
  if (buf == NULL && len > 0)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_comm_topology: buf is NULL with len %zu",
                       len);
  const topo_t *t = comm->topo;
  char net[256];
  net_describe(&t->net, t->node_count, net, sizeof net);
  int want = snprintf(buf, len,
                      "%d ranks on %d %snode(s) of %d-%d ranks; this rank: node %d, local "
                      "rank %d of %d; hardware: %s; %d ranks share %d available cores%s; %s",
                      comm->size, t->node_count, comm->cfg.node_size ? "virtual " : "",
                      t->min_local, t->max_local, t->node_id, t->local_rank, t->local_size,
                      t->hw_summary, t->real_local_size, t->avail_cores,
                      t->oversubscribed ? " (oversubscribed: waits yield)" : "", net);
  return api_text_result("rondo_comm_topology", want, buf, len, needed);
}

void rondo_free(void *ptr) { free(ptr); }
