/*
 * allreduce_sweep: times every rondo all-reduce algorithm against
 * MPI_Allreduce in the same run, float32 SUM, over a size sweep.
 *
 *   mpiexec -n 2 bench/allreduce_sweep [-b 4] [-e 64M] [-f 4] [-r 5] [-a ring,shm,...]
 *
 * tools/measure.h describes the method: the algorithms take turns for r
 * rounds, the median round is reported, every result is checked. "mpi" is
 * rondo's wrapper around MPI_Allreduce; "MPI_Allreduce" is the raw call on a
 * communicator of its own, the baseline of the ratio columns (ratio > 1:
 * faster than MPI_Allreduce). -a picks the algorithms (default: every one
 * AUTO may pick on this comm: shm within one node, hierarchical across
 * nodes; then auto).
 *
 * When auto is in the set, the footer says at how many sizes auto was within
 * 10% of the fastest forced algorithm: the selector's quality, with the cost
 * model alone or with a tuning table from tools/rondo-tune
 * (RONDO_TUNING_FILE). docs/tuning.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rondo.h"
#include "tools/measure.h"
#include "base/numbers.h"

enum { MAX_ALGOS = RONDO_ALGO_COUNT };
static int N_ALGOS;
static rondo_algo_t algos[MAX_ALGOS];

int main(int argc, char **argv)
{
  size_t min_bytes = 4, max_bytes = 64u << 20;
  int factor = 4, rounds = 5, auto_ok = 0, auto_sizes = 0;
  const char *algo_list = NULL;
  if (rondo_init(&argc, &argv) != RONDO_SUCCESS) {
    fprintf(stderr, "allreduce_sweep: %s\n", rondo_last_error());
    return 1;
  }
  int bad = argc % 2 == 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-b") == 0) bad |= rondo__parse_size(argv[i + 1], &min_bytes) != 0;
    else if (strcmp(argv[i], "-e") == 0) bad |= rondo__parse_size(argv[i + 1], &max_bytes) != 0;
    else if (strcmp(argv[i], "-f") == 0) factor = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-r") == 0) rounds = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-a") == 0) algo_list = argv[i + 1];
    else bad = 1;
  }
  if (bad || factor < 2 || rounds < 1 || rounds > MEAS_MAX_ROUNDS || min_bytes < 4 ||
      max_bytes < min_bytes || (N_ALGOS = meas_algos(rondo_world(), "allreduce_sweep", algo_list, 1, algos)) < 0) {
    fprintf(stderr, "usage: allreduce_sweep [-b MIN] [-e MAX] [-f FACTOR>=2] [-r 1..%d] "
                    "[-a ALGO,ALGO,...]\n",
            MEAS_MAX_ROUNDS);
    rondo_finalize();
    return 2;
  }
  rondo_comm_t comm = rondo_world();
  int rank = meas_rank(comm), size = meas_size(comm);
  meas_t m;
  if (meas_init(&m, max_bytes) != 0)
    MPI_Abort(MPI_COMM_WORLD, 1);

  if (rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    printf("# rondo %s, %d ranks on %d node(s), float32 sum, median of %d rounds\n",
           rondo_version_string(), size, meas_nodes(comm), rounds);
    printf("# %s\n", lib);
    const char *table = getenv("RONDO_TUNING_FILE");
    printf("# tuning table: %s\n", table && *table ? table : "none (cost model)");
    printf("# time in us; ratio = MPI_Allreduce time / algorithm time (> 1 is faster)\n");
    printf("%10s %13s", "bytes", "MPI_Allreduce");
    for (int a = 0; a < N_ALGOS; a++)
      printf(" %18s", rondo_algo_name(algos[a]));
    printf("  auto->\n");
  }
  double t[MAX_ALGOS + 1][MEAS_MAX_ROUNDS];
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= (size_t)factor) {
    size_t count = bytes / sizeof(float);
    meas_rounds(&m, algos, N_ALGOS, 1, count, 0, rounds, t);
    double med[MAX_ALGOS + 1];
    for (int w = 0; w <= N_ALGOS; w++)
      med[w] = meas_median(t[w], rounds) * 1e6;
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
    if (auto_at >= 0 && best >= 0) {
      auto_sizes++;
      auto_ok += med[auto_at + 1] <= 1.10 * med[best + 1];
    }
    if (rank == 0) {
      printf("%10zu %13.2f", bytes, med[0]);
      for (int a = 1; a <= N_ALGOS; a++)
        printf(" %10.2f (%5.2fx)", med[a], med[0] / med[a]);
      printf("  %s%s\n", rondo_algo_name(choice),
             auto_at >= 0 && best >= 0 && med[auto_at + 1] > 1.10 * med[best + 1] ? " (miss)"
                                                                                   : "");
      fflush(stdout);
    }
  }
  long wrong = meas_wrong_total(&m);
  if (rank == 0) {
    printf("# wrong results: %ld\n", wrong);
    if (auto_sizes > 0)
      printf("# auto within 10%% of the fastest forced algorithm at %d of %d sizes (%.0f%%)\n",
             auto_ok, auto_sizes, 100.0 * auto_ok / auto_sizes);
  }
  meas_free(&m);
  rondo_finalize();
  return wrong ? 1 : 0;
}
