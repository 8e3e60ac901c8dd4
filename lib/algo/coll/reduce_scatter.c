/*
 * Reduce-scatter delegates to MPI_Reduce_scatter_block (equal blocks) or
 * MPI_Reduce_scatter (a count per rank: the engine's uneven splits) with
 * the datatype and op mapping of p2p.c (user ops over rondo's kernels for
 * float16/bfloat16 and floating MIN/MAX). AVG is finished by the caller. A
 * block is limited to INT_MAX elements: user-defined ops take int counts.
 */
#include "algo/common/algo.h"

#include <limits.h>
#include <stdlib.h>

rondo_status_t algo_reduce_scatter(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                   size_t recvcount, rondo_dtype_t dtype, rondo_op_t op)
{
  MPI_Datatype mtype;
  MPI_Op mop;
  if (recvcount > INT_MAX)
    return rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "rondo_reduce_scatter: recvcount %zu is above INT_MAX", recvcount);
  RONDO_CHECK(algo_mpi_op(dtype, op, &mtype, &mop));
  MPI_CHECK(MPI_Reduce_scatter_block(sendbuf, recvbuf, (int)recvcount, mtype, mop,
                                     comm->mpi));
  return RONDO_SUCCESS;
}

rondo_status_t algo_reduce_scatterv(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    const size_t *recvcounts, rondo_dtype_t dtype, rondo_op_t op)
{
  MPI_Datatype mtype;
  MPI_Op mop;
  int *counts = malloc((size_t)comm->size * sizeof *counts);
  if (counts == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "reduce-scatter: %d counts", comm->size);
  rondo_status_t st = RONDO_SUCCESS;
  for (int i = 0; i < comm->size && st == RONDO_SUCCESS; i++) {
    if (recvcounts[i] > INT_MAX)
      st = rondo__fail(RONDO_ERR_UNSUPPORTED, "reduce-scatter: rank %d's %zu elements are above "
                       "INT_MAX", i, recvcounts[i]);
    else
      counts[i] = (int)recvcounts[i];
  }
  if (st == RONDO_SUCCESS)
    st = algo_mpi_op(dtype, op, &mtype, &mop);
  char none; /* MPI wants a buffer even for no elements */
  if (st == RONDO_SUCCESS)
    MPI_CHECK_GOTO(MPI_Reduce_scatter(sendbuf, recvbuf != NULL ? recvbuf : &none, counts, mtype,
                                      mop, comm->mpi),
                   st, out);
out:
  free(counts);
  return st;
}
