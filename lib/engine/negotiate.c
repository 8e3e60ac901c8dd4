/*
 * One negotiation cycle: which names every rank has submitted, in one order
 * that is the same on every rank.
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
 * path runs: every rank sends all its announced requests (name, signature,
 * age) to rank 0, which finds the names every rank that has not joined
 * submitted, checks that their signatures agree, assigns cache entries, and
 * broadcasts the responses; names that differ become error responses naming
 * the ranks and values, names stalled past RONDO_STALL_ABORT_SEC become
 * RONDO_ERR_STALLED responses, and names stalled past RONDO_STALL_WARN_SEC
 * are logged by rank 0 with the ranks that are missing.
 *
 * A small all-reduce rides along (the inline part of the packet): when
 * every rank has exactly one request pending, the same cached all-reduce of
 * at most inline_bytes, each puts its data into the packet, the reduction
 * combines them as it combines the bits, and the request is done when the
 * negotiation is: one all-reduce per blocking call instead of two.
 */
#include "engine/engine.h"

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
  /* bits 8..63, AND: rank i < ENG_STOP_RANKS is not shutting down (bit
   * 8 + i); the last bit stands for every later rank */
  F_RANK_SHIFT = 8,
};
_Static_assert(F_RANK_SHIFT + ENG_STOP_RANKS == 63, "one flag word holds the stopping bits");

int eng_sig_equal(const eng_sig_t *a, const eng_sig_t *b)
{
  return a->kind == b->kind && a->dtype == b->dtype && a->op == b->op && a->algo == b->algo &&
         a->root == b->root && a->mem == b->mem && a->count == b->count &&
         a->rows == b->rows && a->prescale == b->prescale && a->postscale == b->postscale &&
         a->tag == b->tag && a->flags == b->flags && a->group == b->group &&
         a->group_size == b->group_size;
}

const char *eng_kind_name(int kind)
{
  static const char *const names[ENG_KINDS] = {"allreduce", "broadcast", "allgather",
                                               "reduce-scatter", "all-to-all", "refused"};
  return kind >= 0 && kind < ENG_KINDS ? names[kind] : "?";
}

void eng_cycle_free(eng_cycle_t *c)
{
  for (size_t i = 0; i < c->nresp; i++) {
    if (!c->resp[i].name_borrowed)
      free(c->resp[i].name);
    free(c->resp[i].message);
  }
  free(c->resp);
  memset(c, 0, sizeof *c);
}

/* ---- byte buffers ------------------------------------------------------------------- */

typedef struct {
  char *p;
  size_t len, cap;
  int failed;
} buf_t;

static void put(buf_t *b, const void *data, size_t n)
{
  if (b->failed || n == 0)
    return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      b->failed = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
}

static void put_str(buf_t *b, const char *s)
{
  uint32_t n = s != NULL ? (uint32_t)strlen(s) : 0;
  put(b, &n, sizeof n);
  put(b, s, n);
}

typedef struct {
  const char *p, *end;
  int bad;
} rd_t;

static void get(rd_t *r, void *out, size_t n)
{
  if (r->bad || (size_t)(r->end - r->p) < n) {
    r->bad = 1;
    memset(out, 0, n);
    return;
  }
  memcpy(out, r->p, n);
  r->p += n;
}

