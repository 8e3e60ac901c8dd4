/*
 * Unit tests of the reduction kernels (lib/reduce/reduce.h).
 *
 * Every kernel is checked against a reference written differently from the
 * library: 16-bit floats are decoded with ldexp and rounded with floor on a
 * scaled double (the library uses bit arithmetic, SSE2 or F16C), float ops
 * run in double and are rounded once (exact or innocuous double rounding for
 * + and * of float operands), integer SUM/PROD run in 128-bit integers and
 * are reduced modulo 2^bits by division, MIN/MAX compare a total-order key. Where
 * a result has a closed form (wrap-around, ties, signed zeros, NaN payloads)
 * the test states it outright.
 *
 * Each check runs the kernel out of place on malloc'd buffers, out of place
 * with a, b and dst each 1-3 elements off their allocation (so the vector
 * loops see every relative misalignment), with dst aliasing a, aliasing b,
 * aliasing both, and one element at a time (the scalar tail), and verifies
 * that no byte outside dst[0, count) changes and the inputs stay intact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rondo.h"
#include "reduce/reduce.h"

#define ARRAY_LEN(x) (sizeof(x) / sizeof((x)[0]))

/* Wide enough for any int64 product: the integer reference needs no wrap. */
__extension__ typedef __int128 wide_t;

static const rondo_dtype_t all_dtypes[] = {
  RONDO_INT8,    RONDO_UINT8,    RONDO_INT16,   RONDO_INT32,   RONDO_INT64,
  RONDO_FLOAT16, RONDO_BFLOAT16, RONDO_FLOAT32, RONDO_FLOAT64,
};
static const rondo_op_t all_ops[] = {RONDO_SUM, RONDO_AVG, RONDO_MIN, RONDO_MAX, RONDO_PROD};
static const size_t counts[] = {0, 1, 3, 17, 1000};

static const char *dtype_str(rondo_dtype_t dt)
{
  static const char *names[] = {"int8",    "uint8",    "int32",   "int64",
                                "float16", "bfloat16", "float32", "float64", "int16"};
  return names[dt];
}

static const char *op_str(rondo_op_t op)
{
  static const char *names[] = {"sum", "avg", "min", "max", "prod"};
  return names[op];
}

static size_t esize(rondo_dtype_t dt)
{
  static const size_t sizes[] = {1, 1, 4, 8, 2, 2, 4, 8, 2};
  return sizes[dt];
}

static int is_float(rondo_dtype_t dt) { return dt >= RONDO_FLOAT16 && dt <= RONDO_FLOAT64; }

/* ---- element bits ------------------------------------------------------- */

static uint64_t get_bits(rondo_dtype_t dt, const void *buf, size_t i)
{
  uint64_t v = 0;
  /* little-endian hosts: the low bytes of v */
  memcpy(&v, (const char *)buf + i * esize(dt), esize(dt));
  return v;
}

static void put_bits(rondo_dtype_t dt, void *buf, size_t i, uint64_t v)
{
  memcpy((char *)buf + i * esize(dt), &v, esize(dt));
}

/* Floating formats as (width, fraction bits). */
typedef struct {
  int width;
  int mant;
} fmt_t;

static fmt_t float_fmt(rondo_dtype_t dt)
{
  switch (dt) {
  case RONDO_FLOAT16: return (fmt_t){16, 10};
  case RONDO_BFLOAT16: return (fmt_t){16, 7};
  case RONDO_FLOAT32: return (fmt_t){32, 23};
  default: return (fmt_t){64, 52};
  }
}

static uint64_t fmt_sign(fmt_t f) { return UINT64_C(1) << (f.width - 1); }
static uint64_t fmt_inf(fmt_t f) { return (fmt_sign(f) - 1) & ~((UINT64_C(1) << f.mant) - 1); }
static uint64_t fmt_quiet(fmt_t f) { return UINT64_C(1) << (f.mant - 1); }
static int fmt_bias(fmt_t f) { return (1 << (f.width - f.mant - 2)) - 1; }
static int bits_is_nan(fmt_t f, uint64_t v) { return (v & ~fmt_sign(f)) > fmt_inf(f); }

/* The value of a bit pattern, by arithmetic on its fields. */
static double ref_value(fmt_t f, uint64_t v)
{
  int ebits = f.width - f.mant - 1;
  uint64_t frac = v & ((UINT64_C(1) << f.mant) - 1);
  int e = (int)((v >> f.mant) & ((1u << ebits) - 1));
  double x;
  if (e == (1 << ebits) - 1)
    x = frac ? NAN : INFINITY;
  else if (e == 0)
    x = ldexp((double)frac, 1 - fmt_bias(f) - f.mant);
  else
    x = ldexp((double)((UINT64_C(1) << f.mant) + frac), e - fmt_bias(f) - f.mant);
  return (v & fmt_sign(f)) ? -x : x;
}

/* The bits of x (not NaN) rounded to nearest even in a 16-bit format: scale
 * so one unit in the last place is 1, round with floor, encode the fields. */
static uint64_t ref_round(fmt_t f, double x)
{
  uint64_t sign = signbit(x) ? fmt_sign(f) : 0;
  int emin = 1 - fmt_bias(f);
  double ax = fabs(x);
  int e;
  if (isinf(x))
    return sign | fmt_inf(f);
  frexp(ax, &e);
  e -= 1; /* 2^e <= ax < 2^(e+1) */
  if (ax == 0 || e < emin)
    e = emin;
  double ulp = ldexp(1.0, e - f.mant);
  double q = ax / ulp, n = floor(q), rem = q - n;
  if (rem > 0.5 || (rem == 0.5 && fmod(n, 2.0) == 1.0))
    n += 1;
  double r = n * ulp;
  if (r >= ldexp(1.0, fmt_bias(f) + 1))
    return sign | fmt_inf(f);
  if (r < ldexp(1.0, emin)) /* subnormal: a count of the smallest step */
    return sign | (uint64_t)(r / ldexp(1.0, emin - f.mant));
  frexp(r, &e);
  e -= 1;
  uint64_t frac = (uint64_t)(r / ldexp(1.0, e - f.mant)) - (UINT64_C(1) << f.mant);
  return sign | (uint64_t)(e + fmt_bias(f)) << f.mant | frac;
}

