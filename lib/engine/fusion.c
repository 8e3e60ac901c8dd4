/*
 * Running what a cycle made ready. Every rank holds the same response list,
 * so every rank builds the same batches in the same order:
 *   - errors complete their requests (a rank that does not have the name
 *     has nothing to fail);
 *   - all-reduces are grouped by (dtype, op, prescale, postscale, forced
 *     algorithm), in order of first appearance, and each group is packed
 *     greedily, in response order, into batches of at most
 *     RONDO_FUSION_THRESHOLD bytes (0: every request alone); a tensor above
 *     FUSE_MAX_TENSOR_BYTES runs alone, from its own buffers. A batch of one
 *     runs straight from sendbuf to recvbuf; a larger one is copied into the
 *     fusion buffer (prescaled on the way), reduced in place by one selected
 *     all-reduce, and copied out (postscaled on the way);
 *   - broadcasts, allgathers, reduce-scatters and all-to-alls run one by
 *     one, in response order.
 * A rank that has joined has no request for a name: it gets a phantom that
 * contributes the op's identity (all-reduce), no rows (allgather), or
 * receives into scratch (broadcast), and discards the result. Reduce-scatters
 * and all-to-alls never meet a joined rank: the negotiation fails them
 * (RONDO_ASYNC_NO_JOIN).
 */
#include "engine/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/common/algo.h"
#include "algo/common/gpu.h"
#include "reduce/reduce.h"

typedef struct {
  struct rondo_request *req;
  const eng_resp_t *resp;
} item_t;

