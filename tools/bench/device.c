/*
 * rondo-bench's GPU side (--memory device): device and pinned buffers, the
 * copies the sweep makes around its calls and checks, and the two
 * baselines of a device all-reduce, reduce-scatter or all-gather:
 *   ncclAllReduce, ncclReduceScatter, ncclAllGather
 *                   raw NCCL on a communicator of the bench's own (one GPU
 *                   per rank: NCCL refuses two ranks on one device);
 *   host+copies     a pinned copy down, rondo's host collective (AUTO) on
 *                   it, a copy up: what staging costs without its overlap.
 * The CUDA runtime and NCCL are called here directly, not through
 * librondo: the tool measures the library from outside. Without CUDA every
 * function reports that there is no device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#ifdef HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef HAVE_NCCL
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#endif

#ifdef HAVE_CUDA

static cudaStream_t stream;

#define CUDA_OR_DIE(call)                                                      \
  do {                                                                         \
    cudaError_t rc_ = (call);                                                  \
    if (rc_ != cudaSuccess)                                                    \
      bench_die("%s failed: %s", #call, cudaGetErrorString(rc_));              \
  } while (0)

int bdev_start(int local_rank, char *why, size_t len)
{
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess || n < 1) {
    snprintf(why, len, "no CUDA device (cudaGetDeviceCount: %s)",
             rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
    return -1;
  }
  CUDA_OR_DIE(cudaSetDevice(local_rank % n));
  CUDA_OR_DIE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  snprintf(why, len, "device %d of %d", local_rank % n, n);
  return 0;
}

void *bdev_alloc(size_t bytes)
{
  void *p = NULL;
  CUDA_OR_DIE(cudaMalloc(&p, bytes ? bytes : 1));
  return p;
}

void *bdev_alloc_pinned(size_t bytes)
{
  void *p = NULL;
  CUDA_OR_DIE(cudaMallocHost(&p, bytes ? bytes : 1));
  return p;
}

void bdev_free(void *p)
{
  if (p != NULL)
    CUDA_OR_DIE(cudaFree(p));
}

void bdev_free_pinned(void *p)
{
  if (p != NULL)
    CUDA_OR_DIE(cudaFreeHost(p));
}

void bdev_copy(void *dst, const void *src, size_t bytes)
{
  if (bytes == 0)
    return;
  CUDA_OR_DIE(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
  CUDA_OR_DIE(cudaStreamSynchronize(stream));
}

void bdev_stop(void)
{
  if (stream != NULL)
    CUDA_OR_DIE(cudaStreamDestroy(stream));
  stream = NULL;
}

#else /* !HAVE_CUDA */

int bdev_start(int local_rank, char *why, size_t len)
{
  (void)local_rank;
  snprintf(why, len, "this rondo-bench was built without CUDA (configure --with-cuda)");
  return -1;
}
void *bdev_alloc(size_t bytes) { (void)bytes; bench_die("no CUDA"); }
void *bdev_alloc_pinned(size_t bytes) { (void)bytes; bench_die("no CUDA"); }
void bdev_free(void *p) { (void)p; }
void bdev_free_pinned(void *p) { (void)p; }
void bdev_copy(void *dst, const void *src, size_t bytes)
{
  (void)dst;
  (void)src;
  (void)bytes;
  bench_die("no CUDA");
}
void bdev_stop(void) {}

#endif /* HAVE_CUDA */

#if defined(HAVE_CUDA) && defined(HAVE_NCCL)

static ncclComm_t nccl;

/* By rondo_dtype_t and rondo_op_t; NCCL has no int16 (refused below), and
 * rondo-bench takes no Adasum. */
static const ncclDataType_t nccl_types[RONDO_INT16] = {
    ncclInt8, ncclUint8, ncclInt32, ncclInt64, ncclFloat16, ncclBfloat16, ncclFloat32,
    ncclFloat64};
static const ncclRedOp_t nccl_ops[RONDO_ADASUM] = {ncclSum, ncclAvg, ncclMin, ncclMax,
                                                   ncclProd};

