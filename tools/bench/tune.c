/*
 * rondo-bench tune: measures every eligible algorithm of each family
 * (all-reduce, reduce-scatter, all-gather; --collective picks) over a size
 * sweep on the ranks it runs on and writes a tuning table for
 * RONDO_TUNING_FILE.
 *
 *   mpiexec -n 2 rondo-bench tune --output tuning.txt
 *
 * A size is rondo-bench's: the whole buffer (ranks x block for
 * reduce-scatter and all-gather, as the table's byte ranges count it),
 * rounded down to whole float32 blocks.
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

/* Floats per rank block of a call on the whole buffer of bytes: the call's
 * count argument. */
static size_t call_count(rondo_coll_t coll, size_t bytes, int ranks)
{
  return bytes / sizeof(float) / (coll == RONDO_COLL_ALLREDUCE ? 1 : (size_t)ranks);
}

/* Steps 1-3 of the header for one size of m->coll. */
static void tune_size(meas_t *m, const bench_opts_t *o, const rondo_algo_t *all, int nall,
                      size_t bytes, size_result_t *res)
{
  size_t count = call_count(m->coll, bytes, meas_size(m->comm));
  rondo_algo_t cand[MAX_ALGOS];
  int n = 0;
  for (int i = 0; i < nall; i++) {
    /* Candidates: what the selector would consider at this size (not
     * hierarchical on one node). */
    const char *why = NULL;
    if (rondo_coll_algo_available(m->comm, m->coll, all[i], count, RONDO_FLOAT32, RONDO_SUM,
                                  &why) == RONDO_SUCCESS &&
        why == NULL)
      cand[n++] = all[i];
  }
  memset(res, 0, sizeof *res);
  res->bytes = bytes;
  rondo_coll_choice(m->comm, m->coll, count, RONDO_FLOAT32, RONDO_SUM, &res->model);
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

/* One family's measured sizes: what write_table prints of it. */
typedef struct {
  rondo_coll_t coll;
  size_result_t *res;
  int n;
  long wrong;        /* wrong elements over all ranks */
  char wrong_in[160]; /* the algorithms that had them */
} family_result_t;

/* Runs of sizes with the same decision become one rule, from 0 to open;
 * boundaries lie halfway between measured sizes. */
static void write_rules(FILE *f, const family_result_t *fr, int ranks, int nodes)
{
  const size_result_t *res = fr->res;
  const char *coll = rondo_coll_name(fr->coll);
  size_t lo = 0;
  for (int i = 0; i < fr->n; i++) {
    if (i + 1 < fr->n && res[i + 1].decision == res[i].decision)
      continue;
    const char *name = rondo_algo_name(res[i].decision);
    if (i + 1 < fr->n) {
      size_t hi = res[i].bytes + (res[i + 1].bytes - res[i].bytes) / 2;
      fprintf(f, "%s %zu-%zu %d %d host %s\n", coll, lo, hi, ranks, nodes, name);
      lo = hi + 1;
    } else {
      fprintf(f, "%s %zu- %d %d host %s\n", coll, lo, ranks, nodes, name);
    }
  }
}

static int write_table(const bench_opts_t *o, rondo_comm_t comm, const family_result_t *fr,
                       int nfam, int argc, char **argv)
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
  fprintf(f, "# float32 sum, median of >= %d rounds, margin %.0f%%; medians in us per size "
          "(the whole buffer, ranks x block for reduce_scatter and allgather):\n",
          o->rounds, o->margin * 100);
  for (int k = 0; k < nfam; k++)
    for (int i = 0; i < fr[k].n; i++) {
      const size_result_t *r = &fr[k].res[i];
      fprintf(f, "#   %-14s %10zu", rondo_coll_name(fr[k].coll), r->bytes);
      for (int a = 0; a < MAX_ALGOS; a++)
        if (r->measured[a])
          fprintf(f, " %s=%.2f", rondo_algo_name((rondo_algo_t)a), r->med[a]);
      fprintf(f, " -> %s\n", rondo_algo_name(r->decision));
    }
  fprintf(f, "# collective bytes ranks nodes mem algorithm\n");
  for (int k = 0; k < nfam; k++)
    write_rules(f, &fr[k], ranks, nodes);
  if (fclose(f) != 0) {
    perror(o->output);
    return -1;
  }
  return 0;
}