static rondo_status_t grow(void **buf, size_t *have, size_t need)
{
  if (*have >= need)
    return RONDO_SUCCESS;
  void *p = realloc(*buf, need);
  if (p == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: %zu-byte buffer", need);
  *buf = p;
  *have = need;
  return RONDO_SUCCESS;
}

static void span(struct engine *e, const struct rondo_request *r, const char *what, double t0,
                 double t1, const char *args)
{
  if (!r->phantom)
    eng_tl_span(e, r->name, what, t0, t1, args);
}

static void finish(struct engine *e, struct rondo_request *r, rondo_status_t st)
{
  eng_complete(e, r, st, st == RONDO_SUCCESS ? NULL : rondo_last_error());
}

/* ---- all-reduce batches ------------------------------------------------------------- */

/* The batch's element count, all its requests together. */
static size_t batch_count(const item_t *it, size_t n)
{
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += it[i].resp->sig.count;
  return total;
}

/* A fused Adasum batch: each request is a tensor with coefficients of its
 * own, so the algorithm gets their boundaries. */
static rondo_status_t run_adasum(struct engine *e, item_t *it, size_t n, const void *src,
                                 void *buf)
{
  const eng_sig_t *s = &it[0].resp->sig;
  size_t *counts = malloc(n * sizeof *counts);
  if (counts == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: an Adasum batch of %zu tensors", n);
  for (size_t i = 0; i < n; i++)
    counts[i] = it[i].resp->sig.count;
  rondo_status_t st = algo_allreduce_fused(e->exec, src, buf, counts, n, (rondo_dtype_t)s->dtype,
                                           RONDO_ADASUM, (rondo_algo_t)s->algo);
  free(counts);
  return st;
}

static void run_batch(struct engine *e, item_t *it, size_t n)
{
  const eng_sig_t *s = &it[0].resp->sig;
  rondo_dtype_t dtype = (rondo_dtype_t)s->dtype;
  rondo_op_t op = (rondo_op_t)s->op;
  size_t esize = rondo_dtype_size(dtype), total = batch_count(it, n);
  rondo_status_t st = RONDO_SUCCESS;
  double t0 = rondo__now(), t1, t2;
  void *buf = NULL;
  const void *src = NULL;
  if (n == 1 && !it[0].req->phantom) {
    struct rondo_request *r = it[0].req;
    buf = r->recvbuf;
    src = r->sendbuf;
    if (s->prescale != 1.0 && total > 0) {
      reduce_scale(buf, src, total, dtype, s->prescale);
      src = buf;
    }
  } else {
    st = n == 1 ? grow(&e->identity, &e->identity_bytes, total * esize + 1)
                : grow(&e->fusion, &e->fusion_bytes, total * esize + 1);
    buf = n == 1 ? e->identity : e->fusion;
    src = buf;
    size_t off = 0;
    for (size_t i = 0; i < n && st == RONDO_SUCCESS; i++) {
      struct rondo_request *r = it[i].req;
      size_t cnt = it[i].resp->sig.count;
      char *dst = (char *)buf + off * esize;
      if (r->phantom)
        reduce_identity(dst, cnt, dtype, op);
      else if (s->prescale != 1.0)
        reduce_scale(dst, r->sendbuf, cnt, dtype, s->prescale);
      else if (cnt > 0)
        memcpy(dst, r->sendbuf, cnt * esize);
      off += cnt;
    }
  }
  t1 = rondo__now();
  if (st == RONDO_SUCCESS)
    st = op == RONDO_ADASUM && n > 1 ? run_adasum(e, it, n, src, buf)
                                     : algo_allreduce(e->exec, src, buf, total, dtype, op,
                                                      (rondo_algo_t)s->algo);
  if (st == RONDO_SUCCESS && s->postscale != 1.0 && total > 0)
    reduce_scale(buf, buf, total, dtype, s->postscale);
  t2 = rondo__now();
  if (!(n == 1 && !it[0].req->phantom)) {
    size_t off = 0;
    for (size_t i = 0; i < n && st == RONDO_SUCCESS; i++) {
      struct rondo_request *r = it[i].req;
      size_t cnt = it[i].resp->sig.count;
      if (!r->phantom && cnt > 0)
        memcpy(r->recvbuf, (char *)buf + off * esize, cnt * esize);
      off += cnt;
    }
  }
  double t3 = rondo__now();
  if (eng_tl_on(e)) {
    char args[160];
    rondo_algo_t algo = s->algo != RONDO_ALGO_AUTO ? (rondo_algo_t)s->algo
                                                   : (rondo_algo_t)e->exec->last_algo;
    snprintf(args, sizeof args, "{\"algorithm\":\"%s\",\"fused\":%zu,\"bytes\":%zu}",
             rondo_algo_name(algo), n, total * esize);
    for (size_t i = 0; i < n; i++) {
      if (n > 1 || s->prescale != 1.0)
        span(e, it[i].req, "MEMCPY_IN_FUSION_BUFFER", t0, t1, NULL);
      span(e, it[i].req, "ALLREDUCE", t1, t2, args);
      if (n > 1)
        span(e, it[i].req, "MEMCPY_OUT_FUSION_BUFFER", t2, t3, NULL);
    }
  }
  struct rondo_request *stack[64], **reqs = n <= 64 ? stack : malloc(n * sizeof *reqs);
  if (reqs == NULL) {
    for (size_t i = 0; i < n; i++)
      finish(e, it[i].req, st);
    return;
  }
  for (size_t i = 0; i < n; i++)
    reqs[i] = it[i].req;
  eng_complete_many(e, reqs, n, st, st == RONDO_SUCCESS ? NULL : rondo_last_error());
  if (reqs != stack)
    free(reqs);
}

/* ---- device all-reduce batches -------------------------------------------------------
 * The same packing as host batches, on the GPU: the requests' buffers are
 * copied into a device fusion buffer on the exec comm's stream, reduced
 * there by nccl (queued) or staged (its host part runs here), copied out,
 * and an event recorded after them. The batch then waits in e->inflight,
 * and the engine loop completes it when the event is done (eng_poll_device):
 * the engine thread never waits for the GPU while it has other work. Every
 * rank runs the same batches in the same order, so the collectives on the
 * stream match. Before each batch the ranks agree that every rank's GPU
 * state is usable, so that no rank runs a batch's collectives alone after
 * another rank's failure. */

static rondo_status_t inflight_push(struct engine *e, eng_inflight_t *b)
{
  if (e->ninflight == e->cap_inflight) {
    size_t cap = e->cap_inflight ? 2 * e->cap_inflight : 8;
    eng_inflight_t *n = realloc(e->inflight, cap * sizeof *n);
    if (n == NULL)
      return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: device batch list");
    e->inflight = n;
    e->cap_inflight = cap;
  }
  e->inflight[e->ninflight++] = *b;
  return RONDO_SUCCESS;
}

/* The device of a batch: the engine's (engine_device: its first device
 * request's), else (a joined rank that never submitted one) the thread's
 * current one. */
static rondo_status_t batch_device(struct engine *e, const dev_backend_t *dev, int *device)
{
  pthread_mutex_lock(&e->lock);
  *device = e->device;
  pthread_mutex_unlock(&e->lock);
  return *device >= 0 ? RONDO_SUCCESS : dev->get_device(device);
}

/* Copies the batch's inputs into the device fusion buffer (phantoms: the
 * identity, from host memory, waited for before the host buffer is
 * reused). */
static rondo_status_t fuse_in(struct engine *e, gpu_state_t *g, item_t *it, size_t n,
                              size_t esize)
{
  rondo_comm_t x = e->exec;
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    struct rondo_request *r = it[i].req;
    size_t cnt = it[i].resp->sig.count, b = cnt * esize;
    char *dst = (char *)e->dfusion + off;
    off += b;
    if (b == 0)
      continue;
    if (!r->phantom) {
      RONDO_CHECK(g->dev->copy_async(dst, r->sendbuf, b, g->stream));
      continue;
    }
    RONDO_CHECK(grow(&e->identity, &e->identity_bytes, b));
    reduce_identity(e->identity, cnt, (rondo_dtype_t)it[i].resp->sig.dtype,
                  (rondo_op_t)it[i].resp->sig.op);
    RONDO_CHECK(gpu_copy_wait(x, g, dst, e->identity, b, "a copy into the device fusion buffer"));
  }
  return RONDO_SUCCESS;
}

/* Polls the batches in flight until none is left, sleeping 20 us doubling
 * to 1 ms between polls (the engine thread has nothing else to do). */
static void wait_inflight(struct engine *e)
{
  for (long us = 20; eng_poll_device(e) > 0; us = us < 1000 ? 2 * us : 1000) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
  }
}

