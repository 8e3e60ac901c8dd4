/*
 * The cross-node phase of the hierarchical all-reduces (hier_cross.h): one
 * slice, all-reduced over the comm of one rank per node by ring or
 * recursive doubling, as the cost model prices them with the node's link
 * shared by every local rank's stream. allreduce_hier.c (host) and
 * allreduce_hier_nccl.c (its host phase) run it; allreduce_hier.c's
 * pipeline prices its stripes with the same parameters.
 */
#include "algo/allreduce/hier_cross.h"

/* The candidates for a cross-node slice: one rank per node. */
static const select_algo_t *const cross_algos[] = {&algo_ring.select,
                                                   &algo_recursive_doubling.select};
static const select_menu_t cross_menu = {2, cross_algos, RONDO_COLL_ALLREDUCE, NULL};

select_params_t algo_hier_cross_params(const select_params_t *prm, int max_local)
{
  select_params_t p = *prm;
  p.inter.beta *= max_local;
  p.lone_beta *= max_local;
  for (int k = 0; k < p.dists; k++)
    p.dist_beta[k] *= max_local;
  return p;
}

select_input_t algo_hier_cross_input(const select_input_t *in, double bytes)
{
  select_input_t c = *in;
  c.bytes = (size_t)bytes;
  c.count = in->count / (size_t)in->max_local;
  c.ranks = in->nodes;
  c.min_local = c.max_local = 1;
  return c;
}

rondo_status_t algo_hier_cross(rondo_comm_t comm, rondo_comm_t cross, void *buf, size_t n,
                               size_t whole, rondo_dtype_t dtype, rondo_op_t op)
{
  algo_allreduce_args_t c = {.comm = cross, .sendbuf = buf, .recvbuf = buf, .count = n,
                             .dtype = dtype, .op = op, .esize = rondo_dtype_size(dtype)};
  if (n == 0 || cross->size == 1)
    return RONDO_SUCCESS;
  select_input_t all = algo_input(comm, whole, dtype, op);
  select_input_t in = algo_hier_cross_input(&all, (double)(n * c.esize));
  in.count = n;
  select_result_t res;
  select_params_t params = algo_params(comm);
  params = algo_hier_cross_params(&params, all.max_local);
  rondo_algo_t pick = select_choose(&params, &cross_menu, NULL, RONDO_ALGO_AUTO, &in, &res);
  return (pick == RONDO_ALGO_RECURSIVE_DOUBLING ? &algo_recursive_doubling : &algo_ring)
      ->allreduce(&c);
}

