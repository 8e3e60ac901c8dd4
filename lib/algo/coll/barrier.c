/*
 * Barrier delegates to MPI_Barrier on the private duplicate (dissemination
 * in the MPI library: lg p rounds, nothing for rondo to improve).
 */
#include "algo/common/algo.h"

rondo_status_t algo_barrier(rondo_comm_t comm)
{
  MPI_Request req;
  MPI_CHECK(MPI_Ibarrier(comm->mpi, &req));
  return algo_waitall(comm, 1, &req); /* yields when oversubscribed */
}
