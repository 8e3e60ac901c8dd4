/*
 * The real device backend: the CUDA runtime and NCCL. The only file of
 * librondo that includes their headers. Every call is checked:
 *   - CUDA_CHECK turns a failure into RONDO_ERR_CUDA with the call, CUDA's
 *     error name and string, and the source location;
 *   - NCCL_CHECK turns one into RONDO_ERR_NCCL with NCCL's string and
 *     ncclGetLastError's detail.
 * Without CUDA (configure found none) there is no device. Without NCCL
 * there is no collective library: coll_id is NULL and the selector offers
 * the staging algorithm alone.
 *
 * NCCL communicators are made non-blocking (config.blocking = 0):
 * ncclCommInitRankConfig returns at once, and ncclCommGetAsyncError says
 * when the communicator is ready or why it failed. lib/algo/common/gpu.c then
 * polls it along with its timeout and the other ranks' failures, and a
 * stuck initialization can be aborted instead of hanging.
 */
#include "device/device.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef HAVE_NCCL
/* nccl.h declares a few functions as f() */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#endif

/* ---- rondo's types in NCCL's terms (pure: unit-tested without a GPU) ------------ */

/* NCCL's enum values (nccl.h; part of its ABI). */
enum { N_INT8 = 0, N_UINT8 = 1, N_INT32 = 2, N_INT64 = 4, N_FLOAT16 = 6, N_FLOAT32 = 7,
       N_FLOAT64 = 8, N_BFLOAT16 = 9 };
enum { N_SUM = 0, N_PROD = 1, N_MAX = 2, N_MIN = 3, N_AVG = 4 };

#ifdef HAVE_NCCL
_Static_assert(N_INT8 == (int)ncclInt8 && N_UINT8 == (int)ncclUint8 &&
                   N_INT32 == (int)ncclInt32 && N_INT64 == (int)ncclInt64 &&
                   N_FLOAT16 == (int)ncclFloat16 && N_FLOAT32 == (int)ncclFloat32 &&
                   N_FLOAT64 == (int)ncclFloat64 && N_BFLOAT16 == (int)ncclBfloat16,
               "NCCL's data types");
_Static_assert(N_SUM == (int)ncclSum && N_PROD == (int)ncclProd && N_MAX == (int)ncclMax &&
                   N_MIN == (int)ncclMin && N_AVG == (int)ncclAvg,
               "NCCL's ops");
#endif

/* Public (rondo.h), here beside nccl.h. */
int rondo_nccl_version(void)
{
#ifdef HAVE_NCCL
  return NCCL_VERSION_CODE;
#else
  return 0;
#endif
}

int dev_nccl_dtype(rondo_dtype_t dtype)
{
  switch (dtype) {
  case RONDO_INT8: return N_INT8;
  case RONDO_UINT8: return N_UINT8;
  case RONDO_INT32: return N_INT32;
  case RONDO_INT64: return N_INT64;
  case RONDO_FLOAT16: return N_FLOAT16;
  case RONDO_BFLOAT16: return N_BFLOAT16;
  case RONDO_FLOAT32: return N_FLOAT32;
  case RONDO_FLOAT64: return N_FLOAT64;
  default: return -1;
  }
}

int dev_nccl_op(rondo_op_t op, int nranks)
{
  switch (op) {
  case RONDO_SUM: return N_SUM;
  /* One rank's average is its input. NCCL runs a one-rank ncclAvg in a
   * kernel that, before 2.29.7, skips the last count % blocks elements
   * (NVIDIA/nccl#1950: 16 of 70000 float32 stayed unwritten on an H100);
   * a one-rank ncclSum is a plain copy. */
  case RONDO_AVG: return nranks == 1 ? N_SUM : N_AVG;
  case RONDO_MIN: return N_MIN;
  case RONDO_MAX: return N_MAX;
  case RONDO_PROD: return N_PROD;
  default: return -1;
  }
}

#ifdef HAVE_CUDA

/* ---- CUDA ------------------------------------------------------------------------ */

static rondo_status_t cuda_fail(cudaError_t e, const char *call, const char *file, int line)
{
  (void)cudaGetLastError(); /* clear a non-sticky error so the next call starts clean */
  return rondo__fail(RONDO_ERR_CUDA, "%s failed: %s: %s (%s:%d)", call, cudaGetErrorName(e),
                     cudaGetErrorString(e), file, line);
}

