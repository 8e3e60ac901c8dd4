/*
 * The coordinator (coordinator.h): rank 0 gathers every rank's records on a
 * slow-path cycle and decides, name by name:
 *   - a name every rank that has not joined submitted runs, if the ranks
 *     agree on it (agreed: no refusal, the same signature but for an
 *     allgather's rows, nothing a joined rank cannot serve), and gets a
 *     cache entry; an allgather's response carries every rank's rows when
 *     they are equal (common_rows);
 *   - a name a rank refused or that differs across ranks fails on every
 *     rank, naming the ranks and the first field that differs;
 *   - a name some ranks lack waits, unless a lacking rank shuts down or the
 *     name waited past the comm's timeout; past RONDO_STALL_WARN_SEC it is
 *     reported (eng_stalls_t);
 *   - a group fails whole.
 */
#include "engine/coordinator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *name;
  eng_sig_t *sig;     /* [size]; valid where have[r] or held[r] */
  const char **text;  /* [size]: each rank's tag, or a refusal's reason (NULL: none) */
  const char **group; /* [size]: each rank's group name (NULL: none) */
  char *have;         /* [size]: rank r submitted it and announced it */
  uint32_t *held;     /* [size]: rank r holds it back with its incomplete group,
                         of which it has held[r] requests; 0: not held */
  double age;         /* the oldest submitter's wait */
  int decided;        /* a response was made for it this cycle */
} agg_t;

typedef struct {
  agg_t *a;
  size_t n, cap;
  long *index;        /* open addressing: name -> a[] index, -1 empty */
  size_t nindex;
  int size;           /* ranks */
} aggs_t;

static void aggs_free(aggs_t *g)
{
  for (size_t i = 0; i < g->n; i++) {
    free((void *)g->a[i].text);
    free((void *)g->a[i].group);
    free(g->a[i].name);
    free(g->a[i].sig);
    free(g->a[i].have);
    free(g->a[i].held);
  }
  free(g->a);
  free(g->index);
}

/* The aggregate for name, created if new; NULL when out of memory. */
static agg_t *aggs_get(aggs_t *g, const char *name, int size)
{
  size_t h = rondo__hash_str(name) % g->nindex;
  while (g->index[h] >= 0) {
    if (strcmp(g->a[g->index[h]].name, name) == 0)
      return &g->a[g->index[h]];
    h = (h + 1) % g->nindex;
  }
  if (g->n == g->cap)
    return NULL; /* sized by the caller to the record count */
  agg_t *a = &g->a[g->n];
  a->name = strdup(name);
  a->sig = calloc((size_t)size, sizeof *a->sig);
  a->text = calloc((size_t)size, sizeof *a->text);
  a->group = calloc((size_t)size, sizeof *a->group);
  a->have = calloc((size_t)size, 1);
  a->held = calloc((size_t)size, sizeof *a->held);
  a->age = 0;
  a->decided = 0;
  if (a->name == NULL || a->sig == NULL || a->text == NULL || a->group == NULL ||
      a->have == NULL || a->held == NULL) {
    free(a->name);
    free(a->sig);
    free((void *)a->text);
    free((void *)a->group);
    free(a->have);
    free(a->held);
    return NULL;
  }
  g->index[h] = (long)g->n++;
  return a;
}

