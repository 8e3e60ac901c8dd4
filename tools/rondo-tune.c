/*
 * rondo-tune: measures every eligible all-reduce algorithm over a size sweep
 * on the ranks it runs on and writes a tuning table for RONDO_TUNING_FILE.
 *
 *   mpiexec -n 2 rondo-tune -o tuning.txt
 *
 * Per size (tools/measure.h has how one round is timed):
 *   1. every candidate runs r rounds, taking turns; each gets its median;
 *   2. the cost model's own choice is kept unless another algorithm is more
 *      than the margin (-m, 5%) faster: a table entry should correct the
 *      model where it is wrong, not chase noise where it is close;
 *   3. when the decision overrides the model and the winner leads the
 *      runner-up by less than twice the margin, two more rounds are run, up
 *      to -R rounds in all, and step 2 is repeated on all of them;
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

#include "rondo.h"
#include "tools/measure.h"
#include "tools/parse_size.h"

enum { MAX_ALGOS = RONDO_ALGO_COUNT, MAX_SIZES = 64 };

typedef struct {
  size_t bytes;
  rondo_algo_t model, decision;
  int rounds;
  int measured[MAX_ALGOS];   /* by algorithm: 1 if a candidate at this size */
  double med[MAX_ALGOS];     /* by algorithm, microseconds */
  const char *why;
} size_result_t;

typedef struct {
  size_t min_bytes, max_bytes;
  int factor, rounds, max_rounds;
  double margin;             /* fraction */
  const char *out_path, *algo_list;
  int quiet;
} options_t;

static void usage(FILE *f)
{
  fprintf(f,
          "usage: mpiexec -n N rondo-tune [-o FILE] [-b MIN] [-e MAX] [-f FACTOR] [-r ROUNDS]\n"
          "                              [-R MAX_ROUNDS] [-m PERCENT] [-a ALGO,...] [-q]\n"
          "Measures the all-reduce algorithms on these ranks and writes a tuning table.\n"
          "  -o FILE      write the table to FILE (default: print the measurements only)\n"
          "  -b MIN       smallest message in bytes, K/M/G suffixes (default 4)\n"
          "  -e MAX       largest message (default 64M)\n"
          "  -f FACTOR    size factor between steps, >= 2 (default 2)\n"
          "  -r ROUNDS    rounds per size (default 7)\n"
          "  -R ROUNDS    rounds at most, for close calls (default 21, at most %d)\n"
          "  -m PERCENT   keep the cost model's choice unless another algorithm is more\n"
          "               than PERCENT faster (default 5)\n"
          "  -a ALGO,...  candidates (default: every host algorithm the comm can run)\n"
          "  -q           no per-size lines\n",
          MEAS_MAX_ROUNDS);
}

/* 0 on success, 2 on bad usage (message printed by rank 0), 3 after -h. */
static int parse_options(int argc, char **argv, options_t *o, int rank)
{
  *o = (options_t){.min_bytes = 4, .max_bytes = (size_t)64 << 20, .factor = 2, .rounds = 7,
                   .max_rounds = 21, .margin = 0.05};
  int c;
  char *end;
  opterr = 0;
  while ((c = getopt(argc, argv, "o:b:e:f:r:R:m:a:qh")) != -1) {
    switch (c) {
    case 'o': o->out_path = optarg; break;
    case 'b': o->min_bytes = parse_size(optarg); break;
    case 'e': o->max_bytes = parse_size(optarg); break;
    case 'f': o->factor = (int)strtol(optarg, &end, 10); if (*end) o->factor = 0; break;
    case 'r': o->rounds = (int)strtol(optarg, &end, 10); if (*end) o->rounds = 0; break;
    case 'R': o->max_rounds = (int)strtol(optarg, &end, 10); if (*end) o->max_rounds = 0; break;
    case 'm': o->margin = strtod(optarg, &end) / 100; if (*end) o->margin = -1; break;
    case 'a': o->algo_list = optarg; break;
    case 'q': o->quiet = 1; break;
    case 'h': if (rank == 0) usage(stdout); return 3;
    default:
      if (rank == 0)
        fprintf(stderr, "rondo-tune: unknown option or missing value: -%c\n", optopt);
      return 2;
    }
  }
  const char *bad = NULL;
  if (optind < argc) bad = "unexpected argument";
  else if (o->min_bytes < 4) bad = "-b: need a byte count >= 4";
  else if (o->max_bytes < o->min_bytes) bad = "-e: must be >= -b";
  else if (o->factor < 2) bad = "-f: need an integer >= 2";
  else if (o->rounds < 1 || o->rounds > MEAS_MAX_ROUNDS) bad = "-r: out of range";
  else if (o->max_rounds < o->rounds || o->max_rounds > MEAS_MAX_ROUNDS) bad = "-R: must be >= -r and in range";
  else if (o->margin < 0 || o->margin > 1) bad = "-m: need a percentage 0..100";
  if (bad != NULL) {
    if (rank == 0) {
      fprintf(stderr, "rondo-tune: %s\n", bad);
      usage(stderr);
    }
    return 2;
  }
  return 0;
}

