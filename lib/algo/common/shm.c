/*
 * The shared-memory engine (see shm.h for the protocol). Flags are 64-bit
 * sequence numbers written with release and read with acquire semantics;
 * MPI is used only to allocate the window.
 */
#include "algo/common/shm.h"
#include "algo/common/blocks.h"
#include "algo/common/shared_alloc.h"
#include "algo/common/shared_window.h"

#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"
#include "topo/topo.h"

#define SHM_SLOTS 4
#define LINE 64
/* Three flags, then where this rank's input lies when the others read it
 * in place (rondo_mem_alloc memory): rewritten only by a later such call,
 * and each returns only once every peer is done with it. */
#define FLAGS_BYTES (4 * LINE)
_Static_assert(SHWIN_ALIGN % LINE == 0, "each flag on a cache line of its own");
enum { POSTED = 0, REDUCED = 1, DONE = 2, WHERE = 3 }; /* line index */

struct shm_state {
  shwin_t w;            /* each local rank's segment, SHWIN_ALIGN-aligned */
  size_t slot_bytes;
  uint64_t seq;         /* last sequence number used */
  uint64_t done_min;    /* every other rank's done flag was at least this */
  shm_progress_t progress; /* called while waiting (shm_run_with), or NULL */
  void *progress_arg;
};

static volatile uint64_t *flag(const struct shm_state *s, int q, int which)
{
  return (volatile uint64_t *)(s->w.seg[q] + which * LINE);
}

static char *slot(const struct shm_state *s, int q, uint64_t seq)
{
  return s->w.seg[q] + FLAGS_BYTES + (seq % SHM_SLOTS) * s->slot_bytes;
}

static void publish(struct shm_state *s, int which, uint64_t seq)
{
  __atomic_store_n(flag(s, s->w.rank, which), seq, __ATOMIC_RELEASE);
}

/* Waits until rank q's flag reaches seq. */
static void wait_flag(const struct shm_state *s, const topo_t *topo, int q, int which,
                      uint64_t seq)
{
  unsigned polls = 0;
  while (__atomic_load_n(flag(s, q, which), __ATOMIC_ACQUIRE) < seq) {
    if (s->progress != NULL)
      s->progress(s->progress_arg);
    topo_backoff(topo, polls++);
  }
}

static void wait_all(const struct shm_state *s, const topo_t *topo, int which, uint64_t seq)
{
  for (int q = 0; q < s->w.size; q++)
    if (q != s->w.rank)
      wait_flag(s, topo, q, which, seq);
}

/* Waits until every rank is done with round `seq` (its slots may be
 * rewritten). The peers' done flags are read only when the last reading
 * does not already show it: each read of a line another core just wrote
 * is a transfer between the cores, and a small call's whole cost is a few
 * of them. */
static void wait_done(struct shm_state *s, const topo_t *topo, uint64_t seq)
{
  if (s->done_min >= seq)
    return;
  uint64_t least = UINT64_MAX;
  for (int q = 0; q < s->w.size; q++) {
    if (q == s->w.rank)
      continue;
    wait_flag(s, topo, q, DONE, seq);
    uint64_t v = __atomic_load_n(flag(s, q, DONE), __ATOMIC_ACQUIRE);
    least = v < least ? v : least;
  }
  if (least != UINT64_MAX)
    s->done_min = least;
}

static rondo_status_t shm_create(rondo_comm_t comm, struct shm_state **out)
{
  const topo_t *topo = comm->topo;
  /* A rank short of memory for its bookkeeping still takes the window's
   * collective steps, and the agreement that ends them tells the others. */
  struct shm_state *s = calloc(1, sizeof *s);
  rondo_status_t mine =
      s != NULL ? RONDO_SUCCESS : rondo__fail(RONDO_ERR_NO_MEMORY, "shm: state");
  size_t slot_bytes = comm->cfg.shm_chunk;
  size_t bytes = FLAGS_BYTES + SHM_SLOTS * slot_bytes;
  shwin_t w;
  /* Every rank's flags are zero before anyone polls them. */
  rondo_status_t st = shwin_create(topo->node, bytes, FLAGS_BYTES, mine,
                                   "memory for its shm state", &w);
  if (st != RONDO_SUCCESS) {
    free(s);
    return st;
  }
  s->w = w;
  s->slot_bytes = slot_bytes;
  LOG_DEBUG("shm: window of %d x %zu bytes on a node of %d ranks", w.size, bytes, w.size);
  *out = s;
  return RONDO_SUCCESS;
}

