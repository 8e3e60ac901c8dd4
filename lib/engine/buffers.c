/* What running a cycle needs (buffers.h). */
#include "engine/buffers.h"

#include <stdint.h>
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
  b->rows_cap = b->rows_held = 2 * (size_t)ranks;
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
  free(b->order);
  free(b->ends);
  free(b->open);
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
      !grow_array(&b->order, cap, sizeof *b->order) ||
      !grow_array(&b->ends, cap, sizeof *b->ends) ||
      !grow_array(&b->open, cap, sizeof *b->open) ||
      !grow_array(&b->counts, cap, sizeof *b->counts))
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: room for %zu requests in a cycle", cap);
  b->cap = cap;
  return RONDO_SUCCESS;
}

/* *p holds at least n elements of size bytes on this rank (*held: how many
 * it holds). */
static rondo_status_t hold(void **p, size_t *held, size_t n, size_t size, const char *what)
{
  if (n <= *held)
    return RONDO_SUCCESS;
  if (n > SIZE_MAX / size)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: %s of %zu x %zu bytes", what, n, size);
  void *q = realloc(*p, n * size);
  if (q == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "engine: %s of %zu bytes", what, n * size);
  *p = q;
  *held = n;
  return RONDO_SUCCESS;
}

/* *p holds at least n elements on every rank of comm, or on none. *agreed
 * is the same on every rank (it changes only here, after an agreement), so
 * every rank skips the agreement alike when the buffer is big enough. */
static rondo_status_t grow_agreed(void **p, size_t *held, size_t *agreed, size_t n, size_t size,
                                  MPI_Comm comm, const char *what)
{
  if (n <= *agreed)
    return RONDO_SUCCESS;
  rondo_status_t st = hold(p, held, n, size, what);
  st = rondo__agree_ready(comm, st, what);
  /* Only a size every rank holds counts: the next call retries alike. */
  if (st == RONDO_SUCCESS)
    *agreed = n;
  return st;
}

rondo_status_t eng_fusion_reserve(eng_buffers_t *b, MPI_Comm comm, size_t bytes)
{
  return grow_agreed(&b->fusion, &b->fusion_held, &b->fusion_bytes, bytes, 1, comm,
                     "a fusion buffer");
}

rondo_status_t eng_fusion_hold(eng_buffers_t *b, size_t bytes)
{
  return hold(&b->fusion, &b->fusion_held, bytes, 1, "a fusion buffer");
}

void eng_fusion_agreed(eng_buffers_t *b, size_t bytes)
{
  if (bytes > b->fusion_bytes)
    b->fusion_bytes = bytes;
}

rondo_status_t eng_rows_reserve(eng_buffers_t *b, MPI_Comm comm, size_t entries)
{
  return grow_agreed((void **)&b->rows, &b->rows_held, &b->rows_cap, entries, sizeof *b->rows, comm,
                     "room for the allgathers' rows");
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
