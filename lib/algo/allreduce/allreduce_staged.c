/*
 * Staged all-reduce, for buffers in device memory where NCCL cannot serve
 * (ranks sharing a GPU, a rondo without NCCL): the data pass through
 * pinned host memory and a host all-reduce, chunk by chunk, so that the
 * copies overlap the host algorithm.
 *
 * The comm's pinned buffer holds two chunks of RONDO_STAGE_CHUNK_BYTES.
 * Chunk k goes down into half k % 2, is reduced there in place by the host
 * all-reduce the selector picks for a chunk (host memory, any host
 * algorithm, AVG finished on the host) and goes back up into recvbuf. One
 * stream keeps the copies in order, so the copy down of chunk k + 1 and
 * the copy up of chunk k - 1 run while the host reduces chunk k:
 *
 *     stream:  down 0 | down 1, up 0 | down 2, up 1 | ...
 *     host:           | reduce 0     | reduce 1     | ...
 *
 * The host all-reduces are MPI collectives that every rank must enter as
 * often as the others. A rank that fails (a copy, a timeout, another
 * rank's failure heard on the fault line) therefore keeps taking part in
 * the remaining chunks' all-reduces with whatever its buffer holds, and
 * returns the failure at the end; every rank fails the call.
 */
#include "algo/common/gpu.h"

#include "algo/agree/agree.h"

#include <stdlib.h>
#include <string.h>

static double cost(const select_params_t *prm, const select_input_t *in)
{
  return 2.0 * GPU_STAGE_COPY_BETA * (double)in->bytes +
         algo_ring_time(select_p2p_level(prm, in), (double)in->bytes, in->ranks,
                        prm->ring_chunk, in->nodes > 1);
}

static size_t chunk_bytes(rondo_comm_t comm, size_t esize)
{
  size_t c = comm->cfg.stage_chunk / esize * esize;
  return c ? c : esize;
}

static rondo_status_t run(const algo_allreduce_args_t *a)
{
  rondo_comm_t comm = a->comm;
  gpu_state_t *g;
  int prev;
  size_t total = a->count * a->esize, chunk = chunk_bytes(comm, a->esize);
  size_t nchunks = (total + chunk - 1) / chunk;
  size_t half = total < chunk ? total : chunk;
  /* this rank's preparation, agreed before the first collective */
  rondo_status_t st = gpu_enter(comm, &g, &prev);
  if (st == RONDO_SUCCESS)
    st = gpu_stage(g, 2 * half);
  /* with a->agree the call's argument check too, in the same agreement */
  st = a->agree != NULL ? agree_call(comm, st, a->agree)
                        : rondo__agree_ready(comm->mpi, st, "its GPU state and staging buffer");
  if (st != RONDO_SUCCESS) {
    gpu_leave(g, prev);
    return st;
  }
  /* The host algorithm for one chunk: the same choice on every rank. */
  size_t n0 = half / a->esize;
  rondo_algo_t host = RONDO_ALGO_AUTO;
  rondo_status_t hst = a->host->resolve(comm, n0, a->dtype, a->op, &host);
  const char *src = a->sendbuf;
  char *dst = a->recvbuf, *buf[2] = {g->stage, (char *)g->stage + half}, *spare = NULL;

#define DEVICE_STEP(call)                                                      \
  do {                                                                         \
    if (st == RONDO_SUCCESS && (st = (call)) != RONDO_SUCCESS)                 \
      st = gpu_fail(comm, st);                                                 \
  } while (0)

  DEVICE_STEP(g->dev->copy_async(buf[0], src, nchunks > 1 ? chunk : total, g->stream));
  DEVICE_STEP(g->dev->event_record(g->event[0], g->stream));
  for (size_t k = 0; k < nchunks; k++) {
    size_t off = k * chunk, len = total - off < chunk ? total - off : chunk;
    char *b = buf[k % 2];
    if (st == RONDO_SUCCESS)
      st = gpu_wait(comm, g->event[k % 2], "a copy to the staging buffer");
    if (k + 1 < nchunks) {
      size_t noff = off + chunk, nlen = total - noff < chunk ? total - noff : chunk;
      DEVICE_STEP(g->dev->copy_async(buf[(k + 1) % 2], src + noff, nlen, g->stream));
      DEVICE_STEP(g->dev->event_record(g->event[(k + 1) % 2], g->stream));
    }
    /* Always: the other ranks are in this collective too. After a failure
     * the stream may still be using the staging buffer: take part from a
     * buffer of its own. */
    if (st != RONDO_SUCCESS && spare == NULL && (spare = malloc(half)) != NULL)
      memset(spare, 0, half);
    char *h = st != RONDO_SUCCESS && spare != NULL ? spare : b;
    rondo_status_t r =
        hst != RONDO_SUCCESS
            ? hst
            : a->host->run(comm, h, h, len / a->esize, a->dtype, a->op, host, NULL);
    if (st == RONDO_SUCCESS && r != RONDO_SUCCESS)
      st = gpu_fail(comm, r);
    DEVICE_STEP(g->dev->copy_async(dst + off, b, len, g->stream));
    if (st == RONDO_SUCCESS)
      st = gpu_heard(comm);
  }
  DEVICE_STEP(g->dev->event_record(g->event[2], g->stream));
  if (st == RONDO_SUCCESS)
    st = gpu_wait(comm, g->event[2], "a copy from the staging buffer");
#undef DEVICE_STEP
  free(spare);
  gpu_leave(g, prev);
  /* A rank that failed took part with a buffer of its own: the others'
   * results may be wrong, so every rank learns whether every rank
   * succeeded. */
  if (st == RONDO_SUCCESS)
    st = gpu_heard(comm);
  return rondo__agree_ready(comm->mpi, st, "its part of the staged all-reduce");
}

const algo_desc_t algo_staged = {
    .select = {.id = RONDO_ALGO_STAGED, .name = "staged", .mem = SELECT_MEM_DEVICE,
               .cost = cost},
    .collectives = ALGO_SERVES_ALLREDUCE,
    .allreduce = run,
};
