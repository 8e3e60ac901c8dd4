/*
 * The reduce-scatter and all-gather families as the selector sees them:
 * their menus (each family's table.c), the member a knob forces, what the
 * selector is told about a call of uneven blocks, the choice and its cache
 * (the contract is in blocks.h; what the selector is told about a call
 * is in family_input.c). The all-reduce's own dispatch
 * (lib/algo/allreduce/dispatch.c) has more to it (device memory, the host
 * path of staged, adasum) and keeps its own.
 */
#include "algo/common/blocks.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const select_menu_t *menu_of(rondo_coll_t coll)
{
  switch (coll) {
  case RONDO_COLL_ALLREDUCE:
    return algo_menu();
  case RONDO_COLL_REDUCE_SCATTER:
    return algo_rs_menu();
  case RONDO_COLL_ALLGATHER:
    return algo_ag_menu();
  default:
    return NULL;
  }
}

const algo_desc_t *algo_family_find(rondo_coll_t coll, rondo_algo_t id)
{
  const select_menu_t *m = menu_of(coll);
  /* select is a descriptor's first member: a row points at its descriptor */
  const select_algo_t *a = m != NULL ? select_menu_find(m, id) : NULL;
  return (const algo_desc_t *)a;
}

const algo_desc_t *algo_family_find_name(rondo_coll_t coll, const char *name)
{
  const select_menu_t *m = menu_of(coll);
  for (int i = 0; m != NULL && name != NULL && i < m->n; i++)
    if (strcmp(m->algo[i]->name, name) == 0)
      return (const algo_desc_t *)m->algo[i];
  return NULL;
}

static char names[RONDO_COLL_COUNT][256];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void make_names(void)
{
  for (int c = 0; c < RONDO_COLL_COUNT; c++) {
    const select_menu_t *m = menu_of((rondo_coll_t)c);
    for (int i = 0; i < m->n; i++) {
      size_t used = strlen(names[c]);
      snprintf(names[c] + used, sizeof names[c] - used, "%s%s", i ? ", " : "",
               m->algo[i]->name);
    }
  }
}

const char *algo_family_names(rondo_coll_t coll)
{
  pthread_once(&names_once, make_names);
  return (unsigned)coll < RONDO_COLL_COUNT ? names[coll] : "";
}

rondo_algo_t algo_family_choose(rondo_comm_t comm, const select_input_t *in,
                                select_result_t *res)
{
  select_params_t params = algo_params(comm);
  /* the knob forces calls on its member's memory: a host member's leaves
   * device calls to AUTO, nccl's and staged's host calls */
  rondo_algo_t forced = comm->forced_family[in->coll];
  const algo_desc_t *f = forced != RONDO_ALGO_AUTO ? algo_family_find(in->coll, forced) : NULL;
  if (f != NULL && f->select.mem != in->mem)
    forced = RONDO_ALGO_AUTO;
  rondo_algo_t algo = select_choose(&params, menu_of(in->coll), comm->tuning, forced, in, res);
  LOG_DEBUG("%s of %zu bytes on %d ranks / %d nodes: %s (%s)", rondo_coll_name(in->coll),
            in->bytes, comm->size, in->nodes,
            algo == RONDO_ALGO_AUTO ? "none" : rondo_algo_name(algo), res->reason);
  return algo;
}

rondo_status_t algo_family_check(rondo_comm_t comm, rondo_algo_t algo, const select_input_t *in,
                                 const char **why)
{
  (void)comm;
  const char *coll = rondo_coll_name(in->coll);
  const algo_desc_t *d = algo_family_find(in->coll, algo);
  const char *reason = NULL;
  rondo_status_t st = RONDO_SUCCESS;
  if ((unsigned)algo >= RONDO_ALGO_COUNT || algo == RONDO_ALGO_AUTO) {
    reason = "not a rondo_algo_t";
    st = rondo__fail_quiet(RONDO_ERR_INVALID_ALGO, "algorithm %d is not a rondo_algo_t (1..%d)",
                           (int)algo, RONDO_ALGO_COUNT - 1);
  } else if (d == NULL) {
    reason = in->coll == RONDO_COLL_REDUCE_SCATTER ? "it is not a reduce-scatter algorithm"
                                                    : "it is not an all-gather algorithm";
    st = rondo__fail_quiet(RONDO_ERR_UNSUPPORTED, "%s: %s (%s)", rondo_algo_name(algo), reason,
                           algo_family_names(in->coll));
  } else {
    select_candidate_t c;
    select_judge(&d->select, in, &c);
    if (!c.can_run)
      reason = c.why_not;
    else if (d->blocks == NULL)
      reason = "not built into this library";
    if (reason != NULL)
      st = rondo__fail_quiet(RONDO_ERR_UNSUPPORTED, "the %s %s cannot run this call: %s",
                             d->select.name, coll, reason);
    else
      reason = c.why_not;
  }
  if (why != NULL)
    *why = reason;
  return st;
}

rondo_status_t algo_family_resolve(rondo_comm_t comm, const select_input_t *in,
                                   rondo_algo_t *algo)
{
  struct comm_last_choice *last = &comm->last_family[in->coll];
  if (*algo == RONDO_ALGO_AUTO && last->algo != RONDO_ALGO_AUTO && last->count == in->count &&
      last->block_max == in->block_max && last->blocks_equal == in->blocks_equal &&
      last->dtype == in->dtype && last->op == in->op && last->mem == (int)in->mem) {
    *algo = last->algo;
    return RONDO_SUCCESS; /* checked when it was chosen */
  }
  int chosen = *algo == RONDO_ALGO_AUTO;
  if (chosen) {
    select_result_t res;
    *algo = algo_family_choose(comm, in, &res);
    if (*algo == RONDO_ALGO_AUTO)
      return rondo__fail(RONDO_ERR_UNSUPPORTED, "no %s algorithm is eligible: %s",
                         rondo_coll_name(in->coll), res.reason);
  }
  /* a knob may force one that cannot run */
  rondo_status_t st = algo_family_check(comm, *algo, in, NULL);
  if (st != RONDO_SUCCESS) {
    LOG_ERROR("%s", rondo_last_error());
    return st;
  }
  if (chosen) {
    last->count = in->count;
    last->block_max = in->block_max;
    last->blocks_equal = in->blocks_equal;
    last->dtype = in->dtype;
    last->op = in->op;
    last->mem = (int)in->mem;
    last->algo = *algo;
  }
  return RONDO_SUCCESS;
}

int algo_family_folds_check(rondo_comm_t comm, rondo_coll_t coll, rondo_algo_t algo,
                            size_t count, size_t bytes)
{
  const algo_desc_t *d = algo_family_find(coll, algo);
  return (algo == RONDO_ALGO_SHM && count > 0 && agree_board_active(comm) && comm->shm != NULL &&
          !agree_skip) ||
         agree_inline_fits(comm, algo, count, bytes) ||
         agree_rider_fits(comm, d != NULL && d->select.carries_check, count);
}

rondo_status_t algo_family_refuse(rondo_comm_t comm, rondo_status_t st, const agree_sig_t *agree)
{
  if (st == RONDO_SUCCESS || agree == NULL)
    return st;
  return agree_call(comm, st, agree); /* st itself: this rank's failure comes first */
}