static uint32_t bits_of_float(float x)
{
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static float float_of_bits(uint32_t u)
{
  float x;
  memcpy(&x, &u, 4);
  return x;
}

static uint64_t bits_of_double(double x)
{
  uint64_t u;
  memcpy(&u, &x, 8);
  return u;
}

/* Encodes a reference result (never NaN; callers test NaN first). */
static uint64_t ref_encode(rondo_dtype_t dt, double x)
{
  switch (dt) {
  case RONDO_FLOAT16:
  case RONDO_BFLOAT16: return ref_round(float_fmt(dt), (double)(float)x);
  case RONDO_FLOAT32: return bits_of_float((float)x);
  default: return bits_of_double(x);
  }
}

/* ---- the reference -------------------------------------------------------- */

static int int_bits(rondo_dtype_t dt) { return (int)esize(dt) * 8; }

static wide_t int_value(rondo_dtype_t dt, uint64_t v)
{
  switch (dt) {
  case RONDO_INT8: return (v & 0x80) ? (wide_t)v - 256 : (wide_t)v;
  case RONDO_UINT8: return v;
  case RONDO_INT16: return (v & 0x8000) ? (wide_t)v - 65536 : (wide_t)v;
  case RONDO_INT32: return (v & 0x80000000u) ? (wide_t)v - ((wide_t)1 << 32) : (wide_t)v;
  default: return (v >> 63) ? (wide_t)v - ((wide_t)1 << 64) : (wide_t)v;
  }
}

/* v modulo 2^bits, as the dtype's bit pattern. */
static uint64_t int_wrap(rondo_dtype_t dt, wide_t v)
{
  wide_t m = (wide_t)1 << int_bits(dt);
  wide_t r = v % m;
  if (r < 0)
    r += m;
  return (uint64_t)r;
}

static int key_less_eq(fmt_t f, uint64_t p, uint64_t q)
{
  uint64_t mask = f.width == 64 ? UINT64_MAX : (UINT64_C(1) << f.width) - 1;
  uint64_t s = fmt_sign(f);
  uint64_t kp = (p & s) ? ~p & mask : p | s, kq = (q & s) ? ~q & mask : q | s;
  return kp <= kq;
}

/* For floating dtypes only: the reference says "some quiet NaN" (SUM/PROD
 * pick a payload in hardware). As a float it is the all-ones NaN, which no
 * input here holds; as an integer it is -1, so integers never read it so. */
#define REF_ANY_NAN UINT64_MAX

static uint64_t ref_binary(rondo_dtype_t dt, rondo_op_t op, uint64_t p, uint64_t q)
{
  if (!is_float(dt)) {
    wide_t x = int_value(dt, p), y = int_value(dt, q);
    switch (op) {
    case RONDO_MIN: return x <= y ? p : q;
    case RONDO_MAX: return x >= y ? p : q;
    case RONDO_PROD: return int_wrap(dt, x * y);
    default: return int_wrap(dt, x + y);
    }
  }
  fmt_t f = float_fmt(dt);
  if (op == RONDO_MIN || op == RONDO_MAX) {
    if (bits_is_nan(f, p))
      return p | fmt_quiet(f);
    if (bits_is_nan(f, q))
      return q | fmt_quiet(f);
    return key_less_eq(f, p, q) == (op == RONDO_MIN) ? p : q;
  }
  double x = ref_value(f, p), y = ref_value(f, q);
  double r = op == RONDO_PROD ? x * y : x + y;
  return isnan(r) ? REF_ANY_NAN : ref_encode(dt, r);
}

/* ---- comparing and reporting ---------------------------------------------- */

static void describe(rondo_dtype_t dt, uint64_t v, char *out, size_t len)
{
  if (!is_float(dt)) {
    snprintf(out, len, "%lld (0x%" PRIx64 ")", (long long)int_value(dt, v), v);
    return;
  }
  if (v == REF_ANY_NAN) { /* is_float(dt) here */
    snprintf(out, len, "any quiet NaN");
    return;
  }
  snprintf(out, len, "0x%0*" PRIx64 " (%.9g)", (int)esize(dt) * 2, v,
           ref_value(float_fmt(dt), v));
}

static int matches(rondo_dtype_t dt, uint64_t got, uint64_t want)
{
  if (is_float(dt) && want == REF_ANY_NAN) {
    fmt_t f = float_fmt(dt);
    return bits_is_nan(f, got) && (got & fmt_quiet(f));
  }
  return got == want;
}

/* Counts mismatches between a kernel's output and want[]; prints the first. */
static int compare(const char *what, rondo_dtype_t dt, rondo_op_t op, const void *a,
                   const void *b, const void *got, const uint64_t *want, size_t n)
{
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t g = get_bits(dt, got, i);
    if (matches(dt, g, want[i]))
      continue;
    if (bad++ < 5) {
      char sa[64], sb[64], sw[64], sg[64];
      describe(dt, get_bits(dt, a, i), sa, sizeof sa);
      describe(dt, get_bits(dt, b, i), sb, sizeof sb);
      describe(dt, want[i], sw, sizeof sw);
      describe(dt, g, sg, sizeof sg);
      print_error("%s %s %s [%zu/%zu]: a=%s b=%s want %s got %s\n", what, dtype_str(dt),
                  op_str(op), i, n, sa, sb, sw, sg);
    }
  }
  return bad;
}

/* ---- buffers with guards -------------------------------------------------- */

#define GUARD 0xA5

/* An n-element slot `lead` elements into a malloc'd block, with guard bytes
 * before and two guard elements after (so a write past the end would show).
 * Different leads give a, b and dst different alignments. */
typedef struct {
  unsigned char *block;
  void *p;
  size_t bytes, lead;
} slot_t;

static slot_t slot_new(rondo_dtype_t dt, size_t n, const void *init, size_t lead)
{
  slot_t s;
  s.lead = lead * esize(dt);
  s.bytes = s.lead + (n + 2) * esize(dt);
  s.block = malloc(s.bytes);
  assert_non_null(s.block);
  memset(s.block, GUARD, s.bytes);
  s.p = s.block + s.lead;
  if (init != NULL && n > 0)
    memcpy(s.p, init, n * esize(dt));
  return s;
}

static int slot_guards_ok(rondo_dtype_t dt, slot_t s, size_t n)
{
  for (size_t i = 0; i < s.bytes; i++) {
    int inside = i >= s.lead && i < s.lead + n * esize(dt);
    if (!inside && s.block[i] != GUARD)
      return 0;
  }
  return 1;
}

static void slot_free(slot_t s) { free(s.block); }

/* ---- the main check ------------------------------------------------------- */

/* Runs reduce_apply in every layout and compares with the reference. */
static void check_apply(rondo_dtype_t dt, rondo_op_t op, const void *a, const void *b,
                        size_t n)
{
  size_t es = esize(dt);
  uint64_t *want = calloc(n + 1, sizeof *want);
  uint64_t *want_self = calloc(n + 1, sizeof *want_self);
  unsigned char *out = malloc(n * es + 1);
  assert_true(want && want_self && out);
  for (size_t i = 0; i < n; i++) {
    want[i] = ref_binary(dt, op, get_bits(dt, a, i), get_bits(dt, b, i));
    want_self[i] = ref_binary(dt, op, get_bits(dt, a, i), get_bits(dt, a, i));
  }
  int bad = 0;

  /* out of place, a, b and dst each at a different misalignment */
  slot_t sa = slot_new(dt, n, a, 2), sb = slot_new(dt, n, b, 3), sd = slot_new(dt, n, NULL, 1);
  reduce_apply(sd.p, sa.p, sb.p, n, dt, op);
  bad += compare("out-of-place", dt, op, a, b, sd.p, want, n);
  bad += !slot_guards_ok(dt, sd, n);
  bad += memcmp(sa.p, a, n * es) != 0 || memcmp(sb.p, b, n * es) != 0;

  /* out of place, malloc alignment */
  reduce_apply(out, a, b, n, dt, op);
  bad += compare("aligned", dt, op, a, b, out, want, n);

  /* dst == a */
  slot_t da = slot_new(dt, n, a, 1);
  reduce_apply(da.p, da.p, b, n, dt, op);
  bad += compare("dst==a", dt, op, a, b, da.p, want, n);
  bad += !slot_guards_ok(dt, da, n);

  /* dst == b */
  slot_t db = slot_new(dt, n, b, 1);
  reduce_apply(db.p, a, db.p, n, dt, op);
  bad += compare("dst==b", dt, op, a, b, db.p, want, n);
  bad += !slot_guards_ok(dt, db, n);

  /* dst == a == b */
  slot_t dd = slot_new(dt, n, a, 1);
  reduce_apply(dd.p, dd.p, dd.p, n, dt, op);
  bad += compare("dst==a==b", dt, op, a, a, dd.p, want_self, n);
  bad += !slot_guards_ok(dt, dd, n);

  /* one element at a time: the scalar head/tail code of every kernel */
  for (size_t i = 0; i < n; i++)
    reduce_apply(out + i * es, (const char *)a + i * es, (const char *)b + i * es, 1, dt, op);
  bad += compare("count=1", dt, op, a, b, out, want, n);

  slot_free(sa);
  slot_free(sb);
  slot_free(sd);
  slot_free(da);
  slot_free(db);
  slot_free(dd);
  free(want);
  free(want_self);
  free(out);
  if (bad)
    fail_msg("%s %s count %zu: %d mismatches or guard/input changes", dtype_str(dt),
             op_str(op), n, bad);
}

