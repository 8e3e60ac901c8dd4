/*
 * NCCL's reduce-scatter, for device buffers: one ncclReduceScatter on the
 * comm's NCCL communicator and stream (gpu.c makes both on the first
 * device call), waited for as the nccl all-reduce is (gpu_coll.c). AVG is
 * ncclAvg. NCCL has no form with a count per rank, so equal blocks only
 * (staged runs the others), and the nccl all-reduce's rule: NCCL built, a
 * type NCCL has, no GPU shared by two ranks.
 */
#include "algo/common/blocks.h"
#include "algo/common/gpu.h"

static rondo_status_t enqueue(gpu_state_t *g, dev_coll_t *coll, const void *ctx)
{
  const algo_blocks_args_t *a = ctx;
  return g->dev->coll_reduce_scatter(coll, a->sendbuf, a->recvbuf, a->counts[0], a->dtype, a->op,
                                     g->stream);
}

static rondo_status_t reduce_scatter_nccl(const algo_blocks_args_t *a)
{
  gpu_coll_t c = {.nccl = enqueue, .nccl_name = "ncclReduceScatter", .ctx = a};
  return gpu_coll_run(a->comm, &c, 1);
}

static const char *cannot_run(const select_input_t *in)
{
  const char *why = gpu_nccl_cannot_run(in);
  if (why == NULL && !in->blocks_equal)
    return "uneven blocks: NCCL's reduce-scatter takes one count for every rank (staged runs "
           "them)";
  return why;
}

/* Cost: NCCL's ring, half the all-reduce's ring at the point-to-point
 * level (as rs_ring.c). */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_ring_time(select_p2p_level(prm, in), (double)in->bytes, in->ranks,
                        prm->ring_chunk, in->nodes > 1) /
         2;
}

const algo_desc_t algo_rs_nccl = {
    .select = {.id = RONDO_ALGO_NCCL, .name = "nccl", .mem = SELECT_MEM_DEVICE,
               .cannot_run = cannot_run, .cost = cost},
    .collectives = ALGO_SERVES_REDUCE_SCATTER,
    .blocks = reduce_scatter_nccl,
};
