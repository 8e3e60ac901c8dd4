/*
 * Argument agreement. Every rank of a blocking collective must call the same
 * collective with the same count, dtype, op, algorithm and root, and valid
 * arguments, or the data movement would hang or go wrong. rondo checks it at
 * every call, on every rank, before any data moves; a mismatch fails the call
 * everywhere with RONDO_ERR_MISMATCH, a local error with its own status on
 * its rank and RONDO_ERR_PEER on the others.
 *
 * On a comm whose ranks all share one node, the check is a board in shared
 * memory: each rank writes the call's signature (the collective, its
 * arguments, its local status) into its own cache line and waits until every
 * rank's line carries the same call number; then each compares the others'
 * signatures with its own. That is one cache-line exchange, and the shm
 * all-reduce, whose first round needs the same exchange to see the others'
 * data, folds the board into it (shm.c): there the check costs nothing.
 * Two lines per rank, used alternately: a rank can be at most one call ahead
 * of another's reading, because no rank passes call k+1's board before
 * every rank has written its line for k+1, which it does after reading k's.
 *
 * Across nodes (or where MPI cannot share memory) one small MPI all-reduce
 * of the status and the signature carries the check: one latency per call
 * (docs/api.md).
 */
#include "algo/agree.h"

#include <stdlib.h>

#include "algo/algo.h"
#include "topo/topo.h"

#define LINE 64

typedef struct {
  uint64_t call;                  /* this call's number; written last */
  int32_t status;                 /* the rank's own argument check */
  int32_t what;                   /* the collective (agree_coll_t) */
  int64_t field[AGREE_SIG_MAX];  /* the signature */
} board_line_t;

_Static_assert(sizeof(board_line_t) <= LINE, "a board line is one cache line");

struct agree_board {
  MPI_Win win;
  int size, rank;
  char **seg;     /* [size]: each rank's two lines */
  uint64_t call;  /* calls so far on this comm */
};

static const char *const colls[AGREE_COLLS] = {
    "rondo_allreduce", "rondo_broadcast", "rondo_allgather", "rondo_allgatherv",
    "rondo_reduce_scatter", "rondo_alltoall", "rondo_barrier"};

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

/* ---- the board ------------------------------------------------------------------------ */

rondo_status_t agree_board_create(rondo_comm_t comm)
{
  rondo_status_t st = RONDO_SUCCESS;
  const topo_t *t = comm->topo;
  if (t->node_count != 1 || comm->size == 1)
    return RONDO_SUCCESS; /* the MPI check, or nothing to check */
  struct agree_board *b = calloc(1, sizeof *b);
  if (b == NULL || (b->seg = calloc((size_t)t->local_size, sizeof *b->seg)) == NULL) {
    free(b);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "argument board");
  }
  b->size = t->local_size;
  b->rank = t->local_rank;
  char *mine = NULL;
  int rc = MPI_Win_allocate_shared(2 * LINE, LINE, MPI_INFO_NULL, t->node, &mine, &b->win);
  if (rc != MPI_SUCCESS) {
    /* No shared memory here: the MPI check serves. */
    LOG_INFO("argument board: %s; the check uses an MPI all-reduce",
             "MPI_Win_allocate_shared failed");
    free(b->seg);
    free(b);
    return RONDO_SUCCESS;
  }
  MPI_CHECK_GOTO(MPI_Win_set_errhandler(b->win, MPI_ERRORS_RETURN), st, fail);
  memset(mine, 0, 2 * LINE);
  for (int q = 0; q < b->size; q++) {
    MPI_Aint bytes;
    int disp;
    MPI_CHECK_GOTO(MPI_Win_shared_query(b->win, q, &bytes, &disp, &b->seg[q]), st, fail);
  }
  /* Every rank's lines are zero before anyone reads them. */
  MPI_CHECK_GOTO(MPI_Barrier(t->node), st, fail);
  comm->board = b;
  return RONDO_SUCCESS;
fail:
  MPI_CHECK_LOG(MPI_Win_free(&b->win));
  free(b->seg);
  free(b);
  return st;
}

void agree_board_free(rondo_comm_t comm, int mpi_usable)
{
  struct agree_board *b = comm->board;
  if (b == NULL)
    return;
  if (mpi_usable)
    MPI_CHECK_LOG(MPI_Win_free(&b->win));
  free(b->seg);
  free(b);
  comm->board = NULL;
}

int agree_board_active(rondo_comm_t comm) { return comm->board != NULL; }

static board_line_t *line(const struct agree_board *b, int q, uint64_t call)
{
  return (board_line_t *)(b->seg[q] + (call & 1) * LINE);
}

void agree_post(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig)
{
  struct agree_board *b = comm->board;
  uint64_t call = b->call + 1;
  board_line_t *l = line(b, b->rank, call);
  l->status = local;
  l->what = sig->coll;
  for (int i = 0; i < AGREE_SIG_MAX; i++)
    l->field[i] = i < sig->n ? sig->value[i] : 0;
  __atomic_store_n(&l->call, call, __ATOMIC_RELEASE);
}

