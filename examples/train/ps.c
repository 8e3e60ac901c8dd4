/*
 * --strategy parameter-server: tf.distribute's ParameterServerStrategy with
 * MPI (docs/train.md, "Parameter server").
 *
 * Roles. The last K ranks are servers, the others workers (W of them). The
 * variables, as one array of floats, are cut into K balanced element ranges;
 * server s holds range s and its momentum, and applies the optimizer to it.
 *
 * A worker's step:
 *   - takes a unit of work: one worker's share of one global batch (the
 *     batch split W ways, as mirrored splits it among W ranks);
 *   - computes the gradient of its rows with its copy of the variables;
 *   - sends each server its range of the gradient (a header, then the
 *     floats) and waits for each server's answer: the server's range of the
 *     variables after the update, which is the worker's copy for its next
 *     step.
 * A server receives the pushes, applies them and answers. It is the only
 * writer of its range, and sends it between updates, so a worker never
 * sees half an update and nothing needs a lock. (Reading the ranges with
 * MPI_Get from windows was measured too, and was slower on MPICH ch4:ucx:
 * the reads progress only when the server calls MPI, docs/PERFORMANCE.md.)
 *
 * Staleness S (--staleness), the bound on how far a worker may run ahead:
 *   - S = 0, synchronous SGD. Worker i takes unit i of every global batch.
 *     The server waits for all W gradients of the step, sums them in worker
 *     order, scales the sum by 1/(samples in the global batch) and applies
 *     one update; then it answers every worker. This is mirrored's step:
 *     the same sum where mirrored also adds in rank order (1-2 workers, or
 *     W workers against W ranks on one node), the same scaling and update,
 *     so the same bytes (tests/train/ps.sh).
 *   - S > 0 or async. The first server hands out the units: a worker starts
 *     with unit i, and each answer of the first server names its next one,
 *     so a fast worker takes more of the epoch. Each push is applied on
 *     arrival as an update of its own: the gradient scaled by 1/(samples
 *     in its global batch), weight decay scaled by the push's share of that
 *     batch, so that one global batch's W pushes add up to one synchronous
 *     step's gradient and decay (the momentum runs per push). The learning
 *     rate is the schedule's at the end of the push's global batch. A server answers a push when its
 *     worker is at most S pushes ahead of the slowest worker still running
 *     (async: at once), so the worker waits there for the slowest.
 *
 * Epochs. At an epoch's end every rank meets: the servers' ranges are
 * broadcast to every rank for evaluation, the mirror check and the epoch's
 * line, and the momentum sent to rank 0 for checkpoints, which keep
 * mirrored's format. Between epoch ends the workers never wait for each
 * other, except as S says.
 *
 * Waits poll MPI_Test: yielding for 50 us, then sleeping up to 20 us
 * between polls, and after 50 ms up to 1 ms: an idle server or worker takes
 * little CPU time.
 */
#define _GNU_SOURCE /* sched_yield */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/train/trainer.h"

enum { TAG_PUSH = 1, TAG_GRAD, TAG_VARS, TAG_UNIT, TAG_MOMENTUM };
enum { PUSH_GRADIENT, PUSH_END };

/* What a worker sends a server before its range of the gradient. */
typedef struct {
  int32_t kind;     /* PUSH_GRADIENT or PUSH_END */
  int32_t worker;
  int64_t unit;
  double lr;        /* the schedule's rate at the end of the unit's global batch */
  double scale;     /* 1 / samples in that global batch */
  double wd_share;  /* this unit's samples / samples in that global batch */
} push_t;

/* ---- waiting without spinning ------------------------------------------------------ */

static void wait_all(int n, MPI_Request *r, MPI_Status *st)
{
  double t0 = train_now();
  long nap = 10000; /* ns */
  int done = 0;
  for (;;) {
    MPI_Testall(n, r, &done, st == NULL ? MPI_STATUSES_IGNORE : st);
    if (done)
      return;
    double waited = train_now() - t0;
    if (waited < 50e-6) {
      sched_yield();
      continue;
    }
    /* Naps of 20 us while an answer is due. A transfer of megabytes moves
     * only when both ends poll, so a nap is what it waits for after each
     * piece: after 50 ms the wait is idle, and naps grow to 1 ms. */
    long most = waited < 50e-3 ? 20000 : 1000000;
    struct timespec ts = {0, nap};
    nanosleep(&ts, NULL);
    nap = 2 * nap < most ? 2 * nap : most;
  }
}

