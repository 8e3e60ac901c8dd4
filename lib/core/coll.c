/*
 * The blocking collective entry points: validate arguments, agree on them
 * across ranks (agree.c), choose the algorithm and run it on the caller's
 * thread.
 *
 * Validation order is fixed so every rank reports the same kind of error for
 * the same mistake: library state, comm, dtype, op, algorithm, root, count
 * overflow, buffers.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "reduce/reduce.h"
#include "select/select.h"
#include "topo/topo.h"

/* ---- local argument checks ------------------------------------------------------ */

rondo_status_t rondo__check_dtype(rondo_dtype_t dtype)
{
  if ((unsigned)dtype >= RONDO_DTYPE_COUNT)
    return rondo__fail(RONDO_ERR_INVALID_DTYPE,
                       "dtype %d is not a rondo_dtype_t (0..%d)", (int)dtype,
                       RONDO_DTYPE_COUNT - 1);
  return RONDO_SUCCESS;
}

rondo_status_t rondo__check_op(rondo_op_t op)
{
  if ((unsigned)op >= RONDO_OP_COUNT)
    return rondo__fail(RONDO_ERR_INVALID_OP, "op %d is not a rondo_op_t (0..%d)",
                       (int)op, RONDO_OP_COUNT - 1);
  return RONDO_SUCCESS;
}

rondo_status_t rondo__check_buffer(const void *buf, size_t count, const char *name)
{
  if (buf == NULL && count > 0)
    return rondo__fail(RONDO_ERR_NULL_BUFFER, "%s is NULL with count %zu", name, count);
  return RONDO_SUCCESS;
}

rondo_status_t rondo__bytes(size_t count, size_t esize, size_t *bytes)
{
  if (esize != 0 && count > SIZE_MAX / esize)
    return rondo__fail(RONDO_ERR_COUNT_OVERFLOW,
                       "count %zu x %zu-byte elements overflows size_t", count, esize);
  *bytes = count * esize;
  return RONDO_SUCCESS;
}

/* The bytes of all ranks' blocks (allgather, reduce_scatter, alltoall). */
static rondo_status_t all_blocks(const char *fn, rondo_comm_t comm, size_t bytes, size_t *total)
{
  if (bytes > SIZE_MAX / (size_t)comm->size)
    return rondo__fail(RONDO_ERR_COUNT_OVERFLOW,
                       "%s: %zu bytes per rank x %d ranks overflows size_t", fn, bytes,
                       comm->size);
  *total = bytes * (size_t)comm->size;
  return RONDO_SUCCESS;
}

static rondo_status_t check_root(rondo_comm_t comm, int root)
{
  if (root < 0 || root >= comm->size)
    return rondo__fail(RONDO_ERR_INVALID_ROOT, "root %d is not a rank of this comm (0..%d)",
                       root, comm->size - 1);
  return RONDO_SUCCESS;
}

/* ---- all-reduce ------------------------------------------------------------------ */

/* What the selector needs to know about a call on this comm. */
static select_input_t selection_input(rondo_comm_t comm, size_t count, size_t bytes)
{
  select_input_t in = {
      .count = count, .bytes = bytes, .ranks = comm->size,
      .nodes = comm->topo->node_count, .min_local = comm->topo->min_local,
      .max_local = comm->topo->max_local, .mem = SELECT_MEM_HOST,
      .available = 1u << RONDO_ALGO_MPI | 1u << RONDO_ALGO_RING |
                   1u << RONDO_ALGO_RECURSIVE_DOUBLING | 1u << RONDO_ALGO_RABENSEIFNER |
                   1u << RONDO_ALGO_SHM | 1u << RONDO_ALGO_HIERARCHICAL};
  return in;
}

/* RONDO_ALLREDUCE_ALGO, then the tuning table, then the cost model. */
static rondo_algo_t choose(rondo_comm_t comm, size_t count, size_t bytes,
                           select_result_t *res)
{
  select_input_t in = selection_input(comm, count, bytes);
  select_params_t params = select_default_params;
  params.ring_chunk = rondo__knobs.ring_chunk;
  rondo_algo_t algo = select_choose(&params, rondo__tuning, rondo__knobs.allreduce_algo, &in, res);
  LOG_DEBUG("allreduce of %zu bytes on %d ranks / %d nodes: %s (%s)", bytes, comm->size,
            comm->topo->node_count, rondo_algo_name(algo), res->reason);
  return algo;
}

