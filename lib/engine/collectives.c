/*
 * The collectives other than all-reduce (collectives.h). Their per-rank
 * counts live in e->buf (made at startup; the room for the allgathers'
 * rows grows alike on every rank); memory a rank may lack (a result,
 * scaled input, the fusion buffer) is agreed on before the collective
 * step that needs it, so that no rank enters one the others skip.
 *
 * Reduce-scatters and allgathers are fused, as all-reduces are (Horovod
 * fuses its grouped reducescatters and allgathers alike): eng_fuse
 * (fusion.c) forms the same batches on every rank, and each batch of
 * several runs as ONE collective over the fusion buffer, whose block for
 * rank q holds q's part of every request of the batch, in batch order:
 *
 *   reduce-scatter: q's share of each request's rows (rows / size rows,
 *     one more for q < rows % size), packed (and prescaled) from each
 *     sendbuf, one reduce-scatter with q's block to rank q, then this
 *     rank's block averaged and postscaled at once (the batch shares op and
 *     scales) and copied out to each recvbuf. Its rounds: the data, and an
 *     agreement only when the fusion buffer grows (as for all-reduces).
 *   allgather: q's rows of each request; one allgather of the blocks, then
 *     each request's rows copied from every block into its result. A rank
 *     needs every rank's rows first. The negotiation already tells them
 *     where every rank has the same rows: rank 0 saw each rank's rows in
 *     the signatures and put the common count in the response (or
 *     ENG_ROWS_DIFFER), and a cached response whose bit every rank set
 *     proves that every rank still has them (eng_sig_serves). Only the
 *     cycle's allgathers whose rows differ are asked for, in ONE exchange
 *     of all their rows, for every batch of the cycle; then ONE agreement
 *     on the memory of all the cycle's results (and of the fusion buffer);
 *     then each batch's data. Rounds per cycle: the data of each batch,
 *     the memory agreement, and the rows' exchange only where some rows
 *     differ (plus an agreement when the room for the rows must grow).
 *     The rows are not sent in the negotiation itself: they may differ
 *     per rank, so they cannot be part of what is compared, and the fast
 *     path carries no per-rank data but its cache bits.
 * A batch of one runs from the request's own buffers (a reduce-scatter's
 * prescale into scratch), without the copies.
 */
#include "engine/collectives.h"

#include "base/comm.h"
#include "engine/inflight.h"
#include "engine/request.h"
#include "engine/nap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "reduce/reduce.h"

static void span(eng_run_t *e, const struct rondo_request *r, const char *what, double t0)
{
  if (!r->stand_in)
    eng_tl_span(e->trace, r->name, what, t0, rondo__now(), NULL);
}

static void finish(eng_run_t *e, struct rondo_request *r, rondo_status_t st)
{
  eng_complete(e->flight, r, st, st == RONDO_SUCCESS ? NULL : rondo_last_error());
}

/* The spans of a fused batch (or a lone request) on each member's track:
 * the copies in and out when there are some, the collective with its
 * arguments between them. */
static void batch_spans(eng_run_t *e, const eng_item_t *b, size_t nb, const char *what,
                        int copied_in, double t0, double t1, double t2, double t3, const char *args)
{
  for (size_t j = 0; j < nb; j++) {
    const struct rondo_request *r = b[j].req;
    if (r->stand_in)
      continue;
    if (copied_in)
      eng_tl_span(e->trace, r->name, "MEMCPY_IN_FUSION_BUFFER", t0, t1, NULL);
    eng_tl_span(e->trace, r->name, what, t1, t2, args);
    if (nb > 1)
      eng_tl_span(e->trace, r->name, "MEMCPY_OUT_FUSION_BUFFER", t2, t3, NULL);
  }
}

static void complete_batch(eng_run_t *e, eng_item_t *b, size_t nb, rondo_status_t st)
{
  struct rondo_request **reqs = e->buf->reqs; /* room for every item of the cycle */
  for (size_t j = 0; j < nb; j++)
    reqs[j] = b[j].req;
  eng_complete_many(e->flight, reqs, nb, st, st == RONDO_SUCCESS ? NULL : rondo_last_error());
}

