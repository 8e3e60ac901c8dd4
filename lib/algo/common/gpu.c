/*
 * A comm's GPU state: attach (device, stream, events, the layout of the
 * ranks on the devices, the fault line), the NCCL communicator, waits that
 * cannot hang, and the failure path. gpu.h has the rules.
 */
#include "algo/common/gpu.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "topo/topo.h"

enum { FAULT_TAG = 1, UUID_BYTES = 64, HOST_BYTES = MPI_MAX_PROCESSOR_NAME };

/* What each rank tells the others at attach. */
typedef struct {
  int32_t status;       /* this rank's attach so far */
  int32_t device;
  int32_t node;         /* rondo's node (topo: real or virtual) */
  int32_t pad;
  char uuid[UUID_BYTES];
  char host[HOST_BYTES];
} member_t;

static void sleep_us(long us)
{
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

static void mark_broken(gpu_state_t *g, rondo_status_t st, const char *msg);

static void free_state(gpu_state_t *g)
{
  if (g == NULL)
    return;
  for (int i = 0; i < GPU_EVENTS; i++)
    g->dev->event_destroy(g->event[i]);
  g->dev->stream_destroy(g->stream);
  g->dev->host_free(g->stage);
  g->dev->mem_free(g->dscratch);
  free(g);
}

/* One line naming which ranks use which device. */
static void describe(gpu_state_t *g, const member_t *m, int p)
{
  int shared = 0, node_shared = 0, devices = 0;
  char first[128] = "";
  for (int r = 0; r < p; r++) {
    int seen = 0;
    for (int q = 0; q < r && !seen; q++)
      seen = strcmp(m[q].uuid, m[r].uuid) == 0 && strcmp(m[q].host, m[r].host) == 0;
    devices += !seen;
    for (int q = r + 1; q < p; q++)
      if (strcmp(m[q].uuid, m[r].uuid) == 0 && strcmp(m[q].host, m[r].host) == 0) {
        node_shared |= m[q].node == m[r].node;
        if (!shared)
          snprintf(first, sizeof first, "ranks %d and %d share device %d (%.32s) on %.32s", r,
                   q, (int)m[r].device, m[r].uuid, m[r].host);
        shared = 1;
      }
  }
  g->shared = shared;
  g->node_shared = node_shared;
  if (shared)
    snprintf(g->layout, sizeof g->layout, "GPUs: %d rank(s) on %d device(s); %s", p, devices,
             first);
  else
    snprintf(g->layout, sizeof g->layout, "GPUs: %d rank(s) on %d device(s), one each", p,
             devices);
}

static rondo_status_t post_fault_line(gpu_state_t *g)
{
  MPI_CHECK(MPI_Irecv(g->fault_in, GPU_FAULT_BYTES, MPI_CHAR, MPI_ANY_SOURCE, FAULT_TAG, g->mpi,
                      &g->fault_req));
  return RONDO_SUCCESS;
}

/* This rank's part of attach: device, uuid, stream, events. */
static rondo_status_t attach_local(gpu_state_t *g, int device, member_t *me)
{
  int prev = -1;
  RONDO_CHECK(g->dev->get_device(&prev));
  if (prev != device)
    RONDO_CHECK(g->dev->set_device(device));
  rondo_status_t st = g->dev->uuid(device, me->uuid, sizeof me->uuid);
  if (st == RONDO_SUCCESS)
    st = g->dev->stream_create(&g->stream);
  for (int i = 0; i < GPU_EVENTS && st == RONDO_SUCCESS; i++)
    st = g->dev->event_create(&g->event[i]);
  if (prev != device)
    (void)g->dev->set_device(prev);
  return st;
}

rondo_status_t gpu_attach(rondo_comm_t comm, int device)
{
  if (comm->gpu != NULL)
    return RONDO_SUCCESS;
  int p = comm->size, len = 0;
  gpu_state_t *g = calloc(1, sizeof *g);
  member_t me = {.status = RONDO_SUCCESS, .device = device, .node = comm->topo->node_id};
  member_t *all = calloc((size_t)p, sizeof *all);
  rondo_status_t st = RONDO_SUCCESS;
  char why[256] = "";
  if (g == NULL || all == NULL) {
    st = rondo__fail(RONDO_ERR_NO_MEMORY, "GPU state of a %d-rank comm", p);
  } else {
    g->dev = dev_backend();
    g->device = device;
    g->mpi = MPI_COMM_NULL;
    g->fault_req = MPI_REQUEST_NULL;
    st = attach_local(g, device, &me);
    if (MPI_Get_processor_name(me.host, &len) != MPI_SUCCESS)
      snprintf(me.host, sizeof me.host, "node %d", comm->topo->node_id);
  }
  if (st != RONDO_SUCCESS)
    snprintf(why, sizeof why, "%s", rondo__last_error_text());
  me.status = st;
  /* Everyone learns everyone's outcome and device, also after a failure
   * here, so that all ranks return together. */
  member_t *recv = all != NULL ? all : &me;
  int rc = MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, recv, all != NULL ? (int)sizeof me : 0,
                         MPI_BYTE, comm->mpi);
  if (rc != MPI_SUCCESS && st == RONDO_SUCCESS)
    st = rondo__mpi_fail(rc, "MPI_Allgather", __FILE__, __LINE__);
  int bad = -1;
  for (int r = 0; all != NULL && r < p && st == RONDO_SUCCESS; r++)
    if (all[r].status != RONDO_SUCCESS)
      bad = r;
  if (st == RONDO_SUCCESS && bad >= 0)
    st = rondo__fail(RONDO_ERR_PEER,
                     "rank %d could not set up its GPU state (%s); its rondo_last_error() "
                     "says why",
                     bad, rondo_status_name((rondo_status_t)all[bad].status));
  else if (st != RONDO_SUCCESS && why[0])
    rondo__fail_quiet(st, "%s", why);
  if (st == RONDO_SUCCESS) {
    MPI_CHECK_GOTO(MPI_Comm_dup(comm->mpi, &g->mpi), st, out);
    MPI_CHECK_GOTO(MPI_Comm_set_errhandler(g->mpi, MPI_ERRORS_RETURN), st, out);
    RONDO_CHECK_GOTO(post_fault_line(g), st, out);
    describe(g, all, p);
    LOG_INFO("%s", g->layout);
    comm->gpu = g;
    g = NULL;
  }
out:
  if (g != NULL && g->mpi != MPI_COMM_NULL)
    MPI_CHECK_LOG(MPI_Comm_free(&g->mpi));
  if (g != NULL && g->dev != NULL)
    free_state(g);
  else
    free(g);
  free(all);
  return st;
}