typedef rondo_status_t (*allreduce_fn)(const algo_allreduce_args_t *);

static allreduce_fn algorithm(rondo_algo_t algo)
{
  switch (algo) {
  case RONDO_ALGO_MPI: return algo_allreduce_mpi;
  case RONDO_ALGO_RING: return algo_allreduce_ring;
  case RONDO_ALGO_RECURSIVE_DOUBLING: return algo_allreduce_rd;
  case RONDO_ALGO_RABENSEIFNER: return algo_allreduce_rabenseifner;
  case RONDO_ALGO_SHM: return algo_allreduce_shm;
  case RONDO_ALGO_HIERARCHICAL: return algo_allreduce_hier;
  default: return NULL;
  }
}

static rondo_status_t check_algo(rondo_algo_t algo)
{
  if ((unsigned)algo >= RONDO_ALGO_COUNT)
    return rondo__fail(RONDO_ERR_INVALID_ALGO, "algorithm %d is not a rondo_algo_t (0..%d)",
                       (int)algo, RONDO_ALGO_COUNT - 1);
  if (algo != RONDO_ALGO_AUTO && algorithm(algo) == NULL)
    return rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "the %s all-reduce is not available in rondo %s; use auto, mpi, "
                       "ring, recursive_doubling, rabenseifner, shm or hierarchical",
                       rondo_algo_name(algo), RONDO_VERSION_STRING);
  return RONDO_SUCCESS;
}

static rondo_status_t allreduce_args(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                     size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                     rondo_algo_t algo, size_t *bytes)
{
  RONDO_CHECK(rondo__check_dtype(dtype));
  RONDO_CHECK(rondo__check_op(op));
  RONDO_CHECK(check_algo(algo));
  RONDO_CHECK(rondo__bytes(count, rondo_dtype_size(dtype), bytes));
  RONDO_CHECK(rondo__check_buffer(sendbuf, count, "sendbuf"));
  RONDO_CHECK(rondo__check_buffer(recvbuf, count, "recvbuf"));
  return RONDO_SUCCESS;
}

/* AUTO resolved through the per-comm cache of the last decision. */
static rondo_status_t resolve(rondo_comm_t comm, size_t count, size_t bytes, rondo_algo_t *algo)
{
  if (*algo != RONDO_ALGO_AUTO)
    return RONDO_SUCCESS;
  if (comm->last_algo != RONDO_ALGO_AUTO && comm->last_count == count &&
      comm->last_bytes == bytes) {
    *algo = (rondo_algo_t)comm->last_algo;
    return RONDO_SUCCESS;
  }
  select_result_t res;
  *algo = choose(comm, count, bytes, &res);
  comm->last_count = count;
  comm->last_bytes = bytes;
  comm->last_algo = *algo;
  if (*algo == RONDO_ALGO_AUTO)
    return rondo__fail(RONDO_ERR_UNSUPPORTED, "no all-reduce algorithm is eligible: %s",
                       res.reason);
  return check_algo(*algo); /* RONDO_ALLREDUCE_ALGO may name one not built */
}

/* The data movement of one all-reduce whose algorithm is resolved. agree:
 * the signature shm is to agree on in its first round, or NULL. */
static rondo_status_t run(rondo_comm_t comm, const void *sendbuf, void *recvbuf, size_t count,
                          rondo_dtype_t dtype, rondo_op_t op, rondo_algo_t algo,
                          const rondo__sig_t *agree)
{
  if (count == 0)
    return RONDO_SUCCESS;
  algo_allreduce_args_t a = {
      .comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
      .dtype = dtype, .op = op == RONDO_AVG ? RONDO_SUM : op,
      .esize = rondo_dtype_size(dtype), .agree = agree};
  LOG_DEBUG("allreduce %zu x %s %s: %s", count, rondo_dtype_name(dtype), rondo_op_name(op),
            rondo_algo_name(algo));
  RONDO_CHECK(algorithm(algo)(&a));
  if (op == RONDO_AVG)
    reduce_average(recvbuf, count, dtype, comm->size);
  return RONDO_SUCCESS;
}

