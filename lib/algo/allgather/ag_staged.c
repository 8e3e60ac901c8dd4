/*
 * The staged all-gather, for device buffers where NCCL cannot serve
 * (ranks sharing a GPU, a rondo without NCCL): this rank's block is copied
 * down into the comm's pinned staging buffer, gathered there by the host
 * family's own choice (AUTO, a->host), and every block is copied up
 * (gpu_coll.c).
 */
#include "algo/common/blocks.h"
#include "algo/common/gpu.h"

static rondo_status_t host(rondo_comm_t comm, void *hin, void *hout, const void *ctx)
{
  (void)comm;
  const algo_blocks_args_t *a = ctx;
  return a->host(a, hin, hout);
}

static rondo_status_t allgather_staged(const algo_blocks_args_t *a)
{
  int r = a->comm->rank;
  gpu_coll_t c = {.host = host,
                  .down = a->sendbuf,
                  .down_bytes = a->counts[r],
                  .up = a->recvbuf,
                  .up_bytes = a->displs[a->comm->size],
                  .ctx = a};
  return gpu_coll_run(a->comm, &c, 0);
}

/* Cost: a block down and the whole buffer up, then a host ring (ag_ring.c). */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  double n = (double)in->bytes;
  return GPU_STAGE_COPY_BETA * (n + n / in->ranks) + algo_ag_ring_time(prm, in, n);
}

const algo_desc_t algo_ag_staged = {
    .select = {.id = RONDO_ALGO_STAGED, .name = "staged", .mem = SELECT_MEM_DEVICE,
               .cost = cost},
    .collectives = ALGO_SERVES_ALLGATHER,
    .blocks = allgather_staged,
};
