/*
 * allreduce_sweep: times every rondo all-reduce algorithm against
 * MPI_Allreduce in the same run, float32 SUM, over a size sweep.
 *
 *   mpiexec -n 2 bench/allreduce_sweep [-b 4] [-e 64M] [-f 4] [-r 5] [-a ring,shm,...]
 *
 * For each size, the algorithms take turns for r rounds (so a noisy moment
 * of the shared machine hits all of them alike); a round runs enough
 * iterations for ~20 ms after a warm-up, between barriers; the time of a
 * round is the slowest rank's mean; the median round is reported.
 * "mpi" is rondo's wrapper around MPI_Allreduce; "MPI_Allreduce" is the raw
 * call on a communicator of its own, the baseline of the ratio columns
 * (ratio > 1: faster than MPI_Allreduce). Every result is checked: the
 * inputs make the float sum exact in any order. -a picks the algorithms
 * (default: every one AUTO may pick on this comm: shm within one node,
 * hierarchical across nodes).
 *
 * Tuning: -t FILE writes a tuning table (docs/tuning.md) with, for this comm
 * size and node count, the fastest forced algorithm of each measured size
 * (ranges split halfway between measured sizes). When auto is in the set,
 * the footer says at how many sizes auto was within 10% of the fastest
 * forced algorithm: run once with -t, then again with RONDO_TUNING_FILE.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rondo.h"
#include "tools/parse_size.h"

#define MAX_ROUNDS 15
#define MAX_SIZES 64
enum { MAX_ALGOS = RONDO_ALGO_COUNT };
static int N_ALGOS;
static rondo_algo_t algos[MAX_ALGOS];

/* -a list, or every host algorithm the comm can run, then auto. */
static int pick_algos(rondo_comm_t comm, const char *list)
{
  static const rondo_algo_t all[] = {RONDO_ALGO_MPI, RONDO_ALGO_RECURSIVE_DOUBLING,
                                     RONDO_ALGO_RABENSEIFNER, RONDO_ALGO_RING,
                                     RONDO_ALGO_SHM, RONDO_ALGO_HIERARCHICAL, RONDO_ALGO_AUTO};
  if (list == NULL) {
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
      if ((all[i] != RONDO_ALGO_SHM || rondo_comm_node_count(comm) == 1) &&
          (all[i] != RONDO_ALGO_HIERARCHICAL || rondo_comm_node_count(comm) > 1))
        algos[N_ALGOS++] = all[i];
    return 0;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
    if (N_ALGOS == MAX_ALGOS || rondo_algo_from_name(tok, &algos[N_ALGOS]) != RONDO_SUCCESS)
      return -1;
    N_ALGOS++;
  }
  return N_ALGOS > 0 ? 0 : -1;
}

static int cmp_double(const void *x, const void *y)
{
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* One timed round of `iters` calls; returns the slowest rank's mean (s).
 * which < 0 runs raw MPI_Allreduce on mpi_comm. */
static double round_time(rondo_comm_t comm, MPI_Comm mpi_comm, int which, float *in,
                         float *out, size_t count, int iters)
{
  MPI_Barrier(mpi_comm);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) {
    if (which < 0)
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, mpi_comm);
    else if (rondo_allreduce_algo(comm, in, out, count, RONDO_FLOAT32, RONDO_SUM,
                                  algos[which]) != RONDO_SUCCESS) {
      fprintf(stderr, "allreduce_sweep: %s\n", rondo_last_error());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  double t = (MPI_Wtime() - t0) / iters, tmax;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, mpi_comm);
  return tmax;
}

static long check(const float *out, size_t count, int size)
{
  long wrong = 0;
  for (size_t i = 0; i < count; i++) {
    /* sum over ranks r of (r + 1) * (i % 17) */
    float want = (float)((size * (size + 1) / 2) * (int)(i % 17));
    wrong += out[i] != want;
  }
  return wrong;
}

/* One rule per run of sizes with the same winner; boundaries halfway between
 * measured sizes, the first rule from 0 and the last one open. */
static int write_tuning(const char *path, rondo_comm_t comm, const size_t *sizes,
                        const rondo_algo_t *winners, int n)
{
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    return -1;
  }
  int ranks = rondo_comm_size(comm), nodes = rondo_comm_node_count(comm);
  fprintf(f, "# rondo tuning table, written by allreduce_sweep -t (rondo %s)\n"
             "# %d ranks on %d node(s), float32 sum; the fastest forced algorithm per size\n"
             "# collective bytes ranks nodes mem algorithm\n",
          rondo_version_string(), ranks, nodes);
  size_t lo = 0;
  for (int i = 0; i < n; i++) {
    if (i + 1 < n && winners[i + 1] == winners[i])
      continue;
    if (i + 1 < n) {
      size_t hi = sizes[i] + (sizes[i + 1] - sizes[i]) / 2;
      fprintf(f, "allreduce %zu-%zu %d %d host %s\n", lo, hi, ranks, nodes,
              rondo_algo_name(winners[i]));
      lo = hi;
    } else {
      fprintf(f, "allreduce %zu- %d %d host %s\n", lo, ranks, nodes,
              rondo_algo_name(winners[i]));
    }
  }
  if (fclose(f) != 0) {
    perror(path);
    return -1;
  }
  printf("# tuning table written to %s\n", path);
  return 0;
}

