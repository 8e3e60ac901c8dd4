/*
 * mpitest.h - the harness shared by rondo's multi-rank tests (tests/mpi).
 *
 * Each test program is one C file that includes this header first. Every rank
 * counts its checks and failures and keeps its first few failure messages;
 * mt_finish() sums both over MPI_COMM_WORLD, rank 0 prints every rank's first
 * failures and the final line
 *     <prog> (N ranks): X checks, Y failed
 * and every rank gets the same exit status (0 pass, 1 fail, 77 skip).
 *
 * Expected values never come from rondo: the value generators, the float16
 * and bfloat16 roundings, the dtype tables and the hash below are written
 * here, independently of lib/.
 *
 * Environment:
 *   MPITEST_SEED=n      seed of the generated values (default 20240601)
 *   MPITEST_FULL=1      run the whole matrix also at 3 or more ranks
 *   MPITEST_VERBOSE=1   every rank prints each failure when it happens
 *   MPITEST_TIMEOUT=s   a rank still running after s seconds prints where it
 *                       is and exits 1, so a hang fails the run and says where
 *                       (default: 30 s before tests/mpi/launch's own limit,
 *                       RONDO_TEST_TIMEOUT, default 600; 0 disables)
 */
#ifndef RONDO_MPITEST_H
#define RONDO_MPITEST_H

#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "rondo.h"
#include "base/leakcheck.h" /* RONDO_LEAKCHECK_PAUSE: the tests that start MPI themselves */

#define MT_KEEP      4 /* failure messages kept (and printed) per rank */
#define MT_MSG_LEN   400
#define MT_WHERE_LEN 160
#define MT_POISON    0xA5 /* fills output buffers before a call */
#define MT_GUARD     16   /* elements after every buffer that must stay poison */

typedef struct {
  const char *prog;
  int rank, size;
  int full;    /* run every case even when oversubscribed */
  int crowded; /* 4 ranks or more, not full: the tests keep the cases whose
                * outcome depends on the rank count and thin the rest, which
                * 1-3 ranks run (about 4x oversubscribed on 2 cores) */
  int verbose;
  uint64_t seed;
  uint64_t salt; /* varies the generated values between cases (same on all ranks) */
  double t0;
  long long checks, failed;
  int kept;
  char msgs[MT_KEEP][MT_MSG_LEN];
  char where[MT_WHERE_LEN];
  /* hashes of result buffers, compared across ranks by mt_hash_flush() */
  uint64_t *hashes;
  char (*hash_where)[MT_WHERE_LEN];
  size_t nhash, caphash;
} mt_state_t;

static mt_state_t mt;

/* ---- failures and checks --------------------------------------------------- */

static inline void mt_failv(int line, const char *fmt, va_list ap)
{
  char buf[MT_MSG_LEN];
  int n = snprintf(buf, sizeof buf, "rank %d: line %d: [%s] ", mt.rank, line, mt.where);
  if (n < 0 || n >= (int)sizeof buf)
    n = (int)sizeof buf - 1;
  vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  mt.failed++;
  if (mt.kept < MT_KEEP)
    memcpy(mt.msgs[mt.kept++], buf, sizeof buf);
  if (mt.verbose)
    fprintf(stderr, "%s: FAIL %s\n", mt.prog ? mt.prog : "mpitest", buf);
}

static inline void mt_fail(int line, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  mt_failv(line, fmt, ap);
  va_end(ap);
}

/* Names the case being run: failure messages and the watchdog print it. */
static inline void mt_where(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mt.where, sizeof mt.where, fmt, ap);
  va_end(ap);
}

