/*
 * Device all-reduce batches (fusion.h): the same packing as host batches,
 * on the GPU. The requests' buffers are copied into a device fusion buffer on the exec comm's stream, reduced
 * there by nccl (queued) or staged (its host part runs here), copied out,
 * and an event recorded after them. The batch then waits in e->dev->batches,
 * and the engine loop completes it when the event is done (eng_poll_device):
 * the engine thread never waits for the GPU while it has other work. Every
 * rank runs the same batches in the same order, so the collectives on the
 * stream match. Before each batch the ranks agree that every rank's GPU
 * state is usable, so that no rank runs a batch's collectives alone after
 * another rank's failure.
 */
#include "engine/fusion.h"

#include "base/comm.h"
#include "engine/inflight.h"
#include "engine/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "algo/algo.h"
#include "algo/common/gpu.h"
#include "reduce/reduce.h"

static rondo_status_t batch_push(eng_run_t *e, eng_device_batch_t *b)
{
  if (e->dev->n == e->dev->cap) {
    size_t cap = e->dev->cap ? 2 * e->dev->cap : 8;
    eng_device_batch_t *n = realloc(e->dev->batches, cap * sizeof *n);
    if (n == NULL)
      return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: device batch list");
    e->dev->batches = n;
    e->dev->cap = cap;
  }
  e->dev->batches[e->dev->n++] = *b;
  return RONDO_SUCCESS;
}

/* The device of a batch: the engine's (eng_device: its first device
 * request's), else (a joined rank that never submitted one) the thread's
 * current one. */
static rondo_status_t batch_device(eng_run_t *e, const dev_backend_t *dev, int *device)
{
  pthread_mutex_lock(&e->nap->sync->lock);
  *device = *e->device;
  pthread_mutex_unlock(&e->nap->sync->lock);
  return *device >= 0 ? RONDO_SUCCESS : dev->get_device(device);
}

/* Copies the batch's inputs into the device fusion buffer (stand-ins: the
 * identity, from host memory, waited for before the host buffer is
 * reused). */
static rondo_status_t fuse_in(eng_run_t *e, gpu_state_t *g, eng_item_t *it, size_t n,
                              size_t esize)
{
  rondo_comm_t x = e->exec;
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    struct rondo_request *r = it[i].req;
    size_t cnt = it[i].resp->sig.count, b = cnt * esize;
    char *dst = (char *)e->dev->fusion + off;
    off += b;
    if (b == 0)
      continue;
    if (!r->stand_in) {
      RONDO_CHECK(g->dev->copy_async(dst, r->sendbuf, b, g->stream));
      continue;
    }
    RONDO_CHECK(eng_scratch_reserve(e->buf, b));
    reduce_identity(e->buf->scratch, cnt, (rondo_dtype_t)it[i].resp->sig.dtype,
                    (rondo_op_t)it[i].resp->sig.op);
    RONDO_CHECK(
        gpu_copy_wait(x, g, dst, e->buf->scratch, b, "a copy into the device fusion buffer"));
  }
  return RONDO_SUCCESS;
}

/* Polls the batches in flight until none is left, sleeping 20 us doubling
 * to 1 ms between polls (the engine thread has nothing else to do). */
static void wait_inflight(eng_run_t *e)
{
  for (long us = 20; eng_poll_device(e) > 0; us = us < 1000 ? 2 * us : 1000) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
  }
}

/* This rank's preparation of a batch: the fusion buffer, the inputs in it. */
static rondo_status_t prepare(eng_run_t *e, gpu_state_t *g, eng_item_t *it, size_t n,
                              size_t bytes, size_t esize)
{
  if (e->dev->fusion_bytes < bytes) {
    /* Batches in flight still use the buffer: let them finish (polling, not
     * in the implicit synchronization of cudaFree) before it goes. */
    wait_inflight(e);
    g->dev->mem_free(e->dev->fusion);
    e->dev->fusion = NULL;
    e->dev->fusion_bytes = 0;
    RONDO_CHECK(g->dev->mem_alloc(&e->dev->fusion, bytes + 1));
    e->dev->fusion_bytes = bytes + 1;
  }
  return fuse_in(e, g, it, n, esize);
}

