/*
 * The argument check on one node: a board in shared memory (agree.h,
 * board.h).
 *
 * On a comm whose ranks all share one node, the check is a board in shared
 * memory. Each rank writes the call's signature (its local status, the
 * collective, its arguments) into its own payload line, then into its own
 * flag line a 64-bit sum of the signature (0 if its arguments were bad) and,
 * last, the call number. Every rank waits until every flag line carries the
 * call number and compares the sums with its own; only when one differs or
 * is 0 does it read that rank's payload, to say what differs. So the lines
 * the others poll get two stores per call, not one per field (a line that
 * is written while another core polls it moves back and forth with every
 * store: writing the fields there cost 0.03-0.05 us of a 0.3 us call), and
 * a call reads one line per rank. The sum chains bijective steps (xor a
 * field, multiply by an odd constant, xor-shift), so calls that differ in
 * one field always get different sums; several fields differing at once
 * collide with probability about 2^-64.
 *
 * That is one cache-line exchange, and the shm all-reduce, whose first
 * round needs the same exchange to see the others' data, folds the board
 * into it (shm.c): there the check costs nothing. Two sets of lines per
 * rank, used alternately: a rank can be at most one call ahead of
 * another's reading, because no rank passes call k+1's board before every
 * rank has written its lines for k+1, which it does after reading k's.
 *
 */
#include "algo/agree/board.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* One 16-byte store per flag on x86-64; ThreadSanitizer does not model
 * fences, so its builds take the portable release store. */
#if defined(__x86_64__) && defined(__SSE2__) && !defined(__SANITIZE_THREAD__)
#define FLAG_STORE_SSE2 1
#include <emmintrin.h>
#endif

#include "algo/agree/signature.h"
#include "algo/common/shared_window.h"
#include "topo/topo.h"

#define LINE 64

/* Per rank: flag lines for even and odd calls, then payload lines. */
enum { FLAG = 0, PAYLOAD = 2, LINES = 4 };

typedef struct {
  uint64_t call; /* this call's number; written last */
  uint64_t sum;  /* sig_sum() of the signature, 0 if the arguments were bad */
} __attribute__((aligned(16))) board_flag_t;

typedef struct {
  int32_t status;                /* the rank's own argument check */
  int32_t what;                  /* the collective (agree_coll_t) */
  int64_t field[AGREE_SIG_MAX]; /* the signature */
} board_payload_t;

_Static_assert(sizeof(board_payload_t) <= LINE, "a payload is one cache line");
_Static_assert(SHWIN_ALIGN % LINE == 0 && LINE % 16 == 0,
               "every line, and so every flag, is aligned for the 16-byte store");

struct agree_board {
  shwin_t w;      /* each rank's LINES lines, SHWIN_ALIGN-aligned */
  uint64_t call;  /* calls so far on this comm */
};

rondo_status_t agree_board_create(rondo_comm_t comm)
{
  const topo_t *t = comm->topo;
  if (t->node_count != 1 || comm->size == 1)
    return RONDO_SUCCESS; /* the exchange, or nothing to check */
  /* A rank short of memory for its own bookkeeping, or a node where MPI
   * cannot share memory, makes the whole comm use the exchange. */
  struct agree_board *b = calloc(1, sizeof *b);
  rondo_status_t mine = b != NULL ? RONDO_SUCCESS
                                  : rondo__fail(RONDO_ERR_NO_MEMORY, "argument board");
  shwin_t w;
  rondo_status_t st = shwin_create(t->node, LINES * LINE, LINES * LINE, mine,
                                   "memory for its argument board", &w);
  if (st != RONDO_SUCCESS) {
    LOG_INFO("argument board: %s; the check exchanges packets over MPI", rondo_last_error());
    free(b);
    return RONDO_SUCCESS;
  }
  b->w = w;
  comm->agree->board = b;
  return RONDO_SUCCESS;
}

void agree_board_free(rondo_comm_t comm, int mpi_usable)
{
  struct agree_board *b = comm->agree->board;
  if (b == NULL)
    return;
  shwin_free(&b->w, mpi_usable);
  free(b);
  comm->agree->board = NULL;
}

int agree_board_active(rondo_comm_t comm) { return comm->agree->board != NULL; }

static board_flag_t *flag(const struct agree_board *b, int q, uint64_t call)
{
  return (board_flag_t *)(b->w.seg[q] + (FLAG + (call & 1)) * LINE);
}

static board_payload_t *payload(const struct agree_board *b, int q, uint64_t call)
{
  return (board_payload_t *)(b->w.seg[q] + (PAYLOAD + (call & 1)) * LINE);
}

