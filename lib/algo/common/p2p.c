/*
 * Shared helpers of the algorithms: byte messages of any size, the MPI
 * datatype/op mapping for the mpi algorithm and reduce-scatter, and the
 * operand-ordered reduction that keeps partners' results bit-identical.
 */
#include "algo/algo.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/reduce.h"
#include "topo/topo.h"

/* MPI-4 has large-count (MPI_Count) point-to-point; with MPI-3 one message
 * is limited to INT_MAX bytes. */
#if MPI_VERSION >= 4
#define ISEND(buf, n, peer, tag, comm, req) \
  MPI_Isend_c(buf, (MPI_Count)(n), MPI_BYTE, peer, tag, comm, req)
#define IRECV(buf, n, peer, tag, comm, req) \
  MPI_Irecv_c(buf, (MPI_Count)(n), MPI_BYTE, peer, tag, comm, req)
#define FITS(n) 1
#else
#define ISEND(buf, n, peer, tag, comm, req) MPI_Isend(buf, (int)(n), MPI_BYTE, peer, tag, comm, req)
#define IRECV(buf, n, peer, tag, comm, req) MPI_Irecv(buf, (int)(n), MPI_BYTE, peer, tag, comm, req)
#define FITS(n) ((n) <= INT_MAX)
#endif

static rondo_status_t too_large(size_t bytes)
{
  return rondo__fail(RONDO_ERR_UNSUPPORTED,
                     "a %zu-byte message needs an MPI-4 library (large counts)", bytes);
}

rondo_status_t algo_check_message(size_t bytes)
{
  return FITS(bytes) ? RONDO_SUCCESS : too_large(bytes);
}

rondo_status_t algo_isend_tag(rondo_comm_t comm, const void *buf, size_t bytes, int peer,
                              int tag, MPI_Request *req)
{
  if (!FITS(bytes))
    return too_large(bytes);
  MPI_CHECK(ISEND(buf, bytes, peer, tag, comm->mpi, req));
  return RONDO_SUCCESS;
}

rondo_status_t algo_irecv_tag(rondo_comm_t comm, void *buf, size_t bytes, int peer, int tag,
                              MPI_Request *req)
{
  if (!FITS(bytes))
    return too_large(bytes);
  MPI_CHECK(IRECV(buf, bytes, peer, tag, comm->mpi, req));
  return RONDO_SUCCESS;
}

rondo_status_t algo_isend(rondo_comm_t comm, const void *buf, size_t bytes, int peer,
                          MPI_Request *req)
{
  return algo_isend_tag(comm, buf, bytes, peer, ALGO_TAG, req);
}

rondo_status_t algo_irecv(rondo_comm_t comm, void *buf, size_t bytes, int peer,
                          MPI_Request *req)
{
  return algo_irecv_tag(comm, buf, bytes, peer, ALGO_TAG, req);
}

/* A loop of MPI_Wait rather than MPI_Waitall: the same progress, and GCC 12
 * misreads MPICH's MPI_STATUSES_IGNORE as a zero-sized status array. On an
 * oversubscribed node MPI_Wait would spin until the scheduler preempts it
 * (a whole time slice, 4 ms on a 250 Hz kernel) while the rank it waits for
 * cannot run; polling with MPI_Test and yielding between polls hands the
 * core over at once. */
rondo_status_t algo_wait(rondo_comm_t comm, MPI_Request *req, MPI_Status *status)
{
  if (!comm->yield_waits) {
    MPI_CHECK(MPI_Wait(req, status));
    return RONDO_SUCCESS;
  }
  unsigned polls = 0;
  for (;;) {
    int done = 0;
    MPI_CHECK(MPI_Test(req, &done, status));
    if (done)
      return RONDO_SUCCESS;
    topo_yield(polls++);
  }
}

rondo_status_t algo_waitall(rondo_comm_t comm, int n, MPI_Request *reqs)
{
  for (int i = 0; i < n; i++)
    RONDO_CHECK(algo_wait(comm, &reqs[i], MPI_STATUS_IGNORE));
  return RONDO_SUCCESS;
}

void algo_abandon(int nrecv, MPI_Request *recvs, int nsend, MPI_Request *sends)
{
  for (int i = 0; i < nrecv; i++)
    if (recvs[i] != MPI_REQUEST_NULL) {
      MPI_CHECK_LOG(MPI_Cancel(&recvs[i]));
      MPI_CHECK_LOG(MPI_Wait(&recvs[i], MPI_STATUS_IGNORE));
    }
  for (int i = 0; i < nsend; i++)
    if (sends[i] != MPI_REQUEST_NULL)
      MPI_CHECK_LOG(MPI_Request_free(&sends[i]));
}

