/*
 * Hierarchical all-reduce, for comms that span nodes:
 *   1. node reduce-scatter through shared memory (shm.c): each local rank
 *      ends with the node's sum of the slices it owns;
 *   2. the owners of slice g on every node all-reduce it over cross[g]
 *      (topo.h); different slices go in parallel on different ranks;
 *   3. node allgather through shared memory.
 * Only 1/L of the buffer crosses the network per rank, instead of the whole
 * buffer through a flat algorithm, and each node's link carries L streams
 * that together move 2 (N-1)/N of the buffer: the least any all-reduce
 * over N nodes can send through it.
 *
 * Pipelined above one stripe (RONDO_HIER_CHUNK_BYTES, 1 MiB): the buffer is
 * cut into stripes and stripe j's cross-node all-reduces (MPI_Iallreduce on
 * the cross communicators) run while the node reduce-scatters stripe j+1
 * and gathers stripe j-1, so the link stays busy while the cores copy and
 * reduce. MPI moves a nonblocking collective only inside MPI calls, so the
 * shared-memory phases test the requests after every round and while they
 * wait (shm_run_with). Below one stripe the phases run one after another,
 * the cross phase by ring or recursive doubling as the cost model says.
 *
 * Unequal nodes (3+1, say): slices are cut by the largest node size G, and
 * on a node of L < G ranks local rank r owns slices r, r+L, ..., so every
 * slice has exactly one owner per node; a rank with several slices runs
 * their cross-node all-reduces one after another. Each slice's final value
 * comes out of one cross all-reduce (identical on its owners) and is copied
 * by the allgather, so every rank ends with the same bytes.
 */
#include "algo/shm.h"

#include <math.h>
#include <stdlib.h>

#include "topo/topo.h"

/* The candidates for a cross-node slice: one rank per node. */
static const select_algo_t *const cross_algos[] = {&algo_ring.select,
                                                   &algo_recursive_doubling.select};
static const select_menu_t cross_menu = {2, cross_algos};

/* The model's parameters for the cross phase: every local rank crosses at
 * once, so the node's link is shared by max_local streams. */
static select_params_t cross_params(const select_params_t *prm, int max_local)
{
  select_params_t p = *prm;
  p.inter.beta *= max_local;
  return p;
}

static select_input_t cross_input(const select_input_t *in, double bytes)
{
  select_input_t c = *in;
  c.bytes = (size_t)bytes;
  c.count = in->count / (size_t)in->max_local;
  c.ranks = in->nodes;
  c.min_local = c.max_local = 1;
  return c;
}

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
  select_input_t whole = algo_input(a->comm, a->count, a->dtype, a->op);
  select_input_t in = cross_input(&whole, (double)(n * a->esize));
  in.count = n;
  select_result_t res;
  select_params_t params = algo_params(a->comm);
  params = cross_params(&params, whole.max_local);
  rondo_algo_t pick = select_choose(&params, &cross_menu, NULL, RONDO_ALGO_AUTO, &in, &res);
  return (pick == RONDO_ALGO_RECURSIVE_DOUBLING ? &algo_recursive_doubling : &algo_ring)
      ->allreduce(&c);
}

static rondo_status_t hier_phases(const algo_allreduce_args_t *a)
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

/* ---- the pipeline ------------------------------------------------------------- */

typedef struct {
  MPI_Request *req; /* [2 * slices]: stripe parity x slice */
  int n;
} inflight_t;

/* MPI_Test one by one: GCC 12 misreads MPICH's MPI_STATUSES_IGNORE (p2p.c). */
static void test_inflight(void *arg)
{
  inflight_t *f = arg;
  int done;
  for (int i = 0; i < f->n; i++)
    if (f->req[i] != MPI_REQUEST_NULL)
      (void)MPI_Test(&f->req[i], &done, MPI_STATUS_IGNORE); /* errors: at the wait */
}

/* Stripe j of a: elements [j * stripe, ...). Only the first stripe agrees
 * on the call (shm.c), when anything is left to agree. */
static algo_allreduce_args_t stripe_of(const algo_allreduce_args_t *a, size_t stripe, size_t j)
{
  algo_allreduce_args_t s = *a;
  size_t off = j * stripe;
  s.sendbuf = (const char *)a->sendbuf + off * a->esize;
  s.recvbuf = (char *)a->recvbuf + off * a->esize;
  s.count = a->count - off < stripe ? a->count - off : stripe;
  if (j > 0)
    s.agree = NULL;
  return s;
}

