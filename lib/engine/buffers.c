/* What running a cycle needs (buffers.h). */
#include "engine/buffers.h"

#include <stdlib.h>

/* Grows *p to n elements of size each; on failure *p is unchanged. */
static int grow_array(void *p, size_t n, size_t size)
{
  void *q = realloc(*(void **)p, n * size);
  if (q == NULL)
    return 0;
  *(void **)p = q;
  return 1;
}

rondo_status_t eng_buffers_init(eng_buffers_t *b, int ranks)
{
  b->rows = malloc(2 * (size_t)ranks * sizeof *b->rows);
  b->sizes = malloc(2 * (size_t)ranks * sizeof *b->sizes);
  if (b->rows == NULL || b->sizes == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: counts for %d ranks", ranks);
  return eng_buffers_reserve(b, 64);
}

void eng_buffers_free(eng_buffers_t *b)
{
  free(b->items);
  free(b->kind_items);
  free(b->batch);
  free(b->found);
  free(b->reqs);
  free(b->taken);
  free(b->counts);
  free(b->rows);
  free(b->sizes);
  free(b->fusion);
  free(b->scratch);
}

rondo_status_t eng_buffers_reserve(eng_buffers_t *b, size_t n)
{
  if (n <= b->cap)
    return RONDO_SUCCESS;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < n)
    cap *= 2;
  /* Each array grows on its own; cap rises only when all have. */
  if (!grow_array(&b->items, cap, sizeof *b->items) ||
      !grow_array(&b->kind_items, cap, sizeof *b->kind_items) ||
      !grow_array(&b->batch, cap, sizeof *b->batch) ||
      !grow_array(&b->found, cap, sizeof *b->found) ||
      !grow_array(&b->reqs, cap, sizeof *b->reqs) ||
      !grow_array(&b->taken, cap, sizeof *b->taken) ||
      !grow_array(&b->counts, cap, sizeof *b->counts))
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: room for %zu requests in a cycle", cap);
  b->cap = cap;
  return RONDO_SUCCESS;
}

rondo_status_t eng_fusion_reserve(eng_buffers_t *b, MPI_Comm comm, size_t bytes)
{
  if (bytes <= b->fusion_bytes)
    return RONDO_SUCCESS; /* the same on every rank: the sizes grow alike */
  rondo_status_t st = RONDO_SUCCESS;
  void *p = realloc(b->fusion, bytes);
  if (p == NULL)
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "engine: a fusion buffer of %zu bytes", bytes);
  else
    b->fusion = p;
  st = rondo__agree_ready(comm, st, "a fusion buffer");
  /* Only a size every rank holds counts: the next batch retries alike. */
  if (st == RONDO_SUCCESS)
    b->fusion_bytes = bytes;
  return st;
}

rondo_status_t eng_scratch_reserve(eng_buffers_t *b, size_t bytes)
{
  if (bytes <= b->scratch_bytes)
    return RONDO_SUCCESS;
  void *p = realloc(b->scratch, bytes);
  if (p == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: %zu bytes of scratch", bytes);
  b->scratch = p;
  b->scratch_bytes = bytes;
  return RONDO_SUCCESS;
}