/* ---- inputs --------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng_next(void) /* splitmix64 */
{
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Half raw bit patterns (every NaN, inf, subnormal), half values with
 * exponents close together so sums round in interesting ways. */
static uint64_t random_elem(rondo_dtype_t dt)
{
  uint64_t r = rng_next();
  if (!is_float(dt) || (r & 1))
    return rng_next() & (esize(dt) == 8 ? UINT64_MAX : (UINT64_C(1) << (esize(dt) * 8)) - 1);
  fmt_t f = float_fmt(dt);
  uint64_t frac = (r >> 8) & ((UINT64_C(1) << f.mant) - 1);
  uint64_t e = (uint64_t)(fmt_bias(f) - 3 + (int)((r >> 1) % 7));
  return ((r >> 2) & 1 ? fmt_sign(f) : 0) | e << f.mant | frac;
}

static void *random_array(rondo_dtype_t dt, size_t n)
{
  void *p = malloc(n * esize(dt) + 1);
  assert_non_null(p);
  for (size_t i = 0; i < n; i++)
    put_bits(dt, p, i, random_elem(dt));
  return p;
}

static void test_apply_matches_reference_random(void **state)
{
  (void)state;
  for (size_t d = 0; d < ARRAY_LEN(all_dtypes); d++)
    for (size_t o = 0; o < ARRAY_LEN(all_ops); o++)
      for (size_t c = 0; c < ARRAY_LEN(counts); c++) {
        void *a = random_array(all_dtypes[d], counts[c]);
        void *b = random_array(all_dtypes[d], counts[c]);
        check_apply(all_dtypes[d], all_ops[o], a, b, counts[c]);
        free(a);
        free(b);
      }
}

/* Edge values per dtype as bit patterns. */
static const uint64_t edges_i8[] = {0, 1, 0xff, 2, 0x7f, 0x80, 0x7e, 0x81, 16, 0xf0, 100};
static const uint64_t edges_u8[] = {0, 1, 2, 127, 128, 255, 254, 16, 200};
static const uint64_t edges_i16[] = {0, 1, 0xffff, 0x7fff, 0x8000, 0x100, 0xff00, 182, 0x7ffe,
                                     0x8001, 256};
static const uint64_t edges_i32[] = {0, 1, 0xffffffff, 0x7fffffff, 0x80000000, 0x10000,
                                     0xffff0000, 46341, 0x7ffffffe};
static const uint64_t edges_i64[] = {0, 1, UINT64_MAX, INT64_MAX, UINT64_C(1) << 63,
                                     UINT64_C(1) << 32, (uint64_t)-(INT64_C(1) << 32),
                                     3037000500u, INT64_MAX - 1};
static const uint64_t edges_f16[] = {
  0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x83ff, 0x3c00, 0xbc00, 0x3c01,
  0x1000, 0x6800, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7d23, 0xff5a,
  0x3800, 0x0003, 0x5c00,
};
static const uint64_t edges_bf16[] = {
  0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x3f80, 0xbf80, 0x3f81, 0x3b80,
  0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0xffd5, 0x7b00, 0x3f00,
};
static const uint64_t edges_f32[] = {
  0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff, 0x00800000,
  0x3f800000, 0xbf800000, 0x3f800001, 0x33800000, 0x7f7fffff, 0xff7fffff,
  0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xffc12345,
  0x4b800000, 0x3dcccccd,
};
static const uint64_t edges_f64[] = {
  0, UINT64_C(1) << 63, 1, 0x8000000000000001u, 0x000fffffffffffffu, 0x0010000000000000u,
  0x3ff0000000000000u, 0xbff0000000000000u, 0x3ff0000000000001u, 0x3ca0000000000000u,
  0x7fefffffffffffffu, 0xffefffffffffffffu, 0x7ff0000000000000u, 0xfff0000000000000u,
  0x7ff8000000000000u, 0xfff8000000000000u, 0x7ff0000000000001u, 0xfff8123456789abcu,
};

static void edge_values(rondo_dtype_t dt, const uint64_t **v, size_t *n)
{
#define EDGES(x) (*v = (x), *n = ARRAY_LEN(x))
  switch (dt) {
  case RONDO_INT8: EDGES(edges_i8); break;
  case RONDO_UINT8: EDGES(edges_u8); break;
  case RONDO_INT16: EDGES(edges_i16); break;
  case RONDO_INT32: EDGES(edges_i32); break;
  case RONDO_INT64: EDGES(edges_i64); break;
  case RONDO_FLOAT16: EDGES(edges_f16); break;
  case RONDO_BFLOAT16: EDGES(edges_bf16); break;
  case RONDO_FLOAT32: EDGES(edges_f32); break;
  default: EDGES(edges_f64); break;
  }
#undef EDGES
}

/* Every ordered pair of edge values, as one array long enough for the vector
 * loops, for every dtype and op. */
static void test_apply_matches_reference_edge_pairs(void **state)
{
  (void)state;
  for (size_t d = 0; d < ARRAY_LEN(all_dtypes); d++) {
    rondo_dtype_t dt = all_dtypes[d];
    const uint64_t *v;
    size_t k;
    edge_values(dt, &v, &k);
    void *a = malloc(k * k * esize(dt)), *b = malloc(k * k * esize(dt));
    assert_true(a && b);
    for (size_t i = 0; i < k; i++)
      for (size_t j = 0; j < k; j++) {
        put_bits(dt, a, i * k + j, v[i]);
        put_bits(dt, b, i * k + j, v[j]);
      }
    for (size_t o = 0; o < ARRAY_LEN(all_ops); o++)
      check_apply(dt, all_ops[o], a, b, k * k);
    free(a);
    free(b);
  }
}

static void test_apply_count_zero_writes_nothing(void **state)
{
  (void)state;
  unsigned char a[16], b[16], d[16], guard[16];
  memset(a, 1, sizeof a);
  memset(b, 2, sizeof b);
  memset(d, GUARD, sizeof d);
  memset(guard, GUARD, sizeof guard);
  for (size_t i = 0; i < ARRAY_LEN(all_dtypes); i++)
    for (size_t o = 0; o < ARRAY_LEN(all_ops); o++) {
      reduce_apply(d, a, b, 0, all_dtypes[i], all_ops[o]);
      reduce_apply(NULL, NULL, NULL, 0, all_dtypes[i], all_ops[o]);
    }
  for (size_t i = 0; i < ARRAY_LEN(all_dtypes); i++) {
    reduce_scale(d, a, 0, all_dtypes[i], 2.0);
    reduce_average(d, 0, all_dtypes[i], 3);
  }
  assert_memory_equal(d, guard, sizeof d);
}

/* ---- closed-form cases ---------------------------------------------------- */

typedef struct {
  rondo_dtype_t dt;
  rondo_op_t op;
  uint64_t a, b, want; /* bit patterns; want may be REF_ANY_NAN */
} case_t;

/* Each case fills 37 elements (vector body and tail), then checks all. */
static void run_cases(const case_t *cases, size_t ncases)
{
  enum { N = 37 };
  int bad = 0;
  for (size_t c = 0; c < ncases; c++) {
    const case_t *k = &cases[c];
    uint64_t a[N], b[N], d[N], want[N]; /* 8-byte slots hold any dtype */
    for (size_t i = 0; i < N; i++) {
      put_bits(k->dt, a, i, k->a);
      put_bits(k->dt, b, i, k->b);
      want[i] = k->want;
    }
    reduce_apply(d, a, b, N, k->dt, k->op);
    if (compare("case", k->dt, k->op, a, b, d, want, N))
      bad++, print_error("  (case %zu)\n", c);
  }
  if (bad)
    fail_msg("%d of %zu closed-form cases failed", bad, ncases);
}

static void test_int_sum_wraps(void **state)
{
  (void)state;
  static const case_t cases[] = {
    {RONDO_INT8, RONDO_SUM, 0x7f, 0x01, 0x80},              /* 127 + 1 = -128 */
    {RONDO_INT8, RONDO_SUM, 0x80, 0xff, 0x7f},              /* -128 + -1 = 127 */
    {RONDO_INT8, RONDO_AVG, 0x7f, 0x7f, 0xfe},              /* AVG sums: -2 */
    {RONDO_UINT8, RONDO_SUM, 0xff, 0x01, 0x00},
    {RONDO_UINT8, RONDO_SUM, 200, 100, 44},
    {RONDO_INT16, RONDO_SUM, 0x7fff, 1, 0x8000},            /* 32767 + 1 = -32768 */
    {RONDO_INT16, RONDO_SUM, 0x8000, 0xffff, 0x7fff},
    {RONDO_INT32, RONDO_SUM, 0x7fffffff, 1, 0x80000000},
    {RONDO_INT32, RONDO_SUM, 0x80000000, 0x80000000, 0},
    {RONDO_INT64, RONDO_SUM, INT64_MAX, 1, UINT64_C(1) << 63},
    {RONDO_INT64, RONDO_SUM, UINT64_C(1) << 63, UINT64_MAX, INT64_MAX},
  };
  run_cases(cases, ARRAY_LEN(cases));
}

static void test_int_prod_wraps(void **state)
{
  (void)state;
  static const case_t cases[] = {
    {RONDO_INT8, RONDO_PROD, 0x80, 0xff, 0x80},             /* -128 * -1 = -128 */
    {RONDO_INT8, RONDO_PROD, 16, 16, 0},
    {RONDO_INT8, RONDO_PROD, 127, 127, 1},                  /* 16129 = 63*256 + 1 */
    {RONDO_UINT8, RONDO_PROD, 255, 255, 1},
    {RONDO_UINT8, RONDO_PROD, 16, 16, 0},
    {RONDO_INT16, RONDO_PROD, 0xffff, 0xffff, 1},           /* 65535 * 65535 wraps to 1 */
    {RONDO_INT16, RONDO_PROD, 0x8000, 0xffff, 0x8000},      /* -32768 * -1 = -32768 */
    {RONDO_INT16, RONDO_PROD, 0x100, 0x100, 0},
    {RONDO_INT32, RONDO_PROD, 0x7fffffff, 2, 0xfffffffe},   /* -2 */
    {RONDO_INT32, RONDO_PROD, 0x80000000, 0xffffffff, 0x80000000},
    {RONDO_INT32, RONDO_PROD, 0x10000, 0x10000, 0},
    {RONDO_INT64, RONDO_PROD, UINT64_C(1) << 63, UINT64_MAX, UINT64_C(1) << 63},
    {RONDO_INT64, RONDO_PROD, INT64_MAX, INT64_MAX, 1},     /* 2^126 - 2^64 + 1 */
    {RONDO_INT64, RONDO_PROD, UINT64_C(1) << 32, UINT64_C(1) << 32, 0},
  };
  run_cases(cases, ARRAY_LEN(cases));
}

static void test_int_min_max_respect_signedness(void **state)
{
  (void)state;
  static const case_t cases[] = {
    {RONDO_INT8, RONDO_MIN, 0x80, 0x7f, 0x80},
    {RONDO_INT8, RONDO_MAX, 0x80, 0x7f, 0x7f},
    {RONDO_UINT8, RONDO_MIN, 0xff, 0x01, 0x01},
    {RONDO_UINT8, RONDO_MAX, 0x00, 0xff, 0xff},
    {RONDO_INT16, RONDO_MIN, 0x8000, 0x7fff, 0x8000},
    {RONDO_INT16, RONDO_MAX, 0xffff, 0x0001, 0x0001},
    {RONDO_INT32, RONDO_MIN, 0xffffffff, 0, 0xffffffff},
    {RONDO_INT32, RONDO_MAX, 0x80000000, 0x7fffffff, 0x7fffffff},
    {RONDO_INT64, RONDO_MIN, UINT64_MAX, 0, UINT64_MAX},
    {RONDO_INT64, RONDO_MAX, UINT64_C(1) << 63, INT64_MAX, INT64_MAX},
  };
  run_cases(cases, ARRAY_LEN(cases));
}

static void test_float_sum_special_values(void **state)
{
  (void)state;
  static const case_t cases[] = {
    {RONDO_FLOAT32, RONDO_SUM, 0x00000000, 0x80000000, 0x00000000}, /* +0 + -0 = +0 */
    {RONDO_FLOAT32, RONDO_SUM, 0x80000000, 0x80000000, 0x80000000}, /* -0 + -0 = -0 */
    {RONDO_FLOAT32, RONDO_SUM, 0x7f800000, 0xff800000, REF_ANY_NAN},
    {RONDO_FLOAT32, RONDO_SUM, 0x7f7fffff, 0x7f7fffff, 0x7f800000}, /* overflow */
    {RONDO_FLOAT32, RONDO_SUM, 0xffc12345, 0x3f800000, REF_ANY_NAN},
    {RONDO_FLOAT32, RONDO_PROD, 0x7f800000, 0x00000000, REF_ANY_NAN},
    {RONDO_FLOAT32, RONDO_PROD, 0x80000000, 0x3f800000, 0x80000000},
    {RONDO_FLOAT64, RONDO_SUM, 0, UINT64_C(1) << 63, 0},
    {RONDO_FLOAT64, RONDO_SUM, UINT64_C(1) << 63, UINT64_C(1) << 63, UINT64_C(1) << 63},
    {RONDO_FLOAT64, RONDO_SUM, 0x7ff0000000000000u, 0xfff0000000000000u, REF_ANY_NAN},
    {RONDO_FLOAT64, RONDO_SUM, 0x7fefffffffffffffu, 0x7fefffffffffffffu, 0x7ff0000000000000u},
    {RONDO_FLOAT64, RONDO_SUM, 0x3ff0000000000000u, 0x7ff0000000000001u, REF_ANY_NAN},
    {RONDO_FLOAT16, RONDO_SUM, 0x0000, 0x8000, 0x0000},
    {RONDO_FLOAT16, RONDO_SUM, 0x8000, 0x8000, 0x8000},
    {RONDO_FLOAT16, RONDO_SUM, 0x7c00, 0xfc00, REF_ANY_NAN},
    {RONDO_FLOAT16, RONDO_SUM, 0x7bff, 0x7bff, 0x7c00},             /* 65504 * 2: inf */
    {RONDO_FLOAT16, RONDO_SUM, 0x7bff, 0x4c00, 0x7c00},             /* 65504 + 16 ties up to inf */
    {RONDO_FLOAT16, RONDO_SUM, 0x7bff, 0x4800, 0x7bff},             /* 65504 + 8 */
    {RONDO_FLOAT16, RONDO_SUM, 0x0001, 0x0001, 0x0002},             /* subnormals */
    {RONDO_FLOAT16, RONDO_SUM, 0x0400, 0x8001, 0x03ff},             /* normal -> subnormal */
    {RONDO_FLOAT16, RONDO_SUM, 0x03ff, 0x0001, 0x0400},             /* subnormal -> normal */
    {RONDO_FLOAT16, RONDO_PROD, 0x5c00, 0x5c00, 0x7c00},            /* 256 * 256: inf */
    {RONDO_FLOAT16, RONDO_PROD, 0xfd23, 0x3c00, REF_ANY_NAN},
    {RONDO_BFLOAT16, RONDO_SUM, 0x8000, 0x8000, 0x8000},
    {RONDO_BFLOAT16, RONDO_SUM, 0x7f80, 0xff80, REF_ANY_NAN},
    {RONDO_BFLOAT16, RONDO_SUM, 0x7f7f, 0x7f7f, 0x7f80},            /* overflow in float */
    {RONDO_BFLOAT16, RONDO_SUM, 0x7f7f, 0x7b00, 0x7f80},            /* max + ulp/2 ties to inf */
    {RONDO_BFLOAT16, RONDO_SUM, 0x7f7f, 0x7a80, 0x7f7f},            /* max + ulp/4 */
    {RONDO_BFLOAT16, RONDO_SUM, 0x0001, 0x0001, 0x0002},            /* subnormals */
    {RONDO_BFLOAT16, RONDO_PROD, 0x7f81, 0x3f80, REF_ANY_NAN},
  };
  run_cases(cases, ARRAY_LEN(cases));
}

/* Exact halfway results of SUM/PROD go to the even neighbour, down and up. */
static void test_float_sum_rounds_ties_to_even(void **state)
{
  (void)state;
  static const case_t cases[] = {
    {RONDO_FLOAT16, RONDO_SUM, 0x3c00, 0x1000, 0x3c00}, /* 1 + 2^-11 -> 1 */
    {RONDO_FLOAT16, RONDO_SUM, 0x3c01, 0x1000, 0x3c02}, /* (1 + 2^-10) + 2^-11 -> up */
    {RONDO_FLOAT16, RONDO_SUM, 0x6800, 0x3c00, 0x6800}, /* 2048 + 1 -> 2048 */
    {RONDO_FLOAT16, RONDO_SUM, 0x6800, 0x4200, 0x6802}, /* 2048 + 3 -> 2052 */
    {RONDO_FLOAT16, RONDO_PROD, 0x0001, 0x3800, 0x0000}, /* 2^-24 * 0.5 -> 0 */
    {RONDO_FLOAT16, RONDO_PROD, 0x0003, 0x3800, 0x0002}, /* 1.5 * 2^-24 -> 2 * 2^-24 */
    {RONDO_FLOAT16, RONDO_PROD, 0x8001, 0x3800, 0x8000}, /* -> -0 */
    {RONDO_BFLOAT16, RONDO_SUM, 0x3f80, 0x3b80, 0x3f80}, /* 1 + 2^-8 -> 1 */
    {RONDO_BFLOAT16, RONDO_SUM, 0x3f81, 0x3b80, 0x3f82}, /* (1 + 2^-7) + 2^-8 -> up */
    {RONDO_BFLOAT16, RONDO_SUM, 0x4380, 0x3f80, 0x4380}, /* 256 + 1 -> 256 */
    {RONDO_BFLOAT16, RONDO_SUM, 0x4380, 0x4040, 0x4382}, /* 256 + 3 -> 260 */
    {RONDO_FLOAT32, RONDO_SUM, 0x3f800000, 0x33800000, 0x3f800000}, /* 1 + 2^-24 */
    {RONDO_FLOAT32, RONDO_SUM, 0x3f800001, 0x33800000, 0x3f800002},
  };
  run_cases(cases, ARRAY_LEN(cases));
}

static void test_float_min_max_order_signed_zeros(void **state)
{
  (void)state;
  case_t cases[4 * 4];
  size_t n = 0;
  for (rondo_dtype_t dt = RONDO_FLOAT16; dt <= RONDO_FLOAT64; dt++) {
    uint64_t pz = 0, nz = fmt_sign(float_fmt(dt));
    cases[n++] = (case_t){dt, RONDO_MIN, pz, nz, nz};
    cases[n++] = (case_t){dt, RONDO_MIN, nz, pz, nz};
    cases[n++] = (case_t){dt, RONDO_MAX, pz, nz, pz};
    cases[n++] = (case_t){dt, RONDO_MAX, nz, pz, pz};
  }
  run_cases(cases, n);
}

/* The first NaN operand wins, made quiet, payload and sign kept. */
static void test_float_min_max_return_first_nan_quieted(void **state)
{
  (void)state;
  static const case_t cases[] = {
    {RONDO_FLOAT32, RONDO_MIN, 0x7f800001, 0xffc12345, 0x7fc00001},
    {RONDO_FLOAT32, RONDO_MAX, 0xffc12345, 0x7f800001, 0xffc12345},
    {RONDO_FLOAT32, RONDO_MIN, 0xff800000, 0x7f812345, 0x7fc12345},
    {RONDO_FLOAT32, RONDO_MAX, 0x7f800000, 0xff812345, 0xffc12345},
    {RONDO_FLOAT64, RONDO_MIN, 0x7ff0000000000001u, 0xfff8000000000002u, 0x7ff8000000000001u},
    {RONDO_FLOAT64, RONDO_MAX, 0x3ff0000000000000u, 0xfff0000000000abcu, 0xfff8000000000abcu},
    {RONDO_FLOAT16, RONDO_MIN, 0x7d23, 0xfe01, 0x7f23},
    {RONDO_FLOAT16, RONDO_MAX, 0x3c00, 0xfd01, 0xff01},
    {RONDO_FLOAT16, RONDO_MIN, 0xfc00, 0x7c01, 0x7e01},
    {RONDO_BFLOAT16, RONDO_MIN, 0x7f81, 0xffc5, 0x7fc1},
    {RONDO_BFLOAT16, RONDO_MAX, 0x7f80, 0xff85, 0xffc5},
  };
  run_cases(cases, ARRAY_LEN(cases));
}

/* ---- conversions ---------------------------------------------------------- */

static const fmt_t half_fmt = {16, 10}, bf16_fmt = {16, 7};

/* Every 16-bit pattern widens to its exact value; NaNs stay NaN with the
 * sign and payload, made quiet. */
static void check_widen_all(fmt_t f, float (*widen)(uint16_t))
{
  int bad = 0;
  for (uint32_t h = 0; h <= 0xffff; h++) {
    uint32_t got = bits_of_float(widen((uint16_t)h));
    int ok;
    if (bits_is_nan(f, h)) /* sign, all-ones exponent, quiet payload shifted up */
      ok = got == ((h & 0x8000u) << 16 | 0x7f800000u |
                   (uint32_t)((h | fmt_quiet(f)) & ((1u << f.mant) - 1)) << (23 - f.mant));
    else
      ok = memcmp(&(float){(float)ref_value(f, h)}, &got, 4) == 0;
    if (!ok && bad++ < 5)
      print_error("widen 0x%04x: got 0x%08x want %.9g\n", h, got, ref_value(f, h));
  }
  if (bad)
    fail_msg("%d patterns widened wrongly", bad);
}

static void test_half_to_float_exhaustive(void **state)
{
  (void)state;
  check_widen_all(half_fmt, reduce_half_to_float);
}

static void test_bf16_to_float_exhaustive(void **state)
{
  (void)state;
  check_widen_all(bf16_fmt, reduce_bf16_to_float);
}

/* For every finite non-negative pattern h and its successor h+1 (the next
 * value, or inf after the largest): the midpoint ties to the even one, one
 * float below it gives h, one above gives h+1; both signs. */
static void check_narrow_midpoints(fmt_t f, uint16_t (*narrow)(float))
{
  int bad = 0;
  for (uint32_t h = 0; h < fmt_inf(f); h++) {
    double lo = ref_value(f, h);
    double hi = lo + ldexp(1.0, (h >> f.mant ? (int)(h >> f.mant) : 1) - fmt_bias(f) - f.mant);
    float mid = (float)((lo + hi) / 2); /* exact: one more bit than the format */
    struct {
      float x;
      uint32_t want;
    } probe[] = {
      {(float)lo, h},
      {mid, (h & 1) ? h + 1 : h},
      {nextafterf(mid, 0.0f), h},
      {nextafterf(mid, INFINITY), h + 1},
    };
    for (size_t i = 0; i < ARRAY_LEN(probe); i++)
      for (int s = 0; s < 2; s++) {
        float x = s ? -probe[i].x : probe[i].x;
        uint32_t want = probe[i].want | (s ? 0x8000u : 0);
        uint32_t got = narrow(x);
        if (got != want && bad++ < 5)
          print_error("narrow %a (0x%08x): got 0x%04x want 0x%04x\n", x, bits_of_float(x), got,
                      want);
      }
  }
  if (bad)
    fail_msg("%d midpoint probes rounded wrongly", bad);
}

/* Many floats across the whole range against the floor-based reference. */
static void check_narrow_sweep(fmt_t f, uint16_t (*narrow)(float))
{
  int bad = 0;
  for (uint64_t u = 0; u <= UINT32_MAX; u += 65521) {
    float x = float_of_bits((uint32_t)u);
    uint32_t got = narrow(x);
    int ok = isnan(x) ? bits_is_nan(f, got) && (got & fmt_quiet(f)) && (got >> 15) == (u >> 31)
                      : got == ref_round(f, x);
    if (!ok && bad++ < 5)
      print_error("narrow 0x%08x (%.9g): got 0x%04x want 0x%04" PRIx64 "\n", (uint32_t)u, x, got,
                  isnan(x) ? 0 : ref_round(f, x));
  }
  if (bad)
    fail_msg("%d swept floats rounded wrongly", bad);
}

static void test_float_to_half_rounds_midpoints_to_even(void **state)
{
  (void)state;
  check_narrow_midpoints(half_fmt, reduce_float_to_half);
}

static void test_float_to_bf16_rounds_midpoints_to_even(void **state)
{
  (void)state;
  check_narrow_midpoints(bf16_fmt, reduce_float_to_bf16);
}

static void test_float_to_half_matches_reference_sweep(void **state)
{
  (void)state;
  check_narrow_sweep(half_fmt, reduce_float_to_half);
#ifdef __FLT16_MANT_DIG__
  /* and against the compiler's own _Float16 conversion */
  int bad = 0;
  for (uint64_t u = 0; u <= UINT32_MAX; u += 4099) {
    float x = float_of_bits((uint32_t)u);
    __extension__ _Float16 h = (_Float16)x;
    uint16_t want;
    memcpy(&want, &h, 2);
    if (!isnan(x) && reduce_float_to_half(x) != want && bad++ < 5)
      print_error("0x%08x: got 0x%04x, _Float16 0x%04x\n", (uint32_t)u, reduce_float_to_half(x),
                  want);
  }
  if (bad)
    fail_msg("%d floats differ from _Float16", bad);
#endif
}

static void test_float_to_bf16_matches_reference_sweep(void **state)
{
  (void)state;
  check_narrow_sweep(bf16_fmt, reduce_float_to_bf16);
}

static void test_conversions_special_values(void **state)
{
  (void)state;
  assert_int_equal(reduce_float_to_half(65504.0f), 0x7bff);
  assert_int_equal(reduce_float_to_half(65519.996f), 0x7bff);
  assert_int_equal(reduce_float_to_half(65520.0f), 0x7c00);
  assert_int_equal(reduce_float_to_half(-1e9f), 0xfc00);
  assert_int_equal(reduce_float_to_half(INFINITY), 0x7c00);
  assert_int_equal(reduce_float_to_half(-INFINITY), 0xfc00);
  assert_int_equal(reduce_float_to_half(0x1p-24f), 0x0001);
  assert_int_equal(reduce_float_to_half(0x1p-25f), 0x0000);       /* tie to even: 0 */
  assert_int_equal(reduce_float_to_half(0x1.000002p-25f), 0x0001);
  assert_int_equal(reduce_float_to_half(0x1.8p-24f), 0x0002);     /* tie to even: 2 */
  assert_int_equal(reduce_float_to_half(-0x1p-26f), 0x8000);
  assert_int_equal(reduce_float_to_half(0x1.ff8p-15f), 0x03ff);   /* largest subnormal */
  assert_int_equal(reduce_float_to_half(0x1.ffcp-15f), 0x0400);   /* ties up to normal */
  assert_int_equal(reduce_float_to_half(FLT_TRUE_MIN), 0x0000);
  assert_int_equal(reduce_float_to_half(float_of_bits(0x7f800001)), 0x7e00);
  assert_int_equal(reduce_float_to_half(float_of_bits(0xffc02000)), 0xfe01);
  assert_int_equal(reduce_float_to_bf16(FLT_MAX), 0x7f80);
  assert_int_equal(reduce_float_to_bf16(-FLT_MAX), 0xff80);
  assert_int_equal(reduce_float_to_bf16(FLT_TRUE_MIN), 0x0000);
  assert_int_equal(reduce_float_to_bf16(float_of_bits(0x00008000)), 0x0000);
  assert_int_equal(reduce_float_to_bf16(float_of_bits(0x00018000)), 0x0002);
  assert_int_equal(reduce_float_to_bf16(float_of_bits(0x7f800001)), 0x7fc0); /* not inf */
  assert_int_equal(reduce_float_to_bf16(float_of_bits(0xff80ffff)), 0xffc0);
  assert_int_equal(bits_of_float(reduce_half_to_float(0x7c00)), 0x7f800000);
  assert_int_equal(bits_of_float(reduce_half_to_float(0x0001)), bits_of_float(0x1p-24f));
  assert_int_equal(bits_of_float(reduce_half_to_float(0x8000)), 0x80000000);
  assert_int_equal(bits_of_float(reduce_half_to_float(0x7c01)), 0x7fc02000);
  assert_int_equal(bits_of_float(reduce_bf16_to_float(0xff81)), 0xffc10000);
}

/* ---- scale and average ---------------------------------------------------- */

/* Round half to even by floor, then saturate; NaN -> 0. */
static uint64_t ref_scale_int(rondo_dtype_t dt, uint64_t v, double factor)
{
  double p = (double)(int64_t)int_value(dt, v) * factor;
  wide_t lo = dt == RONDO_UINT8 ? 0 : -((wide_t)1 << (int_bits(dt) - 1));
  wide_t hi = dt == RONDO_UINT8 ? 255 : ((wide_t)1 << (int_bits(dt) - 1)) - 1;
  if (isnan(p))
    return 0;
  if (p <= (double)lo)
    return int_wrap(dt, lo);
  if (p >= (double)hi)
    return int_wrap(dt, hi);
  double n = floor(p), rem = p - n;
  if (rem > 0.5 || (rem == 0.5 && fmod(n, 2.0) != 0))
    n += 1;
  return int_wrap(dt, (wide_t)n);
}

/* The compute type is float except for float64. */
static uint64_t ref_scale_float(rondo_dtype_t dt, uint64_t v, double factor)
{
  double x = ref_value(float_fmt(dt), v);
  double r = dt == RONDO_FLOAT64 ? x * factor : (double)(float)(x * (double)(float)factor);
  return isnan(r) ? REF_ANY_NAN : ref_encode(dt, r);
}

static uint64_t ref_scale(rondo_dtype_t dt, uint64_t v, double factor)
{
  return is_float(dt) ? ref_scale_float(dt, v, factor) : ref_scale_int(dt, v, factor);
}

/* reduce_scale out of place and in place on random and edge inputs. */
static void check_scale(rondo_dtype_t dt, double factor)
{
  const uint64_t *e;
  size_t k;
  edge_values(dt, &e, &k);
  size_t n = k + 100;
  void *src = random_array(dt, n);
  for (size_t i = 0; i < k; i++)
    put_bits(dt, src, i, e[i]);
  uint64_t *want = malloc(n * sizeof *want);
  assert_non_null(want);
  for (size_t i = 0; i < n; i++)
    want[i] = ref_scale(dt, get_bits(dt, src, i), factor);
  slot_t out = slot_new(dt, n, NULL, 1), in = slot_new(dt, n, src, 1);
  reduce_scale(out.p, src, n, dt, factor);
  reduce_scale(in.p, in.p, n, dt, factor);
  int bad = compare("scale", dt, RONDO_PROD, src, src, out.p, want, n) +
            compare("scale in place", dt, RONDO_PROD, src, src, in.p, want, n) +
            !slot_guards_ok(dt, out, n) + !slot_guards_ok(dt, in, n);
  slot_free(out);
  slot_free(in);
  free(want);
  free(src);
  if (bad)
    fail_msg("reduce_scale %s by %g: %d mismatches", dtype_str(dt), factor, bad);
}

static void test_scale_matches_reference(void **state)
{
  (void)state;
  static const double factors[] = {0.5, 1.0 / 3, -2.0, 1.0, 0.0, -0.0, 1e30, 1e-30,
                                   0.1, INFINITY, -INFINITY, NAN, 1e300};
  for (size_t d = 0; d < ARRAY_LEN(all_dtypes); d++)
    for (size_t f = 0; f < ARRAY_LEN(factors); f++)
      check_scale(all_dtypes[d], factors[f]);
}

typedef struct {
  rondo_dtype_t dt;
  uint64_t v;
  double factor;
  uint64_t want;
} scale_case_t;

static void run_scale_cases(const scale_case_t *cases, size_t n)
{
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t in = 0, out = 0;
    put_bits(cases[i].dt, &in, 0, cases[i].v);
    reduce_scale(&out, &in, 1, cases[i].dt, cases[i].factor);
    if (!matches(cases[i].dt, out, cases[i].want)) {
      char sv[64], sw[64], sg[64];
      describe(cases[i].dt, cases[i].v, sv, sizeof sv);
      describe(cases[i].dt, cases[i].want, sw, sizeof sw);
      describe(cases[i].dt, out, sg, sizeof sg);
      print_error("scale %s %s * %g: want %s got %s\n", dtype_str(cases[i].dt), sv,
                  cases[i].factor, sw, sg);
      bad++;
    }
  }
  if (bad)
    fail_msg("%d of %zu scale cases failed", bad, n);
}

