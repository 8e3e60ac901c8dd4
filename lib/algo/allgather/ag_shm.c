/*
 * Shared-memory all-gather, for the ranks of one node: the second half of
 * the shm all-reduce, with rank r's block as its slice. Every rank copies
 * its block into its slots of the node's shared window and copies every
 * peer's block out of theirs: each byte crosses memory once in and once
 * per reader, with no message. Pipelined through the window's slots in
 * chunks of RONDO_SHM_CHUNK_BYTES (shm.c has the protocol). Needs every
 * rank of the comm on one node.
 */
#include "algo/common/blocks.h"
#include "algo/common/shm.h"

static rondo_status_t allgather_shm(const algo_blocks_args_t *a)
{
  return shm_run_blocks(a, SHM_ALLGATHER, NULL);
}

/* Cost: 2 shm alphas (posted, then read) + shm beta * n (n/L copied in,
 * n (L-1)/L copied out; this rank's block into place is a local copy of
 * n/L, left out as the shm all-reduce's model leaves its own copies
 * out: the shm level was fitted to whole calls, cost.c). */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  const select_level_t *sh = &prm->shm;
  return 2 * sh->alpha + (double)in->bytes * sh->beta;
}

static const char *cannot_run(const select_input_t *in)
{
  return in->nodes != 1 ? "ranks span more than one node" : NULL;
}

const algo_desc_t algo_ag_shm = {
    .select = {.id = RONDO_ALGO_SHM, .name = "shm", .mem = SELECT_MEM_HOST,
               .cannot_run = cannot_run, .cost = cost},
    .collectives = ALGO_SERVES_ALLGATHER,
    .blocks = allgather_shm,
};
