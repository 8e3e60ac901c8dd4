/*
 * Hierarchical all-reduce, for comms that span nodes:
 *   1. node reduce-scatter through shared memory (shm.c): each local rank
 *      ends with the node's sum of the slices it owns;
 *   2. the owners of slice g on every node all-reduce it over cross[g]
 *      (topo.h), ring or recursive doubling by size; different slices go
 *      in parallel on different ranks;
 *   3. node allgather through shared memory.
 * Only 1/L of the buffer crosses the network per rank, instead of the whole
 * buffer through a flat algorithm, and each node link carries L streams.
 *
 * Unequal nodes (3+1, say): slices are cut by the largest node size G, and
 * on a node of L < G ranks local rank r owns slices r, r+L, ..., so every
 * slice has exactly one owner per node; a rank with several slices runs
 * their cross-node all-reduces one after another. Each slice's final value
 * comes out of one cross all-reduce (identical on its owners) and is copied
 * by the allgather, so every rank ends with the same bytes.
 */
#include "algo/shm.h"

#include <stdlib.h>

#include "topo/topo.h"

/* The candidates for a cross-node slice: one rank per node. */
static const select_algo_t *const cross_algos[] = {&algo_ring.select,
                                                   &algo_recursive_doubling.select};
static const select_menu_t cross_menu = {2, cross_algos};

/* The algorithm for a cross-node slice: ring or recursive doubling, as the
 * cost model predicts for one rank per node over cross->size nodes. */
static rondo_status_t cross_allreduce(const algo_allreduce_args_t *a, rondo_comm_t cross,
                                      size_t off, size_t n)
{
  algo_allreduce_args_t c = *a;
  c.comm = cross;
  c.sendbuf = c.recvbuf = (char *)a->recvbuf + off * a->esize;
  c.count = n;
  if (n == 0 || cross->size == 1)
    return RONDO_SUCCESS;
  select_input_t in = {.count = n, .bytes = n * a->esize, .dtype = a->dtype, .op = a->op,
                       .ranks = cross->size, .nodes = cross->size, .min_local = 1,
                       .max_local = 1, .mem = SELECT_MEM_HOST};
  select_result_t res;
  select_params_t params = algo_params(a->comm);
  rondo_algo_t pick = select_choose(&params, &cross_menu, NULL, RONDO_ALGO_AUTO, &in, &res);
  return (pick == RONDO_ALGO_RECURSIVE_DOUBLING ? &algo_recursive_doubling : &algo_ring)
      ->allreduce(&c);
}

static rondo_status_t allreduce_hier(const algo_allreduce_args_t *a)
{
  rondo_comm_t comm = a->comm;
  const topo_t *topo = comm->topo;
  RONDO_CHECK(shm_run(a, SHM_REDUCE_SCATTER));
  for (int g = 0; g < topo->slices; g++) {
    if (topo_owner(g, topo->local_size) != topo->local_rank)
      continue;
    size_t off, n;
    topo_slice(a->count, topo->slices, g, &off, &n);
    RONDO_CHECK(cross_allreduce(a, comm->cross[g], off, n));
  }
  return shm_run(a, SHM_ALLGATHER);
}

/* Cost: shm reduce-scatter (alpha + beta n + gamma n), the cheaper of ring
 * and recursive doubling on n/L bytes among N ranks at the inter level (in
 * place: no copy), shm allgather (alpha + beta n). */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  const select_level_t *sh = &prm->shm;
  double n = (double)in->bytes, slice = n / in->max_local;
  double reduce_scatter = sh->alpha + sh->beta * n + sh->gamma * n;
  double ring = algo_ring_time(&prm->inter, slice, in->nodes, prm->ring_chunk);
  double rd = algo_rd_time(&prm->inter, slice, in->nodes, 0);
  double allgather = sh->alpha + sh->beta * n;
  return reduce_scatter + (ring < rd ? ring : rd) + allgather;
}

/* On one node it runs (shm with extra steps), but shm is the better pick. */
static const char *not_chosen(const select_input_t *in)
{
  return in->nodes < 2 ? "one node: use shm" : NULL;
}

const algo_desc_t algo_hierarchical = {
    .select = {.id = RONDO_ALGO_HIERARCHICAL, .name = "hierarchical", .mem = SELECT_MEM_HOST,
               .not_chosen = not_chosen, .cost = cost},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = allreduce_hier,
};
