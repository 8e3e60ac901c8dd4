/*
 * Logging: one line per call on stderr, prefixed with the rank and the level,
 * written with a single fprintf so lines from threads do not interleave.
 * Callers go through the LOG_* macros, which test the level, then the
 * subsystem (base.h), before they evaluate any argument. While
 * RONDO_LOG_SUBSYS picks subsystems, each line also names its own
 * ("[rondo 1] INFO engine: ..."); without it, lines are as they always were.
 */
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

int rondo__log_level = RONDO_LOG_WARN;
unsigned rondo__log_subsys = RONDO__SUBSYS_ALL;
static int log_rank = -1;

static const char *const level_names[] = {"", "ERROR", "WARN", "INFO", "DEBUG"};

/* The folders of lib/, and librondo-mpi's: rondo__subsys_t's order. */
static const char *const subsys_names[RONDO__SUBSYS_COUNT] = {
    "base", "reduce", "topo", "launch", "select", "device",
    "algo", "comm",   "engine", "api",  "interpose"};

void rondo__log_set_rank(int rank) { log_rank = rank; }
int rondo__log_rank(void) { return log_rank; }

const char *rondo__log_subsys_name(int subsys)
{
  return subsys >= 0 && subsys < RONDO__SUBSYS_COUNT ? subsys_names[subsys] : NULL;
}

/* The index of the name of n bytes at text, or -1. */
static int subsys_index(const char *text, size_t n)
{
  for (int s = 0; s < RONDO__SUBSYS_COUNT; s++)
    if (strlen(subsys_names[s]) == n && strncasecmp(text, subsys_names[s], n) == 0)
      return s;
  return -1;
}

int rondo__log_subsys_of(const char *file)
{
  const char *slash = strrchr(file, '/');
  if (slash == NULL)
    return RONDO__SUBSYS_OTHER;
  const char *folder = slash;
  while (folder > file && folder[-1] != '/')
    folder--;
  int s = subsys_index(folder, (size_t)(slash - folder));
  return s >= 0 ? s : RONDO__SUBSYS_OTHER;
}

int rondo__log_subsys_parse(const char *text, unsigned *mask, char *why, size_t len)
{
  int exclude = text[0] == '^';
  const char *p = text + exclude;
  if (!exclude && strcasecmp(p, "all") == 0) {
    *mask = RONDO__SUBSYS_ALL;
    return 0;
  }
  unsigned named = 0;
  for (;;) {
    size_t n = strcspn(p, ",");
    int s = subsys_index(p, n);
    if (s < 0) {
      char list[160] = "";
      for (int i = 0; i < RONDO__SUBSYS_COUNT; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", subsys_names[i]);
      }
      snprintf(why, len,
               "is not valid: expected all, or names (\"^\" first: all but those) among %s",
               list);
      return -1;
    }
    named |= 1u << s;
    if (p[n] == '\0')
      break;
    p += n + 1;
  }
  unsigned other = 1u << RONDO__SUBSYS_OTHER;
  *mask = exclude ? RONDO__SUBSYS_ALL & ~named : named | other;
  return 0;
}

void rondo__log_set_subsys(unsigned mask)
{
  __atomic_store_n(&rondo__log_subsys, mask | 1u << RONDO__SUBSYS_OTHER, __ATOMIC_RELAXED);
}

void rondo__log_write(int level, int subsys, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char who[16] = "?";
  if (log_rank >= 0)
    snprintf(who, sizeof who, "%d", log_rank);
  const char *name = rondo__log_subsys_name(subsys);
  if (name != NULL && __atomic_load_n(&rondo__log_subsys, __ATOMIC_RELAXED) != RONDO__SUBSYS_ALL)
    fprintf(stderr, "[rondo %s] %s %s: %s\n", who, level_names[level], name, msg);
  else
    fprintf(stderr, "[rondo %s] %s %s\n", who, level_names[level], msg);
}
