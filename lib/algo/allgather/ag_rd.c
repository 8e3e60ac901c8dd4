/*
 * Recursive-doubling all-gather (MPICH's choice for a power of two below
 * 512 KiB): at distance d = 1, 2, .., p/2 each rank swaps the blocks it
 * has gathered so far (the d blocks of its aligned group) with the rank d
 * away, straight into their places in recvbuf. lg p latencies and (p-1)/p
 * of the buffer through each rank: a small-message member. Off a power of
 * two it folds as recursive halving does (fold.c's pairs: the even rank's
 * block goes to the odd one first, the whole result comes back last,
 * where Bruck needs no fold but copies the buffer once more). Where the
 * blocks lie packed a group is one message; with gaps between them
 * (allgatherv's displacements) it is one message per block.
 *
 * Where the check's exchange is rondo's own (agree_by_exchange) the
 * doubling carries the argument check (a->agree), as Rabenseifner's
 * halving does: the exchange's steps are the fold and then distances 1, 2,
 * 4 .. in new ranks, the doubling's own, so each step's blocks travel with
 * its packet (the rider, exchange.h) and the check costs no round of
 * its own. Until the check has passed nothing may touch recvbuf, so the
 * blocks gather in scratch laid out as recvbuf, copied over once every
 * step rode (packed blocks only).
 */
#include "algo/common/blocks.h"

#include <stdlib.h>
#include <string.h>

#include "algo/agree/exchange.h"
#include "base/numbers.h"

/* Sends blocks [s_lo, s_hi) of recvbuf to peer and receives blocks
 * [r_lo, r_hi) from it (either range may be empty): one message each way
 * where the blocks lie packed, else one per block, so that the gaps
 * between blocks are never written. */
static rondo_status_t move_blocks(const algo_blocks_args_t *a, int s_lo, int s_hi, int r_lo,
                                  int r_hi, int peer)
{
  rondo_comm_t comm = a->comm;
  if (a->packed) {
    size_t so = a->displs[s_lo], ro = a->displs[r_lo];
    return algo_sendrecv(comm, blocks_at(a, a->recvbuf, so), a->displs[s_hi] - so, peer,
                         blocks_at(a, a->recvbuf, ro), a->displs[r_hi] - ro, peer);
  }
  int ns = s_hi - s_lo, nr = r_hi - r_lo;
  MPI_Request *req = malloc(((size_t)ns + (size_t)nr + 1) * sizeof *req);
  if (req == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "all-gather: %d requests", ns + nr);
  rondo_status_t st = RONDO_SUCCESS;
  int posted = 0, sent = 0;
  for (; posted < nr && st == RONDO_SUCCESS; posted++)
    st = algo_irecv(comm, blocks_at(a, a->recvbuf, a->displs[r_lo + posted]),
                    a->counts[r_lo + posted], peer, &req[posted]);
  for (; sent < ns && st == RONDO_SUCCESS; sent++)
    st = algo_isend(comm, blocks_at(a, a->recvbuf, a->displs[s_lo + sent]),
                    a->counts[s_lo + sent], peer, &req[nr + sent]);
  if (st == RONDO_SUCCESS)
    st = algo_waitall(comm, ns + nr, req);
  else
    algo_abandon(posted, req, sent, req + nr);
  free(req);
  return st;
}

/* The first block new rank nr stands for after the fold (nr = pof2: p). */
static int first_block(rondo_comm_t comm, int nr)
{
  int rem = comm->size - comm->pof2;
  return nr < rem ? 2 * nr : nr + rem;
}

/* The doubling riding in the check: the blocks gather in work (laid out
 * as recvbuf, packed) step by step with the exchange's packets. */
typedef struct {
  agree_rider_t rider;
  const algo_blocks_args_t *a;
  char *work;
  int nr;    /* new rank after the fold; -1: folded onto rank + 1 */
  int steps; /* steps whose blocks came, the fold's included */
} rd_rider_t;

/* Blocks [*lo, *hi) this rank sends (send) or receives in step mask (0:
 * the fold, where the rank folded away sends its block to its odd
 * neighbour). */
static void step_blocks(const rd_rider_t *d, int mask, int send, int *lo, int *hi)
{
  rondo_comm_t comm = d->a->comm;
  int r = comm->rank;
  if (mask == 0) {
    *lo = d->nr < 0 ? r : r - 1;
    *hi = *lo + 1;
    return;
  }
  int peer = d->nr ^ mask, g = (send ? d->nr : peer) & ~(mask - 1);
  *lo = first_block(comm, g);
  *hi = first_block(comm, g + mask);
}

static void rd_send_buf(agree_rider_t *r, int mask, const void **buf, size_t *bytes)
{
  rd_rider_t *d = (rd_rider_t *)r;
  int lo, hi;
  step_blocks(d, mask, 1, &lo, &hi);
  *buf = d->work + d->a->displs[lo];
  *bytes = d->a->displs[hi] - d->a->displs[lo];
}

