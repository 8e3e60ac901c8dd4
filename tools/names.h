/*
 * Comma lists of names on a tool's command line (rondo-bench's -a and
 * --collective, rondo-info's --collective), read alike by every tool.
 */
#ifndef RONDO_TOOLS_NAMES_H
#define RONDO_TOOLS_NAMES_H

#include <stdio.h>
#include <string.h>

#include "rondo.h"

/* Whether list has an empty name (empty, a leading or trailing comma, two
 * in a row): then 1, with "an empty name" in badtok. */
static inline int tool_empty_name(const char *list, char *badtok, size_t len)
{
  size_t n = strlen(list);
  if (n > 0 && list[0] != ',' && list[n - 1] != ',' && strstr(list, ",,") == NULL)
    return 0;
  snprintf(badtok, len, "an empty name");
  return 1;
}

/* "all" or a comma list of the collectives with a family (allreduce,
 * reduce_scatter, allgather), as bits 1 << rondo_coll_t; 0 naming the bad
 * token in badtok. */
static inline unsigned tool_parse_colls(const char *arg, char *badtok, size_t len)
{
  char buf[256];
  unsigned bits = 0;
  if (tool_empty_name(arg, badtok, len))
    return 0;
  snprintf(buf, sizeof buf, "%s", arg);
  for (char *save, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    unsigned bit = strcmp(tok, "all") == 0 ? (1u << RONDO_COLL_COUNT) - 1 : 0;
    for (int c = 0; c < RONDO_COLL_COUNT; c++)
      if (strcmp(tok, rondo_coll_name((rondo_coll_t)c)) == 0)
        bit = 1u << c;
    if (bit == 0) {
      snprintf(badtok, len, "'%s'", tok);
      return 0;
    }
    bits |= bit;
  }
  if (bits == 0)
    snprintf(badtok, len, "no name");
  return bits;
}

#endif /* RONDO_TOOLS_NAMES_H */
