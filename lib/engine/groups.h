/*
 * Groups of requests (rondo_async_opts_t.group): announced together, once
 * all of them are here, and failed together. A group that failed on this
 * rank is remembered, so that its members submitted later fail at once.
 */
#ifndef RONDO_ENGINE_GROUPS_H
#define RONDO_ENGINE_GROUPS_H

#include <stdint.h>

#include "base/base.h"
#include "engine/inflight.h"

struct rondo_request;

typedef struct {
  uint64_t group;          /* the group's hash (eng_sig_t.group) */
  int left;                /* this rank's members not failed yet */
  rondo_status_t status;
  char *message;
} eng_failed_group_t;
#define ENG_FAILED_GROUPS 16

typedef struct {
  eng_failed_group_t groups[ENG_FAILED_GROUPS]; /* (cycles only) */
  int n;
} eng_failed_groups_t;

/* Marks the pending requests of f that may be announced this cycle (cycles
 * only); those of a group that failed here fail at once. */
void eng_groups_announce(eng_failed_groups_t *g, eng_flight_t *f);
/* req, a member of a group, fails (st, message) on this rank: the group's
 * later members fail with it. Before req is completed. */
void eng_group_failed(eng_failed_groups_t *g, const struct rondo_request *req,
                      rondo_status_t st, const char *message);
void eng_groups_free(eng_failed_groups_t *f);

#endif /* RONDO_ENGINE_GROUPS_H */
