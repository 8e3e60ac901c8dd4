/*
 * The asynchronous API: argument checks, then the request goes to the
 * comm's engine (lib/engine). Errors that need other ranks' arguments
 * (mismatches, stalls) are found by the engine's negotiation and reach every
 * rank as failed requests.
 */
#include "api/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "engine/caller.h"
#include "engine/engine.h"

#define NAME_MAX_BYTES 255
#define TEXT_MAX_BYTES 255 /* a tag, a refusal's reason */

static const rondo_async_opts_t default_opts = RONDO_ASYNC_OPTS_INIT;

/* The options in effect: defaults, overlaid with the fields the caller's
 * struct has (its size says which). */
static rondo_status_t read_opts(const rondo_async_opts_t *in, rondo_async_opts_t *out)
{
  *out = default_opts;
  if (in == NULL)
    return RONDO_SUCCESS;
  if (in->size < offsetof(rondo_async_opts_t, prescale) || in->size > sizeof *in * 4)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "options: size is %zu; set it to sizeof(rondo_async_opts_t) or start "
                       "from RONDO_ASYNC_OPTS_INIT",
                       in->size);
  memcpy(out, in, in->size < sizeof *out ? in->size : sizeof *out);
  if (!(out->prescale == out->prescale) || !(out->postscale == out->postscale))
    return rondo__fail(RONDO_ERR_INVALID_ARG, "options: prescale and postscale must not be NaN");
  RONDO_CHECK(api_check_algo(out->algo));
  if (out->group != NULL && (out->group_size < 1 || out->group[0] == '\0'))
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "options: a group needs a non-empty name and group_size >= 1 (got %d)",
                       out->group_size);
  if (out->tag != NULL && strlen(out->tag) > TEXT_MAX_BYTES)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "options: tag '%.40s...' is longer than %d bytes",
                       out->tag, TEXT_MAX_BYTES);
  const unsigned known = RONDO_ASYNC_NO_JOIN | RONDO_ASYNC_WAIT_NOW;
  if (out->flags & ~known)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "options: flags %#x has bits rondo does not know",
                       out->flags & ~known);
  return RONDO_SUCCESS;
}

static rondo_status_t check_name(const char *name)
{
  if (name == NULL || name[0] == '\0')
    return rondo__fail(RONDO_ERR_INVALID_ARG, "a request needs a non-empty name");
  if (strlen(name) > NAME_MAX_BYTES)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "request name '%.40s...' is longer than %d bytes",
                       name, NAME_MAX_BYTES);
  return RONDO_SUCCESS;
}

/* FNV-1a of a tag or group name; 0 stands for none, so a text never
 * hashes to it. */
static uint64_t text_hash(const char *text)
{
  if (text == NULL)
    return 0;
  uint64_t h = rondo__fnv(RONDO__FNV_INIT, text, strlen(text));
  return h != 0 ? h : 1;
}

/* A request from checked arguments (the caller fills what its kind needs
 * in *r: buffers, rows, counts), submitted; frees r on failure. */
