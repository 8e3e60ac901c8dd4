/*
 * test_adasum - op RONDO_ADASUM (lib/algo/allreduce/allreduce_adasum.c) at 1-5 ranks.
 *
 *   - every floating dtype, counts 1, 2, 7, 100 and 1001, in place and out
 *     of place, against a reference computed here in float64 from every
 *     rank's input: the pairwise combination
 *         adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
 *     over the tree docs/api.md defines (ranks 2i and 2i+1 folded first
 *     for i < size - 2^k, then pairs of neighbours, then pairs of pairs),
 *     within a tolerance of the dtype's rounding at each level; identical
 *     bytes on every rank;
 *   - closed forms: equal gradients on every rank give that gradient back,
 *     gradients on orthogonal axes give their sum, zero gradients are left
 *     out;
 *   - the engine: tensors submitted asynchronously with RONDO_ADASUM are
 *     fused and each gets the bytes of its own blocking all-reduce (its own
 *     coefficients, not the fused buffer's);
 *   - errors on every rank: integer dtypes, a forced other algorithm, a
 *     reduce-scatter with op adasum (RONDO_ERR_UNSUPPORTED).
 * The values here never come from rondo: the generator and the reference
 * are written in this file.
 */
#include "mpitest.h"

#include <math.h>

static const rondo_dtype_t dtypes[] = {RONDO_FLOAT16, RONDO_BFLOAT16, RONDO_FLOAT32,
                                       RONDO_FLOAT64};
static const size_t counts[] = {1, 2, 7, 100, 1001};

/* Rank q's input element i: a value exact in every floating dtype (a
 * multiple of 1/8 below 16 in magnitude: 8 significant bits). */
static double input(int q, size_t i, uint64_t salt)
{
  uint64_t r = mt_rand(salt, (uint64_t)q, i);
  return ((double)(int64_t)(r % 255) - 127.0) / 8.0;
}

static void combine(double *dst, const double *a, const double *b, size_t n)
{
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; i++) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  double ca = aa >= 1.4916681462400413e-154 ? 1 - dot / (2 * aa) : 1;
  double cb = bb >= 1.4916681462400413e-154 ? 1 - dot / (2 * bb) : 1;
  for (size_t i = 0; i < n; i++)
    dst[i] = ca * a[i] + cb * b[i];
}

/* The reference over all ranks, into want[n]; *mag gets the largest
 * magnitude of any intermediate (the tolerance's scale). */
static void reference(size_t n, uint64_t salt, double *want, double *mag)
{
  int p = mt.size, pof2 = 1;
  while (pof2 * 2 <= p)
    pof2 *= 2;
  int rem = p - pof2;
  double *v = mt_alloc((size_t)p * n * sizeof *v);
  for (int q = 0; q < p; q++)
    for (size_t i = 0; i < n; i++)
      v[(size_t)q * n + i] = input(q, i, salt);
  /* fold: pairs (2i, 2i+1) for i < rem become one, in new-rank order */
  double *g = mt_alloc((size_t)pof2 * n * sizeof *g);
  for (int k = 0; k < pof2; k++) {
    if (k < rem)
      combine(g + (size_t)k * n, v + (size_t)(2 * k) * n, v + (size_t)(2 * k + 1) * n, n);
    else
      memcpy(g + (size_t)k * n, v + (size_t)(k + rem) * n, n * sizeof *g);
  }
  *mag = 0;
  for (int width = pof2; width > 1; width /= 2)
    for (int k = 0; k < width / 2; k++)
      combine(g + (size_t)k * n, g + (size_t)(2 * k) * n, g + (size_t)(2 * k + 1) * n, n);
  for (size_t i = 0; i < (size_t)p * n; i++)
    *mag = fabs(v[i]) > *mag ? fabs(v[i]) : *mag;
  memcpy(want, g, n * sizeof *want);
  free(v);
  free(g);
}

static double elem(rondo_dtype_t dt, const void *buf, size_t i)
{
  const unsigned char *b = (const unsigned char *)buf + i * mt_dtype_size(dt);
  uint16_t h;
  float f;
  double d;
  switch (dt) {
  case RONDO_FLOAT16: memcpy(&h, b, 2); return mt_half_to_float(h);
  case RONDO_BFLOAT16: memcpy(&h, b, 2); return mt_bf16_to_float(h);
  case RONDO_FLOAT32: memcpy(&f, b, 4); return f;
  default: memcpy(&d, b, 8); return d;
  }
}

