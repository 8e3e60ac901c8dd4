/*
 * Recursive-halving reduce-scatter (Thakur, Rabenseifner and Gropp, 2005;
 * MPICH's choice below 512 KiB): lg p steps, the first half of
 * Rabenseifner's all-reduce. At distance d = 1, 2, .., p/2 each rank holds
 * the partial sums of a range of blocks; it keeps the half of the range
 * that its own block ends in, sends the other half to the rank d away
 * (whose range is the same) and adds that rank's copy of its half. It
 * sends and reduces (p-1)/p of the buffer in lg p latencies: the
 * small-message member.
 *
 * Nearest partner first, as Rabenseifner's halving (and unlike MPICH's,
 * which starts at p/2): where ranks sit on nodes in blocks the big halves
 * stay inside the node, and the steps are those of the argument check's
 * exchange (exchange.c), so the halving can carry the check. Halving
 * a range by the lowest bit of the rank first ends with rank r at position
 * reverse(r) of the range, so the input is laid out in scratch with new
 * rank reverse(j)'s blocks at position j (one pass over it, the copy the
 * halving makes anyway): each rank ends with its own blocks.
 *
 * A comm that is not a power of two folds first (fold.c's pairing): the
 * even rank of each of the first rem pairs sends its whole input to the
 * odd one and sits out; new rank i < rem then stands for the blocks of
 * ranks 2i and 2i+1, the others for one block each. At the end the odd
 * rank sends the even one its block.
 *
 * Where the check's exchange is rondo's own (agree_by_exchange) the
 * halving carries the argument check (a->agree): each step's half travels
 * with its packet (the rider, exchange.h), and the check costs no
 * round of its own. Everything happens in scratch until the check has
 * passed, so a failed call leaves recvbuf as it was.
 */
#include "algo/common/blocks.h"

#include <stdlib.h>
#include <string.h>

#include "algo/agree/exchange.h"
#include "base/numbers.h"
#include "reduce/reduce.h"

/* The first real block new rank nr stands for (nr = pof2: p). */
static int first_block(rondo_comm_t comm, int nr)
{
  int rem = comm->size - comm->pof2;
  return nr < rem ? 2 * nr : nr + rem;
}

/* j's low s bits in reverse order. */
static int reverse_bits(int j, int s)
{
  int r = 0;
  for (int i = 0; i < s; i++)
    r |= ((j >> i) & 1) << (s - 1 - i);
  return r;
}

/* The halving's state; first its rider, for the check's exchange. */
typedef struct {
  agree_rider_t rider;
  const algo_blocks_args_t *a;
  size_t *at;  /* [pof2 + 1] element offsets in work of positions 0..pof2 */
  char *work;  /* the partial sums, laid out by position */
  char *tmp;   /* a partner's half */
  int nr;      /* new rank after the fold; -1: folded onto rank + 1 */
  int lo, hi;  /* the positions this rank still reduces */
  int steps;   /* steps received, the fold's included */
} halving_t;

/* Positions this rank sends and keeps in step mask (0: the fold, where the
 * rank folded away sends them all and its neighbour keeps them all). */
static void ranges(const halving_t *h, int mask, int *send_lo, int *send_hi, int *keep_lo,
                   int *keep_hi)
{
  if (mask == 0) {
    *send_lo = *keep_lo = 0;
    *send_hi = *keep_hi = h->a->comm->pof2;
    return;
  }
  int mid = h->lo + (h->hi - h->lo) / 2, upper = (h->nr & mask) != 0;
  *keep_lo = upper ? mid : h->lo;
  *keep_hi = upper ? h->hi : mid;
  *send_lo = upper ? h->lo : mid;
  *send_hi = upper ? mid : h->hi;
}

static void halving_send_buf(agree_rider_t *r, int mask, const void **buf, size_t *bytes)
{
  halving_t *h = (halving_t *)r;
  int slo, shi, klo, khi;
  ranges(h, mask, &slo, &shi, &klo, &khi);
  *buf = blocks_at(h->a, h->work, h->at[slo]);
  *bytes = (h->at[shi] - h->at[slo]) * h->a->esize;
}

static void halving_recv_buf(agree_rider_t *r, int mask, void **buf, size_t *bytes)
{
  halving_t *h = (halving_t *)r;
  int slo, shi, klo, khi;
  ranges(h, mask, &slo, &shi, &klo, &khi);
  *buf = h->tmp;
  *bytes = (h->at[khi] - h->at[klo]) * h->a->esize;
}

/* After peer's half is in tmp: work's kept positions = the lower-ranked
 * partial sum (op) the other, on both sides of the pair alike. */
