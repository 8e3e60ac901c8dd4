/*
 * rondo-bench fusion: a model's gradient set three ways, side by side in
 * every repetition:
 *   engine  every tensor submitted with rondo_allreduce_async, last layer
 *           first as a backward pass produces them, then all waited for;
 *   single  one rondo_allreduce of one buffer with the same total bytes
 *           (what perfect fusion costs);
 *   loop    one MPI_Allreduce per tensor (no fusion).
 * With --sharded, the step of a sharded data-parallel model (FSDP, ZeRO-3):
 * each rank keeps a shard of every tensor (rondo_reduce_scatter_async's
 * split: rank i has count / size elements, one more for i < count % size),
 * and per tensor one all-gather assembles the parameters and one
 * reduce-scatter leaves each rank the sum of its shard of the gradients:
 *   engine  every all-gather submitted with rondo_allgather_async in
 *           forward order and waited for, then every reduce-scatter with
 *           rondo_reduce_scatter_async in backward order and waited for;
 *   single  one rondo_allgather and one rondo_reduce_scatter of the whole
 *           model (padded to whole blocks of size);
 *   loop    one MPI_Allgatherv and one MPI_Reduce_scatter per tensor.
 * Each repetition of each way starts after a barrier; a time is the mean
 * over the repetitions, averaged over the ranks (median likewise). The
 * check runs each way once more on fresh inputs (data.c: float32 sums of
 * small integers are exact).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"
#include "tools/bench/models.h"
#include "tools/measure.h"

enum { ENGINE, SINGLE, LOOP, WAYS };
static const char *const way_name[WAYS] = {"engine", "single", "loop"};

typedef struct {
  const bench_opts_t *o;
  rondo_comm_t comm;
  MPI_Comm mpi;
  int rank, size;
  const model_t *m;
  size_t *off;
  float *grads, *single;
  rondo_request_t *req;
  /* --sharded: this rank's shard of tensor i at soff[i] of pshard (its
   * parameters, the all-gathers' input) and gshard (the reduce-scatters'
   * output); params: the gathered parameters of the single and loop ways;
   * block: the single way's shard (the model padded to size x block). */
  size_t *soff, block, shard_cap; /* shard_cap: floats of pshard and gshard */
  float *pshard, *gshard, *params;
  int *counts, *displs; /* loop: a tensor's shards, for MPI */
} fusion_t;

static void run_sharded(fusion_t *f, int way);

static void run_way(fusion_t *f, int way)
{
  const model_t *m = f->m;
  if (f->o->sharded) {
    run_sharded(f, way);
  } else if (way == ENGINE) {
    for (int i = m->n - 1; i >= 0; i--)
      if (rondo_allreduce_async(f->comm, m->name[i], f->grads + f->off[i], f->grads + f->off[i],
                                m->count[i], RONDO_FLOAT32, RONDO_SUM, NULL,
                                &f->req[i]) != RONDO_SUCCESS)
        bench_die("rondo_allreduce_async '%s': %s", m->name[i], rondo_last_error());
    for (int i = m->n - 1; i >= 0; i--)
      if (rondo_wait(&f->req[i]) != RONDO_SUCCESS)
        bench_die("rondo_wait '%s': %s", m->name[i], rondo_last_error());
  } else if (way == SINGLE) {
    if (rondo_allreduce(f->comm, f->single, f->single, m->total, RONDO_FLOAT32, RONDO_SUM) !=
        RONDO_SUCCESS)
      bench_die("rondo_allreduce of %zu floats: %s", m->total, rondo_last_error());
  } else {
    for (int i = m->n - 1; i >= 0; i--)
      MPI_Allreduce(MPI_IN_PLACE, f->grads + f->off[i], (int)m->count[i], MPI_FLOAT, MPI_SUM,
                    f->mpi);
  }
}

static float *buffer_of(fusion_t *f, int way) { return way == SINGLE ? f->single : f->grads; }

static void fill(fusion_t *f, float *buf)
{
  for (size_t i = 0; i < f->m->total; i++)
    buf[i] = (float)data_reduce_input(f->rank, i, RONDO_SUM, f->size);
}

/* ---- --sharded ------------------------------------------------------------------ */