rondo_status_t algo_sendrecv(rondo_comm_t comm, const void *sbuf, size_t sbytes,
                             int dest, void *rbuf, size_t rbytes, int src)
{
  MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  rondo_status_t st = algo_irecv(comm, rbuf, rbytes, src, &req[0]);
  if (st == RONDO_SUCCESS)
    st = algo_isend(comm, sbuf, sbytes, dest, &req[1]);
  if (st != RONDO_SUCCESS) {
    algo_abandon(1, &req[0], 1, &req[1]); /* the receive must not outlive rbuf */
    return st;
  }
  return algo_waitall(comm, 2, req);
}

/* Adasum's combination, segment by segment (algo_allreduce_args_t). */
static void adasum_segments(void *dst, const void *left, const void *right, size_t count,
                            const algo_allreduce_args_t *a)
{
  size_t n = a->segments != NULL ? a->nsegments : 1, off = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k = a->segments != NULL ? a->segments[i] : count, b = off * a->esize;
    reduce_adasum((char *)dst + b, (const char *)left + b, (const char *)right + b, k, a->dtype);
    off += k;
  }
}

void algo_reduce_ordered(void *dst, const void *mine, const void *theirs, size_t count,
                         const algo_allreduce_args_t *a, int peer)
{
  const void *left = peer < a->comm->rank ? theirs : mine;
  const void *right = peer < a->comm->rank ? mine : theirs;
  if (a->op == RONDO_ADASUM)
    adasum_segments(dst, left, right, count, a);
  else
    reduce_apply(dst, left, right, count, a->dtype, a->op);
}

void algo_copy_input(const algo_allreduce_args_t *a)
{
  if (a->sendbuf != a->recvbuf)
    memcpy(a->recvbuf, a->sendbuf, a->count * a->esize);
}

/* ---- MPI datatype and op mapping ------------------------------------------------ */

/* Which rondo dtype an MPI datatype given to a user op stands for. */
static MPI_Datatype half_type = MPI_DATATYPE_NULL, bf16_type = MPI_DATATYPE_NULL;
/* One per op MPI can run (all but ADASUM, which is not elementwise). */
enum { MPI_OPS = RONDO_ADASUM };
static MPI_Op user_ops[MPI_OPS];
static pthread_once_t types_once = PTHREAD_ONCE_INIT;
static int types_rc = MPI_SUCCESS;
/* MPI's own MPI_SUM of 8- and 16-bit integers wraps around as C does: not
 * in Open MPI 4.1, whose op/avx component adds them with saturation (200 +
 * 100 gives 255, not 44; open-mpi/ompi#8045). Asked of the library at
 * start-up (sum_wraps); where it does not, rondo's own kernels sum them. */
static int small_sums_wrap = 1;

static int dtype_of(MPI_Datatype t, rondo_dtype_t *out)
{
  if (t == half_type)
    *out = RONDO_FLOAT16;
  else if (t == bf16_type)
    *out = RONDO_BFLOAT16;
  else if (t == MPI_FLOAT)
    *out = RONDO_FLOAT32;
  else if (t == MPI_DOUBLE)
    *out = RONDO_FLOAT64;
  else if (t == MPI_UINT8_T)
    *out = RONDO_UINT8;
  else if (t == MPI_INT8_T)
    *out = RONDO_INT8;
  else if (t == MPI_INT16_T)
    *out = RONDO_INT16;
  else
    return -1;
  return 0;
}

/* MPI's user-function contract: inout[i] = in[i] op inout[i]. */
#define USER_OP(name, op)                                                      \
  static void name(void *in, void *inout, int *len, MPI_Datatype *t)           \
  {                                                                            \
    rondo_dtype_t d;                                                           \
    if (dtype_of(*t, &d) == 0)                                                 \
      reduce_apply(inout, in, inout, (size_t)*len, d, op);                     \
  }
USER_OP(user_sum, RONDO_SUM)
USER_OP(user_min, RONDO_MIN)
USER_OP(user_max, RONDO_MAX)
USER_OP(user_prod, RONDO_PROD)
#undef USER_OP

/* Whether MPI_SUM of type t wraps around on a whole vector (long enough for
 * any SIMD path): MPI_Reduce_local runs the op as a collective would,
 * without communicating. */
static int sum_wraps(MPI_Datatype t, size_t esize)
{
  enum { N = 256 };
  unsigned char in[N * 2], inout[N * 2];
  for (size_t i = 0; i < N * esize; i++) {
    in[i] = 0xc8;    /* each element: 0xc8, 0xc8c8 */
    inout[i] = 0x64; /* 0x64, 0x6464: the sums wrap */
  }
  if (MPI_Reduce_local(in, inout, N, t, MPI_SUM) != MPI_SUCCESS)
    return 0;
  for (size_t i = 0; i < N; i++) {
    unsigned want = esize == 1 ? (0xc8u + 0x64u) & 0xffu : (0xc8c8u + 0x6464u) & 0xffffu;
    unsigned got = esize == 1 ? inout[i] : (unsigned)(inout[2 * i] | inout[2 * i + 1] << 8);
    if (got != want)
      return 0;
  }
  return 1;
}

