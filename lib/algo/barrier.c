/*
 * Barrier delegates to MPI_Barrier on the private duplicate (dissemination
 * in the MPI library: lg p rounds, nothing for rondo to improve).
 */
#include "algo.h"

rondo_status_t algo_barrier(rondo_comm_t comm)
{
  MPI_CHECK(MPI_Barrier(comm->mpi));
  return RONDO_SUCCESS;
}
