/*
 * The asynchronous API: argument checks, then the request goes to the
 * comm's engine (lib/engine). Errors that need other ranks' arguments
 * (mismatches, stalls) are found by the engine's negotiation and reach every
 * rank as failed requests.
 */
#include "api/api.h"

#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "engine/engine.h"

#define NAME_MAX_BYTES 255

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

/* A request from checked arguments, submitted; frees it on failure. */
static rondo_status_t submit(rondo_comm_t comm, const char *name, eng_sig_t sig,
                             const rondo_async_opts_t *o, const void *sendbuf, void *recvbuf,
                             uint64_t rows, int device, rondo_request_t *out)
{
  struct rondo_request *r = calloc(1, sizeof *r);
  if (r == NULL || (r->name = strdup(name)) == NULL ||
      (o->group != NULL && (r->group = strdup(o->group)) == NULL)) {
    if (r != NULL) {
      free(r->name);
      free(r);
    }
    return rondo__fail(RONDO_ERR_NO_MEMORY, "'%s': no memory for the request", name);
  }
  r->sig = sig;
  r->rows = rows;
  r->sendbuf = sendbuf;
  r->recvbuf = recvbuf;
  r->device = device;
  r->callback = o->callback;
  r->user = o->user;
  r->group_size = o->group_size;
  rondo_status_t st = eng_request_register(r);
  if (st == RONDO_SUCCESS && (st = engine_submit(comm, r)) != RONDO_SUCCESS)
    eng_request_forget(r);
  if (st != RONDO_SUCCESS) {
    free(r->group);
    free(r->name);
    free(r);
    return st;
  }
  *out = r->handle;
  return RONDO_SUCCESS;
}

/* The checks every submission starts with, in this order. */
static rondo_status_t begin(const char *fn, rondo_comm_t comm, const char *name,
                            const rondo_async_opts_t *opts, rondo_dtype_t dtype,
                            rondo_async_opts_t *o, rondo_request_t *req)
{
  if (req == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG, "%s: req is NULL", fn);
  *req = NULL;
  RONDO_CHECK(api_enter(comm));
  RONDO_CHECK(check_name(name));
  RONDO_CHECK(read_opts(opts, o));
  return api_check_dtype(dtype);
}

rondo_status_t rondo_allreduce_async(rondo_comm_t comm, const char *name, const void *sendbuf,
                                     void *recvbuf, size_t count, rondo_dtype_t dtype,
                                     rondo_op_t op, const rondo_async_opts_t *opts,
                                     rondo_request_t *req)
{
  size_t bytes;
  rondo_async_opts_t o;
  RONDO_CHECK(begin("rondo_allreduce_async", comm, name, opts, dtype, &o, req));
  RONDO_CHECK(api_check_op(op));
  RONDO_CHECK(api_bytes(count, rondo_dtype_size(dtype), &bytes));
  RONDO_CHECK(api_check_buffer(sendbuf, count, "sendbuf"));
  RONDO_CHECK(api_check_buffer(recvbuf, count, "recvbuf"));
  int device = -1;
  RONDO_CHECK(dev_call_memory("rondo_allreduce_async", sendbuf, bytes, recvbuf, bytes, &device));
  /* Refused before engine_device, which pins the engine's device. */
  if (device >= 0 && (o.prescale != 1.0 || o.postscale != 1.0))
    return rondo__fail(RONDO_ERR_UNSUPPORTED,
                       "rondo_allreduce_async: '%s': prescale and postscale need host buffers "
                       "(scaling device memory needs a kernel rondo does not have; op AVG "
                       "divides by the comm size)",
                       name);
  if (device >= 0)
    RONDO_CHECK(engine_device(comm, device));
  eng_sig_t sig = {.kind = ENG_ALLREDUCE, .dtype = dtype, .op = op, .algo = o.algo,
                   .root = -1, .mem = device >= 0, .count = count, .prescale = o.prescale,
                   .postscale = o.postscale};
  return submit(comm, name, sig, &o, sendbuf, recvbuf, 0, device, req);
}

rondo_status_t rondo_broadcast_async(rondo_comm_t comm, const char *name, void *buf,
                                     size_t count, rondo_dtype_t dtype, int root,
                                     const rondo_async_opts_t *opts, rondo_request_t *req)
{
  size_t bytes;
  rondo_async_opts_t o;
  RONDO_CHECK(begin("rondo_broadcast_async", comm, name, opts, dtype, &o, req));
  RONDO_CHECK(api_bytes(count, rondo_dtype_size(dtype), &bytes));
  RONDO_CHECK(api_check_buffer(buf, count, "buf"));
  RONDO_CHECK(api_host_only("rondo_broadcast_async", buf, "buf"));
  if (root < 0 || root >= comm->size)
    return rondo__fail(RONDO_ERR_INVALID_ROOT, "'%s': root %d is not a rank of this comm (0..%d)",
                       name, root, comm->size - 1);
  eng_sig_t sig = {.kind = ENG_BROADCAST, .dtype = dtype, .op = RONDO_SUM,
                   .algo = RONDO_ALGO_AUTO, .root = root, .count = count, .prescale = 1,
                   .postscale = 1};
  return submit(comm, name, sig, &o, buf, buf, 0, -1, req);
}

rondo_status_t rondo_allgather_async(rondo_comm_t comm, const char *name, const void *sendbuf,
                                     size_t rows, size_t row_count, rondo_dtype_t dtype,
                                     const rondo_async_opts_t *opts, rondo_request_t *req)
{
  size_t elems, bytes;
  rondo_async_opts_t o;
  RONDO_CHECK(begin("rondo_allgather_async", comm, name, opts, dtype, &o, req));
  RONDO_CHECK(api_bytes(rows, row_count, &elems));
  RONDO_CHECK(api_bytes(elems, rondo_dtype_size(dtype), &bytes));
  RONDO_CHECK(api_check_buffer(sendbuf, elems, "sendbuf"));
  RONDO_CHECK(api_host_only("rondo_allgather_async", sendbuf, "sendbuf"));
  eng_sig_t sig = {.kind = ENG_ALLGATHER, .dtype = dtype, .op = RONDO_SUM,
                   .algo = RONDO_ALGO_AUTO, .root = -1, .count = row_count, .prescale = 1,
                   .postscale = 1};
  return submit(comm, name, sig, &o, sendbuf, NULL, rows, -1, req);
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

rondo_status_t rondo_request_result(rondo_request_t req, void **buf, size_t *count)
{
  if (req == NULL || buf == NULL || count == NULL)
    return rondo__fail(RONDO_ERR_INVALID_ARG,
                       "rondo_request_result: req, buf and count must not be NULL");
  return eng_request_result(req, buf, count);
}

rondo_status_t rondo_join(rondo_comm_t comm, int *last_rank)
{
  RONDO_CHECK(api_enter(comm));
  return engine_join(comm, last_rank);
}