static rondo_status_t submit(rondo_comm_t comm, const char *name, eng_sig_t sig,
                             const rondo_async_opts_t *o, struct rondo_request *r,
                             rondo_request_t *out)
{
  if ((r->name = strdup(name)) == NULL ||
      (o->group != NULL && (r->group = strdup(o->group)) == NULL) ||
      (o->tag != NULL && (r->tag = strdup(o->tag)) == NULL)) {
    eng_request_free(r);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': no memory for the request", name);
  }
  sig.tag = text_hash(o->tag);
  /* A group's name and size are the same on every rank, or the group's
   * requests fail everywhere (a model with one more layer on one rank) */
  sig.group = text_hash(o->group);
  sig.group_size = o->group != NULL ? (uint32_t)o->group_size : 0;
  sig.flags |= o->flags & ~RONDO_ASYNC_WAIT_NOW; /* a local hint: not compared */
  r->sig = sig;
  r->wait_now = (o->flags & RONDO_ASYNC_WAIT_NOW) != 0;
  r->callback = o->callback;
  r->user = o->user;
  r->group_size = o->group_size;
  rondo_status_t st = o->queue != NULL ? eng_queue_attach(o->queue) : RONDO_SUCCESS;
  if (st != RONDO_SUCCESS) {
    eng_request_free(r);
    return st;
  }
  r->queue = o->queue;
  /* A detached refusal may be complete, and freed by the engine, as soon
   * as it is submitted: r is not read after a successful submission. */
  int detached = r->detached;
  st = detached ? RONDO_SUCCESS : eng_request_register(r);
  rondo_request_t handle = r->handle;
  if (st == RONDO_SUCCESS && (st = eng_submit(comm, r)) != RONDO_SUCCESS && !detached)
    eng_request_forget(r);
  if (st != RONDO_SUCCESS) {
    if (r->queue != NULL)
      eng_queue_detach(r->queue);
    eng_request_free(r);
    return st;
  }
  *out = handle;
  return RONDO_SUCCESS;
}

/* A zeroed request with its buffers, or NULL (out of memory: failed). */
static struct rondo_request *new_request(const char *name, const void *sendbuf, void *recvbuf,
                                         uint64_t rows, int device)
{
  struct rondo_request *r = calloc(1, sizeof *r);
  if (r == NULL) {
    rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': no memory for the request", name);
    return NULL;
  }
  r->sendbuf = sendbuf;
  r->recvbuf = recvbuf;
  r->rows = rows;
  r->device = device;
  return r;
}

/* submit() of a request that needs nothing but its buffers. */
static rondo_status_t submit_plain(rondo_comm_t comm, const char *name, eng_sig_t sig,
                                   const rondo_async_opts_t *o, const void *sendbuf,
                                   void *recvbuf, uint64_t rows, int device,
                                   rondo_request_t *out)
{
  struct rondo_request *r = new_request(name, sendbuf, recvbuf, rows, device);
  if (r == NULL)
    return RONDO_ERR_NO_MEMORY;
  return submit(comm, name, sig, o, r, out);
}

/* The checks every submission starts with, in this order; after them, the
 * call's own argument checks (CHECK_ARG). */
static rondo_status_t begin(const char *fn, rondo_comm_t comm, const char *name,
                            const rondo_async_opts_t *opts, rondo_async_opts_t *o,
                            rondo_request_t *req)
{
  if (req == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "%s: req is NULL", fn);
  *req = NULL;
  RONDO_CHECK(api_enter(comm));
  RONDO_CHECK(check_name(name));
  return read_opts(opts, o);
}

/* A bad argument of this rank (st) in a submission whose comm and name are
 * good: the name is refused in the engine as rondo_refuse_async would, so
 * the other ranks' requests of that name fail with RONDO_ERR_PEER instead
 * of waiting for this rank's (the refusal is released by the engine). The
 * caller gets st and its message. */
static rondo_status_t refuse_for(rondo_comm_t comm, const char *name,
                                 const rondo_async_opts_t *o, rondo_status_t st)
{
  char why[TEXT_MAX_BYTES];
  snprintf(why, sizeof why, "%s", rondo__last_error_text());
  struct rondo_request *r = new_request(name, NULL, NULL, 0, -1);
  if (r != NULL && (r->reason = strdup(why)) != NULL) {
    r->detached = 1;
    rondo_async_opts_t only = RONDO_ASYNC_OPTS_INIT;
    only.group = o->group;
    only.group_size = o->group_size;
    eng_sig_t sig = {.kind = ENG_REFUSED, .root = -1, .prescale = 1, .postscale = 1};
    rondo_request_t ignored;
    submit(comm, name, sig, &only, r, &ignored); /* frees r when it fails */
  } else if (r != NULL) {
    eng_request_free(r);
  }
  return rondo__fail_quiet(st, "%s", why);
}