/* This rank's preparation of a batch: the fusion buffer, the inputs in it. */
static rondo_status_t prepare(struct engine *e, gpu_state_t *g, item_t *it, size_t n,
                              size_t bytes, size_t esize)
{
  if (e->dfusion_bytes < bytes) {
    /* Batches in flight still use the buffer: let them finish (polling, not
     * in the implicit synchronization of cudaFree) before it goes. */
    wait_inflight(e);
    g->dev->mem_free(e->dfusion);
    e->dfusion = NULL;
    e->dfusion_bytes = 0;
    RONDO_CHECK(g->dev->mem_alloc(&e->dfusion, bytes + 1));
    e->dfusion_bytes = bytes + 1;
  }
  return fuse_in(e, g, it, n, esize);
}

static void run_device_batch(struct engine *e, item_t *it, size_t n)
{
  rondo_comm_t x = e->exec;
  const eng_sig_t *s = &it[0].resp->sig;
  rondo_dtype_t dtype = (rondo_dtype_t)s->dtype;
  rondo_op_t op = (rondo_op_t)s->op;
  size_t esize = rondo_dtype_size(dtype), total = batch_count(it, n);
  int device = -1, prev = -1, single = n == 1 && !it[0].req->phantom;
  gpu_state_t *g = NULL;
  rondo_algo_t algo = (rondo_algo_t)s->algo;
  eng_inflight_t b = {.n = n, .since = rondo__now(), .t0 = rondo__now()};
  /* Collective steps (attach, the agreement) are reached by every rank
   * alike; local failures before the agreement break this rank's GPU state
   * (gpu_fail tells the others), so the agreement fails the batch
   * everywhere. */
  rondo_status_t st = RONDO_SUCCESS;
  if (x->gpu == NULL) {
    if (batch_device(e, dev_backend(), &device) != RONDO_SUCCESS)
      device = -1; /* attach fails, on every rank */
    st = gpu_attach(x, device);
  }
  if (st == RONDO_SUCCESS) {
    rondo_status_t local = gpu_enter(x, &g, &prev);
    if (local == RONDO_SUCCESS && !single &&
        (local = prepare(e, g, it, n, total * esize, esize)) != RONDO_SUCCESS)
      local = gpu_fail(x, local);
    if (local == RONDO_SUCCESS)
      local = gpu_usable(x, -1);
    st = rondo__agree_ready(x->mpi, local, "its part of a device batch");
  }
  if (st == RONDO_SUCCESS)
    st = algo_allreduce_resolve_mem(x, total, dtype, op, SELECT_MEM_DEVICE, &algo);
  /* from here on, failures go through gpu_fail (the algorithms do) */
  const void *src = single ? it[0].req->sendbuf : e->dfusion;
  void *dst = single ? it[0].req->recvbuf : e->dfusion;
  if (st == RONDO_SUCCESS && total > 0) {
    algo_allreduce_args_t a = {.comm = x, .sendbuf = src, .recvbuf = dst, .count = total,
                               .dtype = dtype, .op = op, .esize = esize};
    st = algo == RONDO_ALGO_NCCL ? algo_nccl_enqueue(&a)
                                 : algo_allreduce_run(x, src, dst, total, dtype, op, algo, NULL);
  }
  for (size_t i = 0, off = 0; st == RONDO_SUCCESS && !single && i < n; i++) {
    struct rondo_request *r = it[i].req;
    size_t bytes = it[i].resp->sig.count * esize;
    if (!r->phantom && bytes > 0 &&
        (st = g->dev->copy_async(r->recvbuf, (char *)e->dfusion + off, bytes, g->stream)) !=
            RONDO_SUCCESS)
      st = gpu_fail(x, st);
    off += bytes;
  }
  if (st == RONDO_SUCCESS) {
    st = g->dev->event_create(&b.event);
    if (st == RONDO_SUCCESS)
      st = g->dev->event_record(b.event, g->stream);
    if (st != RONDO_SUCCESS)
      st = gpu_fail(x, st);
  }
  if (st == RONDO_SUCCESS) {
    snprintf(b.args, sizeof b.args,
             "{\"algorithm\":\"%s\",\"fused\":%zu,\"bytes\":%zu,\"memory\":\"device\"}",
             rondo_algo_name(algo), n, total * esize);
    b.reqs = malloc(n * sizeof *b.reqs);
    for (size_t i = 0; b.reqs != NULL && i < n; i++)
      b.reqs[i] = it[i].req;
    if (b.reqs != NULL && inflight_push(e, &b) == RONDO_SUCCESS) {
      /* Ran: no longer pending for the negotiation (the in-flight table
       * keeps the names until eng_poll_device completes them). */
      for (size_t i = 0; i < n; i++) {
        struct rondo_request *r = it[i].req;
        if (r->pidx >= 0 && (size_t)r->pidx < e->npending && e->pending[r->pidx] == r)
          e->pending[r->pidx] = NULL;
        r->pidx = -1;
      }
      gpu_leave(g, prev);
      return;
    }
    free(b.reqs);
    /* no memory to keep it in flight: wait for its GPU work here */
    st = gpu_wait(x, b.event, "a fused device all-reduce");
  }
  if (g != NULL && b.event != NULL)
    g->dev->event_destroy(b.event);
  gpu_leave(g, prev);
  const char *msg = st == RONDO_SUCCESS ? NULL : rondo_last_error();
  for (size_t i = 0; i < n; i++)
    eng_complete(e, it[i].req, st, msg);
}

