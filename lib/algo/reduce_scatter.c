/*
 * Reduce-scatter delegates to MPI_Reduce_scatter_block with the datatype and
 * op mapping of p2p.c (user ops over rondo's kernels for float16/bfloat16
 * and floating MIN/MAX). AVG is finished by the caller. A block is limited
 * to INT_MAX elements: user-defined ops take int counts.
 */
#include "algo/algo.h"

#include <limits.h>

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
