/*
 * Hierarchical all-reduce, for comms that span nodes:
 *   1. node reduce-scatter through shared memory (shm.c): each local rank
 *      ends with the node's sum of the slices it owns;
 *   2. the owners of slice g on every node all-reduce it over cross[g]
 *      (topo.h); different slices go in parallel on different ranks;
 *   3. node allgather through shared memory.
 * Only 1/L of the buffer crosses the network per rank, instead of the whole
 * buffer through a flat algorithm, and each node's link carries L streams
 * that together move 2 (N-1)/N of the buffer: the least any all-reduce
 * over N nodes can send through it.
 *
 * Pipelined above one chunk (RONDO_HIER_CHUNK_BYTES, 1 MiB): the buffer is
 * cut into stripes (algo_hier_stripes: of a chunk on a fast link, 1-16 chunks on
 * a slow one) and stripe j's cross-node all-reduces (nonblocking
 * Rabenseifner on a power-of-two node count, MPI_Iallreduce otherwise;
 * see cross_op_t) run while the node reduce-scatters stripe j+1
 * and gathers stripe j-1, so the link stays busy while the cores copy and
 * reduce. MPI moves requests only inside MPI calls, so the shared-memory
 * phases move the cross-node steps on after every round and while they
 * wait (shm_run_with). Otherwise the phases run one after another,
 * the cross phase by ring or recursive doubling as the cost model says
 * (hier_cross.c, which the NCCL hierarchy shares).
 *
 * Unequal nodes (3+1, say): slices are cut by the largest node size G, and
 * on a node of L < G ranks local rank r owns slices r, r+L, ..., so every
 * slice has exactly one owner per node; a rank with several slices runs
 * their cross-node all-reduces one after another. Each slice's final value
 * comes out of one cross all-reduce (identical on its owners) and is copied
 * by the allgather, so every rank ends with the same bytes.
 */
#include "algo/allreduce/hier_cross.h"
#include "algo/common/shm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/numbers.h"
#include "topo/topo.h"

static rondo_status_t cross_allreduce(const algo_allreduce_args_t *a, rondo_comm_t cross,
                                      size_t off, size_t n)
{
  return algo_hier_cross(a->comm, cross, (char *)a->recvbuf + off * a->esize, n, a->count,
                         a->dtype, a->op);
}

static rondo_status_t hier_phases(const algo_allreduce_args_t *a)
{
  rondo_comm_t comm = a->comm;
  const topo_t *topo = comm->topo;
  RONDO_CHECK(shm_run(a, SHM_REDUCE_SCATTER));
  for (int g = 0; g < topo->slices; g++) {
    if (topo_owner(g, topo->local_size) != topo->local_rank)
      continue;
    size_t off, n;
    topo_slice(a->count, topo->slices, g, &off, &n);
    RONDO_CHECK(cross_allreduce(a, comm->cross[g], off, n));
  }
  return shm_run(a, SHM_ALLGATHER);
}

/* ---- the pipeline ------------------------------------------------------------- */

/* One slice's cross-node all-reduce in flight. On a power-of-two number of
 * nodes it is Rabenseifner's: recursive halving (a reduce-scatter) and then
 * recursive doubling of the halves (an allgather), driven step by step
 * (cross_advance), so each node's link carries 2 (N-1)/N of the slice each
 * way, the least any all-reduce can send, where recursive doubling of the
 * whole slice would carry lg N slices. Each element is reduced on one rank
 * only and copied from there, so every node ends with the same bytes.
 * Otherwise MPI_Iallreduce (MPICH's nonblocking schedules can cost twice
 * the link time on two nodes, so they are only the fallback). */