void eng_run_broadcast(eng_run_t *e, eng_item_t *it)
{
  struct rondo_request *r = it->req;
  const eng_sig_t *s = &it->resp->sig;
  size_t bytes = s->count * rondo_dtype_size((rondo_dtype_t)s->dtype);
  double t0 = rondo__now();
  /* a stand-in receives into its scratch (reserved with it, execute.c) */
  void *buf = r->stand_in ? e->buf->scratch : r->recvbuf;
  rondo_status_t st = RONDO_SUCCESS;
  if (bytes > 0)
    st = algo_broadcast(e->exec, buf, bytes, s->root);
  span(e, r, "BROADCAST", t0);
  finish(e, r, st);
}

/* ---- reduce-scatter ---------------------------------------------------------------- */

/* Rank q's rows of a reduce-scatter over size ranks: an even split, or
 * every row at the root for a reduce (rondo_reduce_async: root >= 0). */
static size_t share_rows(const eng_sig_t *sig, int size, int q)
{
  if (sig->root >= 0)
    return q == sig->root ? (size_t)sig->rows : 0;
  return (size_t)(sig->rows / (uint64_t)size + ((uint64_t)q < sig->rows % (uint64_t)size));
}

/* One batch of reduce-scatters (same dtype, op and scales). Reduce-scatters
 * never meet a joined rank (the negotiation fails them, RONDO_ASYNC_NO_JOIN),
 * so there are no stand-ins here; a batch of several would still pack one's
 * identity. */
static void rs_batch(eng_run_t *e, eng_item_t *b, size_t nb, void *ctx)
{
  (void)ctx;
  const eng_sig_t *s = &b[0].resp->sig;
  rondo_dtype_t dtype = (rondo_dtype_t)s->dtype;
  rondo_op_t op = (rondo_op_t)s->op;
  size_t esize = rondo_dtype_size(dtype), total = 0;
  int p = e->size;
  size_t *counts = e->buf->sizes, *at = e->buf->counts;
  for (int q = 0; q < p; q++) {
    counts[q] = 0;
    for (size_t j = 0; j < nb; j++)
      counts[q] += share_rows(&b[j].resp->sig, p, q) * b[j].resp->sig.count;
    total += counts[q];
  }
  size_t mine = counts[e->rank];
  double t0 = rondo__now();
  rondo_status_t st = RONDO_SUCCESS;
  const void *src;
  void *dst;
  if (nb == 1) {
    struct rondo_request *r = b[0].req;
    src = r->sendbuf;
    dst = r->recvbuf;
    if (s->prescale != 1.0 && total > 0) {
      if ((st = eng_scratch_reserve(e->buf, total * esize)) == RONDO_SUCCESS) {
        reduce_scale(e->buf->scratch, src, total, dtype, s->prescale);
        src = e->buf->scratch;
      }
      /* no rank goes into the collective while another could not; the
       * scales are in the signature, so every rank agrees here or none */
      st = rondo__agree_ready(e->exec->mpi, st, "its part of a reduce-scatter");
    }
  } else {
    /* the inputs, then room for this rank's block (rank 0's is the
     * largest: the same size on every rank) */
    st = eng_fusion_reserve(e->buf, e->exec->mpi, (total + counts[0]) * esize + 1);
    char *in = e->buf->fusion;
    src = dst = NULL;
    if (st == RONDO_SUCCESS) {
      src = in;
      dst = in + total * esize;
    }
    for (size_t j = 0; j < nb; j++)
      at[j] = 0; /* elements of request j packed so far */
    for (int q = 0; q < p && st == RONDO_SUCCESS; q++)
      for (size_t j = 0; j < nb; j++) {
        const struct rondo_request *r = b[j].req;
        size_t cnt = share_rows(&b[j].resp->sig, p, q) * b[j].resp->sig.count;
        if (cnt == 0)
          continue;
        if (r->stand_in)
          reduce_identity(in, cnt, dtype, op);
        else if (s->prescale != 1.0)
          reduce_scale(in, (const char *)r->sendbuf + at[j] * esize, cnt, dtype, s->prescale);
        else
          memcpy(in, (const char *)r->sendbuf + at[j] * esize, cnt * esize);
        at[j] += cnt;
        in += cnt * esize;
      }
  }
  double t1 = rondo__now();
  if (st == RONDO_SUCCESS)
    st = algo_reduce_scatter_run(e->exec, src, dst, counts, dtype,
                                 op == RONDO_AVG ? RONDO_SUM : op, (rondo_algo_t)s->algo, NULL);
  if (st == RONDO_SUCCESS && op == RONDO_AVG && mine > 0)
    reduce_average(dst, mine, dtype, p);
  if (st == RONDO_SUCCESS && s->postscale != 1.0 && mine > 0)
    reduce_scale(dst, dst, mine, dtype, s->postscale);
  double t2 = rondo__now();
  if (nb > 1 && st == RONDO_SUCCESS) {
    const char *out = dst;
    for (size_t j = 0; j < nb; j++) {
      const struct rondo_request *r = b[j].req;
      size_t cnt = share_rows(&b[j].resp->sig, p, e->rank) * b[j].resp->sig.count;
      if (cnt > 0 && !r->stand_in)
        memcpy(r->recvbuf, out, cnt * esize);
      out += cnt * esize;
    }
  }
  double t3 = rondo__now();
  if (eng_tl_on(e->trace)) {
    char args[96];
    snprintf(args, sizeof args, "{\"fused\":%zu,\"bytes\":%zu}", nb, total * esize);
    batch_spans(e, b, nb, "REDUCESCATTER", nb > 1 || s->prescale != 1.0, t0, t1, t2, t3, args);
  }
  complete_batch(e, b, nb, st);
}

