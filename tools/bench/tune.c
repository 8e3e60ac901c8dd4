/*
 * rondo-bench tune: measures every eligible all-reduce algorithm over a size
 * sweep on the ranks it runs on and writes a tuning table for
 * RONDO_TUNING_FILE.
 *
 *   mpiexec -n 2 rondo-bench tune --output tuning.txt
 *
 * Per size (tools/measure.h has how one round is timed):
 *   1. every candidate runs r rounds, taking turns; each gets its median;
 *   2. the cost model's own choice is kept unless another algorithm is more
 *      than the margin (--margin, 5%) faster: a table entry should correct the
 *      model where it is wrong, not chase noise where it is close;
 *   3. when the decision overrides the model and the winner leads the
 *      runner-up by less than twice the margin, two more rounds are run, up
 *      to --max-rounds rounds in all, and step 2 is repeated on all of them;
 *   4. afterwards, a size whose decision differs from both neighbours, which
 *      agree, takes the neighbours' algorithm if that one is within the
 *      margin there (a lone winner between two others is usually noise).
 * Runs of sizes with the same decision become one rule; boundaries are
 * halfway between measured sizes, the first rule starts at 0 and the last is
 * open. Rules apply only to this comm size and node count, so tables made
 * on different layouts can be concatenated (the first matching rule wins).
 * docs/tuning.md, "How to tune".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/bench.h"
#include "tools/measure.h"

enum { MAX_ALGOS = RONDO_ALGO_COUNT };

typedef struct {
  size_t bytes;
  rondo_algo_t model, decision;
  int rounds;
  int measured[MAX_ALGOS];   /* by algorithm: 1 if a candidate at this size */
  double med[MAX_ALGOS];     /* by algorithm, microseconds */
  const char *why;
} size_result_t;

/* Steps 1-3 of the header for one size. */
static void tune_size(meas_t *m, const bench_opts_t *o, const rondo_algo_t *all, int nall,
                      size_t bytes, size_result_t *res)
{
  size_t count = bytes / sizeof(float);
  rondo_algo_t cand[MAX_ALGOS];
  int n = 0;
  for (int i = 0; i < nall; i++) {
    /* Candidates: what the selector would consider at this size (not
     * hierarchical on one node). */
    const char *why = NULL;
    if (rondo_algo_available(m->comm, all[i], count, RONDO_FLOAT32, RONDO_SUM, &why) ==
            RONDO_SUCCESS &&
        why == NULL)
      cand[n++] = all[i];
  }
  memset(res, 0, sizeof *res);
  res->bytes = bytes;
  rondo_allreduce_choice(m->comm, count, RONDO_FLOAT32, RONDO_SUM, &res->model);
  if (n == 0) { /* -a named only algorithms the selector passes over here */
    res->decision = res->model;
    res->why = "no candidate of -a at this size: the model's choice";
    return;
  }
  int model_at = -1;
  for (int i = 0; i < n; i++) {
    res->measured[cand[i]] = 1;
    if (cand[i] == res->model)
      model_at = i;
  }
  double t[MAX_ALGOS + 1][MEAS_MAX_ROUNDS];
  int r = 0, want = o->rounds;
  for (;;) {
    meas_rounds(m, cand, n, 0, count, r, want, t);
    r = want;
    double med[MAX_ALGOS];
    int best = 0, second = -1;
    for (int i = 0; i < n; i++) {
      med[i] = meas_median(t[i + 1], r);
      res->med[cand[i]] = med[i] * 1e6;
    }
    for (int i = 1; i < n; i++)
      if (med[i] < med[best])
        best = i;
    for (int i = 0; i < n; i++)
      if (i != best && (second < 0 || med[i] < med[second]))
        second = i;
    res->rounds = r;
    if (model_at >= 0 && med[model_at] <= (1 + o->margin) * med[best]) {
      res->decision = res->model;
      res->why = model_at == best ? "model's choice is fastest" : "model's choice within margin";
      return;
    }
    res->decision = cand[best];
    res->why = model_at >= 0 ? "faster than the model's choice" : "fastest (model's choice not measured)";
    int close = second >= 0 && med[second] < (1 + 2 * o->margin) * med[best];
    if (!close || r >= o->max_rounds)
      return;
    want = r + 2 <= o->max_rounds ? r + 2 : o->max_rounds;
  }
}

/* Step 4 of the header. */
static void smooth(size_result_t *res, int n, double margin)
{
  for (int i = 1; i + 1 < n; i++) {
    rondo_algo_t nb = res[i - 1].decision;
    if (res[i + 1].decision != nb || res[i].decision == nb || !res[i].measured[nb])
      continue;
    if (res[i].med[nb] <= (1 + margin) * res[i].med[res[i].decision]) {
      res[i].decision = nb;
      res[i].why = "smoothed: both neighbours' choice, within margin";
    }
  }
}