void shm_free(rondo_comm_t comm)
{
  struct shm_state *s = comm->shm;
  if (s == NULL)
    return;
  shwin_free(&s->w, 1);
  free(s);
  comm->shm = NULL;
}

/* ---- one round ---------------------------------------------------------------------- */

typedef struct {
  const algo_allreduce_args_t *a;
  struct shm_state *s;
  const topo_t *topo;
  int g;          /* slices */
  size_t piece;   /* elements per piece */
  int whole;      /* a small all-reduce: every rank reduces every piece (shm.h) */
  int direct;     /* this rank reduces its own pieces from sendbuf (shm.h) */
  /* A reduce-scatter's or all-gather's blocks (shm_run_blocks): slice g is
   * block g, at b->displs[g], owned by local rank g % L; NULL: the node's
   * slices (topo.h). */
  const algo_blocks_args_t *b;
  /* [slices]: where owned block g lies in this rank's own buffer: a
   * reduce-scatter's recvbuf, an all-gather's sendbuf */
  const size_t *place;
  /* Every rank's input lies in rondo_mem_alloc allocation `shared` (agreed
   * in the call's signature), or -1. Then nobody copies into the slots:
   * each rank reads the peers' inputs where they lie, in one round, and
   * returns once every peer is done with its own (shared_alloc.h). */
  int shared;
} run_t;

/* Piece k of slice g: elements [*off, *off + *n) of the buffer. */
static void piece_of(const run_t *r, int g, size_t k, size_t *off, size_t *n)
{
  size_t start, len;
  if (r->b != NULL) {
    start = r->b->displs[g];
    len = r->b->counts[g];
  } else {
    topo_slice(r->a->count, r->g, g, &start, &len);
  }
  size_t lo = k * r->piece;
  *off = start + lo;
  *n = lo >= len ? 0 : (len - lo < r->piece ? len - lo : r->piece);
}

static int owner(const run_t *r, int g)
{
  return r->b != NULL ? g % r->s->w.size : topo_owner(g, r->s->w.size);
}

static int owns(const run_t *r, int g) { return owner(r, g) == r->s->w.rank; }

#define AT(base, elems) ((char *)(base) + (elems) * esize)

/* Where owned block g lies in this rank's own buffer (place NULL: the one
 * block it owns, at its start). */
static size_t place_of(const run_t *r, int g) { return r->place != NULL ? r->place[g] : 0; }

/* What this rank posts for elements from off: its input, or in an
 * all-gather its own slice of recvbuf, or its block in sendbuf (an
 * all-gather's blocks: recvbuf is written only once the call is agreed
 * on). */
static const char *posted_from(const run_t *r, shm_mode_t mode, int g, size_t off)
{
  const algo_allreduce_args_t *a = r->a;
  if (mode != SHM_ALLGATHER)
    return (const char *)a->sendbuf + off * a->esize;
  if (r->b != NULL)
    return (const char *)a->sendbuf + (place_of(r, g) + off - r->b->displs[g]) * a->esize;
  return (const char *)a->recvbuf + off * a->esize;
}

/* Where this rank's result for slice g's elements from off goes. */
static char *result_at(const run_t *r, int g, size_t off)
{
  const algo_allreduce_args_t *a = r->a;
  if (r->b != NULL)
    return (char *)a->recvbuf + (place_of(r, g) + off - r->b->displs[g]) * a->esize;
  return (char *)a->recvbuf + off * a->esize;
}

/* The offset of rank q's input in allocation r->shared. */
static volatile uint64_t *where(const struct shm_state *s, int q)
{
  return flag(s, q, WHERE);
}

