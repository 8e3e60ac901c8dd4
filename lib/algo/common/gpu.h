/*
 * A comm's GPU state (gpu.c): what the device algorithms (allreduce_nccl.c,
 * allreduce_staged.c) share. Made by the first call on device buffers,
 * collectively, after the call's arguments were agreed on; freed with the
 * comm. Internal (prefix gpu_).
 *
 * Failures. A device failure on one rank (a CUDA or NCCL error, a timeout
 * past RONDO_DEVICE_TIMEOUT_SEC) is sent to the other ranks on the state's
 * "fault line": a receive every rank keeps posted on its own duplicate
 * communicator, which every device wait polls. The rank that failed and
 * every rank that hears of it abort the comm's NCCL communicator and fail
 * the call with the first error's status and message. The state is then
 * broken: every later device call on the comm fails at once with that
 * error, and the comm must be destroyed. Nothing waits forever: every
 * wait polls its event, NCCL's asynchronous error, the fault line and the
 * clock: without sleeping for its first millisecond, then sleeping a
 * 16th of the time waited so far (20 us to 1 ms) between polls.
 */
#ifndef RONDO_ALGO_GPU_H
#define RONDO_ALGO_GPU_H

#include "algo/algo.h"
#include "device/device.h"

enum { GPU_FAULT_BYTES = 320, GPU_EVENTS = 3 };

typedef struct gpu_state {
  const dev_backend_t *dev;
  MPI_Comm mpi;          /* a duplicate of the comm's: the fault line, and the
                            double's collectives */
  int device;            /* this rank's device (its buffers' device) */
  int shared;            /* 1: some device serves two or more ranks of the comm */
  int node_shared;       /* 1: some device serves two or more ranks of one node */
  char layout[200];      /* one line: which ranks use which devices */
  dev_stream_t *stream;
  dev_event_t *event[GPU_EVENTS];
  dev_coll_t *coll;      /* NCCL communicator, made by the first NCCL call */
  dev_coll_t *node_coll; /* NCCL communicator of this rank's node (hierarchical_nccl) */
  void *stage;           /* pinned staging buffer (allreduce_staged.c), or NULL */
  void *dscratch;        /* device scratch (allreduce_hier_nccl.c), or NULL */
  size_t dscratch_bytes;
  size_t stage_bytes;
  rondo_status_t broken; /* RONDO_SUCCESS, or the failure that broke the state */
  char broken_msg[GPU_FAULT_BYTES];
  MPI_Request fault_req; /* the posted fault-line receive */
  char fault_in[GPU_FAULT_BYTES];
  char fault_out[GPU_FAULT_BYTES]; /* this rank's failure, as sent */
  MPI_Request *fault_sends;       /* its sends, completed at detach */
  int nfault_sends;
} gpu_state_t;

/* Collective over comm, all ranks with device buffers (device is the one
 * this rank's buffers are on). A no-op once attached. Any rank's failure
 * fails the call on every rank (RONDO_ERR_PEER on the others). */
rondo_status_t gpu_attach(rondo_comm_t comm, int device);
/* At comm teardown (collective when mpi_usable). */
void gpu_detach(rondo_comm_t comm, int mpi_usable);

/* RONDO_SUCCESS unless the comm's state is broken (also by a failure
 * another rank sent since), then that failure, or device (>= 0) is not the
 * one the state was made on (RONDO_ERR_INVALID_ARG). Local. */
rondo_status_t gpu_usable(rondo_comm_t comm, int device);

/* The comm's state, or its failure: RONDO_ERR_UNSUPPORTED if never
 * attached, the breaking error if broken. Makes the state's device current
 * (*prev gets the caller's, for gpu_leave). */
rondo_status_t gpu_enter(rondo_comm_t comm, gpu_state_t **g, int *prev);
void gpu_leave(gpu_state_t *g, int prev);

/* The comm's NCCL communicator, made on first use: collective over the
 * comm, waits until it is ready. gpu_node_coll: the same over the ranks of
 * this rank's node (comm->topo->node). */
rondo_status_t gpu_coll(rondo_comm_t comm, dev_coll_t **coll);
rondo_status_t gpu_node_coll(rondo_comm_t comm, dev_coll_t **coll);
/* Waits until coll (one of the state's) is ready: its initialization or
 * enqueueing done. */
rondo_status_t gpu_wait_ready(rondo_comm_t comm, dev_coll_t *coll, const char *what);

/* Waits for event e of the state's stream, polling the NCCL communicators'
 * asynchronous errors too. what names the wait in a timeout's message. On
 * failure the state is broken and the other ranks are told. */