/* ---- roles -------------------------------------------------------------------------- */

int ps_servers(const trainer_t *t)
{
  if (t->o.servers > 0)
    return t->o.servers;
  return t->size / 5 > 1 ? t->size / 5 : 1;
}

static int first_server(const ps_t *p) { return p->workers; }

int ps_create(trainer_t *t)
{
  ps_t *p = &t->ps;
  size_t n = t->m.nparams;
  char err[1024] = "";
  int K = ps_servers(t);
  int ok = 1;
  if (t->size < 2)
    ok = train_error(err, sizeof err,
                     "parameter-server needs at least 2 ranks, a server and a worker (on one "
                     "rank, mirrored is tf.distribute's OneDeviceStrategy)") == 0;
  else if (K >= t->size)
    ok = train_error(err, sizeof err,
                     "--servers %d leaves no worker among %d ranks: give fewer servers than "
                     "ranks",
                     K, t->size) == 0;
  else if ((n + (size_t)K - 1) / (size_t)K > INT_MAX / 2)
    ok = train_error(err, sizeof err,
                     "%zu variables on %d server%s: a server's range must stay under 2^30 "
                     "floats (give more --servers)",
                     n, K, K == 1 ? "" : "s") == 0;
  if (trainer_agree(t, ok, err, sizeof err) != 0)
    return TRAIN_EXIT_USAGE;
  p->servers = K;
  p->workers = t->size - K;
  p->server = t->rank >= p->workers ? t->rank - p->workers : -1;
  p->perm_epoch = -1;
  p->lo = malloc(((size_t)K + 1) * sizeof *p->lo);
  ok = p->lo != NULL;
  for (int s = 0; ok && s <= K; s++)
    p->lo[s] = optim_slice_start(n, s, K);
  size_t mine = p->server >= 0 ? p->lo[p->server + 1] - p->lo[p->server] : 0;
  if (ok && p->server >= 0) {
    p->shard = malloc((mine ? mine : 1) * sizeof(float));
    p->velocity = malloc((mine ? mine : 1) * sizeof(float));
    p->sum = malloc((mine ? mine : 1) * sizeof(float));
    p->in = malloc((mine ? mine : 1) * sizeof(float));
    ok = p->shard && p->velocity && p->sum && p->in;
  } else if (ok) {
    p->perm = malloc(t->data.train.n * sizeof *p->perm);
    ok = p->perm != NULL;
  }
  snprintf(err, sizeof err, "parameter-server: no memory for a server's range or a worker's "
                            "order");
  if (trainer_agree(t, ok, err, sizeof err) != 0)
    return TRAIN_EXIT_ERROR;

  MPI_Comm mpi;
  TRAINER_CHECK(t, rondo_comm_mpi(t->comm, &mpi));
  if (MPI_Comm_dup(mpi, &p->mpi) != MPI_SUCCESS)
    trainer_die(t, "parameter-server: MPI_Comm_dup failed");
  /* A failed send or receive ends the job with MPI's message: the calls
   * below are not checked one by one. */
  MPI_Comm_set_errhandler(p->mpi, MPI_ERRORS_ARE_FATAL);
  if (p->server >= 0) { /* the variables every rank holds (mirror_start) */
    memcpy(p->shard, t->m.params + p->lo[p->server], mine * sizeof(float));
    memcpy(p->velocity, t->m.velocity + p->lo[p->server], mine * sizeof(float));
  }
  return 0;
}

void ps_describe(const trainer_t *t, char *buf, size_t len)
{
  const ps_t *p = &t->ps;
  size_t widest = 0;
  for (int s = 0; s < p->servers; s++)
    widest = p->lo[s + 1] - p->lo[s] > widest ? p->lo[s + 1] - p->lo[s] : widest;
  char stale[160];
  if (t->o.staleness == 0)
    snprintf(stale, sizeof stale, "staleness 0: synchronous SGD, one update per step from "
                                  "every worker's gradient");
  else if (t->o.staleness > 0)
    snprintf(stale, sizeof stale, "staleness %lld: each push updates on arrival; a worker "
                                  "runs at most %lld steps ahead of the slowest",
             t->o.staleness, t->o.staleness);
  else
    snprintf(stale, sizeof stale, "asynchronous: each push updates on arrival; no worker "
                                  "waits for another");
  snprintf(buf, len,
           "parameter-server: %d server%s (rank%s %d%s%.0d) hold%s the variables and "
           "momentum in ranges of up to %.1f MiB; %d worker%s push gradients and get the "
           "variables back; %s",
           p->servers, p->servers == 1 ? "" : "s", p->servers == 1 ? "" : "s", p->workers,
           p->servers == 1 ? "" : "-", p->servers == 1 ? 0 : t->size - 1,
           p->servers == 1 ? "s" : "", (double)(2 * widest * sizeof(float)) / (1 << 20),
           p->workers, p->workers == 1 ? "" : "s", stale);
}

