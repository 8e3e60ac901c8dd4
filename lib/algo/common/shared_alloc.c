/*
 * rondo_mem_alloc's allocations (shared_alloc.h). Each is one node-shared
 * window; the comm keeps them in a table of slots, and an allocation's
 * index is its slot. Both calls agree over the whole comm twice: before
 * (the same call everywhere; a free names the same allocation) and after
 * (every node's window was made), so a failure anywhere fails every rank
 * and the tables stay alike.
 */
#include "algo/common/shared_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algo/agree/agree.h"
#include "algo/common/shared_window.h"
#include "topo/topo.h"

/* One slot: a live allocation, or win.seg NULL. */
typedef struct {
  shwin_t win;
  size_t bytes; /* this rank's part's */
} slot_t;

struct shalloc_table {
  int slots;
  slot_t *slot; /* [slots] */
};

/* This rank's part of a slot's allocation; NULL for a free slot. */
static char *own_part(const slot_t *a)
{
  return a->win.seg != NULL ? a->win.seg[a->win.rank] : NULL;
}

/* The table, made on first use; NULL (with the error set) without memory. */
static struct shalloc_table *table(rondo_comm_t comm)
{
  if (comm->shalloc == NULL)
    comm->shalloc = calloc(1, sizeof *comm->shalloc);
  if (comm->shalloc == NULL)
    rondo__fail(RONDO_ERR_NO_MEMORY, "rondo_mem_alloc: its table");
  return comm->shalloc;
}

/* The lowest free slot, the table grown for it; -1 without memory. */
static int free_slot(struct shalloc_table *t)
{
  for (int i = 0; i < t->slots; i++)
    if (t->slot[i].win.seg == NULL)
      return i;
  int n = t->slots ? 2 * t->slots : 4;
  slot_t *slot = realloc(t->slot, (size_t)n * sizeof *slot);
  if (slot == NULL)
    return -1;
  t->slot = slot;
  memset(t->slot + t->slots, 0, (size_t)(n - t->slots) * sizeof *slot);
  int first = t->slots;
  t->slots = n;
  return first;
}

rondo_status_t shalloc_create(rondo_comm_t comm, rondo_status_t local, size_t bytes, void **ptr)
{
  agree_sig_t sig = {.coll = AGREE_MEM_ALLOC};
  struct shalloc_table *t = local == RONDO_SUCCESS ? table(comm) : NULL;
  int slot = t != NULL ? free_slot(t) : -1;
  rondo_status_t st = local;
  if (st != RONDO_SUCCESS)
    ;
  else if (t == NULL)
    st = RONDO_ERR_NO_MEMORY;
  else if (slot < 0)
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "rondo_mem_alloc: its table");
  else if (bytes > (size_t)PTRDIFF_MAX / 2)
    st = rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_mem_alloc: %zu bytes is too many", bytes);
  /* The slot is the lowest free one on every rank: the tables are alike. */
  agree_sig_add(&sig, "allocation", slot);
  RONDO_CHECK(agree_call(comm, st, &sig));
  shwin_t w;
  st = shwin_create(comm->topo->node, bytes, 0, RONDO_SUCCESS, "rondo_mem_alloc's memory", &w);
  /* Every node made its window or none: now the whole comm. */
  agree_sig_t made = {.coll = AGREE_MEM_ALLOC};
  rondo_status_t all = agree_call(comm, st, &made);
  if (all != RONDO_SUCCESS) {
    if (st == RONDO_SUCCESS)
      shwin_free(&w, 1);
    return all;
  }
  t->slot[slot] = (slot_t){w, bytes};
  *ptr = w.seg[w.rank];
  LOG_DEBUG("rondo_mem_alloc: allocation %d, %zu bytes here", slot, bytes);
  return RONDO_SUCCESS;
}

/* The slot whose part on this rank starts at p, or -1. */
static int slot_of(const struct shalloc_table *t, const void *p)
{
  for (int i = 0; t != NULL && p != NULL && i < t->slots; i++)
    if (own_part(&t->slot[i]) == p)
      return i;
  return -1;
}

rondo_status_t shalloc_destroy(rondo_comm_t comm, void *ptr)
{
  struct shalloc_table *t = comm->shalloc;
  int slot = slot_of(t, ptr);
  rondo_status_t st = RONDO_SUCCESS;
  if (slot < 0 && ptr != NULL)
    st = rondo__fail(RONDO_ERR_INVALID_ARG,
                     "rondo_mem_free: %p is not the start of memory rondo_mem_alloc gave on "
                     "this comm",
                     ptr);
  agree_sig_t sig = {.coll = AGREE_MEM_FREE};
  agree_sig_add(&sig, "allocation", slot);
  RONDO_CHECK(agree_call(comm, st, &sig));
  if (slot < 0) /* NULL everywhere */
    return RONDO_SUCCESS;
  shwin_free(&t->slot[slot].win, 1);
  t->slot[slot].bytes = 0;
  return RONDO_SUCCESS;
}

void shalloc_destroy_all(rondo_comm_t comm, int mpi_usable)
{
  struct shalloc_table *t = comm->shalloc;
  if (t == NULL)
    return;
  for (int i = 0; i < t->slots; i++)
    if (t->slot[i].win.seg != NULL)
      shwin_free(&t->slot[i].win, mpi_usable);
  free(t->slot);
  free(t);
  comm->shalloc = NULL;
}

int shalloc_find(rondo_comm_t comm, const void *p, size_t bytes, size_t *offset)
{
  const struct shalloc_table *t = comm->shalloc;
  const char *c = p;
  for (int i = 0; t != NULL && c != NULL && bytes > 0 && i < t->slots; i++) {
    const slot_t *a = &t->slot[i];
    const char *base = own_part(a);
    if (base != NULL && c >= base && (size_t)(c - base) <= a->bytes &&
        bytes <= a->bytes - (size_t)(c - base)) {
      *offset = (size_t)(c - base);
      return i;
    }
  }
  return -1;
}

void shalloc_sig_add(rondo_comm_t comm, agree_sig_t *sig, rondo_algo_t algo,
                     const void *sendbuf, size_t bytes, size_t total)
{
  size_t offset;
  if (comm->node_count == 1 && algo == RONDO_ALGO_SHM && total >= SHALLOC_MIN_BYTES)
    agree_sig_add(sig, SHALLOC_SIG_FIELD, shalloc_find(comm, sendbuf, bytes, &offset));
}

const char *shalloc_peer(rondo_comm_t comm, int index, int q, size_t offset)
{
  return comm->shalloc->slot[index].win.seg[q] + offset;
}
