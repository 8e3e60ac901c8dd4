/*
 * All-to-all delegates to MPI_Alltoall (pairwise or Bruck in the MPI
 * library, by size), and to MPI_Alltoallv for the engine's uneven splits:
 * every byte crosses the network once, so there is no reduction to overlap
 * and nothing for rondo's schedules to improve.
 */
#include "algo/algo.h"

#include <limits.h>
#include <stdlib.h>

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

rondo_status_t algo_alltoallv(rondo_comm_t comm, const void *sendbuf, const size_t *sendbytes,
                              void *recvbuf, const size_t *recvbytes)
{
  int p = comm->size;
  rondo_status_t st = RONDO_SUCCESS;
#if MPI_VERSION >= 4
  MPI_Count *v = malloc(4 * (size_t)p * sizeof *v);
  MPI_Aint *d = malloc(2 * (size_t)p * sizeof *d);
  if (v == NULL || d == NULL) {
    free(v);
    free(d);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "all-to-all: %d counts", p);
  }
  MPI_Aint soff = 0, roff = 0;
  for (int i = 0; i < p; i++) {
    v[i] = (MPI_Count)sendbytes[i];
    v[p + i] = (MPI_Count)recvbytes[i];
    d[i] = soff;
    d[p + i] = roff;
    soff += (MPI_Aint)sendbytes[i];
    roff += (MPI_Aint)recvbytes[i];
  }
  char none; /* MPI wants buffers even for no bytes */
  MPI_CHECK_GOTO(MPI_Alltoallv_c(sendbuf != NULL ? sendbuf : &none, v, d, MPI_BYTE,
                                 recvbuf != NULL ? recvbuf : &none, v + p, d + p, MPI_BYTE,
                                 comm->mpi),
                 st, out);
out:
  free(v);
  free(d);
#else
  int *v = malloc(4 * (size_t)p * sizeof *v);
  if (v == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "all-to-all: %d counts", p);
  size_t soff = 0, roff = 0;
  for (int i = 0; i < p && st == RONDO_SUCCESS; i++) {
    if (sendbytes[i] > INT_MAX || recvbytes[i] > INT_MAX || soff > INT_MAX || roff > INT_MAX)
      st = rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "all-to-all: more than INT_MAX bytes need an MPI-4 library");
    v[i] = (int)sendbytes[i];
    v[p + i] = (int)recvbytes[i];
    v[2 * p + i] = (int)soff;
    v[3 * p + i] = (int)roff;
    soff += sendbytes[i];
    roff += recvbytes[i];
  }
  char none;
  if (st == RONDO_SUCCESS)
    MPI_CHECK_GOTO(MPI_Alltoallv(sendbuf != NULL ? sendbuf : &none, v, v + 2 * p, MPI_BYTE,
                                 recvbuf != NULL ? recvbuf : &none, v + p, v + 3 * p, MPI_BYTE,
                                 comm->mpi),
                   st, out);
out:
  free(v);
#endif
  return st;
}
