/*
 * The collectives other than all-reduce: reduce-scatters and allgathers,
 * fused (each kind gets all its items of a cycle, in response order, and
 * runs them in batches, as all-reduces are: fusion.h), and broadcast and
 * all-to-all, which run one item at a time. execute.c calls them.
 */
#ifndef RONDO_ENGINE_COLLECTIVES_H
#define RONDO_ENGINE_COLLECTIVES_H

#include <stddef.h>

#include "engine/fusion.h"
#include "engine/responses.h"


/* All the cycle's items of the kind, in response order. */
void eng_reduce_scatter_run(eng_run_t *e, eng_item_t *items, size_t n);
void eng_allgather_run(eng_run_t *e, eng_item_t *items, size_t n);
/* One item. */
void eng_run_broadcast(eng_run_t *e, eng_item_t *it);
void eng_run_alltoall(eng_run_t *e, eng_item_t *it);

#endif /* RONDO_ENGINE_COLLECTIVES_H */