void eng_fusion_run_device(eng_run_t *e, eng_item_t *it, size_t n)
{
  rondo_comm_t x = e->exec;
  const eng_sig_t *s = &it[0].resp->sig;
  rondo_dtype_t dtype = (rondo_dtype_t)s->dtype;
  rondo_op_t op = (rondo_op_t)s->op;
  size_t esize = rondo_dtype_size(dtype), total = eng_batch_count(it, n);
  int device = -1, prev = -1, single = n == 1 && !it[0].req->stand_in;
  gpu_state_t *g = NULL;
  rondo_algo_t algo = (rondo_algo_t)s->algo;
  eng_device_batch_t b = {.n = n, .since = rondo__now(), .t0 = rondo__now()};
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
  const void *src = single ? it[0].req->sendbuf : e->dev->fusion;
  void *dst = single ? it[0].req->recvbuf : e->dev->fusion;
  if (st == RONDO_SUCCESS && total > 0) {
    algo_allreduce_args_t a = {.comm = x, .sendbuf = src, .recvbuf = dst, .count = total,
                               .dtype = dtype, .op = op, .esize = esize};
    st = algo == RONDO_ALGO_NCCL ? algo_nccl_enqueue(&a)
                                 : algo_allreduce_run(x, src, dst, total, dtype, op, algo, NULL);
  }
  for (size_t i = 0, off = 0; st == RONDO_SUCCESS && !single && i < n; i++) {
    struct rondo_request *r = it[i].req;
    size_t bytes = it[i].resp->sig.count * esize;
    if (!r->stand_in && bytes > 0 &&
        (st = g->dev->copy_async(r->recvbuf, (char *)e->dev->fusion + off, bytes, g->stream)) !=
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
    if (b.reqs != NULL && batch_push(e, &b) == RONDO_SUCCESS) {
      /* Ran: no longer pending for the negotiation (the in-flight table
       * keeps the names until eng_poll_device completes them). */
      for (size_t i = 0; i < n; i++)
        eng_pending_drop(e->flight, it[i].req);
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
    eng_complete(e->flight, it[i].req, st, msg);
}

/* The batch's requests, completed with st (their GPU work is done or given
 * up); the batch's event freed. */
static void device_batch_done(eng_run_t *e, eng_device_batch_t *b, rondo_status_t st)
{
  double t = rondo__now();
  for (size_t i = 0; i < b->n; i++)
    if (!b->reqs[i]->stand_in)
      eng_tl_span(e->trace, b->reqs[i]->name, "ALLREDUCE", b->t0, t, b->args);
  eng_complete_many(e->flight, b->reqs, b->n, st, st == RONDO_SUCCESS ? NULL : rondo_last_error());
  if (e->exec->gpu != NULL)
    e->exec->gpu->dev->event_destroy(b->event);
  free(b->reqs);
}

size_t eng_poll_device(eng_run_t *e)
{
  size_t kept = 0;
  for (size_t i = 0; i < e->dev->n; i++) {
    eng_device_batch_t *b = &e->dev->batches[i];
    int done = 0;
    rondo_status_t st = gpu_poll(e->exec, b->event, "a fused device all-reduce", b->since, &done);
    if (st != RONDO_SUCCESS || done)
      device_batch_done(e, b, st);
    else
      e->dev->batches[kept++] = *b;
  }
  e->dev->n = kept;
  return kept;
}

void eng_drain_device(eng_run_t *e)
{
  wait_inflight(e);
  free(e->dev->batches);
  e->dev->batches = NULL;
  e->dev->cap = 0;
  gpu_state_t *g = e->exec != NULL ? e->exec->gpu : NULL; /* none if startup failed */
  if (e->dev->fusion != NULL && g != NULL) {
    /* After a failure the stream may still hold copies of the buffer: let
     * them finish (their errors are already reported). Nothing else is
     * pending at shutdown. */
    (void)g->dev->stream_sync(g->stream);
    g->dev->mem_free(e->dev->fusion);
  }
  e->dev->fusion = NULL;
  e->dev->fusion_bytes = 0;
}

