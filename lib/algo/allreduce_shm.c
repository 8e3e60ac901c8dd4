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
#include "algo/shm.h"

#include "topo/topo.h"

rondo_status_t algo_allreduce_shm(const algo_allreduce_args_t *a)
{
  if (a->comm->topo->node_count != 1)
    return rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "shm all-reduce needs every rank on one node; this comm spans %d "
                       "nodes (use hierarchical)",
                       a->comm->topo->node_count);
  return shm_run(a, SHM_ALLREDUCE);
}
