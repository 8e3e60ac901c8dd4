/*
 * The blocking collective entry points: validate arguments, agree on them
 * across ranks (lib/algo/agree/agree.c), choose the algorithm and run it on the
 * caller's thread (lib/algo/allreduce/dispatch.c); and the questions about the
 * choice (rondo_allreduce_choice, rondo_explain, rondo_algo_available).
 *
 * Validation order is fixed so every rank reports the same kind of error for
 * the same mistake: library state, comm, dtype, op, algorithm, root, count
 * overflow, buffers.
 */
#include "api/api.h"

#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/common/blocks.h"
#include "algo/common/gpu.h"
#include "algo/common/shared_alloc.h"
#include "device/device.h"
#include "reduce/reduce.h"
#include "topo/topo.h"

/* ---- local argument checks ------------------------------------------------------ */

rondo_status_t api_check_dtype(rondo_dtype_t dtype)
{
  if ((unsigned)dtype >= RONDO_DTYPE_COUNT)
    return rondo__fail(RONDO_ERR_INVALID_DTYPE,
                       "dtype %d is not a rondo_dtype_t (0..%d)", (int)dtype,
                       RONDO_DTYPE_COUNT - 1);
  return RONDO_SUCCESS;
}

rondo_status_t api_check_op(rondo_op_t op)
{
  if ((unsigned)op >= RONDO_OP_COUNT)
    return rondo__fail(RONDO_ERR_INVALID_OP, "op %d is not a rondo_op_t (0..%d)",
                       (int)op, RONDO_OP_COUNT - 1);
  return RONDO_SUCCESS;
}

rondo_status_t api_check_elementwise_op(const char *fn, rondo_op_t op)
{
  if (op == RONDO_ADASUM)
    return rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "%s: op adasum combines whole tensors and is for all-reduce only", fn);
  return RONDO_SUCCESS;
}

rondo_status_t api_check_buffer(const void *buf, size_t count, const char *name)
{
  if (buf == NULL && count > 0)
    return rondo__fail(RONDO_ERR_NULL_BUFFER, "%s is NULL with count %zu", name, count);
  return RONDO_SUCCESS;
}

rondo_status_t api_check_overlap(const char *fn, const void *sendbuf, size_t sbytes,
                                 const void *recvbuf, size_t rbytes)
{
  return api_check_overlap_except(fn, sendbuf, sbytes, recvbuf, rbytes, recvbuf);
}

rondo_status_t api_check_overlap_except(const char *fn, const void *sendbuf, size_t sbytes,
                                        const void *recvbuf, size_t rbytes,
                                        const void *in_place)
{
  uintptr_t s = (uintptr_t)sendbuf, r = (uintptr_t)recvbuf;
  if (sendbuf == NULL || recvbuf == NULL || sbytes == 0 || rbytes == 0 || sendbuf == in_place)
    return RONDO_SUCCESS;
  if (s < r + rbytes && r < s + sbytes)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "%s: sendbuf (%p, %zu bytes) and recvbuf (%p, %zu bytes) overlap; for "
                       "in place pass the same pointer",
                       fn, sendbuf, sbytes, recvbuf, rbytes);
  return RONDO_SUCCESS;
}

rondo_status_t api_bytes(size_t count, size_t esize, size_t *bytes)
{
  if (esize != 0 && count > SIZE_MAX / esize)
    return rondo__fail(RONDO_ERR_COUNT_OVERFLOW,
                       "count %zu x %zu-byte elements overflows size_t", count, esize);
  *bytes = count * esize;
  return RONDO_SUCCESS;
}

/* The calls that run host algorithms only (alltoall, allgatherv, the
 * engine's broadcast and allgather) refuse device buffers (on every rank,
 * through the agreement, for the blocking ones). */
rondo_status_t api_host_only(const char *fn, const void *buf, const char *name)
{
  int device = -1;
  RONDO_CHECK(dev_memory_device(buf, &device));
  if (device >= 0)
    return rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "%s: %s is memory of device %d; this call takes host buffers only "
                       "in this release (docs/gpu.md)",
                       fn, name, device);
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

rondo_status_t api_check_algo(rondo_algo_t algo)
{
  if ((unsigned)algo >= RONDO_ALGO_COUNT)
    return rondo__fail(RONDO_ERR_INVALID_ALGO, "algorithm %d is not a rondo_algo_t (0..%d)",
                       (int)algo, RONDO_ALGO_COUNT - 1);
  return RONDO_SUCCESS;
}

