/*
 * The device layer: every CUDA and NCCL call librondo makes goes through
 * the one narrow interface below, a table of functions (dev_backend_t).
 * Internal (prefix dev_). docs/gpu.md has the design.
 *
 * Two implementations:
 *   cuda.c         the real one, over the CUDA runtime and NCCL (built with
 *                  --with-cuda / --with-nccl; without them it reports no
 *                  device and no collective library);
 *   host_double.c  a test double in host memory. Its "device memory" is
 *                  host memory it allocated and remembers. Streams are
 *                  threads that run their work in order. Its collective
 *                  library reduces over MPI. It can inject failures and
 *                  delays. It exists so that the tests can drive every
 *                  control path of the GPU code without a GPU: staging,
 *                  NCCL calls, event polling, errors, aborts, timeouts,
 *                  teardown. Only the tests select it (dev_use_backend);
 *                  users never get it, and it verifies control flow, not
 *                  CUDA.
 *
 * The layer knows no comm and no algorithm: lib/algo/common/gpu.c builds the
 * per-comm state (device, stream, NCCL communicator, staging buffers) on
 * top of it.
 */
#ifndef RONDO_DEVICE_H
#define RONDO_DEVICE_H

#include <stddef.h>

#include "base/base.h"

typedef struct dev_stream dev_stream_t; /* an in-order work queue (cudaStream_t) */
typedef struct dev_event dev_event_t;   /* a point in a stream (cudaEvent_t) */
typedef struct dev_coll dev_coll_t;     /* a collective communicator (ncclComm_t) */

/* What ranks exchange to make one collective communicator (ncclUniqueId). */
enum { DEV_COLL_ID_BYTES = 128 };
typedef struct {
  unsigned char bytes[DEV_COLL_ID_BYTES];
} dev_coll_id_t;

/* Every function returns RONDO_SUCCESS or a failure recorded with
 * rondo__fail: RONDO_ERR_CUDA (device, memory, stream and event calls),
 * RONDO_ERR_NCCL (the collective library) or RONDO_ERR_NO_MEMORY, with the
 * library's own error string. The destroy and free functions cannot fail
 * (they log). */
typedef struct dev_backend {
  const char *name;                 /* "cuda" or "host double" */

  /* Devices and memory. device_count is 0 (with RONDO_SUCCESS) where there
   * is no device or no driver. pointer_device: the device p is on, -1 for
   * host memory (pageable or pinned); for device memory *room is the bytes
   * from p to the end of its allocation (SIZE_MAX where the backend cannot
   * tell). uuid: a string naming the device
   * uniquely across the processes of one host (CUDA: its PCI bus id). */
  rondo_status_t (*device_count)(int *n);
  rondo_status_t (*pointer_device)(const void *p, int *device, size_t *room);
  rondo_status_t (*get_device)(int *device);
  rondo_status_t (*set_device)(int device);
  rondo_status_t (*uuid)(int device, char *buf, size_t len);
  rondo_status_t (*mem_alloc)(void **p, size_t bytes); /* on the current device */
  void (*mem_free)(void *p);
  rondo_status_t (*host_alloc)(void **p, size_t bytes); /* pinned host memory */
  void (*host_free)(void *p);

  /* Streams and events, on the current device. A copy may go any way
   * between host and device memory. event_query: *done = 1 once the work
   * recorded before the event finished; a failure of that work is the
   * query's failure. */
  rondo_status_t (*stream_create)(dev_stream_t **s);
  void (*stream_destroy)(dev_stream_t *s); /* waits for its work first */
  rondo_status_t (*copy_async)(void *dst, const void *src, size_t bytes, dev_stream_t *s);
  rondo_status_t (*event_create)(dev_event_t **e);
  void (*event_destroy)(dev_event_t *e);
  rondo_status_t (*event_record)(dev_event_t *e, dev_stream_t *s);
  rondo_status_t (*event_query)(dev_event_t *e, int *done);
  rondo_status_t (*stream_sync)(dev_stream_t *s);

  /* The collective library; coll_id is NULL where there is none. coll_init
   * is collective over the nranks ranks that pass the same id, and
   * returns at once: coll_state says when the communicator is ready
   * (*ready = 1) or why it failed (the library's asynchronous error,
   * ncclCommGetAsyncError). mpi is the MPI communicator of those ranks, in
   * rank order; the real library ignores it, the double communicates over
   * it. coll_allreduce enqueues on stream s; AVG is the library's average
   * (docs/gpu.md). coll_abort makes the communicator's pending work give
   * up (ncclCommAbort) and frees it; coll_destroy frees a communicator
   * whose work is complete. */
  rondo_status_t (*coll_id)(dev_coll_id_t *id);
  rondo_status_t (*coll_init)(dev_coll_t **c, int nranks, const dev_coll_id_t *id, int rank,
                              MPI_Comm mpi);
  rondo_status_t (*coll_state)(dev_coll_t *c, int *ready);
  rondo_status_t (*coll_allreduce)(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                   size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                   dev_stream_t *s);
  /* bytes from root's buf to every rank's (in place) */
  rondo_status_t (*coll_broadcast)(dev_coll_t *c, void *buf, size_t bytes, int root,
                                   dev_stream_t *s);
  /* each rank's bytes, rank i's at recvbuf + i * bytes */
  rondo_status_t (*coll_allgather)(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                   size_t bytes, dev_stream_t *s);
  /* block i (recvcount elements) of the reduction to rank i */
  rondo_status_t (*coll_reduce_scatter)(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                        size_t recvcount, rondo_dtype_t dtype, rondo_op_t op,
                                        dev_stream_t *s);
  void (*coll_abort)(dev_coll_t *c);
  void (*coll_destroy)(dev_coll_t *c);
} dev_backend_t;

