/*
 * Barrier delegates to MPI_Barrier on the private duplicate (dissemination
 * in the MPI library: lg p rounds, nothing for rondo to improve); the
 * nonblocking one where some rank of the comm yields its core.
 */
#include "algo/algo.h"

rondo_status_t algo_barrier(rondo_comm_t comm)
{
  if (!comm->yield_any) { /* no rank yields: the same call on every rank */
    MPI_CHECK(MPI_Barrier(comm->mpi));
    return RONDO_SUCCESS;
  }
  MPI_Request req;
  MPI_CHECK(MPI_Ibarrier(comm->mpi, &req));
  return algo_waitall(comm, 1, &req); /* yields when oversubscribed */
}