#define CUDA_CHECK(call)                                                       \
  do {                                                                         \
    cudaError_t cuda_rc_ = (call);                                             \
    if (cuda_rc_ != cudaSuccess)                                               \
      return cuda_fail(cuda_rc_, #call, __FILE__, __LINE__);                   \
  } while (0)
/* For teardown, where a failure cannot be returned. */
#define CUDA_CHECK_LOG(call)                                                   \
  do {                                                                         \
    cudaError_t cuda_rc_ = (call);                                             \
    if (cuda_rc_ != cudaSuccess)                                               \
      (void)cuda_fail(cuda_rc_, #call, __FILE__, __LINE__);                    \
  } while (0)

static rondo_status_t cu_device_count(int *n)
{
  *n = 0;
  cudaError_t e = cudaGetDeviceCount(n);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();
    *n = 0;
    LOG_DEBUG("CUDA: no device (%s)", cudaGetErrorString(e));
    return RONDO_SUCCESS;
  }
  CUDA_CHECK(e);
  return RONDO_SUCCESS;
}

/* The driver's cuMemGetAddressRange (the runtime has no call for an
 * allocation's extent), found through the runtime so that librondo does
 * not link libcuda, which machines without a driver lack. Its C type:
 * CUresult (CUdeviceptr *base, size_t *size, CUdeviceptr p), CUdeviceptr
 * being an unsigned 64-bit integer and CUresult 0 for success. */
typedef int (*address_range_fn)(unsigned long long *base, size_t *size, unsigned long long p);
static address_range_fn address_range;
static pthread_once_t address_range_once = PTHREAD_ONCE_INIT;

static void find_address_range(void)
{
#if CUDART_VERSION >= 12050 /* the call's first release; older toolkits go unchecked */
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
                                       &q) == cudaSuccess &&
      q == cudaDriverEntryPointSuccess)
    address_range = (address_range_fn)fn;
  else
    (void)cudaGetLastError();
#endif
}

static rondo_status_t cu_pointer_device(const void *p, int *device, size_t *room)
{
  struct cudaPointerAttributes a;
  *device = -1;
  *room = SIZE_MAX;
  CUDA_CHECK(cudaPointerGetAttributes(&a, p));
  /* Pinned host memory (cudaMemoryTypeHost) is host memory to rondo: its
   * host algorithms can read it. Managed memory is the device's. */
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    return RONDO_SUCCESS;
  *device = a.device;
  pthread_once(&address_range_once, find_address_range);
  unsigned long long base = 0, at = (unsigned long long)(uintptr_t)p;
  size_t size = 0;
  if (address_range != NULL && address_range(&base, &size, at) == 0 && at >= base &&
      at - base <= size)
    *room = (size_t)(base + size - at);
  return RONDO_SUCCESS;
}

static rondo_status_t cu_get_device(int *device)
{
  CUDA_CHECK(cudaGetDevice(device));
  return RONDO_SUCCESS;
}

static rondo_status_t cu_set_device(int device)
{
  CUDA_CHECK(cudaSetDevice(device));
  return RONDO_SUCCESS;
}

static rondo_status_t cu_uuid(int device, char *buf, size_t len)
{
  CUDA_CHECK(cudaDeviceGetPCIBusId(buf, (int)len, device));
  return RONDO_SUCCESS;
}

static rondo_status_t cu_mem_alloc(void **p, size_t bytes)
{
  CUDA_CHECK(cudaMalloc(p, bytes));
  return RONDO_SUCCESS;
}

static void cu_mem_free(void *p)
{
  if (p != NULL)
    CUDA_CHECK_LOG(cudaFree(p));
}

static rondo_status_t cu_host_alloc(void **p, size_t bytes)
{
  CUDA_CHECK(cudaMallocHost(p, bytes));
  return RONDO_SUCCESS;
}

static void cu_host_free(void *p)
{
  if (p != NULL)
    CUDA_CHECK_LOG(cudaFreeHost(p));
}

/* dev_stream_t and dev_event_t are CUDA's handles, cast. */
static rondo_status_t cu_stream_create(dev_stream_t **s)
{
  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  *s = (dev_stream_t *)st;
  return RONDO_SUCCESS;
}

static void cu_stream_destroy(dev_stream_t *s)
{
  if (s == NULL)
    return;
  CUDA_CHECK_LOG(cudaStreamSynchronize((cudaStream_t)s));
  CUDA_CHECK_LOG(cudaStreamDestroy((cudaStream_t)s));
}

static rondo_status_t cu_copy_async(void *dst, const void *src, size_t bytes, dev_stream_t *s)
{
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)s));
  return RONDO_SUCCESS;
}

