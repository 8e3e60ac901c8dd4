/*
 * Argument agreement. Every rank of a blocking collective must call the same
 * collective with the same count, dtype, op, algorithm and root, and valid
 * arguments, or the data movement would hang or go wrong. rondo checks it at
 * every call, on every rank, before any data moves; a mismatch fails the call
 * everywhere with RONDO_ERR_MISMATCH, a local error with its own status on
 * its rank and RONDO_ERR_PEER on the others.
 *
 * One file (about 700 lines) on purpose: the board, the cross-node packet
 * and the leave protocol share one signature format and one stall rule.
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
 * Across nodes (or where MPI cannot share memory) an exchange of small
 * packets of the status and the signature carries the check, by rondo's
 * recursive doubling or MPI's all-reduce (check_exchange.c says which):
 * lg p latencies per call (docs/api.md). A small all-reduce run by the mpi
 * algorithm travels in its packet (check_packet.c says how, and how much
 * room it has), and Rabenseifner's halving sends its data in the steps of
 * rondo's exchange, so for those the check costs no round of its own
 * (where nodes are blocks of several ranks, larger inline data crosses
 * nodes from one rank a node).
 * Every rank sends the same packet shape whatever its call, so a mismatch
 * is still reported, never a hang.
 */
#include "algo/agree/agree.h"

#include <pthread.h>
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

#include "algo/algo.h"
#include "algo/agree/check_exchange.h"
#include "algo/common/shared_window.h"
#include "reduce/reduce.h"
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

static const char *const colls[AGREE_COLLS] = {
    "rondo_allreduce", "rondo_broadcast", "rondo_allgather", "rondo_allgatherv",
    "rondo_reduce_scatter", "rondo_alltoall", "rondo_barrier", "rondo_comm_split",
    "rondo_comm_destroy"};

const char *agree_coll_name(agree_coll_t coll)
{
  return (unsigned)coll < AGREE_COLLS ? colls[coll] : "?";
}

void agree_sig_add(agree_sig_t *sig, const char *field, int64_t value)
{
  if (sig->n < AGREE_SIG_MAX) {
    sig->field[sig->n] = field;
    sig->value[sig->n] = value;
    sig->n++;
  }
}

/* The field to report k-th when fields differ: a memory-kind field first
 * (host buffers on one rank and device buffers on another also make the
 * algorithm differ, and the memory is the cause), then the others in
 * order. The signature's own order is fixed: the packet's inline path
 * reads the all-reduce's fields by position (carries()). */
static int report_order(const agree_sig_t *sig, int k)
{
  int mem = -1;
  for (int i = 0; i < sig->n; i++)
    if (strcmp(sig->field[i], AGREE_MEMORY_FIELD) == 0)
      mem = i;
  if (mem < 0)
    return k;
  if (k == 0)
    return mem;
  return k <= mem ? k - 1 : k;
}

/* ---- the board ------------------------------------------------------------------------ */

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
  comm->board = b;
  return RONDO_SUCCESS;
}

void agree_board_free(rondo_comm_t comm, int mpi_usable)
{
  struct agree_board *b = comm->board;
  if (b == NULL)
    return;
  shwin_free(&b->w, mpi_usable);
  free(b);
  comm->board = NULL;
}

int agree_board_active(rondo_comm_t comm) { return comm->board != NULL; }

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
static uint64_t sig_sum(const agree_sig_t *sig)
{
  /* (One collective always has the same fields: n needs no mixing.) */
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)sig->coll;
  for (int i = 0; i < sig->n; i++) {
    h = (h ^ (uint64_t)sig->value[i]) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return h != 0 ? h : 1;
}

static rondo_status_t left(rondo_comm_t comm, const agree_sig_t *sig, int rank);

/* A field that is a hash of several values (its value means nothing to a
 * reader): named "... (hash)". */
static int is_hash(const char *field)
{
  size_t n = strlen(field);
  return n >= 6 && strcmp(field + n - 6, "(hash)") == 0;
}

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
  const struct agree_board *b = comm->board;
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
  struct agree_board *b = comm->board;
  uint64_t call = b->call + 1;
  board_payload_t *p = payload(b, b->w.rank, call);
  p->status = local;
  p->what = sig->coll;
  for (int i = 0; i < AGREE_SIG_MAX; i++)
    p->field[i] = i < sig->n ? sig->value[i] : 0;
  flag_store(flag(b, b->w.rank, call), call, local == RONDO_SUCCESS ? sig_sum(sig) : 0);
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

static _Thread_local int mismatch_same_call; /* for agree_call_detail */

