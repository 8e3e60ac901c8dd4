/*
 * Groups of requests (groups.h).
 */
#include "engine/groups.h"

#include "engine/request.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static eng_failed_group_t *failed_group(eng_failed_groups_t *f, uint64_t group)
{
  for (int i = 0; i < f->n; i++)
    if (f->groups[i].group == group)
      return &f->groups[i];
  return NULL;
}

/* One more member of g failed here; the last one ends the record. */
static void failed_group_count(eng_failed_groups_t *f, eng_failed_group_t *g)
{
  if (--g->left > 0)
    return;
  free(g->message);
  *g = f->groups[--f->n];
}

void eng_group_failed(eng_failed_groups_t *f, const struct rondo_request *req,
                      rondo_status_t st, const char *message)
{
  if (req->sig.group == 0)
    return;
  eng_failed_group_t *g = failed_group(f, req->sig.group);
  if (g == NULL) {
    if (f->n == ENG_FAILED_GROUPS) { /* the oldest goes */
      free(f->groups[0].message);
      memmove(&f->groups[0], &f->groups[1],
              (ENG_FAILED_GROUPS - 1) * sizeof f->groups[0]);
      f->n--;
    }
    g = &f->groups[f->n++];
    g->group = req->sig.group;
    g->left = req->group_size;
    g->status = st;
    g->message = strdup(message != NULL ? message : "");
  }
  failed_group_count(f, g);
}

/* Requests of a group are announced together, once all of them are here;
 * a member of a group that failed here already fails at once. */
void eng_groups_announce(eng_failed_groups_t *failed, eng_flight_t *f)
{
  for (size_t i = 0; i < eng_pending_count(f); i++) {
    struct rondo_request *r = eng_pending_at(f, i);
    if (r == NULL || r->announced)
      continue;
    if (r->group == NULL) {
      r->announced = 1;
      continue;
    }
    eng_failed_group_t *g = failed_group(failed, r->sig.group);
    if (g != NULL) {
      char msg[1024];
      snprintf(msg, sizeof msg, "'%s' fails with its group, which failed before it came: %s",
               r->name, g->message != NULL ? g->message : "");
      rondo_status_t st = g->status;
      failed_group_count(failed, g);
      /* a refusing rank gets its own reason, as from a response */
      if (r->sig.kind == ENG_REFUSED)
        eng_complete(f, r, RONDO_ERR_INVALID_ARG, r->reason);
      else
        eng_complete(f, r, st, msg);
      continue;
    }
    int have = 0;
    for (size_t j = 0; j < eng_pending_count(f); j++) {
      struct rondo_request *q = eng_pending_at(f, j);
      have += q != NULL && q->group != NULL && strcmp(q->group, r->group) == 0;
    }
    if (have >= r->group_size)
      for (size_t j = 0; j < eng_pending_count(f); j++) {
        struct rondo_request *q = eng_pending_at(f, j);
        if (q != NULL && q->group != NULL && strcmp(q->group, r->group) == 0)
          q->announced = 1;
      }
  }
}

void eng_groups_free(eng_failed_groups_t *f)
{
  for (int i = 0; i < f->n; i++)
    free(f->groups[i].message);
  f->n = 0;
}
