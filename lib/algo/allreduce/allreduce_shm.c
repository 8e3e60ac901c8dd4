/*
 * Shared-memory all-reduce, for the ranks of one node: every rank copies its
 * input into its slot of a shared window, reduces its slice across all
 * ranks' slots, and copies every reduced slice out (shm.c has the protocol).
 *
 * Per rank it moves 2n bytes and reduces n(L-1)/L elements' worth with no
 * message at all: where MPI's point-to-point path copies each byte through
 * a bounce buffer per step, this copies it once in and once out. Chunks of
 * RONDO_SHM_CHUNK_BYTES are pipelined through 4 slots per rank with per-slot
 * sequence flags, so ranks never meet at a barrier per chunk. Each slice is
 * reduced once, in rank order, and then copied: every rank ends with the
 * same bytes. Needs every rank of the comm on one node.
 */
#include "algo/common/shm.h"

static rondo_status_t allreduce_shm(const algo_allreduce_args_t *a)
{
  return shm_run(a, SHM_ALLREDUCE);
}

/* Cost: 2 shm alphas (copied in, reduced) + shm beta * 2n (copy in, copy
 * out) + shm gamma * n (each rank reduces n/L bytes of L inputs: it reads
 * n). A small call (shm_reduces_whole) waits once and reduces all of it on
 * every rank: 1 alpha + beta * n + gamma * n L. */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  const select_level_t *sh = &prm->shm;
  double n = (double)in->bytes;
  if (shm_reduces_whole(in->count, in->bytes, in->max_local))
    return sh->alpha + n * sh->beta + n * in->max_local * sh->gamma;
  return 2 * sh->alpha + 2 * n * sh->beta + n * sh->gamma;
}

static const char *cannot_run(const select_input_t *in)
{
  return in->nodes != 1 ? "ranks span more than one node (use hierarchical)" : NULL;
}

const algo_desc_t algo_shm = {
    .select = {.id = RONDO_ALGO_SHM, .name = "shm", .mem = SELECT_MEM_HOST,
               .cannot_run = cannot_run, .cost = cost},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = allreduce_shm,
};