/* Rank i's shard of a tensor of c elements: rondo_reduce_scatter_async's
 * split (rondo.h), which the all-gather repeats. */
static size_t shard_count(size_t c, int n, int i)
{
  return c / (size_t)n + ((size_t)i < c % (size_t)n);
}

static size_t shard_start(size_t c, int n, int i)
{
  size_t extra = c % (size_t)n;
  return (size_t)i * (c / (size_t)n) + ((size_t)i < extra ? (size_t)i : extra);
}

/* Element j of the model's parameters: exact in float32 and with a period
 * (65521) no shard or tensor of these models lines up with, so a block
 * gathered into the wrong place shows. */
static float param_value(size_t j) { return (float)(j % 65521); }

static void tensor_name(char *buf, size_t len, const char *what, const char *name)
{
  snprintf(buf, len, "%s.%s", what, name);
}

/* engine: the all-gathers in forward order, each into its tensor's place
 * in the parameters (as FSDP's all_gather_into_tensor), the
 * reduce-scatters in backward order, each set submitted and then waited
 * for. */
static void sharded_engine(fusion_t *f)
{
  const model_t *m = f->m;
  char name[96];
  for (int i = 0; i < m->n; i++) {
    tensor_name(name, sizeof name, "allgather", m->name[i]);
    if (rondo_allgather_into_async(f->comm, name, f->pshard + f->soff[i],
                                   shard_count(m->count[i], f->size, f->rank),
                                   f->params + f->off[i], m->count[i], 1, RONDO_FLOAT32, NULL,
                                   &f->req[i]) != RONDO_SUCCESS)
      bench_die("rondo_allgather_into_async '%s': %s", name, rondo_last_error());
  }
  for (int i = 0; i < m->n; i++)
    if (rondo_wait(&f->req[i]) != RONDO_SUCCESS)
      bench_die("rondo_wait '%s' (all-gather): %s", m->name[i], rondo_last_error());
  for (int i = m->n - 1; i >= 0; i--) {
    tensor_name(name, sizeof name, "reduce_scatter", m->name[i]);
    if (rondo_reduce_scatter_async(f->comm, name, f->grads + f->off[i], f->gshard + f->soff[i],
                                   m->count[i], 1, RONDO_FLOAT32, RONDO_SUM, NULL,
                                   &f->req[i]) != RONDO_SUCCESS)
      bench_die("rondo_reduce_scatter_async '%s': %s", name, rondo_last_error());
  }
  for (int i = m->n - 1; i >= 0; i--)
    if (rondo_wait(&f->req[i]) != RONDO_SUCCESS)
      bench_die("rondo_wait '%s' (reduce-scatter): %s", m->name[i], rondo_last_error());
}

/* loop: per tensor, in the same orders, MPI's calls with the same split. */
static void sharded_loop(fusion_t *f)
{
  const model_t *m = f->m;
  for (int k = 0; k < 2 * m->n; k++) {
    int gather = k < m->n, i = gather ? k : 2 * m->n - 1 - k;
    for (int r = 0; r < f->size; r++) {
      f->counts[r] = (int)shard_count(m->count[i], f->size, r);
      f->displs[r] = (int)shard_start(m->count[i], f->size, r);
    }
    if (gather)
      MPI_Allgatherv(f->pshard + f->soff[i], f->counts[f->rank], MPI_FLOAT, f->params + f->off[i],
                     f->counts, f->displs, MPI_FLOAT, f->mpi);
    else
      MPI_Reduce_scatter(f->grads + f->off[i], f->gshard + f->soff[i], f->counts, MPI_FLOAT,
                         MPI_SUM, f->mpi);
  }
}

static void run_sharded(fusion_t *f, int way)
{
  if (way == ENGINE) {
    sharded_engine(f);
  } else if (way == SINGLE) {
    if (rondo_allgather(f->comm, f->pshard, f->params, f->block, RONDO_FLOAT32) != RONDO_SUCCESS)
      bench_die("rondo_allgather of %zu floats per rank: %s", f->block, rondo_last_error());
    if (rondo_reduce_scatter(f->comm, f->grads, f->gshard, f->block, RONDO_FLOAT32, RONDO_SUM) !=
        RONDO_SUCCESS)
      bench_die("rondo_reduce_scatter of %zu floats per rank: %s", f->block, rondo_last_error());
  } else {
    sharded_loop(f);
  }
}

