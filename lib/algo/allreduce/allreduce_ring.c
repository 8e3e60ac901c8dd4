/*
 * Ring all-reduce: a reduce-scatter ring followed by an allgather ring
 * (Patarasuk and Yuan, 2009). The buffer is cut into p segments; in 2 (p-1)
 * steps each rank sends one segment to its right neighbour and receives one
 * from its left. Every rank sends 2 (p-1)/p of the buffer, the minimum, so
 * the ring is bandwidth-optimal; its 2 (p-1) latencies make it a large-
 * message algorithm.
 *
 * Pipelining: each segment is cut into K chunks of about
 * RONDO_RING_CHUNK_BYTES, and chunks flow through the steps independently.
 * Receives are posted up to WINDOW chunks ahead; as soon as chunk j of
 * step t has arrived and been reduced it is sent on as chunk j of step t+1,
 * so the reduction of one chunk overlaps the transfer of the next. Across
 * a slow node link the ring does not pipeline (algo_ring_chunk).
 *
 * Step t of the 2 (p-1) steps (rank r, indices mod p):
 *   reduce-scatter, t < p-1:     send segment r-t,       receive r-t-1 and reduce
 *   allgather, u = t-(p-1) >= 0: send segment r+1-u,     receive r-u
 * The segment received at step t is the one sent at step t+1. After the
 * reduce-scatter, rank r holds the final segment r+1, computed once and then
 * copied around the ring, so every rank ends with identical bytes.
 *
 * Out of place costs no extra pass: step 0 sends from sendbuf and each
 * reduction writes recvbuf = sendbuf (op) received, the rank's own
 * contribution entering exactly once per segment. Counts below p leave some
 * segments empty; empty chunks are skipped by sender and receiver alike.
 */
#include "algo/algo.h"

#include <stdio.h>
#include <stdlib.h>

#include "reduce/reduce.h"

#define WINDOW 4 /* at most this many receives in flight (and scratch chunks) */
#define CHUNK_MAX_SEC 1e-3 /* longest chunk a node link pipelines well */
#define CHUNK_DEFAULT ((size_t)256 * 1024) /* RONDO_RING_CHUNK_BYTES' default */
#define CHUNK_WHOLE ((size_t)1 << 30) /* "whole segments": the knob's maximum,
                                         so no message exceeds 1 GiB */

typedef struct {
  const algo_allreduce_args_t *a;
  int p, rank, left, right;
  size_t k;          /* chunks per segment */
  size_t ahead;      /* receives posted ahead: min(WINDOW, (p-1) k) */
  size_t steps;      /* 2 (p-1) */
  MPI_Request *sreq; /* one per (step, chunk) */
  MPI_Request rreq[WINDOW];
  char *tmp;         /* up to WINDOW chunk slots */
  size_t slot_bytes;
} ring_t;

static size_t seg_start(const ring_t *r, int seg)
{
  size_t p = (size_t)r->p, count = r->a->count;
  size_t s = (size_t)seg;
  return s * (count / p) + (s < count % p ? s : count % p);
}

/* Elements [*off, *off + *n) of chunk j of the segment used at step t. */
static void chunk_of(const ring_t *r, size_t t, size_t j, int receiving, size_t *off,
                     size_t *n)
{
  int p = r->p, u = (int)t - (p - 1);
  int seg = t < (size_t)(p - 1) ? r->rank - (int)t - receiving
                                : r->rank + 1 - u - receiving;
  seg = ((seg % p) + p) % p;
  size_t start = seg_start(r, seg), len = seg_start(r, seg + 1) - start;
  size_t lo = j * len / r->k, hi = (j + 1) * len / r->k;
  *off = start + lo;
  *n = hi - lo;
}

static int reduce_step(const ring_t *r, size_t t) { return t < (size_t)(r->p - 1); }

/* Posts the receive of global chunk g = t * k + j, if it is part of the
 * schedule and not empty. An allgather chunk lands in recvbuf where this
 * rank's reduce-scatter send of the same segment (step u) may still be in
 * flight: that send is completed first. */