void gpu_detach(rondo_comm_t comm, int mpi_usable)
{
  gpu_state_t *g = comm->gpu;
  if (g == NULL)
    return;
  comm->gpu = NULL;
  int prev = -1;
  (void)g->dev->get_device(&prev);
  (void)g->dev->set_device(g->device);
  /* Every rank gets here before any finalizes NCCL, which waits for all of
   * them (ncclCommFinalize). On the comm's own communicator: the state's
   * may hold a collective a broken rank left behind. And every rank learns
   * whether any rank's state is broken: then every rank treats its own as
   * broken, aborts its NCCL communicators and keeps the duplicate. A rank
   * that never heard of the failure may still be sent to on them (fault
   * messages, the double's collectives that a broken rank gave up on), and
   * a communicator freed on some ranks only lets MPI reuse its context id
   * among those ranks while such messages arrive (Open MPI hands them to
   * the new communicator). */
  if (mpi_usable) {
    int mine = g->broken != RONDO_SUCCESS, any = mine;
    MPI_CHECK_LOG(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm->mpi));
    if (any && !mine)
      mark_broken(g, RONDO_ERR_PEER, "another rank's GPU state failed");
  }
  if (g->coll != NULL) {
    g->dev->coll_destroy(g->coll);
    g->coll = NULL;
  }
  if (g->node_coll != NULL) {
    g->dev->coll_destroy(g->node_coll);
    g->node_coll = NULL;
  }
  if (mpi_usable) {
    /* Every rank's fault messages were sent before the barrier: take them
     * and the posted receive out of MPI, and finish this rank's sends. */
    for (int i = 0; g->fault_sends != NULL && i < g->nfault_sends; i++)
      MPI_CHECK_LOG(MPI_Wait(&g->fault_sends[i], MPI_STATUS_IGNORE));
    for (;;) {
      int done = 0;
      if (MPI_Test(&g->fault_req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done)
        break;
      if (post_fault_line(g) != RONDO_SUCCESS)
        break;
    }
    if (g->fault_req != MPI_REQUEST_NULL) {
      MPI_CHECK_LOG(MPI_Cancel(&g->fault_req));
      MPI_CHECK_LOG(MPI_Wait(&g->fault_req, MPI_STATUS_IGNORE));
    }
    /* A broken state's duplicate may hold an operation that never
     * completes (a peer that failed before joining it): never free it. */
    if (g->broken == RONDO_SUCCESS)
      MPI_CHECK_LOG(MPI_Comm_free(&g->mpi));
  }
  const dev_backend_t *dev = g->dev;
  free(g->fault_sends);
  free_state(g);
  if (prev >= 0)
    (void)dev->set_device(prev);
}

