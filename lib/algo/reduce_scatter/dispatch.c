/*
 * The reduce-scatter dispatch: the comm's choice among the family's members
 * (family.c), then the run through the member's descriptor. lib/api's
 * blocking calls, lib/engine's fused requests and the device path's host
 * part all come through here.
 *
 * Device buffers take algo_reduce_scatter_device: the family's nccl and
 * staged members, with the caller's op and buffers as they are.
 *
 * What no host member needs to know is done here once: one rank copies its
 * block; an in-place call (recvbuf is sendbuf or this rank's block of it)
 * reduces into a block of scratch and copies it over, since most members
 * still read the whole input while they write their result (shm takes
 * recvbuf at this rank's block as it is: blocks_in_place); AVG is a SUM
 * divided by the comm size.
 */
#include "algo/common/blocks.h"

#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"

/* Whether [a, a + an) and [b, b + bn) share a byte. */
static int overlaps(const void *a, size_t an, const void *b, size_t bn)
{
  const char *x = a, *y = b;
  return an > 0 && bn > 0 && x < y + bn && y < x + an;
}

rondo_status_t algo_reduce_scatter_run(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                       const size_t *recvcounts, rondo_dtype_t dtype,
                                       rondo_op_t op, rondo_algo_t algo,
                                       const agree_sig_t *agree)
{
  int p = comm->size;
  size_t esize = rondo_dtype_size(dtype);
  select_input_t in = algo_family_input(comm, RONDO_COLL_REDUCE_SCATTER, recvcounts, 0, dtype,
                                        op == RONDO_AVG ? RONDO_SUM : op);
  RONDO_CHECK(algo_family_refuse(comm, algo_family_resolve(comm, &in, &algo), agree));
  size_t *displs = malloc(((size_t)p + 1) * sizeof *displs);
  if (displs == NULL)
    return algo_family_refuse(
        comm, rondo__fail(RONDO_ERR_NO_MEMORY, "reduce-scatter: %d offsets", p), agree);
  displs[0] = 0;
  for (int i = 0; i < p; i++)
    displs[i + 1] = displs[i] + recvcounts[i];
  size_t mine = recvcounts[comm->rank], bytes = mine * esize;
  rondo_status_t st = RONDO_SUCCESS;
  const algo_desc_t *member = algo_family_find(RONDO_COLL_REDUCE_SCATTER, algo);
  int at_block = (const char *)recvbuf == (const char *)sendbuf + displs[comm->rank] * esize;
  void *out = recvbuf;
  if (overlaps(sendbuf, in.bytes, recvbuf, bytes) && !(at_block && member->blocks_in_place))
    st = algo_family_refuse(comm, algo_result_scratch(comm, bytes, &out), agree);
  if (st == RONDO_SUCCESS && in.count > 0) {
    algo_blocks_args_t a = {.comm = comm, .sendbuf = sendbuf, .recvbuf = out,
                            .counts = recvcounts, .displs = displs, .total = in.count,
                            .packed = 1, .dtype = dtype, .op = in.op, .esize = esize,
                            .agree = agree};
    LOG_DEBUG("reduce-scatter %zu x %s %s: %s", in.count, rondo_dtype_name(dtype),
              rondo_op_name(op), rondo_algo_name(algo));
    if (p == 1) {
      if (out != sendbuf)
        memcpy(out, sendbuf, bytes);
    } else {
      st = member->blocks(&a);
    }
  }
  if (st == RONDO_SUCCESS && out != recvbuf && bytes > 0)
    memcpy(recvbuf, out, bytes);
  if (st == RONDO_SUCCESS && op == RONDO_AVG && mine > 0)
    reduce_average(recvbuf, mine, dtype, p);
  free(displs);
  return st;
}

rondo_status_t algo_reduce_scatter_block(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                         size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                         rondo_algo_t algo, const agree_sig_t *agree)
{
  size_t *counts = malloc((size_t)comm->size * sizeof *counts);
  if (counts == NULL)
    return algo_family_refuse(
        comm, rondo__fail(RONDO_ERR_NO_MEMORY, "reduce-scatter: %d counts", comm->size), agree);
  for (int i = 0; i < comm->size; i++)
    counts[i] = count;
  rondo_status_t st =
      algo_reduce_scatter_run(comm, sendbuf, recvbuf, counts, dtype, op, algo, agree);
  free(counts);
  return st;
}

/* The staged member's host part (algo_blocks_args_t.host). */
static rondo_status_t host_run(const algo_blocks_args_t *a, const void *sendbuf, void *recvbuf)
{
  return algo_reduce_scatter_run(a->comm, sendbuf, recvbuf, a->counts, a->dtype, a->op,
                                 RONDO_ALGO_AUTO, NULL);
}

rondo_status_t algo_reduce_scatter_device(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                          size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                          rondo_algo_t algo)
{
  int p = comm->size;
  size_t *counts = malloc((2 * (size_t)p + 1) * sizeof *counts);
  if (counts == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "reduce-scatter: %d counts", p);
  size_t *displs = counts + p;
  for (int i = 0; i <= p; i++) {
    if (i < p)
      counts[i] = count;
    displs[i] = (size_t)i * count;
  }
  select_input_t in = algo_family_input_mem(comm, RONDO_COLL_REDUCE_SCATTER, NULL, count, dtype,
                                            op, SELECT_MEM_DEVICE);
  rondo_status_t st = algo_family_resolve(comm, &in, &algo);
  if (st == RONDO_SUCCESS) {
    algo_blocks_args_t a = {.comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf,
                            .counts = counts, .displs = displs, .total = in.count, .packed = 1,
                            .dtype = dtype, .op = op, .esize = rondo_dtype_size(dtype),
                            .host = host_run};
    LOG_DEBUG("reduce-scatter %zu x %s %s on device buffers: %s", in.count,
              rondo_dtype_name(dtype), rondo_op_name(op), rondo_algo_name(algo));
    st = algo_family_find(RONDO_COLL_REDUCE_SCATTER, algo)->blocks(&a);
  }
  free(counts);
  return st;
}
