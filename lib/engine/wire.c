/* The slow path's messages (wire.h). */
#include "engine/wire.h"

#include <stdlib.h>
#include <string.h>

/* ---- byte buffers ------------------------------------------------------------------- */

static void put(eng_buf_t *b, const void *data, size_t n)
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

static void put_str(eng_buf_t *b, const char *s)
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

/* ---- records --------------------------------------------------------------------- */

rondo_status_t eng_wire_put_records(eng_buf_t *b, const eng_record_t *recs, uint32_t n)
{
  put(b, &n, sizeof n);
  for (uint32_t i = 0; i < n; i++) {
    const eng_record_t *r = &recs[i];
    put_str(b, r->name);
    put(b, &r->sig, sizeof r->sig);
    put(b, &r->age, sizeof r->age);
    put_str(b, r->text);
    put_str(b, r->group);
    put(b, &r->held, sizeof r->held);
  }
  return b->failed ? rondo__fail(RONDO_ERR_NO_MEMORY, "engine: negotiation message")
                   : RONDO_SUCCESS;
}

void eng_records_free(eng_record_t *recs, uint32_t n)
{
  for (uint32_t i = 0; recs != NULL && i < n; i++) {
    free(recs[i].name);
    free(recs[i].text);
    free(recs[i].group);
  }
  free(recs);
}

rondo_status_t eng_wire_get_records(const char *p, size_t len, eng_record_t **recs,
                                    uint32_t *n)
{
  rd_t rd = {p, p + len, 0};
  uint32_t count = 0;
  get(&rd, &count, sizeof count);
  /* every record takes at least this many bytes: a count beyond them is bad */
  size_t least = 3 * sizeof(uint32_t) + sizeof(eng_sig_t) + sizeof(double) + sizeof(uint32_t);
  if (rd.bad || count > len / least) {
    *recs = NULL;
    *n = 0;
    return rondo__fail(RONDO_ERR_INTERNAL, "engine: malformed negotiation message");
  }
  eng_record_t *out = calloc(count ? count : 1, sizeof *out);
  if (out == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: coordinator tables");
  uint32_t got = 0;
  for (; got < count && !rd.bad; got++) {
    eng_record_t *r = &out[got];
    r->name = get_str(&rd);
    get(&rd, &r->sig, sizeof r->sig);
    get(&rd, &r->age, sizeof r->age);
    r->text = get_str(&rd);
    r->group = get_str(&rd);
    get(&rd, &r->held, sizeof r->held);
  }
  if (rd.bad) {
    eng_records_free(out, got);
    *recs = NULL;
    *n = 0;
    return rondo__fail(RONDO_ERR_INTERNAL, "engine: malformed negotiation message");
  }
  *recs = out;
  *n = count;
  return RONDO_SUCCESS;
}

/* ---- responses ------------------------------------------------------------------- */

rondo_status_t eng_wire_put_responses(eng_buf_t *b, const eng_cycle_t *c)
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
  return b->failed ? rondo__fail(RONDO_ERR_NO_MEMORY, "engine: responses") : RONDO_SUCCESS;
}

rondo_status_t eng_wire_get_responses(const char *p, size_t len, eng_cycle_t *c)
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
    rondo_status_t st = RONDO_SUCCESS;
    if (!rd.bad)
      st = eng_resp_add(c, v[0], (rondo_status_t)v[1], v[2], &sig, name,
                        msg != NULL && msg[0] ? msg : NULL);
    free(name);
    free(msg);
    RONDO_CHECK(st);
  }
  if (rd.bad)
    return rondo__fail(RONDO_ERR_INTERNAL, "engine: malformed responses from rank 0");
  return RONDO_SUCCESS;
}