void eng_reduce_scatter_run(eng_run_t *e, eng_item_t *it, size_t n)
{
  for (size_t i = 0; i < n; i++)
    it[i].elems = (size_t)(it[i].resp->sig.rows * it[i].resp->sig.count);
  eng_fuse(e, it, n, rs_batch, NULL);
}

/* ---- allgather ------------------------------------------------------------------------ */

typedef struct {
  const uint64_t *table; /* [size][k]: rank q's rows of the cycle's k allgathers whose
                            rows differ (their col), or NULL */
  size_t k;
  int plan;              /* the first pass: only measure the fusion buffer (need) */
  size_t need;
  /* A lone allgather into the caller's buffer, the rows equal everywhere:
   * its argument check (the rows it holds, the overlap) rides in the
   * allgather's own instead of a round of its own. local: this rank's
   * verdict. */
  int folded;
  rondo_status_t local;
} ag_cycle_t;

/* Whether the engine allocated item it's result (rondo_allgather_async),
 * not the caller (rondo_allgather_into_async). */
static int allocated(const eng_item_t *it) { return it->req->recvbuf == NULL; }

/* Rank q's rows of an allgather. */
static uint64_t rows_of(const eng_item_t *it, const ag_cycle_t *c, int q)
{
  return it->col == SIZE_MAX ? it->resp->sig.rows : c->table[(size_t)q * c->k + it->col];
}