/* Flat index of this rank's shard element k of tensor i (engine, loop) or
 * of the single way's block. */
static size_t shard_index(const fusion_t *f, int way, int i, size_t k)
{
  if (way == SINGLE)
    return (size_t)f->rank * f->block + k;
  return f->off[i] + shard_start(f->m->count[i], f->size, f->rank) + k;
}

/* This rank's parameter shards as the way lays them out, the gradients
 * (every rank's whole copy; zero in the single way's padding), and
 * poisoned outputs. */
static void fill_sharded(fusion_t *f, int way)
{
  const model_t *m = f->m;
  size_t padded = f->block * (size_t)f->size;
  for (size_t j = 0; j < padded; j++)
    f->grads[j] = j < m->total ? (float)data_reduce_input(f->rank, j, RONDO_SUM, f->size) : 0;
  if (way == SINGLE)
    for (size_t k = 0; k < f->block; k++)
      f->pshard[k] = param_value(shard_index(f, way, 0, k));
  else
    for (int i = 0; i < m->n; i++)
      for (size_t k = 0; k < shard_count(m->count[i], f->size, f->rank); k++)
        f->pshard[f->soff[i] + k] = param_value(shard_index(f, way, i, k));
  memset(f->params, 0xff, padded * sizeof(float)); /* NaN: a missing block fails */
  memset(f->gshard, 0xff, f->shard_cap * sizeof(float));
}

/* Wrong elements on this rank after one checked sharded run: every
 * gathered parameter, and this rank's shard of the summed gradients. */
static long check_sharded(fusion_t *f, int way)
{
  const model_t *m = f->m;
  fill_sharded(f, way);
  run_sharded(f, way);
  if (f->o->break_algo != NULL && strcmp(f->o->break_algo, way_name[way]) == 0 &&
      f->rank == f->size - 1)
    f->params[m->total / 2] += 1.0f;
  long wrong = 0;
  for (size_t j = 0; j < m->total; j++)
    wrong += f->params[j] != param_value(j);
  for (int i = 0; i < (way == SINGLE ? 1 : m->n); i++) {
    size_t n = way == SINGLE ? f->block : shard_count(m->count[i], f->size, f->rank);
    const float *got = f->gshard + (way == SINGLE ? 0 : f->soff[i]);
    for (size_t k = 0; k < n; k++) {
      size_t j = shard_index(f, way, i, k);
      float want = 0; /* the single way's padding sums zeros */
      if (j < m->total)
        data_expect_reduce(&want, 0, RONDO_FLOAT32, RONDO_SUM, j, f->size);
      wrong += got[k] != want;
    }
  }
  return wrong;
}

/* The shards' offsets and buffers of --sharded for f->m. 0, or -1 when out
 * of memory. */
static int alloc_sharded(fusion_t *f)
{
  const model_t *m = f->m;
  size_t mine = 0;
  f->soff = malloc((size_t)m->n * sizeof *f->soff);
  for (int i = 0; f->soff != NULL && i < m->n; i++) {
    f->soff[i] = mine;
    mine += shard_count(m->count[i], f->size, f->rank);
  }
  f->block = (m->total + (size_t)f->size - 1) / (size_t)f->size;
  f->shard_cap = mine > f->block ? mine : f->block;
  size_t shard = f->shard_cap * sizeof(float) + 1;
  size_t padded = f->block * (size_t)f->size * sizeof(float) + 1;
  f->pshard = malloc(shard);
  f->gshard = malloc(shard);
  f->params = malloc(padded);
  f->grads = malloc(padded);
  f->counts = malloc((size_t)f->size * sizeof *f->counts);
  f->displs = malloc((size_t)f->size * sizeof *f->displs);
  return f->soff && f->pshard && f->gshard && f->params && f->grads && f->counts && f->displs
             ? 0 : -1;
}

static void free_sharded(fusion_t *f)
{
  free(f->soff);
  free(f->pshard);
  free(f->gshard);
  free(f->params);
  free(f->counts);
  free(f->displs);
}

/* ---- the driver ------------------------------------------------------------------- */

/* Wrong elements on this rank after one checked run. The expected sums
 * repeat every 4 elements (data.c). */
