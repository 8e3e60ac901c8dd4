/*
 * What the selector is told: a call's input (its size, the comm's shape,
 * for device memory whether there is NCCL and whether ranks share a GPU)
 * and the cost model's parameters for a comm; and, from them, how the
 * comm's argument check crosses nodes. Apart from dispatch.c
 * because algorithms of the table ask it too (hierarchical's cross-node
 * phase chooses by cost), and dispatch.c reads the table: there, their
 * calls would run in a circle.
 */
#include "algo/algo.h"

#include "algo/agree/exchange.h"
#include "algo/common/gpu.h"
#include "base/numbers.h"
#include "topo/topo.h"

select_input_t algo_input_mem(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                              rondo_op_t op, select_mem_t mem)
{
  select_input_t in = {.count = count, .bytes = count * rondo_dtype_size(dtype),
                       .dtype = dtype, .op = op, .ranks = comm->size,
                       .nodes = comm->topo->node_count, .min_local = comm->topo->min_local,
                       .max_local = comm->topo->max_local, .mem = mem,
                       .mpi_check = comm->size > 1 && !agree_board_active(comm),
                       .node_blocks = comm->topo->blocks};
  in.check_exchange = in.mpi_check && agree_by_exchange(comm);
  in.check_leaders = in.check_exchange && in.bytes > agree_home_from(comm);
  if (mem == SELECT_MEM_DEVICE) {
    in.has_nccl = dev_backend()->coll_id != NULL;
    in.gpu_shared = comm->gpu != NULL ? comm->gpu->shared : -1;
    in.gpu_node_shared = comm->gpu != NULL ? comm->gpu->node_shared : -1;
  }
  return in;
}

select_input_t algo_input(rondo_comm_t comm, size_t count, rondo_dtype_t dtype, rondo_op_t op)
{
  return algo_input_mem(comm, count, dtype, op, SELECT_MEM_HOST);
}

int algo_check_by_exchange(rondo_comm_t comm)
{
  if (comm->cfg.check_exchange != RONDO__CHECK_AUTO)
    return comm->cfg.check_exchange == RONDO__CHECK_RONDO;
  /* Where MPI's all-reduce is flat it would take the same steps with its
   * overhead on top and carry no algorithm's data. Where it is node-aware,
   * one rank of a node crosses the link, not all of them, which the data
   * riding in the packet needs: rondo's exchange does that too where nodes
   * are blocks (agree_leaders_carry), and elsewhere sends it from every
   * rank (docs/scale.md: so on 8 ranks per simulated host AUTO was
   * 1.04-1.15x MPICH's all-reduce at 16-64 B but 0.42-0.91x at 256 B-4 KiB,
   * whose calls ride in it). */
  select_params_t prm = algo_params(comm);
  select_input_t in = algo_input(comm, 0, RONDO_FLOAT32, RONDO_SUM);
  return agree_leaders_carry(comm) || !select_mpi_node_aware(&prm, &in);
}

size_t algo_check_home_from(rondo_comm_t comm, int by_exchange)
{
  if (!by_exchange || !agree_leaders_carry(comm))
    return SIZE_MAX;
  select_params_t prm = algo_params(comm);
  int local = comm->topo->max_local, nodes = comm->topo->node_count;
  double copies = (local - 1) * prm.inter.beta * rondo__log2(nodes);
  double bytes = rondo__log2(local) * prm.intra.alpha / copies;
  return bytes < (double)AGREE_INLINE_BYTES ? (size_t)bytes : AGREE_INLINE_BYTES;
}

select_params_t algo_params(rondo_comm_t comm)
{
  select_params_t params = select_default_params;
  params.ring_chunk = comm->cfg.ring_chunk;
  params.hier_chunk = comm->cfg.hier_chunk;
  params.rab_radix = comm->cfg.rab_radix > 0 ? 1 << comm->cfg.rab_radix : 0;
  params.check_bytes = agree_packet_bytes();
#ifdef OPEN_MPI
  params.mpi_node_aware = 0; /* tuned's all-reduce is flat (HAN is not the default) */
#else
  /* where some rank yields, the mpi algorithm and the check call MPI's
   * nonblocking all-reduce, which is flat */
  params.mpi_node_aware = !comm->yield_any;
#endif
  const topo_t *topo = comm->topo;
  if (topo == NULL || topo->node_count < 2)
    return params;
  params.inter.alpha = topo->net.alpha;
  params.inter.rndv_alpha = topo->net.rndv_alpha;
  params.inter.beta = topo->net.beta;
  params.inter.eager_limit = NET_EAGER_BYTES;
  _Static_assert(SELECT_DISTS >= NET_DISTS, "a model distance for every measured one");
  params.dists = topo->net.dists;
  params.lone_beta = topo->net.lone_beta;
  for (int k = 0; k < topo->net.dists; k++) {
    params.dist_alpha[k] = topo->net.dist_alpha[k];
    params.dist_beta[k] = topo->net.dist_beta[k];
  }
  if (topo->net.intra_alpha > 0) {
    /* Measured on this comm's nodes: the one-node fit (MPICH's shared
     * memory) may not be what these ranks use between themselves. */
    params.intra.alpha = params.intra.rndv_alpha = topo->net.intra_alpha;
    params.intra.beta = topo->net.intra_beta;
    params.intra.eager_limit = 0;
  }
  return params;
}
