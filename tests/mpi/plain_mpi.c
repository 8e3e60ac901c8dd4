/*
 * plain_mpi: an MPI program that knows nothing of rondo and prints the same
 * bytes on every run (rank 0 only), so tests/mpi/interpose-quiet.sh can
 * compare its output with and without librondo-mpi preloaded. It makes the
 * calls librondo-mpi takes over (RONDO_MPI_INTERCEPT=all), on
 * MPI_COMM_WORLD and on a duplicate, and checks each result.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size, wrong = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm comms[2] = {MPI_COMM_WORLD, dup};
  for (int c = 0; c < 2; c++) {
    double x[1000], y[1000];
    for (int i = 0; i < 1000; i++)
      x[i] = rank + i;
    MPI_Allreduce(x, y, 1000, MPI_DOUBLE, MPI_SUM, comms[c]);
    for (int i = 0; i < 1000; i++)
      wrong += y[i] != (double)size * (size - 1) / 2 + (double)size * i;
    int v = rank == 0 ? 42 : 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, comms[c]);
    wrong += v != 42;
    int all[64];
    MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, comms[c]);
    for (int r = 0; r < size && r < 64; r++)
      wrong += all[r] != r;
    MPI_Barrier(comms[c]);
  }
  MPI_Comm_free(&dup);
  int total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("plain_mpi (%d ranks): %d wrong results\n", size, total);
  MPI_Finalize();
  return total != 0;
}
