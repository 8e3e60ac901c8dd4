/*
 * Running what a cycle made ready (execute.h). Every rank holds the same
 * response list, so every rank runs the same collectives in the same order:
 *   - errors complete their requests (a rank that does not have the name
 *     has nothing to fail);
 *   - the fused kinds run first, each with all its items, in kind order:
 *     all-reduces (fusion.c), allgathers and reduce-scatters
 *     (collectives.c);
 *   - broadcasts and all-to-alls run one by one, in response order
 *     (collectives.c).
 * A rank that has joined has no request for a name: it gets a stand-in
 * that contributes the op's identity (all-reduce), no rows (allgather), or
 * receives into scratch (broadcast), and discards the result.
 * Reduce-scatters and all-to-alls never meet a joined rank: the
 * negotiation fails them (RONDO_ASYNC_NO_JOIN).
 */
#include "engine/execute.h"

#include "base/comm.h"
#include "engine/collectives.h"
#include "engine/fusion.h"
#include "engine/groups.h"
#include "engine/inflight.h"
#include "engine/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How each kind runs: a fused kind gets all its items at once (run_all),
 * the others one item at a time, in response order (run_one). A refusal
 * is never ready (it fails on every rank), so it has no runner. */
static const struct {
  void (*run_all)(eng_run_t *e, eng_item_t *items, size_t n);
  void (*run_one)(eng_run_t *e, eng_item_t *it);
} runners[ENG_KINDS] = {
    [ENG_ALLREDUCE] = {eng_fusion_run, NULL},
    [ENG_BROADCAST] = {NULL, eng_run_broadcast},
    [ENG_ALLGATHER] = {eng_allgather_run, NULL},
    [ENG_REDUCE_SCATTER] = {eng_reduce_scatter_run, NULL},
    [ENG_ALLTOALL] = {NULL, eng_run_alltoall},
    [ENG_REFUSED] = {NULL, NULL},
};

/* A stand-in for resp on a joined rank, with scratch for its data. */
static struct rondo_request *stand_in(eng_run_t *e, const eng_resp_t *resp)
{
  if (!e->join->joined)
    LOG_ERROR("engine: '%s' is ready but this rank has no such request; taking part with "
              "the identity to keep the ranks in step (please report this)",
              resp->name);
  size_t bytes = resp->sig.count * rondo_dtype_size((rondo_dtype_t)resp->sig.dtype);
  if (eng_scratch_reserve(e->buf, bytes + 1) != RONDO_SUCCESS)
    return NULL;
  struct rondo_request *r = calloc(1, sizeof *r);
  if (r == NULL || (r->name = strdup(resp->name)) == NULL) {
    free(r);
    return NULL;
  }
  r->eng = e->eng;
  r->stand_in = 1;
  r->pidx = -1;
  r->sig = resp->sig;
  return r;
}

/* Every rank fails the cycle's ready requests (some rank lacked memory). */
static void fail_ready(eng_run_t *e, const eng_cycle_t *c)
{
  struct rondo_request **found = e->buf->found;
  for (size_t i = 0; i < c->nresp; i++) {
    struct rondo_request *r = found != NULL ? found[i] : NULL;
    if (c->resp[i].type != RESP_OK || r == NULL)
      continue;
    if (r->stand_in) {
      eng_request_free(r);
      found[i] = NULL;
      continue;
    }
    char msg[512];
    snprintf(msg, sizeof msg,
             "'%s' did not run: a rank could not get the memory to run this cycle (%s)", r->name,
             rondo_last_error());
    eng_group_failed(e->failed, r, RONDO_ERR_NO_MEMORY, msg);
    eng_complete(e->flight, r, RONDO_ERR_NO_MEMORY, msg);
    found[i] = NULL;
  }
}

rondo_status_t eng_execute_prepare(eng_run_t *e, const eng_cycle_t *c)
{
  rondo_status_t st = eng_buffers_reserve(e->buf, c->nresp);
  if (st == RONDO_SUCCESS)
    eng_find_pending(e->flight, c, e->buf->found);
  int ready = 0;
  for (size_t i = 0; i < c->nresp && st == RONDO_SUCCESS; i++) {
    if (c->resp[i].type != RESP_OK)
      continue;
    ready = 1;
    if (e->buf->found[i] == NULL && (e->buf->found[i] = stand_in(e, &c->resp[i])) == NULL)
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: a stand-in for '%s'", c->resp[i].name);
  }
  /* The fast path needs no agreement: its items fit in the room reserved
   * with the pending list, and a fast path has no stand-ins. */
  if (c->slow_path && ready)
    st = rondo__agree_ready(e->mpi, st, "memory to run this cycle");
  if (st != RONDO_SUCCESS)
    fail_ready(e, c);
  return st;
}

void eng_execute(eng_run_t *e, const eng_cycle_t *c)
{
  if (c->nresp == 0)
    return;
  double ready = rondo__now();
  eng_item_t *it = e->buf->items, *kind = e->buf->kind_items;
  struct rondo_request **found = e->buf->found;
  size_t n = 0;
  for (size_t i = 0; i < c->nresp; i++) {
    const eng_resp_t *resp = &c->resp[i];
    struct rondo_request *r = found[i];
    if (resp->type == RESP_ERROR) {
      if (r != NULL)
        eng_group_failed(e->failed, r, resp->status, resp->message);
      /* a refusing rank gets its own reason, the others the response's */
      if (r != NULL && r->sig.kind == ENG_REFUSED)
        eng_complete(e->flight, r, RONDO_ERR_INVALID_ARG, r->reason);
      else if (r != NULL)
        eng_complete(e->flight, r, resp->status, resp->message);
      continue;
    }
    if (r == NULL)
      continue; /* failed with the cycle (eng_execute_prepare) */
    if (!r->stand_in) {
      eng_tl_span(e->trace, r->name, "QUEUE_WAIT", r->t_submit, r->t_taken, NULL);
      eng_tl_span(e->trace, r->name, "NEGOTIATE", r->t_taken, ready, NULL);
    }
    it[n++] = (eng_item_t){.req = r, .resp = resp};
  }
  /* Fused kinds first, each with all its items; then the others, one by
   * one, in response order. */
  for (int k = 0; k < ENG_KINDS; k++) {
    if (runners[k].run_all == NULL)
      continue;
    size_t nk = 0;
    for (size_t i = 0; i < n; i++)
      if (it[i].resp->sig.kind == k)
        kind[nk++] = it[i];
    if (nk > 0)
      runners[k].run_all(e, kind, nk);
  }
  for (size_t i = 0; i < n; i++) {
    int k = it[i].resp->sig.kind;
    if (k >= 0 && k < ENG_KINDS && runners[k].run_one != NULL)
      runners[k].run_one(e, &it[i]);
  }
}