rondo_status_t gpu_wait(rondo_comm_t comm, dev_event_t *e, const char *what);
/* A copy on the state's stream (any direction), waited for (event[1]). */
rondo_status_t gpu_copy_wait(rondo_comm_t comm, gpu_state_t *g, void *dst, const void *src,
                             size_t bytes, const char *what);
/* Records event[0] on the state's stream and waits for it: the end of a
 * device call's queued work. */
rondo_status_t gpu_record_wait(rondo_comm_t comm, gpu_state_t *g, const char *what);

/* One NCCL collective on the comm's communicator (made on first use):
 * enqueue(g, coll, ctx) queues it on the state's stream, and the
 * non-blocking communicator is waited for until it is really queued, so
 * what the caller puts on the stream next comes after it. */
typedef rondo_status_t (*gpu_enqueue_fn)(gpu_state_t *g, dev_coll_t *coll, const void *ctx);
rondo_status_t gpu_nccl(rondo_comm_t comm, gpu_state_t *g, gpu_enqueue_fn enqueue,
                        const void *ctx);

/* One step of gpu_wait: *done = 1 once e (or the NCCL communicator) is
 * ready; RONDO_SUCCESS with *done = 0 while it is not and since (a
 * rondo__now() time) is within the timeout. Failures as gpu_wait's. For the
 * engine, which polls its device batches between cycles. */
rondo_status_t gpu_poll(rondo_comm_t comm, dev_event_t *e, const char *what, double since,
                        int *done);

/* A failure another rank sent on the fault line, if one arrived: breaks
 * the state and returns it; else RONDO_SUCCESS. */
rondo_status_t gpu_heard(rondo_comm_t comm);

/* A local failure st (its message in rondo_last_error()) of a device call:
 * tells the other ranks, aborts NCCL, breaks the state; returns st. */
rondo_status_t gpu_fail(rondo_comm_t comm, rondo_status_t st);


/* The state's pinned staging buffer and its device scratch, at least
 * bytes each (kept between calls, grown as needed). */
rondo_status_t gpu_stage(gpu_state_t *g, size_t bytes);
rondo_status_t gpu_scratch(gpu_state_t *g, size_t bytes);

/* PCIe-class copy bandwidth for the model of the staged members
 * (s/byte): pinned host <-> device copies reach about 25 GB/s on PCIe 4
 * and 54 GB/s on an H100 host. */
#define GPU_STAGE_COPY_BETA (1.0 / 25e9)

/* A device collective other than the all-reduce (gpu_coll.c runs
 * it): NCCL's call, or its staged parts through the comm's pinned buffer. */
typedef struct {
  gpu_enqueue_fn nccl;   /* queues the NCCL collective */
  const char *nccl_name; /* for a timeout's message */
  /* staged: down_bytes from down into the stage, host() from hin to hout
   * (the same memory when in_place), up_bytes from hout to up */
  rondo_status_t (*host)(rondo_comm_t comm, void *hin, void *hout, const void *ctx);
  const void *down;
  size_t down_bytes;
  void *up;
  size_t up_bytes;
  int in_place;
  const void *ctx; /* the call's arguments, for nccl and host */
} gpu_coll_t;
/* Runs c after the call was agreed on and the state attached: NCCL's call
 * where nccl, else staged (a rank whose copy failed still takes part in
 * the host collective, so that no rank waits there alone). Collective; a
 * failure reaches every rank. */
rondo_status_t gpu_coll_run(rondo_comm_t comm, const gpu_coll_t *c, int nccl);
/* Why NCCL cannot run a call on device memory (the nccl members' shared
 * rule: NCCL built, a type NCCL has, no GPU shared by two ranks), or
 * NULL. */
const char *gpu_nccl_cannot_run(const select_input_t *in);
/* Its first part, which hierarchical_nccl shares: NCCL built and a type
 * NCCL has. */
const char *gpu_nccl_type_cannot_run(const select_input_t *in);

/* Broadcast on device buffers (bcast_device.c): NCCL's where the comm can
 * use NCCL, else staged. Reduce-scatter and all-gather are their
 * families' nccl and staged members. Collective. */
rondo_status_t algo_device_broadcast(rondo_comm_t comm, void *buf, size_t bytes, int root);

/* The nccl algorithm without its final wait (allreduce_nccl.c): the
 * collective is on the state's stream when it returns. The engine records
 * its own event after it and polls that (gpu_poll). */
rondo_status_t algo_nccl_enqueue(const algo_allreduce_args_t *a);

#endif /* RONDO_ALGO_GPU_H */
