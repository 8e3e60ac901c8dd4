/*
 * The trainer's state as a whole: the variables compared across ranks (the
 * mirror check), checkpoints and the weight file. A strategy that shards
 * the variables or the momentum hands over whole copies for these
 * (strategy_ops_t.whole); the others' arrays are the model's own.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "examples/train/trainer.h"

/* The whole variables (velocity 0) or momentum (1) on every rank: the
 * model's own array, or a copy release_whole frees. Collective. */
static float *whole(trainer_t *t, int velocity)
{
  if (t->strategy->whole == NULL)
    return velocity ? t->m.velocity : t->m.params;
  return t->strategy->whole(t, velocity);
}

static void release_whole(trainer_t *t, float *array)
{
  if (array != t->m.params && array != t->m.velocity)
    free(array);
}

/* Compares a CRC-32 of every variable across ranks. On a difference every
 * rank prints which variables differ on which ranks and returns -1. */
int trainer_mirror_check(trainer_t *t)
{
  int32_t mine[2 * TRAIN_MAX_LAYERS], *all = malloc(sizeof mine * (size_t)t->size);
  if (all == NULL)
    trainer_die(t, "no memory for the mirror check");
  float *params = whole(t, 0);
  for (int i = 0; i < t->m.nvars; i++)
    mine[i] = (int32_t)crc32_z(0L, (const Bytef *)(params + t->m.vars[i].offset),
                               t->m.vars[i].count * sizeof(float));
  release_whole(t, params);
  TRAINER_CHECK(t, rondo_allgather(t->comm, mine, all, (size_t)t->m.nvars, RONDO_INT32));
  t->checked_at = t->step;
  char msg[1024] = "";
  size_t used = 0;
  int bad = 0;
  for (int i = 0; i < t->m.nvars; i++) {
    int listed = 0;
    for (int r = 1; r < t->size && used < sizeof msg; r++) {
      if (all[r * t->m.nvars + i] == all[i])
        continue;
      if (listed == 0)
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s on rank", bad ? "; " : "",
                                 t->m.vars[i].name);
      if (used < sizeof msg)
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s %d", listed ? "," : "", r);
      listed = bad = 1;
    }
  }
  free(all);
  if (!bad)
    return 0;
  fprintf(stderr,
          "rondo-train: rank %d: the mirrored variables diverged after step %lld: "
          "different from rank 0's: %s\n",
          t->rank, t->step, msg);
  fflush(stderr);
  return -1;
}

int trainer_save_checkpoint(trainer_t *t)
{
  char err[1024] = "";
  int ok = 1;
  float *params = whole(t, 0), *velocity = whole(t, 1);
  if (t->rank == 0) {
    ckpt_header_t h = {0};
    h.step = t->step;
    h.epoch = t->epoch;
    h.offset = t->offset;
    h.seed = t->o.seed;
    h.batch = t->o.batch;
    snprintf(h.dataset, sizeof h.dataset, "%s", t->data.name);
    h.train_samples = t->data.train.n;
    h.epochs = t->o.epochs;
    h.schedule = t->o.schedule;
    h.lr = t->o.lr;
    h.momentum = t->o.momentum;
    h.weight_decay = t->o.weight_decay;
    h.warmup_epochs = t->o.warmup_epochs;
    h.step_epochs = t->o.step_epochs;
    h.gamma = t->o.gamma;
    h.nsizes = t->m.nlayers + 1;
    memcpy(h.sizes, t->m.sizes, sizeof h.sizes);
    ok = ckpt_save(t->o.checkpoint, &h, params, velocity, t->m.nparams, err, sizeof err) == 0;
  }
  release_whole(t, params);
  release_whole(t, velocity);
  t->saved_at = t->step;
  return trainer_agree(t, ok, err, sizeof err);
}

int trainer_save_weights(trainer_t *t)
{
  char err[1024] = "";
  float *params = whole(t, 0);
  int ok = t->rank != 0 ||
           weights_save(t->o.save_weights, params, t->m.nparams, err, sizeof err) == 0;
  release_whole(t, params);
  return trainer_agree(t, ok, err, sizeof err);
}
