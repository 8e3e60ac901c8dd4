/*
 * The strategies, one row each: where rondo-train's strategies differ, main.c
 * and setup.c call the row's entry instead of asking which strategy runs.
 * docs/train.md, "Strategies", describes each; each has its own file.
 */
#include "examples/train/trainer.h"

static const strategy_ops_t rows[STRATEGY_COUNT] = {
  [STRATEGY_MIRRORED] = {
    .id = STRATEGY_MIRRORED,
    .grads_ready = mirrored_grads_ready,
    .wait_grads = mirrored_wait_grads,
    .update = mirrored_update,
    .describe = mirrored_describe,
  },
  [STRATEGY_CENTRAL_STORAGE] = {
    .id = STRATEGY_CENTRAL_STORAGE,
    .create = central_create,
    .grads_ready = mirrored_grads_ready,
    .wait_grads = mirrored_wait_grads,
    .update = central_update,
    .describe = central_describe,
    .destroy = central_destroy,
  },
  [STRATEGY_PARAMETER_SERVER] = {
    .id = STRATEGY_PARAMETER_SERVER,
    .create = ps_create,
    .epoch = ps_epoch,
    .describe = ps_describe,
    .final_json = ps_final_json,
    .destroy = ps_destroy,
  },
  [STRATEGY_SHARDED] = {
    .id = STRATEGY_SHARDED,
    .create = sharded_create,
    .grads_ready = sharded_grads_ready,
    .wait_grads = sharded_wait_grads,
    .update = sharded_update,
    .whole = sharded_whole,
    .describe = sharded_describe,
    .destroy = sharded_destroy,
  },
};

const strategy_ops_t *strategy_row(strategy_t id)
{
  return &rows[id];
}