/* The batch's requests, completed with st (their GPU work is done or given
 * up); the batch's event freed. */
static void device_batch_done(struct engine *e, eng_inflight_t *b, rondo_status_t st)
{
  double t = rondo__now();
  for (size_t i = 0; i < b->n; i++)
    span(e, b->reqs[i], "ALLREDUCE", b->t0, t, b->args);
  eng_complete_many(e, b->reqs, b->n, st, st == RONDO_SUCCESS ? NULL : rondo_last_error());
  if (e->exec->gpu != NULL)
    e->exec->gpu->dev->event_destroy(b->event);
  free(b->reqs);
}

size_t eng_poll_device(struct engine *e)
{
  size_t kept = 0;
  for (size_t i = 0; i < e->ninflight; i++) {
    eng_inflight_t *b = &e->inflight[i];
    int done = 0;
    rondo_status_t st = gpu_poll(e->exec, b->event, "a fused device all-reduce", b->since, &done);
    if (st != RONDO_SUCCESS || done)
      device_batch_done(e, b, st);
    else
      e->inflight[kept++] = *b;
  }
  e->ninflight = kept;
  return kept;
}

void eng_drain_device(struct engine *e)
{
  wait_inflight(e);
  free(e->inflight);
  e->inflight = NULL;
  e->cap_inflight = 0;
  gpu_state_t *g = e->exec != NULL ? e->exec->gpu : NULL; /* none if startup failed */
  if (e->dfusion != NULL && g != NULL) {
    /* After a failure the stream may still hold copies of the buffer: let
     * them finish (their errors are already reported). Nothing else is
     * pending at shutdown. */
    (void)g->dev->stream_sync(g->stream);
    g->dev->mem_free(e->dfusion);
  }
  e->dfusion = NULL;
  e->dfusion_bytes = 0;
}

