/*
 * rondo-bench fusion: a model's gradient set three ways, side by side in
 * every repetition:
 *   engine  every tensor submitted with rondo_allreduce_async, last layer
 *           first as a backward pass produces them, then all waited for;
 *   single  one rondo_allreduce of one buffer with the same total bytes
 *           (what perfect fusion costs);
 *   loop    one MPI_Allreduce per tensor (no fusion).
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
} fusion_t;

static void run_way(fusion_t *f, int way)
{
  const model_t *m = f->m;
  if (way == ENGINE) {
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

/* Wrong elements on this rank after one checked run. The expected sums
 * repeat every 4 elements (data.c). */
static long check(fusion_t *f, int way)
{
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
  fill(f, f->grads);
  fill(f, f->single);
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
  char title[200];
  snprintf(title, sizeof title,
           "fusion, float32 sum through the engine vs one all-reduce vs a loop of "
           "MPI_Allreduce; %d repetitions after %d warm-up, check %s",
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
    f.grads = malloc(m.total * sizeof(float) + 1);
    f.single = malloc(m.total * sizeof(float) + 1);
    if (!f.off || !f.req || !f.grads || !f.single)
      bench_die("out of memory for %s (2 x %zu bytes)", m.label, m.total * sizeof(float));
    for (size_t i = 0, at = 0; i < (size_t)m.n; at += m.count[i], i++)
      f.off[i] = at;
    wrong += run_model(&f);
    out_progress(o, k + 1, nmodels, m.label);
    free(f.off);
    free(f.req);
    free(f.grads);
    free(f.single);
    model_free(&m);
  }
  if (f.rank == 0) {
    printf("# engine/single: the engine's cost over perfect fusion (1.00 = none); loop/engine: "
           "its gain over one MPI_Allreduce per tensor\n");
    printf("# wrong results: %ld%s\n", wrong, wrong ? " (FAILED)" : " (OK)");
  }
  out_summary_begin();
  out_int("wrong", wrong);
  int rc = out_finish() != 0 || wrong != 0;
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Comm_free(&f.mpi);
  return rc;
}
