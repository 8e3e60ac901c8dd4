/* Gradient sets of real models, for rondo-bench fusion and
 * bench/engine_bench: tensor names and float32 element counts, in the order
 * a forward pass creates them (a backward pass produces them in reverse). */
#ifndef RONDO_BENCH_MODELS_H
#define RONDO_BENCH_MODELS_H

#include <stddef.h>

typedef struct {
  char label[32];
  int n, cap;
  size_t *count;        /* [n] float32 elements */
  char (*name)[64];     /* [n] */
  size_t total;         /* sum of count */
} model_t;

/* which: "resnet50", "bert-base", "vgg16", or NULL for `tensors` tensors of
 * `bytes` bytes each. Returns 0, or -1 when out of memory or unknown. */
int model_build(model_t *m, const char *which, size_t tensors, size_t bytes);
void model_free(model_t *m);

#endif