/* One batch of allgathers (same dtype; their results allocated). */
static void ag_batch(eng_run_t *e, eng_item_t *b, size_t nb, void *ctx)
{
  ag_cycle_t *c = ctx;
  size_t esize = rondo_dtype_size((rondo_dtype_t)b[0].resp->sig.dtype), total = 0;
  int p = e->size, exchanged = 0;
  size_t *counts = e->buf->sizes, *at = e->buf->counts;
  for (int q = 0; q < p; q++) {
    counts[q] = 0;
    for (size_t j = 0; j < nb; j++)
      counts[q] += (size_t)rows_of(&b[j], c, q) * b[j].resp->sig.count;
    total += counts[q];
  }
  size_t most = 0;
  for (int q = 0; q < p; q++)
    most = counts[q] > most ? counts[q] : most;
  if (c->plan) { /* the gathered blocks, then a rank's own: the largest
                    one's, so that every rank plans (and agrees on) the
                    same size */
    if (nb > 1 && (total + most) * esize + 1 > c->need)
      c->need = (total + most) * esize + 1;
    return;
  }
  for (size_t j = 0; j < nb; j++)
    exchanged |= b[j].col != SIZE_MAX;
  double t0 = rondo__now();
  const void *src = b[0].req->sendbuf; /* a stand-in's: NULL, and no rows */
  void *dst = b[0].out;
  if (nb > 1) { /* the fusion buffer holds it (the cycle's agreement) */
    char *f = e->buf->fusion, *in = f + total * esize;
    dst = f;
    src = in;
    for (size_t j = 0; j < nb; j++) {
      size_t cnt = (size_t)rows_of(&b[j], c, e->rank) * b[j].resp->sig.count;
      if (cnt > 0 && !b[j].req->stand_in)
        memcpy(in, b[j].req->sendbuf, cnt * esize);
      in += cnt * esize;
    }
  }
  double t1 = rondo__now();
  rondo_status_t st;
  if (c->folded) { /* one batch of one; every rank's block the same size */
    agree_sig_t sig = {.coll = AGREE_ALLGATHER};
    agree_sig_add(&sig, "bytes per rank", (int64_t)(counts[0] * esize));
    st = algo_allgather_checked(e->exec, c->local, &sig, src, dst, counts[0] * esize,
                                RONDO_ALGO_AUTO);
  } else {
    st = algo_allgatherv(e->exec, src, dst, counts, NULL, esize);
  }
  double t2 = rondo__now();
  if (nb > 1 && st == RONDO_SUCCESS) {
    const char *from = dst;
    for (size_t j = 0; j < nb; j++)
      at[j] = 0; /* elements of result j filled so far */
    for (int q = 0; q < p; q++)
      for (size_t j = 0; j < nb; j++) {
        size_t cnt = (size_t)rows_of(&b[j], c, q) * b[j].resp->sig.count;
        if (cnt > 0 && !b[j].req->stand_in)
          memcpy((char *)b[j].out + at[j] * esize, from, cnt * esize);
        at[j] += cnt;
        from += cnt * esize;
      }
  }
  double t3 = rondo__now();
  if (eng_tl_on(e->trace)) {
    char args[128];
    snprintf(args, sizeof args, "{\"fused\":%zu,\"bytes\":%zu,\"counts\":\"%s\"}", nb,
             total * esize, exchanged ? "exchanged" : "negotiated");
    batch_spans(e, b, nb, "ALLGATHER", nb > 1, t0, t1, t2, t3, args);
  }
  for (size_t j = 0; j < nb; j++) {
    struct rondo_request *r = b[j].req;
    if (st == RONDO_SUCCESS && !r->stand_in && allocated(&b[j])) {
      r->result = b[j].out;
      r->result_count = b[j].elems;
    } else if (allocated(&b[j])) {
      free(b[j].out);
    }
    b[j].out = NULL;
  }
  complete_batch(e, b, nb, st);
}

/* Fails every allgather of the cycle (before any data moved). */
static void ag_fail_all(eng_run_t *e, eng_item_t *it, size_t n, rondo_status_t st)
{
  for (size_t i = 0; i < n; i++) {
    if (allocated(&it[i]))
      free(it[i].out);
    it[i].out = NULL;
  }
  complete_batch(e, it, n, st);
}