/* Tensors above this many bytes are not fused: copying them into the
 * fusion buffer and out again moves more memory than the one all-reduce
 * latency fusion saves. Measured with bench/engine_bench -w resnet50
 * (docs/PERFORMANCE.md): engine/single was 1.46x at 64 KiB, 1.22x at
 * 256 KiB, 2.14x at 1 MiB and 3.62x with no limit. */
#define FUSE_MAX_TENSOR_BYTES ((size_t)256 << 10)

/* Host and device requests are never fused together. */
static int same_group(const eng_sig_t *a, const eng_sig_t *b)
{
  return a->dtype == b->dtype && a->op == b->op && a->prescale == b->prescale &&
         a->postscale == b->postscale && a->algo == b->algo && a->mem == b->mem;
}

static void run_any_batch(struct engine *e, item_t *it, size_t n)
{
  if (it[0].resp->sig.mem)
    run_device_batch(e, it, n);
  else
    run_batch(e, it, n);
}

static void run_allreduces(struct engine *e, item_t *it, size_t n)
{
  size_t limit = e->owner->cfg.fusion_threshold;
  char *taken = calloc(n ? n : 1, 1);
  item_t *batch = malloc((n ? n : 1) * sizeof *batch);
  if (taken == NULL || batch == NULL) {
    rondo__fail(RONDO_ERR_NO_MEMORY, "engine: batches");
    for (size_t i = 0; i < n; i++)
      finish(e, it[i].req, RONDO_ERR_NO_MEMORY);
    free(taken);
    free(batch);
    return;
  }
  for (size_t g = 0; g < n; g++) {
    if (taken[g])
      continue;
    const eng_sig_t *key = &it[g].resp->sig;
    size_t nb = 0, bytes = 0, esize = rondo_dtype_size((rondo_dtype_t)key->dtype);
    for (size_t i = g; i < n; i++) {
      if (taken[i] || !same_group(key, &it[i].resp->sig))
        continue;
      size_t b = it[i].resp->sig.count * esize;
      if (b > FUSE_MAX_TENSOR_BYTES) { /* big: straight from the caller's buffers */
        taken[i] = 1;
        run_any_batch(e, &it[i], 1);
        continue;
      }
      if (nb > 0 && (limit == 0 || bytes + b > limit)) {
        run_any_batch(e, batch, nb);
        nb = 0;
        bytes = 0;
      }
      batch[nb++] = it[i];
      bytes += b;
      taken[i] = 1;
    }
    if (nb > 0)
      run_any_batch(e, batch, nb);
  }
  free(taken);
  free(batch);
}