static inline int mt_check_(int ok, int line, const char *expr, const char *fmt, ...)
{
  mt.checks++;
  if (ok)
    return 1;
  char what[MT_MSG_LEN / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  mt_fail(line, "%s: check failed: %s", what, expr);
  return 0;
}
/* MT_CHECK(cond, "what is checked", ...): printf-style description. */
#define MT_CHECK(cond, ...) mt_check_((cond) != 0, __LINE__, #cond, __VA_ARGS__)

static inline int mt_eq_int_(long long got, long long want, const char *gexpr, const char *wexpr,
                             int line)
{
  mt.checks++;
  if (got == want)
    return 1;
  mt_fail(line, "%s == %s failed: got %lld, expected %lld", gexpr, wexpr, got, want);
  return 0;
}
#define MT_EQ_INT(got, want) mt_eq_int_((long long)(got), (long long)(want), #got, #want, __LINE__)

static inline int mt_eq_str_(const char *got, const char *want, const char *gexpr,
                             const char *wexpr, int line)
{
  mt.checks++;
  if (got && want && strcmp(got, want) == 0)
    return 1;
  if (!got && !want)
    return 1;
  mt_fail(line, "%s == %s failed: got %s%s%s, expected %s%s%s", gexpr, wexpr, got ? "\"" : "",
          got ? got : "NULL", got ? "\"" : "", want ? "\"" : "", want ? want : "NULL",
          want ? "\"" : "");
  return 0;
}
#define MT_EQ_STR(got, want) mt_eq_str_((got), (want), #got, #want, __LINE__)

/* Enum names from the header's own list, so printing a status never depends
 * on the library being right. */
static inline const char *mt_status_name(int st)
{
  switch (st) {
#define MT_STATUS_CASE(name, value, msg)                                                           \
  case RONDO_##name:                                                                               \
    return "RONDO_" #name;
    RONDO_STATUS_MAP(MT_STATUS_CASE)
#undef MT_STATUS_CASE
  default:
    return "(not a status)";
  }
}

static inline int mt_eq_status_(int got, int want, const char *gexpr, int line)
{
  mt.checks++;
  if (got == want)
    return 1;
  const char *err = rondo_last_error();
  mt_fail(line, "%s returned %s (%d), expected %s (%d); last error: \"%s\"", gexpr,
          mt_status_name(got), got, mt_status_name(want), want, err ? err : "(NULL)");
  return 0;
}
#define MT_EQ_STATUS(got, want) mt_eq_status_((int)(got), (int)(want), #got, __LINE__)

/* A comm query that must succeed (rondo_comm_rank, ...): its value, or -1
 * after a failure, which is reported. */
static inline int mt_query_(rondo_status_t (*query)(rondo_comm_t, int *), rondo_comm_t comm,
                            const char *qexpr, int line)
{
  int v = -1;
  mt_eq_status_((int)query(comm, &v), RONDO_SUCCESS, qexpr, line);
  return v;
}
#define MT_QUERY(query, comm) mt_query_(query, comm, #query, __LINE__)

/* Every comm query refuses comm with status want and sets its output to -1
 * (MPI_COMM_NULL for rondo_comm_mpi). */
static inline void mt_queries_refused_(rondo_comm_t comm, rondo_status_t want, int line)
{
  static rondo_status_t (*const queries[])(rondo_comm_t, int *) = {
      rondo_comm_rank, rondo_comm_size, rondo_comm_local_rank, rondo_comm_local_size,
      rondo_comm_node_count};
  static const char *const names[] = {"rondo_comm_rank", "rondo_comm_size",
                                      "rondo_comm_local_rank", "rondo_comm_local_size",
                                      "rondo_comm_node_count"};
  for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
    int v = 12345;
    mt_eq_status_((int)queries[q](comm, &v), (int)want, names[q], line);
    mt_eq_int_(v, -1, names[q], "-1", line);
  }
  MPI_Comm mpi = MPI_COMM_WORLD;
  mt_eq_status_((int)rondo_comm_mpi(comm, &mpi), (int)want, "rondo_comm_mpi", line);
  mt_check_(mpi == MPI_COMM_NULL, line, "rondo_comm_mpi sets MPI_COMM_NULL", "%s",
            "rondo_comm_mpi left its output");
}
#define MT_QUERIES_REFUSED(comm, want) mt_queries_refused_((comm), (want), __LINE__)

/* ---- dtypes, written independently of the library ---------------------------- */

static const char *const mt_dtype_names[RONDO_DTYPE_COUNT] = {
    "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "int16"};
static const size_t mt_dtype_sizes[RONDO_DTYPE_COUNT] = {1, 1, 4, 8, 2, 2, 4, 8, 2};
static const char *const mt_op_names[RONDO_OP_COUNT] = {"sum", "avg", "min", "max", "prod",
                                                        "adasum"};
static const char *const mt_algo_names[RONDO_ALGO_COUNT] = {
    "auto", "mpi", "ring", "recursive_doubling", "rabenseifner", "shm", "hierarchical", "nccl",
    "staged", "hierarchical_nccl", "adasum", "pairwise", "recursive_halving", "bruck"};
/* The elementwise ops, 0 .. MT_OPS - 1: the ones the closed forms below
 * cover. RONDO_ADASUM combines whole tensors (test_adasum.c). */
enum { MT_OPS = RONDO_ADASUM };

static inline size_t mt_dtype_size(rondo_dtype_t dt)
{
  return mt_dtype_sizes[dt];
}
static inline const char *mt_dtype_str(rondo_dtype_t dt)
{
  return mt_dtype_names[dt];
}
static inline const char *mt_op_str(rondo_op_t op)
{
  return mt_op_names[op];
}
static inline const char *mt_algo_str(rondo_algo_t a)
{
  return mt_algo_names[a];
}
static inline int mt_dtype_is_float(rondo_dtype_t dt)
{
  return dt == RONDO_FLOAT16 || dt == RONDO_BFLOAT16 || dt == RONDO_FLOAT32 || dt == RONDO_FLOAT64;
}

/* ---- float16 / bfloat16 reference conversions (round to nearest even) -------- */

static inline uint32_t mt_f32_bits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static inline float mt_bits_f32(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint16_t mt_float_to_half(float f)
{
  uint32_t x = mt_f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) /* NaN: keep the top payload bits, make it quiet */
    return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u)
    return (uint16_t)(sign | 0x7c00u); /* >= 65520: inf */
  if (ax < 0x38800000u) {              /* below 2^-14 */
    if (ax < 0x33000000u)
      return sign; /* < 2^-25: zero */
    uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e; /* value in units of 2^-24 is m >> shift */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u)))
      q++;
    return (uint16_t)(sign | q);
  }
  uint32_t h = (ax - 0x38000000u) >> 13, rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    h++; /* may carry into inf */
  return (uint16_t)(sign | h);
}