static void test_scale_int_rounds_half_even_and_saturates(void **state)
{
  (void)state;
  static const scale_case_t cases[] = {
    {RONDO_INT8, 5, 0.5, 2},            {RONDO_INT8, 7, 0.5, 4},
    {RONDO_INT8, 0xfb, 0.5, 0xfe},      /* -2.5 -> -2 */
    {RONDO_INT8, 0xf9, 0.5, 0xfc},      /* -3.5 -> -4 */
    {RONDO_INT8, 1, 0.5, 0},            {RONDO_INT8, 0xff, 0.5, 0},
    {RONDO_INT8, 1, 0.75, 1},           {RONDO_INT8, 100, 2.0, 0x7f},
    {RONDO_INT8, 0x9c, 2.0, 0x80},      /* -100 * 2 -> -128 */
    {RONDO_INT8, 3, NAN, 0},            {RONDO_INT8, 0, INFINITY, 0},
    {RONDO_INT8, 3, INFINITY, 0x7f},    {RONDO_INT8, 3, -INFINITY, 0x80},
    {RONDO_UINT8, 200, 1.5, 255},       {RONDO_UINT8, 5, -1.0, 0},
    {RONDO_UINT8, 3, 0.5, 2},           {RONDO_UINT8, 255, 1.0, 255},
    {RONDO_INT32, 0x7fffffff, 2.0, 0x7fffffff},
    {RONDO_INT32, 0x80000000, 2.0, 0x80000000},
    {RONDO_INT32, 0x7fffffff, 1.0, 0x7fffffff},
    {RONDO_INT32, 0xfffffffd, 0.5, 0xfffffffe}, /* -1.5 -> -2 */
    {RONDO_INT64, INT64_MAX, 1.0, INT64_MAX},   /* (double) is 2^63: saturates */
    {RONDO_INT64, UINT64_C(1) << 63, 1.0, UINT64_C(1) << 63},
    {RONDO_INT64, (UINT64_C(1) << 53) + 1, 1.0, UINT64_C(1) << 53}, /* done in double */
    {RONDO_INT64, 5, -0.5, (uint64_t)-2},
  };
  run_scale_cases(cases, ARRAY_LEN(cases));
}