rondo_status_t gpu_usable(rondo_comm_t comm, int device)
{
  gpu_state_t *g = comm->gpu;
  if (g == NULL)
    return RONDO_SUCCESS;
  if (device >= 0 && device != g->device)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "this comm's GPU work runs on device %d, and these buffers are on device "
                       "%d: one device per rank and comm (make another comm for another device)",
                       g->device, device);
  if (g->broken == RONDO_SUCCESS)
    RONDO_CHECK(gpu_heard(comm));
  if (g->broken != RONDO_SUCCESS)
    return rondo__fail(g->broken,
                       "this comm's GPU state failed earlier (%s): destroy the comm and make "
                       "a new one",
                       g->broken_msg);
  return RONDO_SUCCESS;
}

rondo_status_t gpu_enter(rondo_comm_t comm, gpu_state_t **out, int *prev)
{
  gpu_state_t *g = comm->gpu;
  *out = NULL;
  *prev = -1;
  if (g == NULL)
    return rondo__fail(RONDO_ERR_UNSUPPORTED, "this comm has no GPU state (an internal error: "
                                              "device algorithms run after gpu_attach)");
  RONDO_CHECK(gpu_usable(comm, -1)); /* broken, also by another rank's failure since */
  RONDO_CHECK(g->dev->get_device(prev));
  if (*prev != g->device)
    RONDO_CHECK(g->dev->set_device(g->device));
  *out = g;
  return RONDO_SUCCESS;
}

void gpu_leave(gpu_state_t *g, int prev)
{
  if (g != NULL && prev >= 0 && prev != g->device)
    (void)g->dev->set_device(prev);
}

static void mark_broken(gpu_state_t *g, rondo_status_t st, const char *msg)
{
  if (g->broken != RONDO_SUCCESS)
    return;
  g->broken = st;
  snprintf(g->broken_msg, sizeof g->broken_msg, "%s", msg);
  if (g->coll != NULL) {
    g->dev->coll_abort(g->coll);
    g->coll = NULL;
  }
  if (g->node_coll != NULL) {
    g->dev->coll_abort(g->node_coll);
    g->node_coll = NULL;
  }
}

rondo_status_t gpu_fail(rondo_comm_t comm, rondo_status_t st)
{
  gpu_state_t *g = comm->gpu;
  char msg[GPU_FAULT_BYTES];
  snprintf(msg, sizeof msg, "%s", rondo__last_error_text());
  if (g == NULL || g->broken != RONDO_SUCCESS)
    return rondo__fail(st, "%s", msg);
  /* The message: status (4 bytes) then text. */
  char out[GPU_FAULT_BYTES];
  int32_t s32 = (int32_t)st;
  memcpy(out, &s32, sizeof s32);
  snprintf(out + sizeof s32, sizeof out - sizeof s32, "rank %d: %.290s", comm->rank, msg);
  /* One message to each other rank, nonblocking (every rank keeps a
   * receive posted, so they complete; gpu_detach waits for them). */
  memcpy(g->fault_out, out, sizeof out);
  g->fault_sends = malloc((size_t)comm->size * sizeof *g->fault_sends);
  for (int r = 0; g->fault_sends != NULL && r < comm->size; r++)
    if (r != comm->rank &&
        MPI_Isend(g->fault_out, GPU_FAULT_BYTES, MPI_CHAR, r, FAULT_TAG, g->mpi,
                  &g->fault_sends[g->nfault_sends]) == MPI_SUCCESS)
      g->nfault_sends++;
  mark_broken(g, st, msg);
  LOG_ERROR("%s (the other ranks are told; this comm's device calls now fail)", msg);
  return rondo__fail_quiet(st, "%s", msg);
}

