/*
 * Fused all-reduces (fusion.h). Every rank holds the same response list, so
 * every rank builds the same batches in the same order: all-reduces are
 * grouped and packed into batches by plan.c's rule (eng_fuse, which the
 * fused reduce-scatters and allgathers of collectives.c share); a tensor
 * above ENG_FUSE_MAX_TENSOR_BYTES runs alone, from its own buffers. A batch
 * of one runs straight from sendbuf to recvbuf; a larger one is copied into
 * the fusion buffer (prescaled on the way), reduced in place by one
 * selected all-reduce, and copied out (postscaled on the way).
 *
 * The fusion buffer grows only through eng_fusion_reserve (or hold and
 * agreed), which every rank calls alike and agrees on: a rank short of
 * memory fails the batch on every rank instead of leaving the others in
 * its all-reduce.
 */
#include "engine/fusion.h"

#include "base/comm.h"
#include "engine/inflight.h"
#include "engine/request.h"
#include "engine/plan.h"

#include <stdio.h>
#include <string.h>

#include "algo/algo.h"
#include "reduce/reduce.h"

/* A fused Adasum batch: each request is a tensor with coefficients of its
 * own, so the algorithm gets their boundaries. */
static rondo_status_t run_adasum(eng_run_t *e, eng_item_t *it, size_t n, const void *src,
                                 void *buf)
{
  const eng_sig_t *s = &it[0].resp->sig;
  size_t *counts = e->buf->counts; /* room for every item of the cycle */
  for (size_t i = 0; i < n; i++)
    counts[i] = it[i].resp->sig.count;
  rondo_status_t st = algo_allreduce_fused(e->exec, src, buf, counts, n, (rondo_dtype_t)s->dtype,
                                           RONDO_ADASUM, (rondo_algo_t)s->algo);
  return st;
}

void eng_fusion_run_host(eng_run_t *e, eng_item_t *it, size_t n)
{
  const eng_sig_t *s = &it[0].resp->sig;
  rondo_dtype_t dtype = (rondo_dtype_t)s->dtype;
  rondo_op_t op = (rondo_op_t)s->op;
  size_t esize = rondo_dtype_size(dtype), total = eng_batch_count(it, n);
  rondo_status_t st = RONDO_SUCCESS;
  double t0 = rondo__now(), t1, t2;
  void *buf = NULL;
  const void *src = NULL;
  if (n == 1 && !it[0].req->stand_in) {
    struct rondo_request *r = it[0].req;
    buf = r->recvbuf;
    src = r->sendbuf;
    if (s->prescale != 1.0 && total > 0) {
      reduce_scale(buf, src, total, dtype, s->prescale);
      src = buf;
    }
  } else {
    /* A batch of several: the fusion buffer, grown alike on every rank. A
     * stand-in alone: its scratch, reserved with it (execute.c). */
    if (n > 1)
      st = eng_fusion_reserve(e->buf, e->exec->mpi, total * esize + 1);
    buf = n > 1 ? e->buf->fusion : e->buf->scratch;
    src = buf;
    size_t off = 0;
    for (size_t i = 0; i < n && st == RONDO_SUCCESS; i++) {
      struct rondo_request *r = it[i].req;
      size_t cnt = it[i].resp->sig.count;
      char *dst = (char *)buf + off * esize;
      if (r->stand_in)
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
  if (!(n == 1 && !it[0].req->stand_in)) {
    size_t off = 0;
    for (size_t i = 0; i < n && st == RONDO_SUCCESS; i++) {
      struct rondo_request *r = it[i].req;
      size_t cnt = it[i].resp->sig.count;
      if (!r->stand_in && cnt > 0)
        memcpy(r->recvbuf, (char *)buf + off * esize, cnt * esize);
      off += cnt;
    }
  }
  double t3 = rondo__now();
  if (eng_tl_on(e->trace)) {
    char args[160];
    rondo_algo_t algo = s->algo != RONDO_ALGO_AUTO ? (rondo_algo_t)s->algo
                                                   : (rondo_algo_t)e->exec->last_algo;
    snprintf(args, sizeof args, "{\"algorithm\":\"%s\",\"fused\":%zu,\"bytes\":%zu}",
             rondo_algo_name(algo), n, total * esize);
    for (size_t i = 0; i < n; i++) {
      const struct rondo_request *r = it[i].req;
      if (r->stand_in)
        continue;
      if (n > 1 || s->prescale != 1.0)
        eng_tl_span(e->trace, r->name, "MEMCPY_IN_FUSION_BUFFER", t0, t1, NULL);
      eng_tl_span(e->trace, r->name, "ALLREDUCE", t1, t2, args);
      if (n > 1)
        eng_tl_span(e->trace, r->name, "MEMCPY_OUT_FUSION_BUFFER", t2, t3, NULL);
    }
  }
  struct rondo_request **reqs = e->buf->reqs; /* room for every item of the cycle */
  for (size_t i = 0; i < n; i++)
    reqs[i] = it[i].req;
  eng_complete_many(e->flight, reqs, n, st, st == RONDO_SUCCESS ? NULL : rondo_last_error());
}

void eng_fuse(eng_run_t *e, eng_item_t *it, size_t n,
              void (*run)(eng_run_t *e, eng_item_t *batch, size_t nb, void *ctx), void *ctx)
{
  /* room for every item of the cycle (buffers.c) */
  eng_plan_t plan = {e->buf->order, e->buf->ends, 0, e->buf->open, e->buf->taken};
  eng_plan_limits_t lim = {e->owner->cfg.fusion_threshold, ENG_FUSE_MAX_TENSOR_BYTES};
  eng_plan(it, n, lim, &plan);
  eng_item_t *batch = e->buf->batch;
  for (size_t b = 0, from = 0; b < plan.nbatches; from = plan.ends[b++]) {
    size_t nb = plan.ends[b] - from;
    for (size_t j = 0; j < nb; j++)
      batch[j] = it[plan.order[from + j]];
    run(e, batch, nb, ctx);
  }
}

static void run_any_batch(eng_run_t *e, eng_item_t *it, size_t n, void *ctx)
{
  (void)ctx;
  if (it[0].resp->sig.mem)
    eng_fusion_run_device(e, it, n);
  else
    eng_fusion_run_host(e, it, n);
}

void eng_fusion_run(eng_run_t *e, eng_item_t *it, size_t n)
{
  for (size_t i = 0; i < n; i++)
    it[i].elems = it[i].resp->sig.count;
  eng_fuse(e, it, n, run_any_batch, NULL);
}
