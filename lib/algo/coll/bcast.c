/*
 * Broadcast delegates to MPI_Bcast on the private duplicate: MPI libraries
 * already pick binomial or scatter-allgather trees by size, and rondo has no
 * better schedule over plain point-to-point. Large messages go in pieces so
 * MPI-3 libraries (int counts) work too.
 */
#include "algo/algo.h"

#define PIECE ((size_t)1 << 30) /* bytes per MPI_Bcast call */

rondo_status_t algo_broadcast(rondo_comm_t comm, void *buf, size_t bytes, int root)
{
  for (size_t done = 0; done < bytes; done += PIECE) {
    size_t n = bytes - done < PIECE ? bytes - done : PIECE;
    MPI_CHECK(MPI_Bcast((char *)buf + done, (int)n, MPI_BYTE, root, comm->mpi));
  }
  return RONDO_SUCCESS;
}
