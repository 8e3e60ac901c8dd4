/*
 * allreduce_calls: the time of single all-reduce calls, two algorithms
 * alternating, to see how one process's speed changes from call to call
 * (the sweep reports medians, which hide that).
 *
 *   mpiexec -n 2 bench/allreduce_calls [-s BYTES] [-a ALGO,ALGO] [-n CALLS] [-k PER]
 *
 * Each entry is algorithm:microseconds, the slowest rank's mean over PER
 * back-to-back calls after a barrier. float32 SUM, out of place; the
 * result is checked once at the end. Defaults: 32M, shm,ring, 12, 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rondo.h"
#include "base/numbers.h"
#include "tools/measure.h"

int main(int argc, char **argv)
{
  size_t bytes = (size_t)32 << 20;
  int calls = 12, per = 1;
  rondo_algo_t alg[2] = {RONDO_ALGO_SHM, RONDO_ALGO_RING};
  if (rondo_init(&argc, &argv) != RONDO_SUCCESS) {
    fprintf(stderr, "allreduce_calls: %s\n", rondo_last_error());
    return 1;
  }
  int bad = argc % 2 == 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-s") == 0) {
      bad |= rondo__parse_size(argv[i + 1], &bytes) != 0;
    } else if (strcmp(argv[i], "-n") == 0) {
      calls = atoi(argv[i + 1]);
    } else if (strcmp(argv[i], "-k") == 0) {
      per = atoi(argv[i + 1]);
    } else if (strcmp(argv[i], "-a") == 0) {
      char buf[128], *comma;
      snprintf(buf, sizeof buf, "%s", argv[i + 1]);
      if ((comma = strchr(buf, ',')) != NULL)
        *comma++ = '\0';
      bad |= rondo_algo_from_name(buf, &alg[0]) != RONDO_SUCCESS;
      alg[1] = alg[0];
      if (comma != NULL)
        bad |= rondo_algo_from_name(comma, &alg[1]) != RONDO_SUCCESS;
    } else {
      bad = 1;
    }
  }
  if (bad || bytes < 4 || calls < 1 || per < 1) {
    fprintf(stderr, "usage: allreduce_calls [-s BYTES] [-a ALGO[,ALGO]] [-n CALLS] [-k PER]\n");
    rondo_finalize();
    return 2;
  }
  rondo_comm_t comm = rondo_world();
  int rank = meas_rank(comm), size = meas_size(comm);
  size_t n = bytes / sizeof(float);
  float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
  if (in == NULL || out == NULL) {
    fprintf(stderr, "allreduce_calls: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < n; i++)
    in[i] = (float)(rank + 1);
  for (int c = 0; c < calls; c++) {
    rondo_algo_t a = alg[c % 2];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < per; k++)
      if (rondo_allreduce_algo(comm, in, out, n, RONDO_FLOAT32, RONDO_SUM, a) != RONDO_SUCCESS) {
        fprintf(stderr, "allreduce_calls: %s\n", rondo_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    double t = (MPI_Wtime() - t0) / per, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
      printf("%s:%.0f ", rondo_algo_name(a), tmax * 1e6);
  }
  long wrong = 0, all;
  for (size_t i = 0; i < n; i++)
    wrong += out[i] != (float)(size * (size + 1) / 2);
  MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("\n# wrong results: %ld\n", all);
  free(in);
  free(out);
  rondo_finalize();
  return all != 0;
}
