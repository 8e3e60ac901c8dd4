/*
 * --strategy mirrored, the default: tf.distribute's MirroredStrategy and
 * MultiWorkerMirroredStrategy. Every rank holds the variables and the
 * momentum. Backward hands each layer's gradients to the engine as soon as
 * they are final, one all-reduce request per variable, so their sums run
 * while backward goes on; the step waits for them only before the update,
 * which every rank applies to all of the variables alike.
 *
 * The sum is scaled by 1 / (samples in the global batch) inside the
 * all-reduce (postscale), which is exact for a short last batch and for
 * uneven splits across ranks. central.c reuses the gradients' part.
 */
#include "examples/train/trainer.h"

void trainer_on_done(rondo_request_t req, rondo_status_t st, void *user)
{
  (void)req;
  (void)st;
  *(double *)user = train_now();
}

double trainer_wait(trainer_t *t, rondo_request_t *req, int n, const char *what)
{
  double t0 = train_now();
  int failed = 0;
  for (int i = 0; i < n; i++) {
    if (req[i] == NULL)
      continue;
    if (rondo_wait(&req[i]) != RONDO_SUCCESS && !failed) {
      failed = 1;
      fprintf(stderr, "rondo-train: rank %d: step %lld: the %s failed: %s\n", t->rank,
              t->step + 1, what, rondo_last_error());
    }
  }
  return failed ? -1 : train_now() - t0;
}

void mirrored_grads_ready(trainer_t *t, int layer)
{
  if (t->nreq == 0)
    t->first_submit = train_now();
  for (int i = 2 * (layer - 1); i <= 2 * (layer - 1) + 1; i++) {
    const var_t *v = &t->m.vars[i];
    float *g = t->m.grads + v->offset;
    if (t->size == 1) { /* nothing to communicate: the sum is the local one */
      float scale = (float)t->ropts.postscale;
      for (size_t k = 0; k < v->count; k++)
        g[k] *= scale;
      continue;
    }
    t->ropts.user = &t->done_at[t->nreq];
    if (rondo_allreduce_async(t->comm, v->name, g, g, v->count, RONDO_FLOAT32, RONDO_SUM,
                              &t->ropts, &t->req[t->nreq]) != RONDO_SUCCESS)
      trainer_die(t, "submitting %s: %s", v->name, rondo_last_error());
    t->nreq++;
  }
}

double mirrored_wait_grads(trainer_t *t)
{
  double waited = trainer_wait(t, t->req, t->nreq, "gradient all-reduce");
  t->nreq = 0;
  return waited;
}

void mirrored_update(trainer_t *t, float lr)
{
  optim_step(&t->m, lr, (float)t->o.momentum, (float)t->o.weight_decay);
}

void mirrored_describe(const trainer_t *t, char *buf, size_t len)
{
  double mib = (double)(2 * t->m.nparams * sizeof(float)) / (1 << 20);
  snprintf(buf, len,
           "mirrored: every rank holds the variables and momentum (%.1f MiB) and applies the "
           "update",
           mib);
}