/* Publishes call and sum, after everything written before. On x86-64 one
 * aligned 16-byte store (the flag is aligned by construction: its line
 * starts a multiple of LINE into a SHWIN_ALIGN-aligned segment; such a
 * store is single-copy atomic on every x86-64 with AVX, and
 * the others' 8-byte read of call happens before their read of sum), so the
 * polled line takes one store per call; elsewhere sum, then call with
 * release semantics. */
static void flag_store(board_flag_t *f, uint64_t call, uint64_t sum)
{
#ifdef FLAG_STORE_SSE2
  __atomic_thread_fence(__ATOMIC_RELEASE);
  _mm_store_si128((__m128i *)f, _mm_set_epi64x((long long)sum, (long long)call));
#else
  f->sum = sum;
  __atomic_store_n(&f->call, call, __ATOMIC_RELEASE);
#endif
}

/* The collective and every field through bijective steps; never 0. */
/* A rank waiting on the board for the others to call the collective. */
typedef struct {
  double since;  /* when the wait began (0: not yet looked) */
  int warned;
} board_wait_t;

/* Some ranks have not come to the call for a while: past
 * RONDO_STALL_WARN_SEC this rank says which (once per call); past
 * RONDO_STALL_ABORT_SEC it ends the job, naming them: a blocking
 * collective cannot be taken back from the ranks that came, so failing it
 * on them alone would leave the comm out of step. (MPI_Abort on the world:
 * MPICH's abort on another comm ends this process only, and the job waits
 * for the others.) */
static void board_stall(rondo_comm_t comm, const agree_sig_t *sig, uint64_t call,
                        board_wait_t *w)
{
  double warn = comm->cfg.stall_warn_sec, abort_after = comm->cfg.stall_abort_sec;
  if (warn <= 0 && abort_after <= 0)
    return;
  double t = rondo__now();
  if (w->since == 0) {
    w->since = t;
    return;
  }
  double waited = t - w->since;
  int warn_now = warn > 0 && waited >= warn && !w->warned;
  int abort_now = abort_after > 0 && waited >= abort_after;
  if (!warn_now && !abort_now)
    return;
  const struct agree_board *b = comm->agree->board;
  char ranks[160] = "";
  size_t used = 0;
  for (int q = 0, shown = 0; q < b->w.size && used + 16 < sizeof ranks; q++)
    if (__atomic_load_n(&flag(b, q, call)->call, __ATOMIC_ACQUIRE) != call)
      used += (size_t)snprintf(ranks + used, sizeof ranks - used, "%s%d", shown++ ? "," : "", q);
  if (abort_now) {
    LOG_ERROR("%s: rank(s) %s of this comm did not call it within %.0f s "
              "(RONDO_STALL_ABORT_SEC): ending the job",
              agree_coll_name(sig->coll), ranks, waited);
    /* A moment for the launcher to forward that line before the abort
     * ends the job (a loaded run once ended without it). */
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  w->warned = 1;
  LOG_WARN("%s: waited %.0f s for rank(s) %s of this comm to call it (RONDO_STALL_WARN_SEC); "
           "every rank must call the same collectives in the same order. "
           "RONDO_STALL_ABORT_SEC ends the job instead of waiting",
           agree_coll_name(sig->coll), waited, ranks);
}

void agree_post(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig)
{
  struct agree_board *b = comm->agree->board;
  uint64_t call = b->call + 1;
  board_payload_t *p = payload(b, b->w.rank, call);
  p->status = local;
  p->what = sig->coll;
  for (int i = 0; i < AGREE_SIG_MAX; i++)
    p->field[i] = i < sig->n ? sig->value[i] : 0;
  flag_store(flag(b, b->w.rank, call), call, local == RONDO_SUCCESS ? agree_sig_sum(sig) : 0);
}

/* MPI's progress, while this rank waits on the board: a rank may still
 * wait for its last call's sends to complete, which under a rendezvous
 * protocol takes this rank's MPI to answer (UCX's acknowledgement of a
 * shared-memory get), and a wait that polls only shared memory would then
 * wait for that rank forever. */
static void board_progress(rondo_comm_t comm)
{
  int flag = 0;
  MPI_CHECK_LOG(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm->mpi, &flag, MPI_STATUS_IGNORE));
}

/* On a mismatch: whether every rank's payload names this collective. */
static int board_same_call(const struct agree_board *b, uint64_t call, agree_coll_t coll)
{
  for (int q = 0; q < b->w.size; q++)
    if (payload(b, q, call)->what != (int32_t)coll)
      return 0;
  return 1;
}

