/*
 * NCCL all-reduce, for buffers in device memory. Its row in the table is
 * here before the CUDA/NCCL backend is: the selector lists it (rondo_explain
 * says why it is not chosen), the tuning parser and RONDO_ALLREDUCE_ALGO
 * know its name, and forcing it fails with RONDO_ERR_UNSUPPORTED and the
 * reason. The backend gives it a run function.
 */
#include "algo/algo.h"

/* Cost: a placeholder, the ring formula at the point-to-point level; it
 * only competes on device memory, where it is the only candidate. */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_ring_time(select_p2p_level(prm, in), (double)in->bytes, in->ranks,
                        prm->ring_chunk);
}

static const char *cannot_run(const select_input_t *in)
{
  (void)in;
  return "this rondo has no NCCL backend";
}

const algo_desc_t algo_nccl = {
    .select = {.id = RONDO_ALGO_NCCL, .name = "nccl", .mem = SELECT_MEM_DEVICE,
               .cannot_run = cannot_run, .cost = cost},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = NULL,
};
