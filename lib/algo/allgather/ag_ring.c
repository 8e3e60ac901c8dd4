/*
 * Ring all-gather: the second half of the ring all-reduce. In step
 * t = 0 .. p-2 rank r sends block r-t to its right neighbour and receives
 * block r-t-1 from its left, straight into its place in recvbuf. Every
 * rank sends and receives (p-1)/p of the buffer, the minimum, and talks to
 * its two neighbours only: across nodes one stream per node link and step.
 * p-1 latencies: the large-message member.
 */
#include "algo/common/blocks.h"

#include <string.h>

static rondo_status_t allgather_ring(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  int p = comm->size, r = comm->rank, left = (r + p - 1) % p, right = (r + 1) % p;
  char *own = blocks_at(a, a->recvbuf, a->displs[r]);
  RONDO_CHECK(algo_check_message(blocks_max(a)));
  if (own != (const char *)a->sendbuf && a->counts[r] > 0)
    memcpy(own, a->sendbuf, a->counts[r]);
  for (int t = 0; t < p - 1; t++) {
    int sb = (r - t + p) % p, rb = (r - t - 1 + p) % p;
    RONDO_CHECK(algo_sendrecv(comm, blocks_at(a, a->recvbuf, a->displs[sb]), a->counts[sb],
                              right, blocks_at(a, a->recvbuf, a->displs[rb]), a->counts[rb],
                              left));
  }
  return RONDO_SUCCESS;
}

/* Cost: p-1 steps of one block (n/p bytes) each. */
double algo_ag_ring_time(const select_params_t *prm, const select_input_t *in, double n)
{
  const select_level_t *lv = select_p2p_level(prm, in);
  double block = n / in->ranks;
  return (in->ranks - 1) * (select_msg_alpha(lv, block) + lv->beta * block);
}

static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_ag_ring_time(prm, in, (double)in->bytes);
}

const algo_desc_t algo_ag_ring = {
    .select = {.id = RONDO_ALGO_RING, .name = "ring", .mem = SELECT_MEM_HOST, .cost = cost},
    .collectives = ALGO_SERVES_ALLGATHER,
    .blocks = allgather_ring,
};