int main(int argc, char **argv)
{
  size_t min_bytes = 4, max_bytes = 64u << 20;
  int factor = 4, rounds = 5;
  const char *algo_list = NULL, *tune_path = NULL;
  size_t sizes[MAX_SIZES];
  rondo_algo_t winners[MAX_SIZES];
  int nsizes = 0, auto_ok = 0, auto_sizes = 0;
  /* Measure the algorithms, not the argument check (RONDO_CHECK_ARGS=1 adds
   * one small all-reduce per call); the user's setting wins. */
  setenv("RONDO_CHECK_ARGS", "0", 0);
  if (rondo_init(&argc, &argv) != RONDO_SUCCESS) {
    fprintf(stderr, "allreduce_sweep: %s\n", rondo_last_error());
    return 1;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-b") == 0) min_bytes = parse_size(argv[i + 1]);
    else if (strcmp(argv[i], "-e") == 0) max_bytes = parse_size(argv[i + 1]);
    else if (strcmp(argv[i], "-f") == 0) factor = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-r") == 0) rounds = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-a") == 0) algo_list = argv[i + 1];
    else if (strcmp(argv[i], "-t") == 0) tune_path = argv[i + 1];
  }
  if (factor < 2 || rounds < 1 || rounds > MAX_ROUNDS || min_bytes < 4 ||
      max_bytes < min_bytes || pick_algos(rondo_world(), algo_list) != 0) {
    fprintf(stderr, "usage: allreduce_sweep [-b MIN] [-e MAX] [-f FACTOR>=2] [-r 1..%d] "
                    "[-a ALGO,ALGO,...] [-t TUNING_FILE]\n",
            MAX_ROUNDS);
    rondo_finalize();
    return 2;
  }
  rondo_comm_t comm = rondo_world();
  int rank = rondo_comm_rank(comm), size = rondo_comm_size(comm);
  MPI_Comm base;
  MPI_Comm_dup(MPI_COMM_WORLD, &base);
  size_t max_count = max_bytes / sizeof(float);
  float *in = malloc(max_count * sizeof *in), *out = malloc(max_count * sizeof *out);
  if (!in || !out) {
    fprintf(stderr, "allreduce_sweep: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < max_count; i++)
    in[i] = (float)((rank + 1) * (int)(i % 17));

  if (rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    printf("# rondo %s, %d ranks on %d node(s), float32 sum, median of %d rounds, RONDO_CHECK_ARGS=%s\n",
           rondo_version_string(), size, rondo_comm_node_count(comm), rounds,
           getenv("RONDO_CHECK_ARGS"));
    printf("# %s\n", lib);
    printf("# time in us; ratio = MPI_Allreduce time / algorithm time (> 1 is faster)\n");
    printf("%10s %13s", "bytes", "MPI_Allreduce");
    for (int a = 0; a < N_ALGOS; a++)
      printf(" %18s", rondo_algo_name(algos[a]));
    printf("  auto->\n");
  }
  long wrong_total = 0;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= (size_t)factor) {
    size_t count = bytes / sizeof(float);
    int iters = (int)(64.0 * 1024 * 1024 / (double)bytes);
    iters = iters < 5 ? 5 : iters > 2000 ? 2000 : iters;
    double t[MAX_ALGOS + 1][MAX_ROUNDS];
    for (int w = -1; w < N_ALGOS; w++) /* warm-up, unmeasured */
      round_time(comm, base, w, in, out, count, 2);
    for (int r = 0; r < rounds; r++)
      for (int w = -1; w < N_ALGOS; w++) {
        t[w + 1][r] = round_time(comm, base, w, in, out, count, iters);
        long wrong = check(out, count, size);
        wrong_total += wrong;
      }
    double med[MAX_ALGOS + 1];
    for (int w = 0; w <= N_ALGOS; w++) {
      qsort(t[w], (size_t)rounds, sizeof(double), cmp_double);
      med[w] = t[w][rounds / 2] * 1e6;
    }
    rondo_algo_t choice;
    rondo_allreduce_choice(comm, count, RONDO_FLOAT32, RONDO_SUM, &choice);
    /* the fastest forced algorithm, and how auto did against it */
    int best = -1, auto_at = -1;
    for (int a = 0; a < N_ALGOS; a++) {
      if (algos[a] == RONDO_ALGO_AUTO)
        auto_at = a;
      else if (best < 0 || med[a + 1] < med[best + 1])
        best = a;
    }
    if (nsizes < MAX_SIZES && best >= 0) {
      sizes[nsizes] = bytes;
      winners[nsizes++] = algos[best];
    }
    if (auto_at >= 0 && best >= 0) {
      auto_sizes++;
      auto_ok += med[auto_at + 1] <= 1.10 * med[best + 1];
    }
    if (rank == 0) {
      printf("%10zu %13.2f", bytes, med[0]);
      for (int a = 1; a <= N_ALGOS; a++)
        printf(" %10.2f (%5.2fx)", med[a], med[0] / med[a]);
      printf("  %s\n", rondo_algo_name(choice));
      fflush(stdout);
    }
  }
  long all_wrong = 0;
  MPI_Allreduce(&wrong_total, &all_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("# wrong results: %ld\n", all_wrong);
    if (auto_sizes > 0)
      printf("# auto within 10%% of the fastest forced algorithm at %d of %d sizes (%.0f%%)\n",
             auto_ok, auto_sizes, 100.0 * auto_ok / auto_sizes);
    if (tune_path != NULL && write_tuning(tune_path, comm, sizes, winners, nsizes) != 0)
      all_wrong = -1;
  }
  MPI_Bcast(&all_wrong, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  free(in);
  free(out);
  MPI_Comm_free(&base);
  rondo_finalize();
  return all_wrong ? 1 : 0;
}