enum { CROSS_MAX_LG = 30 };
typedef struct {
  algo_allreduce_args_t a; /* the slice: comm = the cross comm, in place */
  char *tmp;               /* the partner's copy of a half, a->count elements */
  int parity;              /* the stripe's j % 2: two stripes are in flight on
                              one cross comm, and their steps may finish in
                              any order, so each (stripe, step) has its own
                              tag (cross_tag) */
  int step;                /* the step in flight; done once >= steps */
  int steps;               /* 2 lg N halving and doubling steps; 0 when none
                              (nothing to do, or MPI's own request in req[0]
                              is the whole op) */
  int lg;                  /* lg N: steps below it halve, the others double */
  size_t lo, len;          /* the elements this rank holds reduced (halving)
                              or gathered (doubling) so far */
  size_t part_lo[CROSS_MAX_LG], part_len[CROSS_MAX_LG]; /* lo, len before halving
                                                           step s, for doubling */
  MPI_Request req[2];      /* receive, send */
} cross_op_t;

typedef struct {
  cross_op_t *op; /* [2 * slices]: stripe parity x slice */
  int n;
  rondo_status_t st; /* the first failure, reported at the wait */
} inflight_t;

static int op_busy(const cross_op_t *o)
{
  return o->req[0] != MPI_REQUEST_NULL || o->req[1] != MPI_REQUEST_NULL;
}

/* The tag of a step: the stripe's parity and the step, so that a message of
 * stripe j+1 never matches a receive of stripe j between the same two ranks. */
static int cross_tag(const cross_op_t *o)
{
  return 1 + 2 * o->step + o->parity;
}

/* Halving step s (s < lg) pairs ranks at distance N/2^(s+1); doubling steps
 * go back up: distance 1, 2, ..., N/2. */
static int step_mask(const cross_op_t *o)
{
  int s = o->step < o->lg ? o->step : 2 * o->lg - 1 - o->step;
  return 1 << (o->lg - 1 - s);
}

/* Whether this rank keeps the lower half at halving step s. */
static int keeps_lower(const cross_op_t *o, int mask)
{
  return (o->a.comm->rank & mask) == 0;
}

/* A stripe holds at most 1 GiB (algo_hier_stripes): int counts. */
static rondo_status_t post_step(cross_op_t *o)
{
  rondo_comm_t c = o->a.comm;
  int mask = step_mask(o), peer = c->rank ^ mask, tag = cross_tag(o);
  size_t es = o->a.esize;
  char *buf = o->a.recvbuf;
  size_t send_lo, send_len, recv_lo, recv_len;
  char *into;
  if (o->step < o->lg) { /* halving: send the half the partner keeps, receive ours */
    size_t lower = o->len / 2;
    int lower_mine = keeps_lower(o, mask);
    size_t keep_lo = lower_mine ? o->lo : o->lo + lower, keep_len = lower_mine ? lower : o->len - lower;
    send_lo = lower_mine ? o->lo + lower : o->lo;
    send_len = o->len - keep_len;
    recv_lo = keep_lo;
    recv_len = keep_len;
    into = o->tmp + recv_lo * es;
  } else { /* doubling: send what we hold, receive the partner's half of the parent */
    int s = 2 * o->lg - 1 - o->step;
    size_t plo = o->part_lo[s], plen = o->part_len[s];
    send_lo = o->lo;
    send_len = o->len;
    recv_lo = keeps_lower(o, mask) ? plo + o->len : plo;
    recv_len = plen - o->len;
    into = buf + recv_lo * es;
  }
  MPI_CHECK(MPI_Irecv(into, (int)(recv_len * es), MPI_BYTE, peer, tag, c->mpi, &o->req[0]));
  MPI_CHECK(MPI_Isend(buf + send_lo * es, (int)(send_len * es), MPI_BYTE, peer, tag, c->mpi,
                      &o->req[1]));
  return RONDO_SUCCESS;
}