/* ---- broadcast and allgather -------------------------------------------------------- */

static void run_broadcast(struct engine *e, item_t *it)
{
  struct rondo_request *r = it->req;
  const eng_sig_t *s = &it->resp->sig;
  size_t bytes = s->count * rondo_dtype_size((rondo_dtype_t)s->dtype);
  double t0 = rondo__now();
  void *buf = r->recvbuf;
  rondo_status_t st = RONDO_SUCCESS;
  if (r->phantom) {
    st = grow(&e->identity, &e->identity_bytes, bytes + 1);
    buf = e->identity;
  }
  if (st == RONDO_SUCCESS && bytes > 0)
    st = algo_broadcast(e->exec, buf, bytes, s->root);
  span(e, r, "BROADCAST", t0, rondo__now(), NULL);
  finish(e, r, st);
}

static void run_allgather(struct engine *e, item_t *it)
{
  struct rondo_request *r = it->req;
  const eng_sig_t *s = &it->resp->sig;
  size_t esize = rondo_dtype_size((rondo_dtype_t)s->dtype), total = 0;
  int p = e->size;
  double t0 = rondo__now();
  uint64_t mine = r->phantom ? 0 : r->rows, *rows = malloc((size_t)p * sizeof *rows);
  size_t *counts = malloc((size_t)p * sizeof *counts);
  void *out = NULL;
  rondo_status_t st = RONDO_SUCCESS;
  if (rows == NULL || counts == NULL) {
    /* Cannot even hold p numbers: the other ranks will wait in the
     * collective below for this one; nothing sensible is left to do. */
    free(rows);
    free(counts);
    LOG_ERROR("engine: out of memory in the allgather '%s'; ranks may now hang", r->name);
    finish(e, r, rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': allgather counts", r->name));
    return;
  }
  MPI_Request req;
  int rc = MPI_Iallgather(&mine, 1, MPI_UINT64_T, rows, 1, MPI_UINT64_T, e->exec->mpi, &req);
  if (rc != MPI_SUCCESS)
    st = rondo__mpi_fail(rc, "MPI_Iallgather", __FILE__, __LINE__);
  else
    st = eng_wait(e, &req);
  for (int q = 0; q < p && st == RONDO_SUCCESS; q++)
    total += (counts[q] = (size_t)rows[q] * s->count);
  if (st == RONDO_SUCCESS && (out = malloc(total * esize + 1)) == NULL)
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': allgather result of %zu elements", r->name, total);
  if (st == RONDO_SUCCESS)
    st = algo_allgatherv(e->exec, r->sendbuf, out, counts, NULL, esize);
  span(e, r, "ALLGATHER", t0, rondo__now(), NULL);
  if (st == RONDO_SUCCESS && !r->phantom) {
    r->result = out;
    r->result_count = total;
    out = NULL;
  }
  free(out);
  free(rows);
  free(counts);
  finish(e, r, st);
}

/* ---- reduce-scatter and all-to-all ---------------------------------------------------- */

static void run_reduce_scatter(struct engine *e, item_t *it)
{
  struct rondo_request *r = it->req;
  const eng_sig_t *s = &it->resp->sig;
  rondo_dtype_t dtype = (rondo_dtype_t)s->dtype;
  rondo_op_t op = (rondo_op_t)s->op;
  size_t esize = rondo_dtype_size(dtype), total = s->rows * s->count, mine = 0;
  int p = e->size;
  double t0 = rondo__now();
  const void *src = r->sendbuf;
  size_t *counts = malloc((size_t)p * sizeof *counts);
  rondo_status_t st = counts != NULL ? RONDO_SUCCESS
                                     : rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': counts", r->name);
  for (int q = 0; q < p && st == RONDO_SUCCESS; q++)
    counts[q] = (s->rows / (size_t)p + ((size_t)q < s->rows % (size_t)p)) * s->count;
  if (st == RONDO_SUCCESS)
    mine = counts[e->rank];
  if (st == RONDO_SUCCESS && s->prescale != 1.0 && total > 0 &&
      (st = grow(&e->identity, &e->identity_bytes, total * esize)) == RONDO_SUCCESS) {
    reduce_scale(e->identity, src, total, dtype, s->prescale);
    src = e->identity;
  }
  /* no rank goes into the collective while another could not */
  st = rondo__agree_ready(e->exec->mpi, st, "its part of a reduce-scatter");
  if (st == RONDO_SUCCESS)
    st = algo_reduce_scatterv(e->exec, src, r->recvbuf, counts, dtype,
                              op == RONDO_AVG ? RONDO_SUM : op);
  if (st == RONDO_SUCCESS && op == RONDO_AVG)
    reduce_average(r->recvbuf, mine, dtype, p);
  if (st == RONDO_SUCCESS && s->postscale != 1.0 && mine > 0)
    reduce_scale(r->recvbuf, r->recvbuf, mine, dtype, s->postscale);
  span(e, r, "REDUCESCATTER", t0, rondo__now(), NULL);
  free(counts);
  finish(e, r, st);
}

static void run_alltoall(struct engine *e, item_t *it)
{
  struct rondo_request *r = it->req;
  const eng_sig_t *s = &it->resp->sig;
  size_t row = s->count * rondo_dtype_size((rondo_dtype_t)s->dtype), total = 0;
  int p = e->size;
  double t0 = rondo__now();
  uint64_t *rows = malloc(2 * (size_t)p * sizeof *rows);
  size_t *bytes = malloc(2 * (size_t)p * sizeof *bytes);
  void *out = NULL;
  rondo_status_t st = rows != NULL && bytes != NULL
                          ? RONDO_SUCCESS
                          : rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': counts", r->name);
  /* every rank that passes this agreement takes part in the next one */
  if ((st = rondo__agree_ready(e->exec->mpi, st, "its all-to-all counts")) == RONDO_SUCCESS) {
    for (int q = 0; q < p; q++)
      rows[q] = r->sendcounts[q];
    MPI_Request req;
    int rc = MPI_Ialltoall(rows, 1, MPI_UINT64_T, rows + p, 1, MPI_UINT64_T, e->exec->mpi, &req);
    st = rc != MPI_SUCCESS ? rondo__mpi_fail(rc, "MPI_Ialltoall", __FILE__, __LINE__)
                           : eng_wait(e, &req);
    for (int q = 0; q < p && st == RONDO_SUCCESS; q++) {
      bytes[q] = (size_t)rows[q] * row;
      bytes[p + q] = (size_t)rows[p + q] * row;
      total += bytes[p + q];
    }
    if (st == RONDO_SUCCESS && (out = malloc(total + 1)) == NULL)
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': all-to-all result of %zu bytes", r->name,
                       total);
    st = rondo__agree_ready(e->exec->mpi, st, "memory for its all-to-all result");
  }
  if (st == RONDO_SUCCESS)
    st = algo_alltoallv(e->exec, r->sendbuf, bytes, out, bytes + p);
  span(e, r, "ALLTOALL", t0, rondo__now(), NULL);
  if (st == RONDO_SUCCESS) {
    for (int q = 0; q < p; q++)
      r->recvcounts[q] = (size_t)rows[p + q];
    r->result = out;
    r->result_count = total / (row ? row : 1) * s->count;
    out = NULL;
  }
  free(out);
  free(rows);
  free(bytes);
  finish(e, r, st);
}

