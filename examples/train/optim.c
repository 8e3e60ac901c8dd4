/*
 * SGD with momentum and weight decay (PyTorch's formulation, dampening 0),
 * and the learning-rate schedule. The schedule is a function of how many
 * epochs of data have been seen, not of the step count, so it does not
 * depend on the batch size, the rank count or --max-steps: a run cut short
 * or resumed follows the same curve as an uninterrupted one.
 */
#include <math.h>

#include "examples/train/train.h"

double optim_lr(const train_opts_t *o, double e)
{
  if (e < o->warmup_epochs)
    return o->lr * e / o->warmup_epochs;
  switch (o->schedule) {
  case SCHEDULE_COSINE: {
    double span = (double)o->epochs - o->warmup_epochs;
    double t = span > 0 ? (e - o->warmup_epochs) / span : 1;
    return 0.5 * o->lr * (1 + cos(M_PI * (t < 1 ? t : 1)));
  }
  case SCHEDULE_STEP:
    return o->lr * pow(o->gamma, floor((e - o->warmup_epochs) / o->step_epochs));
  default:
    return o->lr;
  }
}

size_t optim_slice_start(size_t n, int i, int parts)
{
  if (i <= 0)
    return 0;
  if (i >= parts)
    return n;
  size_t at = n / (size_t)parts * (size_t)i;
  return at - at % OPTIM_SLICE_ALIGN;
}

void optim_step(mlp_t *m, float lr, float momentum, float weight_decay)
{
  optim_step_range(m, lr, momentum, weight_decay, 0, m->nparams);
}

void optim_step_range(mlp_t *m, float lr, float momentum, float weight_decay, size_t lo,
                      size_t hi)
{
  optim_step_slice(m, m->params + lo, m->velocity + lo, m->grads + lo, lo, hi, lr, momentum,
                   weight_decay);
}

void optim_step_slice(const mlp_t *m, float *w, float *vel, const float *g, size_t lo,
                      size_t hi, float lr, float momentum, float weight_decay)
{
  for (int i = 0; i < m->nvars; i++) {
    const var_t *v = &m->vars[i];
    size_t first = v->offset > lo ? v->offset : lo;
    size_t end = v->offset + v->count < hi ? v->offset + v->count : hi;
    float wd = v->is_weight ? weight_decay : 0.0f;
    if (first >= end)
      continue;
    for (size_t k = first - lo; k < end - lo; k++) {
      float grad = g[k] + wd * w[k];
      vel[k] = momentum * vel[k] + grad;
      w[k] -= lr * vel[k];
    }
  }
}