/* Starts the all-reduce of a->recvbuf[off, off + n) over cross. */
static rondo_status_t cross_start(cross_op_t *o, const algo_allreduce_args_t *a,
                                  rondo_comm_t cross, size_t off, size_t n, char *tmp,
                                  int parity, MPI_Datatype mtype, MPI_Op mop)
{
  o->a = *a;
  o->a.comm = cross;
  o->a.sendbuf = o->a.recvbuf = (char *)a->recvbuf + off * a->esize;
  o->a.count = n;
  o->a.agree = NULL;
  o->tmp = tmp;
  o->req[0] = o->req[1] = MPI_REQUEST_NULL;
  o->step = o->steps = 0;
  o->parity = parity;
  if (n == 0 || cross == NULL || cross->size == 1)
    return RONDO_SUCCESS;
  if (cross->pof2 != cross->size) { /* no steps of ours: MPI's request is the whole op */
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, o->a.recvbuf, (int)n, mtype, mop, cross->mpi,
                             &o->req[0]));
    return RONDO_SUCCESS;
  }
  o->lg = rondo__log2(cross->pof2);
  o->steps = 2 * o->lg;
  o->lo = 0;
  o->len = n;
  return post_step(o);
}

/* Moves o on if its step is complete: reduce (halving) or take the gathered
 * half (doubling), then the next step. */
static rondo_status_t cross_advance(cross_op_t *o)
{
  for (int i = 0; i < 2; i++) {
    int done = 1;
    if (o->req[i] != MPI_REQUEST_NULL)
      MPI_CHECK(MPI_Test(&o->req[i], &done, MPI_STATUS_IGNORE));
    if (!done)
      return RONDO_SUCCESS;
  }
  if (o->step >= o->steps)
    return RONDO_SUCCESS; /* finished (or MPI's own request) */
  int mask = step_mask(o);
  if (o->step < o->lg) {
    size_t lower = o->len / 2;
    o->part_lo[o->step] = o->lo;
    o->part_len[o->step] = o->len;
    if (!keeps_lower(o, mask))
      o->lo += lower;
    o->len = keeps_lower(o, mask) ? lower : o->len - lower;
    char *mine = (char *)o->a.recvbuf + o->lo * o->a.esize;
    algo_reduce_ordered(mine, mine, o->tmp + o->lo * o->a.esize, o->len, &o->a,
                        o->a.comm->rank ^ mask);
  } else {
    int s = 2 * o->lg - 1 - o->step;
    o->lo = o->part_lo[s];
    o->len = o->part_len[s];
  }
  o->step++;
  if (o->step < o->steps)
    return post_step(o);
  return RONDO_SUCCESS;
}

static int cross_done(const cross_op_t *o)
{
  return !op_busy(o) && o->step >= o->steps;
}

/* The shared-memory phases' progress hook: moves every op on. */
static void advance_all(void *arg)
{
  inflight_t *f = arg;
  for (int i = 0; i < f->n; i++) {
    rondo_status_t st = cross_advance(&f->op[i]);
    if (st != RONDO_SUCCESS && f->st == RONDO_SUCCESS)
      f->st = st;
  }
}

/* Waits for the ops of one stripe, moving all of them on. */
static rondo_status_t wait_ops(const topo_t *topo, inflight_t *f, cross_op_t *ops, int n)
{
  unsigned polls = 0;
  for (;;) {
    advance_all(f);
    RONDO_CHECK(f->st);
    int left = 0;
    for (int i = 0; i < n; i++)
      left += !cross_done(&ops[i]);
    if (left == 0)
      return RONDO_SUCCESS;
    topo_backoff(topo, polls++);
  }
}

/* Stripe j of a: elements [j * stripe, ...). Only the first stripe agrees
 * on the call (shm.c), when anything is left to agree. */
static algo_allreduce_args_t stripe_of(const algo_allreduce_args_t *a, size_t stripe, size_t j)
{
  algo_allreduce_args_t s = *a;
  size_t off = j * stripe;
  s.sendbuf = (const char *)a->sendbuf + off * a->esize;
  s.recvbuf = (char *)a->recvbuf + off * a->esize;
  s.count = a->count - off < stripe ? a->count - off : stripe;
  if (j > 0)
    s.agree = NULL;
  return s;
}

