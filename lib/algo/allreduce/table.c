/*
 * The algorithm table: one row per algorithm, pointing at the descriptor in
 * the algorithm's own file. Everything that needs to know the algorithms
 * reads this list: the selector (as a menu), the tuning parser and
 * RONDO_ALLREDUCE_ALGO (names), rondo_algo_name()/rondo_algo_from_name(),
 * rondo_algo_available() and, through them, rondo-info, rondo-bench and the
 * tests. Adding an algorithm: its file with a descriptor, its id in rondo.h,
 * one row here (DEVELOPERS.md). The order is the selector's preference on a
 * tie (on one rank every algorithm is a copy, and mpi wins).
 */
#include "algo/algo.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The rows, in id order (row i is id i + 1: tests/unit/test_select.c
 * checks it). Each is the selector's part of a descriptor, its first
 * member, so the same list is the selector's menu and, through desc(),
 * the table of descriptors. */
static const select_algo_t *const rows[] = {
    &algo_mpi.select,
    &algo_ring.select,
    &algo_recursive_doubling.select,
    &algo_rabenseifner.select,
    &algo_shm.select,
    &algo_hierarchical.select,
    &algo_nccl.select,
    &algo_staged.select,
    &algo_hierarchical_nccl.select,
    &algo_adasum.select,
};

enum { ALGOS = sizeof rows / sizeof rows[0] };

_Static_assert(ALGOS == (int)RONDO_ALGO_ADASUM, "one row per all-reduce id, from 1 to adasum");
_Static_assert(RONDO_ALGO_COUNT <= SELECT_MAX_ALGOS, "ids fit the selector's bit sets");
_Static_assert(offsetof(algo_desc_t, select) == 0, "a row points at its descriptor too");

/* First in the chain of menus the tuning parser reads (select.h): the
 * reduce-scatter and all-gather families follow. */
extern const select_menu_t algo_rs_menu_chained;
static const select_menu_t menu = {ALGOS, rows, RONDO_COLL_ALLREDUCE, &algo_rs_menu_chained};

/* The descriptor a row belongs to (select is its first member). */
static const algo_desc_t *desc(int i) { return (const algo_desc_t *)rows[i]; }

const select_menu_t *algo_menu(void) { return &menu; }

const algo_desc_t *algo_find(rondo_algo_t id)
{
  int i = (int)id - 1; /* rows are in id order */
  return i >= 0 && i < ALGOS ? desc(i) : NULL;
}

const algo_desc_t *algo_find_name(const char *name)
{
  for (int i = 0; name != NULL && i < ALGOS; i++)
    if (strcmp(rows[i]->name, name) == 0)
      return desc(i);
  return NULL;
}

static char names[256];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void make_names(void)
{
  for (int i = 0; i < ALGOS; i++) {
    size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", rows[i]->name);
  }
}

const char *algo_names(void)
{
  pthread_once(&names_once, make_names);
  return names;
}

/* ---- the public names ---------------------------------------------------------
 * One id space for every family: a name is the all-reduce member's where
 * there is one, else the reduce-scatter's or the all-gather's. */

static const select_algo_t *any_family(rondo_algo_t id)
{
  for (const select_menu_t *m = &menu; m != NULL; m = m->next) {
    const select_algo_t *a = select_menu_find(m, id);
    if (a != NULL)
      return a;
  }
  return NULL;
}

const char *rondo_algo_name(rondo_algo_t algo)
{
  if (algo == RONDO_ALGO_AUTO)
    return "auto";
  const select_algo_t *a = any_family(algo);
  return a ? a->name : NULL;
}

rondo_status_t rondo_algo_from_name(const char *name, rondo_algo_t *algo)
{
  int is_auto = name != NULL && strcmp(name, "auto") == 0;
  for (int id = 1; name != NULL && !is_auto && id < RONDO_ALGO_COUNT; id++) {
    const char *n = rondo_algo_name((rondo_algo_t)id);
    if (n != NULL && strcmp(n, name) == 0 && algo != NULL) {
      *algo = (rondo_algo_t)id;
      return RONDO_SUCCESS;
    }
  }
  if (!is_auto || algo == NULL) {
    char all[256] = "auto";
    for (int id = 1; id < RONDO_ALGO_COUNT; id++) {
      size_t used = strlen(all);
      snprintf(all + used, sizeof all - used, ", %s", rondo_algo_name((rondo_algo_t)id));
    }
    return rondo__fail_quiet(RONDO_ERR_INVALID_ALGO, "'%s' is not an algorithm (%s)",
                             name ? name : "(null)", all);
  }
  *algo = RONDO_ALGO_AUTO;
  return RONDO_SUCCESS;
}
