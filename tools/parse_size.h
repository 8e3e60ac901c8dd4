/* Byte counts on the command lines of rondo-info and the benchmarks:
 * "4096", "64K", "1.5M", "1G" (powers of 1024; "KiB", "MB" and a trailing
 * "B" are accepted too). Returns 0 for text that is not such a number. */
#ifndef RONDO_TOOLS_PARSE_SIZE_H
#define RONDO_TOOLS_PARSE_SIZE_H

#include <stdlib.h>
#include <string.h>

static inline size_t parse_size(const char *s)
{
  char *end;
  double v = strtod(s, &end);
  if (end == s)
    return 0;
  switch (*end) {
  case 'K': case 'k': v *= 1024; end++; break;
  case 'M': case 'm': v *= 1024.0 * 1024; end++; break;
  case 'G': case 'g': v *= 1024.0 * 1024 * 1024; end++; break;
  default: break;
  }
  if (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0 || strcmp(end, "b") == 0)
    end += strlen(end);
  if (*end != '\0' || !(v >= 1) || v > 1e18)
    return 0;
  return (size_t)v;
}

#endif
