/*
 * One negotiation cycle (negotiate.h): which names every rank has
 * submitted, in one order that is the same on every rank.
 *
 * Every cycle starts with one bitwise-AND all-reduce of a few words: a flag
 * word (nothing pending, all requests cached, joined, stopping, each coded
 * so that AND gives "on every rank") and one bit per response-cache entry,
 * set by a rank that has that name pending with the cached signature
 * (cache.c). If every rank's pending requests are all cached, the set bits
 * are the ready names, in cache order: that is the whole negotiation
 * (the fast path).
 *
 * Otherwise (a new name, a changed signature, or a stall check) the slow
 * path runs: every rank sends its records (name, signature, age: wire.c)
 * to rank 0, whose coordinator (coordinator.c) decides the responses, which
 * rank 0 broadcasts; names stalled past RONDO_STALL_WARN_SEC are logged by
 * rank 0 with the ranks that are missing (stall.h says when).
 *
 * A small all-reduce rides along (the inline part of the packet): when
 * every rank has exactly one request pending, the same cached all-reduce of
 * at most inline_bytes, each puts its data into the packet, the reduction
 * combines them as it combines the bits, and the request is done when the
 * negotiation is: one all-reduce per blocking call instead of two.
 */
#include "engine/negotiate.h"

#include "comm/comm.h"
#include "engine/coordinator.h"
#include "engine/fusion.h"
#include "engine/request.h"
#include "engine/inflight.h"
#include "engine/nap.h"
#include "engine/wire.h"
#include "reduce/reduce.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  F_NO_PENDING = 1,   /* AND: nobody has requests in flight */
  F_ALL_CACHED = 2,   /* AND: the fast path suffices */
  F_JOINED = 4,       /* AND: everybody joined */
  F_STOPPING = 8,     /* AND: everybody is shutting down */
  F_NONE_JOINED = 16, /* AND: nobody has joined */
  /* bits 8..63, AND: rank i < ENG_STOP_RANKS is not shutting down (bit
   * 8 + i); the last bit stands for every later rank */
  F_RANK_SHIFT = 8,
};
_Static_assert(F_RANK_SHIFT + ENG_STOP_RANKS == 63, "one flag word holds the stopping bits");

int eng_bit_words(int cache_capacity) { return 1 + (cache_capacity + 63) / 64; }

/* ---- the slow path ------------------------------------------------------------------ */