static void test_scale_float_types(void **state)
{
  (void)state;
  static const scale_case_t cases[] = {
    {RONDO_FLOAT16, 0x3c00, 1.0 / 3, 0x3555},
    {RONDO_FLOAT16, 0x7bff, 2.0, 0x7c00},
    {RONDO_FLOAT16, 0x0001, 0.5, 0x0000},
    {RONDO_FLOAT16, 0x0003, 0.5, 0x0002},
    {RONDO_FLOAT16, 0x3c00, -0.0, 0x8000},
    {RONDO_BFLOAT16, 0x3f80, 1.0 / 3, 0x3eab},
    {RONDO_BFLOAT16, 0x7f7f, 2.0, 0x7f80},
    {RONDO_FLOAT32, 0x40400000, 0.5, 0x3fc00000},
    {RONDO_FLOAT32, 0x3f800000, 1e300, 0x7f800000},  /* factor rounds to inf in float */
    {RONDO_FLOAT32, 0x3f800000, 1e-300, 0x00000000}, /* and to 0 */
    {RONDO_FLOAT32, 0x7f800000, 0.0, REF_ANY_NAN},
    {RONDO_FLOAT64, 0x3ff0000000000000u, 1e300, 0x7e37e43c8800759cu},
  };
  run_scale_cases(cases, ARRAY_LEN(cases));
}

