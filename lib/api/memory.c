/*
 * rondo_mem_alloc and rondo_mem_free: memory that every rank of a node can
 * read, which the one-node reduce-scatter and all-gather read in place
 * (lib/algo/common/shared_alloc.c has the allocations, shm.c their use).
 */
#include "api/api.h"

#include "algo/common/shared_alloc.h"

rondo_status_t rondo_mem_alloc(rondo_comm_t comm, size_t bytes, void **ptr)
{
  if (ptr != NULL)
    *ptr = NULL;
  RONDO_CHECK(api_enter(comm));
  rondo_status_t st = ptr != NULL ? RONDO_SUCCESS
                                  : rondo__fail(RONDO_ERR_INVALID_ARG,
                                                "rondo_mem_alloc: the output pointer is NULL");
  return shalloc_create(comm, st, bytes, ptr);
}

rondo_status_t rondo_mem_free(rondo_comm_t comm, void *ptr)
{
  RONDO_CHECK(api_enter(comm));
  return shalloc_destroy(comm, ptr);
}
