/*
 * engine_bench: the asynchronous engine against the blocking ways of
 * reducing the same data, every comparison measured side by side in one run.
 *
 *   mpiexec -n 2 bench/engine_bench [-w WORKLOAD] [-r REPS] [-i IDLE_SECONDS]
 *
 * Workloads (-w, default all):
 *   resnet50  the 161 gradient tensors of ResNet-50 (25.6 M float32 values,
 *             shapes derived from the architecture below)
 *   bert      the 199 gradient tensors of BERT-base (109.5 M float32 values)
 *   small     1000 tensors of 1 KiB
 *   latency   one 4-byte request, submission to completion
 *   idle      the process's CPU time while its engine sits idle
 * For the gradient sets and `small`, each repetition times, between
 * barriers and as the slowest rank's wall time:
 *   engine   every tensor submitted with rondo_allreduce_async (last layer
 *            first, as a backward pass produces them), then all waited for;
 *   single   one rondo_allreduce of one buffer with the same total bytes;
 *   loop     one MPI_Allreduce per tensor.
 * The median of the repetitions is reported, with engine/single and
 * loop/engine. Results are checked (inputs 1.0: every sum is the rank count).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rondo.h"

#define MAX_TENSORS 2048

typedef struct {
  int n;
  size_t count[MAX_TENSORS];
  char name[MAX_TENSORS][64];
} model_t;

static void add(model_t *m, const char *name, size_t count)
{
  snprintf(m->name[m->n], sizeof m->name[0], "%s", name);
  m->count[m->n++] = count;
}

/* ResNet-50: conv1 + bn1, 16 bottleneck blocks in stages of 3, 4, 6, 3 with
 * widths 64..512 and expansion 4 (a 1x1 downsample + bn opens each stage),
 * then fc 2048 -> 1000: 161 tensors. */
static void resnet50(model_t *m)
{
  char s[48];
  m->n = 0;
  add(m, "conv1.weight", 64 * 3 * 7 * 7);
  add(m, "bn1.weight", 64);
  add(m, "bn1.bias", 64);
  static const int blocks[4] = {3, 4, 6, 3}, width[4] = {64, 128, 256, 512};
  size_t in = 64;
  for (int st = 0; st < 4; st++) {
    size_t w = (size_t)width[st], out = 4 * w;
    for (int b = 0; b < blocks[st]; b++) {
      const size_t conv[3] = {in * w, w * w * 9, w * out}, bn[3] = {w, w, out};
      for (int c = 0; c < 3; c++) {
        snprintf(s, sizeof s, "layer%d.%d.conv%d.weight", st + 1, b, c + 1);
        add(m, s, conv[c]);
        snprintf(s, sizeof s, "layer%d.%d.bn%d.weight", st + 1, b, c + 1);
        add(m, s, bn[c]);
        snprintf(s, sizeof s, "layer%d.%d.bn%d.bias", st + 1, b, c + 1);
        add(m, s, bn[c]);
      }
      if (b == 0) {
        snprintf(s, sizeof s, "layer%d.0.downsample.0.weight", st + 1);
        add(m, s, in * out);
        snprintf(s, sizeof s, "layer%d.0.downsample.1.weight", st + 1);
        add(m, s, out);
        snprintf(s, sizeof s, "layer%d.0.downsample.1.bias", st + 1);
        add(m, s, out);
      }
      in = out;
    }
  }
  add(m, "fc.weight", 2048 * 1000);
  add(m, "fc.bias", 1000);
}

/* BERT-base: embeddings (word 30522, position 512, token type 2; x 768) and
 * their LayerNorm, 12 layers of Q/K/V/attention-output (768 x 768 + bias),
 * LayerNorm, intermediate 768 -> 3072, output 3072 -> 768, LayerNorm, and
 * the pooler: 199 tensors. */
