/*
 * The host double of the device backend (device.h says why it exists).
 * Everything lives in host memory:
 *   - "device memory" is malloc'd memory the double remembers, so
 *     pointer_device can tell it from other host memory; the current
 *     device is one number per process;
 *   - a stream is a thread that runs its queue in order. Each piece of
 *     work gets a sequence number; an event remembers the number of the
 *     last work queued before it, and is done once the stream has passed
 *     it. A failed piece of work is sticky: the stream skips the rest and
 *     every query of its events fails with that error, as CUDA's do;
 *   - the collective library reduces over MPI on a duplicate of the
 *     communicator it is given (MPI_Comm_idup, so that initialization
 *     never blocks, as NCCL's non-blocking mode). An all-reduce gathers
 *     every rank's input and reduces it in rank order with lib/reduce, so
 *     every rank gets the same bytes. AVG is rondo's host average. Waits
 *     poll and sleep, and give up when the communicator is aborted. An
 *     aborted communicator's MPI duplicate is never freed (release says
 *     why).
 * Failures and delays can be injected per point (dev_double_fail,
 * dev_double_delay).
 */
#include "device/device.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "reduce/reduce.h"

/* ---- injection ------------------------------------------------------------------ */

static struct {
  atomic_long calls;
  atomic_int fail_nth;
  atomic_int fail_status;
  atomic_long delay_us;
} points[DEV_DOUBLE_POINTS];

static const char *const point_names[DEV_DOUBLE_POINTS] = {"copy", "collective",
                                                           "collective init", "allocation"};

void dev_double_fail(dev_double_point_t point, int nth, rondo_status_t status)
{
  atomic_store(&points[point].calls, 0);
  atomic_store(&points[point].fail_status, (int)status);
  atomic_store(&points[point].fail_nth, nth);
}

void dev_double_delay(dev_double_point_t point, long usec)
{
  atomic_store(&points[point].delay_us, usec);
}

void dev_double_reset(void)
{
  for (int i = 0; i < DEV_DOUBLE_POINTS; i++) {
    atomic_store(&points[i].fail_nth, 0);
    atomic_store(&points[i].delay_us, 0);
    atomic_store(&points[i].calls, 0);
  }
}