static rondo_status_t post_recv(ring_t *r, size_t g)
{
  const algo_allreduce_args_t *a = r->a;
  size_t t = g / r->k, j = g % r->k, off, n;
  r->rreq[g % WINDOW] = MPI_REQUEST_NULL;
  if (t >= r->steps)
    return RONDO_SUCCESS;
  chunk_of(r, t, j, 1, &off, &n);
  if (n == 0)
    return RONDO_SUCCESS;
  void *dst;
  if (reduce_step(r, t)) {
    dst = r->tmp + (g % WINDOW) * r->slot_bytes;
  } else {
    size_t u = t - (size_t)(r->p - 1);
    RONDO_CHECK(algo_waitall(r->a->comm, 1, &r->sreq[u * r->k + j]));
    dst = (char *)a->recvbuf + off * a->esize;
  }
  return algo_irecv(a->comm, dst, n * a->esize, r->left, &r->rreq[g % WINDOW]);
}

/* Sends chunk j of step t from buf. */
static rondo_status_t post_send(ring_t *r, size_t t, size_t j, const void *buf)
{
  size_t off, n;
  chunk_of(r, t, j, 0, &off, &n);
  if (n == 0)
    return RONDO_SUCCESS;
  return algo_isend(r->a->comm, (const char *)buf + off * r->a->esize, n * r->a->esize,
                    r->right, &r->sreq[t * r->k + j]);
}

/* Chunk g has arrived: reduce it (reduce-scatter) and pass it on. */
static rondo_status_t forward(ring_t *r, size_t g)
{
  const algo_allreduce_args_t *a = r->a;
  size_t t = g / r->k, j = g % r->k, off, n;
  chunk_of(r, t, j, 1, &off, &n);
  if (n > 0 && reduce_step(r, t)) {
    char *dst = (char *)a->recvbuf + off * a->esize;
    const char *own = (const char *)a->sendbuf + off * a->esize;
    reduce_apply(dst, own, r->tmp + (g % WINDOW) * r->slot_bytes, n, a->dtype, a->op);
  }
  if (t + 1 < r->steps)
    return post_send(r, t + 1, j, a->recvbuf);
  return RONDO_SUCCESS;
}

/* At most (p-1) k receives ahead: the receive of allgather chunk j of step
 * p-1+u, into recvbuf, is then posted only after this rank has reduced into
 * that place (step u-1) and posted its send from there (step u). */
static rondo_status_t run(ring_t *r)
{
  size_t total = r->steps * r->k;
  for (size_t g = 0; g < r->ahead; g++)
    RONDO_CHECK(post_recv(r, g));
  for (size_t j = 0; j < r->k; j++)
    RONDO_CHECK(post_send(r, 0, j, r->a->sendbuf));
  for (size_t g = 0; g < total; g++) {
    RONDO_CHECK(algo_waitall(r->a->comm, 1, &r->rreq[g % WINDOW]));
    RONDO_CHECK(forward(r, g));
    RONDO_CHECK(post_recv(r, g + r->ahead));
  }
  return algo_waitall(r->a->comm, (int)total, r->sreq);
}

/* On failure, requests still posted must not outlive the buffers. */
static void cancel_all(ring_t *r)
{
  for (int i = 0; i < WINDOW; i++) {
    if (r->rreq[i] != MPI_REQUEST_NULL) {
      MPI_CHECK_LOG(MPI_Cancel(&r->rreq[i]));
      MPI_CHECK_LOG(MPI_Wait(&r->rreq[i], MPI_STATUS_IGNORE));
    }
  }
  (void)algo_waitall(r->a->comm, (int)(r->steps * r->k), r->sreq); /* already failing */
}

static rondo_status_t allreduce_ring(const algo_allreduce_args_t *a)
{
  rondo_comm_t comm = a->comm;
  if (comm->size == 1) {
    algo_copy_input(a);
    return RONDO_SUCCESS;
  }
  ring_t r = {.a = a, .p = comm->size, .rank = comm->rank};
  r.left = (r.rank + r.p - 1) % r.p;
  r.right = (r.rank + 1) % r.p;
  r.steps = 2 * (size_t)(r.p - 1);
  size_t max_seg = (a->count + (size_t)r.p - 1) / (size_t)r.p;
  size_t chunk_elems = algo_ring_chunk(comm->cfg.ring_chunk, comm->link_beta) / a->esize;
  if (chunk_elems == 0)
    chunk_elems = 1;
  r.k = max_seg / chunk_elems + (max_seg % chunk_elems != 0); /* chunk_elems may be huge */
  /* The largest chunk is ceil(max_seg / k) elements. */
  r.slot_bytes = ((max_seg + r.k - 1) / r.k) * a->esize;
  for (int i = 0; i < WINDOW; i++)
    r.rreq[i] = MPI_REQUEST_NULL;

  size_t nreq = r.steps * r.k;
  r.sreq = malloc(nreq * sizeof *r.sreq);
  if (r.sreq == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "ring: %zu requests", nreq);
  for (size_t i = 0; i < nreq; i++)
    r.sreq[i] = MPI_REQUEST_NULL;
  /* Reduce-scatter chunks g < (p-1) k land in slot g % WINDOW. */
  size_t reduced = (size_t)(r.p - 1) * r.k;
  r.ahead = reduced < WINDOW ? reduced : WINDOW;
  rondo_status_t st = algo_scratch(comm, r.ahead * r.slot_bytes, (void **)&r.tmp);
  if (st == RONDO_SUCCESS) {
    st = run(&r);
    if (st != RONDO_SUCCESS)
      cancel_all(&r);
  }
  free(r.sreq);
  return st;
}