static rondo_status_t allreduce_args(const void *sendbuf, void *recvbuf, size_t count,
                                     rondo_dtype_t dtype, rondo_op_t op, rondo_algo_t algo,
                                     size_t *bytes)
{
  RONDO_CHECK(api_check_dtype(dtype));
  RONDO_CHECK(api_check_op(op));
  RONDO_CHECK(api_check_algo(algo));
  RONDO_CHECK(api_bytes(count, rondo_dtype_size(dtype), bytes));
  RONDO_CHECK(api_check_buffer(sendbuf, count, "sendbuf"));
  RONDO_CHECK(api_check_buffer(recvbuf, count, "recvbuf"));
  return api_check_overlap("rondo_allreduce", sendbuf, *bytes, recvbuf, *bytes);
}

/* The argument check of a call that may take device buffers (device: the
 * buffers' device, -1 for host memory): the memory kind is one of its
 * fields; for device buffers this rank's GPU state must be usable too, and
 * once every rank agreed, the comm's GPU state is attached (collective). */
static rondo_status_t agree_memory(rondo_comm_t comm, rondo_status_t st, agree_sig_t *sig,
                                   int device)
{
  agree_sig_add(sig, AGREE_MEMORY_FIELD, device >= 0);
  if (device >= 0 && st == RONDO_SUCCESS)
    st = gpu_usable(comm, device); /* a failure that broke it; another device */
  RONDO_CHECK(agree_call(comm, st, sig));
  return device >= 0 ? gpu_attach(comm, device) : RONDO_SUCCESS;
}

/* What every rank of an all-reduce must agree on but the memory kind. */
static agree_sig_t allreduce_sig(size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                 rondo_algo_t algo)
{
  agree_sig_t sig = {.coll = AGREE_ALLREDUCE};
  agree_sig_add(&sig, "count", (int64_t)count);
  agree_sig_add(&sig, "dtype", dtype);
  agree_sig_add(&sig, "op", op);
  agree_sig_add(&sig, "algorithm", algo); /* field 4: agree.c's packet reads it there */
  return sig;
}

/* An all-reduce of device buffers (lib/algo/common/gpu.c, docs/gpu.md): the
 * arguments are agreed on first (the algorithm as requested: the choice
 * needs the comm's GPU layout), then the comm's GPU state is attached
 * (collective, once), then the choice is made and run. */
static rondo_status_t allreduce_device(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                       size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                       rondo_algo_t algo, int device, rondo_status_t st)
{
  agree_sig_t sig = allreduce_sig(count, dtype, op, algo);
  /* Once the comm has its GPU state, staged takes the check into the
   * agreement on its own preparation: one agreement less per call. A rank
   * that goes the other way (its arguments or GPU state are bad, or AUTO
   * chose otherwise: then on every rank) still makes the check its first
   * collective, and it fails everywhere. Quiet tests here: agree_memory
   * reports what is wrong. Not with agree_skip, where agree_call is no
   * collective and staged needs its own agreement. */
  rondo_algo_t choice = algo;
  const gpu_state_t *g = comm->gpu;
  int chosen = st == RONDO_SUCCESS && g != NULL && count > 0 && !agree_skip &&
               g->broken == RONDO_SUCCESS && g->device == device &&
               (algo == RONDO_ALGO_AUTO || algo == RONDO_ALGO_STAGED) &&
               algo_allreduce_resolve_mem(comm, count, dtype, op, SELECT_MEM_DEVICE, &choice) ==
                   RONDO_SUCCESS;
  if (chosen && choice == RONDO_ALGO_STAGED) {
    agree_sig_add(&sig, AGREE_MEMORY_FIELD, 1);
    return algo_allreduce_run(comm, sendbuf, recvbuf, count, dtype, op, choice, &sig);
  }
  RONDO_CHECK(agree_memory(comm, st, &sig, device));
  /* the same choice on every rank: same arguments, same GPU layout */
  if (!chosen)
    RONDO_CHECK(algo_allreduce_resolve_mem(comm, count, dtype, op, SELECT_MEM_DEVICE, &choice));
  return algo_allreduce_run(comm, sendbuf, recvbuf, count, dtype, op, choice, NULL);
}

rondo_status_t rondo_allreduce_algo(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                    rondo_algo_t algo)
{
  size_t bytes = 0;
  int device = -1;
  RONDO_CHECK(api_enter(comm));
  rondo_status_t st = allreduce_args(sendbuf, recvbuf, count, dtype, op, algo, &bytes);
  if (st == RONDO_SUCCESS)
    st = dev_call_memory("rondo_allreduce", sendbuf, bytes, recvbuf, bytes, &device);
  if (device >= 0)
    return allreduce_device(comm, sendbuf, recvbuf, count, dtype, op, algo, device, st);
  if (st == RONDO_SUCCESS)
    st = algo_allreduce_resolve(comm, count, dtype, op, &algo);

  agree_sig_t sig = allreduce_sig(count, dtype, op, algo);
  agree_sig_add(&sig, AGREE_MEMORY_FIELD, 0);
  /* shm agrees in its first round, with the data (free); across nodes a
   * small mpi call rides in the check's packet and Rabenseifner's halving
   * carries the check; the others agree first. (The first shm call makes
   * the shared window, a collective step: it agrees first too.) A rank
   * whose arguments are bad agrees first: its packet says so, and the
   * exchange is the same on every rank. */
  if (st == RONDO_SUCCESS &&
      algo_family_folds_check(comm, RONDO_COLL_ALLREDUCE, algo, count, bytes))
    return algo_allreduce_run(comm, sendbuf, recvbuf, count, dtype, op, algo, &sig);
  RONDO_CHECK(agree_call(comm, st, &sig));
  return algo_allreduce_run(comm, sendbuf, recvbuf, count, dtype, op, algo, NULL);
}