/* ---- a worker ----------------------------------------------------------------------- */

/* The epoch's plan: global batches from the epoch's first sample `start`,
 * each split W ways; unit u is share u % W of batch u / W. */
typedef struct {
  long long epoch;
  size_t start, batches;
} plan_t;

/* Sends h (and, for a gradient, each server's range of it). For a
 * gradient, waits for every server's range of the variables, and returns
 * the unit the first server names next (at staleness 0: none, -1). */
static long long push(trainer_t *t, const push_t *h)
{
  ps_t *p = &t->ps;
  int K = p->servers, n = 0, grad = h->kind == PUSH_GRADIENT;
  int64_t next = -1;
  MPI_Request r[3 * K + 1];
  for (int s = 0; s < K && grad; s++) {
    int from = first_server(p) + s, count = (int)(p->lo[s + 1] - p->lo[s]);
    MPI_Irecv(t->m.params + p->lo[s], count, MPI_FLOAT, from, TAG_VARS, p->mpi, &r[n++]);
  }
  if (grad && t->o.staleness != 0)
    MPI_Irecv(&next, 1, MPI_INT64_T, first_server(p), TAG_UNIT, p->mpi, &r[n++]);
  for (int s = 0; s < K; s++) {
    int to = first_server(p) + s, count = (int)(p->lo[s + 1] - p->lo[s]);
    MPI_Isend(h, (int)sizeof *h, MPI_BYTE, to, TAG_PUSH, p->mpi, &r[n++]);
    if (grad)
      MPI_Isend(t->m.grads + p->lo[s], count, MPI_FLOAT, to, TAG_GRAD, p->mpi, &r[n++]);
  }
  wait_all(n, r, NULL);
  return next;
}

static void work(trainer_t *t, const plan_t *pl, acc_t *acc)
{
  ps_t *p = &t->ps;
  size_t n = t->data.train.n, B = t->o.batch;
  long long units = (long long)pl->batches * p->workers;
  if (p->perm_epoch != pl->epoch) {
    data_shuffle(t->o.seed, pl->epoch, p->perm, n);
    p->perm_epoch = pl->epoch;
  }
  /* Unit rank first; then, at staleness 0, every W-th; otherwise the one
   * the first server names. */
  for (long long u = t->rank; u < units;) {
    double t0 = train_now();
    train_straggle(&t->o, t->rank);
    size_t off = pl->start + (size_t)(u / p->workers) * B;
    size_t global = n - off < B ? n - off : B, first, rows;
    loader_split(global, (int)(u % p->workers), p->workers, &first, &rows);
    double loss = 0;
    size_t correct = 0;
    if (rows > 0) {
      data_gather(&t->data, &t->data.train, p->perm + off + first, rows, t->ex, t->ey);
      mlp_forward(&t->m, t->ex, rows);
      mlp_loss(&t->m, t->ey, rows, &loss, &correct);
    }
    mlp_backward(&t->m, rows, NULL, NULL);
    push_t h = {PUSH_GRADIENT, t->rank, u, 0, 1.0 / (double)global, (double)rows / (double)global};
    h.lr = optim_lr(&t->o, (double)pl->epoch + (double)(off + global) / (double)n);
    double c0 = train_now();
    long long next = push(t, &h);
    double waited = train_now() - c0;
    u = t->o.staleness == 0 ? u + p->workers : next;
    p->units++;
    acc->loss += loss;
    acc->correct += (double)correct;
    acc->samples += (double)rows;
    acc->comm_wait += waited;
    acc->comm_window += waited;
    acc->step_time += train_now() - t0;
  }
  push_t end = {PUSH_END, t->rank, -1, 0, 0, 0};
  push(t, &end);
}

/* ---- a server ----------------------------------------------------------------------- */

/* One update of this server's range: g (scaled in place) with the push's
 * rate; weight decay times wd_share. */
