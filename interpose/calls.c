/*
 * The MPI_ entry points of librondo-mpi. Each call either goes to its PMPI_
 * version unchanged or is taken over by rondo on the communicator's rondo
 * comm, by rules that give the same answer on every rank (interpose.h):
 *   - the call is in RONDO_MPI_INTERCEPT and its bytes in the call's window;
 *   - an intracommunicator of two ranks or more, valid counts, bytes to move;
 *   - reductions (allreduce, iallreduce, reduce_scatter_block,
 *     reduce_scatter): a predefined datatype rondo reduces exactly and
 *     MPI_SUM, MPI_PROD, MPI_MIN or MPI_MAX; MPI requires count (or
 *     recvcounts), datatype and op to be the same on every rank, so they
 *     may decide; MPI_IN_PLACE is rondo's in-place form (sendbuf ==
 *     recvbuf), no copy;
 *   - data movement (allgather, allgatherv, bcast): any datatype. MPI lets
 *     ranks describe the same bytes with different datatypes, so only the
 *     bytes decide; non-contiguous datatypes are packed (MPI_Pack) around
 *     rondo's byte collective. allgatherv's displacements are each rank's
 *     own (MPI lets them differ): rondo gathers the blocks packed in rank
 *     order, into recvbuf itself where its blocks lie so, else into
 *     scratch that is then copied (or unpacked) to them.
 * rondo then runs the call; a failure (ranks that passed different counts,
 * say, which rondo detects on every rank) goes to the communicator's error
 * handler with an MPI error class. MPI_Init and MPI_Init_thread agree on the
 * configuration; MPI_Finalize frees rondo's comms before MPI goes.
 */
#include "interpose.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dlfcn.h>
#include <string.h>

/* ---- datatypes and ops -------------------------------------------------------------- */

typedef struct {
  MPI_Datatype mpi;
  int bytes;            /* the size rondo's dtype has: checked against MPI's */
  rondo_dtype_t dtype;
} dtype_row_t;

/* The predefined datatypes rondo reduces exactly, the common ones first.
 * A row whose MPI size differs from rondo's (MPI_LONG on a 32-bit long) is
 * dropped at setup. */
static dtype_row_t dtypes[] = {
    {MPI_FLOAT, 4, RONDO_FLOAT32},      {MPI_DOUBLE, 8, RONDO_FLOAT64},
    {MPI_INT, 4, RONDO_INT32},          {MPI_LONG, 8, RONDO_INT64},
    {MPI_LONG_LONG, 8, RONDO_INT64},    {MPI_INT32_T, 4, RONDO_INT32},
    {MPI_INT64_T, 8, RONDO_INT64},      {MPI_SHORT, 2, RONDO_INT16},
    {MPI_INT16_T, 2, RONDO_INT16},      {MPI_SIGNED_CHAR, 1, RONDO_INT8},
    {MPI_INT8_T, 1, RONDO_INT8},        {MPI_UNSIGNED_CHAR, 1, RONDO_UINT8},
    {MPI_UINT8_T, 1, RONDO_UINT8},      {MPI_REAL, 4, RONDO_FLOAT32},
    {MPI_DOUBLE_PRECISION, 8, RONDO_FLOAT64}, {MPI_INTEGER, 4, RONDO_INT32},
    {MPI_REAL4, 4, RONDO_FLOAT32},      {MPI_REAL8, 8, RONDO_FLOAT64},
    {MPI_INTEGER1, 1, RONDO_INT8},      {MPI_INTEGER2, 2, RONDO_INT16},
    {MPI_INTEGER4, 4, RONDO_INT32},     {MPI_INTEGER8, 8, RONDO_INT64},
#ifdef MPIX_C_FLOAT16
    {MPIX_C_FLOAT16, 2, RONDO_FLOAT16},
#endif
};
static int ndtypes = (int)(sizeof dtypes / sizeof dtypes[0]);

/* Keeps the rows whose sizes agree (at MPI_Init: MPI_Type_size needs MPI). */
static void check_dtypes(void)
{
  int k = 0;
  for (int i = 0; i < ndtypes; i++) {
    int size = -1;
    if (dtypes[i].mpi == MPI_DATATYPE_NULL ||
        PMPI_Type_size(dtypes[i].mpi, &size) != MPI_SUCCESS || size != dtypes[i].bytes)
      continue;
    dtypes[k++] = dtypes[i];
  }
  ndtypes = k;
}