/* The cross-node all-reduces of this rank's slices of stripe s; tmp holds
 * a stripe. */
static rondo_status_t start_stripe(const algo_allreduce_args_t *s, cross_op_t *ops, char *tmp,
                                   int parity, MPI_Datatype mtype, MPI_Op mop)
{
  rondo_comm_t comm = s->comm;
  const topo_t *topo = comm->topo;
  for (int g = 0; g < topo->slices; g++) {
    size_t off, n;
    topo_slice(s->count, topo->slices, g, &off, &n);
    if (topo_owner(g, topo->local_size) != topo->local_rank)
      n = 0;
    RONDO_CHECK(cross_start(&ops[g], s, comm->cross[g], off, n, tmp + off * s->esize, parity,
                            mtype, mop));
  }
  return RONDO_SUCCESS;
}

static rondo_status_t hier_pipelined(const algo_allreduce_args_t *a, size_t stripe)
{
  rondo_comm_t comm = a->comm;
  int slices = comm->topo->slices;
  size_t stripes = (a->count + stripe - 1) / stripe;
  MPI_Datatype mtype;
  MPI_Op mop;
  RONDO_CHECK(algo_mpi_op(a->dtype, a->op, &mtype, &mop));
  /* tmp: the comm's scratch, kept between calls (a fresh 2-stripe buffer
   * per call would fault its pages in every time). */
  char *tmp;
  RONDO_CHECK(algo_scratch(comm, 2 * stripe * a->esize, (void **)&tmp));
  inflight_t f = {calloc(2 * (size_t)slices, sizeof(cross_op_t)), 2 * slices, RONDO_SUCCESS};
  if (f.op == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "hierarchical: pipeline of %d slices", slices);
  for (int i = 0; i < 2 * slices; i++) /* idle: steps 0 (calloc) */
    f.op[i].req[0] = f.op[i].req[1] = MPI_REQUEST_NULL;
  rondo_status_t st = RONDO_SUCCESS;
  for (size_t j = 0; j <= stripes && st == RONDO_SUCCESS; j++) {
    if (j < stripes) {
      algo_allreduce_args_t s = stripe_of(a, stripe, j);
      st = shm_run_with(&s, SHM_REDUCE_SCATTER, advance_all, &f);
      if (st == RONDO_SUCCESS)
        st = start_stripe(&s, f.op + (j % 2) * (size_t)slices, tmp + (j % 2) * stripe * a->esize,
                          (int)(j % 2), mtype, mop);
    }
    if (j > 0 && st == RONDO_SUCCESS) {
      algo_allreduce_args_t s = stripe_of(a, stripe, j - 1);
      st = wait_ops(comm->topo, &f, f.op + ((j - 1) % 2) * (size_t)slices, slices);
      if (st == RONDO_SUCCESS)
        st = shm_run_with(&s, SHM_ALLGATHER, advance_all, &f);
    }
  }
  /* After a failure: cancel our own steps (their partners may be gone) and
   * finish the requests, which may not be dropped; an MPI_Iallreduce
   * (req[0] of an op without steps) cannot be cancelled, only waited for. */
  for (int i = 0; st != RONDO_SUCCESS && i < 2 * slices; i++)
    for (int k = 0; k < 2; k++) {
      if (f.op[i].req[k] == MPI_REQUEST_NULL)
        continue;
      if (f.op[i].steps > 0)
        (void)MPI_Cancel(&f.op[i].req[k]);
      (void)MPI_Wait(&f.op[i].req[k], MPI_STATUS_IGNORE);
    }
  free(f.op);
  return st;
}

/* Cost. The node phases: reduce-scatter alpha + (beta + gamma) n and
 * allgather alpha + beta n at the shm level (C). The cross phase (X) on
 * n/L bytes among N ranks at the inter level, whose link the L ranks of a
 * node share (beta x L): ring or recursive doubling in one stripe
 * (cross_allreduce), Rabenseifner pipelined on a power-of-two node count
 * (MPI_Iallreduce otherwise, priced as recursive doubling); ring and
 * Rabenseifner move 2 (N-1)/N n through the link. In one stripe the phases
 * add up: C + X. Pipelined in k stripes the cores' work and the link's
 * overlap, all but one stripe of the smaller: max(C, X) + min(C, X) / k. */
