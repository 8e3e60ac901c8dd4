/*
 * What the selector is told about a reduce-scatter's or all-gather's call
 * (its blocks), and the cross-node phase of the hierarchical members:
 * their own choice among the point-to-point members on a comm of one rank
 * per node, which has no topology of its own. Apart from family.c because
 * the hierarchical members call it, and family.c reads the tables that
 * list them: there, their calls would run in a circle.
 */
#include "algo/common/blocks.h"

#include <stdlib.h>

select_input_t algo_family_input(rondo_comm_t comm, rondo_coll_t coll, const size_t *counts,
                                 size_t block, rondo_dtype_t dtype, rondo_op_t op)
{
  return algo_family_input_mem(comm, coll, counts, block, dtype, op, SELECT_MEM_HOST);
}

select_input_t algo_family_input_mem(rondo_comm_t comm, rondo_coll_t coll, const size_t *counts,
                                     size_t block, rondo_dtype_t dtype, rondo_op_t op,
                                     select_mem_t mem)
{
  size_t total = 0, most = 0;
  int equal = 1;
  for (int i = 0; i < comm->size; i++) {
    size_t c = counts != NULL ? counts[i] : block;
    total += c;
    equal = equal && c == (counts != NULL ? counts[0] : block);
    most = c > most ? c : most;
  }
  select_input_t in = algo_input_mem(comm, total, dtype,
                                     coll == RONDO_COLL_ALLGATHER ? RONDO_SUM : op, mem);
  in.coll = coll;
  in.block_max = most;
  in.blocks_equal = equal;
  return in;
}

select_input_t algo_family_cross_input(const select_input_t *in, size_t bytes)
{
  select_input_t c = *in;
  c.ranks = in->nodes;
  c.min_local = c.max_local = 1;
  c.bytes = bytes;
  c.count = bytes / rondo_dtype_size(in->dtype);
  c.block_max = in->block_max;
  c.mpi_check = 0; /* the whole call's check was paid once */
  return c;
}

select_params_t algo_family_cross_params(const select_params_t *prm, int local)
{
  select_params_t shared = *prm;
  shared.inter.beta *= local;
  for (int k = 0; k < shared.dists; k++)
    shared.dist_beta[k] *= local;
  return shared;
}

rondo_status_t algo_family_cross_run(rondo_comm_t comm, rondo_comm_t cross,
                                     const select_menu_t *menu, const select_input_t *in,
                                     const algo_blocks_args_t *shape)
{
  int n = cross->size;
  size_t total = 0;
  for (int j = 0; j < n; j++)
    total += shape->counts[j];
  select_input_t c = algo_family_cross_input(in, total * shape->esize);
  select_params_t base = algo_params(comm);
  select_params_t params = algo_family_cross_params(&base, in->max_local);
  select_result_t res;
  rondo_algo_t pick = select_choose(&params, menu, NULL, RONDO_ALGO_AUTO, &c, &res);
  const select_algo_t *row = select_menu_find(menu, pick);
  if (row == NULL)
    return rondo__fail(RONDO_ERR_UNSUPPORTED, "the cross-node phase: %s", res.reason);
  size_t *d = malloc(((size_t)n + 1) * sizeof *d);
  if (d == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "the cross-node phase: %d offsets", n);
  int packed = 1;
  size_t at = 0, end = 0;
  for (int j = 0; j < n; j++) {
    d[j] = shape->displs != NULL ? shape->displs[j] : at;
    packed = packed && d[j] == at;
    at += shape->counts[j];
    end = d[j] + shape->counts[j] > end ? d[j] + shape->counts[j] : end;
  }
  d[n] = end;
  algo_blocks_args_t a = *shape;
  a.comm = cross;
  a.displs = d;
  a.total = total;
  a.packed = packed;
  a.agree = NULL;
  LOG_DEBUG("%s cross-node phase of %zu bytes on %d nodes: %s", rondo_coll_name(in->coll),
            total * shape->esize, n, row->name);
  rondo_status_t st = n == 1 ? RONDO_SUCCESS : ((const algo_desc_t *)row)->blocks(&a);
  free(d);
  return st;
}

const char *algo_hier_blocks_cannot_run(const select_input_t *in)
{
  if (in->min_local != in->max_local || !in->node_blocks)
    return "ranks are not in equal blocks per node";
  return NULL;
}

const char *algo_hier_blocks_not_chosen(const select_input_t *in)
{
  if (in->nodes == 1)
    return "one node: use shm";
  if (in->max_local == 1)
    return "one rank per node: nothing to do inside a node";
  return NULL;
}