static int rondo_dtype(MPI_Datatype t, rondo_dtype_t *out)
{
  for (int i = 0; i < ndtypes; i++)
    if (dtypes[i].mpi == t) {
      *out = dtypes[i].dtype;
      return 1;
    }
  return 0;
}

static int rondo_op(MPI_Op op, rondo_op_t *out)
{
  if (op == MPI_SUM)
    *out = RONDO_SUM;
  else if (op == MPI_MAX)
    *out = RONDO_MAX;
  else if (op == MPI_MIN)
    *out = RONDO_MIN;
  else if (op == MPI_PROD)
    *out = RONDO_PROD;
  else
    return 0;
  return 1;
}

/* Whether t's data is its size in bytes at its address, with no gaps. */
static int flat(MPI_Datatype t)
{
  MPI_Aint lb, extent, true_lb, true_extent;
  int size;
  if (PMPI_Type_size(t, &size) != MPI_SUCCESS ||
      PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent(t, &true_lb, &true_extent) != MPI_SUCCESS)
    return 0;
  return lb == 0 && true_lb == 0 && extent == size && true_extent == size;
}

/* ---- the decision ----------------------------------------------------------------------- */

enum { TAKE = -1 };

/* The checks every call makes first: active, selected, a communicator
 * rondo can serve. *r is comm's record where there is one. */
static int common(rondo_mpi_call_t call, MPI_Comm comm, ip_comm_t **r)
{
  *r = NULL;
  if (!ip_active)
    return IP_PASS_INACTIVE;
  *r = ip_record(comm);
  if (!ip_config.on[call])
    return IP_PASS_OFF;
  if (*r == NULL)
    return IP_PASS_ARGS;
  if ((*r)->inter)
    return IP_PASS_INTER;
  if ((*r)->size < 2)
    return IP_PASS_ONE_RANK;
  if ((*r)->failed)
    return IP_PASS_NO_COMM;
  return TAKE;
}

static int in_window(rondo_mpi_call_t call, size_t bytes)
{
  return bytes >= ip_config.min[call] && bytes <= ip_config.max[call];
}

/* After common(): a reduction of count elements per block, blocks blocks
 * (the window counts them all), of a datatype and op rondo reduces
 * exactly. */
static int reduction(rondo_mpi_call_t call, int64_t count, size_t blocks, MPI_Datatype datatype,
                     MPI_Op op, rondo_dtype_t *dt, rondo_op_t *rop, size_t *bytes)
{
  if (count < 0)
    return IP_PASS_ARGS;
  if (!rondo_dtype(datatype, dt))
    return IP_PASS_DTYPE;
  *bytes = (size_t)count * blocks * rondo_dtype_size(*dt);
  if (count == 0)
    return IP_PASS_EMPTY;
  if (!rondo_op(op, rop))
    return IP_PASS_OP;
  if (!in_window(call, *bytes))
    return IP_PASS_WINDOW;
  return TAKE;
}

/* Who serves the call, counted either way: its rondo comm where why is
 * TAKE and the comm has one, else NULL (MPI serves it). */
static rondo_comm_t serve(ip_comm_t *r, rondo_mpi_call_t call, int why, size_t bytes)
{
  rondo_comm_t rc = why == TAKE ? ip_rondo(r) : NULL;
  if (rc != NULL)
    ip_count_taken(r, call, bytes);
  else
    ip_count_passed(r, call, why == TAKE ? IP_PASS_NO_COMM : why, bytes);
  return rc;
}

/* ---- reductions ---------------------------------------------------------------------------- */

RONDO_API int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
  ip_comm_t *r;
  rondo_dtype_t dt;
  rondo_op_t rop;
  size_t bytes = 0;
  int why = common(RONDO_MPI_ALLREDUCE, comm, &r);
  if (why == TAKE)
    why = reduction(RONDO_MPI_ALLREDUCE, count, 1, datatype, op, &dt, &rop, &bytes);
  rondo_comm_t rc = serve(r, RONDO_MPI_ALLREDUCE, why, bytes);
  if (rc == NULL)
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  const void *src = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  rondo_status_t st = rondo_allreduce(rc, src, recvbuf, (size_t)count, dt, rop);
  return st == RONDO_SUCCESS ? MPI_SUCCESS : ip_fail(comm, st);
}