rondo_status_t agree_finish(rondo_comm_t comm, rondo_status_t local,
                            const agree_sig_t *sig)
{
  struct agree_board *b = comm->agree->board;
  uint64_t call = ++b->call;
  uint64_t mine = flag(b, b->w.rank, call)->sum;
  int failed = -1, differs = -1, leaving = -1;
  board_wait_t w = {0};
  for (int q = 0; q < b->w.size; q++) {
    if (q == b->w.rank)
      continue;
    const board_flag_t *f = flag(b, q, call);
    unsigned polls = 0;
    while (__atomic_load_n(&f->call, __ATOMIC_ACQUIRE) != call) {
      topo_backoff(comm->topo, polls++);
      if ((polls & 255) == 0)
        board_progress(comm);
      if ((polls & 1023) == 0)
        board_stall(comm, sig, call, &w);
    }
    if (f->sum == 0 && failed < 0)
      failed = q;
    else if (f->sum != mine && differs < 0)
      differs = q;
    if (f->sum != mine && f->sum != 0 && leaving < 0 &&
        payload(b, q, call)->what == AGREE_COMM_DESTROY)
      leaving = q;
  }
  if (local != RONDO_SUCCESS)
    return local;
  if (leaving >= 0)
    return agree_left(comm, sig, leaving);
  if (failed >= 0)
    return rondo__fail(RONDO_ERR_PEER,
                       "%s: rank %d of this comm passed invalid arguments (see its log line or "
                       "rondo_last_error())",
                       agree_coll_name(sig->coll), failed);
  if (differs < 0)
    return RONDO_SUCCESS;
  agree_mismatch_same_call = board_same_call(b, call, sig->coll);
  const board_payload_t *theirs = payload(b, differs, call);
  if (theirs->what != (int32_t)sig->coll)
    return rondo__fail(RONDO_ERR_MISMATCH,
                       "ranks called different collectives at the same time: rank %d %s, this "
                       "rank %s",
                       differs, agree_coll_name((agree_coll_t)theirs->what),
                       agree_coll_name(sig->coll));
  for (int k = 0; k < sig->n; k++) {
    int i = agree_report_order(sig, k);
    if (theirs->field[i] != sig->value[i] && agree_field_is_hash(sig->field[i]))
      return rondo__fail(RONDO_ERR_MISMATCH, "%s: ranks passed different %s: rank %d and this rank",
                         agree_coll_name(sig->coll), sig->field[i], differs);
    if (theirs->field[i] != sig->value[i])
      return rondo__fail(RONDO_ERR_MISMATCH,
                         "%s: ranks passed different %s: rank %d has %lld, this rank %lld",
                         agree_coll_name(sig->coll), sig->field[i], differs,
                         (long long)theirs->field[i], (long long)sig->value[i]);
  }
  return rondo__fail(RONDO_ERR_INTERNAL, "%s: argument board out of step",
                     agree_coll_name(sig->coll));
}

void agree_board_leave_step(rondo_comm_t comm, agree_leave_t *st, const agree_sig_t *sig)
{
  struct agree_board *b = comm->agree->board;
  if (!st->open) {
    agree_post(comm, RONDO_SUCCESS, sig);
    st->call = ++b->call;
    st->mine = flag(b, b->w.rank, st->call)->sum;
    st->open = 1;
  }
  int all = 1, missing = 0;
  char who[256] = "";
  size_t n = 0;
  for (int q = 0; q < b->w.size; q++) {
    const board_flag_t *f = flag(b, q, st->call);
    if (__atomic_load_n(&f->call, __ATOMIC_ACQUIRE) != st->call) {
      if (n + 16 < sizeof who)
        n += (size_t)snprintf(who + n, sizeof who - n, "%s%d", missing ? ", " : "", q);
      missing++;
      continue;
    }
    all &= f->sum == st->mine;
  }
  if (missing) { /* still open: say once, after the warning time, whom it waits for */
    board_progress(comm);
    double now = rondo__now();
    if (st->since == 0)
      st->since = now;
    if (!st->warned && comm->cfg.stall_warn_sec > 0 &&
        now - st->since > comm->cfg.stall_warn_sec) {
      st->warned = 1;
      LOG_WARN("leaving a comm (rondo_comm_destroy or rondo_finalize): waited %.0f s for "
               "rank(s) %s of it to leave it too; a rank that waits for this one on another "
               "comm waits as well: destroy comms in the same order on every rank",
               now - st->since, who);
    }
    return;
  }
  st->open = 0;
  st->done = all;
}

