/*
 * Fusion planning: a cycle's items of one kind and the limits in, batches
 * out. A pure function of what every rank holds alike (the responses and
 * the fusion threshold), so every rank plans the same batches in the same
 * order; fusion.c and collectives.c run them. tests/unit/test_plan.c
 * checks it without MPI.
 *
 * The rule: the items (in response order, each with its elems set) are
 * grouped by what must be equal to fuse them (dtype, op, prescale,
 * postscale, forced algorithm, memory, root), in order of first
 * appearance; each group is packed greedily, in response order, into
 * batches of at most threshold bytes (0: every item alone). An item above
 * max_tensor bytes is a batch of its own, placed where it is met (before
 * the batch its group is still filling).
 */
#ifndef RONDO_ENGINE_PLAN_H
#define RONDO_ENGINE_PLAN_H

#include <stddef.h>

#include "engine/responses.h"

typedef struct {
  size_t threshold;  /* a batch's most bytes (RONDO_FUSION_THRESHOLD); 0: no fusion */
  size_t max_tensor; /* an item above this many bytes runs alone */
} eng_plan_limits_t;

/* The plan, in arrays the caller provides (room for n items each). */
typedef struct {
  size_t *order;     /* the items' indices, batch after batch */
  size_t *ends;      /* batch b is order[b ? ends[b - 1] : 0 .. ends[b]) */
  size_t nbatches;
  size_t *open;      /* scratch: the batch being filled */
  char *taken;       /* scratch: the items already planned */
} eng_plan_t;

void eng_plan(const eng_item_t *items, size_t n, eng_plan_limits_t lim, eng_plan_t *plan);

#endif /* RONDO_ENGINE_PLAN_H */
