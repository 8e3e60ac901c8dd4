/*
 * engine_bench: what the asynchronous engine costs on its own, beyond the
 * gradient sets that `rondo-bench fusion` replays.
 *
 *   mpiexec -n 2 bench/engine_bench [-w latency|wake|idle|all] [-r REPS] [-i IDLE_SECONDS]
 *
 *   latency   one 4-byte request, submission to completion (200 x REPS
 *             requests, each between barriers, the slowest rank's time),
 *             against MPI_Allreduce of 4 bytes timed the same way; plain
 *             requests alternating with RONDO_ASYNC_WAIT_NOW ones
 *   wake      the same after every rank slept 100 ms (an idle engine), with
 *             a new name each time (the slow path, as unnamed Horovod calls
 *             take) and with one name again (cached): 4 x REPS each
 *   idle      the process's CPU time while its engine sits idle
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rondo.h"
#include "tools/measure.h"

static double slowest(double t)
{
  double m;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

static void die(const char *what)
{
  fprintf(stderr, "engine_bench: %s: %s\n", what, rondo_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static long wrong_total;

static void check(const float *v, size_t n, int size)
{
  long wrong = 0;
  for (size_t i = 0; i < n; i++)
    wrong += v[i] != (float)size;
  wrong_total += wrong;
}

static void latency(int reps)
{
  rondo_comm_t w = rondo_world();
  enum { N = 2000 };
  static double t[2][N];
  float x;
  int n = reps * 200 < N ? reps * 200 : N;
  /* Alternating: a plain request, and one whose submitter says it waits at
   * once (RONDO_ASYNC_WAIT_NOW, what blocking calls of the bindings pass) */
  rondo_async_opts_t now = RONDO_ASYNC_OPTS_INIT;
  now.flags = RONDO_ASYNC_WAIT_NOW;
  for (int i = 0; i < 2 * (n + 50); i++) {
    x = 1.0f;
    rondo_request_t r;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rondo_allreduce_async(w, "latency", &x, &x, 1, RONDO_FLOAT32, RONDO_SUM,
                              i % 2 ? &now : NULL, &r) != RONDO_SUCCESS ||
        rondo_wait(&r) != RONDO_SUCCESS)
      die("latency");
    if (i >= 100)
      t[i % 2][(i - 100) / 2] = slowest(MPI_Wtime() - t0);
    check(&x, 1, meas_size(w));
  }
  double mpi[N];
  for (int i = 0; i < n; i++) {
    x = 1.0f;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    mpi[i] = slowest(MPI_Wtime() - t0);
  }
  if (meas_rank(w) == 0) {
    printf("latency   one 4-byte request, submission to completion: median %.1f us, p90 %.1f us "
           "(%d requests; RONDO_CYCLE_TIME_MS=%s); MPI_Allreduce of 4 bytes: %.1f us\n",
           meas_median(t[0], n) * 1e6, meas_percentile(t[0], n, 90) * 1e6, n,
           getenv("RONDO_CYCLE_TIME_MS") ? getenv("RONDO_CYCLE_TIME_MS") : "1 (default)",
           meas_median(mpi, n) * 1e6);
    printf("latency   the same with RONDO_ASYNC_WAIT_NOW (the waiter runs it): median %.1f us, "
           "p90 %.1f us\n",
           meas_median(t[1], n) * 1e6, meas_percentile(t[1], n, 90) * 1e6);
  }
}

/* The slowest rank's time of one 4-byte request named `name`, submitted
 * after every rank slept 100 ms. */
static double after_sleep(const char *name)
{
  float x = 1.0f;
  rondo_request_t r;
  MPI_Barrier(MPI_COMM_WORLD);
  usleep(100000);
  double t0 = MPI_Wtime();
  if (rondo_allreduce_async(rondo_world(), name, &x, &x, 1, RONDO_FLOAT32, RONDO_SUM, NULL, &r) !=
          RONDO_SUCCESS ||
      rondo_wait(&r) != RONDO_SUCCESS)
    die("wake");
  double t = slowest(MPI_Wtime() - t0);
  check(&x, 1, meas_size(rondo_world()));
  return t;
}

static void wake(int reps)
{
  enum { N = 256 };
  double fresh[N], cached[N];
  int n = 4 * reps < N ? 4 * reps : N;
  after_sleep("wake.cached"); /* into the cache */
  for (int i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "wake.%d", i);
    fresh[i] = after_sleep(name);
  }
  for (int i = 0; i < n; i++)
    cached[i] = after_sleep("wake.cached");
  if (meas_rank(rondo_world()) == 0)
    printf("wake      one 4-byte request after 100 ms of sleep on every rank: new name median "
           "%.1f us, p90 %.1f us; cached name median %.1f us, p90 %.1f us (%d each)\n",
           meas_median(fresh, n) * 1e6, meas_percentile(fresh, n, 90) * 1e6,
           meas_median(cached, n) * 1e6, meas_percentile(cached, n, 90) * 1e6, n);
}

static double cpu_seconds(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec * 1e-6;
}

static void idle(int seconds)
{
  rondo_comm_t w = rondo_world();
  float x = 1.0f;
  rondo_request_t r;
  if (rondo_allreduce_async(w, "wake", &x, &x, 1, RONDO_FLOAT32, RONDO_SUM, NULL, &r) !=
          RONDO_SUCCESS ||
      rondo_wait(&r) != RONDO_SUCCESS)
    die("idle");
  MPI_Barrier(MPI_COMM_WORLD);
  double c0 = cpu_seconds(), t0 = MPI_Wtime();
  sleep((unsigned)seconds); /* the application does nothing; the engine idles */
  double cpu = cpu_seconds() - c0, wall = MPI_Wtime() - t0, worst;
  double share = cpu / wall;
  MPI_Allreduce(&share, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (meas_rank(w) == 0)
    printf("idle      engine started, application asleep %.1f s: CPU %.3f%% of a core "
           "(the busiest rank, all threads)\n",
           wall, worst * 100);
}

int main(int argc, char **argv)
{
  const char *which = "all";
  int reps = 5, idle_s = 10;
  if (rondo_init(&argc, &argv) != RONDO_SUCCESS)
    die("rondo_init");
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-w") == 0)
      which = argv[i + 1];
    else if (strcmp(argv[i], "-r") == 0)
      reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-i") == 0)
      idle_s = atoi(argv[i + 1]);
  }
  if (reps < 1 || reps > 64 || idle_s < 1 || argc % 2 == 0) {
    fprintf(stderr, "usage: engine_bench [-w latency|wake|idle|all] [-r 1..64] "
                    "[-i IDLE_SECONDS]\n");
    rondo_finalize();
    return 2;
  }
  int all = strcmp(which, "all") == 0;
  if (meas_rank(rondo_world()) == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    printf("# rondo %s engine_bench, %d ranks; %s\n", rondo_version_string(),
           meas_size(rondo_world()), lib);
  }
  if (all || strcmp(which, "latency") == 0)
    latency(reps);
  if (all || strcmp(which, "wake") == 0)
    wake(reps);
  if (all || strcmp(which, "idle") == 0)
    idle(idle_s);
  long wrong = 0;
  MPI_Allreduce(&wrong_total, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (meas_rank(rondo_world()) == 0)
    printf("# wrong results: %ld\n", wrong);
  rondo_finalize();
  return wrong != 0;
}
