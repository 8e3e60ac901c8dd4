/*
 * Shared-memory reduce-scatter, for the ranks of one node: the first half
 * of the shm all-reduce, with rank r's block as its slice. Every rank
 * copies the others' blocks of its input into its slots of the node's
 * shared window, and reduces its own block straight from every peer's
 * slot (its own part from its sendbuf) into recvbuf, in rank order. No
 * message at all: each byte is copied once into shared memory and read
 * once by its owner, where MPI's point-to-point path copies it through a
 * bounce buffer per step. Pipelined through the window's slots in chunks
 * of RONDO_SHM_CHUNK_BYTES (shm.c has the protocol). In place (recvbuf at
 * this rank's block of sendbuf) it needs no scratch: a rank's own input is
 * read in the first reduction of each piece, before the result lands on
 * it (ranks 0 and 1), or copied into its slot first (the others). Needs
 * every rank of the comm on one node.
 */
#include "algo/common/blocks.h"
#include "algo/common/shm.h"

static rondo_status_t reduce_scatter_shm(const algo_blocks_args_t *a)
{
  return shm_run_blocks(a, SHM_REDUCE_SCATTER, NULL);
}

/* Cost: 2 shm alphas (the data posted, then the slot free again) + shm beta
 * * n (L-1)/L (the others' blocks copied in) + shm gamma * n (this rank's
 * block, n/L, reduced from L inputs: it reads n). */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  const select_level_t *sh = &prm->shm;
  double n = (double)in->bytes, l = in->max_local;
  return 2 * sh->alpha + n * (l - 1) / l * sh->beta + n * sh->gamma;
}

static const char *cannot_run(const select_input_t *in)
{
  return in->nodes != 1 ? "ranks span more than one node" : NULL;
}

const algo_desc_t algo_rs_shm = {
    .select = {.id = RONDO_ALGO_SHM, .name = "shm", .mem = SELECT_MEM_HOST,
               .cannot_run = cannot_run, .cost = cost},
    .collectives = ALGO_SERVES_REDUCE_SCATTER,
    .blocks = reduce_scatter_shm,
    .blocks_in_place = 1, /* shm.c: in place, ranks from 2 copy their own pieces in */
};
