/*
 * Hierarchical all-gather, for ranks on several nodes of L ranks each in
 * blocks (node n holds ranks n L .. n L + L - 1): MPICH gathers flat, so
 * every block crosses the network to every rank of every other node. Here
 *   1. the ranks l of every node all-gather their blocks over their cross
 *      communicator (one rank per node), by the family's choice for that
 *      comm, straight into their places in recvbuf (blocks l, L + l, ..);
 *   2. the node all-gathers through shared memory (shm.c): local rank l
 *      posts the N blocks it now holds, and copies the others' out.
 * Each block crosses the network once per node, not once per rank.
 */
#include "algo/common/blocks.h"
#include "algo/common/shm.h"

#include <stdlib.h>
#include <string.h>

#include "topo/topo.h"

extern const algo_desc_t algo_ag_ring, algo_ag_rd, algo_ag_bruck;

/* The cross phase's candidates: point-to-point members (a cross comm has
 * no topology of its own). */
static const select_algo_t *const cross_rows[] = {&algo_ag_ring.select, &algo_ag_rd.select,
                                                  &algo_ag_bruck.select};
static const select_menu_t cross_menu = {3, cross_rows, RONDO_COLL_ALLGATHER, NULL};

static rondo_status_t allgather_hier(const algo_blocks_args_t *a)
{
  rondo_comm_t comm = a->comm;
  const topo_t *topo = comm->topo;
  int r = comm->rank, L = topo->max_local, N = topo->node_count, l = topo->local_rank;
  char *own = blocks_at(a, a->recvbuf, a->displs[r]);
  if (own != (const char *)a->sendbuf && a->counts[r] > 0)
    memcpy(own, a->sendbuf, a->counts[r]);
  if (N > 1) {
    size_t *c = malloc(2 * (size_t)N * sizeof *c);
    if (c == NULL)
      return rondo__fail(RONDO_ERR_NO_MEMORY, "hierarchical all-gather: %d counts", N);
    size_t *d = c + N;
    for (int j = 0; j < N; j++) {
      c[j] = a->counts[j * L + l];
      d[j] = a->displs[j * L + l];
    }
    select_input_t in = algo_family_input(comm, RONDO_COLL_ALLGATHER, a->counts, 0, RONDO_UINT8,
                                          RONDO_SUM);
    algo_blocks_args_t cross = *a;
    cross.sendbuf = own; /* in place: its block is where it goes */
    cross.counts = c;
    cross.displs = d;
    rondo_status_t st = algo_family_cross_run(comm, comm->cross[l], &cross_menu, &in, &cross);
    free(c);
    RONDO_CHECK(st);
  }
  /* the node phase posts this rank's N blocks from where they now lie */
  algo_blocks_args_t node = *a;
  node.sendbuf = a->recvbuf;
  return shm_run_blocks(&node, SHM_ALLGATHER, a->displs);
}

/* Cost: the cheaper of the ring and recursive doubling across the nodes on
 * n/L bytes, whose link the L local ranks share, + shm's node phase on
 * n. */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  const select_level_t *sh = &prm->shm;
  double n = (double)in->bytes;
  select_input_t c = algo_family_cross_input(in, in->bytes / (size_t)in->max_local);
  select_params_t shared = algo_family_cross_params(prm, in->max_local);
  double part = (double)c.bytes;
  double ring = algo_ag_ring_time(&shared, &c, part), rd = algo_ag_rd_time(&shared, &c, part);
  return (ring < rd ? ring : rd) + 2 * sh->alpha + n * sh->beta;
}

const algo_desc_t algo_ag_hier = {
    .select = {.id = RONDO_ALGO_HIERARCHICAL, .name = "hierarchical", .mem = SELECT_MEM_HOST,
               .cannot_run = algo_hier_blocks_cannot_run,
               .not_chosen = algo_hier_blocks_not_chosen, .cost = cost},
    .collectives = ALGO_SERVES_ALLGATHER,
    .blocks = allgather_hier,
};