/* Rank q's input (its sendbuf) as this process sees it, in the shared
 * case: the allocation's part of q at the offset q posted. */
static const char *peer_input(const run_t *r, int q)
{
  if (q == r->s->w.rank)
    return r->a->sendbuf;
  return shalloc_peer(r->a->comm, r->shared, q, (size_t)*where(r->s, q));
}

/* Rank q's input for piece g of round seq (elements from off): its slot,
 * this rank's own sendbuf where it reduces from there (r->direct), or
 * where it lies in the shared case. */
static const void *input(const run_t *r, uint64_t seq, int q, int g, size_t off)
{
  size_t esize = r->a->esize;
  if (r->shared >= 0)
    return AT(peer_input(r, q), off);
  if (q == r->s->w.rank && r->direct)
    return AT(r->a->sendbuf, off);
  return AT(slot(r->s, q, seq), (size_t)g * r->piece);
}

/* Reduces piece g of round seq (n elements from off) across all ranks'
 * inputs into dst, in rank order. */
static void reduce_piece(const run_t *r, uint64_t seq, int g, size_t off, size_t n, void *dst)
{
  const algo_allreduce_args_t *a = r->a;
  int me = r->s->w.rank;
  if (r->shared >= 0 && me >= 2 && dst == input(r, seq, me, g, off)) {
    /* In place in the shared case: this rank's input is dst, which the
     * first reduction below would overwrite before its turn. Through a
     * buffer on the stack, a few lines at a time, in the same order. */
    enum { TEMP = 4096 };
    _Alignas(64) char temp[TEMP];
    size_t step = TEMP / a->esize;
    for (size_t done = 0; done < n; done += step) {
      size_t m = n - done < step ? n - done : step;
      reduce_apply(temp, input(r, seq, 0, g, off + done), input(r, seq, 1, g, off + done), m,
                   a->dtype, a->op);
      for (int q = 2; q < r->s->w.size; q++)
        reduce_apply(temp, temp, input(r, seq, q, g, off + done), m, a->dtype, a->op);
      memcpy((char *)dst + done * a->esize, temp, m * a->esize);
    }
    return;
  }
  if (r->s->w.size == 1) {
    memmove(dst, input(r, seq, 0, g, off), n * a->esize);
    return;
  }
  reduce_apply(dst, input(r, seq, 0, g, off), input(r, seq, 1, g, off), n, a->dtype, a->op);
  for (int q = 2; q < r->s->w.size; q++)
    reduce_apply(dst, dst, input(r, seq, q, g, off), n, a->dtype, a->op);
}

/* One round. With a->agree, the first round also agrees on the call: this
 * rank posts its signature to the argument board once its data is in its
 * slot, so the board's wait for every rank is the wait for every rank's data
 * as well, and the check costs no extra exchange. On a mismatch no flag is
 * published and the sequence number is not used. */