static inline float mt_half_to_float(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f)
    return mt_bits_f32(sign | 0x7f800000u | (m << 13));
  if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float */
    float v = (float)m * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return mt_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

static inline uint16_t mt_float_to_bf16(float f)
{
  uint32_t x = mt_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static inline float mt_bf16_to_float(uint16_t h)
{
  return mt_bits_f32((uint32_t)h << 16);
}

/* ---- hashing and byte patterns ---------------------------------------------- */

static inline uint64_t mt_mix(uint64_t x)
{ /* splitmix64 finalizer */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* FNV-1a over 64-bit words (plus a fold so high bits reach low ones), then
 * the tail bytes: cheap enough to hash every result of an 8 MB call. */
static inline uint64_t mt_hash(const void *p, size_t n)
{
  const unsigned char *b = p;
  uint64_t h = 0xcbf29ce484222325ULL;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ULL;
  return h ^ n;
}

/* Deterministic pseudo-random bytes: stream names the buffer (e.g. sender and
 * receiver), so every rank can compute what any other rank sent. */
static inline void mt_fill_pattern(void *buf, size_t nbytes, uint64_t stream)
{
  unsigned char *b = buf;
  uint64_t base = mt_mix(mt.seed ^ mt_mix(stream + 0x632be59bd9b4e019ULL));
  size_t i = 0;
  for (uint64_t k = 0; i + 8 <= nbytes; i += 8, k++) {
    uint64_t w = mt_mix(base + k);
    memcpy(b + i, &w, 8);
  }
  if (i < nbytes) {
    uint64_t w = mt_mix(base + nbytes);
    memcpy(b + i, &w, nbytes - i);
  }
}

/* ---- reduction inputs with exact results in every dtype ------------------------
 * Values are small integers chosen per op so that every partial result, in
 * any order, is exact in the narrowest type (int8, bfloat16 with 8
 * significant bits, float16 with 11):
 *   SUM, AVG: |v| <= L / size, L = 127 (int8), 255 (uint8, v >= 0), 256 (bf16),
 *             2048 (f16), 2^24 (f32), 32767 (int16), 2^30 (int32), 2^53 (f64),
 *             2^61 (int64);
 *             int64 values beyond 2^53 catch a reduction done in double.
 *   PROD:     +-1..3 on ranks 0-3, +-1 beyond, so |product| <= 81.
 *   MIN, MAX: distinct on every rank at every index, and the rank holding
 *             the extreme rotates with the index.
 * Values depend on (seed, mt.salt, dtype, op, rank, index); tests set
 * mt.salt per case so that small counts do not all test the same few values. */

static inline uint64_t mt_rand(uint64_t a, uint64_t b, uint64_t c)
{
  return mt_mix(mt_mix(mt.seed + mt.salt * 0x94d049bb133111ebULL) ^ a * 0xc2b2ae3d27d4eb4fULL ^
                b * 0x165667b19e3779f9ULL ^ (c + 0x27d4eb2f165667c5ULL));
}

static inline int64_t mt_sum_limit(rondo_dtype_t dt)
{
  static const int64_t lim[RONDO_DTYPE_COUNT] = {127,  255, INT64_C(1) << 30, INT64_C(1) << 61,
                                                 2048, 256, INT64_C(1) << 24, INT64_C(1) << 53,
                                                 32767};
  return lim[dt];
}

static inline int64_t mt_minmax_scale(rondo_dtype_t dt)
{
  static const int64_t scale[RONDO_DTYPE_COUNT] = {1, 1, 8388617, (INT64_C(1) << 54) + 1,
                                                   1, 1, 1024,    INT64_C(1) << 40, 255};
  return scale[dt];
}

/* Value of element idx on rank for a reduction with op (AVG shares SUM's). */
static inline int64_t mt_value(rondo_dtype_t dt, rondo_op_t op, int rank, uint64_t idx)
{
  int size = mt.size;
  int sgn = dt != RONDO_UINT8;
  uint64_t r = mt_rand((uint64_t)dt * 8 + (op == RONDO_AVG ? RONDO_SUM : op), (uint64_t)rank, idx);
  switch (op) {
  case RONDO_SUM:
  case RONDO_AVG: {
    int64_t a = mt_sum_limit(dt) / size;
    return sgn ? (int64_t)(r % (uint64_t)(2 * a + 1)) - a : (int64_t)(r % (uint64_t)(a + 1));
  }
  case RONDO_PROD: {
    int64_t mag = rank < 4 ? (int64_t)(r % 3) + 1 : 1;
    return sgn && ((r >> 8) & 1) ? -mag : mag;
  }
  default: { /* MIN, MAX */
    uint64_t slots = 256u / (unsigned)size;
    int64_t v = (int64_t)((r % slots) * (uint64_t)size + ((uint64_t)rank + idx) % (uint64_t)size);
    return sgn ? (v - 128) * mt_minmax_scale(dt) : v;
  }
  }
}

/* Stores an integer value that is exact in dt. */
static inline void mt_store(rondo_dtype_t dt, void *buf, size_t i, int64_t v)
{
  unsigned char *b = (unsigned char *)buf + i * mt_dtype_size(dt);
  switch (dt) {
  case RONDO_INT8: {
    int8_t x = (int8_t)v;
    memcpy(b, &x, 1);
    break;
  }
  case RONDO_UINT8: {
    uint8_t x = (uint8_t)v;
    memcpy(b, &x, 1);
    break;
  }
  case RONDO_INT16: {
    int16_t x = (int16_t)v;
    memcpy(b, &x, 2);
    break;
  }
  case RONDO_INT32: {
    int32_t x = (int32_t)v;
    memcpy(b, &x, 4);
    break;
  }
  case RONDO_INT64:
    memcpy(b, &v, 8);
    break;
  case RONDO_FLOAT16: {
    uint16_t x = mt_float_to_half((float)v);
    memcpy(b, &x, 2);
    break;
  }
  case RONDO_BFLOAT16: {
    uint16_t x = mt_float_to_bf16((float)v);
    memcpy(b, &x, 2);
    break;
  }
  case RONDO_FLOAT32: {
    float x = (float)v;
    memcpy(b, &x, 4);
    break;
  }
  default: {
    double x = (double)v;
    memcpy(b, &x, 8);
    break;
  }
  }
}

/* Stores the AVG of an exact sum over n ranks, as reduce.h specifies:
 * floating types divide by n in the compute type (float for the 16-bit
 * types and float32, double for float64) and round back to nearest even;
 * integer types divide the sum by n, truncating toward zero. */
static inline void mt_store_avg(rondo_dtype_t dt, void *buf, size_t i, int64_t sum, int n)
{
  unsigned char *b = (unsigned char *)buf + i * mt_dtype_size(dt);
  float fq = (float)sum / (float)n;
  switch (dt) {
  case RONDO_FLOAT16: {
    uint16_t x = mt_float_to_half(fq);
    memcpy(b, &x, 2);
    break;
  }
  case RONDO_BFLOAT16: {
    uint16_t x = mt_float_to_bf16(fq);
    memcpy(b, &x, 2);
    break;
  }
  case RONDO_FLOAT32:
    memcpy(b, &fq, 4);
    break;
  case RONDO_FLOAT64: {
    double x = (double)sum / n;
    memcpy(b, &x, 8);
    break;
  }
  default:
    mt_store(dt, buf, i, sum / n);
    break;
  }
}

/* buf[k] = this rank's input for element first + k. */
static inline void mt_fill_input(rondo_dtype_t dt, rondo_op_t op, uint64_t first, size_t count,
                                 void *buf)
{
  for (size_t k = 0; k < count; k++)
    mt_store(dt, buf, k, mt_value(dt, op, mt.rank, first + k));
}

/* want[k] = the exact reduction over all ranks of element first + k. */
static inline void mt_fill_reduced(rondo_dtype_t dt, rondo_op_t op, uint64_t first, size_t count,
                                   void *want)
{
  for (size_t k = 0; k < count; k++) {
    int64_t acc = mt_value(dt, op, 0, first + k);
    for (int r = 1; r < mt.size; r++) {
      int64_t v = mt_value(dt, op, r, first + k);
      switch (op) {
      case RONDO_SUM:
      case RONDO_AVG:
        acc += v;
        break;
      case RONDO_PROD:
        acc *= v;
        break;
      case RONDO_MIN:
        acc = v < acc ? v : acc;
        break;
      default:
        acc = v > acc ? v : acc;
        break;
      }
    }
    if (op == RONDO_AVG)
      mt_store_avg(dt, want, k, acc, mt.size);
    else
      mt_store(dt, want, k, acc);
  }
}

/* ---- buffer checks ------------------------------------------------------------ */

static inline void mt_format_elem(rondo_dtype_t dt, const void *p, char *out, size_t n)
{
  switch (dt) {
  case RONDO_INT8: {
    int8_t v;
    memcpy(&v, p, 1);
    snprintf(out, n, "0x%02x (%d)", (unsigned)(uint8_t)v, v);
    break;
  }
  case RONDO_UINT8: {
    uint8_t v;
    memcpy(&v, p, 1);
    snprintf(out, n, "0x%02x (%u)", v, v);
    break;
  }
  case RONDO_INT16: {
    int16_t v;
    memcpy(&v, p, 2);
    snprintf(out, n, "0x%04x (%d)", (unsigned)(uint16_t)v, v);
    break;
  }
  case RONDO_INT32: {
    int32_t v;
    memcpy(&v, p, 4);
    snprintf(out, n, "0x%08x (%d)", (unsigned)v, v);
    break;
  }
  case RONDO_INT64: {
    int64_t v;
    memcpy(&v, p, 8);
    snprintf(out, n, "0x%016llx (%lld)", (unsigned long long)v, (long long)v);
    break;
  }
  case RONDO_FLOAT16: {
    uint16_t v;
    memcpy(&v, p, 2);
    snprintf(out, n, "0x%04x (%.9g)", v, (double)mt_half_to_float(v));
    break;
  }
  case RONDO_BFLOAT16: {
    uint16_t v;
    memcpy(&v, p, 2);
    snprintf(out, n, "0x%04x (%.9g)", v, (double)mt_bf16_to_float(v));
    break;
  }
  case RONDO_FLOAT32: {
    float v;
    memcpy(&v, p, 4);
    snprintf(out, n, "0x%08x (%.9g)", mt_f32_bits(v), (double)v);
    break;
  }
  default: {
    double v;
    uint64_t u;
    memcpy(&v, p, 8);
    memcpy(&u, p, 8);
    snprintf(out, n, "0x%016llx (%.17g)", (unsigned long long)u, v);
    break;
  }
  }
}

/* One check: got[0..count) == want[0..count) byte for byte. On a mismatch
 * the message gives how many elements differ and the first one. */
static inline int mt_check_elems_(int line, const char *what, rondo_dtype_t dt, const void *got,
                                  const void *want, size_t count)
{
  size_t es = mt_dtype_size(dt);
  mt.checks++;
  if (count == 0 || memcmp(got, want, count * es) == 0)
    return 1;
  size_t first = SIZE_MAX, bad = 0;
  for (size_t i = 0; i < count; i++) {
    if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0) {
      if (first == SIZE_MAX)
        first = i;
      bad++;
    }
  }
  char ge[64], we[64];
  mt_format_elem(dt, (const char *)want + first * es, we, sizeof we);
  mt_format_elem(dt, (const char *)got + first * es, ge, sizeof ge);
  mt_fail(line, "%s: %zu of %zu %s elements wrong; first at index %zu: expected %s, got %s", what,
          bad, count, mt_dtype_str(dt), first, we, ge);
  return 0;
}
#define mt_check_elems(what, dt, got, want, count)                                                 \
  mt_check_elems_(__LINE__, (what), (dt), (got), (want), (count))

/* One check: every byte of buf[0..nbytes) still holds MT_POISON. */
static inline int mt_check_poison_(int line, const char *what, const void *buf, size_t nbytes)
{
  const unsigned char *b = buf;
  mt.checks++;
  for (size_t i = 0; i < nbytes; i++) {
    if (b[i] != MT_POISON) {
      mt_fail(line, "%s: byte %zu of %zu was overwritten: expected 0x%02x, got 0x%02x", what, i,
              nbytes, MT_POISON, b[i]);
      return 0;
    }
  }
  return 1;
}
#define mt_check_poison(what, buf, nbytes) mt_check_poison_(__LINE__, (what), (buf), (nbytes))

/* Allocates n bytes (at least 1) or exits: a test cannot go on without it. */
static inline void *mt_alloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "%s: rank %d: out of memory allocating %zu bytes\n", mt.prog, mt.rank, n);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