/* The algorithms of coll to measure, into out[MAX_ALGOS]: -a's names that
 * the family runs on this comm (a large float32 sum), or without -a every
 * one it runs and the selector would consider; each size then keeps those
 * the selector would consider there. used[i] is set for the i-th name of
 * -a that the family took. Returns the count. */
static int family_algos(rondo_comm_t comm, rondo_coll_t coll, const char *list, int *used,
                        rondo_algo_t *out)
{
  const size_t count = (size_t)1 << 20; /* large: every rule of the table applies */
  int n = 0, i = 0;
  if (list == NULL) {
    for (int a = RONDO_ALGO_AUTO + 1; a < RONDO_ALGO_COUNT; a++) {
      const char *why = NULL;
      if (rondo_coll_algo_available(comm, coll, (rondo_algo_t)a, count, RONDO_FLOAT32, RONDO_SUM,
                                    &why) == RONDO_SUCCESS &&
          why == NULL)
        out[n++] = (rondo_algo_t)a;
    }
    return n;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save, *tok = strtok_r(buf, ",", &save); tok != NULL && n < MAX_ALGOS;
       tok = strtok_r(NULL, ",", &save), i++) {
    rondo_algo_t a;
    if (rondo_algo_from_name(tok, &a) == RONDO_SUCCESS && a != RONDO_ALGO_AUTO &&
        rondo_coll_algo_available(comm, coll, a, count, RONDO_FLOAT32, RONDO_SUM, NULL) ==
            RONDO_SUCCESS) {
      out[n++] = a;
      used[i] = 1;
    }
  }
  return n;
}

/* A name of -a that no family of the run can run here (auto, nccl on host
 * buffers): rank 0 says why; 1. 0 when every name was taken. */
static int unused_name(rondo_comm_t comm, const bench_opts_t *o, const char *list,
                       const int *used)
{
  char buf[256];
  int i = 0;
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save, *tok = strtok_r(buf, ",", &save); tok != NULL;
       tok = strtok_r(NULL, ",", &save), i++) {
    if (used[i])
      continue;
    if (meas_rank(comm) != 0)
      return 1;
    rondo_algo_t a = RONDO_ALGO_AUTO;
    rondo_algo_from_name(tok, &a);
    if (a == RONDO_ALGO_AUTO) {
      fprintf(stderr, "rondo-bench: tune: -a auto: expected names of algorithms this comm can "
                      "run, separated by commas (rondo-info lists them)\n");
      return 1;
    }
    fprintf(stderr, "rondo-bench: tune: -a %s: ", tok);
    for (int c = 0, first = 1; c < RONDO_COLL_COUNT; c++)
      if (o->colls & (1u << c)) { /* each family's refusal */
        rondo_coll_algo_available(comm, (rondo_coll_t)c, a, (size_t)1 << 20, RONDO_FLOAT32,
                                  RONDO_SUM, NULL);
        fprintf(stderr, "%s%s", first ? "" : "; ", rondo_last_error());
        first = 0;
      }
    fprintf(stderr, "\n");
    return 1;
  }
  return 0;
}

/* The family's wrong elements over all ranks, and which algorithms had
 * them (m's counts start again for the next family). Collective. */
