/* Fusion planning (plan.h). */
#include "engine/plan.h"

#include <string.h>

#include "base/base.h"

/* Host and device requests are never fused together, nor reduces to
 * different roots. (A reduce-scatter's or allgather's mem is always host,
 * an allgather's algo, op and scales always AUTO, SUM and 1: they group by
 * what differs.) */
static int same_group(const eng_sig_t *a, const eng_sig_t *b)
{
  return a->dtype == b->dtype && a->op == b->op && a->prescale == b->prescale &&
         a->postscale == b->postscale && a->algo == b->algo && a->mem == b->mem &&
         a->root == b->root;
}

/* Closes a batch of the nb indices in from. */
static void emit(eng_plan_t *p, size_t *used, const size_t *from, size_t nb)
{
  memcpy(p->order + *used, from, nb * sizeof *from);
  *used += nb;
  p->ends[p->nbatches++] = *used;
}

void eng_plan(const eng_item_t *it, size_t n, eng_plan_limits_t lim, eng_plan_t *p)
{
  size_t used = 0;
  p->nbatches = 0;
  memset(p->taken, 0, n);
  for (size_t g = 0; g < n; g++) {
    if (p->taken[g])
      continue;
    const eng_sig_t *key = &it[g].resp->sig;
    size_t nb = 0, bytes = 0, esize = rondo_dtype_size((rondo_dtype_t)key->dtype);
    for (size_t i = g; i < n; i++) {
      if (p->taken[i] || !same_group(key, &it[i].resp->sig))
        continue;
      size_t b = it[i].elems * esize;
      p->taken[i] = 1;
      if (b > lim.max_tensor) {
        emit(p, &used, &i, 1);
        continue;
      }
      if (nb > 0 && (lim.threshold == 0 || bytes + b > lim.threshold)) {
        emit(p, &used, p->open, nb);
        nb = 0;
        bytes = 0;
      }
      p->open[nb++] = i;
      bytes += b;
    }
    if (nb > 0)
      emit(p, &used, p->open, nb);
  }
}