RONDO_API int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
  ip_comm_t *r;
  rondo_dtype_t dt;
  rondo_op_t rop;
  size_t bytes = 0;
  int why = common(RONDO_MPI_REDUCE_SCATTER_BLOCK, comm, &r);
  if (why == TAKE)
    why = reduction(RONDO_MPI_REDUCE_SCATTER_BLOCK, recvcount, (size_t)r->size, datatype, op,
                    &dt, &rop, &bytes);
  rondo_comm_t rc = serve(r, RONDO_MPI_REDUCE_SCATTER_BLOCK, why, bytes);
  if (rc == NULL)
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  /* MPI_IN_PLACE: the input is recvbuf and the result goes to its start,
   * which is rondo's in-place form (sendbuf == recvbuf) */
  const void *src = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  rondo_status_t st = rondo_reduce_scatter(rc, src, recvbuf, (size_t)recvcount, dt, rop);
  return st == RONDO_SUCCESS ? MPI_SUCCESS : ip_fail(comm, st);
}

/* n counts of a v call as size_t, each times scale, in r's scratch 2; NULL
 * when out of memory (rondo's check then fails the call on every rank). */
static size_t *counts_of(ip_comm_t *r, const int *counts, int n, size_t scale, const char *fn)
{
  size_t *out = ip_scratch(r, 2, (size_t)n * sizeof *out);
  if (out == NULL) {
    ip_log(IP_ERROR, "%s: no memory for %d counts", fn, n);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    out[i] = (size_t)counts[i] * scale;
  return out;
}

RONDO_API int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
  ip_comm_t *r;
  rondo_dtype_t dt;
  rondo_op_t rop;
  size_t bytes = 0;
  int why = common(RONDO_MPI_REDUCE_SCATTER, comm, &r);
  /* MPI requires recvcounts to be the same on every rank: their sum
   * decides as a count does (a negative one is MPI's to judge) */
  int64_t total = 0;
  for (int i = 0; why == TAKE && i < r->size; i++) {
    if (recvcounts == NULL || recvcounts[i] < 0)
      total = -1;
    if (total < 0)
      break;
    total += recvcounts[i];
  }
  if (why == TAKE)
    why = reduction(RONDO_MPI_REDUCE_SCATTER, total, 1, datatype, op, &dt, &rop, &bytes);
  rondo_comm_t rc = serve(r, RONDO_MPI_REDUCE_SCATTER, why, bytes);
  if (rc == NULL)
    return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
  size_t *counts = counts_of(r, recvcounts, r->size, 1, "MPI_Reduce_scatter");
  /* MPI_IN_PLACE: rondo's in-place form, as in MPI_Reduce_scatter_block */
  const void *src = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  rondo_status_t st = rondo_reduce_scatterv(rc, src, recvbuf, counts, dt, rop);
  return st == RONDO_SUCCESS ? MPI_SUCCESS : ip_fail(comm, st);
}

/* ---- MPI_Iallreduce: rondo's engine behind a generalized request ----------------------------
 * The engine runs the request; its completion callback completes the MPI
 * request, which the application waits for with MPI_Wait, MPI_Test or any
 * of their kin, alongside its other requests. The engine thread calls
 * MPI_Grequest_complete, hence MPI_THREAD_MULTIPLE. */

typedef struct {
  rondo_request_t req;
  MPI_Request greq;
  int err;            /* the call's MPI error class */
  MPI_Comm comm;
} ireq_t;

static void on_iallreduce_done(rondo_request_t req, rondo_status_t st, void *user)
{
  (void)req;
  ireq_t *q = user;
  q->err = MPI_SUCCESS;
  if (st != RONDO_SUCCESS) /* not ip_fail: no error handler runs on the engine thread */
    q->err = st == RONDO_ERR_MISMATCH ? MPI_ERR_ARG : MPI_ERR_OTHER;
  MPI_Grequest_complete(q->greq);
}

