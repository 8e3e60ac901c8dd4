/*
 * Reduction kernels: element-wise dst = a (op) b for every dtype x op, plus
 * scaling and the AVG finish. Internal to librondo (prefix reduce_).
 *
 * Semantics (docs/api.md repeats them for users):
 *  - Floating types compute in their compute type: float for float16,
 *    bfloat16 and float32; double for float64. float16/bfloat16 inputs are
 *    converted exactly to float, the op runs in float, the result is rounded
 *    to the 16-bit type to nearest, ties to even.
 *    For SUM and PROD of two 16-bit values this equals rounding the exact
 *    result once (float has at least 2p + 2 bits for both formats, so the
 *    double rounding is innocuous); reduce_scale's factor is not a 16-bit
 *    value and does round twice.
 *  - SUM/PROD follow IEEE 754 (NaN in -> a quiet NaN out, inf - inf = NaN,
 *    overflow to +-inf); which payload wins when both operands are NaN is the
 *    hardware's choice. MIN/MAX are IEEE 754-2019 minimum/maximum: NaN if
 *    either operand is NaN (the first NaN operand, quieted, payload and sign
 *    kept), and -0.0 < +0.0, so apart from NaN payloads they are commutative
 *    whatever the reduction order.
 *  - The floating-point environment is assumed to be the default one (round
 *    to nearest even, no flush-to-zero), as for MPI reductions.
 *  - Integers: SUM and PROD wrap modulo 2^bits (two's complement), never UB.
 *  - AVG is not a kernel op: algorithms reduce with SUM and the caller finishes
 *    with reduce_average() (floating: divide by n in the compute type;
 *    integer: the wrapped sum divided by n, truncated toward zero).
 *  - dst may alias a and/or b exactly (same pointer); partial overlap is not
 *    allowed. The operand order matters only for which NaN payload wins.
 */
#ifndef RONDO_REDUCE_H
#define RONDO_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "rondo.h"

/* dst[i] = a[i] op b[i] for i < count; dst may be a or b (the same
 * address, not a partial overlap). op is SUM, MIN, MAX or PROD (AVG is
 * treated as SUM). Invalid dtype/op values are the caller's bug: checked at
 * the API entry, asserted here. */
void reduce_apply(void *dst, const void *a, const void *b, size_t count,
                  rondo_dtype_t dtype, rondo_op_t op);

/* dst[i] = src[i] * factor (dst may equal src). Floating types: factor is
 * rounded to the compute type and multiplied there (float16/bfloat16 rounded
 * back to nearest even). Integer types: the product is computed in double
 * (so int64 values above 2^53 are rounded first), rounded to nearest (ties to
 * even) and saturated to the type's range; a NaN product (0 * inf, a NaN
 * factor) gives 0. */
void reduce_scale(void *dst, const void *src, size_t count, rondo_dtype_t dtype,
                  double factor);

/* Adasum's combination of two gradients (op RONDO_ADASUM), a from the lower
 * ranks: with dot = a.b, na = a.a and nb = b.b summed in double,
 *   dst = (1 - dot / (2 na)) a + (1 - dot / (2 nb)) b,
 * a coefficient staying 1 where its squared norm is below sqrt(DBL_MIN) (a
 * zero gradient). Each element is computed in double and rounded to the
 * dtype (float16 and bfloat16 through float). Floating dtypes only; dst may
 * be a or b. */
void reduce_adasum(void *dst, const void *a, const void *b, size_t count, rondo_dtype_t dtype);

/* Turns a SUM over n ranks into the AVG, in place (n >= 1): the sum divided
 * by n, floating types in the compute type (the correctly rounded quotient;
 * float16/bfloat16 then rounded to nearest even), integers truncated toward
 * zero. */
void reduce_average(void *buf, size_t count, rondo_dtype_t dtype, int n);

/* buf = n copies of op's identity for dtype (SUM and AVG: 0, PROD: 1,
 * MIN: the type's largest value or +inf, MAX: its smallest or -inf): what
 * a rank without data contributes (the engine's join, padding). */
void reduce_identity(void *buf, size_t n, rondo_dtype_t dtype, rondo_op_t op);

/* Scalar conversions (exact one way, round-to-nearest-even the other; NaN
 * stays NaN with the sign kept, infinities and subnormals are exact). */
float reduce_half_to_float(uint16_t h);
uint16_t reduce_float_to_half(float f);
float reduce_bf16_to_float(uint16_t h);
uint16_t reduce_float_to_bf16(float f);

#endif /* RONDO_REDUCE_H */
