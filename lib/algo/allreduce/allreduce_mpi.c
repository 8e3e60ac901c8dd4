/*
 * The baseline: MPI_Allreduce on the comm's private duplicate. Built-in
 * datatypes and ops where they give rondo's semantics, user-defined ops
 * over rondo's kernels for float16/bfloat16 and floating MIN/MAX (p2p.c).
 * Counts beyond INT_MAX are reduced in pieces, which works with MPI-3
 * libraries and with user-defined ops. Blocking where no rank of the comm
 * yields, so that MPI picks its best all-reduce (a nonblocking one may be
 * simpler: SimGrid's SMPI sends all to all); nonblocking plus algo_waitall
 * where some rank yields, so that the wait yields the core on an
 * oversubscribed node (p2p.c), the same call on every rank. A call
 * of at most AGREE_INLINE_BYTES across nodes travels inside the argument
 * check's all-reduce instead (packet.c), so it costs one all-reduce.
 */
#include "algo/algo.h"

#include <limits.h>

#include "base/numbers.h"

#define PIECE ((size_t)1 << 30) /* elements per MPI_Allreduce call */

static rondo_status_t allreduce_mpi(const algo_allreduce_args_t *a)
{
  if (a->agree != NULL) { /* small, across nodes: the data rides in the check */
    agree_inline_t d = {.count = a->count, .dtype = a->dtype, .op = a->op, .in = a->sendbuf,
                        .in_bytes = a->count * a->esize, .out = a->recvbuf};
    int rode = 0;
    RONDO_CHECK(agree_inline(a->comm, a->agree, &d, &rode));
    if (rode)
      return RONDO_SUCCESS;
  }
  MPI_Datatype mtype;
  MPI_Op mop;
  RONDO_CHECK(algo_mpi_op(a->dtype, a->op, &mtype, &mop));
  int in_place = a->sendbuf == a->recvbuf;
  for (size_t done = 0; done < a->count; done += PIECE) {
    size_t n = a->count - done < PIECE ? a->count - done : PIECE;
    const char *src = (const char *)a->sendbuf + done * a->esize;
    char *dst = (char *)a->recvbuf + done * a->esize;
    const void *from = in_place ? MPI_IN_PLACE : src;
    if (!a->comm->yield_any) { /* the library's best blocking all-reduce */
      MPI_CHECK(MPI_Allreduce(from, dst, (int)n, mtype, mop, a->comm->mpi));
      continue;
    }
    MPI_Request req;
    MPI_CHECK(MPI_Iallreduce(from, dst, (int)n, mtype, mop, a->comm->mpi, &req));
    RONDO_CHECK(algo_waitall(a->comm, 1, &req));
  }
  return RONDO_SUCCESS;
}

/* Where a call's data rides in the check (algo.h): one exchange of the
 * packet with the data in it, recursive doubling in rondo's own exchange
 * (in->check_exchange), with the node-aware one's steps where one rank of
 * a node carries the data across (in->check_leaders), MPI's choice in
 * MPI's. */
double algo_inline_time(const select_params_t *prm, const select_input_t *in)
{
  double m = (double)in->bytes + (double)prm->check_bytes;
  double t = algo_rd_time(prm, in, m, prm->copy_beta);
  double lg = rondo__log2(rondo__pof2_floor(in->ranks));
  double aware = prm->copy_beta * m + prm->intra.gamma * m * lg +
                 select_node_aware_steps_time(prm, in, m);
  if (in->check_exchange) /* rondo's exchange's steps: no MPI_Allreduce is called */
    return in->check_leaders ? aware : t;
  /* MPI's choice */
  return prm->mpi_alpha + (select_mpi_node_aware(prm, in) && aware < t ? aware : t);
}

/* Cost: MPICH's own choice, the cheaper of recursive doubling and
 * Rabenseifner (when count >= p'), plus its per-call overhead mpi_alpha;
 * where MPI's all-reduce is node-aware (select_mpi_node_aware) the cheaper
 * of those and the node-aware one. When the data rides in the check,
 * algo_inline_time. */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  if (in->mpi_check && in->bytes <= AGREE_INLINE_BYTES)
    return algo_inline_time(prm, in);
  double n = (double)in->bytes;
  double t = algo_rd_time(prm, in, n, prm->copy_beta);
  if (in->count >= (size_t)rondo__pof2_floor(in->ranks)) {
    double rab = algo_rab_time(prm, in, n, prm->copy_beta, 2);
    t = rab < t ? rab : t;
  }
  double lg = rondo__log2(rondo__pof2_floor(in->ranks));
  double aware = prm->copy_beta * n + prm->intra.gamma * n * lg +
                 select_node_aware_steps_time(prm, in, n);
  if (select_mpi_node_aware(prm, in) && aware < t)
    t = aware;
  return t + prm->mpi_alpha;
}

const algo_desc_t algo_mpi = {
    .select = {.id = RONDO_ALGO_MPI, .name = "mpi", .mem = SELECT_MEM_HOST, .cost = cost,
               .rides_check = AGREE_INLINE_BYTES},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = allreduce_mpi,
};