static void wrong_results(meas_t *m, family_result_t *fr)
{
  long by[RONDO_ALGO_COUNT];
  MPI_Allreduce(m->wrong_by, by, RONDO_ALGO_COUNT, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (int a = 0; a < RONDO_ALGO_COUNT; a++) {
    fr->wrong += by[a];
    size_t at = strlen(fr->wrong_in);
    if (by[a] != 0)
      snprintf(fr->wrong_in + at, sizeof fr->wrong_in - at, "%s%s", at ? ", " : "",
               a == RONDO_ALGO_AUTO ? "MPI's own call" : rondo_algo_name((rondo_algo_t)a));
    m->wrong_by[a] = 0;
  }
}

/* One family over the sweep: steps 1-4 of the header, a line per size.
 * Fills fr (res allocated here); total and *step: the progress. */
static void tune_family(meas_t *m, const bench_opts_t *o, const rondo_algo_t *algos, int nalgos,
                        family_result_t *fr, int total, int *step)
{
  size_t sizes[BENCH_MAX_SIZES];
  int nsizes = bench_sizes(o, sizes), ranks = meas_size(m->comm);
  fr->res = calloc((size_t)nsizes, sizeof *fr->res);
  if (fr->res == NULL)
    bench_die("out of memory");
  m->coll = fr->coll;
  size_t unit = sizeof(float) * (fr->coll == RONDO_COLL_ALLREDUCE ? 1 : (size_t)ranks);
  const char *coll = rondo_coll_name(fr->coll);
  for (int z = 0; z < nsizes; z++) {
    size_t b = sizes[z] / unit * unit; /* whole float32 blocks */
    char what[48];
    snprintf(what, sizeof what, "%s ", coll);
    out_bytes(sizes[z], what + strlen(what), sizeof what - strlen(what));
    out_progress(o, ++*step, total, what);
    if (b == 0 || (fr->n > 0 && fr->res[fr->n - 1].bytes == b))
      continue;
    size_result_t *r = &fr->res[fr->n++];
    tune_size(m, o, algos, nalgos, b, r);
    if (meas_rank(m->comm) == 0) {
      printf("  %-14s %10zu %-18s %-18s %6d ", coll, b, rondo_algo_name(r->model),
             rondo_algo_name(r->decision), r->rounds);
      for (int a = 0; a < MAX_ALGOS; a++)
        if (r->measured[a])
          printf(" %s=%.1f", rondo_algo_name((rondo_algo_t)a), r->med[a]);
      printf("  (%s)\n", r->why);
      fflush(stdout);
    }
  }
  smooth(fr->res, fr->n, o->margin);
  wrong_results(m, fr);
}

int tune_main(const bench_opts_t *o)
{
  rondo_comm_t comm = rondo_world();
  int rank = meas_rank(comm);
  const char *list = o->algo_list != NULL && strcmp(o->algo_list, "all") != 0 ? o->algo_list : NULL;
  rondo_algo_t algos[RONDO_COLL_COUNT][MAX_ALGOS];
  int nalgos[RONDO_COLL_COUNT] = {0}, used[128] = {0}; /* -a's names: at most 64 fit */
  family_result_t fr[RONDO_COLL_COUNT];
  int nfam = 0;
  for (int c = 0; c < RONDO_COLL_COUNT; c++)
    if (o->colls & (1u << c)) {
      nalgos[nfam] = family_algos(comm, (rondo_coll_t)c, list, used, algos[nfam]);
      fr[nfam++] = (family_result_t){(rondo_coll_t)c, NULL, 0, 0, ""};
    }
  if (list != NULL && unused_name(comm, o, list, used))
    return 2;
  meas_t m;
  if (meas_init(&m, o->maxbytes) != 0)
    return 1;
  if (rank == 0) {
    char topo[1024];
    rondo_comm_topology(comm, topo, sizeof topo, NULL);
    printf("# rondo-bench tune: %s\n", topo);
    if (o->ignored_table)
      printf("# ignoring RONDO_TUNING_FILE / RONDO_*_ALGO: measuring the cost model\n");
    printf("# %-14s %10s %-18s %-18s %6s  %s\n", "collective", "bytes", "model", "decision",
           "rounds", "medians (us) and why");
    fflush(stdout);
  }
  size_t sizes[BENCH_MAX_SIZES];
  int total = nfam * bench_sizes(o, sizes), step = 0;
  for (int k = 0; k < nfam; k++)
    tune_family(&m, o, algos[k], nalgos[k], &fr[k], total, &step);
  long wrong = meas_wrong_total(&m);
  int rc = wrong != 0;
  if (rank == 0) {
    for (int k = 0; k < nfam; k++) {
      int overrides = 0;
      for (int i = 0; i < fr[k].n; i++)
        overrides += fr[k].res[i].decision != fr[k].res[i].model;
      printf("# %s: %d sizes, %d where measurements override the cost model; wrong results: "
             "%ld%s%s\n", rondo_coll_name(fr[k].coll), fr[k].n, overrides, fr[k].wrong,
             fr[k].wrong ? " in " : "", fr[k].wrong_in);
    }
    printf("# wrong results: %ld\n", wrong);
    if (wrong != 0)
      fprintf(stderr, "rondo-bench: tune: wrong results; no table written\n");
    else if (o->output != NULL && write_table(o, comm, fr, nfam, o->argc, o->argv) == 0)
      printf("# tuning table written to %s (use: RONDO_TUNING_FILE=%s)\n", o->output, o->output);
    else if (o->output != NULL)
      rc = 1;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (int k = 0; k < nfam; k++)
    free(fr[k].res);
  meas_free(&m);
  return rc;
}
