/*
 * Folding a non-power-of-two comm onto a power of two, as recursive doubling
 * and Rabenseifner need (Thakur, Rabenseifner and Gropp, 2005): with
 * rem = size - pof2, each pair (2i, 2i+1) for i < rem becomes one rank. The
 * even rank sends its input to the odd one and waits for the result; this
 * costs one extra full-buffer exchange before and after for those ranks.
 */
#include "algo/algo.h"

int algo_fold_rank(rondo_comm_t comm, int nr)
{
  int rem = comm->size - comm->pof2;
  return nr < rem ? nr * 2 + 1 : nr + rem;
}

int algo_fold_newrank(rondo_comm_t comm)
{
  int rank = comm->rank, rem = comm->size - comm->pof2;
  if (rank >= 2 * rem)
    return rank - rem;
  return rank % 2 == 0 ? -1 : rank / 2;
}

rondo_status_t algo_fold_in(const algo_allreduce_args_t *a, void *buf, void *tmp,
                            int *newrank)
{
  int rank = a->comm->rank;
  int rem = a->comm->size - a->comm->pof2;
  size_t bytes = a->count * a->esize;
  MPI_Request req = MPI_REQUEST_NULL;
  if (rank >= 2 * rem) {
    *newrank = rank - rem;
    return RONDO_SUCCESS;
  }
  if (rank % 2 == 0) {
    *newrank = -1;
    RONDO_CHECK(algo_isend(a->comm, buf, bytes, rank + 1, &req));
    return algo_waitall(a->comm, 1, &req);
  }
  *newrank = rank / 2;
  RONDO_CHECK(algo_irecv(a->comm, tmp, bytes, rank - 1, &req));
  RONDO_CHECK(algo_waitall(a->comm, 1, &req));
  algo_reduce_ordered(buf, buf, tmp, a->count, a, rank - 1);
  return RONDO_SUCCESS;
}

rondo_status_t algo_fold_out(const algo_allreduce_args_t *a, void *buf, int newrank)
{
  int rank = a->comm->rank;
  int rem = a->comm->size - a->comm->pof2;
  size_t bytes = a->count * a->esize;
  MPI_Request req = MPI_REQUEST_NULL;
  if (rank >= 2 * rem)
    return RONDO_SUCCESS;
  if (newrank < 0)
    RONDO_CHECK(algo_irecv(a->comm, buf, bytes, rank + 1, &req));
  else
    RONDO_CHECK(algo_isend(a->comm, buf, bytes, rank - 1, &req));
  return algo_waitall(a->comm, 1, &req);
}