static int iallreduce_query(void *extra, MPI_Status *status)
{
  ireq_t *q = extra;
  MPI_Status_set_elements(status, MPI_BYTE, 0);
  MPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = q->err;
  return q->err;
}

static int iallreduce_free(void *extra)
{
  ireq_t *q = extra;
  if (q->req != NULL)
    rondo_wait(&q->req); /* done: releases it (its status is q->err) */
  free(q);
  return MPI_SUCCESS;
}

static int iallreduce_cancel(void *extra, int complete)
{
  (void)extra;
  (void)complete;
  return MPI_SUCCESS; /* a collective cannot be cancelled */
}

RONDO_API int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
  ip_comm_t *r;
  rondo_dtype_t dt;
  rondo_op_t rop;
  size_t bytes = 0;
  int why = common(RONDO_MPI_IALLREDUCE, comm, &r);
  if (why == TAKE)
    why = reduction(RONDO_MPI_IALLREDUCE, count, 1, datatype, op, &dt, &rop, &bytes);
  /* The engine needs MPI_THREAD_MULTIPLE, and a rondo comm made earlier:
   * making one now would wait for the other ranks inside a nonblocking
   * call (a program that sends to another rank between its MPI_Iallreduce
   * and its wait would hang). A communicator's first blocking call that
   * rondo takes over makes it; MPI_COMM_WORLD's is made at MPI_Init. */
  if (why == TAKE && ip_thread_level < MPI_THREAD_MULTIPLE)
    why = IP_PASS_THREADS;
  if (why == TAKE && r->rc == NULL)
    why = IP_PASS_NOT_YET;
  if (why != TAKE || request == NULL) {
    ip_count_passed(r, RONDO_MPI_IALLREDUCE, why != TAKE ? why : IP_PASS_ARGS, bytes);
    return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
  }
  ireq_t *q = calloc(1, sizeof *q);
  if (q == NULL) { /* the others must not wait for this rank's request */
    char name[64];
    snprintf(name, sizeof name, "mpi.iallreduce.%llu",
             (unsigned long long)__atomic_fetch_add(&r->iallreduce_seq, 1, __ATOMIC_RELAXED));
    rondo_request_t refusal = NULL;
    if (rondo_refuse_async(r->rc, name, "out of memory", NULL, &refusal) == RONDO_SUCCESS)
      rondo_wait(&refusal);
    return ip_fail(comm, RONDO_ERR_NO_MEMORY);
  }
  q->comm = comm;
  int rc = MPI_Grequest_start(iallreduce_query, iallreduce_free, iallreduce_cancel, q,
                              &q->greq);
  if (rc != MPI_SUCCESS) {
    free(q);
    return rc;
  }
  ip_count_taken(r, RONDO_MPI_IALLREDUCE, bytes);
  char name[64];
  snprintf(name, sizeof name, "mpi.iallreduce.%llu",
           (unsigned long long)__atomic_fetch_add(&r->iallreduce_seq, 1, __ATOMIC_RELAXED));
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.callback = on_iallreduce_done;
  o.user = q;
  const void *src = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  rondo_status_t st = rondo_allreduce_async(r->rc, name, src, recvbuf, (size_t)count, dt, rop,
                                            &o, &q->req);
  if (st != RONDO_SUCCESS) {
    /* The others' requests of this name fail instead of waiting for it. */
    rondo_request_t refusal = NULL;
    if (rondo_refuse_async(r->rc, name, rondo_last_error(), NULL, &refusal) == RONDO_SUCCESS)
      rondo_wait(&refusal);
    q->req = NULL;
    q->err = MPI_ERR_OTHER;
    MPI_Grequest_complete(q->greq);
  }
  *request = q->greq;
  return MPI_SUCCESS;
}

/* ---- data movement --------------------------------------------------------------------------- */

/* buf's count elements of t as bytes: buf itself where t is flat, else
 * packed into r's scratch `which`. NULL when out of memory. */