rondo_status_t rondo__allreduce_run(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                    rondo_algo_t algo)
{
  RONDO_CHECK(check_algo(algo));
  RONDO_CHECK(resolve(comm, count, count * rondo_dtype_size(dtype), &algo));
  return run(comm, sendbuf, recvbuf, count, dtype, op, algo, NULL);
}

rondo_status_t rondo_allreduce_algo(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                    rondo_algo_t algo)
{
  size_t bytes = 0;
  RONDO_CHECK(rondo__enter(comm));
  rondo_status_t st = allreduce_args(comm, sendbuf, recvbuf, count, dtype, op, algo, &bytes);
  if (st == RONDO_SUCCESS)
    st = resolve(comm, count, bytes, &algo);

  rondo__sig_t sig = {.what = "rondo_allreduce"};
  rondo__sig_add(&sig, "count", (int64_t)count);
  rondo__sig_add(&sig, "dtype", dtype);
  rondo__sig_add(&sig, "op", op);
  rondo__sig_add(&sig, "algorithm", algo);
  /* shm agrees in its first round, with the data (free); the others first.
   * (The first shm call makes the shared window, a collective step: it
   * agrees first too.) */
  if (st == RONDO_SUCCESS && algo == RONDO_ALGO_SHM && count > 0 && rondo__board_active(comm) &&
      comm->shm != NULL && !rondo__agree_skip)
    return run(comm, sendbuf, recvbuf, count, dtype, op, algo, &sig);
  RONDO_CHECK(rondo__agree(comm, st, &sig));
  return run(comm, sendbuf, recvbuf, count, dtype, op, algo, NULL);
}

rondo_status_t rondo_allreduce(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                               size_t count, rondo_dtype_t dtype, rondo_op_t op)
{
  return rondo_allreduce_algo(comm, sendbuf, recvbuf, count, dtype, op, RONDO_ALGO_AUTO);
}

rondo_status_t rondo_allreduce_choice(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                                      rondo_op_t op, rondo_algo_t *algo)
{
  size_t bytes = 0;
  RONDO_CHECK(rondo__enter(comm));
  RONDO_CHECK(rondo__check_dtype(dtype));
  RONDO_CHECK(rondo__check_op(op));
  RONDO_CHECK(rondo__bytes(count, rondo_dtype_size(dtype), &bytes));
  if (algo == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_allreduce_choice: algo is NULL");
  select_result_t res;
  rondo_algo_t choice = choose(comm, count, bytes, &res);
  if (choice == RONDO_ALGO_AUTO)
    return rondo__fail(RONDO_ERR_UNSUPPORTED, "no all-reduce algorithm is eligible: %s",
                       res.reason);
  RONDO_CHECK(check_algo(choice)); /* RONDO_ALLREDUCE_ALGO may name one not built */
  *algo = choice;
  return RONDO_SUCCESS;
}

rondo_status_t rondo_explain(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                             rondo_op_t op, char *buf, size_t len)
{
  size_t bytes = 0;
  RONDO_CHECK(rondo__enter(comm));
  RONDO_CHECK(rondo__check_dtype(dtype));
  RONDO_CHECK(rondo__check_op(op));
  RONDO_CHECK(rondo__bytes(count, rondo_dtype_size(dtype), &bytes));
  if (buf == NULL && len > 0)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_explain: buf is NULL with len %zu", len);
  select_result_t res;
  choose(comm, count, bytes, &res);
  select_input_t in = selection_input(comm, count, bytes);
  int want = select_explain(&res, &in, buf, len);
  if (want >= 0 && (size_t)want >= len)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_explain: the explanation needs %d bytes, buf has %zu", want + 1,
                       len);
  return RONDO_SUCCESS;
}

/* ---- data movement and reduce-scatter ------------------------------------------- */

