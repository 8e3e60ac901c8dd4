/*
 * Reduction kernels; reduce.h is the contract.
 *
 * Layout: 16-bit float conversions, the element ops, one scalar kernel per
 * dtype x op, vector kernels for the ops that stream large buffers (SUM on
 * every dtype, PROD on the floating ones), then the dispatch tables.
 *
 * Why explicit vector code: the library is built with plain -O2, where GCC's
 * cheap cost model does not vectorize a loop that needs a run-time alias
 * check, and dst may alias a or b here. Each vector step loads a block of a
 * and b before it stores the same block of dst, so exact aliasing is safe.
 * The baseline kernels use SSE2 (always present on x86-64); a second table
 * with AVX2 (and F16C for float16) is chosen once at run time when the CPU
 * has it. Other architectures get the scalar kernels. MIN/MAX and integer
 * PROD stay scalar: they rarely run on large buffers, and the IEEE 754-2019
 * NaN and signed-zero rules would make the vector code long.
 *
 * All of it assumes the default floating-point environment (round to
 * nearest, no flush-to-zero), as MPI reductions do.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rondo.h"
#include "reduce.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define REDUCE_HAVE_AVX2 1
#define REDUCE_AVX2 __attribute__((target("avx2,f16c")))
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- bit patterns and 16-bit conversions ---------------------------------- */

static inline uint32_t f32_bits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float f32_from_bits(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline float quiet_f32(float f) { return f32_from_bits(f32_bits(f) | 0x00400000u); }

static inline double quiet_f64(double d)
{
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  u |= UINT64_C(0x0008000000000000);
  memcpy(&d, &u, sizeof d);
  return d;
}

/* NaNs come out quiet with their payload kept, as a hardware conversion does. */
static inline float half_to_float(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f)
    return f32_from_bits(sign | 0x7f800000u | mant << 13 | (mant ? 0x00400000u : 0));
  if (exp == 0) { /* zero or subnormal: mant * 2^-24, exact in float */
    float m = (float)mant * 0x1p-24f;
    return sign ? -m : m;
  }
  return f32_from_bits(sign | (exp + 112u) << 23 | mant << 13); /* rebias 127 - 15 */
}

static inline uint16_t float_to_half(float f)
{
  uint32_t x = f32_bits(f);
  uint16_t sign = (uint16_t)(x >> 16 & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) /* NaN: keep the top payload bits, set the quiet bit */
    return (uint16_t)(sign | 0x7e00u | (ax >> 13 & 0x3ffu));
  if (ax >= 0x477ff000u) /* >= 65520, the midpoint above 65504: inf */
    return (uint16_t)(sign | 0x7c00u);
  if (ax >= 0x38800000u) { /* >= 2^-14: normal; a carry may bump the exponent */
    uint32_t r = ax - (112u << 23);
    r += 0x0fffu + (r >> 13 & 1u);
    return (uint16_t)(sign | r >> 13);
  }
  if (ax <= 0x33000000u) /* <= 2^-25, half the smallest subnormal: ties to 0 */
    return sign;
  /* subnormal: the significand in units of 2^-24, rounded to nearest even */
  uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - (ax >> 23); /* 14..24 */
  uint32_t q = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  q += rem > half || (rem == half && (q & 1u));
  return (uint16_t)(sign | q);
}

static inline float bf16_to_float(uint16_t h)
{
  uint32_t x = (uint32_t)h << 16;
  if ((x & 0x7fffffffu) > 0x7f800000u)
    x |= 0x00400000u;
  return f32_from_bits(x);
}

static inline uint16_t float_to_bf16(float f)
{
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) /* truncating alone could make inf */
    return (uint16_t)(x >> 16 | 0x0040u);
  x += 0x7fffu + (x >> 16 & 1u); /* round to nearest even; max float -> inf */
  return (uint16_t)(x >> 16);
}

float reduce_half_to_float(uint16_t h) { return half_to_float(h); }
uint16_t reduce_float_to_half(float f) { return float_to_half(f); }
float reduce_bf16_to_float(uint16_t h) { return bf16_to_float(h); }
uint16_t reduce_float_to_bf16(float f) { return float_to_bf16(f); }

/* ---- element ops ---------------------------------------------------------- */

/* Integer SUM and PROD run in the unsigned type: wrap-around, no UB, and the
 * same bits for the signed type. uint8 operands promote to int, which holds
 * 255 * 255. */