static rondo_status_t cu_event_create(dev_event_t **e)
{
  cudaEvent_t ev;
  CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  *e = (dev_event_t *)ev;
  return RONDO_SUCCESS;
}

static void cu_event_destroy(dev_event_t *e)
{
  if (e != NULL)
    CUDA_CHECK_LOG(cudaEventDestroy((cudaEvent_t)e));
}

static rondo_status_t cu_event_record(dev_event_t *e, dev_stream_t *s)
{
  CUDA_CHECK(cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s));
  return RONDO_SUCCESS;
}

static rondo_status_t cu_event_query(dev_event_t *e, int *done)
{
  cudaError_t rc = cudaEventQuery((cudaEvent_t)e);
  *done = rc == cudaSuccess;
  if (rc == cudaErrorNotReady) {
    (void)cudaGetLastError(); /* not an error */
    return RONDO_SUCCESS;
  }
  CUDA_CHECK(rc);
  return RONDO_SUCCESS;
}

static rondo_status_t cu_stream_sync(dev_stream_t *s)
{
  CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)s));
  return RONDO_SUCCESS;
}

#else /* !HAVE_CUDA */

static rondo_status_t no_cuda(void)
{
  return rondo__fail(RONDO_ERR_UNSUPPORTED,
                     "this rondo was built without CUDA (configure --with-cuda)");
}

static rondo_status_t cu_device_count(int *n)
{
  *n = 0;
  return RONDO_SUCCESS;
}
static rondo_status_t cu_pointer_device(const void *p, int *device, size_t *room)
{
  (void)p;
  *device = -1;
  *room = SIZE_MAX;
  return RONDO_SUCCESS;
}
static rondo_status_t cu_get_device(int *device)
{
  *device = -1;
  return no_cuda();
}
static rondo_status_t cu_set_device(int device) { (void)device; return no_cuda(); }
static rondo_status_t cu_uuid(int device, char *buf, size_t len)
{
  (void)device;
  (void)buf;
  (void)len;
  return no_cuda();
}
static rondo_status_t cu_mem_alloc(void **p, size_t bytes)
{
  (void)bytes;
  *p = NULL;
  return no_cuda();
}
static void cu_mem_free(void *p) { (void)p; }
static rondo_status_t cu_host_alloc(void **p, size_t bytes)
{
  (void)bytes;
  *p = NULL;
  return no_cuda();
}
static void cu_host_free(void *p) { (void)p; }
static rondo_status_t cu_stream_create(dev_stream_t **s)
{
  *s = NULL;
  return no_cuda();
}
static void cu_stream_destroy(dev_stream_t *s) { (void)s; }
static rondo_status_t cu_copy_async(void *dst, const void *src, size_t bytes, dev_stream_t *s)
{
  (void)dst;
  (void)src;
  (void)bytes;
  (void)s;
  return no_cuda();
}
static rondo_status_t cu_event_create(dev_event_t **e)
{
  *e = NULL;
  return no_cuda();
}
static void cu_event_destroy(dev_event_t *e) { (void)e; }
static rondo_status_t cu_event_record(dev_event_t *e, dev_stream_t *s)
{
  (void)e;
  (void)s;
  return no_cuda();
}
static rondo_status_t cu_event_query(dev_event_t *e, int *done)
{
  (void)e;
  *done = 0;
  return no_cuda();
}
static rondo_status_t cu_stream_sync(dev_stream_t *s) { (void)s; return no_cuda(); }

#endif /* HAVE_CUDA */

#if defined(HAVE_CUDA) && defined(HAVE_NCCL)

/* ---- NCCL -------------------------------------------------------------------------- */

static rondo_status_t nccl_fail(ncclResult_t r, ncclComm_t comm, const char *call,
                                const char *file, int line)
{
  const char *detail = ncclGetLastError(comm);
  return rondo__fail(RONDO_ERR_NCCL, "%s failed: %s%s%s (%s:%d; NCCL_DEBUG=INFO says more)",
                     call, ncclGetErrorString(r), detail && *detail ? ": " : "",
                     detail ? detail : "", file, line);
}