static void store(rondo_dtype_t dt, void *buf, size_t i, double v)
{
  unsigned char *b = (unsigned char *)buf + i * mt_dtype_size(dt);
  uint16_t h;
  float f = (float)v;
  switch (dt) {
  case RONDO_FLOAT16: h = mt_float_to_half(f); memcpy(b, &h, 2); break;
  case RONDO_BFLOAT16: h = mt_float_to_bf16(f); memcpy(b, &h, 2); break;
  case RONDO_FLOAT32: memcpy(b, &f, 4); break;
  default: memcpy(b, &v, 8); break;
  }
}

/* Relative precision of dt: each tree level rounds once. */
static double eps(rondo_dtype_t dt)
{
  return dt == RONDO_FLOAT16 ? 0x1p-11 : dt == RONDO_BFLOAT16 ? 0x1p-8
                                        : dt == RONDO_FLOAT32 ? 0x1p-24 : 0x1p-53;
}

static void against_reference(void)
{
  int levels = 1;
  for (int w = 1; w < mt.size; w *= 2)
    levels++;
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
      for (int in_place = 0; in_place < 2; in_place++) {
        rondo_dtype_t dt = dtypes[d];
        size_t n = counts[c], es = mt_dtype_size(dt);
        uint64_t salt = d * 100 + c;
        mt_where("adasum %s count %zu%s", mt_dtype_str(dt), n, in_place ? " in place" : "");
        char *in = mt_alloc(n * es), *out = mt_alloc(n * es);
        double *want = mt_alloc(n * sizeof *want), mag;
        for (size_t i = 0; i < n; i++)
          store(dt, in, i, input(mt.rank, i, salt));
        reference(n, salt, want, &mag);
        void *dst = in_place ? in : out;
        if (!MT_EQ_STATUS(rondo_allreduce(rondo_world(), in, dst, n, dt, RONDO_ADASUM),
                          RONDO_SUCCESS)) {
          free(in);
          free(out);
          free(want);
          continue;
        }
        /* Coefficients stay within [0, 1.5]: intermediates are bounded by
         * a few times the inputs; each level rounds to the dtype, and the
         * dot products carry n roundings of double. */
        double tol = (4.0 * levels * eps(dt) + 8.0 * (double)n * 0x1p-53) * mag * mt.size;
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++)
          if (!(fabs(elem(dt, dst, i) - want[i]) <= tol) && bad++ == 0)
            first = i;
        MT_CHECK(bad == 0, "%zu of %zu elements off the float64 reference by more than %g; "
                 "first at %zu: %.17g, want %.17g", bad, n, tol, first, elem(dt, dst, first),
                 want[first]);
        mt_hash_record(dst, n * es);
        free(in);
        free(out);
        free(want);
      }
}

static void closed_forms(void)
{
  mt_where("adasum of the same gradient on every rank is that gradient");
  float same[4] = {3, -4, 0.5f, 8}, out[4];
  if (MT_EQ_STATUS(rondo_allreduce(rondo_world(), same, out, 4, RONDO_FLOAT32, RONDO_ADASUM),
                   RONDO_SUCCESS))
    for (int i = 0; i < 4; i++)
      MT_CHECK(out[i] == same[i], "element %d: %g, want %g", i, out[i], same[i]);
  mt_where("adasum of gradients on orthogonal axes is their sum");
  double axis[8] = {0}, sum[8];
  axis[mt.rank % 8] = mt.rank + 1.0;
  if (MT_EQ_STATUS(rondo_allreduce(rondo_world(), axis, sum, 8, RONDO_FLOAT64, RONDO_ADASUM),
                   RONDO_SUCCESS))
    for (int i = 0; i < 8; i++)
      MT_CHECK(sum[i] == (i < mt.size ? i + 1.0 : 0.0), "element %d: %g", i, sum[i]);
  mt_where("a zero gradient on odd ranks is left out");
  double g[3] = {1, 2, 2}, z[3] = {0, 0, 0}, r[3];
  if (mt.size <= 2 &&
      MT_EQ_STATUS(rondo_allreduce(rondo_world(), mt.rank % 2 ? z : g, r, 3, RONDO_FLOAT64,
                                   RONDO_ADASUM),
                   RONDO_SUCCESS))
    for (int i = 0; i < 3; i++)
      MT_CHECK(r[i] == g[i], "element %d: %g, want %g", i, r[i], g[i]);
  mt_where("count 0");
  MT_EQ_STATUS(rondo_allreduce(rondo_world(), NULL, NULL, 0, RONDO_FLOAT32, RONDO_ADASUM),
               RONDO_SUCCESS);
}

