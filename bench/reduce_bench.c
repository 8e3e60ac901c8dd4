/*
 * reduce_bench: how fast the reduction kernels stream memory, measured
 * against memcpy of the same buffer size on the same buffers.
 *
 * Rows: float32 SUM in place (dst = dst + src, as the ring uses it) and with
 * three operands (dst = a + b) at 4 KiB .. 64 MiB, then SUM in place for
 * every other dtype at 16 MiB.
 *
 * Bytes counted. "size" is the bytes of one buffer. Two rates are printed:
 *  - traffic GB/s: bytes the operation must read plus write, per second.
 *    SUM (either form) reads two buffers and writes one: 3 x size.
 *    memcpy reads one and writes one: 2 x size.
 *    Write-allocate reads of a destination line not in cache are not
 *    counted (the CPU's cost, not the operation's; memcpy avoids them for
 *    large sizes with non-temporal stores, the kernels do not). ratio is
 *    kernel / memcpy in this unit: 1.00 means the kernel moves memory as
 *    fast as memcpy does, i.e. it is bandwidth-bound, not compute-bound.
 *  - payload GB/s: size per second, i.e. how many bytes of one buffer are
 *    reduced (or copied) per second; ideal kernel/memcpy here is about 2/3.
 * Both columns of one unit use the same definition. GB = 1e9 bytes.
 *
 * Each sample times a batch of calls (the batch is sized to take >= 1 ms,
 * 0.1 ms with --quick); kernel and memcpy samples alternate so drift hits
 * both; samples are taken until the kernel has run >= 0.2 s (0.02 s with
 * --quick) and at least 5 times. best = fastest sample, median = median.
 * Buffers are page-aligned and touched before timing.
 *
 * Time is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID): on a shared or
 * oversubscribed machine, time the scheduler gives to other processes does
 * not count (other processes still share the memory bus). On an idle machine
 * it equals wall time; --wall uses CLOCK_MONOTONIC instead.
 *
 * Usage: reduce_bench [--quick] [--wall]
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, posix_memalign */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rondo.h"
#include "reduce/reduce.h"

#define MIB ((size_t)1 << 20)
#define MAX_SAMPLES 4096

typedef struct {
  double sample_s; /* minimum time of one timed batch */
  double total_s;  /* minimum kernel time per row */
} opts_t;

typedef struct {
  rondo_dtype_t dtype;
  int in_place;
  size_t bytes;
  void *dst, *a, *b;
} job_t;

static const char *dtype_label(rondo_dtype_t dt)
{
  static const char *names[] = {"int8",    "uint8",    "int32",   "int64",
                                "float16", "bfloat16", "float32", "float64"};
  return names[dt];
}

static size_t dtype_bytes(rondo_dtype_t dt)
{
  static const size_t sizes[] = {1, 1, 4, 8, 2, 2, 4, 8};
  return sizes[dt];
}

static clockid_t bench_clock = CLOCK_THREAD_CPUTIME_ID;

