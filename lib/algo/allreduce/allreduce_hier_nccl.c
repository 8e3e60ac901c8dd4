/*
 * Hierarchical NCCL all-reduce, for device buffers on comms that span nodes
 * (docs/gpu.md). With L ranks per node and N nodes:
 *   1. NCCL reduce-scatter inside the node (a communicator over the node's
 *      ranks, gpu_node_coll): local rank r gets the node's reduction of
 *      slice r, n/L elements (padded with the op's identity where L does
 *      not divide n);
 *   2. the slice goes down to pinned host memory, and the owners of slice
 *      r on every node all-reduce it over MPI (cross[r], the comm's
 *      cross-node communicator of that slice), by the host hierarchical
 *      algorithm's cross phase (ring or recursive doubling, as its model
 *      says: algo_hier_cross);
 *   3. the slice goes back up, and an NCCL allgather inside the node gives
 *      every rank the whole buffer.
 * Only 1/L of the buffer crosses the network per rank, through the host
 * (MPICH here is not CUDA-aware). NCCL needs one GPU per rank inside each
 * node only: ranks on different nodes may even share one GPU, so 2
 * emulated hosts x 1 rank on a one-GPU machine run it (each node's NCCL
 * communicator has one rank), where the flat nccl algorithm cannot.
 *
 * AVG: SUM throughout, then the division on the host slice, by the comm
 * size. Identical bytes on every rank: each slice's final value comes out
 * of one cross-node all-reduce (identical on its owners) and is copied by
 * the allgather. As in staging, a rank whose device step failed still takes
 * part in the cross-node all-reduce, from a buffer of its own.
 */
#include "algo/allreduce/hier_cross.h"
#include "algo/common/gpu.h"

#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"

#define COPY_BETA (1.0 / 25e9) /* pinned host <-> device, as staged's model */

static double cost(const select_params_t *prm, const select_input_t *in)
{
  int L = in->max_local > 0 ? in->max_local : 1, N = in->nodes > 0 ? in->nodes : 1;
  double slice = (double)in->bytes / L;
  select_level_t cross = prm->inter; /* the node's L slices share its link */
  cross.beta *= L;
  return algo_ring_time(&prm->intra, (double)in->bytes, L, prm->ring_chunk, 0) +
         2.0 * COPY_BETA * slice + algo_ring_time(&cross, slice, N, prm->ring_chunk, N > 1);
}

static const char *cannot_run(const select_input_t *in)
{
  const char *why = gpu_nccl_type_cannot_run(in);
  if (why != NULL || in->mem != SELECT_MEM_DEVICE)
    return why;
  if (in->min_local != in->max_local)
    return "nodes have different numbers of ranks";
  if (in->gpu_node_shared > 0)
    return "two ranks of a node share a GPU, which NCCL refuses (the GPUs line says which)";
  return NULL;
}

/* Where NCCL can span all ranks, it crosses the nodes itself, device to
 * device, with its own topology awareness: this algorithm, whose slices
 * go through host memory, is for where it cannot (GPUs shared across
 * nodes, emulated hosts) or for forcing. */
static const char *not_chosen(const select_input_t *in)
{
  if (in->nodes < 2)
    return "one node: use nccl";
  if (in->gpu_shared <= 0)
    return "nccl runs over all ranks (it crosses the nodes itself, device to device)";
  return NULL;
}

/* Steps 1 and the copy down: this rank's reduced slice into host (pinned).
 * pad, mine: device scratch for the padded input and the slice. */
static rondo_status_t down(rondo_comm_t comm, gpu_state_t *g, const algo_allreduce_args_t *a,
                           rondo_op_t op, size_t slice, char *pad, char *mine, char *host)
{
  size_t L = (size_t)comm->local_size, n = a->count, es = a->esize, tail = slice * L - n;
  dev_coll_t *node = NULL;
  RONDO_CHECK(gpu_node_coll(comm, &node));
  const void *src = a->sendbuf;
  if (tail > 0) { /* the input and the identity after it, in pad */
    char *id = host + slice * es; /* pinned, past the slice */
    reduce_identity(id, tail, a->dtype, op);
    RONDO_CHECK(g->dev->copy_async(pad, a->sendbuf, n * es, g->stream));
    RONDO_CHECK(g->dev->copy_async(pad + n * es, id, tail * es, g->stream));
    src = pad;
  }
  RONDO_CHECK(g->dev->coll_reduce_scatter(node, src, mine, slice, a->dtype, op, g->stream));
  RONDO_CHECK(gpu_wait_ready(comm, node, "enqueueing ncclReduceScatter"));
  RONDO_CHECK(g->dev->copy_async(host, mine, slice * es, g->stream));
  RONDO_CHECK(g->dev->event_record(g->event[1], g->stream));
  return gpu_wait(comm, g->event[1], "the node reduce-scatter and its copy down");
}