static void sleep_us(long us)
{
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* Counts a call at point, waits its delay; RONDO_SUCCESS or the injected
 * failure, recorded with a message. */
static rondo_status_t pass(dev_double_point_t point)
{
  long n = atomic_fetch_add(&points[point].calls, 1) + 1;
  long delay = atomic_load(&points[point].delay_us);
  if (delay > 0)
    sleep_us(delay);
  if (atomic_load(&points[point].fail_nth) == n)
    return rondo__fail_quiet((rondo_status_t)atomic_load(&points[point].fail_status),
                             "host double: injected failure of %s #%ld", point_names[point], n);
  return RONDO_SUCCESS;
}

/* ---- memory ----------------------------------------------------------------------- */

typedef struct {
  char *base;
  size_t bytes;
  int device; /* -1: pinned host memory */
} block_t;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static block_t *blocks;
static size_t nblocks, cap_blocks;
static atomic_int devices = 1, current = 0;

void dev_double_devices(int n) { atomic_store(&devices, n > 0 ? n : 1); }

size_t dev_double_live(void)
{
  pthread_mutex_lock(&mem_lock);
  size_t n = nblocks;
  pthread_mutex_unlock(&mem_lock);
  return n;
}

static rondo_status_t remember(void **p, size_t bytes, int device)
{
  *p = NULL;
  RONDO_CHECK(pass(DEV_DOUBLE_ALLOC));
  char *m = malloc(bytes ? bytes : 1);
  if (m == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "host double: %zu bytes", bytes);
  pthread_mutex_lock(&mem_lock);
  if (nblocks == cap_blocks) {
    size_t cap = cap_blocks ? 2 * cap_blocks : 16;
    block_t *nb = realloc(blocks, cap * sizeof *nb);
    if (nb == NULL) {
      pthread_mutex_unlock(&mem_lock);
      free(m);
      return rondo__fail(RONDO_ERR_NO_MEMORY, "host double: block table");
    }
    blocks = nb;
    cap_blocks = cap;
  }
  blocks[nblocks++] = (block_t){m, bytes ? bytes : 1, device};
  pthread_mutex_unlock(&mem_lock);
  *p = m;
  return RONDO_SUCCESS;
}

static void forget(void *p)
{
  if (p == NULL)
    return;
  pthread_mutex_lock(&mem_lock);
  for (size_t i = 0; i < nblocks; i++)
    if (blocks[i].base == p) {
      blocks[i] = blocks[--nblocks];
      if (nblocks == 0) {
        free(blocks);
        blocks = NULL;
        cap_blocks = 0;
      }
      pthread_mutex_unlock(&mem_lock);
      free(p);
      return;
    }
  pthread_mutex_unlock(&mem_lock);
  LOG_ERROR("host double: free of %p, which it did not allocate", p);
}

static rondo_status_t hd_device_count(int *n)
{
  *n = atomic_load(&devices);
  return RONDO_SUCCESS;
}

static rondo_status_t hd_pointer_device(const void *p, int *device, size_t *room)
{
  const char *c = p;
  *device = -1;
  *room = SIZE_MAX;
  pthread_mutex_lock(&mem_lock);
  for (size_t i = 0; i < nblocks; i++)
    if (c >= blocks[i].base && c < blocks[i].base + blocks[i].bytes) {
      *device = blocks[i].device;
      *room = (size_t)(blocks[i].base + blocks[i].bytes - c);
      break;
    }
  pthread_mutex_unlock(&mem_lock);
  return RONDO_SUCCESS;
}

static rondo_status_t hd_get_device(int *device)
{
  *device = atomic_load(&current);
  return RONDO_SUCCESS;
}

static rondo_status_t hd_set_device(int device)
{
  if (device < 0 || device >= atomic_load(&devices))
    return rondo__fail(RONDO_ERR_CUDA, "host double: no device %d (it has %d)", device,
                       atomic_load(&devices));
  atomic_store(&current, device);
  return RONDO_SUCCESS;
}

static rondo_status_t hd_uuid(int device, char *buf, size_t len)
{
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  snprintf(buf, len, "double:%s:%d", host, device);
  return RONDO_SUCCESS;
}

static rondo_status_t hd_mem_alloc(void **p, size_t bytes)
{
  return remember(p, bytes, atomic_load(&current));
}

static rondo_status_t hd_host_alloc(void **p, size_t bytes) { return remember(p, bytes, -1); }

/* ---- streams and events ---------------------------------------------------------------- */

typedef enum { WORK_COPY, WORK_COLL } work_kind_t;
typedef enum { COLL_ALLREDUCE, COLL_BROADCAST, COLL_ALLGATHER, COLL_REDUCE_SCATTER } coll_kind_t;

typedef struct work {
  work_kind_t kind;
  coll_kind_t coll_kind;
  int root;            /* broadcast */
  uint64_t seq;
  void *dst;
  const void *src;
  size_t count;        /* copy, broadcast, allgather: bytes; all-reduce: elements;
                          reduce-scatter: elements per block */
  rondo_dtype_t dtype;
  rondo_op_t op;
  struct dev_coll *coll;
  struct work *next;
} work_t;

struct dev_stream {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake, idle;
  work_t *head, *tail;
  uint64_t queued, completed; /* sequence numbers */
  int stop;
  rondo_status_t error;      /* sticky */
  char message[256];
};

struct dev_event {
  dev_stream_t *stream; /* where it was last recorded, or NULL */
  uint64_t seq;
};

struct dev_coll {
  MPI_Comm mpi;
  MPI_Request init;    /* the MPI_Comm_idup, until it completes */
  int rank, nranks, ready;
  atomic_int aborted;  /* coll_abort: waits give up, mpi is never freed */
  atomic_int users;    /* queued collectives that still reference it */
  atomic_int failed;   /* an asynchronous error: status */
  atomic_int leaks;    /* an MPI operation left pending: never free mpi */
  char message[256];
};

static rondo_status_t run_coll(work_t *w);

static void *stream_main(void *arg)
{
  dev_stream_t *s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (s->head == NULL && !s->stop)
      pthread_cond_wait(&s->wake, &s->lock);
    if (s->head == NULL)
      break;
    work_t *w = s->head;
    s->head = w->next;
    if (s->head == NULL)
      s->tail = NULL;
    int skip = s->error != RONDO_SUCCESS;
    pthread_mutex_unlock(&s->lock);
    rondo_status_t st = RONDO_SUCCESS;
    char msg[256] = "";
    if (!skip) {
      if (w->kind == WORK_COPY) {
        st = pass(DEV_DOUBLE_COPY);
        if (st == RONDO_SUCCESS && w->count > 0)
          memmove(w->dst, w->src, w->count);
      } else {
        st = run_coll(w);
      }
      if (st != RONDO_SUCCESS)
        snprintf(msg, sizeof msg, "%s", rondo__last_error_text());
    }
    if (w->kind == WORK_COLL)
      atomic_fetch_sub(&w->coll->users, 1);
    pthread_mutex_lock(&s->lock);
    if (st != RONDO_SUCCESS && s->error == RONDO_SUCCESS) {
      s->error = st;
      snprintf(s->message, sizeof s->message, "%s", msg);
    }
    s->completed = w->seq;
    free(w);
    pthread_cond_broadcast(&s->idle);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static rondo_status_t hd_stream_create(dev_stream_t **out)
{
  *out = NULL;
  dev_stream_t *s = calloc(1, sizeof *s);
  if (s == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "host double: stream");
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->wake, NULL);
  pthread_cond_init(&s->idle, NULL);
  int rc = pthread_create(&s->thread, NULL, stream_main, s);
  if (rc != 0) {
    pthread_cond_destroy(&s->idle);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return rondo__pthread_fail(rc, "pthread_create", __FILE__, __LINE__);
  }
  *out = s;
  return RONDO_SUCCESS;
}

static void hd_stream_destroy(dev_stream_t *s)
{
  if (s == NULL)
    return;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
  PT_CHECK_LOG(pthread_join(s->thread, NULL));
  pthread_cond_destroy(&s->idle);
  pthread_cond_destroy(&s->wake);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static rondo_status_t enqueue(dev_stream_t *s, work_t *w)
{
  pthread_mutex_lock(&s->lock);
  w->seq = ++s->queued;
  if (s->tail != NULL)
    s->tail->next = w;
  else
    s->head = w;
  s->tail = w;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
  return RONDO_SUCCESS;
}

/* A piece of work for a stream, or NULL (failure recorded). */
static work_t *new_work(work_kind_t kind, const void *src, void *dst, size_t count)
{
  work_t *w = calloc(1, sizeof *w);
  if (w == NULL) {
    rondo__fail(RONDO_ERR_NO_MEMORY, "host double: stream work");
    return NULL;
  }
  w->kind = kind;
  w->src = src;
  w->dst = dst;
  w->count = count;
  return w;
}

static rondo_status_t hd_copy_async(void *dst, const void *src, size_t bytes, dev_stream_t *s)
{
  work_t *w = new_work(WORK_COPY, src, dst, bytes);
  return w != NULL ? enqueue(s, w) : RONDO_ERR_NO_MEMORY;
}

static rondo_status_t hd_event_create(dev_event_t **e)
{
  *e = calloc(1, sizeof **e);
  return *e != NULL ? RONDO_SUCCESS : rondo__fail(RONDO_ERR_NO_MEMORY, "host double: event");
}

static void hd_event_destroy(dev_event_t *e) { free(e); }

static rondo_status_t hd_event_record(dev_event_t *e, dev_stream_t *s)
{
  pthread_mutex_lock(&s->lock);
  e->stream = s;
  e->seq = s->queued;
  pthread_mutex_unlock(&s->lock);
  return RONDO_SUCCESS;
}

static rondo_status_t stream_error(dev_stream_t *s)
{
  return rondo__fail_quiet(s->error, "%s", s->message);
}

static rondo_status_t hd_event_query(dev_event_t *e, int *done)
{
  dev_stream_t *s = e->stream;
  *done = 1;
  if (s == NULL)
    return RONDO_SUCCESS;
  pthread_mutex_lock(&s->lock);
  rondo_status_t st = RONDO_SUCCESS;
  if (s->error != RONDO_SUCCESS)
    st = stream_error(s);
  else
    *done = s->completed >= e->seq;
  pthread_mutex_unlock(&s->lock);
  return st;
}

static rondo_status_t hd_stream_sync(dev_stream_t *s)
{
  pthread_mutex_lock(&s->lock);
  while (s->completed < s->queued)
    pthread_cond_wait(&s->idle, &s->lock);
  rondo_status_t st = s->error != RONDO_SUCCESS ? stream_error(s) : RONDO_SUCCESS;
  pthread_mutex_unlock(&s->lock);
  return st;
}

/* ---- the collective library --------------------------------------------------------- */

static rondo_status_t hd_coll_id(dev_coll_id_t *id)
{
  memset(id, 0, sizeof *id);
  snprintf((char *)id->bytes, sizeof id->bytes, "host double %ld", (long)getpid());
  return RONDO_SUCCESS;
}

static rondo_status_t hd_coll_init(dev_coll_t **out, int nranks, const dev_coll_id_t *id,
                                   int rank, MPI_Comm mpi)
{
  (void)id;
  *out = NULL;
  /* An injected failure returns before the collective MPI call, as a rank
   * whose ncclCommInitRank fails at once: the others wait for it. */
  RONDO_CHECK(pass(DEV_DOUBLE_COLL_INIT));
  dev_coll_t *c = calloc(1, sizeof *c);
  if (c == NULL)
    return rondo__fail(RONDO_ERR_NO_MEMORY, "host double: communicator");
  c->rank = rank;
  c->nranks = nranks;
  c->mpi = MPI_COMM_NULL;
  int rc = MPI_Comm_idup(mpi, &c->mpi, &c->init);
  if (rc != MPI_SUCCESS) {
    free(c);
    return rondo__mpi_fail(rc, "MPI_Comm_idup", __FILE__, __LINE__);
  }
  *out = c;
  return RONDO_SUCCESS;
}

static rondo_status_t coll_failure(dev_coll_t *c)
{
  return rondo__fail_quiet((rondo_status_t)atomic_load(&c->failed), "%s", c->message);
}

static rondo_status_t hd_coll_state(dev_coll_t *c, int *ready)
{
  *ready = 0;
  if (atomic_load(&c->failed) != RONDO_SUCCESS)
    return coll_failure(c);
  if (!c->ready) {
    int done = 0;
    MPI_CHECK(MPI_Test(&c->init, &done, MPI_STATUS_IGNORE));
    c->ready = done;
  }
  *ready = c->ready;
  return RONDO_SUCCESS;
}

/* Waits for an MPI request, polling; gives up when c is aborted (the
 * request is then left pending, and c's communicator is never freed). */
static rondo_status_t wait_or_abort(dev_coll_t *c, MPI_Request *req)
{
  for (long us = 20;; us = us < 1000 ? 2 * us : 1000) {
    int done = 0;
    MPI_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (done)
      return RONDO_SUCCESS;
    if (atomic_load(&c->aborted)) {
      atomic_store(&c->leaks, 1);
      return rondo__fail_quiet(RONDO_ERR_NCCL, "host double: the communicator was aborted");
    }
    sleep_us(us);
  }
}

/* Buffers an MPI request still owns after an abort left it pending for
 * good: kept here, reachable, for the rest of the process. */
static pthread_mutex_t abandoned_lock = PTHREAD_MUTEX_INITIALIZER;
static void *abandoned[64];
static int nabandoned;

static void abandon(void *p)
{
  pthread_mutex_lock(&abandoned_lock);
  if (nabandoned < (int)(sizeof abandoned / sizeof abandoned[0]))
    abandoned[nabandoned++] = p;
  pthread_mutex_unlock(&abandoned_lock);
}

static rondo_status_t run_coll(work_t *w)
{
  dev_coll_t *c = w->coll;
  if (atomic_load(&c->aborted))
    return rondo__fail_quiet(RONDO_ERR_NCCL, "host double: the communicator was aborted");
  rondo_status_t st = pass(DEV_DOUBLE_COLL);
  if (st != RONDO_SUCCESS) {
    /* as NCCL: the communicator's asynchronous error too */
    snprintf(c->message, sizeof c->message, "%s", rondo__last_error_text());
    atomic_store(&c->failed, (int)st);
    return st;
  }
  /* What each rank contributes to the gather below (the broadcast moves
   * bytes from the root instead). */
  size_t esize = rondo_dtype_size(w->dtype), p = (size_t)c->nranks;
  size_t bytes = w->coll_kind == COLL_ALLREDUCE       ? w->count * esize
                 : w->coll_kind == COLL_REDUCE_SCATTER ? p * w->count * esize
                                                       : w->count;
  if (bytes > (size_t)INT32_MAX / p)
    return rondo__fail_quiet(RONDO_ERR_UNSUPPORTED, "host double: %zu bytes is too large",
                             bytes);
  MPI_Request req;
  int rc;
  if (w->coll_kind == COLL_BROADCAST) {
    rc = MPI_Ibcast(w->dst, (int)bytes, MPI_BYTE, w->root, c->mpi, &req);
    if (rc != MPI_SUCCESS)
      return rondo__mpi_fail(rc, "MPI_Ibcast", __FILE__, __LINE__);
    return wait_or_abort(c, &req);
  }
  if (w->coll_kind == COLL_ALLGATHER) {
    /* as NCCL: in place where sendbuf is this rank's block of recvbuf */
    const void *src = w->src == (char *)w->dst + (size_t)c->rank * bytes ? MPI_IN_PLACE : w->src;
    rc = MPI_Iallgather(src, (int)bytes, MPI_BYTE, w->dst, (int)bytes, MPI_BYTE, c->mpi, &req);
    if (rc != MPI_SUCCESS)
      return rondo__mpi_fail(rc, "MPI_Iallgather", __FILE__, __LINE__);
    return wait_or_abort(c, &req);
  }
  /* the reductions: gather everything, reduce in rank order */
  char *all = malloc(bytes * p + 1);
  if (all == NULL)
    return rondo__fail_quiet(RONDO_ERR_NO_MEMORY, "host double: gather buffer");
  rc = MPI_Iallgather(w->src, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, c->mpi, &req);
  if (rc != MPI_SUCCESS)
    st = rondo__mpi_fail(rc, "MPI_Iallgather", __FILE__, __LINE__);
  else
    st = wait_or_abort(c, &req);
  if (st == RONDO_SUCCESS) {
    /* all-reduce: the whole buffer; reduce-scatter: this rank's block */
    size_t n = w->count, at = w->coll_kind == COLL_REDUCE_SCATTER
                                  ? (size_t)c->rank * w->count * esize
                                  : 0;
    rondo_op_t op = w->op == RONDO_AVG ? RONDO_SUM : w->op;
    memcpy(w->dst, all + at, n * esize);
    for (size_t r = 1; r < p; r++)
      reduce_apply(w->dst, w->dst, all + r * bytes + at, n, w->dtype, op);
    if (w->op == RONDO_AVG)
      reduce_average(w->dst, n, w->dtype, c->nranks);
  }
  if (atomic_load(&c->leaks))
    abandon(all); /* the abandoned request may still write into it */
  else
    free(all);
  return st;
}

static rondo_status_t coll_enqueue(dev_coll_t *c, coll_kind_t kind, const void *src, void *dst,
                                   size_t count, rondo_dtype_t dtype, rondo_op_t op, int root,
                                   dev_stream_t *s)
{
  if (atomic_load(&c->failed) != RONDO_SUCCESS)
    return coll_failure(c);
  work_t *w = new_work(WORK_COLL, src, dst, count);
  if (w == NULL)
    return RONDO_ERR_NO_MEMORY;
  w->coll_kind = kind;
  w->dtype = dtype;
  w->op = op;
  w->root = root;
  w->coll = c;
  atomic_fetch_add(&c->users, 1);
  return enqueue(s, w);
}

static rondo_status_t hd_coll_allreduce(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                        size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                        dev_stream_t *s)
{
  return coll_enqueue(c, COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, s);
}

static rondo_status_t hd_coll_broadcast(dev_coll_t *c, void *buf, size_t bytes, int root,
                                        dev_stream_t *s)
{
  return coll_enqueue(c, COLL_BROADCAST, buf, buf, bytes, RONDO_UINT8, RONDO_SUM, root, s);
}

static rondo_status_t hd_coll_allgather(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                        size_t bytes, dev_stream_t *s)
{
  return coll_enqueue(c, COLL_ALLGATHER, sendbuf, recvbuf, bytes, RONDO_UINT8, RONDO_SUM, 0, s);
}

static rondo_status_t hd_coll_reduce_scatter(dev_coll_t *c, const void *sendbuf, void *recvbuf,
                                             size_t recvcount, rondo_dtype_t dtype,
                                             rondo_op_t op, dev_stream_t *s)
{
  return coll_enqueue(c, COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0, s);
}

static void release(dev_coll_t *c)
{
  /* Queued collectives see the abort and return; wait for them. */
  while (atomic_load(&c->users) > 0)
    sleep_us(100);
  if (!c->ready && c->init != MPI_REQUEST_NULL)
    atomic_store(&c->leaks, 1); /* the idup never completed */
  /* Nor is an aborted communicator freed, even with nothing of this rank's
   * pending: an abort comes while other ranks may still be in collectives
   * this rank never joined or gave up on, and their messages to this rank
   * may still be in flight. Once freed here, MPI may give its context id
   * to a later communicator of ranks that have it free (Open MPI does, for
   * as few as this rank alone) and deliver such a late message to that
   * one: Open MPI's ob1 crashes in add_comm on a sender outside it. */
  if (!atomic_load(&c->leaks) && !atomic_load(&c->aborted) && c->mpi != MPI_COMM_NULL)
    MPI_CHECK_LOG(MPI_Comm_free(&c->mpi));
  free(c);
}

static void hd_coll_abort(dev_coll_t *c)
{
  if (c == NULL)
    return;
  atomic_store(&c->aborted, 1);
  release(c);
}

static void hd_coll_destroy(dev_coll_t *c)
{
  if (c != NULL)
    release(c);
}

const dev_backend_t dev_host_double = {
    .name = "host double",
    .device_count = hd_device_count,
    .pointer_device = hd_pointer_device,
    .get_device = hd_get_device,
    .set_device = hd_set_device,
    .uuid = hd_uuid,
    .mem_alloc = hd_mem_alloc,
    .mem_free = forget,
    .host_alloc = hd_host_alloc,
    .host_free = forget,
    .stream_create = hd_stream_create,
    .stream_destroy = hd_stream_destroy,
    .copy_async = hd_copy_async,
    .event_create = hd_event_create,
    .event_destroy = hd_event_destroy,
    .event_record = hd_event_record,
    .event_query = hd_event_query,
    .stream_sync = hd_stream_sync,
    .coll_id = hd_coll_id,
    .coll_init = hd_coll_init,
    .coll_state = hd_coll_state,
    .coll_allreduce = hd_coll_allreduce,
    .coll_broadcast = hd_coll_broadcast,
    .coll_allgather = hd_coll_allgather,
    .coll_reduce_scatter = hd_coll_reduce_scatter,
    .coll_abort = hd_coll_abort,
    .coll_destroy = hd_coll_destroy,
};