#define OP_ADD(p, q) ((p) + (q))
#define OP_MUL(p, q) ((p) * (q))
/* uint16 operands promote to int, which does not hold 65535 * 65535. */
#define OP_MUL_U16(p, q) ((uint32_t)(p) * (q))
#define OP_MIN(p, q) ((q) < (p) ? (q) : (p))
#define OP_MAX(p, q) ((p) < (q) ? (q) : (p))

/* IEEE 754-2019 minimum/maximum. Equal operands can differ only as -0/+0. */
#define REDUCE_DEFINE_MINMAX(T, sfx)                                           \
  static inline T minimum_##sfx(T p, T q)                                      \
  {                                                                            \
    if (isnan(p))                                                              \
      return quiet_##sfx(p);                                                   \
    if (isnan(q))                                                              \
      return quiet_##sfx(q);                                                   \
    if (p == q)                                                                \
      return signbit(p) ? p : q;                                               \
    return p < q ? p : q;                                                      \
  }                                                                            \
  static inline T maximum_##sfx(T p, T q)                                      \
  {                                                                            \
    if (isnan(p))                                                              \
      return quiet_##sfx(p);                                                   \
    if (isnan(q))                                                              \
      return quiet_##sfx(q);                                                   \
    if (p == q)                                                                \
      return signbit(p) ? q : p;                                               \
    return p < q ? q : p;                                                      \
  }
REDUCE_DEFINE_MINMAX(float, f32)
REDUCE_DEFINE_MINMAX(double, f64)

/* 16-bit floats: widen exactly, run the op in float, round back. */
#define REDUCE_DEFINE_16BIT_OPS(sfx, widen, narrow)                            \
  static inline uint16_t sfx##_add(uint16_t p, uint16_t q)                     \
  {                                                                            \
    return narrow(widen(p) + widen(q));                                        \
  }                                                                            \
  static inline uint16_t sfx##_mul(uint16_t p, uint16_t q)                     \
  {                                                                            \
    return narrow(widen(p) * widen(q));                                        \
  }                                                                            \
  static inline uint16_t sfx##_min(uint16_t p, uint16_t q)                     \
  {                                                                            \
    return narrow(minimum_f32(widen(p), widen(q)));                            \
  }                                                                            \
  static inline uint16_t sfx##_max(uint16_t p, uint16_t q)                     \
  {                                                                            \
    return narrow(maximum_f32(widen(p), widen(q)));                            \
  }
REDUCE_DEFINE_16BIT_OPS(f16, half_to_float, float_to_half)
REDUCE_DEFINE_16BIT_OPS(bf16, bf16_to_float, float_to_bf16)

/* ---- kernels -------------------------------------------------------------- */

typedef void (*reduce_fn)(void *dst, const void *a, const void *b, size_t n);

#define REDUCE_SCALAR(name, T, OP)                                             \
  static void name(void *dst, const void *a, const void *b, size_t n)         \
  {                                                                            \
    T *d = dst;                                                                \
    const T *x = a, *y = b;                                                    \
    for (size_t i = 0; i < n; i++)                                             \
      d[i] = (T)OP(x[i], y[i]);                                                \
  }

/* W elements per vector step: STORE(d, VOP(LOAD(x), LOAD(y))); OP does the
 * head and the tail. Both operands are loaded before the store, so dst may be
 * a or b. The head (under W elements) aligns dst to the vector: stores that
 * split cache lines cost ~15% on L2-resident buffers, split loads less. */
#define REDUCE_VECTOR(name, attr, T, W, LOAD, STORE, VOP, OP)                  \
  attr static void name(void *dst, const void *a, const void *b, size_t n)    \
  {                                                                            \
    T *d = dst;                                                                \
    const T *x = a, *y = b;                                                    \
    size_t head = (size_t)(-(uintptr_t)dst % ((W) * sizeof(T))) / sizeof(T);  \
    size_t i = 0;                                                              \
    for (; i < head && i < n; i++)                                             \
      d[i] = (T)OP(x[i], y[i]);                                                \
    for (; i + (W) <= n; i += (W))                                             \
      STORE((void *)(d + i),                                                   \
            VOP(LOAD((const void *)(x + i)), LOAD((const void *)(y + i))));    \
    for (; i < n; i++)                                                         \
      d[i] = (T)OP(x[i], y[i]);                                                \
  }

