/*
 * The one size parser and the one power-of-two helper of rondo, for the
 * library (knobs, tuning tables, the algorithms) and the tools (rondo-info,
 * rondo-bench, bench/). Header-only and free of every other rondo header,
 * so a tool includes it without linking anything internal.
 *
 * Size grammar, everywhere: a whole decimal number, then optionally K, M, G
 * or T (powers of 1024), then optionally "i" and "B": "4096", "64K",
 * "16MiB", "1GB". No sign, no fraction ("1.5M" is rejected: say "1536K"),
 * no hex. Spaces around the whole text are allowed; none inside.
 */
#ifndef RONDO_BASE_NUMBERS_H
#define RONDO_BASE_NUMBERS_H

#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum { RONDO__NUM_OK = 0, RONDO__NUM_BAD, RONDO__NUM_TOO_BIG } rondo__num_t;

/* The number in [s, end): digits, then (with suffix != 0) the size suffix.
 * *out <= max on success. */
static inline rondo__num_t rondo__parse_number(const char *s, const char *end, int suffix,
                                               uint64_t max, uint64_t *out)
{
  uint64_t v = 0;
  const char *p = s;
  if (p == end || !isdigit((unsigned char)*p))
    return RONDO__NUM_BAD;
  for (; p < end && isdigit((unsigned char)*p); p++) {
    unsigned d = (unsigned)(*p - '0');
    if (v > (max - d) / 10)
      return RONDO__NUM_TOO_BIG;
    v = v * 10 + d;
  }
  unsigned shift = 0;
  if (suffix && p < end) {
    switch (toupper((unsigned char)*p)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
    }
    if (shift)
      p++;
    if (shift && p < end && (*p == 'i' || *p == 'I'))
      p++;
    if (p < end && (*p == 'B' || *p == 'b'))
      p++;
  }
  if (p != end)
    return RONDO__NUM_BAD;
  if (v > (max >> shift))
    return RONDO__NUM_TOO_BIG;
  *out = v << shift;
  return RONDO__NUM_OK;
}

/* A whole text as a byte count (spaces around it allowed). 0 on success,
 * -1 if it is not a size or does not fit a size_t. */
static inline int rondo__parse_size(const char *text, size_t *out)
{
  if (text == NULL)
    return -1;
  const char *s = text, *end = text + strlen(text);
  while (s < end && isspace((unsigned char)*s))
    s++;
  while (end > s && isspace((unsigned char)end[-1]))
    end--;
  uint64_t v;
  if (rondo__parse_number(s, end, 1, SIZE_MAX, &v) != RONDO__NUM_OK)
    return -1;
  *out = (size_t)v;
  return 0;
}

/* The largest power of two <= n (1 for n < 2). */
static inline int rondo__pof2_floor(int n)
{
  int p = 1;
  while (p <= n / 2)
    p *= 2;
  return p;
}

/* lg of a power of two. */
static inline int rondo__log2(int pof2)
{
  int lg = 0;
  while ((1 << lg) < pof2)
    lg++;
  return lg;
}

#endif /* RONDO_BASE_NUMBERS_H */
