/*
 * Allgather and allgatherv delegate to MPI (ring / recursive doubling /
 * Bruck inside the MPI library, chosen by size). rondo's value here is the
 * argument checking and agreement in lib/core/coll.c and size_t counts:
 * with an MPI-4 library counts go through the large-count (_c) calls; with
 * MPI-3 a block above INT_MAX bytes is reported as unsupported.
 */
#include "algo/common/algo.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION < 4
static rondo_status_t too_large(size_t bytes)
{
  return rondo__fail(RONDO_ERR_UNSUPPORTED,
                     "a %zu-byte block needs an MPI-4 library (large counts)", bytes);
}
#endif

rondo_status_t algo_allgather(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                              size_t bytes)
{
  /* Sending from the rank's own block of recvbuf is the MPI in-place form. */
  const void *src =
      sendbuf == (const char *)recvbuf + (size_t)comm->rank * bytes ? MPI_IN_PLACE : sendbuf;
#if MPI_VERSION >= 4
  MPI_CHECK(MPI_Allgather_c(src, (MPI_Count)bytes, MPI_BYTE, recvbuf, (MPI_Count)bytes,
                            MPI_BYTE, comm->mpi));
#else
  if (bytes > INT_MAX)
    return too_large(bytes);
  MPI_CHECK(MPI_Allgather(src, (int)bytes, MPI_BYTE, recvbuf, (int)bytes, MPI_BYTE,
                          comm->mpi));
#endif
  return RONDO_SUCCESS;
}

rondo_status_t algo_allgatherv(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                               const size_t *counts, const size_t *displs, size_t esize)
{
  rondo_status_t st = RONDO_SUCCESS;
  int p = comm->size;
  if (p == 1) {
    /* MPICH 4.0 ignores the displacement on a one-rank communicator. */
    char *dst = (char *)recvbuf + (displs ? displs[0] : 0) * esize;
    if (dst != sendbuf && counts[0] > 0)
      memmove(dst, sendbuf, counts[0] * esize);
    return RONDO_SUCCESS;
  }
#if MPI_VERSION >= 4
  MPI_Count *c = malloc((size_t)p * sizeof *c);
  MPI_Aint *d = malloc((size_t)p * sizeof *d);
#else
  int *c = malloc((size_t)p * sizeof *c);
  int *d = malloc((size_t)p * sizeof *d);
#endif
  if (c == NULL || d == NULL) {
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "allgatherv: %d counts", p);
    goto out;
  }
  size_t next = 0;
  for (int i = 0; i < p; i++) {
    size_t start = displs ? displs[i] : next;
    next = start + counts[i];
#if MPI_VERSION < 4
    if (counts[i] * esize > INT_MAX || start * esize > INT_MAX) {
      st = too_large(next * esize);
      goto out;
    }
#endif
    c[i] = counts[i] * esize;
    d[i] = start * esize;
  }
#if MPI_VERSION >= 4
  MPI_CHECK_GOTO(MPI_Allgatherv_c(sendbuf, c[comm->rank], MPI_BYTE, recvbuf, c, d,
                                  MPI_BYTE, comm->mpi),
                 st, out);
#else
  MPI_CHECK_GOTO(MPI_Allgatherv(sendbuf, c[comm->rank], MPI_BYTE, recvbuf, c, d, MPI_BYTE,
                                comm->mpi),
                 st, out);
#endif
out:
  free(c);
  free(d);
  return st;
}
