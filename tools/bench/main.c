/*
 * rondo-bench: microbenchmarks of rondo's collectives side by side with MPI
 * (docs/bench.md).
 *
 *   mpiexec -n 2 rondo-bench                      all-reduce, every algorithm
 *   mpiexec -n 2 rondo-bench allgather -b 1K -e 64M every all-gather algorithm
 *   mpiexec -n 2 rondo-bench fusion --model resnet50
 *   mpiexec -n 2 rondo-bench tune --output tuning.txt
 *
 * Every rank reads its command line and the ranks agree on it
 * (tools/launch_env.h): a typo on any rank, or a command line that differs
 * between ranks, exits every rank with status 2.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"
#include "tools/launch_env.h"

int main(int argc, char **argv)
{
  bench_opts_t o;
  /* Read quietly: only the lowest rank that failed prints why (below). */
  int rc = bench_parse(argc, argv, &o, 0), print, rank;
  /* rondo-bench measures what programs get: the library's defaults, or the
   * knobs the user exported (the header prints them all). The tuner measures
   * the cost model's own choice, not an older table's or a forced one. */
  if (rc == 0 && o.cmd == CMD_TUNE) {
    static const char *const knobs[] = {"RONDO_TUNING_FILE", "RONDO_ALLREDUCE_ALGO",
                                        "RONDO_REDUCE_SCATTER_ALGO", "RONDO_ALLGATHER_ALGO"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
      o.ignored_table |= getenv(knobs[i]) != NULL;
      unsetenv(knobs[i]);
    }
  }
  if (tool_init("rondo-bench", &argc, &argv) != 0)
    return 1;
  /* Every rank must run the same sizes, rows and checks, or the ranks would
   * wait for each other's collectives forever. */
  int agreed = tool_agree("rondo-bench", rc == 3 ? 0 : rc, tool_args_key(argc, argv), &print);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (agreed != 0) {
    if (print)
      bench_parse(argc, argv, &o, 1);
    rc = agreed;
  } else if (rc == 3) { /* --help */
    if (rank == 0)
      bench_parse(argc, argv, &o, 1);
    rc = 0;
  } else {
    switch (o.cmd) {
    case CMD_FUSION: rc = fusion_main(&o); break;
    case CMD_TUNE: rc = tune_main(&o); break;
    case CMD_EXPLAIN: rc = explain_main(&o); break;
    default: rc = sweep_main(&o); break;
    }
  }
  fflush(stdout);
  rondo_finalize();
  return rc;
}
