/*
 * The staged reduce-scatter, for device buffers where NCCL cannot serve
 * (ranks sharing a GPU, uneven blocks, a rondo without NCCL): the whole
 * input is copied down into the comm's pinned staging buffer, reduced and
 * scattered there by the host family's own choice (AUTO, a->host), and
 * this rank's block is copied up (gpu_coll.c). AVG is the host
 * dispatch's.
 */
#include "algo/common/blocks.h"
#include "algo/common/gpu.h"

static rondo_status_t host(rondo_comm_t comm, void *hin, void *hout, const void *ctx)
{
  (void)comm;
  const algo_blocks_args_t *a = ctx;
  return a->host(a, hin, hout);
}

static rondo_status_t reduce_scatter_staged(const algo_blocks_args_t *a)
{
  gpu_coll_t c = {.host = host,
                  .down = a->sendbuf,
                  .down_bytes = a->total * a->esize,
                  .up = a->recvbuf,
                  .up_bytes = a->counts[a->comm->rank] * a->esize,
                  .ctx = a};
  return gpu_coll_run(a->comm, &c, 0);
}

/* Cost: the input down and a block up, then a host ring (rs_ring.c). */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  double n = (double)in->bytes;
  return GPU_STAGE_COPY_BETA * (n + n / in->ranks) +
         algo_ring_time(select_p2p_level(prm, in), n, in->ranks, prm->ring_chunk,
                        in->nodes > 1) /
             2;
}

const algo_desc_t algo_rs_staged = {
    .select = {.id = RONDO_ALGO_STAGED, .name = "staged", .mem = SELECT_MEM_DEVICE,
               .cost = cost},
    .collectives = ALGO_SERVES_REDUCE_SCATTER,
    .blocks = reduce_scatter_staged,
};