static void create_types(void)
{
  MPI_User_function *fn[MPI_OPS] = {user_sum, user_sum, user_min, user_max, user_prod};
  int rc = MPI_Type_contiguous(2, MPI_BYTE, &half_type);
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_commit(&half_type);
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_contiguous(2, MPI_BYTE, &bf16_type);
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_commit(&bf16_type);
  for (int op = 0; op < MPI_OPS && rc == MPI_SUCCESS; op++)
    rc = MPI_Op_create(fn[op], 1, &user_ops[op]);
  if (rc == MPI_SUCCESS) {
    small_sums_wrap = sum_wraps(MPI_UINT8_T, 1) && sum_wraps(MPI_INT8_T, 1) &&
                      sum_wraps(MPI_INT16_T, 2);
    if (!small_sums_wrap)
      LOG_DEBUG("MPI_SUM saturates 8- and 16-bit integers in this MPI; rondo sums them itself");
  }
  types_rc = rc;
}

void algo_mpi_op_free(void)
{
  if (half_type == MPI_DATATYPE_NULL)
    return;
  MPI_CHECK_LOG(MPI_Type_free(&half_type));
  MPI_CHECK_LOG(MPI_Type_free(&bf16_type));
  for (int op = 0; op < MPI_OPS; op++)
    if (user_ops[op] != MPI_OP_NULL)
      MPI_CHECK_LOG(MPI_Op_free(&user_ops[op]));
}

rondo_status_t algo_mpi_op(rondo_dtype_t dtype, rondo_op_t op, MPI_Datatype *mtype,
                           MPI_Op *mop)
{
  static const MPI_Op builtin[MPI_OPS] = {MPI_SUM, MPI_SUM, MPI_MIN, MPI_MAX, MPI_PROD};
  if ((unsigned)op >= MPI_OPS)
    return rondo__fail(RONDO_ERR_UNSUPPORTED, "op %s has no MPI reduction",
                       rondo_op_name(op) ? rondo_op_name(op) : "?");
  pthread_once(&types_once, create_types);
  if (types_rc != MPI_SUCCESS)
    return rondo__mpi_fail(types_rc, "MPI_Type_contiguous/MPI_Op_create", __FILE__,
                           __LINE__);
  int minmax = op == RONDO_MIN || op == RONDO_MAX;
  *mop = builtin[op];
  int small_sum = (op == RONDO_SUM || op == RONDO_AVG) && !small_sums_wrap;
  switch (dtype) {
  case RONDO_INT8:
    *mtype = MPI_INT8_T;
    if (small_sum)
      *mop = user_ops[op];
    break;
  case RONDO_INT16:
    *mtype = MPI_INT16_T;
    if (small_sum)
      *mop = user_ops[op];
    break;
  case RONDO_UINT8:
    /* MPICH 4.0 compares MPI_UINT8_T as signed in MPI_MIN/MPI_MAX. */
    *mtype = MPI_UINT8_T;
    if (minmax || small_sum)
      *mop = user_ops[op];
    break;
  case RONDO_INT32: *mtype = MPI_INT32_T; break;
  case RONDO_INT64: *mtype = MPI_INT64_T; break;
  case RONDO_FLOAT16: *mtype = half_type; *mop = user_ops[op]; break;
  case RONDO_BFLOAT16: *mtype = bf16_type; *mop = user_ops[op]; break;
  case RONDO_FLOAT32:
    *mtype = MPI_FLOAT;
    if (minmax)
      *mop = user_ops[op];
    break;
  case RONDO_FLOAT64:
    *mtype = MPI_DOUBLE;
    if (minmax)
      *mop = user_ops[op];
    break;
  default:
    return rondo__fail(RONDO_ERR_INVALID_DTYPE, "dtype %d", (int)dtype);
  }
  return RONDO_SUCCESS;
}

/* Grows *mem (of *have bytes) to at least bytes. */
static rondo_status_t grow(void **mem, size_t *have, size_t bytes, void **buf)
{
  if (bytes > *have) {
    free(*mem);
    *mem = malloc(bytes);
    if (*mem == NULL) {
      *have = 0;
      return rondo__fail(RONDO_ERR_NO_MEMORY, "no memory for %zu bytes of scratch", bytes);
    }
    *have = bytes;
  }
  *buf = *mem;
  return RONDO_SUCCESS;
}

rondo_status_t algo_scratch(rondo_comm_t comm, size_t bytes, void **buf)
{
  return grow(&comm->scratch, &comm->scratch_bytes, bytes, buf);
}

rondo_status_t algo_result_scratch(rondo_comm_t comm, size_t bytes, void **buf)
{
  return grow(&comm->result, &comm->result_bytes, bytes, buf);
}