/* "count: rank 0 has 10, rank 2 has 12" for the first field that differs. */
static void describe_mismatch(const agg_t *g, int ra, int rb, char *buf, size_t len)
{
  const eng_sig_t *a = &g->sig[ra], *b = &g->sig[rb];
  if (a->kind != b->kind)
    snprintf(buf, len, "collective: rank %d submitted %s, rank %d %s", ra,
             eng_kind_name(a->kind), rb, eng_kind_name(b->kind));
  else if (a->group != b->group)
    snprintf(buf, len, "group: rank %d has %s%s%s, rank %d has %s%s%s", ra,
             g->group[ra] ? "'" : "", g->group[ra] ? g->group[ra] : "none",
             g->group[ra] ? "'" : "", rb, g->group[rb] ? "'" : "",
             g->group[rb] ? g->group[rb] : "none", g->group[rb] ? "'" : "");
  else if (a->group_size != b->group_size)
    snprintf(buf, len, "group '%s' size: rank %d has %u, rank %d has %u",
             g->group[ra] ? g->group[ra] : "?", ra, a->group_size, rb, b->group_size);
  else if (a->tag != b->tag)
    snprintf(buf, len, "rank %d has %s, rank %d has %s", ra,
             g->text[ra] != NULL ? g->text[ra] : "no tag", rb,
             g->text[rb] != NULL ? g->text[rb] : "no tag");
  else if (a->dtype != b->dtype)
    snprintf(buf, len, "dtype: rank %d has %s, rank %d has %s", ra,
             rondo_dtype_name((rondo_dtype_t)a->dtype), rb, rondo_dtype_name((rondo_dtype_t)b->dtype));
  else if (a->count != b->count)
    snprintf(buf, len, "%s: rank %d has %llu, rank %d has %llu",
             a->kind == ENG_ALLREDUCE || a->kind == ENG_BROADCAST ? "count" : "elements per row",
             ra, (unsigned long long)a->count, rb, (unsigned long long)b->count);
  else if (a->rows != b->rows && a->kind != ENG_ALLGATHER) /* an allgather's may differ */
    snprintf(buf, len, "rows: rank %d has %llu, rank %d has %llu", ra,
             (unsigned long long)a->rows, rb, (unsigned long long)b->rows);
  else if (a->op != b->op)
    snprintf(buf, len, "op: rank %d has %s, rank %d has %s", ra, rondo_op_name((rondo_op_t)a->op),
             rb, rondo_op_name((rondo_op_t)b->op));
  else if (a->root != b->root)
    snprintf(buf, len, "root: rank %d has %d, rank %d has %d", ra, a->root, rb, b->root);
  else if (a->mem != b->mem)
    snprintf(buf, len, "memory: rank %d has %s buffers, rank %d %s buffers", ra,
             a->mem ? "device" : "host", rb, b->mem ? "device" : "host");
  else if (a->prescale != b->prescale)
    snprintf(buf, len, "prescale: rank %d has %g, rank %d has %g", ra, a->prescale, rb,
             b->prescale);
  else if (a->postscale != b->postscale)
    snprintf(buf, len, "postscale: rank %d has %g, rank %d has %g", ra, a->postscale, rb,
             b->postscale);
  else if (a->flags != b->flags)
    snprintf(buf, len, "flags: rank %d has %#x, rank %d has %#x", ra, a->flags, rb, b->flags);
  else
    snprintf(buf, len, "algorithm: rank %d has %s, rank %d has %s", ra,
             rondo_algo_name((rondo_algo_t)a->algo), rb, rondo_algo_name((rondo_algo_t)b->algo));
}

/* "1,3,4" (at most a few, then "... (N ranks)"). */
static void rank_list(const char *missing, int size, char *buf, size_t len)
{
  size_t used = 0;
  int shown = 0, total = 0;
  buf[0] = '\0';
  for (int r = 0; r < size; r++) {
    if (!missing[r])
      continue;
    total++;
    if (shown < 8 && used + 16 < len) {
      used += (size_t)snprintf(buf + used, len - used, "%s%d", shown ? "," : "", r);
      shown++;
    }
  }
  if (total > shown && used + 24 < len)
    snprintf(buf + used, len - used, ",... (%d ranks)", total);
}

/* Whether the signatures of the ranks that submitted a name (announced or
 * held back with their group) differ; if so, the message naming the first
 * difference. */
