/*
 * Broadcast, allgather and reduce-scatter on device buffers (docs/gpu.md).
 *
 * Where the comm can use NCCL (built with it, no GPU shared by two ranks:
 * the nccl all-reduce's rule), one NCCL collective on the comm's stream,
 * waited for as the all-reduce is. Elsewhere the data go through the comm's
 * pinned staging buffer: copied down, the host collective, copied up. No
 * pipelining here: these collectives are rarer and smaller than gradient
 * all-reduces.
 *
 * As in the staged all-reduce, a rank whose copy failed still takes part
 * in the host collective (from a buffer of its own, since the stream may
 * still hold the staging buffer), so that no rank waits there alone; every
 * rank returns the failure.
 */
#include "algo/common/gpu.h"

#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"

/* A device collective: the NCCL call, or the staged one's parts. */
typedef struct {
  gpu_enqueue_fn nccl;        /* queues the NCCL collective */
  const char *nccl_name;      /* for a timeout's message */
  /* staged: down_bytes from down into the stage, host() from hin to hout
   * (the same memory when in_place), up_bytes from hout to up */
  rondo_status_t (*host)(rondo_comm_t comm, void *hin, void *hout, const void *ctx);
  const void *down;
  size_t down_bytes;
  void *up;
  size_t up_bytes;
  int in_place;
  rondo_dtype_t dtype;        /* the elements' type (uint8 for the byte movers) */
  const void *ctx;            /* the call's arguments, for nccl and host */
} device_coll_t;

/* Whether the comm's NCCL can run a collective on dtype: the nccl
 * all-reduce's own rule (NCCL built, no GPU shared by two ranks, a type
 * NCCL has). The calls that only move bytes pass uint8. */
static int use_nccl(rondo_comm_t comm, rondo_dtype_t dtype)
{
  select_input_t in = algo_input_mem(comm, 1, dtype, RONDO_SUM, SELECT_MEM_DEVICE);
  select_candidate_t c;
  select_judge(&algo_nccl.select, &in, &c);
  return c.can_run;
}

/* The staged path. entered: gpu_enter's result, agreed on before any data
 * move. */
static rondo_status_t staged(rondo_comm_t comm, gpu_state_t *g, rondo_status_t entered,
                             const device_coll_t *c)
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

static rondo_status_t run(rondo_comm_t comm, const device_coll_t *c)
{
  gpu_state_t *g = NULL;
  int prev = -1;
  rondo_status_t entered = gpu_enter(comm, &g, &prev), st;
  if (!use_nccl(comm, c->dtype))
    st = staged(comm, g, entered, c);
  else if (entered != RONDO_SUCCESS)
    st = gpu_fail(comm, entered); /* the others hear it while they wait */
  else if ((st = gpu_nccl(comm, g, c->nccl, c->ctx)) == RONDO_SUCCESS)
    st = gpu_record_wait(comm, g, c->nccl_name);
  gpu_leave(g, prev);
  return st;
}

/* ---- broadcast ------------------------------------------------------------------ */

typedef struct {
  void *buf;
  size_t bytes;
  int root;
} bcast_t;

static rondo_status_t bcast_nccl(gpu_state_t *g, dev_coll_t *coll, const void *ctx)
{
  const bcast_t *b = ctx;
  return g->dev->coll_broadcast(coll, b->buf, b->bytes, b->root, g->stream);
}

static rondo_status_t bcast_host(rondo_comm_t comm, void *hin, void *hout, const void *ctx)
{
  (void)hout;
  const bcast_t *b = ctx;
  return algo_broadcast(comm, hin, b->bytes, b->root);
}

rondo_status_t algo_device_broadcast(rondo_comm_t comm, void *buf, size_t bytes, int root)
{
  bcast_t b = {buf, bytes, root};
  device_coll_t c = {bcast_nccl, "ncclBroadcast", bcast_host, buf, bytes, buf, bytes, 1,
                     RONDO_UINT8, &b};
  return run(comm, &c);
}

/* ---- allgather -------------------------------------------------------------------- */

typedef struct {
  const void *sendbuf;
  void *recvbuf;
  size_t bytes;
} gather_t;

static rondo_status_t gather_nccl(gpu_state_t *g, dev_coll_t *coll, const void *ctx)
{
  const gather_t *a = ctx;
  return g->dev->coll_allgather(coll, a->sendbuf, a->recvbuf, a->bytes, g->stream);
}

static rondo_status_t gather_host(rondo_comm_t comm, void *hin, void *hout, const void *ctx)
{
  const gather_t *a = ctx;
  return algo_allgather_block(comm, hin, hout, a->bytes, 1, RONDO_ALGO_AUTO, NULL);
}

rondo_status_t algo_device_allgather(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                     size_t bytes)
{
  gather_t a = {sendbuf, recvbuf, bytes};
  device_coll_t c = {gather_nccl, "ncclAllGather", gather_host, sendbuf, bytes, recvbuf,
                     bytes * (size_t)comm->size, 0, RONDO_UINT8, &a};
  return run(comm, &c);
}

/* ---- reduce-scatter ------------------------------------------------------------------ */

typedef struct {
  const void *sendbuf;
  void *recvbuf;
  size_t recvcount;
  rondo_dtype_t dtype;
  rondo_op_t op;
} rs_t;

static rondo_status_t rs_nccl(gpu_state_t *g, dev_coll_t *coll, const void *ctx)
{
  const rs_t *a = ctx;
  return g->dev->coll_reduce_scatter(coll, a->sendbuf, a->recvbuf, a->recvcount, a->dtype,
                                     a->op, g->stream);
}

static rondo_status_t rs_host(rondo_comm_t comm, void *hin, void *hout, const void *ctx)
{
  const rs_t *a = ctx;
  return algo_reduce_scatter_block(comm, hin, hout, a->recvcount, a->dtype, a->op,
                                   RONDO_ALGO_AUTO, NULL);
}

rondo_status_t algo_device_reduce_scatter(rondo_comm_t comm, const void *sendbuf,
                                          void *recvbuf, size_t recvcount,
                                          rondo_dtype_t dtype, rondo_op_t op)
{
  rs_t a = {sendbuf, recvbuf, recvcount, dtype, op};
  size_t block = recvcount * rondo_dtype_size(dtype);
  device_coll_t c = {rs_nccl, "ncclReduceScatter", rs_host, sendbuf, block * (size_t)comm->size,
                     recvbuf, block, 0, dtype, &a};
  return run(comm, &c);
}
