/*
 * Rabenseifner's all-reduce: a reduce-scatter by recursive halving followed
 * by an allgather by recursive doubling (Thakur, Rabenseifner and Gropp,
 * 2005). The halving starts with the nearest partner (distance 1) and the
 * doubling ends with it, as MPICH's does: when ranks sit on nodes in
 * blocks, the big halves stay inside the node and only the small pieces
 * cross the network. From p elements up each rank sends and receives
 * about 2 (p-1)/p of the buffer in 2 lg p messages: bandwidth-optimal like
 * the ring with far fewer steps, so it wins at medium sizes. Non-powers of
 * two are folded first (as fold.c).
 *
 * The buffer is cut into pof2 blocks (sizes differ by at most one element);
 * a rank owns a contiguous range of blocks that halves each round. Each
 * block's final value is computed once (by the rank that owns it after the
 * reduce-scatter) and then copied, so all ranks hold identical bytes.
 *
 * Below pof2 elements the blocks are of one element or none, the empty
 * ones last. Then in the first steps half the ranks send their range's
 * whole data and the others an empty half: the data gathers on fewer
 * ranks, a reduce by a binomial tree, until the ranges are as narrow as
 * the data; the doubling's last steps are the mirror, a broadcast. Where
 * the ranks share the network's links (a backbone, thousands of ranks)
 * that sends far fewer bytes at once than recursive doubling, in which
 * every rank sends everything in every step (docs/scale.md).
 *
 * Where the check's exchange is rondo's own (agree_by_exchange) the
 * halving carries the argument check (a->agree): its steps pair the same
 * ranks in the same order as the check's exchange (exchange.c), so
 * the data rides in the exchange's steps and the check costs no round of
 * its own. Until the check has
 * passed nothing may touch recvbuf (a failed call leaves it as it was), so
 * the halving reduces into scratch until its last step, whose two packets
 * together combine every rank's: that one reduces into recvbuf. (Copying
 * the final block over instead cost 2 MiB of memcpy per 4 MiB call on two
 * ranks, 1.23-1.26x the unchecked call.)
 */
#include "algo/algo.h"

#include "algo/agree/exchange.h"
#include "base/numbers.h"

#include <math.h>
#include <stdio.h>

/* Element offset of block b of pof2 blocks. */
static size_t block_start(const algo_allreduce_args_t *a, int b)
{
  size_t pof2 = (size_t)a->comm->pof2;
  size_t base = a->count / pof2, extra = a->count % pof2;
  return (size_t)b * base + ((size_t)b < extra ? (size_t)b : extra);
}

/* Byte offset and byte length of blocks [lo, hi). */
#define RANGE_OFF(a, lo) (block_start(a, lo) * (a)->esize)
#define RANGE_BYTES(a, lo, hi) ((block_start(a, hi) - block_start(a, lo)) * (a)->esize)

/* The halving's state; first its rider, for the check's exchange. */
typedef struct {
  agree_rider_t rider;
  const algo_allreduce_args_t *a;
  const char *src; /* this rank's data so far: the input, then work */
  char *work;      /* the partial results, laid out as recvbuf */
  char *tmp;       /* a partner's blocks */
  int newrank;     /* after the fold; -1: folded onto rank + 1 */
  int lo, hi;      /* the blocks this rank still reduces */
  int steps;       /* steps received, the fold's included */
} halving_t;

/* The blocks this rank sends and keeps in step mask (0: the fold, where
 * the rank folded away sends them all and its neighbour keeps them all). */
static void ranges(const halving_t *h, int mask, int *send_lo, int *send_hi, int *keep_lo,
                   int *keep_hi)
{
  if (mask == 0) {
    *send_lo = *keep_lo = 0;
    *send_hi = *keep_hi = h->a->comm->pof2;
    return;
  }
  int mid = h->lo + (h->hi - h->lo) / 2, upper = (h->newrank & mask) != 0;
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
  *buf = h->src + RANGE_OFF(h->a, slo);
  *bytes = RANGE_BYTES(h->a, slo, shi);
}

