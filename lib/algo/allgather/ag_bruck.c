/*
 * Bruck's all-gather (Bruck et al., 1997; MPICH's choice for short messages
 * on rank counts that are not a power of two): ceil(lg p) steps for any p.
 * Rank r gathers into scratch in rotated order, its own block first, then
 * blocks r+1, r+2, ..; at distance d = 1, 2, 4, .. it sends the first
 * min(d, p-d) blocks it holds to rank r-d and appends as many from rank
 * r+d, which are the blocks that follow its own. A last pass copies the
 * rotated blocks to their places in recvbuf (n bytes more than the other
 * members move: the small-message member).
 */
#include "algo/common/blocks.h"

#include <string.h>

/* Bytes of rotated blocks [0, k) at rank r. */
static size_t rotated_bytes(const algo_blocks_args_t *a, int r, int k)
{
  size_t b = 0;
  for (int i = 0; i < k; i++)
    b += a->counts[(r + i) % a->comm->size];
  return b;
}

static rondo_status_t allgather_bruck(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  int p = comm->size, r = comm->rank;
  char *tmp = NULL;
  RONDO_CHECK(algo_check_message(a->total));
  RONDO_CHECK(algo_scratch(comm, a->total + 1, (void **)&tmp));
  if (a->counts[r] > 0) /* sendbuf may be NULL then */
    memcpy(tmp, a->sendbuf, a->counts[r]);
  for (int d = 1; d < p; d *= 2) {
    int k = d < p - d ? d : p - d, to = (r - d + p) % p, from = (r + d) % p;
    size_t have = rotated_bytes(a, r, d);
    RONDO_CHECK(algo_sendrecv(comm, tmp, rotated_bytes(a, r, k), to, tmp + have,
                              rotated_bytes(a, from, k), from));
  }
  size_t at = 0;
  for (int i = 0; i < p; i++) {
    int b = (r + i) % p;
    if (a->counts[b] > 0)
      memcpy(blocks_at(a, a->recvbuf, a->displs[b]), tmp + at, a->counts[b]);
    at += a->counts[b];
  }
  return RONDO_SUCCESS;
}

/* Cost: ceil(lg p) steps, step k moving min(2^k, p - 2^k) blocks, and the
 * rotation's copy of the whole buffer. */
double algo_ag_bruck_time(const select_params_t *prm, const select_input_t *in, double n)
{
  int p = in->ranks;
  double t = prm->copy_beta * n, block = n / p;
  for (int d = 1; d < p; d *= 2)
    t += select_step_time(prm, in, block * (d < p - d ? d : p - d), d);
  return t;
}

static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_ag_bruck_time(prm, in, (double)in->bytes);
}

const algo_desc_t algo_ag_bruck = {
    .select = {.id = RONDO_ALGO_BRUCK, .name = "bruck", .mem = SELECT_MEM_HOST, .cost = cost},
    .collectives = ALGO_SERVES_ALLGATHER,
    .blocks = allgather_bruck,
};