static void rd_recv_buf(agree_rider_t *r, int mask, void **buf, size_t *bytes)
{
  rd_rider_t *d = (rd_rider_t *)r;
  int lo, hi;
  step_blocks(d, mask, 0, &lo, &hi);
  *buf = d->work + d->a->displs[lo];
  *bytes = d->a->displs[hi] - d->a->displs[lo];
}

/* The blocks are in place already (scratch): a step counted. */
static void rd_reduce(agree_rider_t *r, int mask, int peer)
{
  (void)mask;
  (void)peer;
  ((rd_rider_t *)r)->steps++;
}

/* The check and the doubling in one exchange, then the unfold. */
static rondo_status_t allgather_rd_riding(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  int r = comm->rank, rem = comm->size - comm->pof2;
  size_t total = a->displs[comm->size];
  char *work = NULL;
  rondo_status_t st = algo_check_message(total);
  if (st == RONDO_SUCCESS)
    st = algo_scratch(comm, total, (void **)&work);
  rd_rider_t d = {.rider = {rd_send_buf, rd_recv_buf, rd_reduce}, .a = a, .work = work,
                  .nr = algo_fold_newrank(comm)};
  if (st == RONDO_SUCCESS && a->counts[r] > 0)
    memcpy(work + a->displs[r], a->sendbuf, a->counts[r]);
  /* a local failure still takes part in the check */
  RONDO_CHECK(agree_call_riding(comm, st, a->agree, st == RONDO_SUCCESS ? &d.rider : NULL));
  int want = d.nr < 0 ? 0 : (r < 2 * rem) + rondo__log2(comm->pof2);
  if (d.steps != want) /* (the check passed: every rank rode every step) */
    return rondo__fail(RONDO_ERR_INTERNAL, "recursive doubling: %d of %d steps carried blocks",
                       d.steps, want);
  if (d.nr >= 0)
    memcpy(a->recvbuf, work, total);
  /* unfold: the odd rank hands the even one every block */
  if (r < 2 * rem)
    RONDO_CHECK(d.nr < 0 ? move_blocks(a, 0, 0, 0, comm->size, r + 1)
                         : move_blocks(a, 0, comm->size, 0, 0, r - 1));
  return RONDO_SUCCESS;
}

static rondo_status_t allgather_rd(const algo_blocks_args_t *a)
{
  if (a->agree != NULL && a->packed) /* (only packed calls ride: rondo_allgather's) */
    return allgather_rd_riding(a);
  rondo_comm_t comm = a->comm;
  int r = comm->rank, rem = comm->size - comm->pof2;
  int nr = algo_fold_newrank(comm);
  char *own = blocks_at(a, a->recvbuf, a->displs[r]);
  RONDO_CHECK(algo_check_message(a->total));
  if (own != (const char *)a->sendbuf && a->counts[r] > 0)
    memcpy(own, a->sendbuf, a->counts[r]);
  /* fold: the even rank of a pair hands its block to the odd one */
  if (r < 2 * rem)
    RONDO_CHECK(nr < 0 ? move_blocks(a, r, r + 1, 0, 0, r + 1)
                       : move_blocks(a, 0, 0, r - 1, r, r - 1));
  for (int d = 1; nr >= 0 && d < comm->pof2; d *= 2) {
    int peer = nr ^ d, mine = nr & ~(d - 1), theirs = peer & ~(d - 1);
    RONDO_CHECK(move_blocks(a, first_block(comm, mine), first_block(comm, mine + d),
                            first_block(comm, theirs), first_block(comm, theirs + d),
                            algo_fold_rank(comm, peer)));
  }
  /* unfold: the odd rank hands the even one every block */
  if (r < 2 * rem)
    RONDO_CHECK(nr < 0 ? move_blocks(a, 0, 0, 0, comm->size, r + 1)
                       : move_blocks(a, 0, comm->size, 0, 0, r - 1));
  return RONDO_SUCCESS;
}

/* Cost: lg p' butterfly steps, step k moving 2^k blocks (n 2^k / p
 * bytes), and off a power of two the fold: a block in, the whole buffer
 * out. */
double algo_ag_rd_time(const select_params_t *prm, const select_input_t *in, double n)
{
  int pof2 = rondo__pof2_floor(in->ranks);
  double t = 0, block = n / in->ranks;
  if (pof2 != in->ranks)
    t += select_step_time(prm, in, block, 1) + select_step_time(prm, in, n, 1);
  for (int d = 1; d < pof2; d *= 2)
    t += select_step_time(prm, in, block * d * in->ranks / pof2, d);
  return t;
}

static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_ag_rd_time(prm, in, (double)in->bytes);
}

const algo_desc_t algo_ag_rd = {
    .select = {.id = RONDO_ALGO_RECURSIVE_DOUBLING, .name = "recursive_doubling",
               .mem = SELECT_MEM_HOST, .cost = cost,
               .carries_check = AGREE_RIDER_INLINE_BYTES /* its steps, in rondo's own exchange */},
    .collectives = ALGO_SERVES_ALLGATHER,
    .blocks = allgather_rd,
};
