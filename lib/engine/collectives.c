/*
 * The collectives that run one by one (collectives.h). Their per-rank
 * counts live in e->buf (made at startup); memory a rank may lack (a
 * result, scaled input) is agreed on before the collective step that
 * needs it, so that no rank enters one the others skip.
 */
#include "engine/collectives.h"

#include "engine/engine.h"
#include "engine/inflight.h"
#include "engine/wait.h"

#include <stdlib.h>

#include "algo/common/algo.h"
#include "reduce/reduce.h"

static void span(struct engine *e, const struct rondo_request *r, const char *what, double t0)
{
  if (!r->stand_in)
    eng_tl_span(&e->trace, r->name, what, t0, rondo__now(), NULL);
}

static void finish(struct engine *e, struct rondo_request *r, rondo_status_t st)
{
  eng_complete(e, r, st, st == RONDO_SUCCESS ? NULL : rondo_last_error());
}

void eng_run_broadcast(struct engine *e, eng_item_t *it)
{
  struct rondo_request *r = it->req;
  const eng_sig_t *s = &it->resp->sig;
  size_t bytes = s->count * rondo_dtype_size((rondo_dtype_t)s->dtype);
  double t0 = rondo__now();
  /* a stand-in receives into its scratch (reserved with it, execute.c) */
  void *buf = r->stand_in ? e->buf.scratch : r->recvbuf;
  rondo_status_t st = RONDO_SUCCESS;
  if (bytes > 0)
    st = algo_broadcast(e->exec, buf, bytes, s->root);
  span(e, r, "BROADCAST", t0);
  finish(e, r, st);
}

void eng_run_allgather(struct engine *e, eng_item_t *it)
{
  struct rondo_request *r = it->req;
  const eng_sig_t *s = &it->resp->sig;
  size_t esize = rondo_dtype_size((rondo_dtype_t)s->dtype), total = 0;
  int p = e->size;
  double t0 = rondo__now();
  uint64_t mine = r->stand_in ? 0 : r->rows, *rows = e->buf.rows;
  size_t *counts = e->buf.sizes;
  void *out = NULL;
  MPI_Request req;
  rondo_status_t st;
  int rc = MPI_Iallgather(&mine, 1, MPI_UINT64_T, rows, 1, MPI_UINT64_T, e->exec->mpi, &req);
  if (rc != MPI_SUCCESS)
    st = rondo__mpi_fail(rc, "MPI_Iallgather", __FILE__, __LINE__);
  else
    st = eng_wait(e, &req);
  if (st == RONDO_SUCCESS) {
    for (int q = 0; q < p; q++)
      total += (counts[q] = (size_t)rows[q] * s->count);
    if ((out = malloc(total * esize + 1)) == NULL)
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': allgather result of %zu elements", r->name,
                       total);
    st = rondo__agree_ready(e->exec->mpi, st, "memory for its allgather result");
  }
  if (st == RONDO_SUCCESS)
    st = algo_allgatherv(e->exec, r->sendbuf, out, counts, NULL, esize);
  span(e, r, "ALLGATHER", t0);
  if (st == RONDO_SUCCESS && !r->stand_in) {
    r->result = out;
    r->result_count = total;
    out = NULL;
  }
  free(out);
  finish(e, r, st);
}

void eng_run_reduce_scatter(struct engine *e, eng_item_t *it)
{
  struct rondo_request *r = it->req;
  const eng_sig_t *s = &it->resp->sig;
  rondo_dtype_t dtype = (rondo_dtype_t)s->dtype;
  rondo_op_t op = (rondo_op_t)s->op;
  size_t esize = rondo_dtype_size(dtype), total = s->rows * s->count;
  int p = e->size;
  double t0 = rondo__now();
  const void *src = r->sendbuf;
  size_t *counts = e->buf.sizes;
  for (int q = 0; q < p; q++)
    counts[q] = (s->rows / (size_t)p + ((size_t)q < s->rows % (size_t)p)) * s->count;
  size_t mine = counts[e->rank];
  rondo_status_t st = RONDO_SUCCESS;
  if (s->prescale != 1.0 && total > 0 &&
      (st = eng_scratch_reserve(&e->buf, total * esize)) == RONDO_SUCCESS) {
    reduce_scale(e->buf.scratch, src, total, dtype, s->prescale);
    src = e->buf.scratch;
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
  span(e, r, "REDUCESCATTER", t0);
  finish(e, r, st);
}

void eng_run_alltoall(struct engine *e, eng_item_t *it)
{
  struct rondo_request *r = it->req;
  const eng_sig_t *s = &it->resp->sig;
  size_t row = s->count * rondo_dtype_size((rondo_dtype_t)s->dtype), total = 0;
  int p = e->size;
  double t0 = rondo__now();
  uint64_t *rows = e->buf.rows;   /* [0, p): to each rank; [p, 2p): from each */
  size_t *bytes = e->buf.sizes;
  void *out = NULL;
  for (int q = 0; q < p; q++)
    rows[q] = r->sendcounts[q];
  MPI_Request req;
  int rc = MPI_Ialltoall(rows, 1, MPI_UINT64_T, rows + p, 1, MPI_UINT64_T, e->exec->mpi, &req);
  rondo_status_t st = rc != MPI_SUCCESS ? rondo__mpi_fail(rc, "MPI_Ialltoall", __FILE__, __LINE__)
                                        : eng_wait(e, &req);
  if (st == RONDO_SUCCESS) {
    for (int q = 0; q < p; q++) {
      bytes[q] = (size_t)rows[q] * row;
      bytes[p + q] = (size_t)rows[p + q] * row;
      total += bytes[p + q];
    }
    if ((out = malloc(total + 1)) == NULL)
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': all-to-all result of %zu bytes", r->name,
                       total);
    st = rondo__agree_ready(e->exec->mpi, st, "memory for its all-to-all result");
  }
  if (st == RONDO_SUCCESS)
    st = algo_alltoallv(e->exec, r->sendbuf, bytes, out, bytes + p);
  span(e, r, "ALLTOALL", t0);
  if (st == RONDO_SUCCESS) {
    for (int q = 0; q < p; q++)
      r->recvcounts[q] = (size_t)rows[p + q];
    r->result = out;
    r->result_count = total / (row ? row : 1) * s->count;
    out = NULL;
  }
  free(out);
  finish(e, r, st);
}