REDUCE_SCALAR(prod_u8, uint8_t, OP_MUL)
REDUCE_SCALAR(min_i8, int8_t, OP_MIN)
REDUCE_SCALAR(max_i8, int8_t, OP_MAX)
REDUCE_SCALAR(min_u8, uint8_t, OP_MIN)
REDUCE_SCALAR(max_u8, uint8_t, OP_MAX)
REDUCE_SCALAR(prod_u16, uint16_t, OP_MUL_U16)
REDUCE_SCALAR(min_i16, int16_t, OP_MIN)
REDUCE_SCALAR(max_i16, int16_t, OP_MAX)
REDUCE_SCALAR(prod_u32, uint32_t, OP_MUL)
REDUCE_SCALAR(min_i32, int32_t, OP_MIN)
REDUCE_SCALAR(max_i32, int32_t, OP_MAX)
REDUCE_SCALAR(prod_u64, uint64_t, OP_MUL)
REDUCE_SCALAR(min_i64, int64_t, OP_MIN)
REDUCE_SCALAR(max_i64, int64_t, OP_MAX)
REDUCE_SCALAR(sum_f16, uint16_t, f16_add)
REDUCE_SCALAR(prod_f16, uint16_t, f16_mul)
REDUCE_SCALAR(min_f16, uint16_t, f16_min)
REDUCE_SCALAR(max_f16, uint16_t, f16_max)
REDUCE_SCALAR(min_bf16, uint16_t, bf16_min)
REDUCE_SCALAR(max_bf16, uint16_t, bf16_max)
REDUCE_SCALAR(min_f32, float, minimum_f32)
REDUCE_SCALAR(max_f32, float, maximum_f32)
REDUCE_SCALAR(min_f64, double, minimum_f64)
REDUCE_SCALAR(max_f64, double, maximum_f64)

#if defined(__SSE2__)
/* bf16 kernels for one vector width: PFX is _mm or _mm256, SI si128 or si256.
 * bf16 is the top half of a binary32: widening puts it there (unpacking with
 * zero, in-lane); narrowing rounds to nearest even by adding 0x7fff plus the
 * lowest kept bit. NaNs need no care, unlike in float_to_bf16(): a NaN out of
 * SSE arithmetic on widened bf16 is an operand (quieted) or the default NaN,
 * so its low 16 bits are zero, the add cannot carry, and the NaN survives.
 * The arithmetic shift sign-extends so packs_epi32 keeps all 16 bits; it
 * packs in-lane, which undoes the in-lane unpack order. */