#define CHECK_ARG(expr)                                                        \
  do {                                                                         \
    rondo_status_t st_ = (expr);                                               \
    if (st_ != RONDO_SUCCESS)                                                  \
      return refuse_for(comm, name, &o, st_);                                  \
  } while (0)

rondo_status_t rondo_allreduce_async(rondo_comm_t comm, const char *name, const void *sendbuf,
                                     void *recvbuf, size_t count, rondo_dtype_t dtype,
                                     rondo_op_t op, const rondo_async_opts_t *opts,
                                     rondo_request_t *req)
{
  size_t bytes;
  rondo_async_opts_t o;
  RONDO_CHECK(begin("rondo_allreduce_async", comm, name, opts, &o, req));
  CHECK_ARG(api_check_dtype(dtype));
  CHECK_ARG(api_check_op(op));
  CHECK_ARG(api_bytes(count, rondo_dtype_size(dtype), &bytes));
  CHECK_ARG(api_check_buffer(sendbuf, count, "sendbuf"));
  CHECK_ARG(api_check_buffer(recvbuf, count, "recvbuf"));
  CHECK_ARG(api_check_overlap("rondo_allreduce_async", sendbuf, bytes, recvbuf, bytes));
  int device = -1;
  CHECK_ARG(dev_call_memory("rondo_allreduce_async", sendbuf, bytes, recvbuf, bytes, &device));
  /* Refused before eng_device, which pins the engine's device. */
  if (device >= 0 && (o.prescale != 1.0 || o.postscale != 1.0))
    CHECK_ARG(rondo__fail(RONDO_ERR_UNSUPPORTED,
                          "rondo_allreduce_async: '%s': prescale and postscale need host "
                          "buffers (scaling device memory needs a kernel rondo does not have; "
                          "op AVG divides by the comm size)",
                          name));
  if (device >= 0)
    CHECK_ARG(eng_device(comm, device));
  eng_sig_t sig = {.kind = ENG_ALLREDUCE, .dtype = dtype, .op = op, .algo = o.algo,
                   .root = -1, .mem = device >= 0, .count = count, .prescale = o.prescale,
                   .postscale = o.postscale};
  return submit_plain(comm, name, sig, &o, sendbuf, recvbuf, 0, device, req);
}

rondo_status_t rondo_broadcast_async(rondo_comm_t comm, const char *name, void *buf,
                                     size_t count, rondo_dtype_t dtype, int root,
                                     const rondo_async_opts_t *opts, rondo_request_t *req)
{
  size_t bytes;
  rondo_async_opts_t o;
  RONDO_CHECK(begin("rondo_broadcast_async", comm, name, opts, &o, req));
  CHECK_ARG(api_check_dtype(dtype));
  CHECK_ARG(api_bytes(count, rondo_dtype_size(dtype), &bytes));
  CHECK_ARG(api_check_buffer(buf, count, "buf"));
  CHECK_ARG(api_host_only("rondo_broadcast_async", buf, "buf"));
  if (root < 0 || root >= comm->size)
    CHECK_ARG(rondo__fail(RONDO_ERR_INVALID_ROOT,
                          "'%s': root %d is not a rank of this comm (0..%d)", name, root,
                          comm->size - 1));
  eng_sig_t sig = {.kind = ENG_BROADCAST, .dtype = dtype, .op = RONDO_SUM,
                   .algo = RONDO_ALGO_AUTO, .root = root, .count = count, .prescale = 1,
                   .postscale = 1};
  return submit_plain(comm, name, sig, &o, buf, buf, 0, -1, req);
}