static void halving_recv_buf(agree_rider_t *r, int mask, void **buf, size_t *bytes)
{
  halving_t *h = (halving_t *)r;
  int slo, shi, klo, khi;
  ranges(h, mask, &slo, &shi, &klo, &khi);
  *buf = h->tmp;
  *bytes = RANGE_BYTES(h->a, klo, khi);
}

/* After peer's blocks are in tmp: work's kept blocks = src's (op) peer's.
 * The last step's go to recvbuf: riding, that step reduces only when its
 * two packets, which together combine every rank's, show the same valid
 * call, so the check has passed (and nothing is copied over at the end). */
static void halving_reduce(agree_rider_t *r, int mask, int peer)
{
  halving_t *h = (halving_t *)r;
  int slo, shi, klo, khi;
  ranges(h, mask, &slo, &shi, &klo, &khi);
  size_t off = RANGE_OFF(h->a, klo), n = block_start(h->a, khi) - block_start(h->a, klo);
  char *dst = 2 * mask == h->a->comm->pof2 ? (char *)h->a->recvbuf : h->work;
  algo_reduce_ordered(dst + off, h->src + off, h->tmp, n, h->a, peer);
  h->src = dst;
  h->lo = klo;
  h->hi = khi;
  h->steps++;
}

/* The fold and the halving on their own (the check done before, or none). */
static rondo_status_t halving_alone(halving_t *h)
{
  const algo_allreduce_args_t *a = h->a;
  rondo_comm_t comm = a->comm;
  int rank = comm->rank, folded = rank < 2 * (comm->size - comm->pof2);
  if (h->newrank < 0) {
    MPI_Request req = MPI_REQUEST_NULL;
    RONDO_CHECK(algo_isend(comm, h->src, a->count * a->esize, rank + 1, &req));
    return algo_waitall(comm, 1, &req);
  }
  if (folded) {
    MPI_Request req = MPI_REQUEST_NULL;
    RONDO_CHECK(algo_irecv(comm, h->tmp, a->count * a->esize, rank - 1, &req));
    RONDO_CHECK(algo_waitall(comm, 1, &req));
    halving_reduce(&h->rider, 0, rank - 1);
  }
  for (int mask = 1; mask < comm->pof2; mask <<= 1) {
    int peer = algo_fold_rank(comm, h->newrank ^ mask);
    int slo, shi, klo, khi;
    ranges(h, mask, &slo, &shi, &klo, &khi);
    RONDO_CHECK(algo_sendrecv(comm, h->src + RANGE_OFF(a, slo), RANGE_BYTES(a, slo, shi), peer,
                              h->tmp, RANGE_BYTES(a, klo, khi), peer));
    halving_reduce(&h->rider, mask, peer);
  }
  return RONDO_SUCCESS;
}

/* j's low s bits in reverse order. */
static int reverse_bits(int j, int s)
{
  int r = 0;
  for (int i = 0; i < s; i++)
    r |= ((j >> i) & 1) << (s - 1 - i);
  return r;
}

/* The doubling in steps of the given radix (a power of two): each step
 * does lg radix of radix 2's steps at once, the rank swapping its range
 * with the radix - 1 ranks that differ from it in those bits of the new
 * rank, so the range grows radix-fold in one latency instead of lg radix
 * (the last step does what bits are left). A rank's range after the
 * halving is the block whose index is its new rank's bits reversed, so
 * the peer that differs by j m holds the range w reverse(j) away (w the
 * present width). Each rank sends and receives the bytes of radix 2's
 * steps, in fewer rounds of more messages. Empty ranges (below p'
 * elements) are not sent: both sides know the sizes. */