extern const dev_backend_t dev_cuda, dev_host_double;

/* The backend in use: dev_cuda unless a test chose another. */
const dev_backend_t *dev_backend(void);
/* Tests only: use b from now on (before any comm touches a device). */
void dev_use_backend(const dev_backend_t *b);

/* ---- memory kinds ------------------------------------------------------------- */

/* The device buf is on, -1 for host memory (NULL: host). The pointer alone
 * decides, so a call's kind does not depend on its count. Where the
 * backend finds no device, every pointer is host memory and no further
 * device call is made (one device_count per process). */
rondo_status_t dev_memory_device(const void *buf, int *device);

/* dev_memory_device for a buffer of bytes bytes that a call (fn) reads or
 * writes: a device buffer whose allocation ends before its last byte (a
 * bad device pointer, or a count too large for it) fails with
 * RONDO_ERR_INVALID_ARG naming the buffer (name) and both sizes. */
rondo_status_t dev_buffer_memory(const char *fn, const char *name, const void *buf, size_t bytes,
                                 int *device);

/* The memory of a call's two buffers (sbytes and rbytes long, each checked
 * as dev_buffer_memory does): *device the device both are on, or -1 for
 * host memory. Host and device memory in one call, or two devices, fail
 * with RONDO_ERR_INVALID_ARG saying which buffer is where. fn names the
 * call in the message. */
rondo_status_t dev_call_memory(const char *fn, const void *sendbuf, size_t sbytes,
                               const void *recvbuf, size_t rbytes, int *device);

/* ---- the collective library's types (cuda.c; pure, unit-tested) ------------- */

/* NCCL's ncclDataType_t and ncclRedOp_t values for rondo's, or -1.
 * dev_nccl_op takes the NCCL communicator's rank count: on one rank AVG is
 * passed as ncclSum (the same result), because NCCL before 2.29.7 leaves
 * the last elements of a one-rank ncclAvg unwritten (NVIDIA/nccl#1950). */
int dev_nccl_dtype(rondo_dtype_t dtype);
int dev_nccl_op(rondo_op_t op, int nranks);

/* ---- the host double's controls (host_double.c; tests only) ----------------- */

/* Where the double fails or waits: each point counts its calls in this
 * process from 1. */
typedef enum {
  DEV_DOUBLE_COPY = 0,     /* a copy on a stream */
  DEV_DOUBLE_COLL,         /* a collective on a stream */
  DEV_DOUBLE_COLL_INIT,    /* making a collective communicator */
  DEV_DOUBLE_ALLOC,        /* mem_alloc and host_alloc */
  DEV_DOUBLE_POINTS
} dev_double_point_t;

/* Call nth (1-based; 0: none) at point fails with status. For the work of
 * a stream (copies, collectives), the failure shows when the stream
 * reaches it, in the next event_query, as CUDA's sticky errors do; a failed
 * collective is also the communicator's asynchronous error. */
void dev_double_fail(dev_double_point_t point, int nth, rondo_status_t status);
/* Every call at point takes usec longer (on the stream, for stream work). */
void dev_double_delay(dev_double_point_t point, long usec);
/* The double's devices per host (default 1: every rank of a host shares
 * device 0, as on a machine with one GPU); the ranks pick
 * local rank % devices themselves. */
void dev_double_devices(int n);
/* Allocations the double holds now (tests check for leaks). */
size_t dev_double_live(void);
/* Clears injected failures and delays. */
void dev_double_reset(void);

#endif /* RONDO_DEVICE_H */
