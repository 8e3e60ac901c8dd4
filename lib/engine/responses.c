/* A cycle's responses (responses.h). */
#include "engine/responses.h"

#include <stdlib.h>
#include <string.h>

eng_resp_t *eng_resp_new(eng_cycle_t *c)
{
  if (c->nresp == c->cap) {
    size_t n = c->cap ? 2 * c->cap : 16;
    eng_resp_t *p = realloc(c->resp, n * sizeof *p);
    if (p == NULL) {
      rondo__fail(RONDO_ERR_NO_MEMORY, "engine: responses");
      return NULL;
    }
    c->resp = p;
    c->cap = n;
  }
  eng_resp_t *r = &c->resp[c->nresp];
  memset(r, 0, sizeof *r);
  return r;
}

rondo_status_t eng_resp_add(eng_cycle_t *c, int type, rondo_status_t st, int cache_id,
                            const eng_sig_t *sig, const char *name, const char *message)
{
  eng_resp_t *r = eng_resp_new(c);
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
