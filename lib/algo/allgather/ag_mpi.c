/*
 * MPI's own all-gather, as one member of the family: MPI_Allgather for
 * equal packed blocks, MPI_Allgatherv otherwise (ring, recursive doubling
 * or Bruck inside the MPI library, chosen by size), on bytes. With an
 * MPI-4 library counts go through the large-count (_c) calls; with MPI-3
 * a block or offset above INT_MAX bytes cannot run (the selector passes
 * it over). A call of at most AGREE_INLINE_BYTES across nodes travels
 * inside the argument check's exchange instead: each rank's block at its
 * offset in zeros, summed as bytes (packet.c), so the check and the
 * data cost one exchange.
 */
#include "algo/common/blocks.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static rondo_status_t allgather_mpi(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  int p = comm->size, r = comm->rank, equal = a->packed;
  if (a->agree != NULL) { /* small, across nodes: the data rides in the check */
    unsigned char all[AGREE_INLINE_BYTES];
    agree_inline_t d = {.count = a->displs[p], .dtype = RONDO_UINT8, .op = RONDO_SUM,
                        .in = a->sendbuf, .at = a->displs[r], .in_bytes = a->counts[r],
                        .out = all};
    int rode = 0;
    RONDO_CHECK(agree_inline(comm, a->agree, &d, &rode));
    if (rode) {
      for (int i = 0; i < p; i++) /* the gaps between blocks stay as they were */
        if (a->counts[i] > 0)
          memcpy(blocks_at(a, a->recvbuf, a->displs[i]), all + a->displs[i], a->counts[i]);
      return RONDO_SUCCESS;
    }
  }
  for (int i = 1; i < p; i++)
    equal = equal && a->counts[i] == a->counts[0];
  /* Sending from the rank's own block of recvbuf is the MPI in-place form. */
  const void *src = a->sendbuf == blocks_at(a, a->recvbuf, a->displs[r]) ? MPI_IN_PLACE
                                                                         : a->sendbuf;
#if MPI_VERSION >= 4
  typedef MPI_Count count_t;
  typedef MPI_Aint displ_t;
#else
  typedef int count_t;
  typedef int displ_t;
#endif
  if (equal) {
#if MPI_VERSION >= 4
    MPI_CHECK(MPI_Allgather_c(src, (count_t)a->counts[0], MPI_BYTE, a->recvbuf,
                              (count_t)a->counts[0], MPI_BYTE, comm->mpi));
#else
    MPI_CHECK(MPI_Allgather(src, (count_t)a->counts[0], MPI_BYTE, a->recvbuf,
                            (count_t)a->counts[0], MPI_BYTE, comm->mpi));
#endif
    return RONDO_SUCCESS;
  }
  count_t *c = malloc((size_t)p * sizeof *c);
  displ_t *d = malloc((size_t)p * sizeof *d);
  rondo_status_t st = RONDO_SUCCESS;
  if (c == NULL || d == NULL) {
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "allgatherv: %d counts", p);
    goto out;
  }
  for (int i = 0; i < p; i++) {
    c[i] = (count_t)a->counts[i];
    d[i] = (displ_t)a->displs[i];
  }
#if MPI_VERSION >= 4
  MPI_CHECK_GOTO(MPI_Allgatherv_c(src, c[r], MPI_BYTE, a->recvbuf, c, d, MPI_BYTE, comm->mpi), st,
                 out);
#else
  MPI_CHECK_GOTO(MPI_Allgatherv(src, c[r], MPI_BYTE, a->recvbuf, c, d, MPI_BYTE, comm->mpi), st,
                 out);
#endif
out:
  free(c);
  free(d);
  return st;
}

static const char *cannot_run(const select_input_t *in)
{
#if MPI_VERSION < 4
  if (in->bytes > INT_MAX)
    return "a buffer above INT_MAX bytes needs an MPI-4 library (large counts)";
#else
  (void)in;
#endif
  return NULL;
}

/* Cost: MPICH's choice: recursive doubling for a power of two below
 * 512 KiB, Bruck below 80 KiB otherwise, the ring above; plus MPI's
 * per-call overhead; riding in the check, algo_inline_time. */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  if (in->mpi_check && in->bytes <= AGREE_INLINE_BYTES)
    return algo_inline_time(prm, in);
  double n = (double)in->bytes, t;
  int pof2 = (in->ranks & (in->ranks - 1)) == 0;
  if (pof2 && n < 512 * 1024)
    t = algo_ag_rd_time(prm, in, n);
  else if (!pof2 && n < 80 * 1024)
    t = algo_ag_bruck_time(prm, in, n);
  else
    t = algo_ag_ring_time(prm, in, n);
  return prm->mpi_alpha + t;
}

const algo_desc_t algo_ag_mpi = {
    .select = {.id = RONDO_ALGO_MPI, .name = "mpi", .mem = SELECT_MEM_HOST,
               .cannot_run = cannot_run, .cost = cost, .rides_check = AGREE_INLINE_BYTES},
    .collectives = ALGO_SERVES_ALLGATHER,
    .blocks = allgather_mpi,
};