rondo_status_t gpu_heard(rondo_comm_t comm)
{
  gpu_state_t *g = comm->gpu;
  int done = 0;
  MPI_Status status;
  MPI_CHECK(MPI_Test(&g->fault_req, &done, &status));
  if (!done)
    return RONDO_SUCCESS;
  int32_t s32;
  memcpy(&s32, g->fault_in, sizeof s32);
  g->fault_in[GPU_FAULT_BYTES - 1] = '\0';
  char msg[GPU_FAULT_BYTES];
  snprintf(msg, sizeof msg, "%s", g->fault_in + sizeof s32);
  rondo_status_t st = (rondo_status_t)s32;
  if (st <= RONDO_SUCCESS || st >= RONDO_STATUS_COUNT)
    st = RONDO_ERR_INTERNAL;
  (void)post_fault_line(g); /* further messages wait there until teardown */
  mark_broken(g, st, msg);
  return rondo__fail(st, "%s", msg);
}

/* Grows a kept buffer (*buf, *have bytes) to bytes: alloc/release are
 * the backend's pinned or device allocation. */
static rondo_status_t grow(void **buf, size_t *have, size_t bytes,
                           rondo_status_t (*alloc)(void **, size_t), void (*release)(void *))
{
  if (*have >= bytes)
    return RONDO_SUCCESS;
  release(*buf);
  *buf = NULL;
  *have = 0;
  RONDO_CHECK(alloc(buf, bytes ? bytes : 1));
  *have = bytes;
  return RONDO_SUCCESS;
}

rondo_status_t gpu_stage(gpu_state_t *g, size_t bytes)
{
  return grow(&g->stage, &g->stage_bytes, bytes, g->dev->host_alloc, g->dev->host_free);
}

rondo_status_t gpu_scratch(gpu_state_t *g, size_t bytes)
{
  return grow(&g->dscratch, &g->dscratch_bytes, bytes, g->dev->mem_alloc, g->dev->mem_free);
}

/* One poll of e (or, e NULL, of coll's readiness), with the state's NCCL
 * communicators' asynchronous errors, the fault line and the clock. */
static rondo_status_t poll_one(rondo_comm_t comm, dev_event_t *e, dev_coll_t *coll,
                               const char *what, double since, int *done)
{
  gpu_state_t *g = comm->gpu;
  double limit = comm->cfg.device_timeout_sec;
  *done = 0;
  if (g->broken != RONDO_SUCCESS)
    return rondo__fail_quiet(g->broken, "%s", g->broken_msg);
  rondo_status_t st = e != NULL ? g->dev->event_query(e, done) : g->dev->coll_state(coll, done);
  /* NCCL's asynchronous errors, while its work may be queued: every
   * communicator's (coll's was just asked) */
  dev_coll_t *colls[2] = {g->coll, g->node_coll};
  for (int i = 0; i < 2 && st == RONDO_SUCCESS; i++)
    if (colls[i] != NULL && colls[i] != coll) {
      int ready = 0;
      st = g->dev->coll_state(colls[i], &ready);
    }
  if (st != RONDO_SUCCESS) {
    *done = 0;
    return gpu_fail(comm, st);
  }
  if (*done)
    return RONDO_SUCCESS;
  RONDO_CHECK(gpu_heard(comm));
  if (limit > 0 && rondo__now() - since > limit)
    return gpu_fail(comm, rondo__fail_quiet(
                              e != NULL ? RONDO_ERR_CUDA : RONDO_ERR_NCCL,
                              "%s did not complete within RONDO_DEVICE_TIMEOUT_SEC=%g s", what,
                              limit));
  return RONDO_SUCCESS;
}

rondo_status_t gpu_poll(rondo_comm_t comm, dev_event_t *e, const char *what, double since,
                        int *done)
{
  return poll_one(comm, e, NULL, what, since, done);
}

/* How a blocking call waits for its GPU work. For the first GPU_SPIN_SEC
 * it polls without sleeping (yielding the core between polls where the
 * node is oversubscribed): most waits end within microseconds, and one
 * sleep costs 60 us or more (the kernel's timer slack), which measured as
 * 77 us on top of a 12 us one-rank ncclAllReduce on an H100. CUDA's own
 * cudaStreamSynchronize spins the same way. After that it sleeps a 16th
 * of the time waited so far (20 us to 1 ms), so that a long wait
 * overshoots by about 6% at most. */
#define GPU_SPIN_SEC 1e-3