/* ---- cross-rank comparison of result bytes --------------------------------- */

/* Records the hash of a result that must be identical on every rank; the
 * next mt_hash_flush() compares it with rank 0's. */
static inline void mt_hash_record(const void *buf, size_t nbytes)
{
  if (mt.nhash == mt.caphash) {
    mt.caphash = mt.caphash ? 2 * mt.caphash : 256;
    mt.hashes = realloc(mt.hashes, mt.caphash * sizeof *mt.hashes);
    mt.hash_where = realloc(mt.hash_where, mt.caphash * sizeof *mt.hash_where);
    if (!mt.hashes || !mt.hash_where) {
      fprintf(stderr, "%s: rank %d: out of memory\n", mt.prog, mt.rank);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  mt.hashes[mt.nhash] = mt_hash(buf, nbytes);
  memcpy(mt.hash_where[mt.nhash], mt.where, MT_WHERE_LEN);
  mt.nhash++;
}

/* Collective over MPI_COMM_WORLD: one allgather for every hash recorded
 * since the last flush (batched: one per call would double the run time at
 * 3-4 oversubscribed ranks). Every rank must have recorded the same cases. */
static inline void mt_hash_flush(void)
{
  unsigned long long n = mt.nhash, *counts = mt_alloc((size_t)mt.size * sizeof *counts);
  MPI_Allgather(&n, 1, MPI_UNSIGNED_LONG_LONG, counts, 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
  int same = 1;
  for (int r = 0; r < mt.size; r++)
    same &= counts[r] == n;
  free(counts);
  mt.checks++;
  if (!same) {
    mt_fail(__LINE__, "ranks recorded different numbers of result hashes (%llu here)", n);
    mt.nhash = 0;
    return;
  }
  uint64_t *all = mt_alloc((size_t)mt.size * (size_t)n * sizeof *all + 1);
  uint64_t none = 0;
  MPI_Allgather(n ? mt.hashes : &none, (int)n, MPI_UINT64_T, all, (int)n, MPI_UINT64_T,
                MPI_COMM_WORLD);
  if (mt.rank != 0) {
    char saved[MT_WHERE_LEN];
    memcpy(saved, mt.where, sizeof saved);
    for (size_t k = 0; k < n; k++) {
      mt.checks++;
      if (all[k] != mt.hashes[k]) {
        memcpy(mt.where, mt.hash_where[k], MT_WHERE_LEN);
        mt_fail(__LINE__,
                "result bytes differ from rank 0's (hash %016llx here, %016llx on rank 0)",
                (unsigned long long)mt.hashes[k], (unsigned long long)all[k]);
      }
    }
    memcpy(mt.where, saved, sizeof saved);
  }
  free(all);
  mt.nhash = 0;
}

/* ---- start, watchdog, finish -------------------------------------------------- */

static char mt_watchdog_msg[128];

static size_t mt_append(char *dst, size_t at, size_t cap, const char *src, size_t max)
{
  for (size_t i = 0; i < max && src[i] && at + 1 < cap; i++)
    dst[at++] = src[i];
  if (at + 1 < cap)
    dst[at++] = '\n';
  return at;
}

static void mt_watchdog(int sig)
{
  /* Async-signal-safe only: compose by hand, one write (so ranks' reports do
   * not interleave), _exit. */
  static char out[sizeof mt_watchdog_msg + MT_WHERE_LEN + MT_KEEP * MT_MSG_LEN + 8];
  size_t n = mt_append(out, 0, sizeof out, mt_watchdog_msg, sizeof mt_watchdog_msg);
  n = mt_append(out, n ? n - 1 : 0, sizeof out, mt.where, MT_WHERE_LEN);
  for (int i = 0; i < mt.kept; i++)
    n = mt_append(out, n, sizeof out, mt.msgs[i], MT_MSG_LEN);
  ssize_t rc = write(2, out, n);
  (void)rc;
  (void)sig;
  _exit(1);
}

static inline double mt_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int mt_env_flag(const char *name)
{
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

/* Starts the harness; MPI must be initialized. Collective over MPI_COMM_WORLD. */
static inline void mt_start(const char *prog)
{
  mt.prog = prog;
  MPI_Comm_rank(MPI_COMM_WORLD, &mt.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mt.size);
  mt.verbose = mt_env_flag("MPITEST_VERBOSE");
  mt.full = mt.size <= 2 || mt_env_flag("MPITEST_FULL");
  mt.crowded = !mt.full && mt.size > 3;
  mt.t0 = mt_now();

  unsigned long long seed = 20240601ULL;
  const char *s = getenv("MPITEST_SEED");
  if (mt.rank == 0 && s && *s)
    seed = strtoull(s, NULL, 0);
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  mt.seed = seed;

  /* fire before the launcher's timeout kills every rank without a word */
  const char *t = getenv("MPITEST_TIMEOUT"), *launcher = getenv("RONDO_TEST_TIMEOUT");
  long timeout = (launcher && *launcher ? strtol(launcher, NULL, 10) : 600) - 30;
  if (t && *t)
    timeout = strtol(t, NULL, 10);
  else if (timeout < 1)
    timeout = 1;
  snprintf(mt_watchdog_msg, sizeof mt_watchdog_msg,
           "%s: rank %d: still running after %ld s (MPITEST_TIMEOUT), in: ", prog, mt.rank,
           timeout);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = mt_watchdog;
  sigaction(SIGALRM, &sa, NULL);
  if (timeout > 0)
    alarm((unsigned)timeout);

  if (mt.rank == 0)
    printf("%s (%d ranks): seed %llu (MPITEST_SEED=n to change)\n", prog, mt.size, seed);
  fflush(stdout);
  mt_where("start");
}

/* rondo_init() (which initializes MPI) then mt_start(). Returns 0, or 1
 * after printing why rondo_init() failed (the program exits 1). */
/* The layout a test file promises (tests/multihost: "env MPITEST_NODES=2"
 * and "env MPITEST_LOCAL=2"), checked against what rondo reports, so a bed
 * that silently ran everything on one node fails instead of passing. */
static inline void mt_expect_layout(rondo_comm_t comm)
{
  const char *nodes = getenv("MPITEST_NODES"), *local = getenv("MPITEST_LOCAL");
  mt_where("the layout the test file names");
  if (nodes != NULL)
    MT_EQ_INT(MT_QUERY(rondo_comm_node_count, comm), atoi(nodes));
  if (local != NULL)
    MT_EQ_INT(MT_QUERY(rondo_comm_local_size, comm), atoi(local));
  /* The way the argument check's packets cross nodes is the one the
   * topology line names: a forced one, or AUTO's where every node is on
   * this host (virtual nodes, blocks of consecutive ranks): rondo's
   * exchange wherever MPI's all-reduce is flat (nodes of one rank, Open
   * MPI, ranks that yield) or nodes are equal and they and their number
   * powers of two (the inline data then crosses from one rank a node),
   * else MPI's. */
  const char *exchange = getenv("RONDO_CHECK_EXCHANGE");
  int auto_exchange = exchange == NULL || strcmp(exchange, "auto") == 0;
  if (MT_QUERY(rondo_comm_node_count, comm) > 1 &&
      (!auto_exchange || getenv("RONDO_NODE_SIZE") != NULL)) {
    char line[1024] = "";
    MT_EQ_STATUS(rondo_comm_topology(comm, line, sizeof line, NULL), RONDO_SUCCESS);
    int local_size = MT_QUERY(rondo_comm_local_size, comm), max_local = 0, min_local = 0;
    int node_count = MT_QUERY(rondo_comm_node_count, comm);
    MPI_Allreduce(&local_size, &max_local, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&local_size, &min_local, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int leaders = max_local > 1 && min_local == max_local && (max_local & (max_local - 1)) == 0 &&
                  (node_count & (node_count - 1)) == 0;
#ifdef OPEN_MPI
    int flat = 1;
#else
    int flat = max_local == 1 || strstr(line, "(oversubscribed") != NULL;
#endif
    int own = auto_exchange ? flat || leaders : strcmp(exchange, "rondo") == 0;
    const char *want = !own    ? "argument check: MPI's all-reduce"
                       : leaders ? "argument check: rondo's exchange, inline data above "
                                 : "argument check: rondo's exchange";
    MT_CHECK(strstr(line, want) != NULL, "RONDO_CHECK_EXCHANGE=%s: '%s' in: %s",
             exchange ? exchange : "(unset)", want, line);
  }
  if (nodes == NULL || atoi(nodes) < 2)
    return;
  /* Across nodes the network was measured when the comm was made (or set
   * by RONDO_NET_*), and every rank must hold the same values, or ranks
   * could choose different algorithms for one call. Every rank joins the
   * comparison, whatever it found. */
  char topo[1024] = "", *net = NULL;
  if (MT_EQ_STATUS(rondo_comm_topology(comm, topo, sizeof topo, NULL), RONDO_SUCCESS))
    net = strstr(topo, "network between nodes:");
  if (MT_CHECK(net != NULL, "the topology names the network: %s", topo)) {
    const char *knob_lat = getenv("RONDO_NET_LATENCY_US"), *knob_bw = getenv("RONDO_NET_GBITS");
    const char *cal = getenv("RONDO_NET_CALIBRATE");
    int off = cal != NULL && strcasecmp(cal, "off") == 0;
    const char *unset = off ? "(default guess)" : "(measured)";
    char want[96];
    if (knob_lat != NULL)
      snprintf(want, sizeof want, "latency %.1f us (set by knob)", atof(knob_lat));
    else
      snprintf(want, sizeof want, "us %s", unset);
    MT_CHECK(strstr(net, want) != NULL, "latency '%s' in: %s", want, net);
    if (knob_bw != NULL)
      snprintf(want, sizeof want, "%.2f Gbit/s per node link (set by knob)", atof(knob_bw));
    else
      snprintf(want, sizeof want, "link %s", unset);
    MT_CHECK(strstr(net, want) != NULL, "bandwidth '%s' in: %s", want, net);
    /* with both knobs set (or calibration off), nothing is measured */
    MT_CHECK((!off && (knob_lat == NULL || knob_bw == NULL)) ==
                 (strstr(net, "measuring took") != NULL),
             "measured only when a knob is missing: %s", net);
  } else {
    net = topo;
  }
  uint64_t h = mt_hash(net, strlen(net)), lo, hi;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  MT_CHECK(lo == hi, "every rank holds the same network values (rank %d: %s)", mt.rank, net);
}

static inline int mt_rondo_start(int *argc, char ***argv, const char *prog)
{
  rondo_status_t st = rondo_init(argc, argv);
  if (st != RONDO_SUCCESS) {
    fprintf(stderr, "%s: rondo_init failed: %s: %s\n", prog, mt_status_name(st),
            rondo_last_error());
    rondo_finalize(); /* finalizes MPI, which rondo_init started */
    return 1;
  }
  mt_start(prog);
  mt_expect_layout(rondo_world());
  return 0;
}

/* Collective: sums checks and failures over MPI_COMM_WORLD, rank 0 prints
 * the first failures of every rank and the final line. Returns the exit
 * status, the same on every rank: 1 if anything failed or nothing was
 * checked (a test that checks nothing cannot fail, which is a bug too). */
static inline int mt_finish(void)
{
  mt_where("finish");
  if (mt.nhash)
    mt_hash_flush();
  long long mine[3] = {mt.checks, mt.failed, mt.kept}, total[2];
  long long sums[2] = {mt.checks, mt.failed};
  MPI_Allreduce(sums, total, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  long long *per = mt.rank == 0 ? mt_alloc((size_t)mt.size * sizeof mine) : NULL;
  char *msgs = mt.rank == 0 ? mt_alloc((size_t)mt.size * sizeof mt.msgs) : NULL;
  MPI_Gather(mine, 3, MPI_LONG_LONG, per, 3, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  MPI_Gather(mt.msgs, (int)sizeof mt.msgs, MPI_CHAR, msgs, (int)sizeof mt.msgs, MPI_CHAR, 0,
             MPI_COMM_WORLD);
  alarm(0);
  if (mt.rank == 0) {
    for (int r = 0; r < mt.size; r++) {
      long long failed = per[3 * r + 1], kept = per[3 * r + 2];
      for (long long i = 0; i < kept; i++)
        printf("FAIL %s\n", msgs + ((size_t)r * MT_KEEP + (size_t)i) * MT_MSG_LEN);
      if (failed > kept)
        printf("FAIL rank %d: %lld more failures not shown\n", r, failed - kept);
    }
    printf("%s (%d ranks): %.1f s\n", mt.prog, mt.size, mt_now() - mt.t0);
    printf("%s (%d ranks): %lld checks, %lld failed\n", mt.prog, mt.size, total[0], total[1]);
    fflush(stdout);
  }
  free(per);
  free(msgs);
  free(mt.hashes);
  free(mt.hash_where);
  mt.hashes = NULL;
  mt.hash_where = NULL;
  int rc = total[1] != 0 || total[0] == 0 ? 1 : 0;
  return rc;
}

/* Collective: every rank skips (exit status 77) with the reason on rank 0. */
static inline int mt_skip(const char *why)
{
  alarm(0);
  if (mt.rank == 0)
    printf("%s (%d ranks): SKIP: %s\n", mt.prog, mt.size, why);
  fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  return 77;
}

/* mt_rondo_start, then what the tests of exact values need: at most 127
 * ranks (the range of their value generators) and a world comm. Returns -1
 * when the test goes on, with *comm set; otherwise the exit status, with
 * rondo finalized. */
static inline int mt_exact_start(int *argc, char ***argv, const char *prog, rondo_comm_t *comm)
{
  if (mt_rondo_start(argc, argv, prog) != 0)
    return 1;
  int rc = -1;
  *comm = rondo_world();
  if (mt.size > 127)
    rc = mt_skip("the exact-value generators cover at most 127 ranks");
  else if (!MT_CHECK(*comm != NULL, "rondo_world() after rondo_init"))
    rc = mt_finish();
  if (rc != -1)
    rondo_finalize();
  return rc;
}

#endif /* RONDO_MPITEST_H */