/* The cross-node all-reduces of this rank's slices of stripe s. */
static rondo_status_t start_cross(const algo_allreduce_args_t *s, MPI_Datatype mtype, MPI_Op mop,
                                  MPI_Request *req)
{
  const topo_t *topo = s->comm->topo;
  for (int g = 0; g < topo->slices; g++) {
    req[g] = MPI_REQUEST_NULL;
    if (topo_owner(g, topo->local_size) != topo->local_rank)
      continue;
    size_t off, n;
    topo_slice(s->count, topo->slices, g, &off, &n);
    if (n > 0)
      MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, (char *)s->recvbuf + off * s->esize, (int)n, mtype,
                               mop, topo->cross[g], &req[g]));
  }
  return RONDO_SUCCESS;
}

static rondo_status_t hier_pipelined(const algo_allreduce_args_t *a, size_t stripe)
{
  rondo_comm_t comm = a->comm;
  int slices = comm->topo->slices;
  size_t stripes = (a->count + stripe - 1) / stripe;
  MPI_Datatype mtype;
  MPI_Op mop;
  RONDO_CHECK(algo_mpi_op(a->dtype, a->op, &mtype, &mop));
  MPI_Request *req = malloc(2 * (size_t)slices * sizeof *req);
  if (req == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "hierarchical: %d requests", 2 * slices);
  for (int i = 0; i < 2 * slices; i++)
    req[i] = MPI_REQUEST_NULL;
  inflight_t f = {req, 2 * slices};
  rondo_status_t st = RONDO_SUCCESS;
  for (size_t j = 0; j <= stripes && st == RONDO_SUCCESS; j++) {
    if (j < stripes) {
      algo_allreduce_args_t s = stripe_of(a, stripe, j);
      st = shm_run_with(&s, SHM_REDUCE_SCATTER, test_inflight, &f);
      if (st == RONDO_SUCCESS)
        st = start_cross(&s, mtype, mop, req + (j % 2) * (size_t)slices);
    }
    if (j > 0 && st == RONDO_SUCCESS) {
      algo_allreduce_args_t s = stripe_of(a, stripe, j - 1);
      st = algo_waitall(comm, slices, req + ((j - 1) % 2) * (size_t)slices);
      if (st == RONDO_SUCCESS)
        st = shm_run_with(&s, SHM_ALLGATHER, test_inflight, &f);
    }
  }
  for (int i = 0; st != RONDO_SUCCESS && i < 2 * slices; i++)
    (void)MPI_Wait(&req[i], MPI_STATUS_IGNORE); /* collective requests cannot be freed */
  free(req);
  return st;
}

static rondo_status_t allreduce_hier(const algo_allreduce_args_t *a)
{
  size_t stripe = a->comm->cfg.hier_chunk / a->esize;
  if (a->comm->topo->node_count < 2 || stripe == 0 || a->count <= stripe)
    return hier_phases(a);
  return hier_pipelined(a, stripe);
}

/* Cost. The node phases: reduce-scatter alpha + (beta + gamma) n and
 * allgather alpha + beta n at the shm level. The cross phase: the cheaper
 * of ring and recursive doubling on n/L bytes among N ranks at the inter
 * level, whose link the L ranks of a node share (beta x L): together they
 * move 2 (N-1)/N n through it. Up to one stripe the three add up. Above,
 * k stripes: the cores' work (both node phases) and the link's (k cross
 * phases of a stripe each) overlap, all but one stripe of the smaller:
 * max(C, X) + min(C, X) / k. */
static double cost(const select_params_t *prm, const select_input_t *in)
{
  const select_level_t *sh = &prm->shm;
  double n = (double)in->bytes;
  double cores = 2 * sh->alpha + (2 * sh->beta + sh->gamma) * n;
  select_params_t link = cross_params(prm, in->max_local);
  double chunk = (double)(prm->hier_chunk ? prm->hier_chunk : (size_t)1 << 20);
  double k = in->nodes > 1 && n > chunk ? ceil(n / chunk) : 1;
  double piece = n / k, slice = piece / in->max_local;
  select_input_t cin = cross_input(in, slice);
  double ring = algo_ring_time(&link.inter, slice, in->nodes, prm->ring_chunk);
  double rd = algo_rd_time(&link, &cin, slice, 0);
  double wire = k * (ring < rd ? ring : rd);
  if (k == 1)
    return cores + wire;
  double hi = cores > wire ? cores : wire, lo = cores > wire ? wire : cores;
  return hi + lo / k;
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