static void *packed(ip_comm_t *r, int which, const void *buf, int count, MPI_Datatype t,
                    size_t bytes, MPI_Comm comm)
{
  if (flat(t))
    return (void *)buf;
  void *out = ip_scratch(r, which, bytes);
  int position = 0;
  if (out == NULL ||
      PMPI_Pack(buf, count, t, out, (int)bytes, &position, comm) != MPI_SUCCESS)
    return NULL;
  return out;
}

RONDO_API int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
  ip_comm_t *r;
  size_t block = 0, bytes = 0;
  int why = common(RONDO_MPI_ALLGATHER, comm, &r);
  int rsize = 0;
  if (why == TAKE) {
    if (recvcount < 0 || (sendbuf != MPI_IN_PLACE && sendcount < 0) ||
        PMPI_Type_size(recvtype, &rsize) != MPI_SUCCESS || (size_t)INT32_MAX < (size_t)recvcount * (size_t)rsize * (size_t)r->size) {
      why = IP_PASS_ARGS;
    } else {
      block = (size_t)recvcount * (size_t)rsize;
      bytes = block * (size_t)r->size;
      if (block == 0)
        why = IP_PASS_EMPTY;
      else if (!in_window(RONDO_MPI_ALLGATHER, bytes))
        why = IP_PASS_WINDOW;
    }
  }
  rondo_comm_t rc = serve(r, RONDO_MPI_ALLGATHER, why, bytes);
  if (rc == NULL)
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  int unpack = !flat(recvtype);
  char *dst = unpack ? ip_scratch(r, 1, bytes) : recvbuf;
  const void *src;
  if (sendbuf == MPI_IN_PLACE) {
    /* this rank's block is already in recvbuf, at its place: rondo's
     * in-place form (sendbuf is this rank's block of recvbuf), packed into
     * the packed blocks' place where recvtype has holes */
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(recvtype, &lb, &extent);
    const char *mine = (const char *)recvbuf + (MPI_Aint)r->rank * recvcount * extent;
    int position = 0;
    if (!unpack)
      src = mine;
    else if (dst != NULL && PMPI_Pack(mine, recvcount, recvtype, dst + (size_t)r->rank * block,
                                      (int)block, &position, comm) == MPI_SUCCESS)
      src = dst + (size_t)r->rank * block;
    else
      src = NULL;
  } else {
    src = packed(r, 0, sendbuf, sendcount, sendtype, block, comm);
  }
  if (src == NULL || dst == NULL) /* rondo's check fails the call on every rank */
    ip_log(IP_ERROR, "MPI_Allgather: no memory to pack %zu bytes", bytes);
  rondo_status_t st = rondo_allgather(rc, src, dst, block, RONDO_UINT8);
  if (st != RONDO_SUCCESS)
    return ip_fail(comm, st);
  int position = 0;
  if (unpack && PMPI_Unpack(dst, (int)bytes, &position, recvbuf, recvcount * r->size, recvtype,
                            comm) != MPI_SUCCESS)
    return ip_fail(comm, RONDO_ERR_INTERNAL);
  return MPI_SUCCESS;
}