/* Integer division truncating toward zero, by magnitudes. */
static uint64_t ref_average_int(rondo_dtype_t dt, uint64_t v, int n)
{
  wide_t x = int_value(dt, v);
  wide_t q = (x < 0 ? -x : x) / n;
  return int_wrap(dt, x < 0 ? -q : q);
}

/* The quotient in the compute type: float for all but float64 (where float
 * division is correctly rounded, so the double quotient rounded to float is
 * the same for the values here: a float over an int <= 1000). */
static uint64_t ref_average_float(rondo_dtype_t dt, uint64_t v, int n)
{
  double x = ref_value(float_fmt(dt), v);
  double r = dt == RONDO_FLOAT64 ? x / n : (double)(float)(x / n);
  return isnan(r) ? REF_ANY_NAN : ref_encode(dt, r);
}

static void test_average_matches_reference(void **state)
{
  (void)state;
  static const int ranks[] = {1, 2, 3, 7, 64, 1000};
  for (size_t d = 0; d < ARRAY_LEN(all_dtypes); d++)
    for (size_t r = 0; r < ARRAY_LEN(ranks); r++) {
      rondo_dtype_t dt = all_dtypes[d];
      int n = ranks[r];
      const uint64_t *e;
      size_t k;
      edge_values(dt, &e, &k);
      size_t count = k + 50;
      void *src = random_array(dt, count);
      for (size_t i = 0; i < k; i++)
        put_bits(dt, src, i, e[i]);
      slot_t buf = slot_new(dt, count, src, 1);
      reduce_average(buf.p, count, dt, n);
      uint64_t *want = malloc(count * sizeof *want);
      assert_non_null(want);
      for (size_t i = 0; i < count; i++) {
        uint64_t v = get_bits(dt, src, i);
        want[i] = is_float(dt) ? ref_average_float(dt, v, n) : ref_average_int(dt, v, n);
      }
      int bad = compare("average", dt, RONDO_AVG, src, src, buf.p, want, count) +
                !slot_guards_ok(dt, buf, count);
      slot_free(buf);
      free(want);
      free(src);
      if (bad)
        fail_msg("reduce_average %s over %d ranks: %d mismatches", dtype_str(dt), n, bad);
    }
}

