/*
 * The all-reduce dispatch: the comm's choice (its RONDO_ALLREDUCE_ALGO,
 * tuning table and cost model, told about the call by selector_input.c),
 * the check that an algorithm can run a call, and the run itself through
 * the algorithm's descriptor. lib/api's blocking calls and lib/engine's
 * fused buffers both come through here.
 */
#include "algo/algo.h"

#include "reduce/reduce.h"

/* forced: the comm's RONDO_ALLREDUCE_ALGO, or AUTO for none. It does not
 * apply to op ADASUM, which one algorithm runs. */
static rondo_algo_t choose(rondo_comm_t comm, rondo_algo_t forced, const select_input_t *in,
                           select_result_t *res)
{
  if (in->op == RONDO_ADASUM)
    forced = RONDO_ALGO_AUTO;
  select_params_t params = algo_params(comm);
  rondo_algo_t algo = select_choose(&params, algo_menu(), comm->tuning, forced, in, res);
  LOG_DEBUG("allreduce of %zu bytes on %d ranks / %d nodes: %s (%s)", in->bytes, comm->size,
            in->nodes, algo == RONDO_ALGO_AUTO ? "none" : rondo_algo_name(algo), res->reason);
  return algo;
}

rondo_algo_t algo_choose(rondo_comm_t comm, const select_input_t *in, select_result_t *res)
{
  return choose(comm, comm->forced_algo, in, res);
}

rondo_status_t algo_check(rondo_comm_t comm, rondo_algo_t algo, const select_input_t *in,
                          const char **why)
{
  const algo_desc_t *d = algo_find(algo);
  const char *reason = NULL;
  rondo_status_t st = RONDO_SUCCESS;
  if (d == NULL && algo > RONDO_ALGO_AUTO && algo < RONDO_ALGO_COUNT) {
    reason = "it is not an all-reduce algorithm";
    st = rondo__fail_quiet(RONDO_ERR_UNSUPPORTED, "%s is not an all-reduce algorithm (%s)",
                           rondo_algo_name(algo), algo_names());
  } else if (d == NULL) {
    reason = "not a rondo_algo_t";
    st = rondo__fail_quiet(RONDO_ERR_INVALID_ALGO, "algorithm %d is not a rondo_algo_t (1..%d)",
                           (int)algo, RONDO_ALGO_COUNT - 1);
  } else {
    select_candidate_t c;
    select_judge(&d->select, in, &c);
    if (!(d->collectives & ALGO_SERVES_ALLREDUCE))
      reason = "it is not an all-reduce algorithm";
    else if (!c.can_run)
      reason = c.why_not;
    else if (d->allreduce == NULL)
      reason = "not built into this library";
    if (reason != NULL)
      st = rondo__fail_quiet(RONDO_ERR_UNSUPPORTED, "the %s all-reduce cannot run this call: %s",
                             d->select.name, reason);
    else
      reason = c.why_not; /* it runs; why the selector passes it over, or NULL */
  }
  if (why != NULL)
    *why = reason;
  return st;
}

/* forced: as in choose. */
static rondo_status_t resolve(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                              rondo_op_t op, select_mem_t mem, rondo_algo_t forced,
                              rondo_algo_t *algo)
{
  if (*algo == RONDO_ALGO_AUTO && comm->last_algo != RONDO_ALGO_AUTO &&
      comm->last_count == count && comm->last_dtype == dtype && comm->last_op == op &&
      comm->last_mem == (int)mem && comm->last_forced == forced) {
    *algo = comm->last_algo;
    return RONDO_SUCCESS; /* checked when it was chosen */
  }
  select_input_t in = algo_input_mem(comm, count, dtype, op, mem);
  if (*algo == RONDO_ALGO_AUTO) {
    select_result_t res;
    *algo = choose(comm, forced, &in, &res);
    if (*algo == RONDO_ALGO_AUTO && op == RONDO_ADASUM) /* one algorithm: its reason */
      return rondo__fail(RONDO_ERR_UNSUPPORTED, "op adasum on %zu x %s: %s", count,
                         rondo_dtype_name(dtype), res.cand[RONDO_ALGO_ADASUM].why_not);
    if (*algo == RONDO_ALGO_AUTO)
      return rondo__fail(RONDO_ERR_UNSUPPORTED, "no all-reduce algorithm is eligible: %s",
                         res.reason);
    /* RONDO_ALLREDUCE_ALGO may force one that cannot run */
    rondo_status_t st = algo_check(comm, *algo, &in, NULL);
    if (st != RONDO_SUCCESS) {
      LOG_ERROR("%s", rondo_last_error());
      return st;
    }
    comm->last_count = count;
    comm->last_dtype = dtype;
    comm->last_op = op;
    comm->last_mem = (int)mem;
    comm->last_forced = forced;
    comm->last_algo = *algo;
    return RONDO_SUCCESS;
  }
  rondo_status_t st = algo_check(comm, *algo, &in, NULL);
  if (st != RONDO_SUCCESS)
    LOG_ERROR("%s", rondo_last_error());
  return st;
}