/* The copy up and step 3. */
static rondo_status_t up(rondo_comm_t comm, gpu_state_t *g, const algo_allreduce_args_t *a,
                         size_t slice, char *pad, char *mine, const char *host)
{
  size_t L = (size_t)comm->local_size, n = a->count, es = a->esize;
  dev_coll_t *node = g->node_coll;
  char *dst = slice * L == n ? (char *)a->recvbuf : pad;
  RONDO_CHECK(g->dev->copy_async(mine, host, slice * es, g->stream));
  RONDO_CHECK(g->dev->coll_allgather(node, mine, dst, slice * es, g->stream));
  RONDO_CHECK(gpu_wait_ready(comm, node, "enqueueing ncclAllGather"));
  if (dst != a->recvbuf)
    RONDO_CHECK(g->dev->copy_async(a->recvbuf, dst, n * es, g->stream));
  RONDO_CHECK(g->dev->event_record(g->event[2], g->stream));
  return gpu_wait(comm, g->event[2], "the node allgather");
}

static rondo_status_t run(const algo_allreduce_args_t *a)
{
  rondo_comm_t comm = a->comm;
  gpu_state_t *g;
  int prev;
  size_t L = (size_t)comm->local_size, es = a->esize;
  size_t slice = (a->count + L - 1) / L;
  rondo_op_t op = a->op == RONDO_AVG ? RONDO_SUM : a->op;
  rondo_comm_t cross = comm->cross != NULL ? comm->cross[comm->local_rank] : NULL;
  /* this rank's preparation, agreed before the node's collectives */
  rondo_status_t st = gpu_enter(comm, &g, &prev);
  if (st == RONDO_SUCCESS)
    st = gpu_scratch(g, (slice * L + slice) * es); /* the padded input, the slice */
  if (st == RONDO_SUCCESS)
    st = gpu_stage(g, (slice + L) * es);
  if (st == RONDO_SUCCESS && cross == NULL)
    st = rondo__fail(RONDO_ERR_INTERNAL, "hierarchical_nccl: no cross-node comm for slice %d",
                     comm->local_rank);
  if ((st = rondo__agree_ready(comm->mpi, st, "its hierarchical_nccl buffers")) != RONDO_SUCCESS) {
    gpu_leave(g, prev);
    return st;
  }
  char *pad = g->dscratch, *mine = pad + slice * L * es, *host = g->stage, *spare = NULL;
  if ((st = down(comm, g, a, op, slice, pad, mine, host)) != RONDO_SUCCESS) {
    if (g->broken == RONDO_SUCCESS)
      st = gpu_fail(comm, st);
    if ((spare = calloc(slice ? slice : 1, es)) != NULL)
      host = spare; /* the stream may still hold the stage */
  }
  /* always: the owners of this slice on the other nodes are in it */
  rondo_status_t r = algo_hier_cross(comm, cross, host, slice, slice * L, a->dtype, op);
  if (st == RONDO_SUCCESS && r != RONDO_SUCCESS)
    st = gpu_fail(comm, r); /* the node's ranks wait in its allgather */
  if (st == RONDO_SUCCESS && a->op == RONDO_AVG)
    reduce_average(host, slice, a->dtype, comm->size);
  if (st == RONDO_SUCCESS && (st = up(comm, g, a, slice, pad, mine, host)) != RONDO_SUCCESS &&
      g->broken == RONDO_SUCCESS)
    st = gpu_fail(comm, st);
  free(spare);
  gpu_leave(g, prev);
  /* A rank that failed took part in the cross-node step with a buffer of
   * its own: every rank learns whether every rank succeeded. */
  if (st == RONDO_SUCCESS)
    st = gpu_heard(comm);
  return rondo__agree_ready(comm->mpi, st, "its part of the hierarchical_nccl all-reduce");
}

const algo_desc_t algo_hierarchical_nccl = {
    .select = {.id = RONDO_ALGO_HIERARCHICAL_NCCL, .name = "hierarchical_nccl",
               .mem = SELECT_MEM_DEVICE, .cannot_run = cannot_run, .not_chosen = not_chosen,
               .cost = cost},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = run,
};
