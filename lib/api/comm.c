/*
 * Comms as users see them: split, subset and destroy (collective), the
 * queries, the topology line, and rondo_free for memory rondo hands out.
 * rondo_comm_create and the freeing of comms are in lifecycle.c: rondo_init
 * and rondo_finalize make and free comms too, and this file uses the
 * registry there, so from here their calls would run in a circle.
 */
#include "api/api.h"

#include <stdio.h>
#include <stdlib.h>

#include "algo/agree/agree.h"
#include "algo/agree/exchange.h"
#include "topo/topo.h"

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
COMM_QUERY(rondo_comm_node_id, node_id)
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
  char net[384];
  net_describe(&t->net, t->node_count, net, sizeof net);
  char check[128];
  if (comm->size == 1)
    snprintf(check, sizeof check, "none (one rank)");
  else if (agree_board_active(comm))
    snprintf(check, sizeof check, "a board in shared memory");
  else
    agree_exchange_describe(comm, check, sizeof check);
  int want = snprintf(buf, len,
                      "%d ranks on %d %snode(s) of %d-%d ranks; this rank: node %d, local "
                      "rank %d of %d; hardware: %s; %d ranks share %d available cores%s; "
                      "argument check: %s; %s",
                      comm->size, t->node_count, comm->cfg.node_size ? "virtual " : "",
                      t->min_local, t->max_local, t->node_id, t->local_rank, t->local_size,
                      t->hw_summary, t->real_local_size, t->avail_cores,
                      t->oversubscribed ? " (oversubscribed: waits yield)" : "", check, net);
  return api_text_result("rondo_comm_topology", want, buf, len, needed);
}

void rondo_free(void *ptr) { free(ptr); }
