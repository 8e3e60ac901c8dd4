/*
 * All-reduces, fused: the ready all-reduces of a cycle are grouped by what
 * must be equal to reduce them together and packed into batches of at most
 * RONDO_FUSION_THRESHOLD bytes (fusion.c); device batches run on the GPU
 * and complete when their event does (fusion_device.c). The batching rule
 * (plan.c, through eng_fuse) serves the fused reduce-scatters and
 * allgathers too (collectives.c).
 */
#ifndef RONDO_ENGINE_FUSION_H
#define RONDO_ENGINE_FUSION_H

#include <stddef.h>

#include "engine/buffers.h"
#include "engine/groups.h"
#include "engine/inflight.h"
#include "engine/join.h"
#include "engine/nap.h"
#include "engine/responses.h"
#include "engine/timeline.h"

struct engine;
struct dev_event;

/* A batch of device all-reduces whose GPU work is queued: its requests
 * complete when its event does. */
typedef struct {
  struct rondo_request **reqs;
  size_t n;
  struct dev_event *event;
  double since;               /* rondo__now() when it was queued */
  double t0;                  /* engine clock, for the timeline */
  char args[160];             /* the timeline span's arguments */
} eng_device_batch_t;

typedef struct {
  eng_device_batch_t *batches; /* whose GPU work is queued */
  size_t n, cap;
  void *fusion;               /* the device fusion buffer (on exec's GPU), or NULL */
  size_t fusion_bytes;
} eng_device_batches_t;

/* What the runners (fusion.c, fusion_device.c, collectives.c, execute.c)
 * work with: the comms, this rank's place, and the engine's objects they
 * use, each through its own functions. The engine that assembles it fills
 * it at creation; exec when its startup has built it. Cycles only, but
 * for what is marked otherwise. */
typedef struct {
  rondo_comm_t owner;         /* the user comm (its knobs: owner->cfg) */
  rondo_comm_t exec;          /* the comm the requests run on, built over mpi */
  MPI_Comm mpi;               /* the engine's negotiation traffic */
  int rank, size;
  struct engine *eng;         /* a stand-in's engine (opaque: request.h) */
  eng_buffers_t *buf;         /* buffers.c */
  eng_trace_t *trace;         /* timeline.c (its own lock) */
  eng_device_batches_t *dev;  /* fusion_device.c */
  eng_flight_t *flight;       /* inflight.c: completion */
  eng_failed_groups_t *failed; /* groups.c */
  const eng_join_t *join;     /* join.c: whether this rank has joined */
  eng_nap_t *nap;             /* nap.c: waits */
  const int *device;          /* under nap->sync->lock: the device of this rank's
                                 device requests, or -1 (eng_device) */
} eng_run_t;

/* A batch's element count, all its requests together. */
static inline size_t eng_batch_count(const eng_item_t *it, size_t n)
{
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += it[i].resp->sig.count;
  return total;
}

/* Every fused kind's batches (all-reduce, reduce-scatter, allgather): the
 * items (of one kind, in response order, each with its elems set) planned
 * by eng_plan (plan.h: the batching rule) with RONDO_FUSION_THRESHOLD and
 * ENG_FUSE_MAX_TENSOR_BYTES; run gets each batch, with ctx. */
void eng_fuse(eng_run_t *e, eng_item_t *items, size_t n,
              void (*run)(eng_run_t *e, eng_item_t *batch, size_t nb, void *ctx), void *ctx);

/* Tensors above this many bytes (in the fusion buffer) are not fused:
 * copying them into the fusion buffer and out again moves more memory than
 * the one collective latency fusion saves. Measured on all-reduces with
 * bench/engine_bench -w resnet50 (docs/PERFORMANCE.md): engine/single was
 * 1.46x at 64 KiB, 1.22x at 256 KiB, 2.14x at 1 MiB and 3.62x with no
 * limit. */
#define ENG_FUSE_MAX_TENSOR_BYTES ((size_t)256 << 10)

/* The all-reduce items of a cycle, in response order. */
void eng_fusion_run(eng_run_t *e, eng_item_t *items, size_t n);
/* One host batch (fusion.c) and one device batch (fusion_device.c). */
void eng_fusion_run_host(eng_run_t *e, eng_item_t *items, size_t n);
void eng_fusion_run_device(eng_run_t *e, eng_item_t *items, size_t n);
/* Completes the device batches whose GPU work is done (or failed, or timed
 * out). Never blocks. Returns how many are still in flight. */
size_t eng_poll_device(eng_run_t *e);
/* At shutdown: waits for every device batch (polling, within the device
 * timeout), then frees the device fusion buffer. */
void eng_drain_device(eng_run_t *e);

#endif /* RONDO_ENGINE_FUSION_H */