rondo_status_t rondo_broadcast(rondo_comm_t comm, void *buf, size_t count,
                               rondo_dtype_t dtype, int root)
{
  size_t bytes = 0;
  RONDO_CHECK(rondo__enter(comm));
  rondo_status_t st = rondo__check_dtype(dtype);
  if (st == RONDO_SUCCESS)
    st = check_root(comm, root);
  if (st == RONDO_SUCCESS)
    st = rondo__bytes(count, rondo_dtype_size(dtype), &bytes);
  if (st == RONDO_SUCCESS)
    st = rondo__check_buffer(buf, count, "buf");
  rondo__sig_t sig = {.what = "rondo_broadcast"};
  rondo__sig_add(&sig, "count", (int64_t)count);
  rondo__sig_add(&sig, "dtype", dtype);
  rondo__sig_add(&sig, "root", root);
  RONDO_CHECK(rondo__agree(comm, st, &sig));
  return bytes ? algo_broadcast(comm, buf, bytes, root) : RONDO_SUCCESS;
}

rondo_status_t rondo_allgather(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                               size_t count, rondo_dtype_t dtype)
{
  size_t bytes = 0, total = 0;
  RONDO_CHECK(rondo__enter(comm));
  rondo_status_t st = rondo__check_dtype(dtype);
  if (st == RONDO_SUCCESS)
    st = rondo__bytes(count, rondo_dtype_size(dtype), &bytes);
  if (st == RONDO_SUCCESS)
    st = all_blocks("rondo_allgather", comm, bytes, &total);
  if (st == RONDO_SUCCESS)
    st = rondo__check_buffer(sendbuf, count, "sendbuf");
  if (st == RONDO_SUCCESS)
    st = rondo__check_buffer(recvbuf, count, "recvbuf");
  rondo__sig_t sig = {.what = "rondo_allgather"};
  rondo__sig_add(&sig, "count", (int64_t)count);
  rondo__sig_add(&sig, "dtype", dtype);
  RONDO_CHECK(rondo__agree(comm, st, &sig));
  return bytes ? algo_allgather(comm, sendbuf, recvbuf, bytes) : RONDO_SUCCESS;
}

/* FNV-1a over the counts and displacements, so one signature field tells
 * whether every rank passed the same layout. */
static int64_t layout_hash(const size_t *counts, const size_t *displs, int n)
{
  uint64_t h = RONDO__FNV_INIT;
  for (int i = 0; i < n; i++) {
    uint64_t v[2] = {counts[i], displs ? displs[i] : 0};
    h = rondo__fnv(h, v, sizeof v);
  }
  return (int64_t)(h >> 1);
}

static rondo_status_t allgatherv_args(rondo_comm_t comm, const void *sendbuf,
                                      size_t sendcount, void *recvbuf,
                                      const size_t *recvcounts, const size_t *displs,
                                      rondo_dtype_t dtype)
{
  size_t esize = rondo_dtype_size(dtype), bytes, end = 0;
  RONDO_CHECK(rondo__check_dtype(dtype));
  if (recvcounts == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_allgatherv: recvcounts is NULL");
  if (sendcount != recvcounts[comm->rank])
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_allgatherv: sendcount %zu != recvcounts[%d] = %zu",
                       sendcount, comm->rank, recvcounts[comm->rank]);
  for (int i = 0; i < comm->size; i++) {
    size_t start = displs ? displs[i] : end;
    if (start > SIZE_MAX - recvcounts[i])
      return rondo__fail(RONDO_ERR_COUNT_OVERFLOW, "rondo_allgatherv: block %d overflows", i);
    size_t stop = start + recvcounts[i];
    end = stop > end ? stop : end;
  }
  RONDO_CHECK(rondo__bytes(end, esize, &bytes));
  RONDO_CHECK(rondo__check_buffer(sendbuf, sendcount, "sendbuf"));
  RONDO_CHECK(rondo__check_buffer(recvbuf, end, "recvbuf"));
  return RONDO_SUCCESS;
}

rondo_status_t rondo_allgatherv(rondo_comm_t comm, const void *sendbuf, size_t sendcount,
                                void *recvbuf, const size_t *recvcounts,
                                const size_t *displs, rondo_dtype_t dtype)
{
  RONDO_CHECK(rondo__enter(comm));
  rondo_status_t st =
      allgatherv_args(comm, sendbuf, sendcount, recvbuf, recvcounts, displs, dtype);
  rondo__sig_t sig = {.what = "rondo_allgatherv"};
  rondo__sig_add(&sig, "dtype", dtype);
  rondo__sig_add(&sig, "recvcounts/displs",
                 st == RONDO_SUCCESS ? layout_hash(recvcounts, displs, comm->size) : 0);
  RONDO_CHECK(rondo__agree(comm, st, &sig));
  return algo_allgatherv(comm, sendbuf, recvbuf, recvcounts, displs,
                         rondo_dtype_size(dtype));
}

