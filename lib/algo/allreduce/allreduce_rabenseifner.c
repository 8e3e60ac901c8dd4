/*
 * Rabenseifner's all-reduce: a reduce-scatter by recursive halving followed
 * by an allgather by recursive doubling (Thakur, Rabenseifner and Gropp,
 * 2005). The halving starts with the nearest partner (distance 1) and the
 * doubling ends with it, as MPICH's does: when ranks sit on nodes in
 * blocks, the big halves stay inside the node and only the small pieces
 * cross the network. Each rank sends and receives about 2 (p-1)/p of the buffer in
 * 2 lg p messages: bandwidth-optimal like the ring with far fewer steps, so
 * it wins at medium sizes. Non-powers of two are folded first (fold.c).
 *
 * The buffer is cut into pof2 blocks (sizes differ by at most one element);
 * a rank owns a contiguous range of blocks that halves each round, so it
 * needs count >= pof2: smaller inputs fall back to recursive doubling.
 * Each block's final value is computed once (by the rank that owns it after
 * the reduce-scatter) and then copied, so all ranks hold identical bytes.
 */
#include "algo/common/algo.h"

#include "base/numbers.h"

/* Element offset of block b of pof2 blocks. */
static size_t block_start(const algo_allreduce_args_t *a, int b)
{
  size_t pof2 = (size_t)a->comm->pof2;
  size_t base = a->count / pof2, extra = a->count % pof2;
  return (size_t)b * base + ((size_t)b < extra ? (size_t)b : extra);
}

/* Byte pointer and byte length of blocks [lo, hi). */
#define RANGE_PTR(a, lo) ((char *)(a)->recvbuf + block_start(a, lo) * (a)->esize)
#define RANGE_BYTES(a, lo, hi) ((block_start(a, hi) - block_start(a, lo)) * (a)->esize)

static rondo_status_t reduce_scatter_halving(const algo_allreduce_args_t *a, int newrank,
                                             void *tmp, int *lo_out, int *hi_out)
{
  int lo = 0, hi = a->comm->pof2;
  for (int mask = 1; mask < a->comm->pof2; mask <<= 1) {
    int peer = algo_fold_rank(a, newrank ^ mask);
    int mid = lo + (hi - lo) / 2;
    int keep_lo = (newrank & mask) ? mid : lo, keep_hi = (newrank & mask) ? hi : mid;
    int send_lo = (newrank & mask) ? lo : mid, send_hi = (newrank & mask) ? mid : hi;
    RONDO_CHECK(algo_sendrecv(a->comm, RANGE_PTR(a, send_lo), RANGE_BYTES(a, send_lo, send_hi),
                              peer, tmp, RANGE_BYTES(a, keep_lo, keep_hi), peer));
    size_t n = block_start(a, keep_hi) - block_start(a, keep_lo);
    char *keep = RANGE_PTR(a, keep_lo);
    algo_reduce_ordered(keep, keep, tmp, n, a, peer);
    lo = keep_lo;
    hi = keep_hi;
  }
  *lo_out = lo;
  *hi_out = hi;
  return RONDO_SUCCESS;
}

static rondo_status_t allgather_doubling(const algo_allreduce_args_t *a, int newrank,
                                         int lo, int hi)
{
  for (int mask = a->comm->pof2 >> 1; mask > 0; mask >>= 1) {
    int peer = algo_fold_rank(a, newrank ^ mask);
    int width = hi - lo;
    int plo = (newrank & mask) ? lo - width : hi;
    int phi = plo + width;
    RONDO_CHECK(algo_sendrecv(a->comm, RANGE_PTR(a, lo), RANGE_BYTES(a, lo, hi), peer,
                              RANGE_PTR(a, plo), RANGE_BYTES(a, plo, phi), peer));
    lo = lo < plo ? lo : plo;
    hi = hi > phi ? hi : phi;
  }
  return RONDO_SUCCESS;
}

static rondo_status_t allreduce_rabenseifner(const algo_allreduce_args_t *a)
{
  rondo_comm_t comm = a->comm;
  void *tmp;
  int newrank, lo, hi;

  if (a->count < (size_t)comm->pof2) {
    LOG_DEBUG("rabenseifner needs count >= %d (largest power of two <= %d ranks), "
              "got %zu: falling back to recursive doubling",
              comm->pof2, comm->size, a->count);
    return algo_recursive_doubling.allreduce(a);
  }
  algo_copy_input(a);
  if (comm->size == 1)
    return RONDO_SUCCESS;
  RONDO_CHECK(algo_check_message(a->count * a->esize)); /* the fold sends it all */
  RONDO_CHECK(algo_scratch(comm, a->count * a->esize, &tmp));
  RONDO_CHECK(algo_fold_in(a, a->recvbuf, tmp, &newrank));
  if (newrank >= 0) {
    RONDO_CHECK(reduce_scatter_halving(a, newrank, tmp, &lo, &hi));
    RONDO_CHECK(allgather_doubling(a, newrank, lo, hi));
  }
  return algo_fold_out(a, a->recvbuf, newrank);
}

/* Cost: a halving and a doubling step of n/2 at distance 1, n/4 at
 * distance 2, .., n/p' at distance p'/2 (+2 fold steps of n), each priced
 * by select_step_time, plus gamma * (n (p'-1)/p' (+n)) and the input copy.
 * The big halves go to the nearest ranks, on the same node when ranks sit
 * on nodes in blocks, so only the small ones cross the network. */
double algo_rab_time(const select_params_t *prm, const select_input_t *in, double n,
                     double copy)
{
  int pof2 = rondo__pof2_floor(in->ranks);
  int fold = in->ranks != pof2;
  double share = (double)(pof2 - 1) / pof2;
  double t = copy * n + prm->intra.gamma * (n * share + (fold ? n : 0));
  if (fold)
    t += 2 * select_step_time(prm, in, n, 1);
  double part = n;
  for (int mask = 1; mask < pof2; mask <<= 1) {
    part /= 2;
    t += 2 * select_step_time(prm, in, part, mask); /* a halving and a doubling step */
  }
  return t;
}

static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_rab_time(prm, in, (double)in->bytes, prm->copy_beta);
}

static const char *not_chosen(const select_input_t *in)
{
  if (in->count < (size_t)rondo__pof2_floor(in->ranks))
    return "count < largest power of two <= ranks";
  return NULL;
}

const algo_desc_t algo_rabenseifner = {
    .select = {.id = RONDO_ALGO_RABENSEIFNER, .name = "rabenseifner",
               .mem = SELECT_MEM_HOST, .not_chosen = not_chosen, .cost = cost},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = allreduce_rabenseifner,
};