typedef struct {
  double whole;     /* the phases one after another, on the whole buffer */
  double pipelined; /* in stripes; 0 when not pipelined (algo_hier_stripes) */
  size_t stripes;   /* how many stripes the pipeline cuts the buffer into */
  int slow;         /* the link is slow: a chunk takes over 2 ms to cross */
  double chunk_ms;  /* a chunk's time on the link */
} hier_times_t;

/* How many stripes to pipeline in; 0: none. Measured, not modelled.
 *   - A fast link (a stripe of one chunk, hier_chunk, crosses it in at most
 *     2 ms): stripes of at most a chunk. On 4 hosts x 4 ranks at 10 Gbit/s
 *     (1 MiB stripes, about 1 ms each) 16 MiB took 26.8 ms against 33.8 ms
 *     in one piece.
 *   - A slow link: stripes of 1 to SLOW_STRIPE_CHUNKS chunks (and at most
 *     1 GiB, for MPI's int counts), SLOW_STRIPES of them where that fits:
 *     up to 4 chunks, as many stripes as whole chunks; up to 64 chunks, 4
 *     stripes; above, stripes of at most 16 chunks. Many small stripes lose
 *     there, although the model predicts a gain: two stripes' streams share
 *     the link, and each message of one waits behind the other's data. On
 *     2 hosts x 2 ranks at 1 Gbit/s, 16 MiB took 171-180 ms in 1 MiB
 *     stripes, 154-157 ms in one piece and 143-146 ms in 4 stripes (each
 *     8 ms on the link); 4 MiB measured alike in 4 stripes and in one piece
 *     (36-38 ms). */
enum { SLOW_STRIPES = 4, SLOW_STRIPE_CHUNKS = 16 };
static const double fast_stripe_s = 2e-3;
static const double max_stripe_bytes = 1073741824.0; /* 1 GiB */

size_t algo_hier_stripes(double bytes, double chunk, int slow)
{
  double k;
  if (!slow)
    k = ceil(bytes / chunk);
  else if (bytes < SLOW_STRIPES * chunk)
    k = floor(bytes / chunk);
  else if (bytes <= SLOW_STRIPES * SLOW_STRIPE_CHUNKS * chunk && bytes / SLOW_STRIPES <= max_stripe_bytes)
    k = SLOW_STRIPES;
  else
    k = ceil(bytes / fmin(SLOW_STRIPE_CHUNKS * chunk, max_stripe_bytes));
  if (k >= 2)
    k = fmax(k, ceil(bytes / max_stripe_bytes)); /* a chunk near 1 GiB */
  return k >= 2 ? (size_t)k : 0;
}

/* One stripe's cross phase: Rabenseifner on a power-of-two node count,
 * MPI_Iallreduce otherwise (priced as recursive doubling), on the stripe's
 * slice, over the link the node's slices share. */
static double stripe_wire(const select_params_t *link, const select_input_t *in, double stripe)
{
  double slice = stripe / in->max_local;
  select_input_t cin = algo_hier_cross_input(in, slice);
  int pof2 = rondo__pof2_floor(in->nodes) == in->nodes;
  return pof2 ? algo_rab_time(link, &cin, slice, 0, 2) : algo_rd_time(link, &cin, slice, 0);
}