rondo_status_t agree_finish(rondo_comm_t comm, rondo_status_t local,
                            const agree_sig_t *sig)
{
  struct agree_board *b = comm->board;
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
    return left(comm, sig, leaving);
  if (failed >= 0)
    return rondo__fail(RONDO_ERR_PEER,
                       "%s: rank %d of this comm passed invalid arguments (see its log line or "
                       "rondo_last_error())",
                       agree_coll_name(sig->coll), failed);
  if (differs < 0)
    return RONDO_SUCCESS;
  mismatch_same_call = board_same_call(b, call, sig->coll);
  const board_payload_t *theirs = payload(b, differs, call);
  if (theirs->what != (int32_t)sig->coll)
    return rondo__fail(RONDO_ERR_MISMATCH,
                       "ranks called different collectives at the same time: rank %d %s, this "
                       "rank %s",
                       differs, agree_coll_name((agree_coll_t)theirs->what),
                       agree_coll_name(sig->coll));
  for (int k = 0; k < sig->n; k++) {
    int i = report_order(sig, k);
    if (theirs->field[i] != sig->value[i] && is_hash(sig->field[i]))
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

/* A call that met a rank destroying the comm. */
static rondo_status_t left(rondo_comm_t comm, const agree_sig_t *sig, int rank)
{
  /* A comm of part of the world: its rank in MPI_COMM_WORLD too. */
  char world[64] = "";
  MPI_Group mine, all;
  int w = -1, wsize = 0;
  if (MPI_Comm_size(MPI_COMM_WORLD, &wsize) == MPI_SUCCESS && wsize != comm->size &&
      MPI_Comm_group(comm->mpi, &mine) == MPI_SUCCESS) {
    if (MPI_Comm_group(MPI_COMM_WORLD, &all) == MPI_SUCCESS) {
      if (MPI_Group_translate_ranks(mine, 1, &rank, all, &w) == MPI_SUCCESS && w >= 0)
        snprintf(world, sizeof world, " (rank %d of MPI_COMM_WORLD)", w);
      MPI_Group_free(&all);
    }
    MPI_Group_free(&mine);
  }
  return rondo__fail(RONDO_ERR_SHUT_DOWN,
                     "%s: rank %d%s is destroying this comm (rondo_comm_destroy or "
                     "rondo_finalize); the collective cannot complete",
                     agree_coll_name(sig->coll), rank, world);
}

/* ---- the check across nodes ---------------------------------------------------------------- */

/* This rank's packet, its data still to be copied in; d: the data it
 * carries (NULL: none); rides: its all-reduce's data rides in the
 * exchange. */
static void packet_fill(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                        const agree_inline_t *d, int rides, packet_t *p)
{
  memset(p, 0, sizeof *p + comm->check_room);
  int ok = local == RONDO_SUCCESS;
  p->sig = ok ? sig_sum(sig) : 0;
  p->not_sig = ~p->sig;
  p->coll = (int32_t)sig->coll;
  if (ok && sig->coll == AGREE_ALLREDUCE && sig->n >= 4) { /* rondo_allreduce_algo's order */
    p->count = sig->value[0];
    p->dtype = (int32_t)sig->value[1];
    p->op = (int32_t)sig->value[2];
    p->algo = (int32_t)sig->value[3];
  }
  if (ok && d != NULL) { /* the data's own shape: a reduce-scatter's or all-gather's */
    p->count = (int64_t)d->count;
    p->dtype = (int32_t)d->dtype;
    p->op = (int32_t)d->op;
    p->algo = RONDO_ALGO_MPI;
  }
  p->failed = ok ? 0 : comm->size - comm->rank;
  p->leaving = sig->coll == AGREE_COMM_DESTROY ? comm->size - comm->rank : 0;
  p->first = comm->rank;
  p->rides = rides && ok;
  p->room = (int32_t)comm->check_room;
}

/* The detail of a mismatch, after packets that disagree: the collective and
 * each field as value, ~value, combined by MAX over every rank in one MPI
 * all-reduce, so max and ~(max of ~value) = min say what differs (~ never
 * overflows, unlike negation). Only a failing call pays it; every rank of
 * it does, since every rank holds the same combined packet. */
enum { DETAIL_WORDS = 2 * (AGREE_SIG_MAX + 1) };

static rondo_status_t detail(rondo_comm_t comm, const agree_sig_t *sig, int64_t v[DETAIL_WORDS])
{
  for (int i = 0; i <= AGREE_SIG_MAX; i++) {
    int64_t x = i == 0 ? (int64_t)sig->coll : i <= sig->n ? sig->value[i - 1] : 0;
    v[2 * i] = x;
    v[2 * i + 1] = ~x;
  }
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, DETAIL_WORDS, MPI_INT64_T, MPI_MAX, comm->mpi));
  return RONDO_SUCCESS;
}