static rondo_status_t round_run(const run_t *r, shm_mode_t mode, size_t k)
{
  const algo_allreduce_args_t *a = r->a;
  struct shm_state *s = r->s;
  size_t esize = a->esize, off, n;
  uint64_t seq = s->seq + 1;
  char *mine = slot(s, s->w.rank, seq);
  int agreeing = k == 0 && a->agree != NULL;

  if (seq > SHM_SLOTS)
    wait_done(s, r->topo, seq - SHM_SLOTS); /* my slot is free again */
  if (r->shared >= 0) /* where my input lies, for the others to read it */
    *where(s, s->w.rank) =
        (uint64_t)((const char *)a->sendbuf - shalloc_peer(a->comm, r->shared, s->w.rank, 0));
  /* Copy in: the pieces the others reduce (and, unless r->direct, the
   * owned ones too), or the owned ones (allgather). None where the others
   * read my input in place. */
  for (int g = 0; g < r->g && r->shared < 0; g++) {
    piece_of(r, g, k, &off, &n);
    int skip = mode == SHM_ALLGATHER ? !owns(r, g) : r->direct && owns(r, g);
    if (skip || n == 0)
      continue;
    memcpy(AT(mine, (size_t)g * r->piece), posted_from(r, mode, g, off), n * esize);
  }
  if (agreeing) {
    agree_post(a->comm, RONDO_SUCCESS, a->agree);
    RONDO_CHECK(agree_finish(a->comm, RONDO_SUCCESS, a->agree));
  }
  /* An all-gather's own pieces reach their place in recvbuf from the slot
   * they were just copied into (still in this core's cache), once the call
   * is agreed on: a failed call leaves recvbuf as it was. */
  if (mode == SHM_ALLGATHER && r->b != NULL) {
    for (int g = 0; g < r->g; g++) {
      piece_of(r, g, k, &off, &n);
      const char *from = posted_from(r, mode, g, off);
      if (owns(r, g) && n > 0 && from != AT(a->recvbuf, off))
        memcpy(AT(a->recvbuf, off), r->shared >= 0 ? from : AT(mine, (size_t)g * r->piece),
               n * esize);
    }
  }
  s->seq = seq;
  /* Flags only grow and are waited on with >=, so a round may skip one:
   * after the board, nobody waits for a small all-reduce's data flag. */
  if (!(agreeing && r->whole))
    publish(s, POSTED, seq);

  if (r->whole) {
    /* Every rank reduces every piece itself, in rank order: the same
     * operands in the same order give the same bytes everywhere, and
     * nobody waits for anyone's reduction. */
    if (!agreeing)
      wait_all(s, r->topo, POSTED, seq);
    for (int g = 0; g < r->g; g++) {
      piece_of(r, g, k, &off, &n);
      if (n > 0)
        reduce_piece(r, seq, g, off, n, AT(a->recvbuf, off));
    }
    publish(s, DONE, seq);
    return RONDO_SUCCESS;
  }

  if (mode != SHM_ALLGATHER) {
    if (!agreeing) /* the board waited for everyone's data already */
      wait_all(s, r->topo, POSTED, seq);
    for (int g = 0; g < r->g; g++) {
      piece_of(r, g, k, &off, &n);
      if (!owns(r, g) || n == 0)
        continue;
      /* Into recvbuf (private, unlike the slots the others read), then
       * into my slot for the others to copy (allreduce). */
      reduce_piece(r, seq, g, off, n, result_at(r, g, off));
      if (mode == SHM_ALLREDUCE)
        memcpy(AT(mine, (size_t)g * r->piece), result_at(r, g, off), n * esize);
    }
    publish(s, REDUCED, seq);
  }

  if (mode != SHM_REDUCE_SCATTER) {
    int which = mode == SHM_ALLREDUCE ? REDUCED : POSTED;
    for (int g = 0; g < r->g; g++) {
      piece_of(r, g, k, &off, &n);
      if (n == 0 || owns(r, g)) /* my own pieces are in recvbuf already */
        continue;
      int q = owner(r, g);
      /* An all-gather's data was in the owner's slot before it posted to
       * the board this rank's agreement waited on. */
      if (!(agreeing && which == POSTED))
        wait_flag(s, r->topo, q, which, seq);
      const char *from = r->shared >= 0
                             ? peer_input(r, q) + (off - r->b->displs[g]) * esize
                             : AT(slot(s, q, seq), (size_t)g * r->piece);
      memcpy(AT(a->recvbuf, off), from, n * esize);
    }
  }
  publish(s, DONE, seq);
  /* The others read my input where it lies: the caller may rewrite it
   * once they are all done. */
  if (r->shared >= 0)
    wait_done(s, r->topo, seq);
  return RONDO_SUCCESS;
}

rondo_status_t shm_run(const algo_allreduce_args_t *a, shm_mode_t mode)
{
  return shm_run_with(a, mode, NULL, NULL);
}