int bdev_nccl_start(MPI_Comm comm, char *why, size_t len)
{
  int rank = 0, size = 1, ok = 1, all = 0;
  struct {
    int ok;
    ncclUniqueId id;
  } msg;
  memset(&msg, 0, sizeof msg);
  msg.ok = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank == 0)
    msg.ok = ncclGetUniqueId(&msg.id) == ncclSuccess;
  MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, comm);
  if (!msg.ok) {
    snprintf(why, len, "ncclGetUniqueId failed on rank 0");
    return -1;
  }
  ncclUniqueId id = msg.id;
  /* Two ranks on one GPU: NCCL refuses ("Duplicate GPU detected"). Ask
   * first, through the PCI ids, rather than let ncclCommInitRank fail. */
  char mine[32 + MPI_MAX_PROCESSOR_NAME] = "", *all_ids = malloc((size_t)size * sizeof mine);
  int dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetPCIBusId(mine, (int)sizeof mine, dev);
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  int hl = 0;
  MPI_Get_processor_name(host, &hl);
  snprintf(mine + strlen(mine), sizeof mine - strlen(mine), "@%s", host);
  MPI_Allgather(mine, (int)sizeof mine, MPI_CHAR, all_ids, (int)sizeof mine, MPI_CHAR, comm);
  for (int r = 0; all_ids != NULL && r < size; r++)
    if (r != rank && strcmp(all_ids + (size_t)r * sizeof mine, mine) == 0)
      ok = 0;
  free(all_ids);
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all) {
    snprintf(why, len, "ranks share a GPU, which NCCL refuses");
    return -1;
  }
  ncclResult_t r = ncclCommInitRank(&nccl, size, id, rank);
  ok = r == ncclSuccess;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all) {
    snprintf(why, len, "ncclCommInitRank: %s", ncclGetErrorString(r));
    if (ok)
      ncclCommDestroy(nccl);
    nccl = NULL;
    return -1;
  }
  return 0;
}

void bdev_nccl_allreduce(const void *s, void *r, size_t count, rondo_dtype_t dtype,
                         rondo_op_t op)
{
  if (dtype >= RONDO_INT16)
    bench_die("ncclAllReduce has no %s: leave ncclAllReduce out of -a", rondo_dtype_name(dtype));
  ncclResult_t rc = ncclAllReduce(s, r, count, nccl_types[dtype], nccl_ops[op], nccl, stream);
  if (rc != ncclSuccess)
    bench_die("ncclAllReduce: %s", ncclGetErrorString(rc));
  CUDA_OR_DIE(cudaStreamSynchronize(stream));
}

void bdev_nccl_reduce_scatter(const void *s, void *r, size_t recvcount, rondo_dtype_t dtype,
                              rondo_op_t op)
{
  if (dtype >= RONDO_INT16)
    bench_die("ncclReduceScatter has no %s: leave ncclReduceScatter out of -a",
              rondo_dtype_name(dtype));
  ncclResult_t rc =
      ncclReduceScatter(s, r, recvcount, nccl_types[dtype], nccl_ops[op], nccl, stream);
  if (rc != ncclSuccess)
    bench_die("ncclReduceScatter: %s", ncclGetErrorString(rc));
  CUDA_OR_DIE(cudaStreamSynchronize(stream));
}

void bdev_nccl_allgather(const void *s, void *r, size_t bytes)
{
  ncclResult_t rc = ncclAllGather(s, r, bytes, ncclUint8, nccl, stream);
  if (rc != ncclSuccess)
    bench_die("ncclAllGather: %s", ncclGetErrorString(rc));
  CUDA_OR_DIE(cudaStreamSynchronize(stream));
}

void bdev_nccl_stop(void)
{
  if (nccl != NULL)
    ncclCommDestroy(nccl);
  nccl = NULL;
}

#else

int bdev_nccl_start(MPI_Comm comm, char *why, size_t len)
{
  (void)comm;
  snprintf(why, len, "this rondo-bench was built without NCCL");
  return -1;
}
void bdev_nccl_allreduce(const void *s, void *r, size_t count, rondo_dtype_t dtype,
                         rondo_op_t op)
{
  (void)s;
  (void)r;
  (void)count;
  (void)dtype;
  (void)op;
  bench_die("no NCCL");
}
void bdev_nccl_reduce_scatter(const void *s, void *r, size_t recvcount, rondo_dtype_t dtype,
                              rondo_op_t op)
{
  (void)s;
  (void)r;
  (void)recvcount;
  (void)dtype;
  (void)op;
  bench_die("no NCCL");
}
void bdev_nccl_allgather(const void *s, void *r, size_t bytes)
{
  (void)s;
  (void)r;
  (void)bytes;
  bench_die("no NCCL");
}
void bdev_nccl_stop(void) {}

#endif