static int write_table(const bench_opts_t *o, rondo_comm_t comm, const size_result_t *res, int n,
                       int argc, char **argv)
{
  FILE *f = fopen(o->output, "w");
  if (f == NULL) {
    perror(o->output);
    return -1;
  }
  int ranks = meas_size(comm), nodes = meas_nodes(comm);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING], topo[1024], when[64];
  int len;
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, "\n")] = '\0';
  rondo_comm_topology(comm, topo, sizeof topo, NULL);
  time_t now = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime(&now));
  fprintf(f, "# rondo tuning table, written by rondo-bench tune (rondo %s) on %s\n", rondo_version_string(), when);
  fprintf(f, "# command:");
  for (int i = 0; i < argc; i++)
    fprintf(f, " %s", argv[i]);
  fprintf(f, "\n# %s\n# %s\n", topo, lib);
  fprintf(f, "# float32 sum, median of >= %d rounds, margin %.0f%%; medians in us per size:\n",
          o->rounds, o->margin * 100);
  for (int i = 0; i < n; i++) {
    fprintf(f, "#   %10zu", res[i].bytes);
    for (int a = 0; a < MAX_ALGOS; a++)
      if (res[i].measured[a])
        fprintf(f, " %s=%.2f", rondo_algo_name((rondo_algo_t)a), res[i].med[a]);
    fprintf(f, " -> %s\n", rondo_algo_name(res[i].decision));
  }
  fprintf(f, "# collective bytes ranks nodes mem algorithm\n");
  size_t lo = 0;
  for (int i = 0; i < n; i++) {
    if (i + 1 < n && res[i + 1].decision == res[i].decision)
      continue;
    const char *name = rondo_algo_name(res[i].decision);
    if (i + 1 < n) {
      size_t hi = res[i].bytes + (res[i + 1].bytes - res[i].bytes) / 2;
      fprintf(f, "allreduce %zu-%zu %d %d host %s\n", lo, hi, ranks, nodes, name);
      lo = hi + 1;
    } else {
      fprintf(f, "allreduce %zu- %d %d host %s\n", lo, ranks, nodes, name);
    }
  }
  if (fclose(f) != 0) {
    perror(o->output);
    return -1;
  }
  return 0;
}

int tune_main(const bench_opts_t *o)
{
  rondo_comm_t comm = rondo_world();
  int rank = meas_rank(comm);
  rondo_algo_t algos[MAX_ALGOS];
  const char *list = o->algo_list != NULL && strcmp(o->algo_list, "all") != 0 ? o->algo_list : NULL;
  int nalgos = meas_algos(comm, "rondo-bench", list, 0, algos);
  if (nalgos <= 0) {
    if (rank == 0)
      fprintf(stderr, "rondo-bench: tune: -a: expected names of algorithms this comm can run, "
                      "separated by commas (rondo-info lists them)\n");
    return 2;
  }
  meas_t m;
  if (meas_init(&m, o->maxbytes) != 0)
    return 1;
  if (rank == 0) {
    char topo[1024];
    rondo_comm_topology(comm, topo, sizeof topo, NULL);
    printf("# rondo-bench tune: %s\n", topo);
    if (o->ignored_table)
      printf("# ignoring RONDO_TUNING_FILE / RONDO_ALLREDUCE_ALGO: measuring the cost model\n");
    printf("# %10s %-18s %-18s %6s  %s\n", "bytes", "model", "decision", "rounds",
           "medians (us) and why");
    fflush(stdout);
  }
  size_t sizes[BENCH_MAX_SIZES];
  int nsizes = bench_sizes(o, sizes);
  size_result_t *res = calloc((size_t)nsizes, sizeof *res);
  if (res == NULL)
    bench_die("out of memory");
  int n = 0;
  for (int z = 0; z < nsizes; z++) {
    size_t b = sizes[z] / 4 * 4;
    if (b == 0 || (n > 0 && res[n - 1].bytes == b))
      continue;
    tune_size(&m, o, algos, nalgos, b, &res[n]);
    if (rank == 0) {
      printf("  %10zu %-18s %-18s %6d ", b, rondo_algo_name(res[n].model),
             rondo_algo_name(res[n].decision), res[n].rounds);
      for (int a = 0; a < MAX_ALGOS; a++)
        if (res[n].measured[a])
          printf(" %s=%.1f", rondo_algo_name((rondo_algo_t)a), res[n].med[a]);
      printf("  (%s)\n", res[n].why);
      fflush(stdout);
    }
    n++;
    char what[32];
    out_progress(o, z + 1, nsizes, out_bytes(b, what, sizeof what));
  }
  smooth(res, n, o->margin);
  long wrong = meas_wrong_total(&m);
  int rc = wrong != 0;
  if (rank == 0) {
    int overrides = 0;
    for (int i = 0; i < n; i++)
      overrides += res[i].decision != res[i].model;
    printf("# %d sizes, %d where measurements override the cost model; wrong results: %ld\n", n,
           overrides, wrong);
    if (wrong != 0)
      fprintf(stderr, "rondo-bench: tune: wrong results; no table written\n");
    else if (o->output != NULL && write_table(o, comm, res, n, o->argc, o->argv) == 0)
      printf("# tuning table written to %s (use: RONDO_TUNING_FILE=%s)\n", o->output, o->output);
    else if (o->output != NULL)
      rc = 1;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(res);
  meas_free(&m);
  return rc;
}
