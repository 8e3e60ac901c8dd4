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
#include "algo/gpu.h"

#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"

static int use_nccl(const gpu_state_t *g) { return g->dev->coll_id != NULL && !g->shared; }

/* One NCCL collective, queued by enqueue(comm, g, ctx), then waited for. */
typedef rondo_status_t (*enqueue_fn)(gpu_state_t *g, dev_coll_t *c, const void *ctx);

static rondo_status_t by_nccl(rondo_comm_t comm, gpu_state_t *g, enqueue_fn enqueue,
                              const void *ctx, const char *what)
{
  dev_coll_t *c = NULL;
  rondo_status_t st = gpu_coll(comm, &c);
  if (st == RONDO_SUCCESS && (st = enqueue(g, c, ctx)) != RONDO_SUCCESS)
    st = gpu_fail(comm, st);
  if (st == RONDO_SUCCESS)
    st = gpu_wait(comm, NULL, "enqueueing an NCCL collective");
  if (st == RONDO_SUCCESS && (st = g->dev->event_record(g->event[0], g->stream)) != RONDO_SUCCESS)
    st = gpu_fail(comm, st);
  if (st == RONDO_SUCCESS)
    st = gpu_wait(comm, g->event[0], what);
  return st;
}

/* A device -> host or host -> device copy, waited for. */
static rondo_status_t copy_wait(rondo_comm_t comm, gpu_state_t *g, void *dst, const void *src,
                                size_t bytes, const char *what)
{
  if (bytes == 0)
    return RONDO_SUCCESS;
  rondo_status_t st = g->dev->copy_async(dst, src, bytes, g->stream);
  if (st == RONDO_SUCCESS)
    st = g->dev->event_record(g->event[1], g->stream);
  if (st != RONDO_SUCCESS)
    return gpu_fail(comm, st);
  return gpu_wait(comm, g->event[1], what);
}

/* The host collective of a staged call, on hin (input) and hout (output). */
typedef rondo_status_t (*host_fn)(rondo_comm_t comm, void *hin, void *hout, const void *ctx);

/* Staged: down (down_bytes) into the stage, host(), hout (up_bytes) up.
 * entered: gpu_enter's result (a failure is agreed on before any data
 * moves). */
static rondo_status_t staged(rondo_comm_t comm, gpu_state_t *g, rondo_status_t entered,
                             const void *down, size_t down_bytes, void *up, size_t up_bytes,
                             int in_place, host_fn host, const void *ctx)
{
  size_t need = in_place ? down_bytes : down_bytes + up_bytes;
  rondo_status_t st = entered == RONDO_SUCCESS ? gpu_stage(g, need) : entered;
  if ((st = gpu_agree_ready(comm, st, "its GPU state and staging buffer")) != RONDO_SUCCESS)
    return st;
  char *hin = g->stage, *hout = in_place ? hin : hin + down_bytes, *spare = NULL;
  st = copy_wait(comm, g, hin, down, down_bytes, "a copy to the staging buffer");
  if (st != RONDO_SUCCESS) { /* take part from a buffer of its own */
    spare = calloc(1, need ? need : 1);
    if (spare != NULL) {
      hin = spare;
      hout = in_place ? hin : hin + down_bytes;
    }
  }
  rondo_status_t r = host(comm, hin, hout, ctx); /* always: the others are in it */
  if (st == RONDO_SUCCESS && r != RONDO_SUCCESS)
    st = gpu_fail(comm, r);
  if (st == RONDO_SUCCESS)
    st = copy_wait(comm, g, up, hout, up_bytes, "a copy from the staging buffer");
  free(spare);
  /* a rank that failed took part with a buffer of its own: every rank
   * learns whether every rank succeeded */
  if (st == RONDO_SUCCESS)
    st = gpu_heard(comm);
  return gpu_agree_ready(comm, st, "its part of the staged collective");
}

