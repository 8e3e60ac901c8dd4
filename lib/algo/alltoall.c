/*
 * All-to-all delegates to MPI_Alltoall (pairwise or Bruck in the MPI
 * library, by size): every byte crosses the network once, so there is no
 * reduction to overlap and nothing for rondo's schedules to improve.
 */
#include "algo/algo.h"

#include <limits.h>

rondo_status_t algo_alltoall(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                             size_t bytes)
{
#if MPI_VERSION >= 4
  MPI_CHECK(MPI_Alltoall_c(sendbuf, (MPI_Count)bytes, MPI_BYTE, recvbuf, (MPI_Count)bytes,
                           MPI_BYTE, comm->mpi));
#else
  if (bytes > INT_MAX)
    return rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "a %zu-byte block needs an MPI-4 library (large counts)", bytes);
  MPI_CHECK(MPI_Alltoall(sendbuf, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE,
                         comm->mpi));
#endif
  return RONDO_SUCCESS;
}