void eng_allgather_run(eng_run_t *e, eng_item_t *it, size_t n)
{
  int p = e->size;
  ag_cycle_t c = {NULL, 0, 1, 0, 0, RONDO_SUCCESS};
  for (size_t i = 0; i < n; i++) {
    it[i].out = NULL;
    it[i].col = it[i].resp->sig.rows == ENG_ROWS_DIFFER ? c.k++ : SIZE_MAX;
  }
  rondo_status_t st = RONDO_SUCCESS;
  if (c.k > 0) {
    /* One exchange of every rank's rows of the allgathers that need it. */
    st = eng_rows_reserve(e->buf, e->exec->mpi, c.k * (size_t)p);
    if (st == RONDO_SUCCESS) {
      uint64_t *table = e->buf->rows, *mine = table + (size_t)e->rank * c.k;
      for (size_t i = 0; i < n; i++)
        if (it[i].col != SIZE_MAX)
          mine[it[i].col] = it[i].req->stand_in ? 0 : it[i].req->rows;
      MPI_Request req;
      int rc = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, table, (int)c.k, MPI_UINT64_T,
                              e->exec->mpi, &req);
      st = rc != MPI_SUCCESS ? rondo__mpi_fail(rc, "MPI_Iallgather", __FILE__, __LINE__)
                             : eng_wait(e->nap, &req);
      c.table = table;
    }
  }
  if (st != RONDO_SUCCESS) {
    ag_fail_all(e, it, n, st);
    return;
  }
  /* The results, and the fusion buffer of the largest batch of several:
   * one agreement for the cycle. */
  for (size_t i = 0; i < n; i++) {
    size_t elems = 0;
    for (int q = 0; q < p; q++)
      elems += (size_t)rows_of(&it[i], &c, q) * it[i].resp->sig.count;
    it[i].elems = elems;
  }
  for (size_t i = 0; i < n && st == RONDO_SUCCESS; i++) {
    size_t esize = rondo_dtype_size((rondo_dtype_t)it[i].resp->sig.dtype);
    size_t bytes = it[i].elems * esize;
    const struct rondo_request *r = it[i].req;
    if (!allocated(&it[i])) { /* the caller's buffer: the rows must fill it */
      size_t own = 0;
      for (int q = 0; q < e->rank; q++)
        own += (size_t)rows_of(&it[i], &c, q) * it[i].resp->sig.count * esize;
      const char *in = r->sendbuf, *out = r->recvbuf;
      size_t mine = (size_t)r->rows * it[i].resp->sig.count * esize;
      if (it[i].elems != r->recv_rows * it[i].resp->sig.count)
        st = rondo__fail(RONDO_ERR_INVALID_ARG,
                         "'%s': rondo_allgather_into_async: the ranks' rows add up to %zu, "
                         "recv_rows is %llu",
                         r->name, it[i].elems / it[i].resp->sig.count,
                         (unsigned long long)r->recv_rows);
      else if (mine > 0 && in < out + bytes && out < in + mine && in != out + own)
        st = rondo__fail(RONDO_ERR_INVALID_ARG,
                         "'%s': rondo_allgather_into_async: sendbuf overlaps recvbuf, but "
                         "not at this rank's rows (byte %zu of recvbuf)",
                         r->name, own);
      else
        it[i].out = r->recvbuf;
    } else if ((it[i].out = malloc(bytes + 1)) == NULL) {
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': allgather result of %zu elements",
                       r->name, it[i].elems);
    }
  }
  eng_fuse(e, it, n, ag_batch, &c); /* plan: c.need */
  if (st == RONDO_SUCCESS && c.need > 0)
    st = eng_fusion_hold(e->buf, c.need);
  if (n == 1 && c.k == 0 && !allocated(&it[0]) && !it[0].req->stand_in) {
    c.folded = 1; /* nothing to allocate: the check alone is left (ag_cycle_t) */
    c.local = st;
  } else {
    st = rondo__agree_ready(e->exec->mpi, st, "its allgather results (memory, or the rows)");
    if (st != RONDO_SUCCESS) {
      ag_fail_all(e, it, n, st);
      return;
    }
  }
  eng_fusion_agreed(e->buf, c.need);
  c.plan = 0;
  eng_fuse(e, it, n, ag_batch, &c);
}

void eng_run_alltoall(eng_run_t *e, eng_item_t *it)
{
  struct rondo_request *r = it->req;
  const eng_sig_t *s = &it->resp->sig;
  size_t row = s->count * rondo_dtype_size((rondo_dtype_t)s->dtype), total = 0;
  int p = e->size;
  double t0 = rondo__now();
  uint64_t *rows = e->buf->rows;   /* [0, p): to each rank; [p, 2p): from each */
  size_t *bytes = e->buf->sizes;
  void *out = NULL;
  for (int q = 0; q < p; q++)
    rows[q] = r->sendcounts[q];
  MPI_Request req;
  int rc = MPI_Ialltoall(rows, 1, MPI_UINT64_T, rows + p, 1, MPI_UINT64_T, e->exec->mpi, &req);
  rondo_status_t st = rc != MPI_SUCCESS ? rondo__mpi_fail(rc, "MPI_Ialltoall", __FILE__, __LINE__)
                                        : eng_wait(e->nap, &req);
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
