/*
 * MPI's own reduce-scatter, as one member of the family:
 * MPI_Reduce_scatter_block for equal blocks, MPI_Reduce_scatter for a
 * count per rank, with the datatype and op mapping of p2p.c (user ops over
 * rondo's kernels for float16/bfloat16 and floating MIN/MAX). A block is
 * limited to INT_MAX elements: user-defined ops take int counts. A call
 * of at most AGREE_INLINE_BYTES across nodes travels inside the argument
 * check's exchange instead, the whole input reduced there as an
 * all-reduce's (packet.c), so the check and the data cost one
 * exchange; each rank keeps its block.
 */
#include "algo/common/blocks.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static rondo_status_t reduce_scatter_mpi(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  if (a->agree != NULL) { /* small, across nodes: the data rides in the check */
    unsigned char all[AGREE_INLINE_BYTES];
    agree_inline_t d = {.count = a->total, .dtype = a->dtype, .op = a->op, .in = a->sendbuf,
                        .in_bytes = a->total * a->esize, .out = all};
    int rode = 0;
    RONDO_CHECK(agree_inline(comm, a->agree, &d, &rode));
    if (rode) {
      size_t mine = a->counts[comm->rank] * a->esize;
      if (mine > 0)
        memcpy(a->recvbuf, all + a->displs[comm->rank] * a->esize, mine);
      return RONDO_SUCCESS;
    }
  }
  MPI_Datatype mtype;
  MPI_Op mop;
  RONDO_CHECK(algo_mpi_op(a->dtype, a->op, &mtype, &mop));
  int equal = 1;
  for (int i = 1; i < comm->size; i++)
    equal = equal && a->counts[i] == a->counts[0];
  char none; /* MPI wants a buffer even for no elements */
  void *out = a->counts[comm->rank] > 0 ? a->recvbuf : &none;
  if (equal) {
    MPI_CHECK(MPI_Reduce_scatter_block(a->sendbuf, out, (int)a->counts[0], mtype, mop,
                                       comm->mpi));
    return RONDO_SUCCESS;
  }
  int *counts = malloc((size_t)comm->size * sizeof *counts);
  if (counts == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "reduce-scatter: %d counts", comm->size);
  for (int i = 0; i < comm->size; i++)
    counts[i] = (int)a->counts[i]; /* cannot_run: every count fits */
  rondo_status_t st = RONDO_SUCCESS;
  MPI_CHECK_GOTO(MPI_Reduce_scatter(a->sendbuf, out, counts, mtype, mop, comm->mpi), st, out);
out:
  free(counts);
  return st;
}

static const char *cannot_run(const select_input_t *in)
{
  return in->block_max > INT_MAX ? "a block above INT_MAX elements (MPI's user ops take int "
                                   "counts)"
                                 : NULL;
}

/* Cost: MPICH's choice for a commutative op, recursive halving below
 * 512 KiB and pairwise exchange above (algo_rs_halving_time,
 * algo_rs_pairwise_time), plus MPI's per-call overhead; riding in the
 * check, algo_inline_time. */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  if (in->mpi_check && in->bytes <= AGREE_INLINE_BYTES)
    return algo_inline_time(prm, in);
  double n = (double)in->bytes;
  double t = n < 512 * 1024 ? algo_rs_halving_time(prm, in, n) : algo_rs_pairwise_time(prm, in, n);
  return prm->mpi_alpha + t;
}

const algo_desc_t algo_rs_mpi = {
    .select = {.id = RONDO_ALGO_MPI, .name = "mpi", .mem = SELECT_MEM_HOST,
               .cannot_run = cannot_run, .cost = cost, .rides_check = AGREE_INLINE_BYTES},
    .collectives = ALGO_SERVES_REDUCE_SCATTER,
    .blocks = reduce_scatter_mpi,
};
