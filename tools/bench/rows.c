/*
 * Which rows an allreduce sweep runs: the algorithms of --algo (or every
 * one this comm can run) and the baselines, on host or device buffers.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tools/bench/sweep.h"
#include "tools/measure.h"

/* The rows of an allreduce run: --algo's names in order, or for "all" auto,
 * every algorithm this comm can run (meas_algos), and MPI_Allreduce.
 * Returns the count, or -1 (with a message) for a named algorithm that
 * cannot run on this comm. */
int sweep_rows_allreduce(sweep_t *s)
{
  const char *list = s->o->algo_list;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list != NULL ? list : "all");
  for (char *save, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    rondo_algo_t a[RONDO_ALGO_COUNT];
    int na = 0, with_mpi = 0;
    if (strcmp(tok, "all") == 0) {
      a[na++] = RONDO_ALGO_AUTO;
      na += meas_algos(s->comm, "rondo-bench", NULL, 0, a + na);
      with_mpi = 1;
    } else if (strcasecmp(tok, "MPI_Allreduce") == 0) {
      with_mpi = 1;
    } else if ((na = meas_algos(s->comm, "rondo-bench", tok, 1, a)) < 0) {
      return -1; /* cannot run on this comm: meas_algos said why */
    }
    for (int i = 0; i < na + with_mpi && s->nv < MAX_VARIANTS; i++) {
      variant_t v = {{0}, RONDO_ALGO_AUTO, i == na, i == na ? V_MPI : V_RONDO};
      snprintf(v.label, sizeof v.label, "%s", i == na ? "MPI_Allreduce" : rondo_algo_name(a[i]));
      int dup = 0;
      for (int k = 0; k < s->nv; k++)
        dup |= strcmp(s->v[k].label, v.label) == 0;
      if (!dup) {
        v.algo = i < na ? a[i] : RONDO_ALGO_AUTO;
        s->v[s->nv++] = v;
      }
    }
  }
  return s->nv;
}

/* Whether --algo's list (NULL: all) names label. */
static int listed(const char *list, const char *label)
{
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list != NULL ? list : "all");
  for (char *save, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save))
    if (strcmp(tok, "all") == 0 || strcmp(tok, label) == 0)
      return 1;
  return 0;
}

/* The rows of an allreduce on device buffers: auto, nccl and staged where
 * they run (a trial call, on every rank alike), then the baselines:
 * ncclAllReduce where NCCL runs, host+copies always. why: a line for the
 * header. Returns the count, or -1 for a named row that cannot run. */
int sweep_rows_device(sweep_t *s, char *why, size_t len)
{
  static const rondo_algo_t algos[] = {RONDO_ALGO_AUTO, RONDO_ALGO_NCCL, RONDO_ALGO_STAGED,
                                       RONDO_ALGO_HIERARCHICAL_NCCL};
  const char *list = s->o->algo_list;
  char nccl_why[128] = "", skipped[256] = "";
  for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
    const char *name = rondo_algo_name(algos[i]);
    if (!listed(list, name))
      continue;
    float one = 1.0f;
    bdev_copy(s->dsend, &one, sizeof one);
    rondo_status_t st = rondo_allreduce_algo(s->comm, s->dsend, s->drecv, 1, RONDO_FLOAT32,
                                             RONDO_SUM, algos[i]);
    if (st != RONDO_SUCCESS) {
      if (list != NULL && strstr(list, name) != NULL) {
        if (s->rank == 0)
          fprintf(stderr, "rondo-bench: -a %s: %s\n", name, rondo_last_error());
        return -1;
      }
      snprintf(skipped + strlen(skipped), sizeof skipped - strlen(skipped), "%s%s (%s)",
               skipped[0] ? "; " : "", name, rondo_last_error());
      continue;
    }
    variant_t v = {{0}, algos[i], 0, V_RONDO};
    snprintf(v.label, sizeof v.label, "%s", name);
    s->v[s->nv++] = v;
  }
  int have_nccl = 0;
  if (listed(list, "ncclAllReduce")) {
    have_nccl = bdev_nccl_start(s->mpi, nccl_why, sizeof nccl_why) == 0;
    if (have_nccl)
      s->v[s->nv++] = (variant_t){"ncclAllReduce", RONDO_ALGO_AUTO, 1, V_NCCL};
    else if (list != NULL && strstr(list, "ncclAllReduce") != NULL) {
      if (s->rank == 0)
        fprintf(stderr, "rondo-bench: -a ncclAllReduce: %s\n", nccl_why);
      return -1;
    }
  }
  if (listed(list, "host+copies"))
    s->v[s->nv++] = (variant_t){"host+copies", RONDO_ALGO_AUTO, !have_nccl, V_HOST_COPIES};
  snprintf(why, len, "%s%s%s%s", have_nccl ? "" : "no ncclAllReduce row: ",
           have_nccl ? "" : nccl_why[0] ? nccl_why : "not asked for",
           skipped[0] ? "; not run: " : "", skipped);
  return s->nv;
}
