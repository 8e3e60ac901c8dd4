/*
 * Inputs and expected results of rondo-bench's check. Written from the
 * documented semantics (docs/api.md), independently of lib/: the float16
 * and bfloat16 roundings below are the bench's own.
 *
 * Reduction inputs are small integers, so every sum, product, minimum and
 * maximum is exact in every dtype, in any order: sums stay within 2 x ranks
 * (bfloat16 holds integers up to 256 exactly, so up to 128 ranks), products
 * are +-2, and integer types wrap as rondo documents.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tools/bench/bench.h"

long long data_reduce_input(int rank, size_t i, rondo_op_t op, int nranks)
{
  if (op == RONDO_PROD) /* one rank contributes 2, a few -1, the rest 1 */
    return i % (size_t)nranks == (size_t)rank ? 2 : (i + (size_t)rank) % 5 == 0 ? -1 : 1;
  return (long long)((i + 3 * (size_t)rank) % 4) - 1; /* -1..2 */
}

long long data_move_input(int src, int dst, size_t i)
{
  return (long long)((i + 13 * (size_t)src + 7 * (size_t)dst) % 100);
}

/* float -> IEEE binary16, round to nearest even. */
static uint16_t to_half(float f)
{
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
  if (exp == 0xff)
    return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) { /* subnormal or zero */
    if (e < -10)
      return (uint16_t)sign;
    man |= 0x800000u;
    int shift = 14 - e;
    uint32_t h = man >> shift, rest = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1)))
      h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1)))
    h++; /* may carry into the exponent, up to infinity: correct */
  return (uint16_t)(sign | h);
}

static uint16_t to_bf16(float f)
{
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static float from_half(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float v;
  if (exp == 0)
    v = ldexpf((float)man, -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = ldexpf((float)(man | 0x400u), (int)exp - 25);
  return sign ? -v : v;
}

static float from_bf16(uint16_t b)
{
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* Stores the value v (float-valued types: as the nearest value). */
static void store_double(void *buf, rondo_dtype_t dtype, size_t i, double v)
{
  switch (dtype) {
  case RONDO_FLOAT16: ((uint16_t *)buf)[i] = to_half((float)v); break;
  case RONDO_BFLOAT16: ((uint16_t *)buf)[i] = to_bf16((float)v); break;
  case RONDO_FLOAT32: ((float *)buf)[i] = (float)v; break;
  case RONDO_FLOAT64: ((double *)buf)[i] = v; break;
  default: break;
  }
}

void data_store(void *buf, rondo_dtype_t dtype, size_t i, long long v)
{
  switch (dtype) {
  case RONDO_INT8: ((int8_t *)buf)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
  case RONDO_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(uint64_t)v; break;
  case RONDO_INT16: ((int16_t *)buf)[i] = (int16_t)(uint16_t)(uint64_t)v; break;
  case RONDO_INT32: ((int32_t *)buf)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
  case RONDO_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
  default: store_double(buf, dtype, i, (double)v); break;
  }
}

/* The integer as the dtype reads it back: wrapped to its width, signed
 * except uint8. */
static long long as_int(rondo_dtype_t dtype, uint64_t v)
{
  switch (dtype) {
  case RONDO_INT8: return (int8_t)(uint8_t)v;
  case RONDO_UINT8: return (uint8_t)v;
  case RONDO_INT16: return (int16_t)(uint16_t)v;
  case RONDO_INT32: return (int32_t)(uint32_t)v;
  default: return (int64_t)v;
  }
}

void data_expect_reduce(void *out, size_t j, rondo_dtype_t dtype, rondo_op_t op, size_t i,
                        int n)
{
  int is_float = dtype == RONDO_FLOAT16 || dtype == RONDO_BFLOAT16 || dtype == RONDO_FLOAT32 ||
                 dtype == RONDO_FLOAT64;
  if (!is_float) {
    uint64_t acc = 0;
    long long best = 0;
    for (int r = 0; r < n; r++) {
      long long x = as_int(dtype, (uint64_t)data_reduce_input(r, i, op, n));
      if (r == 0) {
        acc = (uint64_t)x;
        best = x;
        continue;
      }
      if (op == RONDO_SUM || op == RONDO_AVG)
        acc += (uint64_t)x; /* wraps: unsigned */
      else if (op == RONDO_PROD)
        acc *= (uint64_t)x;
      else if (op == RONDO_MIN && x < best)
        best = x;
      else if (op == RONDO_MAX && x > best)
        best = x;
    }
    long long v = op == RONDO_MIN || op == RONDO_MAX ? best : as_int(dtype, acc);
    if (op == RONDO_AVG)
      v = v / n; /* truncates toward zero */
    data_store(out, dtype, j, v);
    return;
  }
  double acc = 0;
  for (int r = 0; r < n; r++) {
    double x = (double)data_reduce_input(r, i, op, n);
    if (r == 0)
      acc = x;
    else if (op == RONDO_SUM || op == RONDO_AVG)
      acc += x;
    else if (op == RONDO_PROD)
      acc *= x;
    else if (op == RONDO_MIN)
      acc = x < acc ? x : acc;
    else
      acc = x > acc ? x : acc;
  }
  if (op != RONDO_AVG) {
    store_double(out, dtype, j, acc); /* exact */
    return;
  }
  /* AVG: the sum in the dtype, divided by n in the compute type (float;
   * double for float64), then narrowed. */
  if (dtype == RONDO_FLOAT64) {
    ((double *)out)[j] = acc / n;
    return;
  }
  float sum = (float)acc;
  if (dtype == RONDO_FLOAT16)
    sum = from_half(to_half(sum));
  else if (dtype == RONDO_BFLOAT16)
    sum = from_bf16(to_bf16(sum));
  store_double(out, dtype, j, (double)(sum / (float)n));
}

MPI_Datatype data_mpi_type(rondo_dtype_t dtype, int for_reduction)
{
  switch (dtype) {
  case RONDO_INT8: return MPI_INT8_T;
  case RONDO_UINT8: return MPI_UINT8_T;
  case RONDO_INT16: return MPI_INT16_T;
  case RONDO_INT32: return MPI_INT32_T;
  case RONDO_INT64: return MPI_INT64_T;
  case RONDO_FLOAT32: return MPI_FLOAT;
  case RONDO_FLOAT64: return MPI_DOUBLE;
  default: /* 16-bit floats: MPI can move them, not reduce them */
    return for_reduction ? MPI_DATATYPE_NULL : MPI_UINT16_T;
  }
}

MPI_Op data_mpi_op(rondo_op_t op)
{
  switch (op) {
  case RONDO_SUM: return MPI_SUM;
  case RONDO_MIN: return MPI_MIN;
  case RONDO_MAX: return MPI_MAX;
  case RONDO_PROD: return MPI_PROD;
  default: return MPI_OP_NULL; /* AVG */
  }
}