static long check(fusion_t *f, int way)
{
  if (f->o->sharded)
    return check_sharded(f, way);
  float want[4];
  for (size_t i = 0; i < 4; i++)
    data_expect_reduce(want, i, RONDO_FLOAT32, RONDO_SUM, i, f->size);
  float *buf = buffer_of(f, way);
  fill(f, buf);
  run_way(f, way);
  if (f->o->break_algo != NULL && strcmp(f->o->break_algo, way_name[way]) == 0 &&
      f->rank == f->size - 1)
    buf[f->m->total / 2] += 1.0f;
  long wrong = 0;
  for (size_t i = 0; i < f->m->total; i++)
    wrong += buf[i] != want[i % 4];
  return wrong;
}

/* Returns the wrong elements over all ranks (rank 0; 0 elsewhere). */
static long run_model(fusion_t *f)
{
  const bench_opts_t *o = f->o;
  const model_t *m = f->m;
  int reps = o->iters;
  double *t = malloc((size_t)WAYS * (size_t)reps * sizeof *t);
  if (t == NULL)
    bench_die("out of memory");
  if (o->sharded) {
    fill_sharded(f, ENGINE);
  } else {
    fill(f, f->grads);
    fill(f, f->single);
  }
  for (int r = 0; r < o->warmup + reps; r++)
    for (int w = 0; w < WAYS; w++) {
      MPI_Barrier(f->mpi);
      double t0 = MPI_Wtime();
      run_way(f, w);
      if (r >= o->warmup)
        t[w * reps + r - o->warmup] = MPI_Wtime() - t0;
    }
  double mean[WAYS], med[WAYS];
  long wrong[WAYS];
  for (int w = 0; w < WAYS; w++) {
    double sum = 0;
    for (int r = 0; r < reps; r++)
      sum += t[w * reps + r];
    double mine[2] = {sum / reps, meas_median(t + w * reps, reps)};
    double tot[2];
    MPI_Allreduce(mine, tot, 2, MPI_DOUBLE, MPI_SUM, f->mpi);
    mean[w] = tot[0] / f->size;
    med[w] = tot[1] / f->size;
    long mw = o->check ? check(f, w) : 0;
    MPI_Allreduce(&mw, &wrong[w], 1, MPI_LONG, MPI_SUM, f->mpi);
  }
  free(t);
  double bytes = (double)m->total * 4;
  long all_wrong = wrong[ENGINE] + wrong[SINGLE] + wrong[LOOP];
  if (f->rank == 0) {
    printf("  %-14s %7d %12.0f %10.3f %10.3f %10.3f %10.3f %8.3f %8.3f %8.3f %9.2f %9.2f %7ld\n",
           m->label, m->n, bytes, mean[ENGINE] * 1e3, med[ENGINE] * 1e3, mean[SINGLE] * 1e3,
           mean[LOOP] * 1e3, bytes / mean[ENGINE] / 1e9, bytes / mean[SINGLE] / 1e9,
           bytes / mean[LOOP] / 1e9, mean[ENGINE] / mean[SINGLE], mean[LOOP] / mean[ENGINE],
           all_wrong);
    fflush(stdout);
  }
  out_str("model", m->label);
  out_str("pattern", o->sharded ? "sharded" : "allreduce");
  out_int("tensors", m->n);
  out_num("bytes", bytes);
  out_num("engine_ms", mean[ENGINE] * 1e3);
  out_num("engine_median_ms", med[ENGINE] * 1e3);
  out_num("single_ms", mean[SINGLE] * 1e3);
  out_num("single_median_ms", med[SINGLE] * 1e3);
  out_num("loop_ms", mean[LOOP] * 1e3);
  out_num("loop_median_ms", med[LOOP] * 1e3);
  out_num("engine_gbps", bytes / mean[ENGINE] / 1e9);
  out_num("single_gbps", bytes / mean[SINGLE] / 1e9);
  out_num("loop_gbps", bytes / mean[LOOP] / 1e9);
  out_num("engine_over_single", mean[ENGINE] / mean[SINGLE]);
  out_num("loop_over_engine", mean[LOOP] / mean[ENGINE]);
  out_int("wrong", all_wrong);
  out_row_end();
  return all_wrong;
}