rondo_status_t rondo_allgather_async(rondo_comm_t comm, const char *name, const void *sendbuf,
                                     size_t rows, size_t row_count, rondo_dtype_t dtype,
                                     const rondo_async_opts_t *opts, rondo_request_t *req)
{
  size_t elems, bytes;
  rondo_async_opts_t o;
  RONDO_CHECK(begin("rondo_allgather_async", comm, name, opts, &o, req));
  CHECK_ARG(api_check_dtype(dtype));
  CHECK_ARG(api_bytes(rows, row_count, &elems));
  CHECK_ARG(api_bytes(elems, rondo_dtype_size(dtype), &bytes));
  CHECK_ARG(api_check_buffer(sendbuf, elems, "sendbuf"));
  CHECK_ARG(api_host_only("rondo_allgather_async", sendbuf, "sendbuf"));
  /* rows: this rank's, not compared across ranks; rank 0 sees whether
   * they are equal everywhere, and then no rank asks the others for theirs
   * (lib/engine/signature.h) */
  eng_sig_t sig = {.kind = ENG_ALLGATHER, .dtype = dtype, .op = RONDO_SUM,
                   .algo = RONDO_ALGO_AUTO, .root = -1, .count = row_count, .rows = rows,
                   .prescale = 1, .postscale = 1};
  return submit_plain(comm, name, sig, &o, sendbuf, NULL, rows, -1, req);
}

/* The same request with the caller's result buffer. Where the result goes
 * is this rank's business: the ranks need not agree on the form. Whether
 * the rows add up to recv_rows is known only once every rank's rows are
 * (lib/engine/collectives.c checks it, agreed with the results' memory). */
rondo_status_t rondo_allgather_into_async(rondo_comm_t comm, const char *name,
                                          const void *sendbuf, size_t rows, void *recvbuf,
                                          size_t recv_rows, size_t row_count, rondo_dtype_t dtype,
                                          const rondo_async_opts_t *opts, rondo_request_t *req)
{
  size_t elems, bytes, recv_elems, recv_bytes;
  rondo_async_opts_t o;
  RONDO_CHECK(begin("rondo_allgather_into_async", comm, name, opts, &o, req));
  CHECK_ARG(api_check_dtype(dtype));
  CHECK_ARG(api_bytes(rows, row_count, &elems));
  CHECK_ARG(api_bytes(elems, rondo_dtype_size(dtype), &bytes));
  CHECK_ARG(api_bytes(recv_rows, row_count, &recv_elems));
  CHECK_ARG(api_bytes(recv_elems, rondo_dtype_size(dtype), &recv_bytes));
  CHECK_ARG(api_check_buffer(sendbuf, elems, "sendbuf"));
  CHECK_ARG(api_check_buffer(recvbuf, recv_elems, "recvbuf"));
  CHECK_ARG(api_host_only("rondo_allgather_into_async", sendbuf, "sendbuf"));
  CHECK_ARG(api_host_only("rondo_allgather_into_async", recvbuf, "recvbuf"));
  if (rows > recv_rows)
    CHECK_ARG(rondo__fail(RONDO_ERR_INVALID_ARG,
                          "rondo_allgather_into_async: rows (%zu) exceed recv_rows (%zu)", rows,
                          recv_rows));
  eng_sig_t sig = {.kind = ENG_ALLGATHER, .dtype = dtype, .op = RONDO_SUM,
                   .algo = RONDO_ALGO_AUTO, .root = -1, .count = row_count, .rows = rows,
                   .prescale = 1, .postscale = 1};
  struct rondo_request *r = new_request(name, sendbuf, recvbuf, rows, -1);
  if (r == NULL)
    return RONDO_ERR_NO_MEMORY;
  r->recv_rows = recv_rows;
  return submit(comm, name, sig, &o, r, req);
}

/* Rank i's rows of a reduce-scatter of rows rows over size ranks. */
static size_t share_rows(size_t rows, int size, int i)
{
  return rows / (size_t)size + ((size_t)i < rows % (size_t)size);
}