static rondo_status_t wait_for(rondo_comm_t comm, dev_event_t *e, dev_coll_t *coll,
                               const char *what)
{
  double start = rondo__now();
  for (;;) {
    int done = 0;
    RONDO_CHECK(poll_one(comm, e, coll, what, start, &done));
    if (done)
      return RONDO_SUCCESS;
    double waited = rondo__now() - start;
    if (waited < GPU_SPIN_SEC) {
      if (comm->yield_waits)
        sched_yield();
      continue;
    }
    long us = (long)(waited / 16 * 1e6);
    sleep_us(us < 20 ? 20 : us > 1000 ? 1000 : us);
  }
}

rondo_status_t gpu_wait(rondo_comm_t comm, dev_event_t *e, const char *what)
{
  return wait_for(comm, e, NULL, what);
}

rondo_status_t gpu_copy_wait(rondo_comm_t comm, gpu_state_t *g, void *dst, const void *src,
                             size_t bytes, const char *what)
{
  if (bytes == 0)
    return RONDO_SUCCESS;
  rondo_status_t st = g->dev->copy_async(dst, src, bytes, g->stream);
  if (st == RONDO_SUCCESS)
    st = g->dev->event_record(g->event[1], g->stream);
  if (st != RONDO_SUCCESS)
    return gpu_fail(comm, st);
  return gpu_wait(comm, g->event[1], what);
}

rondo_status_t gpu_record_wait(rondo_comm_t comm, gpu_state_t *g, const char *what)
{
  rondo_status_t st = g->dev->event_record(g->event[0], g->stream);
  if (st != RONDO_SUCCESS)
    return gpu_fail(comm, st);
  return gpu_wait(comm, g->event[0], what);
}

rondo_status_t gpu_wait_ready(rondo_comm_t comm, dev_coll_t *coll, const char *what)
{
  return wait_for(comm, NULL, coll, what);
}

/* Makes *slot, an NCCL communicator over mpi (this rank is rank of size),
 * collectively: the id from mpi's rank 0 (the broadcast carries its status
 * too, so every rank fails together if it could not). */
static rondo_status_t make_coll(rondo_comm_t comm, MPI_Comm mpi, int rank, int size,
                                dev_coll_t **slot, const char *what)
{
  gpu_state_t *g = comm->gpu;
  struct {
    int32_t status;
    dev_coll_id_t id;
  } msg = {RONDO_SUCCESS, {{0}}};
  if (rank == 0) {
    if (g->dev->coll_id == NULL)
      msg.status = rondo__fail(RONDO_ERR_UNSUPPORTED, "no NCCL in this rondo");
    else
      msg.status = g->dev->coll_id(&msg.id);
  }
  MPI_CHECK(MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, mpi));
  if (msg.status != RONDO_SUCCESS)
    return rank == 0 ? (rondo_status_t)msg.status
                     : rondo__fail(RONDO_ERR_PEER, "could not make the NCCL id (%s) on %s",
                                   rondo_status_name((rondo_status_t)msg.status), what);
  rondo_status_t st = g->dev->coll_init(slot, size, &msg.id, rank, mpi == comm->mpi ? g->mpi
                                                                                       : mpi);
  if (st != RONDO_SUCCESS)
    return gpu_fail(comm, st);
  RONDO_CHECK(gpu_wait_ready(comm, *slot, "NCCL communicator initialization"));
  LOG_INFO("NCCL communicator of %d ranks ready (%s)", size, what);
  return RONDO_SUCCESS;
}

rondo_status_t gpu_coll(rondo_comm_t comm, dev_coll_t **out)
{
  gpu_state_t *g = comm->gpu;
  if (g->coll == NULL)
    RONDO_CHECK(make_coll(comm, comm->mpi, comm->rank, comm->size, &g->coll, "the comm"));
  *out = g->coll;
  return RONDO_SUCCESS;
}

rondo_status_t gpu_node_coll(rondo_comm_t comm, dev_coll_t **out)
{
  gpu_state_t *g = comm->gpu;
  if (g->node_coll == NULL)
    RONDO_CHECK(make_coll(comm, comm->topo->node, comm->local_rank, comm->local_size,
                          &g->node_coll, "the node"));
  *out = g->node_coll;
  return RONDO_SUCCESS;
}

rondo_status_t gpu_nccl(rondo_comm_t comm, gpu_state_t *g, gpu_enqueue_fn enqueue,
                        const void *ctx)
{
  dev_coll_t *coll = NULL;
  RONDO_CHECK(gpu_coll(comm, &coll));
  rondo_status_t st = enqueue(g, coll, ctx);
  if (st != RONDO_SUCCESS)
    return gpu_fail(comm, st);
  return gpu_wait_ready(comm, coll, "enqueueing an NCCL collective");
}
