/*
 * demo: all-reduces with every algorithm this comm can run (the library's
 * table, asked through rondo_algo_available) and AUTO, checks the result
 * against the closed form and prints the time for a few sizes.
 *
 *   mpiexec -n 2 examples/demo
 */
#include <stdio.h>
#include <stdlib.h>

#include "rondo.h"

#define CHECK(call)                                                            \
  do {                                                                         \
    rondo_status_t st_ = (call);                                               \
    if (st_ != RONDO_SUCCESS) {                                                \
      fprintf(stderr, "%s: %s\n", #call, rondo_last_error());                  \
      MPI_Abort(MPI_COMM_WORLD, 1);                                            \
    }                                                                          \
  } while (0)

int main(int argc, char **argv)
{
  static const size_t counts[] = {1, 1000, 250000, 4000000};
  CHECK(rondo_init(&argc, &argv));
  rondo_comm_t world = rondo_world();
  int rank, size;
  CHECK(rondo_comm_rank(world, &rank));
  CHECK(rondo_comm_size(world, &size));
  size_t max = counts[sizeof counts / sizeof counts[0] - 1];
  float *x = malloc(max * sizeof *x), *sum = malloc(max * sizeof *sum);
  if (x == NULL || sum == NULL)
    MPI_Abort(MPI_COMM_WORLD, 1);
  for (size_t i = 0; i < max; i++)
    x[i] = (float)(rank + 1) * (float)(i % 100);
  /* Every algorithm that can run here (the answer is the same on every
   * rank), then AUTO. */
  rondo_algo_t algos[RONDO_ALGO_COUNT];
  size_t nalgos = 0;
  for (int a = RONDO_ALGO_AUTO + 1; a < RONDO_ALGO_COUNT; a++)
    if (rondo_algo_available(world, (rondo_algo_t)a, max, RONDO_FLOAT32, RONDO_SUM, NULL) ==
        RONDO_SUCCESS)
      algos[nalgos++] = (rondo_algo_t)a;
  algos[nalgos++] = RONDO_ALGO_AUTO;

  if (rank == 0)
    printf("rondo %s demo: %d ranks, float32 sum, time in us (mean of 10)\n%-20s",
           rondo_version_string(), size, "algorithm");
  for (size_t c = 0; rank == 0 && c < sizeof counts / sizeof counts[0]; c++)
    printf(" %10zu B", counts[c] * sizeof(float));
  int failures = 0;
  for (size_t a = 0; a < nalgos; a++) {
    if (rank == 0)
      printf("\n%-20s", rondo_algo_name(algos[a]));
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      CHECK(rondo_barrier(world));
      double t0 = MPI_Wtime();
      for (int it = 0; it < 10; it++)
        CHECK(rondo_allreduce_algo(world, x, sum, counts[c], RONDO_FLOAT32, RONDO_SUM,
                                   algos[a]));
      double us = (MPI_Wtime() - t0) / 10 * 1e6;
      for (size_t i = 0; i < counts[c]; i++)
        failures += sum[i] != (float)(size * (size + 1) / 2) * (float)(i % 100);
      if (rank == 0)
        printf(" %12.1f", us);
    }
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("\n%s: %d wrong elements on %d ranks\n", total ? "FAILED" : "ok", total, size);
  free(x);
  free(sum);
  CHECK(rondo_finalize());
  return total ? 1 : 0;
}