/* ncclInProgress is not a failure on a non-blocking communicator. */
#define NCCL_CHECK(comm, call)                                                 \
  do {                                                                         \
    ncclResult_t nccl_rc_ = (call);                                            \
    if (nccl_rc_ != ncclSuccess && nccl_rc_ != ncclInProgress)                 \
      return nccl_fail(nccl_rc_, (comm), #call, __FILE__, __LINE__);           \
  } while (0)

_Static_assert(sizeof(ncclUniqueId) == DEV_COLL_ID_BYTES, "dev_coll_id_t holds an ncclUniqueId");

static rondo_status_t nc_coll_id(dev_coll_id_t *id)
{
  ncclUniqueId u;
  NCCL_CHECK(NULL, ncclGetUniqueId(&u));
  memcpy(id->bytes, &u, sizeof u);
  return RONDO_SUCCESS;
}

static rondo_status_t nc_coll_init(dev_coll_t **c, int nranks, const dev_coll_id_t *id,
                                   int rank, MPI_Comm mpi)
{
  (void)mpi;
  ncclUniqueId u;
  memcpy(&u, id->bytes, sizeof u);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  *c = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&comm, nranks, u, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    rondo_status_t st = nccl_fail(r, comm, "ncclCommInitRankConfig", __FILE__, __LINE__);
    if (comm != NULL)
      (void)ncclCommAbort(comm);
    return st;
  }
  *c = (dev_coll_t *)comm;
  return RONDO_SUCCESS;
}

static rondo_status_t nc_coll_state(dev_coll_t *c, int *ready)
{
  ncclComm_t comm = (ncclComm_t)c;
  ncclResult_t async = ncclSuccess;
  *ready = 0;
  NCCL_CHECK(comm, ncclCommGetAsyncError(comm, &async));
  if (async == ncclInProgress)
    return RONDO_SUCCESS;
  if (async != ncclSuccess)
    return nccl_fail(async, comm, "ncclCommGetAsyncError", __FILE__, __LINE__);
  *ready = 1;
  return RONDO_SUCCESS;
}

static rondo_status_t nc_coll_allreduce(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                        size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                        dev_stream_t *s)
{
  ncclComm_t comm = (ncclComm_t)c;
  int nranks = 0;
  NCCL_CHECK(comm, ncclCommCount(comm, &nranks));
  int t = dev_nccl_dtype(dtype), o = dev_nccl_op(op, nranks);
  if (t < 0 || o < 0)
    return rondo__fail(RONDO_ERR_INTERNAL, "NCCL: no type for dtype %d or op %d", (int)dtype,
                       (int)op);
  NCCL_CHECK(comm, ncclAllReduce(sendbuf, recvbuf, count, (ncclDataType_t)t, (ncclRedOp_t)o,
                                 comm, (cudaStream_t)s));
  return RONDO_SUCCESS;
}

static rondo_status_t nc_coll_broadcast(dev_coll_t *c, void *buf, size_t bytes, int root,
                                        dev_stream_t *s)
{
  ncclComm_t comm = (ncclComm_t)c;
  NCCL_CHECK(comm, ncclBroadcast(buf, buf, bytes, ncclInt8, root, comm, (cudaStream_t)s));
  return RONDO_SUCCESS;
}

static rondo_status_t nc_coll_allgather(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                        size_t bytes, dev_stream_t *s)
{
  ncclComm_t comm = (ncclComm_t)c;
  NCCL_CHECK(comm, ncclAllGather(sendbuf, recvbuf, bytes, ncclInt8, comm, (cudaStream_t)s));
  return RONDO_SUCCESS;
}

static rondo_status_t nc_coll_reduce_scatter(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                             size_t recvcount, rondo_dtype_t dtype,
                                             rondo_op_t op, dev_stream_t *s)
{
  ncclComm_t comm = (ncclComm_t)c;
  int nranks = 0;
  NCCL_CHECK(comm, ncclCommCount(comm, &nranks));
  int t = dev_nccl_dtype(dtype), o = dev_nccl_op(op, nranks);
  if (t < 0 || o < 0)
    return rondo__fail(RONDO_ERR_INTERNAL, "NCCL: no type for dtype %d or op %d", (int)dtype,
                       (int)op);
  NCCL_CHECK(comm, ncclReduceScatter(sendbuf, recvbuf, recvcount, (ncclDataType_t)t,
                                     (ncclRedOp_t)o, comm, (cudaStream_t)s));
  return RONDO_SUCCESS;
}

static void nc_coll_abort(dev_coll_t *c)
{
  if (c == NULL)
    return;
  ncclResult_t r = ncclCommAbort((ncclComm_t)c);
  if (r != ncclSuccess)
    LOG_INFO("ncclCommAbort: %s", ncclGetErrorString(r));
}