#define REDUCE_BF16_KERNELS(ISA, attr, PFX, SI, VI, VF, W)                     \
  attr static inline VI bf16x_narrow##ISA(VF f)                                \
  {                                                                            \
    VI x = PFX##_castps_##SI(f);                                               \
    VI odd = PFX##_and_##SI(PFX##_srli_epi32(x, 16), PFX##_set1_epi32(1));     \
    VI r = PFX##_add_epi32(x, PFX##_add_epi32(odd, PFX##_set1_epi32(0x7fff))); \
    return PFX##_srai_epi32(r, 16);                                            \
  }                                                                            \
  REDUCE_BF16_OP(bf16x_add##ISA, attr, PFX, SI, VI, VF, PFX##_add_ps, bf16x_narrow##ISA) \
  REDUCE_BF16_OP(bf16x_mul##ISA, attr, PFX, SI, VI, VF, PFX##_mul_ps, bf16x_narrow##ISA) \
  REDUCE_VECTOR(sum_bf16##ISA, attr, uint16_t, W, PFX##_loadu_##SI,            \
                PFX##_storeu_##SI, bf16x_add##ISA, bf16_add)                   \
  REDUCE_VECTOR(prod_bf16##ISA, attr, uint16_t, W, PFX##_loadu_##SI,           \
                PFX##_storeu_##SI, bf16x_mul##ISA, bf16_mul)

#define REDUCE_BF16_OP(name, attr, PFX, SI, VI, VF, FOP, NARROW)               \
  attr static inline VI name(VI p, VI q)                                       \
  {                                                                            \
    VI z = PFX##_setzero_##SI();                                               \
    VF lo = FOP(PFX##_cast##SI##_ps(PFX##_unpacklo_epi16(z, p)),               \
                PFX##_cast##SI##_ps(PFX##_unpacklo_epi16(z, q)));              \
    VF hi = FOP(PFX##_cast##SI##_ps(PFX##_unpackhi_epi16(z, p)),               \
                PFX##_cast##SI##_ps(PFX##_unpackhi_epi16(z, q)));              \
    return PFX##_packs_epi32(NARROW(lo), NARROW(hi));                          \
  }

REDUCE_BF16_KERNELS(, , _mm, si128, __m128i, __m128, 8)
REDUCE_VECTOR(sum_u8, , uint8_t, 16, _mm_loadu_si128, _mm_storeu_si128, _mm_add_epi8, OP_ADD)
REDUCE_VECTOR(sum_u16, , uint16_t, 8, _mm_loadu_si128, _mm_storeu_si128, _mm_add_epi16, OP_ADD)
REDUCE_VECTOR(sum_u32, , uint32_t, 4, _mm_loadu_si128, _mm_storeu_si128, _mm_add_epi32, OP_ADD)
REDUCE_VECTOR(sum_u64, , uint64_t, 2, _mm_loadu_si128, _mm_storeu_si128, _mm_add_epi64, OP_ADD)
REDUCE_VECTOR(sum_f32, , float, 4, _mm_loadu_ps, _mm_storeu_ps, _mm_add_ps, OP_ADD)
REDUCE_VECTOR(prod_f32, , float, 4, _mm_loadu_ps, _mm_storeu_ps, _mm_mul_ps, OP_MUL)
REDUCE_VECTOR(sum_f64, , double, 2, _mm_loadu_pd, _mm_storeu_pd, _mm_add_pd, OP_ADD)
REDUCE_VECTOR(prod_f64, , double, 2, _mm_loadu_pd, _mm_storeu_pd, _mm_mul_pd, OP_MUL)
#else
REDUCE_SCALAR(sum_u8, uint8_t, OP_ADD)
REDUCE_SCALAR(sum_u16, uint16_t, OP_ADD)
REDUCE_SCALAR(sum_u32, uint32_t, OP_ADD)
REDUCE_SCALAR(sum_u64, uint64_t, OP_ADD)
REDUCE_SCALAR(sum_bf16, uint16_t, bf16_add)
REDUCE_SCALAR(prod_bf16, uint16_t, bf16_mul)
REDUCE_SCALAR(sum_f32, float, OP_ADD)
REDUCE_SCALAR(prod_f32, float, OP_MUL)
REDUCE_SCALAR(sum_f64, double, OP_ADD)
REDUCE_SCALAR(prod_f64, double, OP_MUL)
#endif

#ifdef REDUCE_HAVE_AVX2
/* F16C converts 8 float16 both ways in hardware, rounding to nearest even;
 * it agrees bit for bit with half_to_float()/float_to_half() on every input,
 * NaNs included (checked exhaustively when this was written). */
#define REDUCE_F16X8(name, fop)                                                \
  REDUCE_AVX2 static inline __m128i name(__m128i p, __m128i q)                 \
  {                                                                            \
    __m256 r = fop(_mm256_cvtph_ps(p), _mm256_cvtph_ps(q));                    \
    return _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);  \
  }
REDUCE_F16X8(f16x8_add, _mm256_add_ps)
REDUCE_F16X8(f16x8_mul, _mm256_mul_ps)

REDUCE_VECTOR(sum_u8_avx2, REDUCE_AVX2, uint8_t, 32, _mm256_loadu_si256, _mm256_storeu_si256, _mm256_add_epi8, OP_ADD)
REDUCE_VECTOR(sum_u16_avx2, REDUCE_AVX2, uint16_t, 16, _mm256_loadu_si256, _mm256_storeu_si256, _mm256_add_epi16, OP_ADD)
REDUCE_VECTOR(sum_u32_avx2, REDUCE_AVX2, uint32_t, 8, _mm256_loadu_si256, _mm256_storeu_si256, _mm256_add_epi32, OP_ADD)
REDUCE_VECTOR(sum_u64_avx2, REDUCE_AVX2, uint64_t, 4, _mm256_loadu_si256, _mm256_storeu_si256, _mm256_add_epi64, OP_ADD)
REDUCE_VECTOR(sum_f16_avx2, REDUCE_AVX2, uint16_t, 8, _mm_loadu_si128, _mm_storeu_si128, f16x8_add, f16_add)
REDUCE_VECTOR(prod_f16_avx2, REDUCE_AVX2, uint16_t, 8, _mm_loadu_si128, _mm_storeu_si128, f16x8_mul, f16_mul)
REDUCE_VECTOR(sum_f32_avx2, REDUCE_AVX2, float, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps, OP_ADD)
REDUCE_VECTOR(prod_f32_avx2, REDUCE_AVX2, float, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_mul_ps, OP_MUL)
REDUCE_VECTOR(sum_f64_avx2, REDUCE_AVX2, double, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_add_pd, OP_ADD)
REDUCE_VECTOR(prod_f64_avx2, REDUCE_AVX2, double, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_mul_pd, OP_MUL)
REDUCE_BF16_KERNELS(_avx2, REDUCE_AVX2, _mm256, si256, __m256i, __m256, 16)
#endif

/* ---- dispatch ------------------------------------------------------------- */

typedef reduce_fn reduce_table_t[RONDO_DTYPE_COUNT][RONDO_OP_COUNT];

#define REDUCE_ROW(sum, min, max, prod)                                        \
  {[RONDO_SUM] = sum, [RONDO_AVG] = sum, [RONDO_MIN] = min, [RONDO_MAX] = max, \
   [RONDO_PROD] = prod}

/* ISA is empty for the baseline table or _avx2; int8 and uint8 share the
 * wrap-around SUM and PROD, as do all the signed and unsigned integers. */
#define REDUCE_TABLE(ISA)                                                      \
  {                                                                            \
    [RONDO_INT8] = REDUCE_ROW(sum_u8##ISA, min_i8, max_i8, prod_u8),            \
    [RONDO_UINT8] = REDUCE_ROW(sum_u8##ISA, min_u8, max_u8, prod_u8),           \
    [RONDO_INT16] = REDUCE_ROW(sum_u16##ISA, min_i16, max_i16, prod_u16),       \
    [RONDO_INT32] = REDUCE_ROW(sum_u32##ISA, min_i32, max_i32, prod_u32),       \
    [RONDO_INT64] = REDUCE_ROW(sum_u64##ISA, min_i64, max_i64, prod_u64),       \
    [RONDO_FLOAT16] = REDUCE_ROW(sum_f16##ISA, min_f16, max_f16, prod_f16##ISA), \
    [RONDO_BFLOAT16] = REDUCE_ROW(sum_bf16##ISA, min_bf16, max_bf16, prod_bf16##ISA), \
    [RONDO_FLOAT32] = REDUCE_ROW(sum_f32##ISA, min_f32, max_f32, prod_f32##ISA), \
    [RONDO_FLOAT64] = REDUCE_ROW(sum_f64##ISA, min_f64, max_f64, prod_f64##ISA), \
  }

static const reduce_table_t reduce_baseline = REDUCE_TABLE();
#ifdef REDUCE_HAVE_AVX2
static const reduce_table_t reduce_avx2 = REDUCE_TABLE(_avx2);
#endif

static const reduce_table_t *reduce_select(void)
{
#ifdef REDUCE_HAVE_AVX2
  /* __builtin_cpu_supports also checks that the OS saves the YMM registers;
   * F16C (CPUID.1:ECX) needs that too, but not every compiler names it. */
  unsigned eax, ebx, ecx, edx;
  __builtin_cpu_init(); /* idempotent; needed if we run before constructors */
  if (__builtin_cpu_supports("avx2") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) &&
      (ecx & bit_F16C))
    return &reduce_avx2;
#endif
  return &reduce_baseline;
}

/* The only global state: every thread that races here computes and stores
 * the same pointer to constant data, so the race is benign. */
static const reduce_table_t *reduce_kernels(void)
{
  static const reduce_table_t *chosen;
  const reduce_table_t *t = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
  if (t == NULL) {
    t = reduce_select();
    __atomic_store_n(&chosen, t, __ATOMIC_RELEASE);
  }
  return t;
}

void reduce_apply(void *dst, const void *a, const void *b, size_t count,
                  rondo_dtype_t dtype, rondo_op_t op)
{
  assert((unsigned)dtype < RONDO_DTYPE_COUNT && (unsigned)op < RONDO_OP_COUNT &&
         op != RONDO_ADASUM);
  (*reduce_kernels())[dtype][op](dst, a, b, count);
}

/* ---- scale and average ---------------------------------------------------- */

typedef void (*reduce_scale_fn)(void *dst, const void *src, size_t n, double factor);

#define REDUCE_SAME(x) (x)

/* CT is the compute type; WIDEN/NARROW convert between it and T. */
#define REDUCE_SCALE_FLOAT(name, T, CT, WIDEN, NARROW)                         \
  static void name(void *dst, const void *src, size_t n, double factor)       \
  {                                                                            \
    T *d = dst;                                                                \
    const T *s = src;                                                          \
    CT f = (CT)factor;                                                         \
    for (size_t i = 0; i < n; i++)                                             \
      d[i] = NARROW(WIDEN(s[i]) * f);                                          \
  }

/* rint rounds to nearest even in the default rounding mode. NaN (0 * inf,
 * a NaN factor) becomes 0; the comparisons come first because converting an
 * out-of-range double to an integer is UB. (double)INT64_MAX is 2^63. */
#define REDUCE_SCALE_INT(name, T, LO, HI)                                      \
  static void name(void *dst, const void *src, size_t n, double factor)       \
  {                                                                            \
    T *d = dst;                                                                \
    const T *s = src;                                                          \
    for (size_t i = 0; i < n; i++) {                                           \
      double r = rint((double)s[i] * factor);                                  \
      d[i] = isnan(r) ? 0 : r <= (double)(LO) ? (LO) : r >= (double)(HI) ? (HI) : (T)r; \
    }                                                                          \
  }

REDUCE_SCALE_INT(scale_i8, int8_t, INT8_MIN, INT8_MAX)
REDUCE_SCALE_INT(scale_u8, uint8_t, 0, UINT8_MAX)
REDUCE_SCALE_INT(scale_i16, int16_t, INT16_MIN, INT16_MAX)
REDUCE_SCALE_INT(scale_i32, int32_t, INT32_MIN, INT32_MAX)
REDUCE_SCALE_INT(scale_i64, int64_t, INT64_MIN, INT64_MAX)
REDUCE_SCALE_FLOAT(scale_f16, uint16_t, float, half_to_float, float_to_half)
REDUCE_SCALE_FLOAT(scale_bf16, uint16_t, float, bf16_to_float, float_to_bf16)
REDUCE_SCALE_FLOAT(scale_f32, float, float, REDUCE_SAME, REDUCE_SAME)
REDUCE_SCALE_FLOAT(scale_f64, double, double, REDUCE_SAME, REDUCE_SAME)

static const reduce_scale_fn reduce_scalers[RONDO_DTYPE_COUNT] = {
  [RONDO_INT8] = scale_i8,       [RONDO_UINT8] = scale_u8,
  [RONDO_INT16] = scale_i16,     [RONDO_INT32] = scale_i32,
  [RONDO_INT64] = scale_i64,
  [RONDO_FLOAT16] = scale_f16,   [RONDO_BFLOAT16] = scale_bf16,
  [RONDO_FLOAT32] = scale_f32,   [RONDO_FLOAT64] = scale_f64,
};

void reduce_scale(void *dst, const void *src, size_t count, rondo_dtype_t dtype,
                  double factor)
{
  assert((unsigned)dtype < RONDO_DTYPE_COUNT);
  reduce_scalers[dtype](dst, src, count, factor);
}

/* C division truncates toward zero; operands promote to int or int64_t, and
 * n >= 1 rules out the one overflowing quotient (MIN / -1). */
#define REDUCE_DIVIDE(name, T)                                                 \
  static void name(void *buf, size_t count, int n)                             \
  {                                                                            \
    T *p = buf;                                                                \
    for (size_t i = 0; i < count; i++)                                         \
      p[i] = (T)(p[i] / n);                                                    \
  }
REDUCE_DIVIDE(divide_i8, int8_t)
REDUCE_DIVIDE(divide_u8, uint8_t)
REDUCE_DIVIDE(divide_i16, int16_t)
REDUCE_DIVIDE(divide_i32, int32_t)
REDUCE_DIVIDE(divide_i64, int64_t)

/* Floating types divide in the compute type: the quotient is correctly
 * rounded there (16-bit types then rounded once more, to nearest even). */
#define REDUCE_DIVIDE_FLOAT(name, T, CT, WIDEN, NARROW)                        \
  static void name(void *buf, size_t count, int n)                             \
  {                                                                            \
    T *p = buf;                                                                \
    CT d = (CT)n;                                                              \
    for (size_t i = 0; i < count; i++)                                         \
      p[i] = NARROW(WIDEN(p[i]) / d);                                          \
  }
REDUCE_DIVIDE_FLOAT(divide_f16, uint16_t, float, half_to_float, float_to_half)
REDUCE_DIVIDE_FLOAT(divide_bf16, uint16_t, float, bf16_to_float, float_to_bf16)
#ifdef __SSE2__
/* Division is the slow instruction: vectors divide 4 or 8 floats at once,
 * each quotient correctly rounded, so the bytes are the scalar loop's. */
#define REDUCE_DIVIDE_VECTOR(name, ATTR, T, W, VT, LOAD, STORE, SET1, DIV)     \
  ATTR static void name(void *buf, size_t count, int n)                        \
  {                                                                            \
    T *p = buf, d = (T)n;                                                      \
    VT vd = SET1(d);                                                           \
    size_t i = 0;                                                              \
    for (; i + W <= count; i += W)                                             \
      STORE(p + i, DIV(LOAD(p + i), vd));                                      \
    for (; i < count; i++)                                                     \
      p[i] = p[i] / d;                                                         \
  }
REDUCE_DIVIDE_VECTOR(divide_f32, , float, 4, __m128, _mm_loadu_ps, _mm_storeu_ps, _mm_set1_ps, _mm_div_ps)
REDUCE_DIVIDE_VECTOR(divide_f64, , double, 2, __m128d, _mm_loadu_pd, _mm_storeu_pd, _mm_set1_pd, _mm_div_pd)
#else
REDUCE_DIVIDE_FLOAT(divide_f32, float, float, REDUCE_SAME, REDUCE_SAME)
REDUCE_DIVIDE_FLOAT(divide_f64, double, double, REDUCE_SAME, REDUCE_SAME)
#endif
#ifdef REDUCE_HAVE_AVX2
REDUCE_DIVIDE_VECTOR(divide_f32_avx2, REDUCE_AVX2, float, 8, __m256, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_div_ps)
REDUCE_DIVIDE_VECTOR(divide_f64_avx2, REDUCE_AVX2, double, 4, __m256d, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_div_pd)
#else
#define divide_f32_avx2 divide_f32 /* never chosen: avx2 is 0 */
#define divide_f64_avx2 divide_f64
#endif

void reduce_average(void *buf, size_t count, rondo_dtype_t dtype, int n)
{
  assert(n >= 1);
#ifdef REDUCE_HAVE_AVX2
  int avx2 = reduce_kernels() == &reduce_avx2;
#else
  enum { avx2 = 0 };
#endif
  switch (dtype) {
  case RONDO_INT8: divide_i8(buf, count, n); break;
  case RONDO_UINT8: divide_u8(buf, count, n); break;
  case RONDO_INT16: divide_i16(buf, count, n); break;
  case RONDO_INT32: divide_i32(buf, count, n); break;
  case RONDO_INT64: divide_i64(buf, count, n); break;
  case RONDO_FLOAT16: divide_f16(buf, count, n); break;
  case RONDO_BFLOAT16: divide_bf16(buf, count, n); break;
  case RONDO_FLOAT32: (avx2 ? divide_f32_avx2 : divide_f32)(buf, count, n); break;
  default: (avx2 ? divide_f64_avx2 : divide_f64)(buf, count, n); break;
  }
}

void reduce_identity(void *buf, size_t n, rondo_dtype_t dtype, rondo_op_t op)
{
  if (op == RONDO_SUM || op == RONDO_AVG || op == RONDO_ADASUM) {
    memset(buf, 0, n * rondo_dtype_size(dtype));
    return;
  }
  double v = op == RONDO_PROD ? 1.0 : op == RONDO_MIN ? INFINITY : -INFINITY;
  for (size_t i = 0; i < n; i++) {
    switch (dtype) {
    case RONDO_INT8: ((int8_t *)buf)[i] = op == RONDO_PROD ? 1 : op == RONDO_MIN ? INT8_MAX : INT8_MIN; break;
    case RONDO_UINT8: ((uint8_t *)buf)[i] = op == RONDO_PROD ? 1 : op == RONDO_MIN ? UINT8_MAX : 0; break;
    case RONDO_INT16: ((int16_t *)buf)[i] = op == RONDO_PROD ? 1 : op == RONDO_MIN ? INT16_MAX : INT16_MIN; break;
    case RONDO_INT32: ((int32_t *)buf)[i] = op == RONDO_PROD ? 1 : op == RONDO_MIN ? INT32_MAX : INT32_MIN; break;
    case RONDO_INT64: ((int64_t *)buf)[i] = op == RONDO_PROD ? 1 : op == RONDO_MIN ? INT64_MAX : INT64_MIN; break;
    case RONDO_FLOAT16: ((uint16_t *)buf)[i] = reduce_float_to_half((float)v); break;
    case RONDO_BFLOAT16: ((uint16_t *)buf)[i] = reduce_float_to_bf16((float)v); break;
    case RONDO_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case RONDO_FLOAT64: ((double *)buf)[i] = v; break;
    default: break;
    }
  }
}

/* ---- Adasum --------------------------------------------------------------- */

/* GET/PUT read an element as double and store a double rounded to T.
 * The sums run in four lanes (element i in lane i % 4), so the additions
 * do not wait on each other; the order is fixed, so every rank computing
 * adasum(a, b) gets the same bytes. */
#define REDUCE_ADASUM(name, T, GET, PUT)                                       \
  static void name(void *dst, const void *a, const void *b, size_t n)         \
  {                                                                            \
    const T *x = a, *y = b;                                                    \
    T *d = dst;                                                                \
    double dot4[4] = {0}, xx4[4] = {0}, yy4[4] = {0};                          \
    size_t i = 0;                                                              \
    for (; i + 4 <= n; i += 4)                                                 \
      for (int l = 0; l < 4; l++) {                                            \
        double p = GET(x[i + l]), q = GET(y[i + l]);                           \
        dot4[l] += p * q;                                                      \
        xx4[l] += p * p;                                                       \
        yy4[l] += q * q;                                                       \
      }                                                                        \
    for (int l = 0; i < n; i++, l++) {                                         \
      double p = GET(x[i]), q = GET(y[i]);                                     \
      dot4[l] += p * q;                                                        \
      xx4[l] += p * p;                                                         \
      yy4[l] += q * q;                                                         \
    }                                                                          \
    double dot = (dot4[0] + dot4[1]) + (dot4[2] + dot4[3]);                    \
    double xx = (xx4[0] + xx4[1]) + (xx4[2] + xx4[3]);                         \
    double yy = (yy4[0] + yy4[1]) + (yy4[2] + yy4[3]);                         \
    double ca = xx >= ADASUM_TINY ? 1.0 - dot / xx * 0.5 : 1.0;                \
    double cb = yy >= ADASUM_TINY ? 1.0 - dot / yy * 0.5 : 1.0;                \
    for (i = 0; i < n; i++)                                                    \
      d[i] = PUT(ca * GET(x[i]) + cb * GET(y[i]));                             \
  }

/* sqrt(DBL_MIN): a squared norm below it is a zero gradient, whose
 * coefficient stays 1 (no division by zero). */
#define ADASUM_TINY 1.4916681462400413e-154
#define GET_F16(v) ((double)half_to_float(v))
#define PUT_F16(v) float_to_half((float)(v))
#define GET_BF16(v) ((double)bf16_to_float(v))
#define PUT_BF16(v) float_to_bf16((float)(v))
#define GET_PLAIN(v) ((double)(v))
#define PUT_F32(v) ((float)(v))
#define PUT_F64(v) (v)
REDUCE_ADASUM(adasum_f16, uint16_t, GET_F16, PUT_F16)
REDUCE_ADASUM(adasum_bf16, uint16_t, GET_BF16, PUT_BF16)
REDUCE_ADASUM(adasum_f32, float, GET_PLAIN, PUT_F32)
REDUCE_ADASUM(adasum_f64, double, GET_PLAIN, PUT_F64)

void reduce_adasum(void *dst, const void *a, const void *b, size_t count, rondo_dtype_t dtype)
{
  switch (dtype) {
  case RONDO_FLOAT16: adasum_f16(dst, a, b, count); break;
  case RONDO_BFLOAT16: adasum_bf16(dst, a, b, count); break;
  case RONDO_FLOAT32: adasum_f32(dst, a, b, count); break;
  case RONDO_FLOAT64: adasum_f64(dst, a, b, count); break;
  default: assert(!"adasum needs a floating dtype"); break;
  }
}
