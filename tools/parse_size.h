/* Byte counts on the command lines of rondo-info and the benchmarks:
 * "4096", "64K", "1.5M", "1G" (powers of 1024). Returns 0 for text that
 * is not a number. */
#ifndef RONDO_TOOLS_PARSE_SIZE_H
#define RONDO_TOOLS_PARSE_SIZE_H

#include <stdlib.h>

static inline size_t parse_size(const char *s)
{
  char *end;
  double v = strtod(s, &end);
  switch (*end) {
  case 'K': case 'k': v *= 1024; break;
  case 'M': case 'm': v *= 1024.0 * 1024; break;
  case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
  default: break;
  }
  return v > 0 ? (size_t)v : 0;
}

#endif