/* What differs, from the detail: the collective, or the first field in
 * report order. */
static rondo_status_t mismatch(const agree_sig_t *sig, const int64_t r[DETAIL_WORDS])
{
  mismatch_same_call = r[0] == ~r[1];
  if (r[0] != ~r[1])
    return rondo__fail(RONDO_ERR_MISMATCH,
                       "ranks called different collectives at the same time (this rank: %s)",
                       agree_coll_name(sig->coll));
  for (int k = 0; k < sig->n; k++) {
    int i = report_order(sig, k) + 1;
    long long hi = r[2 * i], lo = ~r[2 * i + 1];
    if (hi != lo && is_hash(sig->field[i - 1]))
      return rondo__fail(RONDO_ERR_MISMATCH, "%s: ranks passed different %s",
                         agree_coll_name(sig->coll), sig->field[i - 1]);
    if (hi != lo)
      return rondo__fail(RONDO_ERR_MISMATCH,
                         "%s: ranks passed different %s (values from %lld to %lld; this rank: "
                         "%lld)",
                         agree_coll_name(sig->coll), sig->field[i - 1], lo, hi,
                         (long long)sig->value[i - 1]);
  }
  /* Sums equal on fields that differ: about 2^-64 */
  return rondo__fail(RONDO_ERR_MISMATCH, "%s: ranks passed different arguments",
                     agree_coll_name(sig->coll));
}

/* One exchange of packets (check_exchange.c), then what it says. d: the
 * data this rank's packet carries (NULL: none); rider: the all-reduce
 * whose data rides in the exchange, or NULL. */
static rondo_status_t agree_across(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                                   const agree_inline_t *d, check_rider_t *rider, int *rode)
{
  /* The packet with comm's room, whatever this rank's call: ranks in
   * different collectives must still exchange packets of one size for the
   * mismatch to be reported. */
  int64_t buf[PACKET_MAX_BYTES / sizeof(int64_t) + 1];
  packet_t *all = (packet_t *)buf;
  packet_fill(comm, local, sig, d, rider != NULL, all);
  size_t bytes = d != NULL ? d->count * rondo_dtype_size(d->dtype) : 0;
  if (bytes > comm->check_room)
    bytes = 0; /* only its size rides: packet_data_bytes */
  if (rode != NULL)
    *rode = bytes > 0;
  if (bytes > 0 && local == RONDO_SUCCESS && d->in_bytes > 0)
    memcpy(packet_data(all) + d->at, d->in, d->in_bytes);
  RONDO_CHECK(check_exchange(comm, all, local == RONDO_SUCCESS ? rider : NULL, NULL));
  packet_next_room(comm, all);
  int64_t r[DETAIL_WORDS];
  int differ = all->failed == 0 && all->leaving == 0 && !packet_agrees(all);
  if (differ) /* (a rank whose arguments were bad sets failed: not here) */
    RONDO_CHECK(detail(comm, sig, r));
  if (local != RONDO_SUCCESS)
    return local;
  if (all->leaving != 0)
    return left(comm, sig, comm->size - all->leaving);
  if (all->failed != 0)
    return rondo__fail(RONDO_ERR_PEER,
                       "%s: rank %d of this comm passed invalid arguments (see its log line or "
                       "rondo_last_error())",
                       agree_coll_name(sig->coll), comm->size - all->failed);
  if (differ)
    return mismatch(sig, r);
  if (rider != NULL && !all->rides)
    return rondo__fail(RONDO_ERR_INTERNAL, "%s: the data did not ride in every step",
                       agree_coll_name(sig->coll)); /* (agreed calls always ride alike) */
  if (bytes > 0)
    memcpy(d->out, packet_data(all), bytes);
  return RONDO_SUCCESS;
}

int agree_skip;

size_t agree_packet_bytes(void) { return sizeof(packet_t); }

void agree_packet_free(void) { check_free(); }

int agree_inline_fits(rondo_comm_t comm, rondo_algo_t algo, size_t count, size_t bytes)
{
  return comm->size > 1 && comm->board == NULL && !agree_skip && algo == RONDO_ALGO_MPI &&
         count > 0 && bytes <= AGREE_INLINE_BYTES;
}

rondo_status_t agree_inline(rondo_comm_t comm, const agree_sig_t *sig, const agree_inline_t *d,
                            int *rode)
{
  return agree_across(comm, RONDO_SUCCESS, sig, d, NULL, rode);
}