rondo_status_t rondo_allreduce(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                               size_t count, rondo_dtype_t dtype, rondo_op_t op)
{
  return rondo_allreduce_algo(comm, sendbuf, recvbuf, count, dtype, op, RONDO_ALGO_AUTO);
}

/* The local checks of the questions about a call's algorithm. */
static rondo_status_t query_args(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                                 rondo_op_t op)
{
  size_t bytes = 0;
  RONDO_CHECK(api_enter(comm));
  RONDO_CHECK(api_check_dtype(dtype));
  RONDO_CHECK(api_check_op(op));
  return api_bytes(count, rondo_dtype_size(dtype), &bytes);
}

rondo_status_t rondo_allreduce_choice(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                                      rondo_op_t op, rondo_algo_t *algo)
{
  RONDO_CHECK(query_args(comm, count, dtype, op));
  if (algo == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_allreduce_choice: algo is NULL");
  rondo_algo_t choice = RONDO_ALGO_AUTO;
  RONDO_CHECK(algo_allreduce_resolve(comm, count, dtype, op, &choice));
  *algo = choice;
  return RONDO_SUCCESS;
}

rondo_status_t rondo_algo_available(rondo_comm_t comm, rondo_algo_t algo, size_t count,
                                    rondo_dtype_t dtype, rondo_op_t op, const char **why)
{
  if (why != NULL)
    *why = NULL;
  RONDO_CHECK(query_args(comm, count, dtype, op));
  if (algo == RONDO_ALGO_AUTO) {
    if (why != NULL)
      *why = "auto is not an algorithm: rondo_allreduce_choice() says what it picks";
    return rondo__fail(RONDO_ERR_INVALID_ALGO,
                       "rondo_algo_available: auto is not an algorithm (ask "
                       "rondo_allreduce_choice() what it picks)");
  }
  select_input_t in = algo_input(comm, count, dtype, op);
  return algo_check(comm, algo, &in, why);
}

/* Appends a line to an explanation of want bytes so far. */
static int append_line(int want, char *buf, size_t len, const char *line)
{
  size_t at = (size_t)want;
  int more = snprintf(at < len ? buf + at : NULL, at < len ? len - at : 0, "%s\n", line);
  return want + (more > 0 ? more : 0);
}

/* What the selector is told about coll's call of count elements (a rank's
 * block, for reduce-scatter and all-gather: as their calls tell it). */
static select_input_t coll_input(rondo_comm_t comm, rondo_coll_t coll, size_t count,
                                 rondo_dtype_t dtype, rondo_op_t op, select_mem_t mem)
{
  if (coll == RONDO_COLL_ALLGATHER)
    return algo_family_input(comm, coll, NULL, count * rondo_dtype_size(dtype), RONDO_UINT8,
                             RONDO_SUM);
  if (coll == RONDO_COLL_REDUCE_SCATTER)
    return algo_family_input(comm, coll, NULL, count, dtype, op == RONDO_AVG ? RONDO_SUM : op);
  return algo_input_mem(comm, count, dtype, op, mem);
}

static rondo_status_t explain(const char *fn, rondo_comm_t comm, rondo_coll_t coll,
                              size_t count, rondo_dtype_t dtype, rondo_op_t op, select_mem_t mem,
                              char *buf, size_t len, size_t *needed)
{
  if (buf == NULL && len > 0)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "%s: buf is NULL with len %zu", fn, len);
  select_result_t res;
  select_input_t in = coll_input(comm, coll, count, dtype, op, mem);
  const select_menu_t *menu = algo_menu();
  if (coll == RONDO_COLL_ALLREDUCE) {
    algo_choose(comm, &in, &res);
  } else {
    algo_family_choose(comm, &in, &res);
    menu = coll == RONDO_COLL_REDUCE_SCATTER ? algo_rs_menu() : algo_ag_menu();
  }
  int want = select_explain(menu, &res, &in, buf, len);
  if (comm->topo->node_count > 1 && want >= 0) {
    /* The network the inter-node terms were priced with. */
    char net[384];
    net_describe(&comm->topo->net, comm->topo->node_count, net, sizeof net);
    want = append_line(want, buf, len, net);
    /* Whether the ring pipelines across that link. */
    algo_ring_describe(comm->cfg.ring_chunk, comm->link_beta, net, sizeof net);
    want = append_line(want, buf, len, net);
    /* Rabenseifner's doubling's radix at this size. */
    if (mem == SELECT_MEM_HOST) {
      algo_rab_describe(comm, &in, net, sizeof net);
      want = append_line(want, buf, len, net);
    }
    /* Whether hierarchical pipelines at this size. */
    if (comm->topo->max_local > 1 && mem == SELECT_MEM_HOST) {
      algo_hier_describe(comm, &in, net, sizeof net);
      want = append_line(want, buf, len, net);
    }
  }
  if (mem == SELECT_MEM_DEVICE && want >= 0)
    want = append_line(want, buf, len,
                       comm->gpu != NULL ? comm->gpu->layout
                                         : "GPUs: not known before the comm's first call on "
                                           "device buffers (nccl is priced as if no GPU is "
                                           "shared)");
  return api_text_result(fn, want, buf, len, needed);
}

