/*
 * The collectives that run one by one (not fused): broadcast, allgather,
 * reduce-scatter and all-to-all. Each takes the items of its kind, in
 * response order.
 */
#ifndef RONDO_ENGINE_COLLECTIVES_H
#define RONDO_ENGINE_COLLECTIVES_H

#include <stddef.h>

#include "engine/responses.h"

struct engine;

void eng_run_broadcasts(struct engine *e, eng_item_t *items, size_t n);
void eng_run_allgathers(struct engine *e, eng_item_t *items, size_t n);
void eng_run_reduce_scatters(struct engine *e, eng_item_t *items, size_t n);
void eng_run_alltoalls(struct engine *e, eng_item_t *items, size_t n);

#endif /* RONDO_ENGINE_COLLECTIVES_H */