/* A NUL-terminated copy (malloc'd), or NULL when the input is bad. */
static char *get_str(rd_t *r)
{
  uint32_t n;
  get(r, &n, sizeof n);
  if (r->bad || (size_t)(r->end - r->p) < n) {
    r->bad = 1;
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  if (s == NULL) {
    r->bad = 1;
    return NULL;
  }
  memcpy(s, r->p, n);
  s[n] = '\0';
  r->p += n;
  return s;
}

/* ---- responses ---------------------------------------------------------------------- */

/* A zeroed response at the end of c (not yet counted), or NULL. */
static eng_resp_t *new_resp(eng_cycle_t *c, size_t *cap)
{
  if (c->nresp == *cap) {
    size_t n = *cap ? 2 * *cap : 16;
    eng_resp_t *p = realloc(c->resp, n * sizeof *p);
    if (p == NULL) {
      rondo__fail(RONDO_ERR_NO_MEMORY, "engine: responses");
      return NULL;
    }
    c->resp = p;
    *cap = n;
  }
  eng_resp_t *r = &c->resp[c->nresp];
  memset(r, 0, sizeof *r);
  return r;
}

static rondo_status_t add_resp(eng_cycle_t *c, size_t *cap, int type, rondo_status_t st,
                               int cache_id, const eng_sig_t *sig, const char *name,
                               const char *message)
{
  eng_resp_t *r = new_resp(c, cap);
  if (r == NULL)
    return RONDO_ERR_NO_MEMORY;
  r->type = type;
  r->status = st;
  r->cache_id = cache_id;
  r->sig = *sig;
  r->name = strdup(name);
  r->message = message != NULL ? strdup(message) : NULL;
  if (r->name == NULL || (message != NULL && r->message == NULL)) {
    free(r->name);
    free(r->message);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: responses");
  }
  c->nresp++;
  return RONDO_SUCCESS;
}

/* ---- the coordinator (rank 0, slow path) -------------------------------------------- */

typedef struct {
  char *name;
  eng_sig_t *sig;     /* [size]; valid where have[r] or held[r] */
  char **text;        /* [size]: each rank's tag, or a refusal's reason (NULL: none) */
  char **group;       /* [size]: each rank's group name (NULL: none) */
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
    for (int r = 0; g->a[i].text != NULL && r < g->size; r++)
      free(g->a[i].text[r]);
    for (int r = 0; g->a[i].group != NULL && r < g->size; r++)
      free(g->a[i].group[r]);
    free(g->a[i].text);
    free(g->a[i].group);
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
    free(a->text);
    free(a->group);
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
  else if (a->rows != b->rows)
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
    if ((a->have[r] || a->held[r]) && !eng_sig_equal(&a->sig[first], &a->sig[r]))
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

/* Rank 0: the responses of a slow-path cycle from every rank's records. */
static rondo_status_t coordinate(struct engine *e, const char *all, const int *bytes,
                                 const int *displs, const int *joined, const int *stopping,
                                 eng_cycle_t *out, size_t *cap)
{
  int size = e->size;
  size_t records = 0;
  for (int r = 0; r < size; r++) {
    rd_t rd = {all + displs[r], all + displs[r] + bytes[r], 0};
    uint32_t n;
    get(&rd, &n, sizeof n);
    records += n;
  }
  aggs_t g = {0};
  g.size = size;
  g.cap = records;
  g.nindex = 2 * records + 1;
  g.a = calloc(records ? records : 1, sizeof *g.a);
  g.index = malloc(g.nindex * sizeof *g.index);
  rondo_status_t st = RONDO_SUCCESS;
  if (g.a == NULL || g.index == NULL) {
    aggs_free(&g);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: coordinator tables");
  }
  for (size_t i = 0; i < g.nindex; i++)
    g.index[i] = -1;
  for (int r = 0; r < size && st == RONDO_SUCCESS; r++) {
    rd_t rd = {all + displs[r], all + displs[r] + bytes[r], 0};
    uint32_t n;
    get(&rd, &n, sizeof n);
    for (uint32_t i = 0; i < n && !rd.bad; i++) {
      char *name = get_str(&rd);
      eng_sig_t sig;
      double age;
      get(&rd, &sig, sizeof sig);
      get(&rd, &age, sizeof age);
      char *text = get_str(&rd), *group = get_str(&rd);
      uint32_t held;
      get(&rd, &held, sizeof held);
      if (rd.bad) {
        free(name);
        free(text);
        free(group);
        break;
      }
      agg_t *a = aggs_get(&g, name, size);
      free(name);
      if (a == NULL) {
        free(text);
        free(group);
        st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: coordinator tables");
        break;
      }
      a->have[r] = held == 0;
      a->held[r] = held;
      a->sig[r] = sig;
      free(a->text[r]);
      a->text[r] = text[0] != '\0' ? text : NULL;
      if (text[0] == '\0')
        free(text);
      free(a->group[r]);
      a->group[r] = group[0] != '\0' ? group : NULL;
      if (group[0] == '\0')
        free(group);
      if (age > a->age)
        a->age = age;
    }
    if (rd.bad && st == RONDO_SUCCESS)
      st = rondo__fail(RONDO_ERR_INTERNAL, "engine: malformed negotiation message from rank %d", r);
  }

  double warn = e->owner->cfg.stall_warn_sec, abort_after = comm_request_timeout(e->owner);
  char line[1024], ranks[128];
  size_t line_used = 0;
  int stalled = 0;
  char *missing = calloc((size_t)size, 1);
  if (missing == NULL && st == RONDO_SUCCESS)
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: coordinator tables");
  for (size_t i = 0; i < g.n && st == RONDO_SUCCESS; i++) {
    agg_t *a = &g.a[i];
    int first = -1, absent = 0, holder = -1;
    for (int r = 0; r < size; r++) {
      missing[r] = !a->have[r] && !joined[r];
      absent += missing[r];
      if ((a->have[r] || a->held[r]) && first < 0)
        first = r;
      if (a->held[r] && holder < 0)
        holder = r;
    }
    if (first < 0)
      continue;
    a->decided = 1;
    char msg[700];
    /* A rank holding it back with its group: a group that differs, or a
     * member a rank refused, fails now, on every rank, instead of waiting
     * for the group to complete; but only once every rank has the name, or
     * a rank still submitting the group would find it gone. */
    int unseen = 0; /* ranks that have not submitted it at all yet */
    for (int r = 0; r < size; r++)
      unseen += !a->have[r] && !a->held[r] && !joined[r];
    rondo_status_t early = holder >= 0 && unseen == 0
                               ? refused_or_differs(a, first, size, msg, sizeof msg)
                               : RONDO_SUCCESS;
    if (early != RONDO_SUCCESS) {
      st = add_resp(out, cap, RESP_ERROR, early, -1, &a->sig[first], a->name, msg);
      continue;
    }
    if (absent == 0) {
      rondo_status_t fail = agreed(a, first, size, joined, msg, sizeof msg);
      if (fail != RONDO_SUCCESS) {
        st = add_resp(out, cap, RESP_ERROR, fail, -1, &a->sig[first], a->name, msg);
        continue;
      }
      int id = -1;
      if (e->cache.capacity > 0) {
        id = eng_cache_find_name(&e->cache, a->name);
        if (id < 0)
          id = eng_cache_victim(&e->cache);
        st = eng_cache_set(&e->cache, id, a->name, &a->sig[first]);
      }
      if (st == RONDO_SUCCESS)
        st = add_resp(out, cap, RESP_OK, RONDO_SUCCESS, id, &a->sig[first], a->name, NULL);
      continue;
    }
    /* A rank that is shutting down will never submit it. */
    int gone = 0;
    for (int r = 0; r < size; r++)
      gone |= missing[r] && stopping[r];
    if (gone) {
      for (int r = 0; r < size; r++)
        missing[r] = missing[r] && stopping[r];
      rank_list(missing, size, ranks, sizeof ranks);
      snprintf(msg, sizeof msg,
               "'%s': rank(s) %s destroyed the comm (or finalized rondo) without submitting it",
               a->name, ranks);
      st = add_resp(out, cap, RESP_ERROR, RONDO_ERR_SHUT_DOWN, -1, &a->sig[first], a->name, msg);
      continue;
    }
    rank_list(missing, size, ranks, sizeof ranks);
    char held[160] = "";
    if (holder >= 0)
      snprintf(held, sizeof held, "; rank %d holds it back: its group '%s' has %u of its %u requests",
               holder, a->group[holder] ? a->group[holder] : "?", a->held[holder],
               a->sig[holder].group_size);
    if (abort_after > 0 && a->age >= abort_after) {
      snprintf(msg, sizeof msg,
               "'%s' stalled: rank(s) %s did not submit it within the comm's timeout of "
               "%g s (RONDO_STALL_ABORT_SEC, rondo_comm_set_timeout)%s",
               a->name, ranks, abort_after, held);
      st = add_resp(out, cap, RESP_ERROR, RONDO_ERR_STALLED, -1, &a->sig[first], a->name, msg);
    } else {
      a->decided = 0;
      if (warn > 0 && a->age >= warn) {
        if (stalled < 5 && line_used + 64 < sizeof line)
          line_used += (size_t)snprintf(line + line_used, sizeof line - line_used,
                                        "%s'%.60s' (%.0f s; missing on ranks %s%.100s)",
                                        stalled ? ", " : "", a->name, a->age, ranks, held);
        stalled++;
      }
    }
  }
  /* A group fails whole: the names of a group one of whose names failed
   * fail too, on every rank, with that failure. */
  for (size_t k = 0, n = out->nresp; k < n && st == RONDO_SUCCESS; k++) {
    if (out->resp[k].type != RESP_ERROR || out->resp[k].sig.group == 0)
      continue;
    for (size_t i = 0; i < g.n && st == RONDO_SUCCESS; i++) {
      agg_t *a = &g.a[i];
      int member = -1;
      for (int r = 0; r < size && member < 0 && !a->decided; r++)
        if ((a->have[r] || a->held[r]) && a->sig[r].group == out->resp[k].sig.group)
          member = r;
      if (member < 0)
        continue;
      a->decided = 1;
      char why[900];
      snprintf(why, sizeof why, "'%s' fails with its group: %s", a->name, out->resp[k].message);
      st = add_resp(out, cap, RESP_ERROR, out->resp[k].status, -1, &a->sig[member], a->name, why);
    }
  }
  free(missing);
  double now = rondo__now();
  if (stalled > 0 && now - e->last_stall_warn >= warn) {
    e->last_stall_warn = now;
    LOG_WARN("stall: %d request(s) waited more than %.0f s for other ranks: %s%s. "
             "Every rank must submit the same names; set RONDO_STALL_ABORT_SEC to fail "
             "them instead of waiting",
             stalled, warn, line, stalled > 5 ? ", ..." : "");
  }
  aggs_free(&g);
  return st;
}

static void serialize_resp(buf_t *b, const eng_cycle_t *c)
{
  uint32_t n = (uint32_t)c->nresp;
  put(b, &n, sizeof n);
  for (size_t i = 0; i < c->nresp; i++) {
    const eng_resp_t *r = &c->resp[i];
    int32_t v[3] = {r->type, r->status, r->cache_id};
    put(b, v, sizeof v);
    put(b, &r->sig, sizeof r->sig);
    put_str(b, r->name);
    put_str(b, r->message);
  }
}

static rondo_status_t deserialize_resp(const char *p, size_t len, eng_cycle_t *c, size_t *cap)
{
  rd_t rd = {p, p + len, 0};
  uint32_t n;
  get(&rd, &n, sizeof n);
  for (uint32_t i = 0; i < n && !rd.bad; i++) {
    int32_t v[3];
    eng_sig_t sig;
    get(&rd, v, sizeof v);
    get(&rd, &sig, sizeof sig);
    char *name = get_str(&rd), *msg = get_str(&rd);
    if (!rd.bad)
      RONDO_CHECK(add_resp(c, cap, v[0], (rondo_status_t)v[1], v[2], &sig, name,
                           msg != NULL && msg[0] ? msg : NULL));
    free(name);
    free(msg);
  }
  if (rd.bad)
    return rondo__fail(RONDO_ERR_INTERNAL, "engine: malformed responses from rank 0");
  return RONDO_SUCCESS;
}

/* ---- the cycle ------------------------------------------------------------------------ */

/* How long a rank holds back the requests of an incomplete group before
 * it shows them to rank 0 (and again at this interval): groups come in
 * bursts, so a group still incomplete after this long is likely one that
 * differs across ranks. */
#define HOLD_CHECK_S 0.2

/* Should this rank force a slow path so rank 0 can see a possible stall? */
static int stall_check(struct engine *e, double oldest_age)
{
  double warn = e->owner->cfg.stall_warn_sec, abort_after = comm_request_timeout(e->owner);
  double limit = INFINITY;
  if (warn > 0)
    limit = warn;
  if (abort_after > 0 && abort_after < limit)
    limit = abort_after;
  double now = rondo__now();
  if (oldest_age < limit || now - e->last_full < (limit < 1.0 ? limit : 1.0))
    return 0;
  e->last_full = now;
  return 1;
}

/* This rank's announced requests (name, signature, age), for rank 0. */
static rondo_status_t my_records(struct engine *e, buf_t *mine)
{
  uint32_t n = 0;
  double now = rondo__now();
  put(mine, &n, sizeof n);
  for (size_t i = 0; i < e->npending; i++) {
    struct rondo_request *r = e->pending[i];
    if (r == NULL)
      continue;
    /* held back with an incomplete group: how many of the group are here */
    uint32_t held = 0;
    for (size_t j = 0; !r->announced && j < e->npending; j++)
      held += e->pending[j] != NULL && e->pending[j]->group != NULL &&
              strcmp(e->pending[j]->group, r->group) == 0;
    double age = now - r->t_submit;
    put_str(mine, r->name);
    put(mine, &r->sig, sizeof r->sig);
    put(mine, &age, sizeof age);
    put_str(mine, r->sig.kind == ENG_REFUSED ? r->reason : r->tag);
    put_str(mine, r->group);
    put(mine, &held, sizeof held);
    n++;
  }
  if (mine->failed)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: negotiation message");
  memcpy(mine->p, &n, sizeof n);
  return RONDO_SUCCESS;
}

/* Every rank's records go to rank 0, which decides the responses and
 * serializes them into *resp. *decided: rank 0's outcome (its own failures
 * reach the others through the response size). A returned failure is
 * MPI's: this engine cannot go on. */
static rondo_status_t gather_decide(struct engine *e, int joined, int stopping,
                                    eng_cycle_t *out, buf_t *resp, rondo_status_t *decided)
{
  buf_t mine = {0};
  rondo_status_t st = my_records(e, &mine), mst = RONDO_SUCCESS;
  int head[3] = {(int)mine.len, joined, stopping}, *heads = NULL, *bytes = NULL,
      *displs = NULL, *joins = NULL, *stops = NULL;
  char *all = NULL;
  if (e->rank == 0) {
    heads = malloc(3 * (size_t)e->size * sizeof *heads);
    bytes = malloc((size_t)e->size * sizeof *bytes);
    displs = malloc((size_t)e->size * sizeof *displs);
    joins = malloc((size_t)e->size * sizeof *joins);
    stops = malloc((size_t)e->size * sizeof *stops);
    if (st == RONDO_SUCCESS && (!heads || !bytes || !displs || !joins || !stops))
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: negotiation");
  }
  /* The gathers run whatever happened on rank 0, so no rank hangs. */
  MPI_Request req;
  MPI_CHECK_GOTO(MPI_Igather(head, 3, MPI_INT, heads, 3, MPI_INT, 0, e->mpi, &req), mst, out);
  RONDO_CHECK_GOTO(eng_wait(e, &req), mst, out);
  size_t total = 0;
  if (e->rank == 0 && st == RONDO_SUCCESS) {
    for (int r = 0; r < e->size; r++) {
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
                              e->mpi, &req),
                 mst, out);
  RONDO_CHECK_GOTO(eng_wait(e, &req), mst, out);
  if (e->rank == 0) {
    size_t cap = 0;
    if (st == RONDO_SUCCESS)
      st = coordinate(e, all, bytes, displs, joins, stops, out, &cap);
    if (st == RONDO_SUCCESS)
      serialize_resp(resp, out);
    if (resp->failed && st == RONDO_SUCCESS)
      st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: responses");
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

static rondo_status_t slow_path(struct engine *e, int joined, int stopping, eng_cycle_t *out)
{
  buf_t resp = {0};
  rondo_status_t decided;
  rondo_status_t st = gather_decide(e, joined, stopping, out, &resp, &decided);
  /* UINT64_MAX: rank 0 failed to decide */
  uint64_t resp_len = decided == RONDO_SUCCESS ? resp.len : UINT64_MAX;
  MPI_Request req;
  if (st == RONDO_SUCCESS)
    MPI_CHECK_GOTO(MPI_Ibcast(&resp_len, 1, MPI_UINT64_T, 0, e->mpi, &req), st, out);
  if (st == RONDO_SUCCESS)
    RONDO_CHECK_GOTO(eng_wait(e, &req), st, out);
  if (st != RONDO_SUCCESS)
    goto out;
  if (resp_len == UINT64_MAX) {
    st = e->rank == 0 ? decided : rondo__fail(RONDO_ERR_PEER, "engine: rank 0 failed to negotiate");
    goto out;
  }
  if (e->rank != 0 && (resp.p = malloc(resp_len ? resp_len : 1)) == NULL) {
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: responses"); /* cannot recover */
    goto out;
  }
  MPI_CHECK_GOTO(MPI_Ibcast(resp.p, (int)resp_len, MPI_BYTE, 0, e->mpi, &req), st, out);
  RONDO_CHECK_GOTO(eng_wait(e, &req), st, out);
  size_t cap = 0;
  st = deserialize_resp(resp.p, resp_len, out, &cap);
  /* Every rank (rank 0 again: idempotent) applies the cache entries. */
  for (size_t i = 0; i < out->nresp && st == RONDO_SUCCESS; i++)
    if (out->resp[i].type == RESP_OK && out->resp[i].cache_id >= 0)
      st = eng_cache_set(&e->cache, out->resp[i].cache_id, out->resp[i].name,
                         &out->resp[i].sig);
out:
  free(resp.p);
  return st;
}

/* ---- the packet --------------------------------------------------------------------
 * [inline header][inline data: cap bytes][words: the flags, then the cache
 * bits]. The header says what the data holds and where the packet's parts
 * are, so that the MPI reduction needs nothing but the packets. */
typedef struct {
  uint64_t head;    /* 0: no data; else what the data is (inline_head) */
  int64_t first;    /* the lowest rank whose data the partial result holds */
  uint64_t cap;     /* inline bytes in the packet (the same everywhere) */
  uint64_t words;   /* words after them */
  unsigned char data[];
} inline_t;

/* Inline bytes per packet: every negotiation carries them, used or not.
 * 256 on one node: 1 KiB made the negotiations of a burst of 1000 small
 * requests 10% slower (rondo-bench fusion --tensors 1000 --size 1K), 256
 * costs nothing measurable. Across nodes fewer: they cross the network. */
#define INLINE_BYTES_NODE 256
#define INLINE_BYTES_NET 64

static uint64_t inline_head(int cache_id, const eng_sig_t *sig)
{
  return (uint64_t)(cache_id + 1) << 32 | (uint64_t)sig->dtype << 24 | (uint64_t)sig->op << 16 |
         sig->count;
}

static uint64_t *packet_words(unsigned char *p)
{
  inline_t *h = (inline_t *)p;
  return (uint64_t *)(h->data + h->cap);
}

/* MPI_User_function: the words AND; the data reduced with rondo's kernels
 * when both packets carry the same request's, the partial result of the
 * lower ranks first (as the argument check's packets do, agree.c), so every
 * rank gets the same bytes whatever the reduction's tree. */
static void packet_reduce(void *in, void *inout, int *len, MPI_Datatype *type)
{
  (void)type;
  unsigned char *pa = in, *pb = inout;
  for (int k = 0; k < *len; k++) {
    inline_t *a = (inline_t *)pa, *b = (inline_t *)pb;
    size_t size = sizeof(inline_t) + a->cap + a->words * sizeof(uint64_t);
    if (a->head != 0 && a->head == b->head) {
      rondo_dtype_t dtype = (rondo_dtype_t)(a->head >> 24 & 0xff);
      rondo_op_t op = (rondo_op_t)(a->head >> 16 & 0xff);
      const unsigned char *lo = a->first < b->first ? a->data : b->data;
      const unsigned char *hi = a->first < b->first ? b->data : a->data;
      reduce_apply(b->data, lo, hi, (size_t)(a->head & 0xffff), dtype,
                   op == RONDO_AVG ? RONDO_SUM : op);
    } else {
      b->head = 0;
    }
    b->first = a->first < b->first ? a->first : b->first;
    const uint64_t *wa = packet_words(pa);
    uint64_t *wb = packet_words(pb);
    for (uint64_t i = 0; i < a->words; i++)
      wb[i] &= wa[i];
    pa += size;
    pb += size;
  }
}

static pthread_once_t op_once = PTHREAD_ONCE_INIT;
static MPI_Op packet_op = MPI_OP_NULL;
static int packet_op_rc = MPI_SUCCESS;

static void create_op(void)
{
  packet_op_rc = MPI_Op_create(packet_reduce, 1, &packet_op);
}

rondo_status_t eng_packets_create(struct engine *e)
{
  pthread_once(&op_once, create_op);
  if (packet_op_rc != MPI_SUCCESS)
    return rondo__mpi_fail(packet_op_rc, "MPI_Op_create", __FILE__, __LINE__);
  e->inline_bytes = e->owner->node_count > 1 ? INLINE_BYTES_NET : INLINE_BYTES_NODE;
  e->packet_bytes = sizeof(inline_t) + e->inline_bytes + (size_t)eng_bit_words(e) * 8;
  if ((e->packets = calloc(2, e->packet_bytes)) == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: negotiation packets");
  MPI_CHECK(MPI_Type_contiguous((int)e->packet_bytes, MPI_BYTE, &e->packet));
  MPI_CHECK(MPI_Type_commit(&e->packet));
  return RONDO_SUCCESS;
}

void eng_packets_free(struct engine *e, int mpi_usable)
{
  if (e->packet != MPI_DATATYPE_NULL && mpi_usable)
    MPI_CHECK_LOG(MPI_Type_free(&e->packet));
  free(e->packets);
  e->packets = NULL;
}

/* Whether r's data can ride in the negotiation (its cache entry: id): a
 * small host all-reduce without scaling, for which no algorithm was forced
 * (opts.algo or RONDO_ALLREDUCE_ALGO: rondo-train forces one for
 * bit-reproducible runs, and benchmarks force the one they measure). */
static int rides(const struct engine *e, const struct rondo_request *r, int id)
{
  const eng_sig_t *s = &r->sig;
  return id >= 0 && s->kind == ENG_ALLREDUCE && r->device < 0 && s->count > 0 &&
         e->exec->forced_algo == RONDO_ALGO_AUTO &&
         s->count * rondo_dtype_size((rondo_dtype_t)s->dtype) <= e->inline_bytes &&
         s->prescale == 1.0 && s->postscale == 1.0 && s->op != RONDO_ADASUM &&
         s->algo == RONDO_ALGO_AUTO && !r->phantom;
}

/* r rode along and is done: its result from the reduced packet. */
static void finish_inline(struct engine *e, struct rondo_request *r, const unsigned char *data,
                          double ready)
{
  const eng_sig_t *s = &r->sig;
  size_t bytes = s->count * rondo_dtype_size((rondo_dtype_t)s->dtype);
  memcpy(r->recvbuf, data, bytes);
  if (s->op == RONDO_AVG)
    reduce_average(r->recvbuf, s->count, (rondo_dtype_t)s->dtype, e->size);
  if (eng_tl_on(e)) {
    char args[96];
    snprintf(args, sizeof args, "{\"algorithm\":\"inline\",\"fused\":1,\"bytes\":%zu}", bytes);
    eng_tl_span(e, r->name, "QUEUE_WAIT", r->t_submit, r->t_taken, NULL);
    eng_tl_span(e, r->name, "ALLREDUCE", r->t_taken, ready, args);
  }
  eng_complete(e, r, RONDO_SUCCESS, NULL);
}

rondo_status_t eng_negotiate(struct engine *e, int stopping, eng_cycle_t *out)
{
  memset(out, 0, sizeof *out);
  int words = eng_bit_words(e);
  unsigned char *mine_p = e->packets, *all_p = e->packets + e->packet_bytes;
  inline_t *mine_h = (inline_t *)mine_p;
  mine_h->head = 0;
  mine_h->first = e->rank;
  mine_h->cap = e->inline_bytes;
  mine_h->words = (uint64_t)words;
  uint64_t *mine = packet_words(mine_p);
  uint64_t *all = (uint64_t *)(all_p + ((unsigned char *)mine - mine_p)); /* the same layout */
  memset(mine, 0, (size_t)words * sizeof *mine);
  struct rondo_request *lone = NULL; /* the one announced request, if it is alone */
  int announced = 0, lone_id = -1;
  int pending = 0, cached = 1;
  double now = rondo__now(), oldest = 0, held = 0;
  for (size_t i = 0; i < e->npending; i++) {
    struct rondo_request *r = e->pending[i];
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
    int id = eng_cache_find(&e->cache, r->name, &r->sig);
    if (announced++ == 0) {
      lone = r;
      lone_id = id;
    }
    if (id < 0) {
      cached = 0;
    } else {
      mine[1 + id / 64] |= 1ull << (id % 64);
      e->by_id[id] = r;
    }
  }
  /* While a rank has joined, rank 0 decides every cycle (the slow path): it
   * knows who joined, so a joined broadcast root is an error, not a stall. */
  if (e->joined || stopping)
    cached = 0; /* a stopping rank: rank 0 must see it to fail what it lacks */
  if (pending && stall_check(e, oldest))
    cached = 0;
  /* A group held back here for a while: rank 0 sees it, and fails it at
   * once if another rank's group differs (a model with one more layer). */
  if (held >= HOLD_CHECK_S && now - e->last_hold_check >= HOLD_CHECK_S) {
    e->last_hold_check = now;
    cached = 0;
  }
  mine[0] = (pending ? 0 : F_NO_PENDING) | (cached ? F_ALL_CACHED : 0) |
            (e->joined ? F_JOINED : 0) | (stopping ? F_STOPPING : 0);
  int bit = e->rank < ENG_STOP_RANKS ? e->rank : ENG_STOP_RANKS;
  mine[0] |= ~0ull << F_RANK_SHIFT;
  if (stopping)
    mine[0] &= ~(1ull << (F_RANK_SHIFT + bit));
  if (announced != 1 || !cached || !rides(e, lone, lone_id))
    lone = NULL;
  if (lone != NULL) {
    mine_h->head = inline_head(lone_id, &lone->sig);
    memcpy(mine_h->data, lone->sendbuf,
           lone->sig.count * rondo_dtype_size((rondo_dtype_t)lone->sig.dtype));
  }
  MPI_Request req;
  rondo_status_t st = RONDO_SUCCESS;
  int rc = MPI_Iallreduce(mine_p, all_p, 1, e->packet, packet_op, e->mpi, &req);
  if (rc != MPI_SUCCESS)
    st = rondo__mpi_fail(rc, "MPI_Iallreduce", __FILE__, __LINE__);
  else
    st = eng_wait(e, &req);
  if (st == RONDO_SUCCESS) {
    out->anyone_pending = !(all[0] & F_NO_PENDING);
    out->all_joined = (all[0] & F_JOINED) != 0;
    out->all_stopping = (all[0] & F_STOPPING) != 0;
    out->stopping = ~all[0] >> F_RANK_SHIFT;
    if (out->all_stopping || out->all_joined || !out->anyone_pending) {
      /* nothing to run */
    } else if (all[0] & F_ALL_CACHED) {
      /* Names and requests come straight from the cache and this cycle's
       * bits: no copies, no lookups by name. The cache does not change
       * before the next cycle, which is after these responses are freed. */
      size_t cap = 0;
      /* Every rank carried the same lone request's data (so every rank had
       * it pending, cached): it is done already. */
      int rode = lone != NULL && ((const inline_t *)all_p)->head == mine_h->head ? lone_id : -1;
      double ready = rondo__now();
      for (int w = 1; w < words && st == RONDO_SUCCESS; w++)
        for (uint64_t b = all[w]; b != 0 && st == RONDO_SUCCESS; b &= b - 1) {
          int id = (w - 1) * 64 + __builtin_ctzll(b);
          if (id == rode) {
            eng_cache_touch(&e->cache, id);
            finish_inline(e, lone, ((const inline_t *)all_p)->data, ready);
            out->inline_done++;
            continue;
          }
          eng_resp_t *r = new_resp(out, &cap);
          if (r == NULL) {
            st = RONDO_ERR_NO_MEMORY;
            break;
          }
          eng_cache_touch(&e->cache, id);
          r->type = RESP_OK;
          r->cache_id = id;
          r->sig = *eng_cache_sig(&e->cache, id);
          r->name = (char *)eng_cache_name(&e->cache, id);
          r->name_borrowed = 1;
          r->req = e->by_id[id]; /* set this cycle: the AND has this rank's bit */
          out->nresp++;
        }
    } else {
      st = slow_path(e, e->joined, stopping, out);
      /* rank 0's decision freed its copy of the cycle (flags included) */
      out->slow_path = 1;
      out->anyone_pending = !(all[0] & F_NO_PENDING);
    }
  }
  return st;
}
