/*
 * agree_cost: what the cross-rank argument check costs. For each size, in
 * interleaved rounds: rondo_allreduce() as programs call it (checked, AUTO),
 * the same call with the agreement skipped (agree_skip, an internal
 * switch that exists for this program), and MPI_Allreduce. Reports the median over rounds of the
 * slowest rank's mean time per call, and the ratios
 *   checked / unchecked   (the check's cost; 1.00 = none)
 *   MPI / checked         (above 1: rondo with its check beats MPI)
 *
 *   mpiexec -n 2 build/bench/agree_cost [-b 4] [-e 64M] [-f 4] [-r 7] [-a ALGO]
 *
 * -a forces an algorithm (rondo_allreduce_algo) instead of AUTO.
 *
 * Linked with the internal library (it sets agree_skip).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/agree/agree.h"
#include "base/numbers.h"
#include "tools/measure.h"

enum { WAYS = 3 };
static rondo_algo_t forced = RONDO_ALGO_AUTO;
static const char *const way_names[WAYS] = {"checked", "unchecked", "MPI_Allreduce"};

/* Mean seconds per call of `way` over n calls, the slowest rank's. */
static double time_way(rondo_comm_t c, int way, float *in, float *out, size_t count, int n)
{
  int failed = 0;
  MPI_Barrier(MPI_COMM_WORLD); /* c is rondo_world() */
  double t0 = MPI_Wtime();
  if (way < 2) {
    agree_skip = way == 1;
    for (int i = 0; i < n && !failed; i++)
      failed = rondo_allreduce_algo(c, in, out, count, RONDO_FLOAT32, RONDO_SUM, forced) != 0;
    agree_skip = 0;
  } else {
    for (int i = 0; i < n && !failed; i++)
      failed = MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != 0;
  }
  if (failed) {
    fprintf(stderr, "agree_cost: %s failed%s%s\n", way_names[way], way < 2 ? ": " : "",
            way < 2 ? rondo_last_error() : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double t = (MPI_Wtime() - t0) / n, slowest;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

int main(int argc, char **argv)
{
  size_t lo = 4, hi = (size_t)64 << 20;
  int factor = 4, rounds = 7, bad = argc % 2 == 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-b") == 0)
      bad |= rondo__parse_size(argv[i + 1], &lo) != 0;
    else if (strcmp(argv[i], "-e") == 0)
      bad |= rondo__parse_size(argv[i + 1], &hi) != 0;
    else if (strcmp(argv[i], "-f") == 0)
      factor = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-r") == 0)
      rounds = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-a") == 0)
      bad |= rondo_algo_from_name(argv[i + 1], &forced) != RONDO_SUCCESS;
    else
      bad = 1;
  }
  if (bad || lo < 4 || hi < lo || factor < 2 || rounds < 1) {
    fprintf(stderr, "usage: agree_cost [-b BYTES] [-e BYTES] [-f FACTOR] [-r ROUNDS] [-a ALGO]\n");
    return 2;
  }
  if (rondo_init(&argc, &argv) != RONDO_SUCCESS) {
    fprintf(stderr, "agree_cost: %s\n", rondo_last_error());
    return 1;
  }
  rondo_comm_t c = rondo_world();
  int rank = meas_rank(c);
  float *in = malloc(hi), *out = malloc(hi);
  for (size_t i = 0; i < hi / 4; i++)
    in[i] = (float)(i % 7);
  if (rank == 0)
    printf("# agree_cost: %d ranks on %d node(s), float32 sum, median of %d interleaved "
           "rounds, the library's defaults\n"
           "# %12s %-20s %11s %11s %11s %9s %9s\n",
           meas_size(c), meas_nodes(c), rounds, "bytes", "algorithm",
           "checked us", "unchecked", "MPI us", "chk/unchk", "MPI/chk");
  for (size_t bytes = lo; bytes <= hi; bytes *= (size_t)factor) {
    size_t count = bytes / 4;
    rondo_algo_t algo = forced;
    if (algo == RONDO_ALGO_AUTO &&
        rondo_allreduce_choice(c, count, RONDO_FLOAT32, RONDO_SUM, &algo) != RONDO_SUCCESS)
      break;
    /* about 20 ms of calls per way and round, at least 3 */
    double probe = time_way(c, 0, in, out, count, 3);
    int n = probe > 0 ? (int)fmin(2000, fmax(3, MEAS_ROUND_SECONDS / probe)) : 3;
    MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    double *t = malloc((size_t)WAYS * (size_t)rounds * sizeof *t), med[WAYS];
    for (int r = 0; r < rounds; r++)
      for (int k = 0; k < WAYS; k++) {
        int way = (k + r) % WAYS; /* a different order each round */
        t[way * rounds + r] = time_way(c, way, in, out, count, n);
      }
    for (int k = 0; k < WAYS; k++)
      med[k] = meas_median(t + k * rounds, rounds);
    if (rank == 0)
      printf("  %12zu %-20s %11.2f %11.2f %11.2f %9.3f %9.2f\n", bytes, rondo_algo_name(algo),
             med[0] * 1e6, med[1] * 1e6, med[2] * 1e6, med[0] / med[1], med[2] / med[0]);
    fflush(stdout);
    free(t);
  }
  free(in);
  free(out);
  rondo_finalize();
  return 0;
}
