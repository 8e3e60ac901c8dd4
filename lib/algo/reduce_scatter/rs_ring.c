/*
 * Ring reduce-scatter: the first half of the ring all-reduce. In step
 * t = 0 .. p-2 rank r sends the partial sum of block r-t-1 to its right
 * neighbour and receives the partial sum of block r-t-2 from its left,
 * adding its own contribution; after p-1 steps it holds block r whole.
 * Every rank sends and reduces (p-1)/p of the buffer, the minimum, and
 * talks to its two neighbours only: across nodes one stream per node link
 * and step, where pairwise exchange sends every local rank's block over
 * the link at once.
 *
 * Each step's block is cut into chunks of the ring's pipeline size
 * (RONDO_RING_CHUNK_BYTES, whole across a slow link: algo_ring_chunk); a
 * chunk is sent on as soon as it has arrived and been reduced, so the
 * reduction of one chunk overlaps the transfer of the next. Partial sums
 * live in two scratch blocks that take turns: the one being sent and the
 * one being filled.
 */
#include "algo/common/blocks.h"

#include "reduce/reduce.h"

#define WINDOW 4 /* receives in flight */

typedef struct {
  const algo_blocks_args_t *a;
  int p, rank, left, right;
  size_t chunk;       /* elements per chunk */
  char *acc[2];       /* partial sums: step t fills acc[t % 2] */
  char *in[WINDOW];   /* received chunks */
} ring_t;

static int block_of(const ring_t *r, int t, int receiving)
{
  int b = r->rank - t - 1 - receiving;
  return ((b % r->p) + r->p) % r->p;
}

/* Chunks of block b. */
static size_t chunks(const ring_t *r, int b)
{
  size_t n = r->a->counts[b];
  return n == 0 ? 0 : (n + r->chunk - 1) / r->chunk;
}

static void chunk_span(const ring_t *r, int b, size_t j, size_t *off, size_t *n)
{
  size_t len = r->a->counts[b];
  *off = j * r->chunk;
  *n = len - *off < r->chunk ? len - *off : r->chunk;
}

/* One step: send block block_of(t, 0) from src (sendbuf at step 0, else the
 * previous partial sums), receive block block_of(t, 1) chunk by chunk and
 * reduce each with this rank's input into dst. */
static rondo_status_t step(ring_t *r, int t, const char *src, char *dst)
{
  const algo_blocks_args_t *a = r->a;
  rondo_comm_t comm = a->comm;
  size_t es = a->esize, off, n;
  int sb = block_of(r, t, 0), rb = block_of(r, t, 1);
  size_t ns = chunks(r, sb), nr = chunks(r, rb);
  MPI_Request sreq[WINDOW], rreq[WINDOW];
  for (int i = 0; i < WINDOW; i++)
    sreq[i] = rreq[i] = MPI_REQUEST_NULL;
  rondo_status_t st = RONDO_SUCCESS;
  size_t posted = 0, sent = 0;
  /* receives run up to WINDOW ahead; sends go as their windows free */
  for (size_t j = 0; j < nr || sent < ns; j++) {
    while (st == RONDO_SUCCESS && posted < nr && posted < j + WINDOW) {
      chunk_span(r, rb, posted, &off, &n);
      st = algo_irecv(comm, r->in[posted % WINDOW], n * es, r->left, &rreq[posted % WINDOW]);
      posted++;
    }
    if (st == RONDO_SUCCESS && sent < ns) {
      st = algo_waitall(comm, 1, &sreq[sent % WINDOW]);
      chunk_span(r, sb, sent, &off, &n);
      if (st == RONDO_SUCCESS)
        st = algo_isend(comm, src + (t == 0 ? a->displs[sb] : 0) * es + off * es, n * es,
                        r->right, &sreq[sent % WINDOW]);
      sent++;
    }
    if (st == RONDO_SUCCESS && j < nr) {
      st = algo_waitall(comm, 1, &rreq[j % WINDOW]);
      chunk_span(r, rb, j, &off, &n);
      if (st == RONDO_SUCCESS)
        reduce_apply(dst + off * es, blocks_at(a, a->sendbuf, a->displs[rb] + off),
                     r->in[j % WINDOW], n, a->dtype, a->op);
    }
    if (st != RONDO_SUCCESS)
      break;
  }
  if (st != RONDO_SUCCESS) {
    algo_abandon(WINDOW, rreq, WINDOW, sreq);
    return st;
  }
  return algo_waitall(comm, WINDOW, sreq);
}

static rondo_status_t reduce_scatter_ring(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  ring_t r = {.a = a, .p = comm->size, .rank = comm->rank};
  r.left = (r.rank + r.p - 1) % r.p;
  r.right = (r.rank + 1) % r.p;
  size_t most = blocks_max(a);
  r.chunk = algo_ring_chunk(comm->cfg.ring_chunk, comm->link_beta) / a->esize;
  if (r.chunk == 0)
    r.chunk = 1;
  if (r.chunk > most)
    r.chunk = most > 0 ? most : 1;
  size_t block = most * a->esize, piece = r.chunk * a->esize;
  char *tmp = NULL;
  RONDO_CHECK(algo_check_message(piece));
  RONDO_CHECK(algo_scratch(comm, 2 * block + WINDOW * piece + 1, (void **)&tmp));
  r.acc[0] = tmp;
  r.acc[1] = tmp + block;
  for (int i = 0; i < WINDOW; i++)
    r.in[i] = tmp + 2 * block + (size_t)i * piece;
  /* the last step reduces into recvbuf: block r */
  for (int t = 0; t < r.p - 1; t++) {
    const char *src = t == 0 ? a->sendbuf : r.acc[(t - 1) % 2];
    char *dst = t == r.p - 2 ? a->recvbuf : r.acc[t % 2];
    RONDO_CHECK(step(&r, t, src, dst));
  }
  return RONDO_SUCCESS;
}

/* Cost: p-1 steps of one block (n/p bytes) in chunks of c = min(n/p,
 * chunk): alpha(c) per step + max(M, R) + min(M, R) c / (n/p), with M =
 * beta n (p-1)/p and R = gamma n (p-1)/p, as algo_ring_time prices the
 * all-reduce's ring (half its steps and bytes). */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_ring_time(select_p2p_level(prm, in), (double)in->bytes, in->ranks,
                        prm->ring_chunk, in->nodes > 1) /
         2;
}

const algo_desc_t algo_rs_ring = {
    .select = {.id = RONDO_ALGO_RING, .name = "ring", .mem = SELECT_MEM_HOST, .cost = cost},
    .collectives = ALGO_SERVES_REDUCE_SCATTER,
    .blocks = reduce_scatter_ring,
};