int fusion_main(const bench_opts_t *o)
{
  fusion_t f;
  memset(&f, 0, sizeof f);
  f.o = o;
  f.comm = rondo_world();
  f.rank = meas_rank(f.comm);
  f.size = meas_size(f.comm);
  const char *which[3];
  int nmodels = 0;
  if (o->tensors > 0)
    which[nmodels++] = NULL;
  else if (strcmp(o->model, "all") == 0) {
    which[nmodels++] = "resnet50";
    which[nmodels++] = "bert-base";
    which[nmodels++] = "vgg16";
  } else {
    which[nmodels++] = o->model;
  }
  char title[400];
  snprintf(title, sizeof title, "%s; %d repetitions after %d warm-up, check %s",
           o->sharded ? "fusion, sharded (FSDP, ZeRO-3): per tensor an all-gather of the float32 "
                        "parameters and a reduce-scatter (sum) of the gradients, through the "
                        "engine vs one of each of the whole model vs a loop of MPI_Allgatherv "
                        "and MPI_Reduce_scatter"
                      : "fusion, float32 sum through the engine vs one all-reduce vs a loop of "
                        "MPI_Allreduce",
           o->iters, o->warmup, o->check ? "on" : "off");
  if (out_start(o, f.comm, title) != 0)
    return 1;
  MPI_Comm_dup(MPI_COMM_WORLD, &f.mpi);
  if (f.rank == 0) {
    printf("#\n# %-14s %7s %12s %10s %10s %10s %10s %8s %8s %8s %9s %9s %7s\n", "model",
           "tensors", "size", "engine", "median", "single", "loop", "engine", "single", "loop",
           "engine/", "loop/", "#wrong");
    printf("# %-14s %7s %12s %10s %10s %10s %10s %8s %8s %8s %9s %9s %7s\n", "", "", "(B)",
           "(ms)", "(ms)", "(ms)", "(ms)", "(GB/s)", "(GB/s)", "(GB/s)", "single", "engine",
           "");
  }
  long wrong = 0;
  for (int k = 0; k < nmodels; k++) {
    model_t m;
    if (model_build(&m, which[k], o->tensors, o->tensor_bytes) != 0)
      bench_die("cannot build the gradient set (out of memory?)");
    for (int i = 0; i < m.n; i++)
      if (m.count[i] > 2147483647u)
        bench_die("tensor '%s' is too large for MPI_Allreduce's int count", m.name[i]);
    f.m = &m;
    f.off = malloc((size_t)m.n * sizeof *f.off);
    f.req = malloc((size_t)m.n * sizeof *f.req);
    if (o->sharded) {
      if (alloc_sharded(&f) != 0)
        bench_die("out of memory for %s (2 x %zu bytes and shards)", m.label,
                  m.total * sizeof(float));
    } else {
      f.grads = malloc(m.total * sizeof(float) + 1);
      f.single = malloc(m.total * sizeof(float) + 1);
    }
    if (!f.off || !f.req || !f.grads || (!o->sharded && !f.single))
      bench_die("out of memory for %s (2 x %zu bytes)", m.label, m.total * sizeof(float));
    for (size_t i = 0, at = 0; i < (size_t)m.n; at += m.count[i], i++)
      f.off[i] = at;
    wrong += run_model(&f);
    out_progress(o, k + 1, nmodels, m.label);
    if (o->sharded)
      free_sharded(&f);
    free(f.off);
    free(f.req);
    free(f.grads);
    free(f.single);
    f.single = NULL;
    model_free(&m);
  }
  if (f.rank == 0) {
    printf("# engine/single: the engine's cost over perfect fusion (1.00 = none); loop/engine: "
           "its gain over %s per tensor\n",
           o->sharded ? "one MPI_Allgatherv and one MPI_Reduce_scatter"
                      : "one MPI_Allreduce");
    if (o->sharded)
      printf("# a sharded step moves the model's bytes twice (one all-gather, one "
             "reduce-scatter); GB/s is the model's bytes per step time\n");
    printf("# wrong results: %ld%s\n", wrong, wrong ? " (FAILED)" : " (OK)");
  }
  out_summary_begin();
  out_int("wrong", wrong);
  int rc = out_finish() != 0 || wrong != 0;
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Comm_free(&f.mpi);
  return rc;
}