static void bert_base(model_t *m)
{
  char s[64];
  const size_t h = 768, ff = 3072;
  m->n = 0;
  add(m, "embeddings.word", 30522 * h);
  add(m, "embeddings.position", 512 * h);
  add(m, "embeddings.token_type", 2 * h);
  add(m, "embeddings.ln.weight", h);
  add(m, "embeddings.ln.bias", h);
  static const char *const parts[] = {"query", "key", "value", "attention.output"};
  for (int l = 0; l < 12; l++) {
    for (int p = 0; p < 4; p++) {
      snprintf(s, sizeof s, "layer%d.%s.weight", l, parts[p]);
      add(m, s, h * h);
      snprintf(s, sizeof s, "layer%d.%s.bias", l, parts[p]);
      add(m, s, h);
    }
    snprintf(s, sizeof s, "layer%d.attention.ln.weight", l);
    add(m, s, h);
    snprintf(s, sizeof s, "layer%d.attention.ln.bias", l);
    add(m, s, h);
    snprintf(s, sizeof s, "layer%d.intermediate.weight", l);
    add(m, s, h * ff);
    snprintf(s, sizeof s, "layer%d.intermediate.bias", l);
    add(m, s, ff);
    snprintf(s, sizeof s, "layer%d.output.weight", l);
    add(m, s, ff * h);
    snprintf(s, sizeof s, "layer%d.output.bias", l);
    add(m, s, h);
    snprintf(s, sizeof s, "layer%d.output.ln.weight", l);
    add(m, s, h);
    snprintf(s, sizeof s, "layer%d.output.ln.bias", l);
    add(m, s, h);
  }
  add(m, "pooler.weight", h * h);
  add(m, "pooler.bias", h);
}

static void small_set(model_t *m)
{
  char s[48];
  m->n = 0;
  for (int i = 0; i < 1000; i++) {
    snprintf(s, sizeof s, "small.%d", i);
    add(m, s, 256);
  }
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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

static void run_model(const char *label, const model_t *m, int reps)
{
  rondo_comm_t w = rondo_world();
  int rank = rondo_comm_rank(w), size = rondo_comm_size(w);
  size_t total = 0, off[MAX_TENSORS];
  for (int i = 0; i < m->n; i++) {
    off[i] = total;
    total += m->count[i];
  }
  float *grads = malloc(total * sizeof *grads), *single = malloc(total * sizeof *single);
  rondo_request_t *req = malloc((size_t)m->n * sizeof *req);
  if (!grads || !single || !req)
    die("out of memory");
  double te[64], ts[64], tl[64];
  for (int r = 0; r < reps + 1; r++) { /* repetition 0 warms up */
    for (size_t i = 0; i < total; i++)
      grads[i] = single[i] = 1.0f;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = m->n - 1; i >= 0; i--)
      if (rondo_allreduce_async(w, m->name[i], grads + off[i], grads + off[i], m->count[i],
                                RONDO_FLOAT32, RONDO_SUM, NULL, &req[i]) != RONDO_SUCCESS)
        die("rondo_allreduce_async");
    for (int i = m->n - 1; i >= 0; i--)
      if (rondo_wait(&req[i]) != RONDO_SUCCESS)
        die("rondo_wait");
    double t_engine = slowest(MPI_Wtime() - t0);
    check(grads, total, size);

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (rondo_allreduce(w, single, single, total, RONDO_FLOAT32, RONDO_SUM) != RONDO_SUCCESS)
      die("rondo_allreduce");
    double t_single = slowest(MPI_Wtime() - t0);
    check(single, total, size);

    for (size_t i = 0; i < total; i++)
      grads[i] = 1.0f;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = m->n - 1; i >= 0; i--)
      MPI_Allreduce(MPI_IN_PLACE, grads + off[i], (int)m->count[i], MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    double t_loop = slowest(MPI_Wtime() - t0);
    check(grads, total, size);
    if (r > 0) {
      te[r - 1] = t_engine;
      ts[r - 1] = t_single;
      tl[r - 1] = t_loop;
    }
  }
  double e = median(te, reps), s = median(ts, reps), l = median(tl, reps);
  if (rank == 0) {
    printf("%-9s %5d tensors %9.1f MiB | engine %9.2f ms | single %9.2f ms | loop %9.2f ms | "
           "engine/single %5.2fx | loop/engine %5.2fx\n",
           label, m->n, (double)total * 4 / (1 << 20), e * 1e3, s * 1e3, l * 1e3, e / s, l / e);
    fflush(stdout);
  }
  free(grads);
  free(single);
  free(req);
}

