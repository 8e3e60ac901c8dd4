/*
 * Recursive-halving reduce-scatter (Thakur, Rabenseifner and Gropp, 2005;
 * MPICH's choice below 512 KiB): lg p steps, the first half of
 * Rabenseifner's all-reduce. At distance d = p/2, p/4, .., 1 each rank
 * holds the partial sums of a range of blocks; it keeps the half of the
 * range that holds its own block, sends the other half to the rank d away
 * (whose range is the same) and adds that rank's copy of its half. It
 * sends and reduces (p-1)/p of the buffer in lg p latencies: the small-
 * message member.
 *
 * A comm that is not a power of two folds first (fold.c's pairing): the
 * even rank of each of the first rem pairs sends its whole input to the
 * odd one and sits out; new rank i < rem then stands for the blocks of
 * ranks 2i and 2i+1, the others for one block each, so every new rank's
 * blocks stay contiguous and halving splits them by new ranks. At the end
 * the odd rank sends the even one its block.
 */
#include "algo/common/blocks.h"

#include <string.h>

#include "base/numbers.h"
#include "reduce/reduce.h"

/* The first real block new rank nr stands for (nr = pof2: p). */
static int first_block(rondo_comm_t comm, int nr)
{
  int rem = comm->size - comm->pof2;
  return nr < rem ? 2 * nr : nr + rem;
}

/* Elements [*off, *off + *n) of the blocks new ranks [lo, hi) stand for. */
static void span(const algo_blocks_args_t *a, int lo, int hi, size_t *off, size_t *n)
{
  *off = a->displs[first_block(a->comm, lo)];
  *n = a->displs[first_block(a->comm, hi)] - *off;
}

static rondo_status_t exchange(const algo_blocks_args_t *a, const void *sbuf, size_t sn,
                               void *rbuf, size_t rn, int peer)
{
  MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  if (rn > 0)
    RONDO_CHECK(algo_irecv(a->comm, rbuf, rn * a->esize, peer, &req[0]));
  if (sn > 0) {
    rondo_status_t st = algo_isend(a->comm, sbuf, sn * a->esize, peer, &req[1]);
    if (st != RONDO_SUCCESS) {
      algo_abandon(1, &req[0], 0, NULL);
      return st;
    }
  }
  return algo_waitall(a->comm, 2, req);
}

static rondo_status_t reduce_scatter_halving(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  int rank = comm->rank, rem = comm->size - comm->pof2;
  size_t es = a->esize, bytes = a->total * es;
  char *work = NULL, *tmp;
  RONDO_CHECK(algo_check_message(bytes));
  RONDO_CHECK(algo_scratch(comm, 2 * bytes, (void **)&work));
  tmp = work + bytes;
  memcpy(work, a->sendbuf, bytes);

  /* fold: the even rank of a pair hands its input to the odd one */
  int nr = rank >= 2 * rem ? rank - rem : rank % 2 ? rank / 2 : -1;
  if (rank < 2 * rem && nr < 0)
    RONDO_CHECK(exchange(a, work, a->total, NULL, 0, rank + 1));
  if (rank < 2 * rem && nr >= 0) {
    RONDO_CHECK(exchange(a, NULL, 0, tmp, a->total, rank - 1));
    reduce_apply(work, tmp, work, a->total, a->dtype, a->op);
  }

  if (nr >= 0) {
    int lo = 0, hi = comm->pof2;
    for (int d = comm->pof2 / 2; d >= 1; d /= 2) {
      int peer_nr = nr ^ d, mid = lo + d;
      int keep_lo = nr < mid ? lo : mid, keep_hi = nr < mid ? mid : hi;
      int give_lo = nr < mid ? mid : lo, give_hi = nr < mid ? hi : mid;
      size_t koff, kn, goff, gn;
      span(a, keep_lo, keep_hi, &koff, &kn);
      span(a, give_lo, give_hi, &goff, &gn);
      RONDO_CHECK(exchange(a, work + goff * es, gn, tmp, kn, algo_fold_rank(comm, peer_nr)));
      /* the lower-ranked partial sum first, on both sides of the pair */
      if (kn > 0) {
        if (nr < peer_nr)
          reduce_apply(work + koff * es, work + koff * es, tmp, kn, a->dtype, a->op);
        else
          reduce_apply(work + koff * es, tmp, work + koff * es, kn, a->dtype, a->op);
      }
      lo = keep_lo;
      hi = keep_hi;
    }
  }

  /* unfold: the odd rank sends the even one its block */
  if (rank < 2 * rem && nr < 0)
    return exchange(a, NULL, 0, a->recvbuf, a->counts[rank], rank + 1);
  if (rank < 2 * rem)
    RONDO_CHECK(exchange(a, work + a->displs[rank - 1] * es, a->counts[rank - 1], NULL, 0,
                         rank - 1));
  if (a->counts[rank] > 0) /* recvbuf may be NULL then */
    memcpy(a->recvbuf, work + a->displs[rank] * es, a->counts[rank] * es);
  return RONDO_SUCCESS;
}

/* Cost: lg p' exchange steps on halves of the buffer (n/2, n/4, ..) at
 * their butterfly distances, reducing as much, plus the input copy and,
 * off a power of two, the fold (the whole buffer there, its reduction, and
 * a block back). */
double algo_rs_halving_time(const select_params_t *prm, const select_input_t *in, double n)
{
  int pof2 = rondo__pof2_floor(in->ranks);
  double t = prm->copy_beta * n, half = n, gamma = select_p2p_level(prm, in)->gamma;
  if (pof2 != in->ranks)
    t += select_step_time(prm, in, n, 1) + gamma * n + select_step_time(prm, in, n / in->ranks, 1);
  for (int d = pof2 / 2; d >= 1; d /= 2) {
    half /= 2;
    t += select_step_time(prm, in, half, d) + gamma * half;
  }
  return t;
}

static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_rs_halving_time(prm, in, (double)in->bytes);
}

const algo_desc_t algo_rs_halving = {
    .select = {.id = RONDO_ALGO_RECURSIVE_HALVING, .name = "recursive_halving",
               .mem = SELECT_MEM_HOST, .cost = cost},
    .collectives = ALGO_SERVES_REDUCE_SCATTER,
    .blocks = reduce_scatter_halving,
};