/* Runs r's rounds (r's layout set: the node's slices or the blocks). */
static rondo_status_t run_rounds(run_t *r, shm_mode_t mode, size_t longest,
                                 shm_progress_t progress, void *arg)
{
  const algo_allreduce_args_t *a = r->a;
  r->piece = r->s->slot_bytes / ((size_t)r->g * a->esize);
  if (r->shared >= 0) /* no slots: one round of every block */
    r->piece = longest > 0 ? longest : 1;
  if (r->piece == 0) {
    rondo_status_t st = rondo__fail(RONDO_ERR_UNSUPPORTED,
                                    "shm: RONDO_SHM_CHUNK_BYTES=%zu is too small for %d slices of "
                                    "%zu-byte elements",
                                    r->s->slot_bytes, r->g, a->esize);
    if (a->agree != NULL) { /* the others wait on the board for this rank */
      agree_post(a->comm, st, a->agree);
      return agree_finish(a->comm, st, a->agree);
    }
    return st;
  }
  size_t rounds = (longest + r->piece - 1) / r->piece;
  if (rounds == 0 && a->agree != NULL)
    rounds = 1; /* the first round agrees on the call */
  r->whole = r->b == NULL && mode == SHM_ALLREDUCE && rounds == 1 &&
             shm_reduces_whole(a->count, a->count * a->esize, r->s->w.size);
  /* In place, this rank's input is dst itself: rank 0 and 1 read it in
   * the first reduce_apply, before dst is written; a later rank's would
   * be overwritten first, so that rank copies its pieces in as well. A
   * reduce-scatter is in place with recvbuf at this rank's block of
   * sendbuf (the dispatch gives it no other overlap: blocks.h). */
  int in_place = r->b != NULL ? (const char *)a->recvbuf ==
                                    (const char *)a->sendbuf +
                                        r->b->displs[a->comm->rank] * a->esize
                              : a->sendbuf == a->recvbuf;
  r->direct = mode != SHM_ALLGATHER && !r->whole &&
              (!in_place || r->s->w.rank < 2 || r->shared >= 0);
  r->s->progress = progress;
  r->s->progress_arg = arg;
  rondo_status_t st = RONDO_SUCCESS;
  for (size_t k = 0; k < rounds && st == RONDO_SUCCESS; k++) {
    st = round_run(r, mode, k);
    if (progress != NULL)
      progress(arg);
  }
  r->s->progress = NULL;
  return st;
}

rondo_status_t shm_run_with(const algo_allreduce_args_t *a, shm_mode_t mode,
                            shm_progress_t progress, void *arg)
{
  rondo_comm_t comm = a->comm;
  if (comm->shm == NULL)
    RONDO_CHECK(shm_create(comm, &comm->shm));
  run_t r = {.a = a, .s = comm->shm, .topo = comm->topo, .g = comm->topo->slices,
             .shared = -1};
  size_t start, longest;
  topo_slice(a->count, r.g, 0, &start, &longest); /* slice 0 is the longest */
  return run_rounds(&r, mode, longest, progress, arg);
}

rondo_status_t shm_run_blocks(const algo_blocks_args_t *b, shm_mode_t mode, const size_t *place)
{
  rondo_comm_t comm = b->comm;
  if (comm->shm == NULL)
    RONDO_CHECK(shm_create(comm, &comm->shm));
  algo_allreduce_args_t a = {.comm = comm, .sendbuf = b->sendbuf, .recvbuf = b->recvbuf,
                             .count = b->total, .dtype = b->dtype, .op = b->op,
                             .esize = b->esize, .agree = b->agree};
  /* The shared case needs the call agreed in its round (the board is
   * everyone's word that its input is ready) and one node (place NULL:
   * a rank's block at the start of its input). */
  int shared = place == NULL && b->agree != NULL && mode != SHM_ALLREDUCE &&
                       b->total * b->esize >= SHALLOC_MIN_BYTES
                   ? (int)agree_sig_find(b->agree, SHALLOC_SIG_FIELD, -1)
                   : -1;
  run_t r = {.a = &a, .s = comm->shm, .topo = comm->topo, .g = comm->size, .b = b,
             .place = place, .shared = shared};
  return run_rounds(&r, mode, blocks_max(b), NULL, NULL);
}
