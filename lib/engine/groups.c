/*
 * Groups of requests (groups.h).
 */
#include "engine/groups.h"

#include "engine/engine.h"
#include "engine/inflight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static eng_failed_group_t *failed_group(struct engine *e, uint64_t group)
{
  for (int i = 0; i < e->failed.n; i++)
    if (e->failed.groups[i].group == group)
      return &e->failed.groups[i];
  return NULL;
}

/* One more member of g failed here; the last one ends the record. */
static void failed_group_count(struct engine *e, eng_failed_group_t *g)
{
  if (--g->left > 0)
    return;
  free(g->message);
  *g = e->failed.groups[--e->failed.n];
}

void eng_group_failed(struct engine *e, const struct rondo_request *req, rondo_status_t st,
                      const char *message)
{
  if (req->sig.group == 0)
    return;
  eng_failed_group_t *g = failed_group(e, req->sig.group);
  if (g == NULL) {
    if (e->failed.n == ENG_FAILED_GROUPS) { /* the oldest goes */
      free(e->failed.groups[0].message);
      memmove(&e->failed.groups[0], &e->failed.groups[1],
              (ENG_FAILED_GROUPS - 1) * sizeof e->failed.groups[0]);
      e->failed.n--;
    }
    g = &e->failed.groups[e->failed.n++];
    g->group = req->sig.group;
    g->left = req->group_size;
    g->status = st;
    g->message = strdup(message != NULL ? message : "");
  }
  failed_group_count(e, g);
}

/* Requests of a group are announced together, once all of them are here;
 * a member of a group that failed here already fails at once. */
void eng_groups_announce(struct engine *e)
{
  for (size_t i = 0; i < e->npending; i++) {
    struct rondo_request *r = e->pending[i];
    if (r == NULL || r->announced)
      continue;
    if (r->group == NULL) {
      r->announced = 1;
      continue;
    }
    eng_failed_group_t *g = failed_group(e, r->sig.group);
    if (g != NULL) {
      char msg[1024];
      snprintf(msg, sizeof msg, "'%s' fails with its group, which failed before it came: %s",
               r->name, g->message != NULL ? g->message : "");
      rondo_status_t st = g->status;
      failed_group_count(e, g);
      /* a refusing rank gets its own reason, as from a response */
      if (r->sig.kind == ENG_REFUSED)
        eng_complete(e, r, RONDO_ERR_INVALID_ARG, r->reason);
      else
        eng_complete(e, r, st, msg);
      continue;
    }
    int have = 0;
    for (size_t j = 0; j < e->npending; j++)
      have += e->pending[j] != NULL && e->pending[j]->group != NULL &&
              strcmp(e->pending[j]->group, r->group) == 0;
    if (have >= r->group_size)
      for (size_t j = 0; j < e->npending; j++)
        if (e->pending[j] != NULL && e->pending[j]->group != NULL &&
            strcmp(e->pending[j]->group, r->group) == 0)
          e->pending[j]->announced = 1;
  }
}

void eng_groups_free(eng_failed_groups_t *f)
{
  for (int i = 0; i < f->n; i++)
    free(f->groups[i].message);
  f->n = 0;
}