rondo_status_t rondo_reduce_scatter(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    size_t recvcount, rondo_dtype_t dtype, rondo_op_t op)
{
  size_t bytes = 0, total = 0;
  RONDO_CHECK(rondo__enter(comm));
  rondo_status_t st = rondo__check_dtype(dtype);
  if (st == RONDO_SUCCESS)
    st = rondo__check_op(op);
  if (st == RONDO_SUCCESS)
    st = rondo__bytes(recvcount, rondo_dtype_size(dtype), &bytes);
  if (st == RONDO_SUCCESS)
    st = all_blocks("rondo_reduce_scatter", comm, bytes, &total);
  if (st == RONDO_SUCCESS)
    st = rondo__check_buffer(sendbuf, recvcount, "sendbuf");
  if (st == RONDO_SUCCESS)
    st = rondo__check_buffer(recvbuf, recvcount, "recvbuf");
  if (st == RONDO_SUCCESS && recvcount > 0 && sendbuf == recvbuf)
    st = rondo__fail(RONDO_ERR_INVALID_ARG,
                     "rondo_reduce_scatter: in place (sendbuf == recvbuf) is not allowed");
  rondo__sig_t sig = {.what = "rondo_reduce_scatter"};
  rondo__sig_add(&sig, "recvcount", (int64_t)recvcount);
  rondo__sig_add(&sig, "dtype", dtype);
  rondo__sig_add(&sig, "op", op);
  RONDO_CHECK(rondo__agree(comm, st, &sig));
  if (recvcount == 0)
    return RONDO_SUCCESS;
  RONDO_CHECK(algo_reduce_scatter(comm, sendbuf, recvbuf, recvcount, dtype,
                                  op == RONDO_AVG ? RONDO_SUM : op));
  if (op == RONDO_AVG)
    reduce_average(recvbuf, recvcount, dtype, comm->size);
  return RONDO_SUCCESS;
}

rondo_status_t rondo_alltoall(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                              size_t count, rondo_dtype_t dtype)
{
  size_t bytes = 0, total = 0;
  RONDO_CHECK(rondo__enter(comm));
  rondo_status_t st = rondo__check_dtype(dtype);
  if (st == RONDO_SUCCESS)
    st = rondo__bytes(count, rondo_dtype_size(dtype), &bytes);
  if (st == RONDO_SUCCESS)
    st = all_blocks("rondo_alltoall", comm, bytes, &total);
  if (st == RONDO_SUCCESS)
    st = rondo__check_buffer(sendbuf, count, "sendbuf");
  if (st == RONDO_SUCCESS)
    st = rondo__check_buffer(recvbuf, count, "recvbuf");
  if (st == RONDO_SUCCESS && count > 0 && sendbuf == recvbuf)
    st = rondo__fail(RONDO_ERR_INVALID_ARG,
                     "rondo_alltoall: in place (sendbuf == recvbuf) is not allowed");
  rondo__sig_t sig = {.what = "rondo_alltoall"};
  rondo__sig_add(&sig, "count", (int64_t)count);
  rondo__sig_add(&sig, "dtype", dtype);
  RONDO_CHECK(rondo__agree(comm, st, &sig));
  return bytes ? algo_alltoall(comm, sendbuf, recvbuf, bytes) : RONDO_SUCCESS;
}

rondo_status_t rondo_barrier(rondo_comm_t comm)
{
  RONDO_CHECK(rondo__enter(comm));
  rondo__sig_t sig = {.what = "rondo_barrier"};
  /* On one node the argument board is itself a barrier. */
  RONDO_CHECK(rondo__agree(comm, RONDO_SUCCESS, &sig));
  return rondo__board_active(comm) ? RONDO_SUCCESS : algo_barrier(comm);
}