rondo_status_t algo_allreduce_resolve(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                                      rondo_op_t op, rondo_algo_t *algo)
{
  return resolve(comm, count, dtype, op, SELECT_MEM_HOST, comm->forced_algo, algo);
}

rondo_status_t algo_allreduce_resolve_mem(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                                          rondo_op_t op, select_mem_t mem, rondo_algo_t *algo)
{
  return resolve(comm, count, dtype, op, mem, comm->forced_algo, algo);
}

/* The host algorithm for a device algorithm's host part (staging): the
 * comm's choice among host algorithms, honouring RONDO_ALLREDUCE_ALGO only
 * when it names a host algorithm. */
static rondo_status_t resolve_host(rondo_comm_t comm, size_t count, rondo_dtype_t dtype,
                                   rondo_op_t op, rondo_algo_t *algo)
{
  /* A forced device algorithm (RONDO_ALLREDUCE_ALGO=staged) chose the
   * device call; its host part is the selector's. */
  const algo_desc_t *f = algo_find(comm->forced_algo);
  rondo_algo_t forced =
      f != NULL && f->select.mem == SELECT_MEM_HOST ? comm->forced_algo : RONDO_ALGO_AUTO;
  *algo = RONDO_ALGO_AUTO;
  return resolve(comm, count, dtype, op, SELECT_MEM_HOST, forced, algo);
}

/* What a device algorithm that reduces through host memory (staged) runs
 * its host part with. */
static const algo_host_path_t host_path = {.resolve = resolve_host,
                                           .run = algo_allreduce_run};

/* algo_allreduce_run with the segments of a fused buffer (NULL: one). */
static rondo_status_t run(rondo_comm_t comm, const void *sendbuf, void *recvbuf, size_t count,
                          rondo_dtype_t dtype, rondo_op_t op, rondo_algo_t algo,
                          const agree_sig_t *agree, const size_t *segments, size_t nsegments)
{
  if (count == 0)
    return RONDO_SUCCESS;
  const algo_desc_t *d = algo_find(algo);
  /* A device algorithm finishes AVG itself: its recvbuf is not host memory. */
  int host_avg = op == RONDO_AVG && d->select.mem == SELECT_MEM_HOST;
  algo_allreduce_args_t a = {
      .comm = comm, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
      .dtype = dtype, .op = host_avg ? RONDO_SUM : op,
      .esize = rondo_dtype_size(dtype), .agree = agree, .segments = segments,
      .nsegments = nsegments, .host = &host_path};
  LOG_DEBUG("allreduce %zu x %s %s: %s", count, rondo_dtype_name(dtype), rondo_op_name(op),
            rondo_algo_name(algo));
  RONDO_CHECK(d->allreduce(&a));
  if (host_avg)
    reduce_average(recvbuf, count, dtype, comm->size);
  return RONDO_SUCCESS;
}

rondo_status_t algo_allreduce_run(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                  size_t count, rondo_dtype_t dtype, rondo_op_t op,
                                  rondo_algo_t algo, const agree_sig_t *agree)
{
  return run(comm, sendbuf, recvbuf, count, dtype, op, algo, agree, NULL, 0);
}

rondo_status_t algo_allreduce(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                              size_t count, rondo_dtype_t dtype, rondo_op_t op,
                              rondo_algo_t algo)
{
  RONDO_CHECK(algo_allreduce_resolve(comm, count, dtype, op, &algo));
  return run(comm, sendbuf, recvbuf, count, dtype, op, algo, NULL, NULL, 0);
}

rondo_status_t algo_allreduce_fused(rondo_comm_t comm, const void *sendbuf, void *recvbuf,
                                    const size_t *counts, size_t n, rondo_dtype_t dtype,
                                    rondo_op_t op, rondo_algo_t algo)
{
  size_t count = 0;
  for (size_t i = 0; i < n; i++)
    count += counts[i];
  RONDO_CHECK(algo_allreduce_resolve(comm, count, dtype, op, &algo));
  return run(comm, sendbuf, recvbuf, count, dtype, op, algo, NULL, counts, n);
}