rondo_status_t rondo_reduce_scatter_async(rondo_comm_t comm, const char *name,
                                          const void *sendbuf, void *recvbuf, size_t rows,
                                          size_t row_count, rondo_dtype_t dtype, rondo_op_t op,
                                          const rondo_async_opts_t *opts, rondo_request_t *req)
{
  size_t elems, bytes;
  rondo_async_opts_t o;
  RONDO_CHECK(begin("rondo_reduce_scatter_async", comm, name, opts, &o, req));
  CHECK_ARG(api_check_dtype(dtype));
  CHECK_ARG(api_check_op(op));
  CHECK_ARG(api_check_elementwise_op("rondo_reduce_scatter_async", op));
  CHECK_ARG(api_bytes(rows, row_count, &elems));
  CHECK_ARG(api_bytes(elems, rondo_dtype_size(dtype), &bytes));
  size_t p = (size_t)comm->size, r = (size_t)comm->rank;
  size_t mine = share_rows(rows, comm->size, comm->rank) * row_count;
  size_t before = (r * (rows / p) + (r < rows % p ? r : rows % p)) * row_count;
  CHECK_ARG(api_check_buffer(sendbuf, elems, "sendbuf"));
  CHECK_ARG(api_check_buffer(recvbuf, mine, "recvbuf"));
  /* in place: recvbuf at this rank's rows of sendbuf, or at its start */
  const char *block = (const char *)sendbuf + before * rondo_dtype_size(dtype);
  if (recvbuf != sendbuf)
    CHECK_ARG(api_check_overlap_except("rondo_reduce_scatter_async", recvbuf,
                                       mine * rondo_dtype_size(dtype), sendbuf, bytes, block));
  CHECK_ARG(api_host_only("rondo_reduce_scatter_async", sendbuf, "sendbuf"));
  CHECK_ARG(api_host_only("rondo_reduce_scatter_async", recvbuf, "recvbuf"));
  eng_sig_t sig = {.kind = ENG_REDUCE_SCATTER, .dtype = dtype, .op = op,
                   .algo = o.algo, .root = -1, .count = row_count, .rows = rows,
                   .prescale = o.prescale, .postscale = o.postscale,
                   .flags = RONDO_ASYNC_NO_JOIN};
  return submit_plain(comm, name, sig, &o, sendbuf, recvbuf, rows, -1, req);
}

rondo_status_t rondo_reduce_async(rondo_comm_t comm, const char *name, const void *sendbuf,
                                  void *recvbuf, size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                  int root, const rondo_async_opts_t *opts, rondo_request_t *req)
{
  size_t bytes;
  rondo_async_opts_t o;
  RONDO_CHECK(begin("rondo_reduce_async", comm, name, opts, &o, req));
  CHECK_ARG(api_check_dtype(dtype));
  CHECK_ARG(api_check_op(op));
  CHECK_ARG(api_check_elementwise_op("rondo_reduce_async", op));
  CHECK_ARG(api_bytes(count, rondo_dtype_size(dtype), &bytes));
  if (root < 0 || root >= comm->size)
    CHECK_ARG(rondo__fail(RONDO_ERR_INVALID_ROOT,
                          "'%s': root %d is not a rank of this comm (0..%d)", name, root,
                          comm->size - 1));
  int mine = comm->rank == root;
  CHECK_ARG(api_check_buffer(sendbuf, count, "sendbuf"));
  CHECK_ARG(api_check_buffer(mine ? recvbuf : NULL, mine ? count : 0, "recvbuf"));
  if (mine && recvbuf != sendbuf)
    CHECK_ARG(api_check_overlap("rondo_reduce_async", sendbuf, bytes, recvbuf, bytes));
  CHECK_ARG(api_host_only("rondo_reduce_async", sendbuf, "sendbuf"));
  if (mine)
    CHECK_ARG(api_host_only("rondo_reduce_async", recvbuf, "recvbuf"));
  /* a reduce-scatter whose rows all go to the root (collectives.c) */
  eng_sig_t sig = {.kind = ENG_REDUCE_SCATTER, .dtype = dtype, .op = op,
                   .algo = RONDO_ALGO_AUTO, .root = root, .count = 1, .rows = count,
                   .prescale = o.prescale, .postscale = o.postscale,
                   .flags = RONDO_ASYNC_NO_JOIN};
  return submit_plain(comm, name, sig, &o, sendbuf, mine ? recvbuf : NULL, count, -1, req);
}