rondo_status_t rondo_explain(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                             rondo_op_t op, char *buf, size_t len, size_t *needed)
{
  RONDO_CHECK(query_args(comm, count, dtype, op));
  return explain("rondo_explain", comm, RONDO_COLL_ALLREDUCE, count, dtype, op, SELECT_MEM_HOST,
                 buf, len, needed);
}

rondo_status_t rondo_explain_call(rondo_comm_t comm, const void *sendbuf, const void *recvbuf,
                                  size_t count, rondo_dtype_t dtype, rondo_op_t op, char *buf,
                                  size_t len, size_t *needed)
{
  int device = -1;
  RONDO_CHECK(query_args(comm, count, dtype, op));
  size_t bytes = count * rondo_dtype_size(dtype); /* query_args: no overflow */
  RONDO_CHECK(dev_call_memory("rondo_explain_call", sendbuf, bytes, recvbuf, bytes, &device));
  return explain("rondo_explain_call", comm, RONDO_COLL_ALLREDUCE, count, dtype, op,
                 device >= 0 ? SELECT_MEM_DEVICE : SELECT_MEM_HOST, buf, len, needed);
}

/* ---- every family's questions ------------------------------------------------------ */

/* query_args for coll (any op for all-gather, which ignores it). */
static rondo_status_t coll_query_args(const char *fn, rondo_comm_t comm, rondo_coll_t coll,
                                      size_t count, rondo_dtype_t dtype, rondo_op_t op)
{
  if ((unsigned)coll >= RONDO_COLL_COUNT)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "%s: collective %d is not a rondo_coll_t (0..%d)",
                       fn, (int)coll, RONDO_COLL_COUNT - 1);
  RONDO_CHECK(query_args(comm, count, dtype, coll == RONDO_COLL_ALLGATHER ? RONDO_SUM : op));
  if (coll == RONDO_COLL_REDUCE_SCATTER)
    RONDO_CHECK(api_check_elementwise_op(fn, op));
  size_t bytes = 0, total = 0;
  RONDO_CHECK(api_bytes(count, rondo_dtype_size(dtype), &bytes));
  return coll == RONDO_COLL_ALLREDUCE ? RONDO_SUCCESS : all_blocks(fn, comm, bytes, &total);
}