/* This rank's records (its pending requests) into mine, encoded. */
static rondo_status_t my_records(eng_negotiator_t *ng, eng_buf_t *mine)
{
  size_t npending = eng_pending_count(ng->run->flight);
  eng_record_t *recs = calloc(npending ? npending : 1, sizeof *recs);
  if (recs == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: negotiation message");
  uint32_t n = 0;
  double now = rondo__now();
  for (size_t i = 0; i < npending; i++) {
    struct rondo_request *r = eng_pending_at(ng->run->flight, i);
    if (r == NULL)
      continue;
    /* held back with an incomplete group: how many of the group are here */
    uint32_t held = 0;
    for (size_t j = 0; !r->announced && j < npending; j++) {
      struct rondo_request *q = eng_pending_at(ng->run->flight, j);
      held += q != NULL && q->group != NULL && strcmp(q->group, r->group) == 0;
    }
    recs[n++] = (eng_record_t){r->name, r->sig, now - r->t_submit,
                               r->sig.kind == ENG_REFUSED ? r->reason : r->tag, r->group, held};
  }
  rondo_status_t st = eng_wire_put_records(mine, recs, n);
  free(recs); /* (the strings are the requests') */
  return st;
}

/* Rank 0: decodes every rank's records (all: their bytes, at displs) and
 * lets the coordinator decide. */
static rondo_status_t decide(eng_negotiator_t *ng, const char *all, const int *bytes,
                             const int *displs, const int *joined, const int *stopping,
                             eng_cycle_t *out)
{
  int size = ng->run->size;
  eng_record_t **recs = calloc((size_t)size, sizeof *recs);
  uint32_t *n = calloc((size_t)size, sizeof *n);
  rondo_status_t st = recs != NULL && n != NULL
                          ? RONDO_SUCCESS
                          : rondo__fail(RONDO_ERR_NO_MEMORY, "engine: coordinator tables");
  for (int r = 0; r < size && st == RONDO_SUCCESS; r++) {
    st = eng_wire_get_records(all + displs[r], (size_t)bytes[r], &recs[r], &n[r]);
    if (st == RONDO_ERR_INTERNAL)
      st = rondo__fail(RONDO_ERR_INTERNAL, "engine: malformed negotiation message from rank %d", r);
  }
  if (st == RONDO_SUCCESS) {
    eng_stall_limits_t lim = eng_stall_limits(ng->run->owner);
    eng_coord_in_t in = {size, (const eng_record_t *const *)recs, n, joined, stopping,
                         lim.warn, lim.abort};
    eng_stalls_t stalls;
    st = eng_coordinate(&in, ng->cache, out, &stalls);
    /* every stalled name waited past lim.warn; one warning per lim.warn */
    if (st == RONDO_SUCCESS && stalls.stalled > 0 &&
        eng_stall_warn_due(ng->stall, lim, rondo__now(), lim.warn))
      LOG_WARN("stall: %d request(s) waited more than %.0f s for other ranks: %s%s. "
               "Every rank must submit the same names; set RONDO_STALL_ABORT_SEC to fail "
               "them instead of waiting",
               stalls.stalled, lim.warn, stalls.line, stalls.stalled > 5 ? ", ..." : "");
  }
  for (int r = 0; recs != NULL && r < size; r++)
    eng_records_free(recs[r], n[r]);
  free(recs);
  free(n);
  return st;
}

/* Every rank's records go to rank 0, which decides the responses and
 * serializes them into *resp. *decided: rank 0's outcome (its own failures
 * reach the others through the response size). A returned failure is
 * MPI's: this engine cannot go on. */
static rondo_status_t gather_decide(eng_negotiator_t *ng, int joined, int stopping,
                                    eng_cycle_t *out, eng_buf_t *resp, rondo_status_t *decided)
{
  eng_buf_t mine = {0};
  rondo_status_t st = my_records(ng, &mine), mst = RONDO_SUCCESS;
  int head[3] = {(int)mine.len, joined, stopping}, *heads = NULL, *bytes = NULL,
      *displs = NULL, *joins = NULL, *stops = NULL;
  char *all = NULL;
  if (ng->run->rank == 0) {
    heads = malloc(3 * (size_t)ng->run->size * sizeof *heads);
    bytes = malloc((size_t)ng->run->size * sizeof *bytes);
    displs = malloc((size_t)ng->run->size * sizeof *displs);
    joins = malloc((size_t)ng->run->size * sizeof *joins);
    stops = malloc((size_t)ng->run->size * sizeof *stops);
    if (st == RONDO_SUCCESS && (!heads || !bytes || !displs || !joins || !stops))
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: negotiation");
  }
  /* The gathers run whatever happened on rank 0, so no rank hangs. */
  MPI_Request req;
  MPI_CHECK_GOTO(MPI_Igather(head, 3, MPI_INT, heads, 3, MPI_INT, 0, ng->run->mpi, &req), mst, out);
  RONDO_CHECK_GOTO(eng_wait(ng->run->nap, &req), mst, out);
  size_t total = 0;
  if (ng->run->rank == 0 && st == RONDO_SUCCESS) {
    for (int r = 0; r < ng->run->size; r++) {
      bytes[r] = heads[3 * r];
      joins[r] = heads[3 * r + 1];
      stops[r] = heads[3 * r + 2];
      displs[r] = (int)total;
      total += (size_t)bytes[r];
    }
    if ((all = malloc(total ? total : 1)) == NULL)
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: negotiation");
  }
  MPI_CHECK_GOTO(MPI_Igatherv(mine.p, (int)mine.len, MPI_BYTE, all, bytes, displs, MPI_BYTE, 0,
                              ng->run->mpi, &req),
                 mst, out);
  RONDO_CHECK_GOTO(eng_wait(ng->run->nap, &req), mst, out);
  if (ng->run->rank == 0) {
    if (st == RONDO_SUCCESS)
      st = decide(ng, all, bytes, displs, joins, stops, out);
    if (st == RONDO_SUCCESS)
      st = eng_wire_put_responses(resp, out);
    eng_cycle_free(out);
  }
out:
  *decided = st;
  free(mine.p);
  free(heads);
  free(bytes);
  free(displs);
  free(joins);
  free(stops);
  free(all);
  return mst;
}

static rondo_status_t slow_path(eng_negotiator_t *ng, int joined, int stopping, eng_cycle_t *out)
{
  eng_buf_t resp = {0};
  rondo_status_t decided;
  rondo_status_t st = gather_decide(ng, joined, stopping, out, &resp, &decided);
  /* UINT64_MAX: rank 0 failed to decide */
  uint64_t resp_len = decided == RONDO_SUCCESS ? resp.len : UINT64_MAX;
  MPI_Request req;
  if (st == RONDO_SUCCESS)
    MPI_CHECK_GOTO(MPI_Ibcast(&resp_len, 1, MPI_UINT64_T, 0, ng->run->mpi, &req), st, out);
  if (st == RONDO_SUCCESS)
    RONDO_CHECK_GOTO(eng_wait(ng->run->nap, &req), st, out);
  if (st != RONDO_SUCCESS)
    goto out;
  if (resp_len == UINT64_MAX) {
    st = ng->run->rank == 0 ? decided
                            : rondo__fail(RONDO_ERR_PEER, "engine: rank 0 failed to negotiate");
    goto out;
  }
  if (ng->run->rank != 0 && (resp.p = malloc(resp_len ? resp_len : 1)) == NULL) {
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: responses"); /* cannot recover */
    goto out;
  }
  MPI_CHECK_GOTO(MPI_Ibcast(resp.p, (int)resp_len, MPI_BYTE, 0, ng->run->mpi, &req), st, out);
  RONDO_CHECK_GOTO(eng_wait(ng->run->nap, &req), st, out);
  st = eng_wire_get_responses(resp.p, resp_len, out);
  /* Every rank (rank 0 again: idempotent) applies the cache entries. */
  for (size_t i = 0; i < out->nresp && st == RONDO_SUCCESS; i++)
    if (out->resp[i].type == RESP_OK && out->resp[i].cache_id >= 0)
      st = eng_cache_set(ng->cache, out->resp[i].cache_id, out->resp[i].name,
                         &out->resp[i].sig);
out:
  free(resp.p);
  return st;
}

/* Whether r's data can ride in the negotiation (its cache entry: id): a
 * small host all-reduce without scaling, for which no algorithm was forced
 * (opts.algo or RONDO_ALLREDUCE_ALGO: rondo-train forces one for
 * bit-reproducible runs, and benchmarks force the one they measure). */
static int fits_inline(const eng_negotiator_t *ng, const struct rondo_request *r, int id)
{
  const eng_sig_t *s = &r->sig;
  return id >= 0 && s->kind == ENG_ALLREDUCE && r->device < 0 && s->count > 0 &&
         ng->run->exec->forced_algo == RONDO_ALGO_AUTO &&
         s->count * rondo_dtype_size((rondo_dtype_t)s->dtype) <= ng->packet->inline_bytes &&
         s->prescale == 1.0 && s->postscale == 1.0 && s->op != RONDO_ADASUM &&
         s->algo == RONDO_ALGO_AUTO && !r->stand_in;
}

/* r rode along and is done: its result from the reduced packet. */
static void finish_inline(eng_negotiator_t *ng, struct rondo_request *r, const unsigned char *data,
                          double ready)
{
  const eng_sig_t *s = &r->sig;
  size_t bytes = s->count * rondo_dtype_size((rondo_dtype_t)s->dtype);
  memcpy(r->recvbuf, data, bytes);
  if (s->op == RONDO_AVG)
    reduce_average(r->recvbuf, s->count, (rondo_dtype_t)s->dtype, ng->run->size);
  if (eng_tl_on(ng->run->trace)) {
    char args[96];
    snprintf(args, sizeof args, "{\"algorithm\":\"inline\",\"fused\":1,\"bytes\":%zu}", bytes);
    eng_tl_span(ng->run->trace, r->name, "QUEUE_WAIT", r->t_submit, r->t_taken, NULL);
    eng_tl_span(ng->run->trace, r->name, "ALLREDUCE", r->t_taken, ready, args);
  }
  eng_complete(ng->run->flight, r, RONDO_SUCCESS, NULL);
}

rondo_status_t eng_negotiate(eng_negotiator_t *ng, int stopping, eng_cycle_t *out)
{
  memset(out, 0, sizeof *out);
  int words = eng_bit_words(ng->cache->capacity);
  unsigned char *mine_p = ng->packet->bufs, *all_p = ng->packet->bufs + ng->packet->bytes;
  eng_inline_t *mine_h = (eng_inline_t *)mine_p;
  mine_h->head = 0;
  mine_h->first = ng->run->rank;
  mine_h->cap = ng->packet->inline_bytes;
  mine_h->words = (uint64_t)words;
  uint64_t *mine = eng_packet_words(mine_p);
  uint64_t *all = (uint64_t *)(all_p + ((unsigned char *)mine - mine_p)); /* the same layout */
  memset(mine, 0, (size_t)words * sizeof *mine);
  struct rondo_request *lone = NULL; /* the one announced request, if it is alone */
  int announced = 0, lone_id = -1;
  int pending = 0, cached = 1;
  double now = rondo__now(), oldest = 0, held = 0;
  for (size_t i = 0; i < eng_pending_count(ng->run->flight); i++) {
    struct rondo_request *r = eng_pending_at(ng->run->flight, i);
    if (r == NULL)
      continue;
    pending = 1;
    if (now - r->t_submit > oldest)
      oldest = now - r->t_submit;
    if (!r->announced) {
      if (now - r->t_submit > held)
        held = now - r->t_submit;
      continue;
    }
    int id = eng_cache_find(ng->cache, r->name, &r->sig);
    if (announced++ == 0) {
      lone = r;
      lone_id = id;
    }
    if (id < 0) {
      cached = 0;
    } else {
      mine[1 + id / 64] |= 1ull << (id % 64);
      ng->packet->by_id[id] = r;
    }
  }
  /* While a rank has joined, rank 0 decides every cycle (the slow path): it
   * knows who joined, so a joined broadcast root is an error, not a stall. */
  if (ng->run->join->joined || stopping)
    cached = 0; /* a stopping rank: rank 0 must see it to fail what it lacks */
  if (eng_stall_force_slow_path(ng->stall, eng_stall_limits(ng->run->owner), rondo__now(), pending,
                                oldest, held))
    cached = 0;
  mine[0] = (pending ? 0 : F_NO_PENDING) | (cached ? F_ALL_CACHED : 0) |
            (ng->run->join->joined ? F_JOINED : F_NONE_JOINED) | (stopping ? F_STOPPING : 0);
  int bit = ng->run->rank < ENG_STOP_RANKS ? ng->run->rank : ENG_STOP_RANKS;
  mine[0] |= ~0ull << F_RANK_SHIFT;
  if (stopping)
    mine[0] &= ~(1ull << (F_RANK_SHIFT + bit));
  if (announced != 1 || !cached || !fits_inline(ng, lone, lone_id))
    lone = NULL;
  if (lone != NULL) {
    mine_h->head = eng_inline_head(lone_id, &lone->sig);
    memcpy(mine_h->data, lone->sendbuf,
           lone->sig.count * rondo_dtype_size((rondo_dtype_t)lone->sig.dtype));
  }
  MPI_Request req;
  MPI_Op op;
  RONDO_CHECK(eng_packet_op(&op));
  rondo_status_t st = RONDO_SUCCESS;
  int rc = MPI_Iallreduce(mine_p, all_p, 1, ng->packet->type, op, ng->run->mpi, &req);
  if (rc != MPI_SUCCESS)
    st = rondo__mpi_fail(rc, "MPI_Iallreduce", __FILE__, __LINE__);
  else
    st = eng_wait(ng->run->nap, &req);
  if (st == RONDO_SUCCESS) {
    out->anyone_pending = !(all[0] & F_NO_PENDING);
    out->all_joined = (all[0] & F_JOINED) != 0;
    out->anyone_joined = !(all[0] & F_NONE_JOINED);
    out->all_stopping = (all[0] & F_STOPPING) != 0;
    out->stopping = ~all[0] >> F_RANK_SHIFT;
    if (out->all_stopping || out->all_joined || !out->anyone_pending) {
      /* nothing to run */
    } else if (all[0] & F_ALL_CACHED) {
      /* Names and requests come straight from the cache and this cycle's
       * bits: no copies, no lookups by name. The cache does not change
       * before the next cycle, which is after these responses are freed. */
      /* Every rank carried the same lone request's data (so every rank had
       * it pending, cached): it is done already. */
      int rode = lone != NULL && ((const eng_inline_t *)all_p)->head == mine_h->head ? lone_id : -1;
      double ready = rondo__now();
      for (int w = 1; w < words && st == RONDO_SUCCESS; w++)
        for (uint64_t b = all[w]; b != 0 && st == RONDO_SUCCESS; b &= b - 1) {
          int id = (w - 1) * 64 + __builtin_ctzll(b);
          if (id == rode) {
            eng_cache_touch(ng->cache, id);
            finish_inline(ng, lone, ((const eng_inline_t *)all_p)->data, ready);
            out->inline_done++;
            continue;
          }
          eng_resp_t *r = eng_resp_new(out);
          if (r == NULL) {
            st = RONDO_ERR_NO_MEMORY;
            break;
          }
          eng_cache_touch(ng->cache, id);
          r->type = RESP_OK;
          r->cache_id = id;
          r->sig = *eng_cache_sig(ng->cache, id);
          r->name = (char *)eng_cache_name(ng->cache, id);
          r->name_borrowed = 1;
          r->req = ng->packet->by_id[id]; /* set this cycle: the AND has this rank's bit */
          out->nresp++;
        }
    } else {
      eng_cycle_t flags = *out;
      st = slow_path(ng, ng->run->join->joined, stopping, out);
      /* rank 0's decision freed its copy of the cycle (flags included) */
      out->anyone_pending = flags.anyone_pending;
      out->anyone_joined = flags.anyone_joined;
      out->stopping = flags.stopping;
      out->slow_path = 1;
    }
  }
  return st;
}
