/*
 * rondo-bench explain: for each collective of --collective (all-reduce
 * unless asked), each size of the sweep and each dtype and op, the
 * algorithm the family's selector would choose on these ranks and why (the
 * tuning file's rule, a forced algorithm, or the cost model's prediction),
 * one line per size; with -v the whole explanation (every candidate with
 * its predicted time or why it is not eligible). Local: nothing is sent.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"
#include "tools/measure.h"

/* The "choice: NAME (why)" line of an explanation, into name and why. */
static void choice_line(const char *text, char *name, size_t nlen, char *why, size_t wlen)
{
  const char *c = strstr(text, "choice: ");
  snprintf(name, nlen, "?");
  why[0] = '\0';
  if (c == NULL)
    return;
  c += strlen("choice: ");
  size_t k = strcspn(c, " \n");
  snprintf(name, nlen, "%.*s", (int)k, c);
  const char *w = c + k;
  while (*w == ' ' || *w == '(')
    w++;
  size_t e = strcspn(w, "\n");
  while (e > 0 && w[e - 1] == ')')
    e--;
  snprintf(why, wlen, "%.*s", (int)e, w);
}

/* The sweep's sizes for one collective. Sizes are rondo-bench's: the whole
 * buffer (ranks x block for reduce_scatter and allgather), rounded down to
 * whole elements and blocks; a size that rounds to nothing or to the
 * previous one is left out. Returns 0, or 1 when the library refused. */
static int explain_coll(const bench_opts_t *o, rondo_comm_t comm, rondo_coll_t coll)
{
  static char text[16384];
  size_t sizes[BENCH_MAX_SIZES];
  int n = bench_sizes(o, sizes), blocks = coll == RONDO_COLL_ALLREDUCE ? 1 : meas_size(comm);
  int nops = coll == RONDO_COLL_ALLGATHER ? 1 : o->nops; /* all-gather has no op */
  printf("# %s: what rondo_%s() chooses%s\n", rondo_coll_name(coll), rondo_coll_name(coll),
         blocks > 1 ? "; size: the whole buffer, ranks x block" : "");
  if (!o->verbose)
    printf("# %12s %9s %6s  %-18s %s\n", "size (B)", "type", "redop", "choice", "why");
  for (int d = 0; d < o->ndtypes; d++)
    for (int p = 0; p < nops; p++) {
      rondo_dtype_t dt = o->dtypes[d];
      rondo_op_t op = o->ops[p];
      size_t esize = rondo_dtype_size(dt), last = 0;
      for (int z = 0; z < n; z++) {
        size_t count = sizes[z] / (esize * (size_t)blocks), bytes = count * esize * blocks;
        if (count == 0 || bytes == last)
          continue;
        last = bytes;
        if (rondo_coll_explain(comm, coll, count, dt, op, text, sizeof text, NULL) !=
            RONDO_SUCCESS) {
          fprintf(stderr, "rondo-bench: explain %s: %s\n", rondo_coll_name(coll),
                  rondo_last_error());
          return 1;
        }
        if (o->verbose) {
          printf("%s\n", text);
          continue;
        }
        char name[64], why[256];
        choice_line(text, name, sizeof name, why, sizeof why);
        printf("  %12zu %9s %6s  %-18s %s\n", bytes, rondo_dtype_name(dt),
               coll == RONDO_COLL_ALLGATHER ? "-" : rondo_op_name(op), name, why);
      }
    }
  return 0;
}

int explain_main(const bench_opts_t *o)
{
  rondo_comm_t comm = rondo_world();
  if (meas_rank(comm) != 0)
    return 0;
  char topo[1024];
  rondo_comm_topology(comm, topo, sizeof topo, NULL);
  printf("# rondo-bench %s: explain, what the selector chooses on these ranks\n",
         rondo_version_string());
  printf("# topology: %s\n", topo);
  int rc = 0;
  for (int c = 0; c < RONDO_COLL_COUNT && rc == 0; c++)
    if (o->colls & (1u << c))
      rc = explain_coll(o, comm, (rondo_coll_t)c);
  fflush(stdout);
  return rc;
}