rondo_status_t rondo_alltoallv_async(rondo_comm_t comm, const char *name, const void *sendbuf,
                                     const size_t *sendcounts, size_t row_count,
                                     rondo_dtype_t dtype, size_t *recvcounts,
                                     const rondo_async_opts_t *opts, rondo_request_t *req)
{
  size_t rows = 0, elems, bytes;
  rondo_async_opts_t o;
  RONDO_CHECK(begin("rondo_alltoallv_async", comm, name, opts, &o, req));
  CHECK_ARG(api_check_dtype(dtype));
  if (sendcounts == NULL || recvcounts == NULL)
    CHECK_ARG(rondo__fail(RONDO_ERR_INVALID_ARG,
                          "rondo_alltoallv_async: '%s': sendcounts and recvcounts must not be "
                          "NULL",
                          name));
  for (int i = 0; i < comm->size; i++) {
    if (sendcounts[i] > SIZE_MAX - rows)
      CHECK_ARG(rondo__fail(RONDO_ERR_COUNT_OVERFLOW,
                            "rondo_alltoallv_async: '%s': the sendcounts overflow", name));
    rows += sendcounts[i];
  }
  CHECK_ARG(api_bytes(rows, row_count, &elems));
  CHECK_ARG(api_bytes(elems, rondo_dtype_size(dtype), &bytes));
  CHECK_ARG(api_check_buffer(sendbuf, elems, "sendbuf"));
  CHECK_ARG(api_host_only("rondo_alltoallv_async", sendbuf, "sendbuf"));
  struct rondo_request *r = new_request(name, sendbuf, NULL, rows, -1);
  if (r == NULL)
    return RONDO_ERR_NO_MEMORY;
  if ((r->sendcounts = malloc((size_t)comm->size * sizeof *r->sendcounts)) == NULL) {
    eng_request_free(r);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': no memory for the request", name);
  }
  memcpy(r->sendcounts, sendcounts, (size_t)comm->size * sizeof *r->sendcounts);
  r->recvcounts = recvcounts;
  eng_sig_t sig = {.kind = ENG_ALLTOALL, .dtype = dtype, .op = RONDO_SUM,
                   .algo = RONDO_ALGO_AUTO, .root = -1, .count = row_count, .prescale = 1,
                   .postscale = 1, .flags = RONDO_ASYNC_NO_JOIN};
  return submit(comm, name, sig, &o, r, req);
}

