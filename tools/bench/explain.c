/*
 * rondo-bench explain: for each size of the sweep and each dtype and op,
 * the algorithm rondo_allreduce() would choose on these ranks and why (the
 * tuning file's rule, a forced algorithm, or the cost model's prediction),
 * one line per size; with -v the whole explanation (every candidate with
 * its predicted time or why it is not eligible). Local: nothing is sent.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"
#include "tools/measure.h"

int explain_main(const bench_opts_t *o)
{
  rondo_comm_t comm = rondo_world();
  if (meas_rank(comm) != 0)
    return 0;
  char topo[1024];
  rondo_comm_topology(comm, topo, sizeof topo, NULL);
  printf("# rondo-bench %s: explain, what rondo_allreduce() chooses on these ranks\n",
         rondo_version_string());
  printf("# topology: %s\n", topo);
  if (!o->verbose)
    printf("# %12s %9s %6s  %-18s %s\n", "size (B)", "type", "redop", "choice", "why");
  size_t sizes[BENCH_MAX_SIZES];
  int n = bench_sizes(o, sizes);
  static char text[16384];
  for (int d = 0; d < o->ndtypes; d++)
    for (int p = 0; p < o->nops; p++)
      for (int z = 0; z < n; z++) {
        rondo_dtype_t dt = o->dtypes[d];
        rondo_op_t op = o->ops[p];
        size_t count = sizes[z] / rondo_dtype_size(dt);
        if (rondo_explain(comm, count, dt, op, text, sizeof text, NULL) != RONDO_SUCCESS) {
          fprintf(stderr, "rondo-bench: explain: %s\n", rondo_last_error());
          return 1;
        }
        if (o->verbose) {
          printf("%s%s", z + d + p ? "\n" : "", text);
          continue;
        }
        /* The "choice: NAME (why)" line of the explanation. */
        const char *c = strstr(text, "choice: ");
        char name[64] = "?", why[256] = "";
        if (c != NULL) {
          c += strlen("choice: ");
          size_t k = strcspn(c, " \n");
          snprintf(name, sizeof name, "%.*s", (int)k, c);
          const char *w = c + k;
          while (*w == ' ' || *w == '(')
            w++;
          size_t e = strcspn(w, "\n");
          while (e > 0 && w[e - 1] == ')')
            e--;
          snprintf(why, sizeof why, "%.*s", (int)e, w);
        }
        printf("  %12zu %9s %6s  %-18s %s\n", count * rondo_dtype_size(dt),
               rondo_dtype_name(dt), rondo_op_name(op), name, why);
      }
  fflush(stdout);
  return 0;
}