static hier_times_t hier_times(const select_params_t *prm, const select_input_t *in)
{
  const select_level_t *sh = &prm->shm;
  double n = (double)in->bytes;
  double cores = 2 * sh->alpha + (2 * sh->beta + sh->gamma) * n;
  select_params_t link = algo_hier_cross_params(prm, in->max_local);
  double slice = n / in->max_local;
  select_input_t cin = algo_hier_cross_input(in, slice);
  double rd = algo_rd_time(&link, &cin, slice, 0);
  double ring = algo_ring_time(&link.inter, slice, in->nodes, prm->ring_chunk, 1);
  hier_times_t t = {cores + (ring < rd ? ring : rd), 0, 0, 0, 0};
  double chunk = (double)(prm->hier_chunk ? prm->hier_chunk : (size_t)1 << 20);
  if (in->nodes < 2 || n <= chunk)
    return t;
  double chunk_s = stripe_wire(&link, in, chunk);
  t.chunk_ms = chunk_s * 1e3;
  t.slow = chunk_s > fast_stripe_s;
  t.stripes = algo_hier_stripes(n, chunk, t.slow);
  if (t.stripes == 0)
    return t;
  double k = (double)t.stripes;
  double wire = k * stripe_wire(&link, in, n / k);
  double hi = cores > wire ? cores : wire, lo = cores > wire ? wire : cores;
  t.pipelined = hi + lo / k;
  return t;
}

/* The stripe, in elements, of count elements in k stripes. */
static size_t stripe_count(size_t count, size_t k) { return (count + k - 1) / k; }

int algo_hier_describe(rondo_comm_t comm, const select_input_t *in, char *buf, size_t len)
{
  select_params_t prm = algo_params(comm);
  hier_times_t t = hier_times(&prm, in);
  size_t chunk = prm.hier_chunk;
  if (t.stripes == 0)
    return snprintf(buf, len, "hierarchical at %zu bytes: in one piece (%s)", in->bytes,
                    in->bytes <= chunk ? "one chunk or less" : "under two chunks");
  size_t stripe = stripe_count(in->count, t.stripes);
  size_t runs = (in->count + stripe - 1) / stripe; /* as hier_pipelined cuts it */
  size_t bytes = stripe * rondo_dtype_size(in->dtype);
  if (!t.slow)
    return snprintf(buf, len, "hierarchical at %zu bytes: pipelined in %zu stripes of %zu bytes "
                    "(a %zu-byte chunk crosses the link in %.2f ms)", in->bytes, runs, bytes,
                    chunk, t.chunk_ms);
  return snprintf(buf, len, "hierarchical at %zu bytes: pipelined in %zu stripes of %zu bytes "
                  "(a %zu-byte chunk would cross the link in %.2f ms, over 2 ms: few stripes, "
                  "of 1-%d chunks)", in->bytes, runs, bytes, chunk, t.chunk_ms,
                  SLOW_STRIPE_CHUNKS);
}

static rondo_status_t allreduce_hier(const algo_allreduce_args_t *a)
{
  /* One chunk or less never pipelines (hier_times): no model to run. */
  if (a->comm->topo->node_count < 2 || a->count * a->esize <= a->comm->cfg.hier_chunk)
    return hier_phases(a);
  select_params_t prm = algo_params(a->comm);
  select_input_t in = algo_input(a->comm, a->count, a->dtype, a->op);
  hier_times_t t = hier_times(&prm, &in);
  if (t.stripes == 0)
    return hier_phases(a);
  return hier_pipelined(a, stripe_count(a->count, t.stripes));
}

static double cost(const select_params_t *prm, const select_input_t *in)
{
  hier_times_t t = hier_times(prm, in);
  return t.stripes ? t.pipelined : t.whole;
}

/* On one node it runs (shm with extra steps), but shm is the better pick;
 * with one rank per node it is a flat all-reduce plus copies. */
static const char *not_chosen(const select_input_t *in)
{
  if (in->nodes < 2)
    return "one node: use shm";
  if (in->max_local == 1)
    return "one rank per node: nothing to gather inside a node";
  return NULL;
}

const algo_desc_t algo_hierarchical = {
    .select = {.id = RONDO_ALGO_HIERARCHICAL, .name = "hierarchical", .mem = SELECT_MEM_HOST,
               .not_chosen = not_chosen, .cost = cost},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = allreduce_hier,
};
