/*
 * Status strings, the per-thread last-error message, the agreement on
 * every rank's readiness (rondo__agree_ready), names of dtypes and ops, and
 * the version. (Algorithm names come from lib/algo's table.) The status
 * strings come from the one RONDO_STATUS_MAP list in rondo.h, so they
 * cannot drift from the enum.
 */
#include "base/base.h"

#include <errno.h>

#include <stdio.h>
#include <string.h>

const char *rondo_status_string(rondo_status_t status)
{
  switch (status) {
#define RONDO_STATUS_STR(name, value, msg)                                     \
  case RONDO_##name:                                                           \
    return msg;
    RONDO_STATUS_MAP(RONDO_STATUS_STR)
#undef RONDO_STATUS_STR
  default:
    return "unknown status";
  }
}

const char *rondo_status_name(rondo_status_t status)
{
  switch (status) {
#define RONDO_STATUS_NAME(name, value, msg)                                    \
  case RONDO_##name:                                                           \
    return "RONDO_" #name;
    RONDO_STATUS_MAP(RONDO_STATUS_NAME)
#undef RONDO_STATUS_NAME
  default:
    return "RONDO_UNKNOWN";
  }
}

/* ---- last error ---------------------------------------------------------- */

static _Thread_local char last_error[512];

static void set_error(rondo_status_t st, const char *fmt, va_list ap)
{
  int n = snprintf(last_error, sizeof last_error, "%s: ", rondo_status_name(st));
  if (n < 0 || (size_t)n >= sizeof last_error)
    return;
  vsnprintf(last_error + n, sizeof last_error - (size_t)n, fmt, ap);
}

rondo_status_t rondo__fail(rondo_status_t st, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  set_error(st, fmt, ap);
  va_end(ap);
  LOG_ERROR("%s", last_error);
  return st;
}

rondo_status_t rondo__fail_quiet(rondo_status_t st, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  set_error(st, fmt, ap);
  va_end(ap);
  return st;
}

void rondo__clear_error(void) { last_error[0] = '\0'; }

const char *rondo_last_error(void) { return last_error; }

const char *rondo__last_error_text(void)
{
  const char *sep = strstr(last_error, ": ");
  return strncmp(last_error, "RONDO_", 6) == 0 && sep != NULL ? sep + 2 : last_error;
}

rondo_status_t rondo__mpi_fail(int mpi_rc, const char *call, const char *file,
                               int line)
{
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(mpi_rc, msg, &len) != MPI_SUCCESS)
    snprintf(msg, sizeof msg, "MPI error %d", mpi_rc);
  return rondo__fail(RONDO_ERR_MPI, "rank %d: %s failed at %s:%d: %s", rondo__log_rank(), call,
                     file, line, msg);
}

rondo_status_t rondo__pthread_fail(int err, const char *call, const char *file, int line)
{
  rondo_status_t st = err == EAGAIN || err == ENOMEM ? RONDO_ERR_NO_MEMORY : RONDO_ERR_INTERNAL;
  return rondo__fail(st, "rank %d: %s failed at %s:%d: %s", rondo__log_rank(), call, file, line,
                     strerror(err));
}

rondo_status_t rondo__agree_ready(MPI_Comm comm, rondo_status_t local, const char *what)
{
  int ok = local == RONDO_SUCCESS, all_ok = 0;
  MPI_CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm));
  if (all_ok)
    return RONDO_SUCCESS;
  return local != RONDO_SUCCESS
             ? local
             : rondo__fail(RONDO_ERR_PEER, "another rank could not get %s", what);
}

/* ---- names ---------------------------------------------------------------- */

static const char *const dtype_names[RONDO_DTYPE_COUNT] = {
    "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "int16"};
static const size_t dtype_sizes[RONDO_DTYPE_COUNT] = {1, 1, 4, 8, 2, 2, 4, 8, 2};
static const char *const op_names[RONDO_OP_COUNT] = {"sum", "avg", "min", "max",
                                                     "prod", "adasum"};

/* Index of name in a table of n strings, or -1. */
static int lookup(const char *const *table, int n, const char *name)
{
  if (name == NULL)
    return -1;
  for (int i = 0; i < n; i++)
    if (strcmp(table[i], name) == 0)
      return i;
  return -1;
}

const char *rondo_dtype_name(rondo_dtype_t dtype)
{
  return (unsigned)dtype < RONDO_DTYPE_COUNT ? dtype_names[dtype] : NULL;
}

size_t rondo_dtype_size(rondo_dtype_t dtype)
{
  return (unsigned)dtype < RONDO_DTYPE_COUNT ? dtype_sizes[dtype] : 0;
}

rondo_status_t rondo_dtype_from_name(const char *name, rondo_dtype_t *dtype)
{
  int i = lookup(dtype_names, RONDO_DTYPE_COUNT, name);
  if (i < 0 || dtype == NULL)
    return rondo__fail_quiet(RONDO_ERR_INVALID_DTYPE,
                             "'%s' is not a dtype (int8, uint8, int16, int32, int64, "
                             "float16, bfloat16, float32, float64)",
                             name ? name : "(null)");
  *dtype = (rondo_dtype_t)i;
  return RONDO_SUCCESS;
}

const char *rondo_op_name(rondo_op_t op)
{
  return (unsigned)op < RONDO_OP_COUNT ? op_names[op] : NULL;
}

rondo_status_t rondo_op_from_name(const char *name, rondo_op_t *op)
{
  int i = lookup(op_names, RONDO_OP_COUNT, name);
  if (i < 0 || op == NULL)
    return rondo__fail_quiet(RONDO_ERR_INVALID_OP,
                             "'%s' is not an op (sum, avg, min, max, prod, adasum)",
                             name ? name : "(null)");
  *op = (rondo_op_t)i;
  return RONDO_SUCCESS;
}

const char *rondo_coll_name(rondo_coll_t coll)
{
  static const char *const names[RONDO_COLL_COUNT] = {"allreduce", "reduce_scatter",
                                                      "allgather"};
  return (unsigned)coll < RONDO_COLL_COUNT ? names[coll] : NULL;
}

/* ---- version and build features -------------------------------------------- */

void rondo_version(int *major, int *minor, int *patch)
{
  if (major)
    *major = RONDO_VERSION_MAJOR;
  if (minor)
    *minor = RONDO_VERSION_MINOR;
  if (patch)
    *patch = RONDO_VERSION_PATCH;
}

const char *rondo_version_string(void) { return RONDO_VERSION_STRING; }

int rondo_cuda_built(void)
{
#ifdef HAVE_CUDA
  return 1;
#else
  return 0;
#endif
}

int rondo_nccl_built(void)
{
#ifdef HAVE_NCCL
  return 1;
#else
  return 0;
#endif
}