int agree_rider_fits(rondo_comm_t comm, int carries_check, size_t count)
{
  return comm->size > 1 && comm->board == NULL && !agree_skip && carries_check && count > 0 &&
         check_by_exchange(comm);
}

rondo_status_t agree_call_riding(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                                 check_rider_t *rider)
{
  return agree_across(comm, local, sig, NULL, rider, NULL);
}

rondo_status_t agree_call_detail(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig,
                                 int *same_call)
{
  mismatch_same_call = 0;
  rondo_status_t st = agree_call(comm, local, sig);
  *same_call = st == RONDO_ERR_MISMATCH && mismatch_same_call;
  return st;
}

rondo_status_t agree_call(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig)
{
  if (comm->size == 1 || agree_skip)
    return local;
  if (comm->board == NULL)
    return agree_across(comm, local, sig, NULL, NULL, NULL);
  agree_post(comm, local, sig);
  return agree_finish(comm, local, sig);
}

/* ---- leaving ------------------------------------------------------------------------------ */

int agree_leave_polls(rondo_comm_t comm)
{
  return comm->board != NULL || comm->yield_any;
}

/* One comm's leave between steps (agree_leave). */
typedef struct {
  int done;         /* every rank of the comm is leaving it */
  int open;         /* a board round is posted, not every flag seen yet */
  uint64_t call;    /* that round */
  uint64_t mine;    /* this rank's flag sum in it */
  double since;     /* when the board's wait began (0: not yet) */
  int warned;       /* the stall warning was given */
} leave_t;

/* One step on the board: posts a round where none is open, and looks
 * whether every rank's flag of that round is there, without waiting.
 * st->done once every rank was leaving in the same round. */
static void leave_board_step(rondo_comm_t comm, leave_t *st, const agree_sig_t *sig)
{
  struct agree_board *b = comm->board;
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

/* One round of the check across nodes: whether every rank was leaving too.
 * Where some rank yields, its waits poll and nap (agree_leave_polls). */
static rondo_status_t leave_across(rondo_comm_t comm, const agree_sig_t *sig,
                                void (*poll)(rondo_comm_t), int *all_left)
{
  int64_t buf[PACKET_MAX_BYTES / sizeof(int64_t) + 1];
  packet_t *all = (packet_t *)buf;
  packet_fill(comm, RONDO_SUCCESS, sig, NULL, 0, all);
  RONDO_CHECK(check_exchange(comm, all, NULL, comm->yield_any ? poll : NULL));
  packet_next_room(comm, all);
  /* every rank's call was this one (no mismatch is told here: a rank in
   * another call sees this one's leaving) */
  *all_left = packet_agrees(all);
  return RONDO_SUCCESS;
}

/* One step of comm's leave: a look at the board, or a round of the MPI
 * check. */
static rondo_status_t leave_step(rondo_comm_t comm, leave_t *st, void (*poll)(rondo_comm_t))
{
  agree_sig_t sig = {.coll = AGREE_COMM_DESTROY};
  if (comm->size == 1 || agree_skip) {
    st->done = 1;
    return RONDO_SUCCESS;
  }
  if (comm->board != NULL) {
    leave_board_step(comm, st, &sig);
    return RONDO_SUCCESS;
  }
  return leave_across(comm, &sig, poll, &st->done);
}

rondo_status_t agree_leave(rondo_comm_t *comms, int n, void (*poll)(rondo_comm_t))
{
  leave_t one = {0}, *st = n == 1 ? &one : calloc((size_t)n, sizeof *st);
  rondo_status_t first = RONDO_SUCCESS;
  if (st == NULL) { /* no memory: one comm after the other */
    for (int i = 0; i < n; i++) {
      rondo_status_t s = agree_leave(&comms[i], 1, poll);
      if (first == RONDO_SUCCESS)
        first = s;
    }
    return first;
  }
  double nap = 20e-6;
  for (int left = n; left > 0;) {
    int waiting = 0; /* a board round is open */
    left = 0;
    for (int i = 0; i < n; i++) {
      if (st[i].done)
        continue;
      rondo_status_t s = leave_step(comms[i], &st[i], poll);
      if (s != RONDO_SUCCESS) {
        st[i].done = 1;
        if (first == RONDO_SUCCESS)
          first = s;
        else
          LOG_ERROR("leaving a comm: %s", rondo_last_error());
      }
      left += !st[i].done;
      waiting |= !st[i].done && st[i].open;
    }
    if (!waiting)
      continue;
    for (int i = 0; i < n; i++)
      if (!st[i].done && poll != NULL)
        poll(comms[i]);
    check_nap(&nap);
  }
  if (st != &one)
    free(st);
  return first;
}