rondo_status_t rondo_coll_choice(rondo_comm_t comm, rondo_coll_t coll, size_t count,
                                 rondo_dtype_t dtype, rondo_op_t op, rondo_algo_t *algo)
{
  RONDO_CHECK(coll_query_args("rondo_coll_choice", comm, coll, count, dtype, op));
  if (coll == RONDO_COLL_ALLREDUCE)
    return rondo_allreduce_choice(comm, count, dtype, op, algo);
  if (algo == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_coll_choice: algo is NULL");
  select_input_t in = coll_input(comm, coll, count, dtype, op, SELECT_MEM_HOST);
  rondo_algo_t choice = RONDO_ALGO_AUTO;
  RONDO_CHECK(algo_family_resolve(comm, &in, &choice));
  *algo = choice;
  return RONDO_SUCCESS;
}

rondo_status_t rondo_coll_algo_available(rondo_comm_t comm, rondo_coll_t coll,
                                         rondo_algo_t algo, size_t count, rondo_dtype_t dtype,
                                         rondo_op_t op, const char **why)
{
  if (why != NULL)
    *why = NULL;
  RONDO_CHECK(coll_query_args("rondo_coll_algo_available", comm, coll, count, dtype, op));
  if (coll == RONDO_COLL_ALLREDUCE)
    return rondo_algo_available(comm, algo, count, dtype, op, why);
  if (algo == RONDO_ALGO_AUTO) {
    if (why != NULL)
      *why = "auto is not an algorithm: rondo_coll_choice() says what it picks";
    return rondo__fail(RONDO_ERR_INVALID_ALGO,
                       "rondo_coll_algo_available: auto is not an algorithm (ask "
                       "rondo_coll_choice() what it picks)");
  }
  select_input_t in = coll_input(comm, coll, count, dtype, op, SELECT_MEM_HOST);
  return algo_family_check(comm, algo, &in, why);
}

rondo_status_t rondo_coll_explain(rondo_comm_t comm, rondo_coll_t coll, size_t count,
                                  rondo_dtype_t dtype, rondo_op_t op, char *buf, size_t len,
                                  size_t *needed)
{
  RONDO_CHECK(coll_query_args("rondo_coll_explain", comm, coll, count, dtype, op));
  return explain("rondo_coll_explain", comm, coll, count, dtype, op, SELECT_MEM_HOST, buf, len,
                 needed);
}

/* ---- data movement and reduce-scatter ------------------------------------------- */

rondo_status_t rondo_broadcast(rondo_comm_t comm, void *buf, size_t count,
                               rondo_dtype_t dtype, int root)
{
  size_t bytes = 0;
  RONDO_CHECK(api_enter(comm));
  rondo_status_t st = api_check_dtype(dtype);
  if (st == RONDO_SUCCESS)
    st = check_root(comm, root);
  if (st == RONDO_SUCCESS)
    st = api_bytes(count, rondo_dtype_size(dtype), &bytes);
  if (st == RONDO_SUCCESS)
    st = api_check_buffer(buf, count, "buf");
  int device = -1;
  if (st == RONDO_SUCCESS)
    st = dev_buffer_memory("rondo_broadcast", "buf", buf, bytes, &device);
  agree_sig_t sig = {.coll = AGREE_BROADCAST};
  agree_sig_add(&sig, "count", (int64_t)count);
  agree_sig_add(&sig, "dtype", dtype);
  agree_sig_add(&sig, "root", root);
  RONDO_CHECK(agree_memory(comm, st, &sig, device));
  if (bytes == 0)
    return RONDO_SUCCESS;
  return device >= 0 ? algo_device_broadcast(comm, buf, bytes, root)
                     : algo_broadcast(comm, buf, bytes, root);
}

/* The checks of a call with one block of count elements per rank in recvbuf
 * (allgather) or in sendbuf (reduce_scatter), or in both (alltoall);
 * in_place_ok: 1 allgather's form, 2 reduce_scatter's, 0 none (alltoall).
 * *bytes gets one
 * block's size, *device the buffers' device (-1: host; device_ok 0: host
 * only). */
static rondo_status_t block_args(const char *fn, rondo_comm_t comm, const void *sendbuf,
                                 const void *recvbuf, size_t count, rondo_dtype_t dtype,
                                 int in_place_ok, int device_ok, size_t *bytes, int *device)
{
  size_t total = 0;
  RONDO_CHECK(api_check_dtype(dtype));
  RONDO_CHECK(api_bytes(count, rondo_dtype_size(dtype), bytes));
  RONDO_CHECK(all_blocks(fn, comm, *bytes, &total));
  RONDO_CHECK(api_check_buffer(sendbuf, count, "sendbuf"));
  RONDO_CHECK(api_check_buffer(recvbuf, count, "recvbuf"));
  if (!in_place_ok && count > 0 && sendbuf == recvbuf)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "%s: in place (sendbuf == recvbuf) is not allowed",
                       fn);
  /* allgather's in-place form: sendbuf is this rank's block of recvbuf;
   * reduce-scatter's: recvbuf is this rank's block of sendbuf, or sendbuf */
  if (in_place_ok == 2 && recvbuf != sendbuf)
    RONDO_CHECK(api_check_overlap_except(fn, recvbuf, *bytes, sendbuf, total,
                                         (const char *)sendbuf + (size_t)comm->rank * *bytes));
  else if (in_place_ok != 2)
    RONDO_CHECK(in_place_ok ? api_check_overlap_except(fn, sendbuf, *bytes, recvbuf, total,
                                                       (const char *)recvbuf +
                                                           (size_t)comm->rank * *bytes)
                            : api_check_overlap(fn, sendbuf, total, recvbuf, *bytes));
  if (!device_ok) {
    RONDO_CHECK(api_host_only(fn, sendbuf, "sendbuf"));
    return api_host_only(fn, recvbuf, "recvbuf");
  }
  /* the blocks are in recvbuf where in place is allowed (allgather), in
   * sendbuf where not (reduce_scatter) */
  RONDO_CHECK(in_place_ok == 1 ? dev_call_memory(fn, sendbuf, *bytes, recvbuf, total, device)
                                : dev_call_memory(fn, sendbuf, total, recvbuf, *bytes, device));
  /* NCCL's in-place reduce-scatter is the shard form only */
  if (in_place_ok == 2 && *device >= 0 && count > 0 && sendbuf == recvbuf && comm->rank > 0)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "%s: device buffers run in place only with recvbuf at this rank's block "
                       "of sendbuf, not at its start",
                       fn);
  return RONDO_SUCCESS;
}