static void nc_coll_destroy(dev_coll_t *c)
{
  if (c == NULL)
    return;
  ncclComm_t comm = (ncclComm_t)c;
  /* Finalize (non-blocking here: poll), then destroy; abort if it fails. */
  ncclResult_t r = ncclCommFinalize(comm), async = ncclInProgress;
  for (int i = 0; r == ncclSuccess || r == ncclInProgress; i++) {
    if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || async != ncclInProgress)
      break;
    if (i > 100000) { /* ~10 s: give up and abort */
      async = ncclInternalError;
      break;
    }
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  if ((r != ncclSuccess && r != ncclInProgress) || async != ncclSuccess) {
    LOG_INFO("ncclCommFinalize: %s; aborting the communicator",
             ncclGetErrorString(r != ncclSuccess && r != ncclInProgress ? r : async));
    (void)ncclCommAbort(comm);
    return;
  }
  r = ncclCommDestroy(comm);
  if (r != ncclSuccess)
    LOG_INFO("ncclCommDestroy: %s", ncclGetErrorString(r));
}

#define NC_COLL_ID nc_coll_id
#else
#define NC_COLL_ID NULL
static rondo_status_t nc_coll_init(dev_coll_t **c, int nranks, const dev_coll_id_t *id,
                                   int rank, MPI_Comm mpi)
{
  (void)nranks;
  (void)id;
  (void)rank;
  (void)mpi;
  *c = NULL;
  return rondo__fail(RONDO_ERR_UNSUPPORTED,
                     "this rondo was built without NCCL (configure --with-nccl)");
}
static rondo_status_t nc_coll_state(dev_coll_t *c, int *ready)
{
  (void)c;
  *ready = 0;
  return rondo__fail(RONDO_ERR_UNSUPPORTED, "this rondo was built without NCCL");
}
static rondo_status_t nc_coll_allreduce(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                        size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                        dev_stream_t *s)
{
  (void)c;
  (void)sendbuf;
  (void)recvbuf;
  (void)count;
  (void)dtype;
  (void)op;
  (void)s;
  return rondo__fail(RONDO_ERR_UNSUPPORTED, "this rondo was built without NCCL");
}
static rondo_status_t nc_coll_broadcast(dev_coll_t *c, void *buf, size_t bytes, int root,
                                        dev_stream_t *s)
{
  (void)c;
  (void)buf;
  (void)bytes;
  (void)root;
  (void)s;
  return rondo__fail(RONDO_ERR_UNSUPPORTED, "this rondo was built without NCCL");
}
static rondo_status_t nc_coll_allgather(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                        size_t bytes, dev_stream_t *s)
{
  (void)c;
  (void)sendbuf;
  (void)recvbuf;
  (void)bytes;
  (void)s;
  return rondo__fail(RONDO_ERR_UNSUPPORTED, "this rondo was built without NCCL");
}
static rondo_status_t nc_coll_reduce_scatter(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                             size_t recvcount, rondo_dtype_t dtype,
                                             rondo_op_t op, dev_stream_t *s)
{
  (void)c;
  (void)sendbuf;
  (void)recvbuf;
  (void)recvcount;
  (void)dtype;
  (void)op;
  (void)s;
  return rondo__fail(RONDO_ERR_UNSUPPORTED, "this rondo was built without NCCL");
}
static void nc_coll_abort(dev_coll_t *c) { (void)c; }
static void nc_coll_destroy(dev_coll_t *c) { (void)c; }
#endif /* HAVE_NCCL */

const dev_backend_t dev_cuda = {
    .name = "cuda",
    .device_count = cu_device_count,
    .pointer_device = cu_pointer_device,
    .get_device = cu_get_device,
    .set_device = cu_set_device,
    .uuid = cu_uuid,
    .mem_alloc = cu_mem_alloc,
    .mem_free = cu_mem_free,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
    .stream_create = cu_stream_create,
    .stream_destroy = cu_stream_destroy,
    .copy_async = cu_copy_async,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .event_query = cu_event_query,
    .stream_sync = cu_stream_sync,
    .coll_id = NC_COLL_ID,
    .coll_init = nc_coll_init,
    .coll_state = nc_coll_state,
    .coll_allreduce = nc_coll_allreduce,
    .coll_broadcast = nc_coll_broadcast,
    .coll_allgather = nc_coll_allgather,
    .coll_reduce_scatter = nc_coll_reduce_scatter,
    .coll_abort = nc_coll_abort,
    .coll_destroy = nc_coll_destroy,
};