RONDO_API int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm)
{
  ip_comm_t *r;
  size_t bytes = 0;
  int why = common(RONDO_MPI_ALLGATHERV, comm, &r);
  int rsize = 0;
  if (why == TAKE) {
    /* The bytes of rank i's block, recvcounts[i] x recvtype's size, are
     * the same on every rank (MPI's rule); recvtype and displs may not be */
    if (recvcounts == NULL || displs == NULL || (sendbuf != MPI_IN_PLACE && sendcount < 0) ||
        PMPI_Type_size(recvtype, &rsize) != MPI_SUCCESS)
      why = IP_PASS_ARGS;
    for (int i = 0; why == TAKE && i < r->size; i++) {
      if (recvcounts[i] < 0)
        why = IP_PASS_ARGS;
      else
        bytes += (size_t)recvcounts[i] * (size_t)rsize;
    }
    if (why == TAKE && (size_t)INT32_MAX < bytes)
      why = IP_PASS_ARGS;
    else if (why == TAKE && bytes == 0)
      why = IP_PASS_EMPTY;
    else if (why == TAKE && !in_window(RONDO_MPI_ALLGATHERV, bytes))
      why = IP_PASS_WINDOW;
  }
  rondo_comm_t rc = serve(r, RONDO_MPI_ALLGATHERV, why, bytes);
  if (rc == NULL)
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                           comm);
  /* rondo gathers bytes, the blocks packed in rank order (displs NULL: the
   * same call on every rank whatever their displs). Into recvbuf itself
   * where its blocks lie exactly so, else into scratch, then to them. */
  MPI_Aint lb, extent;
  PMPI_Type_get_extent(recvtype, &lb, &extent);
  int is_flat = flat(recvtype);
  int direct = is_flat;
  size_t mine = 0; /* this rank's block's offset among the packed blocks */
  for (int i = 0, next = 0; i < r->size; i++) {
    if (i == r->rank)
      mine = (size_t)next * (size_t)rsize;
    direct = direct && displs[i] == next;
    next += recvcounts[i];
  }
  size_t block = (size_t)recvcounts[r->rank] * (size_t)rsize;
  char *dst = direct ? recvbuf : ip_scratch(r, 1, bytes);
  const char *at_mine = (const char *)recvbuf + (MPI_Aint)displs[r->rank] * extent;
  const void *src;
  int position = 0;
  if (sendbuf != MPI_IN_PLACE)
    src = packed(r, 0, sendbuf, sendcount, sendtype, block, comm);
  else if (direct) /* rondo's in-place form: this rank's block of recvbuf */
    src = dst + mine;
  else if (is_flat) /* where this rank's displs put it */
    src = at_mine;
  else if (dst != NULL && PMPI_Pack(at_mine, recvcounts[r->rank], recvtype, dst + mine, (int)block,
                                    &position, comm) == MPI_SUCCESS)
    src = dst + mine; /* packed to its place in the packed blocks */
  else
    src = NULL;
  size_t *counts = counts_of(r, recvcounts, r->size, (size_t)rsize, "MPI_Allgatherv");
  if (src == NULL || dst == NULL) /* rondo's check fails the call on every rank */
    ip_log(IP_ERROR, "MPI_Allgatherv: no memory to pack %zu bytes", bytes);
  rondo_status_t st = rondo_allgatherv(rc, src, block, dst, counts, NULL, RONDO_UINT8);
  if (st != RONDO_SUCCESS)
    return ip_fail(comm, st);
  if (direct)
    return MPI_SUCCESS;
  size_t from = 0;
  for (int i = 0; i < r->size; from += (size_t)recvcounts[i] * (size_t)rsize, i++) {
    char *to = (char *)recvbuf + (MPI_Aint)displs[i] * extent;
    if (recvcounts[i] == 0 || (i == r->rank && sendbuf == MPI_IN_PLACE))
      continue; /* nothing, or already there */
    position = 0;
    if (is_flat)
      memcpy(to, dst + from, (size_t)recvcounts[i] * (size_t)rsize);
    else if (PMPI_Unpack(dst + from, (int)((size_t)recvcounts[i] * (size_t)rsize), &position, to,
                         recvcounts[i], recvtype, comm) != MPI_SUCCESS)
      return ip_fail(comm, RONDO_ERR_INTERNAL);
  }
  return MPI_SUCCESS;
}

RONDO_API int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
  ip_comm_t *r;
  size_t bytes = 0;
  int why = common(RONDO_MPI_BCAST, comm, &r);
  int size = 0;
  if (why == TAKE) {
    if (count < 0 || root < 0 || root >= r->size ||
        PMPI_Type_size(datatype, &size) != MPI_SUCCESS || (size_t)INT32_MAX < (size_t)count * (size_t)size) {
      why = IP_PASS_ARGS;
    } else {
      bytes = (size_t)count * (size_t)size;
      if (bytes == 0)
        why = IP_PASS_EMPTY;
      else if (!in_window(RONDO_MPI_BCAST, bytes))
        why = IP_PASS_WINDOW;
    }
  }
  rondo_comm_t rc = serve(r, RONDO_MPI_BCAST, why, bytes);
  if (rc == NULL)
    return PMPI_Bcast(buffer, count, datatype, root, comm);
  int is_flat = flat(datatype);
  void *buf = buffer;
  if (!is_flat) {
    buf = r->rank == root ? packed(r, 0, buffer, count, datatype, bytes, comm)
                          : ip_scratch(r, 0, bytes);
    if (buf == NULL) /* rondo's check fails the call on every rank */
      ip_log(IP_ERROR, "MPI_Bcast: no memory to pack %zu bytes", bytes);
  }
  rondo_status_t st = rondo_broadcast(rc, buf, bytes, RONDO_UINT8, root);
  if (st != RONDO_SUCCESS)
    return ip_fail(comm, st);
  int position = 0;
  if (!is_flat && r->rank != root &&
      PMPI_Unpack(buf, (int)bytes, &position, buffer, count, datatype, comm) != MPI_SUCCESS)
    return ip_fail(comm, RONDO_ERR_INTERNAL);
  return MPI_SUCCESS;
}

