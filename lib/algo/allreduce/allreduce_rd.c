/*
 * Recursive-doubling all-reduce: lg(p) rounds; in round k each rank swaps
 * its whole buffer with the rank 2^k away and reduces. Latency-optimal
 * (lg p messages) but every round moves the full buffer, so it suits small
 * messages. Non-powers of two are folded first (fold.c).
 *
 * Bit-identical results: both partners reduce (lower rank's data) op (higher
 * rank's data), and by induction all ranks of a group hold the same bytes.
 */
#include "algo/algo.h"

#include "base/numbers.h"

rondo_status_t algo_rd_allreduce(const algo_allreduce_args_t *a)
{
  rondo_comm_t comm = a->comm;
  size_t bytes = a->count * a->esize;
  void *tmp;
  int newrank;

  algo_copy_input(a);
  if (comm->size == 1)
    return RONDO_SUCCESS;
  RONDO_CHECK(algo_check_message(bytes));
  RONDO_CHECK(algo_scratch(comm, bytes, &tmp));
  RONDO_CHECK(algo_fold_in(a, a->recvbuf, tmp, &newrank));
  if (newrank >= 0) {
    for (int mask = 1; mask < comm->pof2; mask <<= 1) {
      int peer = algo_fold_rank(comm, newrank ^ mask);
      RONDO_CHECK(algo_sendrecv(comm, a->recvbuf, bytes, peer, tmp, bytes, peer));
      algo_reduce_ordered(a->recvbuf, a->recvbuf, tmp, a->count, a, peer);
    }
  }
  return algo_fold_out(a, a->recvbuf, newrank);
}

/* Cost: lg p' steps of n at distances 1, 2, 4, .. (+2 folding steps of n
 * between neighbours when p != p'), each priced by select_step_time (inside
 * a node, or across with the node's crossing ranks sharing its link), plus
 * gamma * n * (lg p' (+1)) and the input copy. */
double algo_rd_time(const select_params_t *prm, const select_input_t *in, double n,
                    double copy)
{
  int pof2 = rondo__pof2_floor(in->ranks), lg = rondo__log2(pof2);
  int fold = in->ranks != pof2;
  return copy * n + prm->intra.gamma * n * (lg + fold) + select_rd_steps_time(prm, in, n);
}

static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_rd_time(prm, in, (double)in->bytes, prm->copy_beta);
}

const algo_desc_t algo_recursive_doubling = {
    .select = {.id = RONDO_ALGO_RECURSIVE_DOUBLING, .name = "recursive_doubling",
               .mem = SELECT_MEM_HOST, .cost = cost},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = algo_rd_allreduce,
};