static void test_average_int_truncates_toward_zero(void **state)
{
  (void)state;
  int8_t i8[] = {-7, 7, -128, 127, -1, 1};
  const int8_t i8_want[] = {-3, 3, -64, 63, 0, 0};
  reduce_average(i8, ARRAY_LEN(i8), RONDO_INT8, 2);
  assert_memory_equal(i8, i8_want, sizeof i8);

  uint8_t u8[] = {255, 7, 1};
  const uint8_t u8_want[] = {85, 2, 0};
  reduce_average(u8, ARRAY_LEN(u8), RONDO_UINT8, 3);
  assert_memory_equal(u8, u8_want, sizeof u8);

  int32_t i32[] = {-7, INT32_MIN, INT32_MAX, -3};
  const int32_t i32_want[] = {-1, INT32_MIN / 4, INT32_MAX / 4, 0};
  reduce_average(i32, ARRAY_LEN(i32), RONDO_INT32, 4);
  assert_memory_equal(i32, i32_want, sizeof i32);

  int64_t i64[] = {INT64_MIN, INT64_MAX, -2, -1};
  const int64_t i64_want[] = {INT64_C(-3074457345618258602), INT64_C(3074457345618258602), 0, 0};
  reduce_average(i64, ARRAY_LEN(i64), RONDO_INT64, 3);
  assert_memory_equal(i64, i64_want, sizeof i64);

  int64_t one[] = {INT64_MIN, -5};
  const int64_t one_want[] = {INT64_MIN, -5};
  reduce_average(one, ARRAY_LEN(one), RONDO_INT64, 1);
  assert_memory_equal(one, one_want, sizeof one);
}

/* ---- Adasum --------------------------------------------------------------- */

static double get_value(rondo_dtype_t dt, const void *buf, size_t i)
{
  return ref_value(float_fmt(dt), get_bits(dt, buf, i));
}

static void put_value(rondo_dtype_t dt, void *buf, size_t i, double v)
{
  put_bits(dt, buf, i, ref_encode(dt, v));
}

/* The reference: sums in long double (the library's are in double, in one
 * pass), the combination in long double. The library's dot products carry
 * up to n double roundings into the coefficients, so the tolerance is a
 * few units in the last place of the dtype plus n of double's, relative to
 * the terms (a cancelling sum has no better bound). */