rondo_status_t rondo_refuse_async(rondo_comm_t comm, const char *name, const char *reason,
                                  const rondo_async_opts_t *opts, rondo_request_t *req)
{
  rondo_async_opts_t o;
  if (req == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_refuse_async: req is NULL");
  *req = NULL;
  RONDO_CHECK(api_enter(comm));
  RONDO_CHECK(check_name(name));
  RONDO_CHECK(read_opts(opts, &o));
  if (reason == NULL || reason[0] == '\0')
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_refuse_async: '%s': give a reason", name);
  struct rondo_request *r = new_request(name, NULL, NULL, 0, -1);
  if (r == NULL)
    return RONDO_ERR_NO_MEMORY;
  if ((r->reason = strndup(reason, TEXT_MAX_BYTES)) == NULL) {
    eng_request_free(r);
    return rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': no memory for the request", name);
  }
  /* Only the name and the group match (and the queue serves the caller):
   * the rest of a refusal is no data. */
  rondo_async_opts_t only = RONDO_ASYNC_OPTS_INIT;
  only.group = o.group;
  only.group_size = o.group_size;
  only.queue = o.queue;
  eng_sig_t sig = {.kind = ENG_REFUSED, .root = -1, .prescale = 1, .postscale = 1};
  return submit(comm, name, sig, &only, r, req);
}

rondo_status_t rondo_timeline_start(rondo_comm_t comm, const char *path, int mark_cycles)
{
  RONDO_CHECK(api_enter(comm));
  if (path == NULL || path[0] == '\0')
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_timeline_start: give a file path");
  return eng_timeline(comm, path, mark_cycles != 0);
}

rondo_status_t rondo_timeline_stop(rondo_comm_t comm)
{
  RONDO_CHECK(api_enter(comm));
  return eng_timeline(comm, NULL, 0);
}

rondo_status_t rondo_timeline_mark(rondo_comm_t comm, const char *what)
{
  RONDO_CHECK(api_enter(comm));
  if (what == NULL || what[0] == '\0' || strlen(what) > 255)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_timeline_mark: give a mark of 1 to 255 bytes (got %s)",
                       what == NULL ? "NULL" : what[0] == '\0' ? "\"\"" : "a longer one");
  return eng_timeline_mark(comm, what);
}

rondo_status_t rondo_test(rondo_request_t req, int *done)
{
  if (req == NULL || done == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_test: req and done must not be NULL");
  return eng_request_test(req, done);
}

rondo_status_t rondo_wait(rondo_request_t *reqp)
{
  if (reqp == NULL || *reqp == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_wait: no request (NULL)");
  int freed = 0;
  rondo_status_t st = eng_request_wait(*reqp, &freed);
  if (freed)
    *reqp = NULL;
  return st;
}

rondo_status_t rondo_wait_result(rondo_request_t *reqp, void **buf, size_t *count)
{
  if (buf == NULL || count == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_wait_result: buf and count must not be NULL");
  *buf = NULL;
  *count = 0;
  if (reqp == NULL || *reqp == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_wait_result: no request (NULL)");
  int freed = 0;
  rondo_status_t st = eng_request_wait_result(*reqp, &freed, buf, count);
  if (freed)
    *reqp = NULL;
  return st;
}

rondo_status_t rondo_request_result(rondo_request_t req, void **buf, size_t *count)
{
  if (req == NULL || buf == NULL || count == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_request_result: req, buf and count must not be NULL");
  return eng_request_result(req, buf, count);
}

rondo_status_t rondo_queue_create(rondo_queue_t *queue)
{
  if (queue == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_queue_create: queue is NULL");
  *queue = NULL;
  return eng_queue_create(queue);
}

rondo_status_t rondo_queue_wait(rondo_queue_t queue, double timeout, rondo_request_t *req)
{
  if (queue == NULL || req == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_queue_wait: queue and req must not be NULL");
  *req = NULL;
  if (!(timeout == timeout))
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_queue_wait: timeout is NaN");
  return eng_queue_wait(queue, timeout, req);
}

rondo_status_t rondo_queue_add(rondo_queue_t queue, rondo_request_t req)
{
  if (queue == NULL || req == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_queue_add: queue and req must not be NULL");
  return eng_queue_add(queue, req);
}

rondo_status_t rondo_queue_close(rondo_queue_t queue)
{
  if (queue == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_queue_close: queue is NULL");
  eng_queue_close(queue);
  return RONDO_SUCCESS;
}

rondo_status_t rondo_queue_destroy(rondo_queue_t *queue)
{
  if (queue == NULL || *queue == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "rondo_queue_destroy: no queue (NULL)");
  RONDO_CHECK(eng_queue_destroy(*queue));
  *queue = NULL;
  return RONDO_SUCCESS;
}

rondo_status_t rondo_join(rondo_comm_t comm, int *last_rank)
{
  RONDO_CHECK(api_enter(comm));
  return eng_join(comm, last_rank);
}