static double now(void)
{
  struct timespec ts;
  clock_gettime(bench_clock, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Keeps the compiler from dropping stores nobody reads. */
static void escape(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

static double time_kernel(const job_t *j, size_t calls)
{
  size_t n = j->bytes / dtype_bytes(j->dtype);
  double t0 = now();
  for (size_t i = 0; i < calls; i++) {
    if (j->in_place)
      reduce_apply(j->dst, j->dst, j->a, n, j->dtype, RONDO_SUM);
    else
      reduce_apply(j->dst, j->a, j->b, n, j->dtype, RONDO_SUM);
    escape(j->dst);
  }
  return now() - t0;
}

static double time_memcpy(const job_t *j, size_t calls)
{
  double t0 = now();
  for (size_t i = 0; i < calls; i++) {
    memcpy(j->dst, j->a, j->bytes);
    escape(j->dst);
  }
  return now() - t0;
}

static int cmp_double(const void *x, const void *y)
{
  double p = *(const double *)x, q = *(const double *)y;
  return (p > q) - (p < q);
}

static double median(double *v, size_t n)
{
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double min_of(const double *v, size_t n)
{
  double m = v[0];
  for (size_t i = 1; i < n; i++)
    m = v[i] < m ? v[i] : m;
  return m;
}

/* Small values that neither overflow nor go subnormal under repeated SUM. */
static void fill(rondo_dtype_t dt, void *p, size_t bytes, double value)
{
  size_t n = bytes / dtype_bytes(dt);
  for (size_t i = 0; i < n; i++) {
    double v = value * (double)(1 + i % 7);
    switch (dt) {
    case RONDO_INT8: ((int8_t *)p)[i] = (int8_t)(i % 7); break;
    case RONDO_UINT8: ((uint8_t *)p)[i] = (uint8_t)(i % 7); break;
    case RONDO_INT32: ((int32_t *)p)[i] = (int32_t)(i % 7); break;
    case RONDO_INT64: ((int64_t *)p)[i] = (int64_t)(i % 7); break;
    case RONDO_FLOAT16: ((uint16_t *)p)[i] = reduce_float_to_half((float)v); break;
    case RONDO_BFLOAT16: ((uint16_t *)p)[i] = reduce_float_to_bf16((float)v); break;
    case RONDO_FLOAT32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
  }
}

static void *buffer(size_t bytes)
{
  void *p = NULL;
  if (posix_memalign(&p, 4096, bytes) != 0) {
    fprintf(stderr, "reduce_bench: cannot allocate %zu bytes\n", bytes);
    exit(1);
  }
  return p;
}

static void size_label(size_t bytes, char *out, size_t len)
{
  if (bytes >= MIB)
    snprintf(out, len, "%zu MiB", bytes / MIB);
  else
    snprintf(out, len, "%zu KiB", bytes / 1024);
}

static void print_header(void)
{
  printf("%-22s %8s %12s | %-21s %-21s %6s | %-17s %6s\n", "", "", "",
         "traffic GB/s kernel", "traffic GB/s memcpy", "ratio", "payload GB/s", "ratio");
  printf("%-22s %8s %12s | %10s %10s %10s %10s %6s | %8s %8s %6s\n", "kernel", "size",
         "samples", "best", "median", "best", "median", "best", "kernel", "memcpy", "best");
}

static void run_row(const char *name, rondo_dtype_t dt, int in_place, size_t bytes,
                    const opts_t *o)
{
  job_t j = {dt, in_place, bytes, buffer(bytes), buffer(bytes), buffer(bytes)};
  fill(dt, j.dst, bytes, 1.0);
  fill(dt, j.a, bytes, 1e-3);
  fill(dt, j.b, bytes, 2e-3);

  size_t calls = 1;
  while (time_kernel(&j, calls) < o->sample_s && calls < ((size_t)1 << 30))
    calls *= 2;

  static double tk[MAX_SAMPLES], tm[MAX_SAMPLES];
  size_t ns = 0;
  double total = 0;
  while ((total < o->total_s || ns < 5) && ns < MAX_SAMPLES) {
    tk[ns] = time_kernel(&j, calls);
    tm[ns] = time_memcpy(&j, calls);
    total += tk[ns++];
  }

  double kb = 3.0 * (double)bytes * (double)calls / 1e9; /* traffic, GB per sample */
  double mb = 2.0 * (double)bytes * (double)calls / 1e9;
  double pb = (double)bytes * (double)calls / 1e9;         /* payload, GB per sample */
  double kbest = min_of(tk, ns), mbest = min_of(tm, ns);
  double kmed = median(tk, ns), mmed = median(tm, ns);
  char size[32], samples[32];
  size_label(bytes, size, sizeof size);
  snprintf(samples, sizeof samples, "%zux%zu", ns, calls);
  printf("%-22s %8s %12s | %10.1f %10.1f %10.1f %10.1f %6.2f | %8.1f %8.1f %6.2f\n", name, size,
         samples, kb / kbest, kb / kmed, mb / mbest, mb / mmed, (kb / kbest) / (mb / mbest),
         pb / kbest, pb / mbest, mbest / kbest);
  fflush(stdout);
  free(j.dst);
  free(j.a);
  free(j.b);
}

int main(int argc, char **argv)
{
  opts_t o = {1e-3, 0.2};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      o.sample_s = 1e-4;
      o.total_s = 0.02;
    } else if (strcmp(argv[i], "--wall") == 0) {
      bench_clock = CLOCK_MONOTONIC;
    } else {
      fprintf(stderr, "usage: %s [--quick] [--wall]\n", argv[0]);
      return 2;
    }
  }
  static const size_t sizes[] = {4 * 1024, 64 * 1024, MIB, 16 * MIB, 64 * MIB};
  static const rondo_dtype_t others[] = {RONDO_INT8,    RONDO_UINT8,    RONDO_INT32,
                                         RONDO_INT64,   RONDO_FLOAT16,  RONDO_BFLOAT16,
                                         RONDO_FLOAT64};

  printf("# reduce_bench: reduce_apply SUM vs memcpy of the same size (see the header\n"
         "# of bench/reduce_bench.c). traffic = bytes read + written: SUM 3 x size,\n"
         "# memcpy 2 x size. payload = size. ratio = kernel rate / memcpy rate.\n"
         "# time: %s\n",
         bench_clock == CLOCK_MONOTONIC ? "wall clock" : "thread CPU time");
#if defined(__x86_64__) && defined(__GNUC__)
  printf("# cpu has avx2: %s\n", __builtin_cpu_supports("avx2") ? "yes" : "no");
#endif
  print_header();
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    run_row("float32 sum in place", RONDO_FLOAT32, 1, sizes[s], &o);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    run_row("float32 sum dst=a+b", RONDO_FLOAT32, 0, sizes[s], &o);
  for (size_t d = 0; d < sizeof others / sizeof others[0]; d++) {
    char name[40];
    snprintf(name, sizeof name, "%s sum in place", dtype_label(others[d]));
    run_row(name, others[d], 1, 16 * MIB, &o);
  }
  return 0;
}
