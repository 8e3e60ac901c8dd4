/*
 * Logging: one line per call on stderr, prefixed with the rank and the level,
 * written with a single fprintf so lines from threads do not interleave.
 * Callers go through the LOG_* macros, which test the level first.
 */
#include "base/base.h"

#include <stdio.h>

int rondo__log_level = RONDO_LOG_WARN;
static int log_rank = -1;

static const char *const level_names[] = {"", "ERROR", "WARN", "INFO", "DEBUG"};

void rondo__log_set_rank(int rank) { log_rank = rank; }
int rondo__log_rank(void) { return log_rank; }

void rondo__log_write(int level, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (log_rank >= 0)
    fprintf(stderr, "[rondo %d] %s %s\n", log_rank, level_names[level], msg);
  else
    fprintf(stderr, "[rondo ?] %s %s\n", level_names[level], msg);
}
