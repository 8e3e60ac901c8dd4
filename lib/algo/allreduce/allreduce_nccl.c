/*
 * NCCL all-reduce, for buffers in device memory: one ncclAllReduce on the
 * comm's NCCL communicator and stream (lib/algo/common/gpu.c makes both on the
 * first device call). The blocking call then waits for the stream's event,
 * polling NCCL's asynchronous error, the other ranks' failures and the
 * timeout, so it never hangs. AVG is NCCL's ncclAvg (docs/gpu.md: its
 * rounding). NCCL refuses two ranks on one device ("Duplicate GPU
 * detected"); where ranks share one, the staging algorithm serves.
 */
#include "algo/common/gpu.h"

/* Cost: the ring formula at the point-to-point level. Staging pays the
 * same plus two copies, so NCCL wins over it wherever it can run (and
 * hierarchical_nccl steps aside where it can, not_chosen). */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_ring_time(select_p2p_level(prm, in), (double)in->bytes, in->ranks,
                        prm->ring_chunk, in->nodes > 1);
}

static rondo_status_t enqueue(gpu_state_t *g, dev_coll_t *coll, const void *ctx)
{
  const algo_allreduce_args_t *a = ctx;
  return g->dev->coll_allreduce(coll, a->sendbuf, a->recvbuf, a->count, a->dtype, a->op,
                                g->stream);
}

rondo_status_t algo_nccl_enqueue(const algo_allreduce_args_t *a)
{
  gpu_state_t *g;
  int prev;
  RONDO_CHECK(gpu_enter(a->comm, &g, &prev));
  rondo_status_t st = gpu_nccl(a->comm, g, enqueue, a);
  gpu_leave(g, prev);
  return st;
}

static rondo_status_t run(const algo_allreduce_args_t *a)
{
  gpu_state_t *g;
  int prev;
  RONDO_CHECK(gpu_enter(a->comm, &g, &prev));
  rondo_status_t st = gpu_nccl(a->comm, g, enqueue, a);
  if (st == RONDO_SUCCESS)
    st = gpu_record_wait(a->comm, g, "ncclAllReduce");
  gpu_leave(g, prev);
  return st;
}

const algo_desc_t algo_nccl = {
    .select = {.id = RONDO_ALGO_NCCL, .name = "nccl", .mem = SELECT_MEM_DEVICE,
               .cannot_run = gpu_nccl_cannot_run, .cost = cost},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = run,
};