/* ---- the cycle's work ------------------------------------------------------------------ */

/* r (this rank's request for resp), or a phantom if there is none. */
static struct rondo_request *request_for(struct engine *e, const eng_resp_t *resp,
                                         struct rondo_request *r)
{
  if (r != NULL)
    return r;
  if (!e->joined)
    LOG_ERROR("engine: '%s' is ready but this rank has no such request; taking part with "
              "the identity to keep the ranks in step (please report this)",
              resp->name);
  r = calloc(1, sizeof *r);
  if (r == NULL || (r->name = strdup(resp->name)) == NULL) {
    free(r);
    return NULL;
  }
  r->eng = e;
  r->phantom = 1;
  r->pidx = -1;
  r->sig = resp->sig;
  return r;
}

void eng_execute(struct engine *e, const eng_cycle_t *c)
{
  if (c->nresp == 0)
    return;
  double ready = rondo__now();
  item_t *it = malloc(c->nresp * sizeof *it);
  struct rondo_request **found = malloc(c->nresp * sizeof *found);
  if (it == NULL || found == NULL) {
    LOG_ERROR("engine: out of memory for a cycle of %zu responses; ranks may now hang", c->nresp);
    free(it);
    free(found);
    return;
  }
  eng_find_pending(e, c, found);
  size_t n = 0;
  for (size_t i = 0; i < c->nresp; i++) {
    const eng_resp_t *resp = &c->resp[i];
    if (resp->type == RESP_ERROR) {
      if (found[i] != NULL)
        eng_group_failed(e, found[i], resp->status, resp->message);
      /* a refusing rank gets its own reason, the others the response's */
      if (found[i] != NULL && found[i]->sig.kind == ENG_REFUSED)
        eng_complete(e, found[i], RONDO_ERR_INVALID_ARG, found[i]->reason);
      else if (found[i] != NULL)
        eng_complete(e, found[i], resp->status, resp->message);
      continue;
    }
    struct rondo_request *r = request_for(e, resp, found[i]);
    if (r == NULL) {
      /* Out of memory for a phantom: the collectives would no longer match. */
      LOG_ERROR("engine: out of memory while running '%s'; ranks may now hang", resp->name);
      continue;
    }
    span(e, r, "QUEUE_WAIT", r->t_submit, r->t_taken, NULL);
    span(e, r, "NEGOTIATE", r->t_taken, ready, NULL);
    it[n].req = r;
    it[n].resp = resp;
    n++;
  }
  /* All-reduces first (fused), then the others, each in response order. */
  item_t *ar = malloc((n ? n : 1) * sizeof *ar);
  size_t nar = 0;
  for (size_t i = 0; ar != NULL && i < n; i++)
    if (it[i].resp->sig.kind == ENG_ALLREDUCE)
      ar[nar++] = it[i];
  if (ar != NULL)
    run_allreduces(e, ar, nar);
  for (size_t i = 0; i < n; i++) {
    if (it[i].resp->sig.kind == ENG_BROADCAST)
      run_broadcast(e, &it[i]);
    else if (it[i].resp->sig.kind == ENG_ALLGATHER)
      run_allgather(e, &it[i]);
    else if (it[i].resp->sig.kind == ENG_REDUCE_SCATTER)
      run_reduce_scatter(e, &it[i]);
    else if (it[i].resp->sig.kind == ENG_ALLTOALL)
      run_alltoall(e, &it[i]);
  }
  free(ar);
  free(found);
  free(it);
}