static rondo_status_t allgather_doubling(const algo_allreduce_args_t *a, int newrank, int lo,
                                         int hi, int radix)
{
  rondo_comm_t comm = a->comm;
  char *buf = a->recvbuf;
  int bits = rondo__log2(radix);
  for (int left = rondo__log2(comm->pof2); left > 0;) {
    int s = bits < left ? bits : left;
    left -= s;
    int m = 1 << left, w = hi - lo, nr = 0, ns = 0;
    MPI_Request recvs[ALGO_RAB_RADIX_MAX - 1], sends[ALGO_RAB_RADIX_MAX - 1];
    size_t mine = RANGE_BYTES(a, lo, hi);
    rondo_status_t st = RONDO_SUCCESS;
    for (int j = 1; j < 1 << s && st == RONDO_SUCCESS; j++) {
      int peer = algo_fold_rank(comm, newrank ^ (j * m));
      int plo = lo ^ (reverse_bits(j, s) * w);
      size_t theirs = RANGE_BYTES(a, plo, plo + w);
      recvs[nr] = sends[ns] = MPI_REQUEST_NULL;
      if (theirs > 0)
        st = algo_irecv(comm, buf + RANGE_OFF(a, plo), theirs, peer, &recvs[nr++]);
      if (st == RONDO_SUCCESS && mine > 0)
        st = algo_isend(comm, buf + RANGE_OFF(a, lo), mine, peer, &sends[ns++]);
    }
    if (st != RONDO_SUCCESS) {
      algo_abandon(nr, recvs, ns, sends); /* no receive may outlive the call */
      return st;
    }
    RONDO_CHECK(algo_waitall(comm, nr, recvs));
    RONDO_CHECK(algo_waitall(comm, ns, sends));
    lo &= ~(w * (1 << s) - 1);
    hi = lo + w * (1 << s);
  }
  return RONDO_SUCCESS;
}

static rondo_status_t allreduce_rabenseifner(const algo_allreduce_args_t *a)
{
  rondo_comm_t comm = a->comm;
  size_t bytes = a->count * a->esize;
  int riding = a->agree != NULL;
  if (comm->size == 1) {
    algo_copy_input(a);
    return RONDO_SUCCESS;
  }
  /* The fold sends it all; riding, work is scratch after tmp. */
  void *scratch = NULL;
  rondo_status_t st = algo_check_message(bytes);
  if (st == RONDO_SUCCESS)
    st = algo_scratch(comm, riding ? 2 * bytes : bytes, &scratch);
  halving_t h = {.rider = {halving_send_buf, halving_recv_buf, halving_reduce}, .a = a, .src = a->sendbuf,
                 .work = riding ? (char *)scratch + bytes : a->recvbuf, .tmp = scratch,
                 .newrank = algo_fold_newrank(comm), .lo = 0, .hi = comm->pof2};
  if (riding) { /* a local failure still takes part in the check */
    RONDO_CHECK(agree_call_riding(comm, st, a->agree, st == RONDO_SUCCESS ? &h.rider : NULL));
    int want = 0; /* the fold's receive, then one per halving step */
    if (h.newrank >= 0) {
      want = comm->rank < 2 * (comm->size - comm->pof2);
      for (int mask = 1; mask < comm->pof2; mask <<= 1)
        want++;
    }
    if (h.steps != want) /* (the check passed: every rank rode every step) */
      return rondo__fail(RONDO_ERR_INTERNAL, "rabenseifner: %d of %d steps carried data", h.steps,
                         want);
  } else {
    RONDO_CHECK(st);
    RONDO_CHECK(halving_alone(&h));
  }
  if (h.newrank >= 0) {
    select_params_t prm = algo_params(comm);
    select_input_t in = algo_input(comm, a->count, a->dtype, a->op);
    RONDO_CHECK(allgather_doubling(a, h.newrank, h.lo, h.hi, algo_rab_radix(&prm, &in)));
  }
  return algo_fold_out(a, a->recvbuf, h.newrank);
}

/* A halving step's bytes where the ranges are w blocks wide before it, n
 * bytes of elements of esize over pof2 blocks: mean, what a rank sends on
 * average, n w / (2 p'), and most, the largest message: the same, or,
 * below p' elements (blocks of one element or none), the elements in a
 * half range, min(count, w/2). The doubling step at that distance sends
 * the same. */
static void step_bytes(double n, double esize, int pof2, int w, double *most, double *mean)
{
  double count = n / esize, half = w / 2;
  *mean = n * half / pof2;
  *most = fmax(*mean, fmin(count, half) * esize);
}

/* The doubling's steps in the given radix: each of radix - 1 messages of
 * a range w blocks wide (step_bytes of a halving step 2w wide), all sent
 * at once through the rank's link, at the distance of the step's
 * farthest bit. */
