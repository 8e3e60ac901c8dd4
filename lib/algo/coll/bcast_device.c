/*
 * Broadcast on device buffers (docs/gpu.md): NCCL's where the comm can use
 * NCCL, else through the comm's pinned staging buffer and the host
 * broadcast (gpu_coll.c runs either).
 */
#include "algo/common/gpu.h"

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
  gpu_coll_t c = {bcast_nccl, "ncclBroadcast", bcast_host, buf, bytes, buf, bytes, 1, &b};
  /* bytes move as uint8, which NCCL has: the comm's NCCL rule alone */
  select_input_t in = algo_input_mem(comm, 1, RONDO_UINT8, RONDO_SUM, SELECT_MEM_DEVICE);
  return gpu_coll_run(comm, &c, gpu_nccl_cannot_run(&in) == NULL);
}