/* A device call runs the family's nccl or staged member: the others are
 * host algorithms. */
static rondo_status_t device_algo(const char *fn, rondo_algo_t algo, int device)
{
  if (device >= 0 && algo != RONDO_ALGO_AUTO && algo != RONDO_ALGO_NCCL &&
      algo != RONDO_ALGO_STAGED)
    return rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "%s: the %s algorithm takes host buffers; device buffers run nccl or "
                       "staged (or RONDO_ALGO_AUTO)",
                       fn, rondo_algo_name(algo));
  return RONDO_SUCCESS;
}

rondo_status_t rondo_allgather_algo(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    size_t count, rondo_dtype_t dtype, rondo_algo_t algo)
{
  size_t bytes = 0;
  int device = -1;
  RONDO_CHECK(api_enter(comm));
  rondo_status_t st = api_check_algo(algo);
  if (st == RONDO_SUCCESS)
    st = block_args("rondo_allgather", comm, sendbuf, recvbuf, count, dtype, 1, 1, &bytes,
                    &device);
  if (st == RONDO_SUCCESS)
    st = device_algo("rondo_allgather", algo, device);
  agree_sig_t sig = {.coll = AGREE_ALLGATHER};
  agree_sig_add(&sig, "count", (int64_t)count);
  agree_sig_add(&sig, "dtype", dtype);
  if (device >= 0) { /* the algorithm as requested: the choice needs the GPU state */
    agree_sig_add(&sig, "algorithm", algo);
    RONDO_CHECK(agree_memory(comm, st, &sig, device));
    return bytes == 0 ? RONDO_SUCCESS
                      : algo_allgather_device(comm, sendbuf, recvbuf, bytes, algo);
  }
  /* shm agrees in its first round, a small mpi call across nodes rides in
   * the check's packet (ag_mpi.c), recursive doubling's steps carry the
   * check (ag_rd.c); the others agree first */
  return algo_allgather_checked(comm, st, &sig, sendbuf, recvbuf, bytes, algo);
}