static void latency(int reps)
{
  rondo_comm_t w = rondo_world();
  enum { N = 2000 };
  static double t[N];
  float x;
  int n = reps * 200 < N ? reps * 200 : N;
  for (int i = 0; i < n + 50; i++) {
    x = 1.0f;
    rondo_request_t r;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rondo_allreduce_async(w, "latency", &x, &x, 1, RONDO_FLOAT32, RONDO_SUM, NULL, &r) !=
            RONDO_SUCCESS ||
        rondo_wait(&r) != RONDO_SUCCESS)
      die("latency");
    if (i >= 50)
      t[i - 50] = slowest(MPI_Wtime() - t0);
    check(&x, 1, rondo_comm_size(w));
  }
  double med = median(t, n), mpi[N];
  for (int i = 0; i < n; i++) {
    x = 1.0f;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    mpi[i] = slowest(MPI_Wtime() - t0);
  }
  if (rondo_comm_rank(w) == 0)
    printf("latency   one 4-byte request, submission to completion: median %.1f us, p90 %.1f us "
           "(%d requests; RONDO_CYCLE_TIME_MS=%s); MPI_Allreduce of 4 bytes: %.1f us\n",
           med * 1e6, t[n * 9 / 10] * 1e6, n,
           getenv("RONDO_CYCLE_TIME_MS") ? getenv("RONDO_CYCLE_TIME_MS") : "1 (default)",
           median(mpi, n) * 1e6);
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
  if (rondo_comm_rank(w) == 0)
    printf("idle      engine started, application asleep %.1f s: CPU %.3f%% of a core "
           "(the busiest rank, all threads)\n",
           wall, worst * 100);
}

int main(int argc, char **argv)
{
  const char *which = "all";
  int reps = 5, idle_s = 10;
  setenv("RONDO_CHECK_ARGS", "0", 0); /* the blocking baseline without the argument check */
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
    fprintf(stderr, "usage: engine_bench [-w resnet50|bert|small|latency|idle|all] [-r 1..64] "
                    "[-i IDLE_SECONDS]\n");
    rondo_finalize();
    return 2;
  }
  int all = strcmp(which, "all") == 0;
  if (rondo_comm_rank(rondo_world()) == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n")] = '\0';
    printf("# rondo %s engine_bench, %d ranks, median of %d repetitions; %s\n",
           rondo_version_string(), rondo_comm_size(rondo_world()), reps, lib);
  }
  static model_t m;
  if (all || strcmp(which, "resnet50") == 0) {
    resnet50(&m);
    run_model("resnet50", &m, reps);
  }
  if (all || strcmp(which, "bert") == 0) {
    bert_base(&m);
    run_model("bert-base", &m, reps);
  }
  if (all || strcmp(which, "small") == 0) {
    small_set(&m);
    run_model("1000x1KiB", &m, reps);
  }
  if (all || strcmp(which, "latency") == 0)
    latency(reps);
  if (all || strcmp(which, "idle") == 0)
    idle(idle_s);
  long wrong = 0;
  MPI_Allreduce(&wrong_total, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rondo_comm_rank(rondo_world()) == 0)
    printf("# wrong results: %ld\n", wrong);
  rondo_finalize();
  return wrong != 0;
}
