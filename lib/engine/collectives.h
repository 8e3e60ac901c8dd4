/*
 * The collectives that run one by one (not fused): broadcast, allgather,
 * reduce-scatter and all-to-all. Each runs one item; execute.c calls them
 * in response order.
 */
#ifndef RONDO_ENGINE_COLLECTIVES_H
#define RONDO_ENGINE_COLLECTIVES_H

#include <stddef.h>

#include "engine/responses.h"

struct engine;

void eng_run_broadcast(struct engine *e, eng_item_t *it);
void eng_run_allgather(struct engine *e, eng_item_t *it);
void eng_run_reduce_scatter(struct engine *e, eng_item_t *it);
void eng_run_alltoall(struct engine *e, eng_item_t *it);

#endif /* RONDO_ENGINE_COLLECTIVES_H */
