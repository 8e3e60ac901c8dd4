/*
 * How a device collective other than the all-reduce runs (gpu.h's
 * gpu_coll_t), and the rule the nccl members share. The broadcast
 * (lib/algo/coll/bcast_device.c) and the reduce-scatter's and all-gather's
 * nccl and staged members (lib/algo/reduce_scatter/, lib/algo/allgather/)
 * run through it (docs/gpu.md).
 *
 * NCCL's way: one NCCL collective on the comm's stream, waited for as the
 * all-reduce is. Staged: the data go through the comm's pinned staging
 * buffer: copied down, the host collective, copied up. No pipelining here:
 * these collectives are rarer and smaller than gradient all-reduces.
 *
 * As in the staged all-reduce, a rank whose copy failed still takes part
 * in the host collective (from a buffer of its own, since the stream may
 * still hold the staging buffer), so that no rank waits there alone; every
 * rank returns the failure.
 */
#include "algo/common/gpu.h"

#include <stdlib.h>
#include <string.h>
const char *gpu_nccl_type_cannot_run(const select_input_t *in)
{
  if (in->mem != SELECT_MEM_DEVICE)
    return NULL; /* the selector's memory rule says it */
  if (!in->has_nccl)
    return "this rondo has no NCCL (configure --with-nccl)";
  if (dev_nccl_dtype(in->dtype) < 0)
    return "NCCL has no type for this dtype (int16: use staged)";
  return NULL;
}

const char *gpu_nccl_cannot_run(const select_input_t *in)
{
  const char *why = gpu_nccl_type_cannot_run(in);
  if (why != NULL || in->mem != SELECT_MEM_DEVICE)
    return why;
  if (in->gpu_shared > 0)
    return "two or more ranks share a GPU, which NCCL refuses (the GPUs line says which)";
  return NULL;
}

/* The staged path. entered: gpu_enter's result, agreed on before any data
 * move. */
static rondo_status_t staged(rondo_comm_t comm, gpu_state_t *g, rondo_status_t entered,
                             const gpu_coll_t *c)
{
  size_t need = c->in_place ? c->down_bytes : c->down_bytes + c->up_bytes;
  rondo_status_t st = entered == RONDO_SUCCESS ? gpu_stage(g, need) : entered;
  if ((st = rondo__agree_ready(comm->mpi, st, "its GPU state and staging buffer")) != RONDO_SUCCESS)
    return st;
  char *hin = g->stage, *spare = NULL;
  st = gpu_copy_wait(comm, g, hin, c->down, c->down_bytes, "a copy to the staging buffer");
  if (st != RONDO_SUCCESS && (spare = calloc(1, need ? need : 1)) != NULL)
    hin = spare; /* take part from a buffer of its own: the stream may hold the stage */
  char *hout = c->in_place ? hin : hin + c->down_bytes;
  rondo_status_t r = c->host(comm, hin, hout, c->ctx); /* always: the others are in it */
  if (st == RONDO_SUCCESS && r != RONDO_SUCCESS)
    st = gpu_fail(comm, r);
  if (st == RONDO_SUCCESS)
    st = gpu_copy_wait(comm, g, c->up, hout, c->up_bytes, "a copy from the staging buffer");
  free(spare);
  /* a rank that failed took part with a buffer of its own: every rank
   * learns whether every rank succeeded */
  if (st == RONDO_SUCCESS)
    st = gpu_heard(comm);
  return rondo__agree_ready(comm->mpi, st, "its part of the staged collective");
}

rondo_status_t gpu_coll_run(rondo_comm_t comm, const gpu_coll_t *c, int nccl)
{
  gpu_state_t *g = NULL;
  int prev = -1;
  rondo_status_t entered = gpu_enter(comm, &g, &prev), st;
  if (!nccl)
    st = staged(comm, g, entered, c);
  else if (entered != RONDO_SUCCESS)
    st = gpu_fail(comm, entered); /* the others hear it while they wait */
  else if ((st = gpu_nccl(comm, g, c->nccl, c->ctx)) == RONDO_SUCCESS)
    st = gpu_record_wait(comm, g, c->nccl_name);
  gpu_leave(g, prev);
  return st;
}