/* Steps 1-3 of the header for one size. */
static void tune_size(meas_t *m, const options_t *o, const rondo_algo_t *all, int nall,
                      size_t bytes, size_result_t *res)
{
  size_t count = bytes / sizeof(float);
  rondo_algo_t cand[MAX_ALGOS];
  int n = 0;
  for (int i = 0; i < nall; i++)
    if (all[i] != RONDO_ALGO_RABENSEIFNER ||
        count >= (size_t)meas_pof2(rondo_comm_size(m->comm)))
      cand[n++] = all[i];
  memset(res, 0, sizeof *res);
  res->bytes = bytes;
  rondo_allreduce_choice(m->comm, count, RONDO_FLOAT32, RONDO_SUM, &res->model);
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

static int write_table(const options_t *o, rondo_comm_t comm, const size_result_t *res, int n,
                       int argc, char **argv)
{
  FILE *f = fopen(o->out_path, "w");
  if (f == NULL) {
    perror(o->out_path);
    return -1;
  }
  int ranks = rondo_comm_size(comm), nodes = rondo_comm_node_count(comm);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING], topo[256], when[64];
  int len;
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, "\n")] = '\0';
  rondo_comm_topology(comm, topo, sizeof topo);
  time_t now = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime(&now));
  fprintf(f, "# rondo tuning table, written by rondo-tune (rondo %s) on %s\n", rondo_version_string(), when);
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
    perror(o->out_path);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv)
{
  /* Time the algorithms, not the argument check; measure the model's own
   * choice, not an older table's or a forced one. */
  setenv("RONDO_CHECK_ARGS", "0", 0);
  int had_table = getenv("RONDO_TUNING_FILE") != NULL, had_forced = getenv("RONDO_ALLREDUCE_ALGO") != NULL;
  unsetenv("RONDO_TUNING_FILE");
  unsetenv("RONDO_ALLREDUCE_ALGO");
  if (rondo_init(&argc, &argv) != RONDO_SUCCESS) {
    fprintf(stderr, "rondo-tune: %s\n", rondo_last_error());
    return 1;
  }
  rondo_comm_t comm = rondo_world();
  int rank = rondo_comm_rank(comm);
  options_t o;
  rondo_algo_t algos[MAX_ALGOS];
  int rc = parse_options(argc, argv, &o, rank), nalgos = 0;
  if (rc == 0 && (nalgos = meas_algos(comm, o.algo_list, 0, algos)) <= 0) {
    if (rank == 0)
      fprintf(stderr, "rondo-tune: -a: expected host algorithm names separated by commas "
                      "(mpi, ring, recursive_doubling, rabenseifner, shm, hierarchical)\n");
    rc = 2;
  }
  meas_t m;
  if (rc == 0 && meas_init(&m, o.max_bytes) != 0)
    rc = 1;
  if (rc != 0) {
    rondo_finalize();
    return rc == 3 ? 0 : rc;
  }
  if (rank == 0) {
    char topo[256];
    rondo_comm_topology(comm, topo, sizeof topo);
    printf("# rondo-tune: %s\n", topo);
    if (had_table || had_forced)
      printf("# ignoring RONDO_TUNING_FILE / RONDO_ALLREDUCE_ALGO: measuring the cost model\n");
    if (!o.quiet)
      printf("# %10s %-18s %-18s %6s  %s\n", "bytes", "model", "decision", "rounds",
             "medians (us) and why");
    fflush(stdout);
  }
  size_result_t res[MAX_SIZES];
  int n = 0;
  for (size_t b = o.min_bytes; b <= o.max_bytes && n < MAX_SIZES; b *= (size_t)o.factor) {
    tune_size(&m, &o, algos, nalgos, b, &res[n]);
    if (rank == 0 && !o.quiet) {
      printf("  %10zu %-18s %-18s %6d ", b, rondo_algo_name(res[n].model),
             rondo_algo_name(res[n].decision), res[n].rounds);
      for (int a = 0; a < MAX_ALGOS; a++)
        if (res[n].measured[a])
          printf(" %s=%.1f", rondo_algo_name((rondo_algo_t)a), res[n].med[a]);
      printf("  (%s)\n", res[n].why);
      fflush(stdout);
    }
    n++;
  }
  smooth(res, n, o.margin);
  long wrong = meas_wrong_total(&m);
  rc = wrong != 0;
  if (rank == 0) {
    int overrides = 0;
    for (int i = 0; i < n; i++)
      overrides += res[i].decision != res[i].model;
    printf("# %d sizes, %d where measurements override the cost model; wrong results: %ld\n", n,
           overrides, wrong);
    if (wrong != 0)
      fprintf(stderr, "rondo-tune: wrong results; no table written\n");
    else if (o.out_path != NULL && write_table(&o, comm, res, n, argc, argv) == 0)
      printf("# tuning table written to %s (use: RONDO_TUNING_FILE=%s)\n", o.out_path, o.out_path);
    else if (o.out_path != NULL)
      rc = 1;
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  meas_free(&m);
  rondo_finalize();
  return rc;
}
