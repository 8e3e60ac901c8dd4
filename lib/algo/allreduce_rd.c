/*
 * Recursive-doubling all-reduce: lg(p) rounds; in round k each rank swaps
 * its whole buffer with the rank 2^k away and reduces. Latency-optimal
 * (lg p messages) but every round moves the full buffer, so it suits small
 * messages. Non-powers of two are folded first (fold.c).
 *
 * Bit-identical results: both partners reduce (lower rank's data) op (higher
 * rank's data), and by induction all ranks of a group hold the same bytes.
 */
#include "algo.h"

rondo_status_t algo_allreduce_rd(const algo_allreduce_args_t *a)
{
  rondo_comm_t comm = a->comm;
  size_t bytes = a->count * a->esize;
  void *tmp;
  int newrank;

  algo_copy_input(a);
  if (comm->size == 1)
    return RONDO_SUCCESS;
  RONDO_CHECK(algo_check_message(bytes));
  RONDO_CHECK(rondo__scratch(comm, bytes, &tmp));
  RONDO_CHECK(algo_fold_in(a, a->recvbuf, tmp, &newrank));
  if (newrank >= 0) {
    for (int mask = 1; mask < comm->pof2; mask <<= 1) {
      int peer = algo_fold_rank(a, newrank ^ mask);
      RONDO_CHECK(algo_sendrecv(comm, a->recvbuf, bytes, peer, tmp, bytes, peer));
      algo_reduce_ordered(a->recvbuf, a->recvbuf, tmp, a->count, a, peer);
    }
  }
  return algo_fold_out(a, a->recvbuf, newrank);
}
