/*
 * adasum_bench: what op RONDO_ADASUM costs against a plain sum of the same
 * float32 buffer, in the library's default configuration.
 *
 *   mpiexec -n 2 bench/adasum_bench [-b MIN] [-e MAX] [-r ROUNDS]
 *
 * Three rows per size take turns, round after round (each round starts
 * with the next row, so a noisy moment of a shared machine hits all
 * alike): rondo_allreduce with RONDO_ADASUM (the adasum algorithm),
 * rondo_allreduce_algo with RONDO_SUM on recursive_doubling (Adasum's
 * exchange, without the dot products and the combination) and
 * rondo_allreduce with RONDO_SUM (what the selector picks). A round runs
 * enough calls for about 20 ms; its time is the slowest rank's mean per
 * call; the table gives medians and the two ratios. Sizes go from MIN to
 * MAX by factors of 4 (defaults 4 and 64M). Adasum has no MPI_Allreduce to
 * compare with (rondo-bench measures the elementwise ops).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rondo.h"
#include "base/numbers.h"
#include "tools/measure.h"

enum { ROWS = 3 };

static const char *const row_names[ROWS] = {"adasum", "sum rd", "sum auto"};

static rondo_status_t call(rondo_comm_t comm, int row, const float *in, float *out, size_t n)
{
  if (row == 0)
    return rondo_allreduce(comm, in, out, n, RONDO_FLOAT32, RONDO_ADASUM);
  if (row == 1)
    return rondo_allreduce_algo(comm, in, out, n, RONDO_FLOAT32, RONDO_SUM,
                                RONDO_ALGO_RECURSIVE_DOUBLING);
  return rondo_allreduce(comm, in, out, n, RONDO_FLOAT32, RONDO_SUM);
}

/* The slowest rank's mean seconds per call over `calls` calls. */
static double timed(rondo_comm_t comm, int row, const float *in, float *out, size_t n, int calls)
{
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < calls; i++) {
    rondo_status_t st = call(comm, row, in, out, n);
    if (st != RONDO_SUCCESS) {
      fprintf(stderr, "adasum_bench: %s: %s\n", row_names[row], rondo_last_error());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  double mine = (MPI_Wtime() - t0) / calls, worst = 0;
  MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

int main(int argc, char **argv)
{
  size_t lo = 4, hi = (size_t)64 << 20;
  int rounds = 7;
  if (rondo_init(&argc, &argv) != RONDO_SUCCESS) {
    fprintf(stderr, "adasum_bench: %s\n", rondo_last_error());
    return 1;
  }
  int bad = argc % 2 == 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-b") == 0)
      bad |= rondo__parse_size(argv[i + 1], &lo) != 0;
    else if (strcmp(argv[i], "-e") == 0)
      bad |= rondo__parse_size(argv[i + 1], &hi) != 0;
    else if (strcmp(argv[i], "-r") == 0)
      rounds = atoi(argv[i + 1]);
    else
      bad = 1;
  }
  if (bad || lo < 4 || hi < lo || rounds < 1 || rounds > MEAS_MAX_ROUNDS) {
    fprintf(stderr, "usage: adasum_bench [-b MIN] [-e MAX] [-r ROUNDS (1..%d)]\n",
            MEAS_MAX_ROUNDS);
    rondo_finalize();
    return 2;
  }
  rondo_comm_t comm = rondo_world();
  int rank = meas_rank(comm), size = meas_size(comm);
  size_t maxn = hi / sizeof(float);
  float *in = malloc(maxn * sizeof *in), *out = malloc(maxn * sizeof *out);
  if (in == NULL || out == NULL) {
    fprintf(stderr, "adasum_bench: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < maxn; i++)
    in[i] = (float)((i * 7 + (size_t)rank * 13) % 101) / 50.0f - 1.0f;
  if (rank == 0) {
    char topo[1024] = "";
    rondo_comm_topology(comm, topo, sizeof topo, NULL);
    printf("# adasum_bench, rondo %s, %d ranks, float32, out of place, %d rounds; defaults "
           "(no RONDO_ALLREDUCE_ALGO for the adasum and sum auto rows)\n# %s\n",
           rondo_version_string(), size, rounds, topo);
    printf("%12s %12s %12s %12s %14s %14s\n", "bytes", "adasum us", "sum rd us", "sum auto us",
           "adasum/sum rd", "adasum/auto");
  }
  for (size_t bytes = lo; bytes <= hi; bytes *= 4) {
    size_t n = bytes / sizeof(float);
    int calls[ROWS];
    double t[ROWS][MEAS_MAX_ROUNDS];
    for (int row = 0; row < ROWS; row++) { /* warm-up: calls for ~20 ms */
      double one = timed(comm, row, in, out, n, 1);
      long k = (long)(MEAS_ROUND_SECONDS / (one > 1e-7 ? one : 1e-7));
      calls[row] = k < 1 ? 1 : k > 2000 ? 2000 : (int)k;
    }
    MPI_Bcast(calls, ROWS, MPI_INT, 0, MPI_COMM_WORLD);
    for (int r = 0; r < rounds; r++)
      for (int j = 0; j < ROWS; j++) {
        int row = (r + j) % ROWS;
        t[row][r] = timed(comm, row, in, out, n, calls[row]);
      }
    double med[ROWS];
    for (int row = 0; row < ROWS; row++)
      med[row] = meas_median(t[row], rounds);
    if (rank == 0)
      printf("%12zu %12.2f %12.2f %12.2f %14.2f %14.2f\n", bytes, med[0] * 1e6, med[1] * 1e6,
             med[2] * 1e6, med[0] / med[1], med[0] / med[2]);
    fflush(stdout);
  }
  free(in);
  free(out);
  rondo_finalize();
  return 0;
}