/* Measured, not modelled: on the test bed's 2 hosts (docs/PERFORMANCE.md),
 * 256 KiB chunks pipelined well over 10 Gbit/s links (0.2 ms a chunk; the
 * ring was the fastest at 16 MiB, 15.0 ms against 17.0 ms for
 * Rabenseifner), but over 1 Gbit/s links (2.1 ms a chunk) the ring took
 * 1.3-1.6 times as long as Rabenseifner or recursive doubling at 4-16 MiB,
 * where the same bytes cross the link; 1 MiB chunks or whole segments
 * matched them. Each chunk is a message of its own whose handshake waits
 * for the queue of a saturated link. So a chunk that takes over 1 ms on the
 * link is not cut: the segment goes whole (in pieces of at most 1 GiB). */
size_t algo_ring_chunk(size_t chunk, double link_beta)
{
  if (chunk == 0)
    chunk = CHUNK_DEFAULT;
  if (link_beta > 0 && (double)chunk * link_beta > CHUNK_MAX_SEC)
    return CHUNK_WHOLE;
  return chunk;
}

int algo_ring_describe(size_t chunk, double link_beta, char *buf, size_t len)
{
  if (chunk == 0)
    chunk = CHUNK_DEFAULT;
  double ms = (double)chunk * link_beta * 1e3;
  if (algo_ring_chunk(chunk, link_beta) == chunk)
    return snprintf(buf, len, "ring across nodes: pipelined in %zu-byte chunks (%.2f ms each on "
                    "the link)", chunk, ms);
  return snprintf(buf, len, "ring across nodes: each segment whole (a %zu-byte chunk would take "
                  "%.2f ms on the link, over %g ms)", chunk, ms, CHUNK_MAX_SEC * 1e3);
}

/* Cost: 2 (p-1) steps of chunks of c = min(n/p, chunk): alpha(c) * steps +
 * max(M, R) + min(M, R) * c / (n/p), M = beta * 2n (p-1)/p, R = gamma *
 * n (p-1)/p. The pipeline hides all but one chunk of the cheaper of moving
 * and reducing; while a segment is one chunk nothing overlaps and M and R
 * add up (cost.c says why this form). Step 0 sends straight from sendbuf:
 * no input copy. Across a slow node link c is the whole segment, as the
 * ring runs there (algo_ring_chunk). */
double algo_ring_time(const select_level_t *lv, double n, int p, size_t chunk_bytes, int across)
{
  double chunk = (double)algo_ring_chunk(chunk_bytes, across ? lv->beta : 0);
  double seg = n / p, msg = seg < chunk ? seg : chunk;
  double moved = lv->beta * 2 * n * (p - 1) / p;
  double reduced = lv->gamma * n * (p - 1) / p;
  double exposed = moved < reduced ? moved : reduced;
  if (seg > chunk)
    exposed *= chunk / seg;
  return 2.0 * (p - 1) * select_msg_alpha(lv, msg) + (moved > reduced ? moved : reduced) +
         exposed;
}

static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_ring_time(select_p2p_level(prm, in), (double)in->bytes, in->ranks,
                        prm->ring_chunk, in->nodes > 1);
}

const algo_desc_t algo_ring = {
    .select = {.id = RONDO_ALGO_RING, .name = "ring", .mem = SELECT_MEM_HOST, .cost = cost},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = allreduce_ring,
};