static int differs(const agg_t *a, int first, int size, char *msg, size_t len)
{
  char why[400] = "";
  for (int r = first + 1; r < size && !why[0]; r++)
    if ((a->have[r] || a->held[r]) && !eng_sig_match(&a->sig[first], &a->sig[r]))
      describe_mismatch(a, first, r, why, sizeof why);
  if (why[0])
    snprintf(msg, len, "'%s' differs across ranks: %s", a->name, why);
  return why[0] != 0;
}

/* A rank refused the name (the refusing rank's reason), else whether the
 * signatures differ (differs); ranks holding it back with their group
 * count too. */
static rondo_status_t refused_or_differs(const agg_t *a, int first, int size, char *msg,
                                         size_t len)
{
  for (int r = first; r < size; r++)
    if ((a->have[r] || a->held[r]) && a->sig[r].kind == ENG_REFUSED) {
      snprintf(msg, len, "'%s': rank %d refused it: %s", a->name, r,
               a->text[r] != NULL ? a->text[r] : "(no reason given)");
      return RONDO_ERR_PEER;
    }
  return differs(a, first, size, msg, len) ? RONDO_ERR_MISMATCH : RONDO_SUCCESS;
}

/* Rank 0, for a name every rank that has not joined submitted: whether it
 * may run; if not, the failure every rank gets and its message. A refusal
 * comes first (the reason is the refusing rank's), then a difference
 * across ranks, then what joined ranks cannot serve. */
static rondo_status_t agreed(const agg_t *a, int first, int size, const int *joined, char *msg,
                             size_t len)
{
  rondo_status_t st = refused_or_differs(a, first, size, msg, len);
  if (st != RONDO_SUCCESS)
    return st;
  const eng_sig_t *s = &a->sig[first];
  char gone[128] = "";
  size_t used = 0;
  int shown = 0;
  for (int r = 0; r < size && used + 16 < sizeof gone; r++)
    if (joined[r])
      used += (size_t)snprintf(gone + used, sizeof gone - used, "%s%d", shown++ ? "," : "", r);
  if (shown > 0 && (s->flags & RONDO_ASYNC_NO_JOIN)) {
    snprintf(msg, len,
             "'%s': rank(s) %s joined (rondo_join), and this %s needs every rank (only "
             "all-reduces are served by joined ranks here)",
             a->name, gone, eng_kind_name(s->kind));
    return RONDO_ERR_JOINED;
  }
  if (s->kind == ENG_BROADCAST && s->root >= 0 && s->root < size && joined[s->root]) {
    snprintf(msg, len, "'%s' differs across ranks: the root, rank %d, has joined", a->name,
             s->root);
    return RONDO_ERR_MISMATCH;
  }
  return RONDO_SUCCESS;
}