static void apply(trainer_t *t, float *g, const push_t *h, double wd_share)
{
  ps_t *p = &t->ps;
  size_t lo = p->lo[p->server], hi = p->lo[p->server + 1];
  float scale = (float)h->scale;
  for (size_t k = 0; k < hi - lo; k++)
    g[k] = g[k] * scale; /* as the engine's postscale under mirrored */
  optim_step_slice(&t->m, p->shard, p->velocity, g, lo, hi, (float)h->lr,
                   (float)t->o.momentum, (float)(t->o.weight_decay * wd_share));
}

/* Answers pushes: sends this server's range of the variables to each of
 * the n workers in who[] (and, from the first server after a
 * staleness > 0 push, the worker's next unit), and waits until they are
 * sent: the range must not change while it travels. */
static void answer(trainer_t *t, const int *who, int n, const int64_t *next)
{
  ps_t *p = &t->ps;
  int count = (int)(p->lo[p->server + 1] - p->lo[p->server]), m = 0;
  MPI_Request r[2 * n + 1];
  for (int i = 0; i < n; i++) {
    MPI_Isend(p->shard, count, MPI_FLOAT, who[i], TAG_VARS, p->mpi, &r[m++]);
    if (next != NULL && p->server == 0)
      MPI_Isend(&next[i], 1, MPI_INT64_T, who[i], TAG_UNIT, p->mpi, &r[m++]);
  }
  wait_all(m, r, NULL);
}

/* The header of the next push from `from` (MPI_ANY_SOURCE: any worker). */
static int receive(const ps_t *p, int from, push_t *h)
{
  MPI_Request r;
  MPI_Status st;
  MPI_Irecv(h, (int)sizeof *h, MPI_BYTE, from, TAG_PUSH, p->mpi, &r);
  wait_all(1, &r, &st);
  return st.MPI_SOURCE;
}

static void receive_grad(const ps_t *p, int from, float *into)
{
  int count = (int)(p->lo[p->server + 1] - p->lo[p->server]);
  MPI_Request r;
  MPI_Irecv(into, count, MPI_FLOAT, from, TAG_GRAD, p->mpi, &r);
  wait_all(1, &r, NULL);
}

/* S = 0: one update per step from every worker's gradient, summed in
 * worker order. Every worker has the same number of units, so they all end
 * in the same round. */
static void serve_sync(trainer_t *t)
{
  ps_t *p = &t->ps;
  size_t count = p->lo[p->server + 1] - p->lo[p->server];
  for (;;) {
    push_t h, first = {0};
    int ends = 0;
    for (int w = 0; w < p->workers; w++) {
      receive(p, w, &h);
      if (h.kind == PUSH_END) {
        ends++;
        continue;
      }
      if (w == 0) {
        first = h;
        receive_grad(p, w, p->sum);
      } else {
        receive_grad(p, w, p->in);
        for (size_t k = 0; k < count; k++)
          p->sum[k] += p->in[k];
      }
    }
    if (ends == p->workers)
      return;
    if (ends != 0)
      trainer_die(t, "parameter-server: the workers ended the epoch at different steps");
    apply(t, p->sum, &first, 1.0);
    int all[p->workers];
    for (int w = 0; w < p->workers; w++)
      all[w] = w;
    answer(t, all, p->workers, NULL);
  }
}

/* S > 0 or async: every push applied on arrival; its acknowledgement held
 * while its worker is more than S pushes ahead of the slowest one still
 * running. */
static void serve_async(trainer_t *t)
{
  ps_t *p = &t->ps;
  int W = p->workers, running = W;
  long long *clock = calloc((size_t)W, sizeof *clock);
  int64_t next_unit = W, *next = calloc((size_t)W, sizeof *next); /* units 0..W-1: one each */
  char *ended = calloc((size_t)W, 1), *held = calloc((size_t)W, 1);
  int *who = calloc((size_t)W, sizeof *who);
  if (clock == NULL || next == NULL || ended == NULL || held == NULL || who == NULL)
    trainer_die(t, "parameter-server: no memory for the workers' clocks");
  while (running > 0) {
    push_t h;
    int w = receive(p, MPI_ANY_SOURCE, &h);
    if (h.kind == PUSH_END) {
      ended[w] = 1;
      running--;
    } else {
      receive_grad(p, w, p->in);
      apply(t, p->in, &h, h.wd_share);
      clock[w]++;
      held[w] = 1;
    }
    long long slowest = LLONG_MAX;
    for (int v = 0; v < W; v++)
      if (!ended[v] && clock[v] < slowest)
        slowest = clock[v];
    int n = 0;
    for (int v = 0; v < W; v++)
      if (held[v] && (t->o.staleness < 0 || clock[v] - slowest <= t->o.staleness)) {
        held[v] = 0;
        next[n] = next_unit++;
        who[n++] = v;
      }
    answer(t, who, n, next);
  }
  free(clock);
  free(next);
  free(ended);
  free(held);
  free(who);
}

