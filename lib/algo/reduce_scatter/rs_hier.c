/*
 * Hierarchical reduce-scatter, for ranks on several nodes of L ranks each
 * in blocks (node n holds ranks n L .. n L + L - 1, as launchers place
 * them): MPICH reduce-scatters flat, so every local rank's block crosses
 * the network from every node. Here
 *   1. the node reduce-scatters through shared memory (shm.c): local rank
 *      l reduces, across its node, the blocks of rank l of every node
 *      (blocks l, L + l, 2L + l, ..) into scratch;
 *   2. the ranks l of every node reduce-scatter those N blocks over their
 *      cross communicator (one rank per node), by the family's choice for
 *      that comm, so rank n L + l ends with block n L + l.
 * Each rank sends 1/L of what a flat reduce-scatter would across the
 * network, and each node's link carries the node's share once.
 */
#include "algo/common/blocks.h"
#include "algo/common/shm.h"

#include <stdlib.h>

#include "topo/topo.h"

extern const algo_desc_t algo_rs_ring, algo_rs_pairwise, algo_rs_halving;

/* The cross phase's candidates: point-to-point members (a cross comm has
 * no topology of its own). */
static const select_algo_t *const cross_rows[] = {&algo_rs_ring.select, &algo_rs_pairwise.select,
                                                  &algo_rs_halving.select};
static const select_menu_t cross_menu = {3, cross_rows, RONDO_COLL_REDUCE_SCATTER, NULL};

static rondo_status_t reduce_scatter_hier(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  const topo_t *topo = comm->topo;
  int p = comm->size, L = topo->max_local, N = topo->node_count, l = topo->local_rank;
  size_t *place = calloc((size_t)p + (size_t)N, sizeof *place);
  if (place == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "hierarchical reduce-scatter: %d offsets", p);
  size_t *cross_counts = place + p, mine = 0;
  for (int j = 0; j < N; j++) {
    place[j * L + l] = mine;
    cross_counts[j] = a->counts[j * L + l];
    mine += cross_counts[j];
  }
  /* on one node the node phase's result is the result */
  char *tmp = a->recvbuf;
  rondo_status_t st = N == 1 ? RONDO_SUCCESS : algo_scratch(comm, mine * a->esize + 1, (void **)&tmp);
  if (st == RONDO_SUCCESS) {
    algo_blocks_args_t node = *a;
    node.recvbuf = tmp;
    st = shm_run_blocks(&node, SHM_REDUCE_SCATTER, place);
  }
  if (st == RONDO_SUCCESS && N > 1) {
    select_input_t in = algo_family_input(comm, RONDO_COLL_REDUCE_SCATTER, a->counts, 0, a->dtype,
                                          a->op);
    algo_blocks_args_t cross = *a;
    cross.sendbuf = tmp;
    cross.counts = cross_counts;
    cross.displs = NULL;
    st = algo_family_cross_run(comm, comm->cross[l], &cross_menu, &in, &cross);
  }
  free(place);
  return st;
}

/* Cost: shm's node phase (as rs_shm prices it) + the cheaper of pairwise
 * and recursive halving across the nodes on n/L bytes, whose link the L
 * local ranks share. */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  const select_level_t *sh = &prm->shm;
  double n = (double)in->bytes, l = in->max_local;
  double node = 2 * sh->alpha + n * (l - 1) / l * sh->beta + n * sh->gamma;
  select_input_t c = algo_family_cross_input(in, in->bytes / (size_t)in->max_local);
  select_params_t shared = algo_family_cross_params(prm, in->max_local);
  double part = (double)c.bytes;
  double pw = algo_rs_pairwise_time(&shared, &c, part), rh = algo_rs_halving_time(&shared, &c, part);
  return node + (pw < rh ? pw : rh);
}

const algo_desc_t algo_rs_hier = {
    .select = {.id = RONDO_ALGO_HIERARCHICAL, .name = "hierarchical", .mem = SELECT_MEM_HOST,
               .cannot_run = algo_hier_blocks_cannot_run,
               .not_chosen = algo_hier_blocks_not_chosen, .cost = cost},
    .collectives = ALGO_SERVES_REDUCE_SCATTER,
    .blocks = reduce_scatter_hier,
};