/* One collective: NCCL's where the comm can use NCCL, else staged. */
#define DEVICE_COLL(comm, nccl_call, staged_call)                              \
  do {                                                                         \
    gpu_state_t *g = NULL;                                                     \
    int prev = -1;                                                             \
    rondo_status_t entered = gpu_enter((comm), &g, &prev), st;                 \
    if (!use_nccl((comm)->gpu))                                                \
      st = (staged_call);                                                      \
    else if (entered != RONDO_SUCCESS)                                         \
      st = gpu_fail((comm), entered); /* the others hear it while they wait */ \
    else                                                                       \
      st = (nccl_call);                                                        \
    gpu_leave(g, prev);                                                        \
    return st;                                                                 \
  } while (0)

/* ---- broadcast ------------------------------------------------------------------ */

typedef struct {
  void *buf;
  size_t bytes;
  int root;
} bcast_t;

static rondo_status_t bcast_nccl(gpu_state_t *g, dev_coll_t *c, const void *ctx)
{
  const bcast_t *b = ctx;
  return g->dev->coll_broadcast(c, b->buf, b->bytes, b->root, g->stream);
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
  DEVICE_COLL(comm, by_nccl(comm, g, bcast_nccl, &b, "ncclBroadcast"),
              staged(comm, g, entered, buf, bytes, buf, bytes, 1, bcast_host, &b));
}

/* ---- allgather -------------------------------------------------------------------- */

typedef struct {
  const void *sendbuf;
  void *recvbuf;
  size_t bytes;
} gather_t;

static rondo_status_t gather_nccl(gpu_state_t *g, dev_coll_t *c, const void *ctx)
{
  const gather_t *a = ctx;
  return g->dev->coll_allgather(c, a->sendbuf, a->recvbuf, a->bytes, g->stream);
}

static rondo_status_t gather_host(rondo_comm_t comm, void *hin, void *hout, const void *ctx)
{
  const gather_t *a = ctx;
  return algo_allgather(comm, hin, hout, a->bytes);
}

rondo_status_t algo_device_allgather(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                     size_t bytes)
{
  gather_t a = {sendbuf, recvbuf, bytes};
  DEVICE_COLL(comm, by_nccl(comm, g, gather_nccl, &a, "ncclAllGather"),
              staged(comm, g, entered, sendbuf, bytes, recvbuf, bytes * (size_t)comm->size, 0,
                     gather_host, &a));
}

/* ---- reduce-scatter ------------------------------------------------------------------ */

typedef struct {
  const void *sendbuf;
  void *recvbuf;
  size_t recvcount;
  rondo_dtype_t dtype;
  rondo_op_t op;
} rs_t;

static rondo_status_t rs_nccl(gpu_state_t *g, dev_coll_t *c, const void *ctx)
{
  const rs_t *a = ctx;
  return g->dev->coll_reduce_scatter(c, a->sendbuf, a->recvbuf, a->recvcount, a->dtype, a->op,
                                     g->stream);
}

static rondo_status_t rs_host(rondo_comm_t comm, void *hin, void *hout, const void *ctx)
{
  const rs_t *a = ctx;
  RONDO_CHECK(algo_reduce_scatter(comm, hin, hout, a->recvcount, a->dtype,
                                  a->op == RONDO_AVG ? RONDO_SUM : a->op));
  if (a->op == RONDO_AVG)
    reduce_average(hout, a->recvcount, a->dtype, comm->size);
  return RONDO_SUCCESS;
}

rondo_status_t algo_device_reduce_scatter(rondo_comm_t comm, const void *sendbuf,
                                          void *recvbuf, size_t recvcount,
                                          rondo_dtype_t dtype, rondo_op_t op)
{
  rs_t a = {sendbuf, recvbuf, recvcount, dtype, op};
  size_t block = recvcount * rondo_dtype_size(dtype);
  DEVICE_COLL(comm, by_nccl(comm, g, rs_nccl, &a, "ncclReduceScatter"),
              staged(comm, g, entered, sendbuf, block * (size_t)comm->size, recvbuf, block, 0,
                     rs_host, &a));
}