/* Every rank's records, by name. */
static rondo_status_t collect(const eng_coord_in_t *in, aggs_t *g)
{
  size_t records = 0;
  for (int r = 0; r < in->size; r++)
    records += in->nrecords[r];
  g->size = in->size;
  g->cap = records;
  g->nindex = 2 * records + 1;
  g->a = calloc(records ? records : 1, sizeof *g->a);
  g->index = malloc(g->nindex * sizeof *g->index);
  if (g->a == NULL || g->index == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: coordinator tables");
  for (size_t i = 0; i < g->nindex; i++)
    g->index[i] = -1;
  for (int r = 0; r < in->size; r++)
    for (uint32_t i = 0; i < in->nrecords[r]; i++) {
      const eng_record_t *rec = &in->records[r][i];
      agg_t *a = aggs_get(g, rec->name, in->size);
      if (a == NULL)
        return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: coordinator tables");
      a->have[r] = rec->held == 0;
      a->held[r] = rec->held;
      a->sig[r] = rec->sig;
      a->text[r] = rec->text != NULL && rec->text[0] != '\0' ? rec->text : NULL;
      a->group[r] = rec->group != NULL && rec->group[0] != '\0' ? rec->group : NULL;
      if (rec->age > a->age)
        a->age = rec->age;
    }
  return RONDO_SUCCESS;
}

/* An allgather's rows in its response: every rank's, where every rank has
 * the same (and none has joined: a joined rank's stand-in gives none), so
 * that no rank needs to ask the others (collectives.c); else
 * ENG_ROWS_DIFFER. Cached with the response, the decision also serves the
 * fast path (eng_sig_serves): a rank whose rows change no longer sets the
 * name's bit, and the slow path decides again. */
static uint64_t common_rows(const agg_t *a, int first, int size, const int *joined)
{
  for (int r = 0; r < size; r++)
    if (joined[r] || a->sig[r].rows != a->sig[first].rows)
      return ENG_ROWS_DIFFER;
  return a->sig[first].rows;
}

/* A name every rank that has not joined submitted, and that may run: its
 * cache entry (the one it had, else a free or the least recently used). */
static rondo_status_t ready(const eng_coord_in_t *in, const agg_t *a, int first, eng_cache_t *cache,
                            eng_cycle_t *out)
{
  eng_sig_t sig = a->sig[first];
  if (sig.kind == ENG_ALLGATHER)
    sig.rows = common_rows(a, first, in->size, in->joined);
  int id = -1;
  if (cache->capacity > 0) {
    id = eng_cache_find_name(cache, a->name);
    if (id < 0)
      id = eng_cache_victim(cache);
    RONDO_CHECK(eng_cache_set(cache, id, a->name, &sig));
  }
  return eng_resp_add(out, RESP_OK, RONDO_SUCCESS, id, &sig, a->name, NULL);
}

/* A name some ranks lack: a failure if a lacking rank shuts down or the
 * name waited past the timeout; otherwise it waits (a->decided = 0), and
 * past warn_sec it is counted in the stall line. missing: the lacking
 * ranks; holder: a rank holding it back with its group, or -1. */
static rondo_status_t incomplete(const eng_coord_in_t *in, agg_t *a, int first, int holder,
                                 char *missing, eng_cycle_t *out, eng_stalls_t *stalls)
{
  int size = in->size;
  char msg[700], ranks[128];
  int gone = 0;
  for (int r = 0; r < size; r++)
    gone |= missing[r] && in->stopping[r];
  if (gone) { /* a rank that is shutting down will never submit it */
    for (int r = 0; r < size; r++)
      missing[r] = missing[r] && in->stopping[r];
    rank_list(missing, size, ranks, sizeof ranks);
    snprintf(msg, sizeof msg,
             "'%s': rank(s) %s destroyed the comm (or finalized rondo) without submitting it",
             a->name, ranks);
    return eng_resp_add(out, RESP_ERROR, RONDO_ERR_SHUT_DOWN, -1, &a->sig[first], a->name, msg);
  }
  rank_list(missing, size, ranks, sizeof ranks);
  char held[160] = "";
  if (holder >= 0)
    snprintf(held, sizeof held, "; rank %d holds it back: its group '%s' has %u of its %u requests",
             holder, a->group[holder] ? a->group[holder] : "?", a->held[holder],
             a->sig[holder].group_size);
  if (in->abort_sec > 0 && a->age >= in->abort_sec) {
    snprintf(msg, sizeof msg,
             "'%s' stalled: rank(s) %s did not submit it within the comm's timeout of "
             "%g s (RONDO_STALL_ABORT_SEC, rondo_comm_set_timeout)%s",
             a->name, ranks, in->abort_sec, held);
    return eng_resp_add(out, RESP_ERROR, RONDO_ERR_STALLED, -1, &a->sig[first], a->name, msg);
  }
  a->decided = 0;
  if (in->warn_sec > 0 && a->age >= in->warn_sec) {
    size_t used = strlen(stalls->line);
    if (stalls->stalled < 5 && used + 64 < sizeof stalls->line)
      snprintf(stalls->line + used, sizeof stalls->line - used,
               "%s'%.60s' (%.0f s; missing on ranks %s%.100s)", stalls->stalled ? ", " : "",
               a->name, a->age, ranks, held);
    stalls->stalled++;
  }
  return RONDO_SUCCESS;
}

/* The response for one name (missing: scratch of size ranks). */
static rondo_status_t decide(const eng_coord_in_t *in, agg_t *a, char *missing,
                             eng_cache_t *cache, eng_cycle_t *out, eng_stalls_t *stalls)
{
  int size = in->size, first = -1, absent = 0, holder = -1, unseen = 0;
  for (int r = 0; r < size; r++) {
    missing[r] = !a->have[r] && !in->joined[r];
    absent += missing[r];
    unseen += !a->have[r] && !a->held[r] && !in->joined[r];
    if ((a->have[r] || a->held[r]) && first < 0)
      first = r;
    if (a->held[r] && holder < 0)
      holder = r;
  }
  if (first < 0)
    return RONDO_SUCCESS;
  a->decided = 1;
  char msg[700];
  /* A rank holding it back with its group: a group that differs, or a
   * member a rank refused, fails now, on every rank, instead of waiting
   * for the group to complete; but only once every rank has the name, or
   * a rank still submitting the group would find it gone. */
  rondo_status_t early = holder >= 0 && unseen == 0
                             ? refused_or_differs(a, first, size, msg, sizeof msg)
                             : RONDO_SUCCESS;
  if (early != RONDO_SUCCESS)
    return eng_resp_add(out, RESP_ERROR, early, -1, &a->sig[first], a->name, msg);
  if (absent > 0)
    return incomplete(in, a, first, holder, missing, out, stalls);
  rondo_status_t fail = agreed(a, first, size, in->joined, msg, sizeof msg);
  if (fail != RONDO_SUCCESS)
    return eng_resp_add(out, RESP_ERROR, fail, -1, &a->sig[first], a->name, msg);
  return ready(in, a, first, cache, out);
}

/* A group fails whole: the names of a group one of whose names failed
 * fail too, on every rank, with that failure. */
static rondo_status_t fail_groups(aggs_t *g, eng_cycle_t *out)
{
  for (size_t k = 0, n = out->nresp; k < n; k++) {
    if (out->resp[k].type != RESP_ERROR || out->resp[k].sig.group == 0)
      continue;
    for (size_t i = 0; i < g->n; i++) {
      agg_t *a = &g->a[i];
      int member = -1;
      for (int r = 0; r < g->size && member < 0 && !a->decided; r++)
        if ((a->have[r] || a->held[r]) && a->sig[r].group == out->resp[k].sig.group)
          member = r;
      if (member < 0)
        continue;
      a->decided = 1;
      char why[900];
      snprintf(why, sizeof why, "'%s' fails with its group: %s", a->name, out->resp[k].message);
      RONDO_CHECK(eng_resp_add(out, RESP_ERROR, out->resp[k].status, -1, &a->sig[member],
                               a->name, why));
    }
  }
  return RONDO_SUCCESS;
}

rondo_status_t eng_coordinate(const eng_coord_in_t *in, eng_cache_t *cache, eng_cycle_t *out,
                              eng_stalls_t *stalls)
{
  memset(stalls, 0, sizeof *stalls);
  aggs_t g = {0};
  char *missing = calloc((size_t)in->size, 1);
  rondo_status_t st = missing != NULL
                          ? collect(in, &g)
                          : rondo__fail(RONDO_ERR_NO_MEMORY, "engine: coordinator tables");
  for (size_t i = 0; i < g.n && st == RONDO_SUCCESS; i++)
    st = decide(in, &g.a[i], missing, cache, out, stalls);
  if (st == RONDO_SUCCESS)
    st = fail_groups(&g, out);
  free(missing);
  aggs_free(&g);
  return st;
}