static void halving_reduce(agree_rider_t *r, int mask, int peer)
{
  halving_t *h = (halving_t *)r;
  const algo_blocks_args_t *a = h->a;
  int slo, shi, klo, khi;
  ranges(h, mask, &slo, &shi, &klo, &khi);
  size_t n = h->at[khi] - h->at[klo];
  char *mine = blocks_at(a, h->work, h->at[klo]);
  if (n > 0) {
    if (peer < a->comm->rank)
      reduce_apply(mine, h->tmp, mine, n, a->dtype, a->op);
    else
      reduce_apply(mine, mine, h->tmp, n, a->dtype, a->op);
  }
  h->lo = klo;
  h->hi = khi;
  h->steps++;
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

/* The fold and the halving on their own (the check done before). */
static rondo_status_t halving_alone(halving_t *h)
{
  const algo_blocks_args_t *a = h->a;
  rondo_comm_t comm = a->comm;
  int rank = comm->rank, rem = comm->size - comm->pof2;
  if (h->nr < 0) /* fold: the even rank of a pair hands its input to the odd one */
    return exchange(a, h->work, a->total, NULL, 0, rank + 1);
  if (rank < 2 * rem) {
    RONDO_CHECK(exchange(a, NULL, 0, h->tmp, a->total, rank - 1));
    halving_reduce(&h->rider, 0, rank - 1);
  }
  for (int mask = 1; mask < comm->pof2; mask <<= 1) {
    int peer = algo_fold_rank(comm, h->nr ^ mask), slo, shi, klo, khi;
    ranges(h, mask, &slo, &shi, &klo, &khi);
    RONDO_CHECK(exchange(a, blocks_at(a, h->work, h->at[slo]), h->at[shi] - h->at[slo], h->tmp,
                         h->at[khi] - h->at[klo], peer));
    halving_reduce(&h->rider, mask, peer);
  }
  return RONDO_SUCCESS;
}

static rondo_status_t reduce_scatter_halving(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  int rank = comm->rank, rem = comm->size - comm->pof2, pof2 = comm->pof2;
  int bits = rondo__log2(pof2), riding = a->agree != NULL;
  size_t es = a->esize, bytes = a->total * es;
  char *work = NULL;
  size_t *at = malloc(((size_t)pof2 + 1) * sizeof *at);
  rondo_status_t st = at != NULL ? algo_check_message(bytes)
                                 : rondo__fail(RONDO_ERR_NO_MEMORY,
                                               "recursive halving: %d offsets", pof2 + 1);
  if (st == RONDO_SUCCESS)
    st = algo_scratch(comm, 2 * bytes, (void **)&work);
  halving_t h = {.rider = {halving_send_buf, halving_recv_buf, halving_reduce}, .a = a,
                 .at = at, .work = work, .tmp = work != NULL ? work + bytes : NULL,
                 .nr = algo_fold_newrank(comm),
                 .lo = 0, .hi = pof2};
  if (st == RONDO_SUCCESS) { /* new rank reverse(j)'s blocks at position j */
    at[0] = 0;
    for (int j = 0; j < pof2; j++) {
      int q = reverse_bits(j, bits);
      size_t from = a->displs[first_block(comm, q)], n = a->displs[first_block(comm, q + 1)] - from;
      if (n > 0)
        memcpy(blocks_at(a, work, at[j]), blocks_at(a, a->sendbuf, from), n * es);
      at[j + 1] = at[j] + n;
    }
  }
  if (riding) { /* a local failure still takes part in the check */
    st = agree_call_riding(comm, st, a->agree, st == RONDO_SUCCESS ? &h.rider : NULL);
    int want = h.nr < 0 ? 0 : (rank < 2 * rem) + bits;
    if (st == RONDO_SUCCESS && h.steps != want) /* (passed: every rank rode every step) */
      st = rondo__fail(RONDO_ERR_INTERNAL, "recursive halving: %d of %d steps carried data",
                       h.steps, want);
  } else if (st == RONDO_SUCCESS) {
    st = halving_alone(&h);
  }
  /* the result: this new rank's blocks at position reverse(nr); unfold: the
   * odd rank sends the even one its block */
  if (st == RONDO_SUCCESS && h.nr < 0)
    st = exchange(a, NULL, 0, a->recvbuf, a->counts[rank], rank + 1);
  if (st == RONDO_SUCCESS && h.nr >= 0) {
    const char *mine = blocks_at(a, work, at[reverse_bits(h.nr, bits)]);
    if (rank < 2 * rem) { /* blocks rank - 1 and rank, in that order */
      st = exchange(a, mine, a->counts[rank - 1], NULL, 0, rank - 1);
      mine += a->counts[rank - 1] * es;
    }
    if (st == RONDO_SUCCESS && a->counts[rank] > 0) /* recvbuf may be NULL then */
      memcpy(a->recvbuf, mine, a->counts[rank] * es);
  }
  free(at);
  return st;
}

/* Cost: the input's copy, then lg p' exchange steps on halves of the
 * buffer (n/2, n/4, ..) at butterfly distances 1, 2, 4 .. (the big halves
 * nearest), reducing as much, and off a power of two the fold (the whole
 * buffer there, its reduction, and a block back). */
double algo_rs_halving_time(const select_params_t *prm, const select_input_t *in, double n)
{
  int pof2 = rondo__pof2_floor(in->ranks);
  double t = prm->copy_beta * n, half = n, gamma = select_p2p_level(prm, in)->gamma;
  if (pof2 != in->ranks)
    t += select_step_time(prm, in, n, 1) + gamma * n + select_step_time(prm, in, n / in->ranks, 1);
  for (int d = 1; d < pof2; d *= 2) {
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
               .mem = SELECT_MEM_HOST, .cost = cost,
               .carries_check = AGREE_RIDER_INLINE_BYTES /* its steps, in rondo's own exchange */},
    .collectives = ALGO_SERVES_REDUCE_SCATTER,
    .blocks = reduce_scatter_halving,
};
