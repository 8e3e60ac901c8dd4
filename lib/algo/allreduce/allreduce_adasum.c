/*
 * Adasum (Maleki et al., "Scaling Distributed Training with Adaptive
 * Summation", MLSys 2021; Horovod's hvd.Adasum): gradients are combined in
 * pairs by
 *     adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
 * (reduce_adasum), which adds orthogonal gradients and averages parallel
 * ones, so the learning rate need not grow with the rank count. It is no
 * elementwise reduction: every combination needs the dot products of the
 * whole tensors, so the engine's fused buffers carry their tensors'
 * boundaries (segments) and each tensor gets its own coefficients.
 *
 * The tree is recursive doubling's exchange (algo_rd_allreduce): in round
 * k each rank swaps its whole buffer with the rank 2^k away and both
 * compute adasum(lower ranks' data, higher ranks' data), so on 2^n ranks
 * the result is Horovod's: adasum(adasum(g0, g1), adasum(g2, g3)) on 4.
 * Both partners compute the same bytes from the same operands, so every
 * rank ends with identical bytes. Other rank counts, which Horovod refuses,
 * are folded first (fold.c): ranks 2i and 2i+1 for i < size - 2^n are
 * combined into one, then the tree runs on 2^n.
 *
 * Trade-off: full-buffer exchanges (lg p of them) instead of Horovod's
 * vector halving (2 (p-1)/p of the buffer, plus a small all-reduce of the
 * partial dot products per round). For the few ranks per comm rondo's
 * users run, the rounds cost about the same and the dot products need no
 * extra messages; each is summed in one order, the same on both partners.
 */
#include "algo/algo.h"

#include "base/numbers.h"

static const char *cannot_run(const select_input_t *in)
{
  if (in->dtype != RONDO_FLOAT16 && in->dtype != RONDO_BFLOAT16 &&
      in->dtype != RONDO_FLOAT32 && in->dtype != RONDO_FLOAT64)
    return "adasum needs a floating dtype (float16, bfloat16, float32, float64)";
  return NULL;
}

/* Recursive doubling's exchange, plus two passes over each round's data
 * for the dot products and the combination. */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  return algo_rd_time(prm, in, (double)in->bytes, prm->copy_beta) +
         2.0 * prm->intra.gamma * (double)in->bytes * rondo__log2(rondo__pof2_floor(in->ranks));
}

const algo_desc_t algo_adasum = {
    .select = {.id = RONDO_ALGO_ADASUM, .name = "adasum", .mem = SELECT_MEM_HOST,
               .cannot_run = cannot_run, .cost = cost, .adasum = 1},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = algo_rd_allreduce,
};
