/*
 * Pairwise-exchange reduce-scatter (MPICH's choice for long messages): in
 * step s = 1 .. p-1 rank r sends block r+s of its input to rank r+s and
 * receives its own block's contribution from rank r-s, which it reduces
 * into its result. Every rank sends and reduces (p-1)/p of the buffer, the
 * minimum, in p-1 latencies; nothing is forwarded, so a step depends on no
 * other rank's earlier step and the memory beside the result is two
 * blocks.
 *
 * The receive of step s+1 is posted before step s is reduced, so the
 * reduction of one block overlaps the transfer of the next. Empty blocks
 * send nothing (every rank knows every count).
 */
#include "algo/common/blocks.h"

#include <string.h>

#include "reduce/reduce.h"

/* Posts step s's exchange: block (r + s) % p of sendbuf to that rank, and
 * this rank's block from (r - s) % p into tmp. */
static rondo_status_t post(const algo_blocks_args_t *a, int s, void *tmp, MPI_Request req[2])
{
  rondo_comm_t comm = a->comm;
  int p = comm->size, r = comm->rank, to = (r + s) % p, from = (r - s + p) % p;
  req[0] = req[1] = MPI_REQUEST_NULL;
  size_t mine = a->counts[r] * a->esize, theirs = a->counts[to] * a->esize;
  if (mine > 0)
    RONDO_CHECK(algo_irecv(comm, tmp, mine, from, &req[0]));
  if (theirs > 0) {
    rondo_status_t st =
        algo_isend(comm, blocks_at(a, a->sendbuf, a->displs[to]), theirs, to, &req[1]);
    if (st != RONDO_SUCCESS) {
      algo_abandon(1, &req[0], 0, NULL);
      return st;
    }
  }
  return RONDO_SUCCESS;
}

static rondo_status_t reduce_scatter_pairwise(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  int p = comm->size, r = comm->rank;
  size_t mine = a->counts[r], bytes = mine * a->esize;
  char *tmp = NULL;
  RONDO_CHECK(algo_check_message(blocks_max(a) * a->esize));
  RONDO_CHECK(algo_scratch(comm, 2 * bytes + 1, (void **)&tmp));
  if (bytes > 0)
    memcpy(a->recvbuf, blocks_at(a, a->sendbuf, a->displs[r]), bytes);
  MPI_Request req[2][2];
  rondo_status_t st = post(a, 1, tmp + bytes, req[1]);
  for (int s = 1; s < p && st == RONDO_SUCCESS; s++) {
    MPI_Request *now = req[s % 2];
    if (s + 1 < p && (st = post(a, s + 1, tmp + ((s + 1) % 2) * bytes, req[(s + 1) % 2])) !=
                         RONDO_SUCCESS) {
      algo_abandon(1, &now[0], 1, &now[1]);
      break;
    }
    st = algo_waitall(comm, 2, now);
    if (st != RONDO_SUCCESS && s + 1 < p)
      algo_abandon(1, &req[(s + 1) % 2][0], 1, &req[(s + 1) % 2][1]);
    if (st == RONDO_SUCCESS && mine > 0)
      reduce_apply(a->recvbuf, a->recvbuf, tmp + (s % 2) * bytes, mine, a->dtype, a->op);
  }
  return st;
}

/* Cost: p-1 steps of one block (n/p bytes, at the distance of the step's
 * partner) and its reduction: every rank receives and reduces (p-1)/p of
 * the buffer, and the reduction of one step overlaps the next transfer but
 * for the last. */
double algo_rs_pairwise_time(const select_params_t *prm, const select_input_t *in, double n)
{
  int p = in->ranks;
  double block = n / p, t = 0;
  for (int s = 1; s < p; s++)
    t += select_step_time(prm, in, block, s);
  return t + select_p2p_level(prm, in)->gamma * block;
}

static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_rs_pairwise_time(prm, in, (double)in->bytes);
}

const algo_desc_t algo_rs_pairwise = {
    .select = {.id = RONDO_ALGO_PAIRWISE, .name = "pairwise", .mem = SELECT_MEM_HOST,
               .cost = cost},
    .collectives = ALGO_SERVES_REDUCE_SCATTER,
    .blocks = reduce_scatter_pairwise,
};
