/*
 * NCCL's all-gather, for device buffers: one ncclAllGather of bytes on the
 * comm's NCCL communicator and stream, waited for as the nccl all-reduce
 * is (gpu_coll.c). NCCL gathers equal blocks packed in rank order (in
 * place where sendbuf is this rank's block of recvbuf); the nccl
 * all-reduce's rule otherwise (no GPU shared by two ranks).
 */
#include "algo/common/blocks.h"
#include "algo/common/gpu.h"

static rondo_status_t enqueue(gpu_state_t *g, dev_coll_t *coll, const void *ctx)
{
  const algo_blocks_args_t *a = ctx;
  return g->dev->coll_allgather(coll, a->sendbuf, a->recvbuf, a->counts[0], g->stream);
}

static rondo_status_t allgather_nccl(const algo_blocks_args_t *a)
{
  if (!a->packed) /* (device all-gathers come packed: rondo_allgather) */
    return rondo__fail(RONDO_ERR_INTERNAL, "nccl all-gather: blocks with gaps between them");
  gpu_coll_t c = {.nccl = enqueue, .nccl_name = "ncclAllGather", .ctx = a};
  return gpu_coll_run(a->comm, &c, 1);
}

static const char *cannot_run(const select_input_t *in)
{
  const char *why = gpu_nccl_cannot_run(in);
  if (why == NULL && !in->blocks_equal)
    return "uneven blocks: NCCL's all-gather takes one count for every rank (staged runs them)";
  return why;
}

/* Cost: NCCL's ring at the point-to-point level (ag_ring.c). */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_ag_ring_time(prm, in, (double)in->bytes);
}

const algo_desc_t algo_ag_nccl = {
    .select = {.id = RONDO_ALGO_NCCL, .name = "nccl", .mem = SELECT_MEM_DEVICE,
               .cannot_run = cannot_run, .cost = cost},
    .collectives = ALGO_SERVES_ALLGATHER,
    .blocks = allgather_nccl,
};