rondo_status_t rondo_allgather(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                               size_t count, rondo_dtype_t dtype)
{
  return rondo_allgather_algo(comm, sendbuf, recvbuf, count, dtype, RONDO_ALGO_AUTO);
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

/* Every rank called rondo_allgatherv, and the layouts differ (their
 * hashes): every rank learns the first entry that differs and its range. */
static rondo_status_t layout_mismatch(rondo_comm_t comm, const size_t *recvcounts,
                                      const size_t *displs)
{
  char saved[512];
  snprintf(saved, sizeof saved, "%s", rondo__last_error_text());
  /* In chunks on the stack: every rank makes the same calls, and none
   * can run out of memory alone. */
  enum { CHUNK = 32 };
  uint64_t mine[CHUNK], lo[CHUNK], hi[CHUNK];
  int n = 2 * comm->size;
  for (int base = 0; base < n; base += CHUNK) {
    int m = n - base < CHUNK ? n - base : CHUNK;
    for (int k = 0; k < m; k++) {
      int i = (base + k) / 2;
      mine[k] = (base + k) % 2 ? (displs ? displs[i] : 0) : recvcounts[i];
    }
    MPI_CHECK(MPI_Allreduce(mine, lo, m, MPI_UINT64_T, MPI_MIN, comm->mpi));
    MPI_CHECK(MPI_Allreduce(mine, hi, m, MPI_UINT64_T, MPI_MAX, comm->mpi));
    for (int k = 0; k < m; k++)
      if (lo[k] != hi[k])
        return rondo__fail(RONDO_ERR_MISMATCH,
                           "rondo_allgatherv: ranks passed different %s[%d]: from %llu to %llu "
                           "(this rank: %llu)",
                           (base + k) % 2 ? "displs" : "recvcounts", (base + k) / 2,
                           (unsigned long long)lo[k], (unsigned long long)hi[k],
                           (unsigned long long)mine[k]);
  }
  return rondo__fail(RONDO_ERR_MISMATCH, "%s", saved);
}

static rondo_status_t allgatherv_args(rondo_comm_t comm, const void *sendbuf,
                                      size_t sendcount, void *recvbuf,
                                      const size_t *recvcounts, const size_t *displs,
                                      rondo_dtype_t dtype)
{
  size_t esize = rondo_dtype_size(dtype), bytes = 0, end = 0;
  RONDO_CHECK(api_check_dtype(dtype));
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
  RONDO_CHECK(api_bytes(end, esize, &bytes));
  RONDO_CHECK(api_check_buffer(sendbuf, sendcount, "sendbuf"));
  RONDO_CHECK(api_check_buffer(recvbuf, end, "recvbuf"));
  RONDO_CHECK(api_host_only("rondo_allgatherv", sendbuf, "sendbuf"));
  return api_host_only("rondo_allgatherv", recvbuf, "recvbuf");
}

rondo_status_t rondo_allgatherv(rondo_comm_t comm, const void *sendbuf, size_t sendcount,
                                void *recvbuf, const size_t *recvcounts,
                                const size_t *displs, rondo_dtype_t dtype)
{
  RONDO_CHECK(api_enter(comm));
  rondo_status_t st =
      allgatherv_args(comm, sendbuf, sendcount, recvbuf, recvcounts, displs, dtype);
  agree_sig_t sig = {.coll = AGREE_ALLGATHERV};
  agree_sig_add(&sig, "dtype", dtype);
  agree_sig_add(&sig, "recvcounts/displs (hash)",
                 st == RONDO_SUCCESS ? layout_hash(recvcounts, displs, comm->size) : 0);
  int same_call = 0;
  st = agree_call_detail(comm, st, &sig, &same_call);
  if (same_call)
    return layout_mismatch(comm, recvcounts, displs);
  RONDO_CHECK(st);
  return algo_allgatherv(comm, sendbuf, recvbuf, recvcounts, displs, rondo_dtype_size(dtype));
}

/* The checks every reduce-scatter makes first. */
static rondo_status_t rs_common(const char *fn, rondo_dtype_t dtype, rondo_op_t op,
                                rondo_algo_t algo)
{
  RONDO_CHECK(api_check_dtype(dtype)); /* before the op, as everywhere */
  RONDO_CHECK(api_check_op(op));
  RONDO_CHECK(api_check_elementwise_op(fn, op));
  return api_check_algo(algo);
}

/* The host reduce-scatter's choice, agreement and run (counts NULL: equal
 * blocks of count elements). */
static rondo_status_t rs_host(rondo_comm_t comm, rondo_status_t st, agree_sig_t *sig,
                              const void *sendbuf, void *recvbuf, const size_t *counts,
                              size_t count, rondo_dtype_t dtype, rondo_op_t op,
                              rondo_algo_t algo)
{
  select_input_t in = {0};
  if (st == RONDO_SUCCESS) {
    in = algo_family_input(comm, RONDO_COLL_REDUCE_SCATTER, counts, count, dtype,
                           op == RONDO_AVG ? RONDO_SUM : op);
    if (in.count > 0)
      st = algo_family_resolve(comm, &in, &algo);
  }
  agree_sig_add(sig, "algorithm", st == RONDO_SUCCESS ? algo : RONDO_ALGO_AUTO);
  agree_sig_add(sig, AGREE_MEMORY_FIELD, 0);
  shalloc_sig_add(comm, sig, algo, sendbuf, in.bytes, in.bytes);
  const agree_sig_t *folded = NULL;
  /* shm agrees in its first round, a small mpi call across nodes rides in
   * the check's packet (rs_mpi.c), recursive halving's steps carry the
   * check (rs_halving.c); the others agree first */
  if (st == RONDO_SUCCESS &&
      algo_family_folds_check(comm, RONDO_COLL_REDUCE_SCATTER, algo, in.count, in.bytes))
    folded = sig;
  else
    RONDO_CHECK(agree_call(comm, st, sig));
  if (in.count == 0)
    return RONDO_SUCCESS;
  if (counts != NULL)
    return algo_reduce_scatter_run(comm, sendbuf, recvbuf, counts, dtype, op, algo, folded);
  return algo_reduce_scatter_block(comm, sendbuf, recvbuf, count, dtype, op, algo, folded);
}

rondo_status_t rondo_reduce_scatter_algo(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                         size_t recvcount, rondo_dtype_t dtype, rondo_op_t op,
                                         rondo_algo_t algo)
{
  size_t bytes = 0;
  int device = -1;
  RONDO_CHECK(api_enter(comm));
  rondo_status_t st = rs_common("rondo_reduce_scatter", dtype, op, algo);
  if (st == RONDO_SUCCESS)
    st = block_args("rondo_reduce_scatter", comm, sendbuf, recvbuf, recvcount, dtype, 2, 1,
                    &bytes, &device);
  if (st == RONDO_SUCCESS)
    st = device_algo("rondo_reduce_scatter", algo, device);
  agree_sig_t sig = {.coll = AGREE_REDUCE_SCATTER};
  agree_sig_add(&sig, "recvcount", (int64_t)recvcount);
  agree_sig_add(&sig, "dtype", dtype);
  agree_sig_add(&sig, "op", op);
  if (device >= 0) { /* the algorithm as requested: the choice needs the GPU state */
    agree_sig_add(&sig, "algorithm", algo);
    RONDO_CHECK(agree_memory(comm, st, &sig, device));
    return recvcount == 0 ? RONDO_SUCCESS
                          : algo_reduce_scatter_device(comm, sendbuf, recvbuf, recvcount, dtype,
                                                       op, algo);
  }
  return rs_host(comm, st, &sig, sendbuf, recvbuf, NULL, recvcount, dtype, op, algo);
}

rondo_status_t rondo_reduce_scatter(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    size_t recvcount, rondo_dtype_t dtype, rondo_op_t op)
{
  return rondo_reduce_scatter_algo(comm, sendbuf, recvbuf, recvcount, dtype, op,
                                   RONDO_ALGO_AUTO);
}

/* rondo_reduce_scatterv's local checks: the counts, the buffers, and the
 * overlap (in place: recvbuf is sendbuf or this rank's block of it). */
static rondo_status_t rsv_args(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                               const size_t *recvcounts, rondo_dtype_t dtype)
{
  const char *fn = "rondo_reduce_scatterv";
  size_t esize = rondo_dtype_size(dtype), total = 0, bytes = 0, mine = 0, at = 0;
  if (recvcounts == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "%s: recvcounts is NULL", fn);
  for (int i = 0; i < comm->size; i++) {
    if (recvcounts[i] > SIZE_MAX - total)
      return rondo__fail(RONDO_ERR_COUNT_OVERFLOW, "%s: the counts overflow size_t", fn);
    if (i == comm->rank)
      at = total;
    total += recvcounts[i];
  }
  mine = recvcounts[comm->rank];
  RONDO_CHECK(api_bytes(total, esize, &bytes));
  RONDO_CHECK(api_check_buffer(sendbuf, total, "sendbuf"));
  RONDO_CHECK(api_check_buffer(recvbuf, mine, "recvbuf"));
  if (recvbuf != sendbuf)
    RONDO_CHECK(api_check_overlap_except(fn, recvbuf, mine * esize, sendbuf, bytes,
                                         (const char *)sendbuf + at * esize));
  RONDO_CHECK(api_host_only(fn, sendbuf, "sendbuf"));
  return api_host_only(fn, recvbuf, "recvbuf");
}

rondo_status_t rondo_reduce_scatterv(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                     const size_t *recvcounts, rondo_dtype_t dtype,
                                     rondo_op_t op)
{
  RONDO_CHECK(api_enter(comm));
  rondo_status_t st = rs_common("rondo_reduce_scatterv", dtype, op, RONDO_ALGO_AUTO);
  if (st == RONDO_SUCCESS)
    st = rsv_args(comm, sendbuf, recvbuf, recvcounts, dtype);
  agree_sig_t sig = {.coll = AGREE_REDUCE_SCATTER};
  agree_sig_add(&sig, "recvcounts (hash)",
                st == RONDO_SUCCESS ? layout_hash(recvcounts, NULL, comm->size) : 0);
  agree_sig_add(&sig, "dtype", dtype);
  agree_sig_add(&sig, "op", op);
  return rs_host(comm, st, &sig, sendbuf, recvbuf, recvcounts, 0, dtype, op, RONDO_ALGO_AUTO);
}

rondo_status_t rondo_alltoall(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                              size_t count, rondo_dtype_t dtype)
{
  size_t bytes = 0;
  RONDO_CHECK(api_enter(comm));
  int device = -1;
  rondo_status_t st =
      block_args("rondo_alltoall", comm, sendbuf, recvbuf, count, dtype, 0, 0, &bytes, &device);
  agree_sig_t sig = {.coll = AGREE_ALLTOALL};
  agree_sig_add(&sig, "count", (int64_t)count);
  agree_sig_add(&sig, "dtype", dtype);
  RONDO_CHECK(agree_call(comm, st, &sig));
  return bytes ? algo_alltoall(comm, sendbuf, recvbuf, bytes) : RONDO_SUCCESS;
}

rondo_status_t rondo_barrier(rondo_comm_t comm)
{
  RONDO_CHECK(api_enter(comm));
  agree_sig_t sig = {.coll = AGREE_BARRIER};
  /* On one node the argument board is itself a barrier. */
  RONDO_CHECK(agree_call(comm, RONDO_SUCCESS, &sig));
  return agree_board_active(comm) ? RONDO_SUCCESS : algo_barrier(comm);
}