RONDO_API int MPI_Barrier(MPI_Comm comm)
{
  ip_comm_t *r;
  int why = common(RONDO_MPI_BARRIER, comm, &r);
  rondo_comm_t rc = serve(r, RONDO_MPI_BARRIER, why, 0);
  if (rc == NULL)
    return PMPI_Barrier(comm);
  rondo_status_t st = rondo_barrier(rc);
  return st == RONDO_SUCCESS ? MPI_SUCCESS : ip_fail(comm, st);
}

/* ---- the program's start and end -------------------------------------------------------------- */

/* After MPI started: the datatype table, the agreed configuration, and
 * MPI_COMM_WORLD's rondo comm where MPI_Iallreduce may need it. */
static void started(int provided)
{
  check_dtypes();
  ip_setup(provided);
  if (ip_active && ip_config.on[RONDO_MPI_IALLREDUCE] && provided >= MPI_THREAD_MULTIPLE) {
    ip_comm_t *w = ip_record(MPI_COMM_WORLD);
    if (w != NULL && w->size > 1)
      ip_rondo(w);
  }
}

/* Before MPI starts: under torchrun or any launcher that sets RANK and
 * WORLD_SIZE, the world forms through rondo's rendezvous
 * (docs/launching.md), so an unmodified MPI program runs as one job
 * instead of N singletons. A job that cannot form says why on every rank. */
static int prepare(void)
{
  /* An MPI program's output is the program's: with RONDO_LOG unset, rondo
   * (librondo and this library) writes nothing into it (docs/mpi.md). Set
   * here, before anything reads it; an error that ends the program still
   * reaches it, through MPI's error handler (ip_fail) or below. */
  setenv("RONDO_LOG", "off", 0);
  if (rondo_launch_prepare() == RONDO_SUCCESS)
    return MPI_SUCCESS;
  fprintf(stderr, "librondo-mpi: MPI_Init: %s\n", rondo_last_error());
  return MPI_ERR_OTHER;
}

RONDO_API int MPI_Init(int *argc, char ***argv)
{
  int rc = prepare();
  if (rc != MPI_SUCCESS)
    return rc;
  rc = PMPI_Init(argc, argv);
  int provided = MPI_THREAD_SINGLE;
  if (rc == MPI_SUCCESS && PMPI_Query_thread(&provided) == MPI_SUCCESS)
    started(provided);
  return rc;
}

RONDO_API int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
  int rc = prepare();
  if (rc != MPI_SUCCESS)
    return rc;
  rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS)
    started(*provided);
  return rc;
}

/* After the teardown, librondo's own MPI_Finalize finalizes MPI the way
 * rondo does (on a job that spans nodes, around MPICH 4.0.2's hang there:
 * lib/api/mpich_ucx.c). It is looked up in librondo itself: MPI's own
 * MPI_Finalize may come before it in the lookup order. */
RONDO_API int MPI_Finalize(void)
{
  ip_teardown();
  void *lib = dlopen(RONDO_SONAME, RTLD_LAZY | RTLD_NOLOAD);
  int (*rondo_mpi_finalize)(void) = lib != NULL ? (int (*)(void))dlsym(lib, "MPI_Finalize") : NULL;
  int rc = rondo_mpi_finalize != NULL ? rondo_mpi_finalize() : PMPI_Finalize();
  if (lib != NULL)
    dlclose(lib);
  return rc;
}