static double doubling_time(const select_params_t *prm, const select_input_t *in, double n,
                            double esize, int pof2, int radix)
{
  double t = 0;
  int bits = rondo__log2(radix);
  for (int left = rondo__log2(pof2); left > 0;) {
    int s = bits < left ? bits : left;
    left -= s;
    int m = 1 << left, w = pof2 / (m << s), peers = (1 << s) - 1;
    double most, mean;
    step_bytes(n, esize, pof2, 2 * w, &most, &mean);
    t += select_step_time_uneven(prm, in, peers * most, peers * mean, m << (s - 1));
  }
  return t;
}

int algo_rab_radix(const select_params_t *prm, const select_input_t *in)
{
  int pof2 = rondo__pof2_floor(in->ranks);
  if (prm->rab_radix > 0)
    return prm->rab_radix;
  if (in->count >= (size_t)pof2)
    return 2;
  double n = (double)in->bytes, esize = (double)rondo_dtype_size(in->dtype);
  int best = 2;
  double best_t = doubling_time(prm, in, n, esize, pof2, 2);
  for (int radix = 4; radix <= ALGO_RAB_RADIX_MAX; radix *= 2) {
    double t = doubling_time(prm, in, n, esize, pof2, radix);
    if (t < best_t) {
      best = radix;
      best_t = t;
    }
  }
  return best;
}

int algo_rab_describe(rondo_comm_t comm, const select_input_t *in, char *buf, size_t len)
{
  select_params_t prm = algo_params(comm);
  int radix = algo_rab_radix(&prm, in), pof2 = rondo__pof2_floor(in->ranks);
  if (prm.rab_radix > 0)
    return snprintf(buf, len, "rabenseifner at %zu bytes: doubling in radix %d (RONDO_RAB_RADIX)",
                    in->bytes, radix);
  if (in->count >= (size_t)pof2)
    return snprintf(buf, len, "rabenseifner at %zu bytes: doubling in radix 2 (%zu elements, "
                    "at least p' = %d: its steps are bandwidth)", in->bytes, in->count, pof2);
  return snprintf(buf, len, "rabenseifner at %zu bytes: doubling in radix %d (%zu elements, "
                  "below p' = %d: the cost model's lowest of radix 2-%d)", in->bytes, radix,
                  in->count, pof2, ALGO_RAB_RADIX_MAX);
}

/* Cost: a halving and a doubling step of n/2 at distance 1, n/4 at
 * distance 2, .., n/p' at distance p'/2 (+2 fold steps of n), each priced
 * by select_step_time, plus gamma on what the halving reduces (n (p'-1)/p'
 * (+n); below p' elements each step's largest message) and the input copy.
 * The big halves go to the nearest ranks, on the same node when ranks sit
 * on nodes in blocks, so only the small ones cross the network. Below p'
 * elements the first steps are uneven: half the ranks of a step send the
 * whole data of their range and the others nothing, a reduce and (in the
 * doubling) a broadcast by a binomial tree (select_step_time_uneven). The
 * doubling goes in the given radix (doubling_time). */
double algo_rab_time(const select_params_t *prm, const select_input_t *in, double n,
                     double copy, int radix)
{
  int pof2 = rondo__pof2_floor(in->ranks);
  int fold = in->ranks != pof2;
  double esize = (double)rondo_dtype_size(in->dtype);
  double t = copy * n + prm->intra.gamma * (fold ? n : 0);
  if (fold)
    t += 2 * select_step_time(prm, in, n, 1);
  for (int mask = 1, w = pof2; mask < pof2; mask <<= 1, w >>= 1) {
    double most, mean;
    step_bytes(n, esize, pof2, w, &most, &mean);
    t += prm->intra.gamma * most; /* what the halving step reduces */
    t += select_step_time_uneven(prm, in, most, mean, mask);
  }
  return t + doubling_time(prm, in, n, esize, pof2, radix);
}

static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_rab_time(prm, in, (double)in->bytes, prm->copy_beta, algo_rab_radix(prm, in));
}

const algo_desc_t algo_rabenseifner = {
    .select = {.id = RONDO_ALGO_RABENSEIFNER, .name = "rabenseifner",
               .mem = SELECT_MEM_HOST, .cost = cost,
               .carries_check = AGREE_RIDER_INLINE_BYTES /* its halving, in rondo's own exchange */},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = allreduce_rabenseifner,
};