enum { FUSED = 6 };

static void engine_fused(void)
{
  mt_where("%d Adasum tensors through the engine, fused", FUSED);
  static const size_t sizes[FUSED] = {1, 5, 64, 3, 300, 17};
  float *in[FUSED], *async[FUSED], *blocking[FUSED];
  rondo_request_t r[FUSED];
  for (int t = 0; t < FUSED; t++) {
    in[t] = mt_alloc(sizes[t] * sizeof(float));
    async[t] = mt_alloc(sizes[t] * sizeof(float));
    blocking[t] = mt_alloc(sizes[t] * sizeof(float));
    for (size_t i = 0; i < sizes[t]; i++)
      in[t][i] = (float)input(mt.rank, i, 1000 + (uint64_t)t);
  }
  rondo_async_opts_t o = RONDO_ASYNC_OPTS_INIT;
  o.group = "adasum.layers"; /* all of them in one cycle, so they fuse */
  o.group_size = FUSED;
  for (int t = 0; t < FUSED; t++) {
    char name[32];
    snprintf(name, sizeof name, "adasum.layer%d", t);
    MT_EQ_STATUS(rondo_allreduce_async(rondo_world(), name, in[t], async[t], sizes[t],
                                       RONDO_FLOAT32, RONDO_ADASUM, &o, &r[t]),
                 RONDO_SUCCESS);
  }
  for (int t = 0; t < FUSED; t++)
    MT_EQ_STATUS(rondo_wait(&r[t]), RONDO_SUCCESS);
  for (int t = 0; t < FUSED; t++) {
    if (MT_EQ_STATUS(rondo_allreduce(rondo_world(), in[t], blocking[t], sizes[t], RONDO_FLOAT32,
                                     RONDO_ADASUM),
                     RONDO_SUCCESS))
      mt_check_elems("fused tensor against its own blocking all-reduce", RONDO_FLOAT32, async[t],
                     blocking[t], sizes[t]);
    free(in[t]);
    free(async[t]);
    free(blocking[t]);
  }
}

static void errors(void)
{
  mt_where("adasum refusals, on every rank");
  int32_t i32[4] = {1, 2, 3, 4};
  float f[4] = {1, 2, 3, 4}, out[4];
  MT_EQ_STATUS(rondo_allreduce(rondo_world(), i32, i32, 4, RONDO_INT32, RONDO_ADASUM),
               RONDO_ERR_UNSUPPORTED);
  MT_CHECK(strstr(rondo_last_error(), "floating") != NULL, "says why: %s", rondo_last_error());
  MT_EQ_STATUS(rondo_allreduce_algo(rondo_world(), f, out, 4, RONDO_FLOAT32, RONDO_ADASUM,
                                    RONDO_ALGO_RING),
               RONDO_ERR_UNSUPPORTED);
  MT_EQ_STATUS(rondo_allreduce_algo(rondo_world(), f, out, 4, RONDO_FLOAT32, RONDO_SUM,
                                    RONDO_ALGO_ADASUM),
               RONDO_ERR_UNSUPPORTED);
  MT_EQ_STATUS(rondo_reduce_scatter(rondo_world(), f, out, 1, RONDO_FLOAT32, RONDO_ADASUM),
               RONDO_ERR_UNSUPPORTED);
  rondo_algo_t choice = RONDO_ALGO_AUTO;
  if (MT_EQ_STATUS(rondo_allreduce_choice(rondo_world(), 4, RONDO_FLOAT32, RONDO_ADASUM, &choice),
                   RONDO_SUCCESS))
    MT_EQ_INT(choice, RONDO_ALGO_ADASUM); /* also under RONDO_ALLREDUCE_ALGO (the -np3 run) */
  mt_where("the argument check: op adasum on one rank, sum on the others");
  if (mt.size > 1) {
    rondo_op_t op = mt.rank == 0 ? RONDO_ADASUM : RONDO_SUM;
    MT_EQ_STATUS(rondo_allreduce(rondo_world(), f, out, 4, RONDO_FLOAT32, op), RONDO_ERR_MISMATCH);
  }
}

int main(int argc, char **argv)
{
  if (mt_rondo_start(&argc, &argv, "test_adasum"))
    return 1;
  against_reference();
  closed_forms();
  engine_fused();
  errors();
  int rc = mt_finish();
  rondo_finalize();
  return rc;
}
