/*
 * rondo-bench: microbenchmarks of rondo's collectives side by side with MPI
 * (docs/bench.md).
 *
 *   mpiexec -n 2 rondo-bench                      all-reduce, every algorithm
 *   mpiexec -n 2 rondo-bench allgather -b 1K -e 64M
 *   mpiexec -n 2 rondo-bench fusion --model resnet50
 *   mpiexec -n 2 rondo-bench tune --output tuning.txt
 *
 * The command line is read before MPI starts, so a typo costs no launch
 * and always exits with status 2.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"
#include "tools/launch_env.h"

void bench_die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rondo-bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

int main(int argc, char **argv)
{
  bench_opts_t o;
  int rc = bench_parse(argc, argv, &o, launch_first_process());
  if (rc != 0)
    return rc == 3 ? 0 : rc;
  /* rondo-bench measures what programs get: the library's defaults, or the
   * knobs the user exported (the header prints them all). The tuner measures
   * the cost model's own choice, not an older table's or a forced one. */
  if (o.cmd == CMD_TUNE) {
    o.ignored_table = getenv("RONDO_TUNING_FILE") != NULL || getenv("RONDO_ALLREDUCE_ALGO") != NULL;
    unsetenv("RONDO_TUNING_FILE");
    unsetenv("RONDO_ALLREDUCE_ALGO");
  }
  if (rondo_init(&argc, &argv) != RONDO_SUCCESS) {
    fprintf(stderr, "rondo-bench: %s\n", rondo_last_error());
    return 1;
  }
  switch (o.cmd) {
  case CMD_FUSION: rc = fusion_main(&o); break;
  case CMD_TUNE: rc = tune_main(&o); break;
  case CMD_EXPLAIN: rc = explain_main(&o); break;
  default: rc = sweep_main(&o); break;
  }
  fflush(stdout);
  rondo_finalize();
  return rc;
}