static void check_adasum(rondo_dtype_t dt, const void *a, const void *b, size_t n)
{
  long double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; i++) {
    long double x = get_value(dt, a, i), y = get_value(dt, b, i);
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  long double tiny = 1.4916681462400413e-154L; /* sqrt(DBL_MIN) */
  long double ca = aa >= tiny ? 1 - dot / (2 * aa) : 1, cb = bb >= tiny ? 1 - dot / (2 * bb) : 1;
  double ulp = dt == RONDO_FLOAT64 ? 0x1p-52 : dt == RONDO_FLOAT32 ? 0x1p-23
                                            : dt == RONDO_FLOAT16 ? 0x1p-10 : 0x1p-7;
  slot_t out = slot_new(dt, n, NULL, 1), in = slot_new(dt, n, a, 2);
  reduce_adasum(out.p, a, b, n, dt);
  reduce_adasum(in.p, in.p, b, n, dt); /* dst == a */
  int bad = !slot_guards_ok(dt, out, n) + !slot_guards_ok(dt, in, n);
  for (size_t i = 0; i < n; i++) {
    long double x = get_value(dt, a, i), y = get_value(dt, b, i);
    double want = (double)(ca * x + cb * y);
    /* the terms' magnitude bounds the rounding of a cancelling sum */
    double scale = (double)(fabsl(ca * x) + fabsl(cb * y)) + 1e-300;
    double got = get_value(dt, out.p, i), got_in = get_value(dt, in.p, i);
    if (fabs(got - want) > (4 * ulp + 4.0 * (double)n * 0x1p-52) * scale || got_in != got) {
      if (bad++ < 5)
        print_error("adasum %s [%zu/%zu]: a=%.17g b=%.17g want %.17g got %.17g (in place "
                    "%.17g)\n",
                    dtype_str(dt), i, n, (double)x, (double)y, want, got, got_in);
    }
  }
  slot_free(out);
  slot_free(in);
  if (bad)
    fail_msg("reduce_adasum %s count %zu: %d mismatches", dtype_str(dt), n, bad);
}

static const rondo_dtype_t float_dtypes[] = {RONDO_FLOAT16, RONDO_BFLOAT16, RONDO_FLOAT32,
                                             RONDO_FLOAT64};

static void test_adasum_matches_reference(void **state)
{
  (void)state;
  static const size_t sizes[] = {1, 2, 7, 33, 1000};
  for (size_t d = 0; d < ARRAY_LEN(float_dtypes); d++)
    for (size_t c = 0; c < ARRAY_LEN(sizes); c++)
      for (int kind = 0; kind < 3; kind++) {
        rondo_dtype_t dt = float_dtypes[d];
        size_t n = sizes[c];
        void *a = malloc(n * esize(dt)), *b = malloc(n * esize(dt));
        assert_true(a && b);
        for (size_t i = 0; i < n; i++) {
          double x = (double)(int)(rng_next() % 2001) / 100.0 - 10.0;
          double y = (double)(int)(rng_next() % 2001) / 100.0 - 10.0;
          if (kind == 1) /* nearly parallel */
            y = x * 0.75 + y * 0.01;
          else if (kind == 2) /* nearly opposite */
            y = -x + y * 0.01;
          put_value(dt, a, i, x);
          put_value(dt, b, i, y);
        }
        check_adasum(dt, a, b, n);
        free(a);
        free(b);
      }
}

static void test_adasum_closed_forms(void **state)
{
  (void)state;
  for (size_t d = 0; d < ARRAY_LEN(float_dtypes); d++) {
    rondo_dtype_t dt = float_dtypes[d];
    uint64_t a[4], b[4], out[4]; /* 8-byte slots hold any dtype */
    struct {
      double a[2], b[2], want[2];
      const char *what;
    } cases[] = {
        {{1, 0}, {0, 2}, {1, 2}, "orthogonal gradients add"},
        {{3, 4}, {3, 4}, {3, 4}, "equal gradients average"},
        {{3, 4}, {-3, -4}, {0, 0}, "opposite gradients cancel"},
        {{3, 4}, {0, 0}, {3, 4}, "a zero gradient leaves the other"},
        {{0, 0}, {0, 0}, {0, 0}, "two zero gradients"},
        {{2, 0}, {1, 0}, {1.5, 0}, "parallel: 0.75 * 2 + 0 * 1"},
    };
    for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
      for (int i = 0; i < 2; i++) {
        put_value(dt, a, (size_t)i, cases[c].a[i]);
        put_value(dt, b, (size_t)i, cases[c].b[i]);
      }
      reduce_adasum(out, a, b, 2, dt);
      for (int i = 0; i < 2; i++)
        if (get_value(dt, out, (size_t)i) != cases[c].want[i])
          fail_msg("adasum %s, %s: element %d is %.17g, want %.17g", dtype_str(dt),
                   cases[c].what, i, get_value(dt, out, (size_t)i), cases[c].want[i]);
    }
    reduce_adasum(NULL, NULL, NULL, 0, dt); /* nothing to do */
  }
}

static void test_average_float_types(void **state)
{
  (void)state;
  /* 142 * (float)(1/3) would round up to 47.33333588; the quotient rounds
   * down to 47.33333206: AVG divides */
  float f32[] = {3.0f, 1.5f, -0.0f, INFINITY, 142.0f};
  const float f32_want[] = {1.0f, 0.5f, -0.0f, INFINITY, 142.0f / 3.0f};
  reduce_average(f32, ARRAY_LEN(f32), RONDO_FLOAT32, 3);
  assert_memory_equal(f32, f32_want, sizeof f32);
  assert_int_equal(bits_of_float(f32[4]), 0x423d5555);

  /* 10 * (1/3) is 0x400aaaaaaaaaaaaa, one ulp below 10/3; the quotient is
   * 0x400aaaaaaaaaaaab */
  double f64[] = {3.0, -1.0, 10.0};
  const double f64_want[] = {1.0, -1.0 / 3, 0x1.aaaaaaaaaaaabp+1};
  reduce_average(f64, ARRAY_LEN(f64), RONDO_FLOAT64, 3);
  assert_memory_equal(f64, f64_want, sizeof f64);

  uint16_t f16[] = {0x4200 /* 3 */, 0x7c00, 0xfe01, 0x0001};
  reduce_average(f16, ARRAY_LEN(f16), RONDO_FLOAT16, 3);
  assert_int_equal(f16[0], 0x3c00);
  assert_int_equal(f16[1], 0x7c00);
  assert_true(bits_is_nan(half_fmt, f16[2]));
  assert_int_equal(f16[3], 0x0000); /* 2^-24 / 3 underflows to +0 */

  uint16_t bf16[] = {0x4040 /* 3 */, 0x4120 /* 10 */};
  reduce_average(bf16, ARRAY_LEN(bf16), RONDO_BFLOAT16, 4);
  assert_int_equal(bf16[0], 0x3f40); /* 0.75 */
  assert_int_equal(bf16[1], 0x4020); /* 2.5 */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_half_to_float_exhaustive),
    cmocka_unit_test(test_bf16_to_float_exhaustive),
    cmocka_unit_test(test_float_to_half_rounds_midpoints_to_even),
    cmocka_unit_test(test_float_to_bf16_rounds_midpoints_to_even),
    cmocka_unit_test(test_float_to_half_matches_reference_sweep),
    cmocka_unit_test(test_float_to_bf16_matches_reference_sweep),
    cmocka_unit_test(test_conversions_special_values),
    cmocka_unit_test(test_apply_matches_reference_random),
    cmocka_unit_test(test_apply_matches_reference_edge_pairs),
    cmocka_unit_test(test_apply_count_zero_writes_nothing),
    cmocka_unit_test(test_int_sum_wraps),
    cmocka_unit_test(test_int_prod_wraps),
    cmocka_unit_test(test_int_min_max_respect_signedness),
    cmocka_unit_test(test_float_sum_special_values),
    cmocka_unit_test(test_float_sum_rounds_ties_to_even),
    cmocka_unit_test(test_float_min_max_order_signed_zeros),
    cmocka_unit_test(test_float_min_max_return_first_nan_quieted),
    cmocka_unit_test(test_scale_matches_reference),
    cmocka_unit_test(test_scale_int_rounds_half_even_and_saturates),
    cmocka_unit_test(test_scale_float_types),
    cmocka_unit_test(test_average_matches_reference),
    cmocka_unit_test(test_average_int_truncates_toward_zero),
    cmocka_unit_test(test_average_float_types),
    cmocka_unit_test(test_adasum_matches_reference),
    cmocka_unit_test(test_adasum_closed_forms),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