rondo_status_t agree_finish(rondo_comm_t comm, rondo_status_t local,
                                   const agree_sig_t *sig)
{
  struct agree_board *b = comm->board;
  uint64_t call = ++b->call;
  const board_line_t *mine = line(b, b->rank, call);
  int failed = -1, differs = -1;
  for (int q = 0; q < b->size; q++) {
    if (q == b->rank)
      continue;
    const board_line_t *l = line(b, q, call);
    unsigned polls = 0;
    while (__atomic_load_n(&l->call, __ATOMIC_ACQUIRE) != call)
      topo_backoff(comm->topo, polls++);
    if (l->status != RONDO_SUCCESS && failed < 0)
      failed = q;
    if (differs < 0 && (l->what != mine->what ||
                        memcmp(l->field, mine->field, sizeof l->field) != 0))
      differs = q;
  }
  if (local != RONDO_SUCCESS)
    return local;
  if (failed >= 0)
    return rondo__fail(RONDO_ERR_PEER,
                       "%s: rank %d of this comm passed invalid arguments (see its log line or "
                       "rondo_last_error())",
                       agree_coll_name(sig->coll), failed);
  if (differs < 0)
    return RONDO_SUCCESS;
  const board_line_t *l = line(b, differs, call);
  if (l->what != mine->what)
    return rondo__fail(RONDO_ERR_MISMATCH,
                       "ranks called different collectives at the same time: rank %d %s, this "
                       "rank %s",
                       differs, agree_coll_name((agree_coll_t)l->what), agree_coll_name(sig->coll));
  for (int i = 0; i < sig->n; i++)
    if (l->field[i] != mine->field[i])
      return rondo__fail(RONDO_ERR_MISMATCH,
                         "%s: ranks passed different %s: rank %d has %lld, this rank %lld",
                         agree_coll_name(sig->coll), sig->field[i], differs, (long long)l->field[i],
                         (long long)mine->field[i]);
  return rondo__fail(RONDO_ERR_INTERNAL, "%s: argument board out of step", agree_coll_name(sig->coll));
}

/* ---- the MPI check (across nodes) --------------------------------------------------------- */

/* One MPI_Allreduce(MAX) over [failed, -lowest failed rank, then for the
 * collective and each field: value, ~value]. The maximum of ~value is ~(the
 * minimum), so one reduction tells whether any rank failed and whether every
 * field is equal everywhere (~ never overflows, unlike negation). */
static rondo_status_t agree_mpi(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig)
{
  /* Always the full length: ranks in different collectives must still
   * reduce matching buffers for the mismatch to be reported. */
  enum { N = 2 + 2 * (AGREE_SIG_MAX + 1) };
  int64_t v[N], r[N];
  int fields = AGREE_SIG_MAX + 1;
  v[0] = local != RONDO_SUCCESS;
  v[1] = local != RONDO_SUCCESS ? -(int64_t)comm->rank : -(int64_t)comm->size;
  for (int i = 0; i < fields; i++) {
    int64_t x = i == 0 ? (int64_t)sig->coll : i <= sig->n ? sig->value[i - 1] : 0;
    v[2 + 2 * i] = local == RONDO_SUCCESS ? x : INT64_MIN;
    v[3 + 2 * i] = local == RONDO_SUCCESS ? ~x : INT64_MIN;
  }
  MPI_Request req; /* nonblocking: algo_waitall yields when oversubscribed */
  MPI_CHECK(MPI_Iallreduce(v, r, N, MPI_INT64_T, MPI_MAX, comm->mpi, &req));
  RONDO_CHECK(algo_waitall(comm, 1, &req));
  if (local != RONDO_SUCCESS)
    return local;
  if (r[0])
    return rondo__fail(RONDO_ERR_PEER,
                       "%s: rank %lld of this comm passed invalid arguments (see its log line or "
                       "rondo_last_error())",
                       agree_coll_name(sig->coll), (long long)-r[1]);
  if (r[2] != ~r[3])
    return rondo__fail(RONDO_ERR_MISMATCH,
                       "ranks called different collectives at the same time (this rank: %s)",
                       agree_coll_name(sig->coll));
  for (int i = 1; i <= sig->n; i++) {
    long long hi = r[2 + 2 * i], lo = ~r[3 + 2 * i];
    if (hi != lo)
      return rondo__fail(RONDO_ERR_MISMATCH,
                         "%s: ranks passed different %s (values from %lld to %lld; this rank: "
                         "%lld)",
                         agree_coll_name(sig->coll), sig->field[i - 1], lo, hi, (long long)sig->value[i - 1]);
  }
  return RONDO_SUCCESS;
}

int agree_skip;

rondo_status_t agree_call(rondo_comm_t comm, rondo_status_t local, const agree_sig_t *sig)
{
  if (comm->size == 1 || agree_skip)
    return local;
  if (comm->board == NULL)
    return agree_mpi(comm, local, sig);
  agree_post(comm, local, sig);
  return agree_finish(comm, local, sig);
}