/* ---- the epoch ---------------------------------------------------------------------- */

/* Every rank gets the servers' variables; rank 0 also their momentum, when
 * it writes checkpoints.
 * Through rondo's broadcast, which gives the core away while it waits on
 * an oversubscribed node (MPI's collectives spin there: an MPI_Allgatherv
 * of 8 MiB among 3 ranks on 2 cores took 1.5 s). */
static void gather(trainer_t *t)
{
  ps_t *p = &t->ps;
  for (int s = 0; s < p->servers; s++) {
    size_t lo = p->lo[s], count = p->lo[s + 1] - lo;
    if (s == p->server)
      memcpy(t->m.params + lo, p->shard, count * sizeof(float));
    TRAINER_CHECK(t, rondo_broadcast(t->comm, t->m.params + lo, count, RONDO_FLOAT32,
                                     first_server(p) + s));
  }
  if (t->o.checkpoint == NULL)
    return;
  MPI_Request r[p->servers];
  int n = 0;
  for (int s = 0; s < p->servers; s++) {
    int count = (int)(p->lo[s + 1] - p->lo[s]);
    if (t->rank == 0)
      MPI_Irecv(t->m.velocity + p->lo[s], count, MPI_FLOAT, first_server(p) + s, TAG_MOMENTUM,
                p->mpi, &r[n++]);
    else if (s == p->server)
      MPI_Isend(p->velocity, count, MPI_FLOAT, 0, TAG_MOMENTUM, p->mpi, &r[n++]);
  }
  wait_all(n, r, NULL);
}

void ps_epoch(trainer_t *t, acc_t *acc, int *partial)
{
  ps_t *p = &t->ps;
  size_t n = t->data.train.n, B = t->o.batch;
  plan_t pl = {t->epoch, t->offset, (n - t->offset + B - 1) / B};
  if (t->o.max_steps > 0 && (long long)pl.batches > t->o.max_steps - t->step)
    pl.batches = (size_t)(t->o.max_steps - t->step);
  if (p->server >= 0) {
    if (t->o.staleness == 0)
      serve_sync(t);
    else
      serve_async(t);
  } else {
    work(t, &pl, acc);
  }
  gather(t);
  acc->steps += (double)pl.batches; /* every rank counts every global step */
  t->step += (long long)pl.batches;
  size_t end = pl.start + pl.batches * B;
  end = end < n ? end : n;
  t->last.lr = optim_lr(&t->o, (double)t->epoch + (double)end / (double)n); /* the epoch's line */
  *partial = end < n;
  t->epoch = *partial ? t->epoch : t->epoch + 1;
  t->offset = *partial ? end : 0;
}

void ps_final_json(trainer_t *t, char *buf, size_t len)
{
  int64_t *all = malloc((size_t)t->size * sizeof *all);
  if (all == NULL)
    trainer_die(t, "no memory for the units per rank");
  TRAINER_CHECK(t, rondo_allgather(t->comm, &t->ps.units, all, 1, RONDO_INT64));
  size_t used = (size_t)snprintf(buf, len, "\"units_per_rank\":[");
  for (int r = 0; r < t->size && used < len; r++)
    used += (size_t)snprintf(buf + used, len - used, "%s%lld", r ? "," : "", (long long)all[r]);
  if (used < len)
    snprintf(buf + used, len - used, "]");
  free(all);
}

void ps_destroy(trainer_t *t)
{
  ps_t *p = &t->ps;
  if (p->mpi != MPI_COMM_NULL)
    MPI_Comm_free(&p->mpi);
  free(p->lo);
  free(p->shard);
  free(p->velocity);
  free(p->sum);
  free(p->in);
  free(p->perm);
  memset(p, 0, sizeof *p);
  p->mpi = MPI_COMM_NULL;
}
