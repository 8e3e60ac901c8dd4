/*
 * Which rows a sweep runs: for allreduce, reduce_scatter and allgather the
 * algorithms of --algo (or every one of the family this comm can run) and
 * MPI's own call; for allreduce on device buffers its rows and baselines.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tools/bench/sweep.h"

/* The count "can it run here" asks about (of uint8, so that it is the
 * bytes too): the sweep's largest size, per rank for reduce_scatter and
 * allgather (the calls' count), which no dtype's case goes beyond. A
 * fixed 2^20 a rank refused allgather's mpi from 512 ranks (4 GiB of
 * float32 at 1024, above MPI's int counts) whatever the sizes asked for. */
static size_t probe_count(const sweep_t *s)
{
  size_t n = s->o->maxbytes / (s->coll == RONDO_COLL_ALLREDUCE ? 1 : (size_t)s->size);
  return n > 0 ? n : 1;
}

/* Whether algo can run on this comm (0), with why NULL when the selector
 * would consider it, else why not (*why: the library's reason). */
static rondo_status_t can_run(const sweep_t *s, rondo_algo_t algo, const char **why)
{
  *why = NULL;
  return rondo_coll_algo_available(s->comm, s->coll, algo, probe_count(s), RONDO_UINT8,
                                   RONDO_SUM, why);
}

/* Appends text to the string in buf[len], as much as fits. */
static void append(char *buf, size_t len, const char *text)
{
  size_t at = strlen(buf);
  snprintf(buf + at, len - at, "%s", text);
}

/* The family's algorithms for "all": every one that runs on this comm and
 * that the selector would consider, into a[]; the count. The others go
 * into note, grouped by the library's reason, so the header says what was
 * left out and why ("nccl, staged (needs device memory)"). An algorithm
 * the library calls invalid for this collective is not its member: no
 * note. */
static int family_all(const sweep_t *s, rondo_algo_t *a, char *note, size_t len)
{
  const char *why[RONDO_ALGO_COUNT] = {NULL};
  int n = 0;
  for (int id = RONDO_ALGO_AUTO + 1; id < RONDO_ALGO_COUNT; id++) {
    rondo_status_t st = can_run(s, (rondo_algo_t)id, &why[id]);
    if (st == RONDO_SUCCESS && why[id] == NULL)
      a[n++] = (rondo_algo_t)id;
    else if (st != RONDO_SUCCESS && st != RONDO_ERR_UNSUPPORTED)
      why[id] = NULL; /* not the family's */
    else if (why[id] == NULL)
      why[id] = "no reason given";
  }
  /* Each reason once, after the names that share it. */
  for (int id = 1; id < RONDO_ALGO_COUNT; id++) {
    int first = why[id] != NULL;
    for (int k = 1; k < id && first; k++)
      first = why[k] == NULL || strcmp(why[k], why[id]) != 0;
    if (!first)
      continue;
    append(note, len, note[0] ? "; " : "");
    for (int k = id; k < RONDO_ALGO_COUNT; k++)
      if (why[k] != NULL && strcmp(why[k], why[id]) == 0) {
        append(note, len, k == id ? "" : ", ");
        append(note, len, rondo_algo_name((rondo_algo_t)k));
      }
    append(note, len, " (");
    append(note, len, why[id]);
    append(note, len, ")");
  }
  return n;
}

/* One named algorithm into a[0]: 1, or -1 (with the library's message)
 * when it cannot run on this comm or is not of this collective. */
static int family_named(const sweep_t *s, const char *name, rondo_algo_t *a)
{
  const char *why;
  if (rondo_algo_from_name(name, a) != RONDO_SUCCESS)
    return -1; /* options.c let only names through */
  if (*a == RONDO_ALGO_AUTO || can_run(s, *a, &why) == RONDO_SUCCESS)
    return 1;
  if (s->rank == 0)
    fprintf(stderr, "rondo-bench: -a %s: %s\n", name, rondo_last_error());
  return -1;
}

/* The rows of an allreduce, reduce_scatter or allgather run on host
 * buffers: --algo's names in order, or for "all" auto, every algorithm of
 * the family this comm can run, MPI's own call (the baseline) and, for
 * reduce_scatter and allgather, the memory floor. note:
 * for "all", the family's algorithms left out and why. Returns the count,
 * or -1 (with a message) for a named algorithm that cannot run here. */
int sweep_rows_family(sweep_t *s, char *note, size_t len)
{
  const char *list = s->o->algo_list, *mpi = bench_mpi_name(s->o->cmd);
  char buf[256];
  note[0] = '\0';
  snprintf(buf, sizeof buf, "%s", list != NULL ? list : "all");
  for (char *save, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    rondo_algo_t a[RONDO_ALGO_COUNT];
    int na = 0, with_mpi = 0, with_floor = 0;
    if (strcmp(tok, "all") == 0) {
      a[na++] = RONDO_ALGO_AUTO;
      na += family_all(s, a + na, note, len);
      with_mpi = 1;
      with_floor = s->o->cmd != CMD_ALLREDUCE;
    } else if (strcmp(tok, BENCH_FLOOR_ROW) == 0) {
      with_floor = 1; /* options.c let it through for reduce_scatter and allgather only */
    } else if (strcasecmp(tok, mpi) == 0) {
      with_mpi = 1;
    } else if ((na = family_named(s, tok, a)) < 0) {
      return -1;
    }
    for (int i = 0; i < na + with_mpi && s->nv < MAX_VARIANTS; i++) {
      variant_t v = {{0}, RONDO_ALGO_AUTO, i == na, i == na ? V_MPI : V_RONDO};
      snprintf(v.label, sizeof v.label, "%s", i == na ? mpi : rondo_algo_name(a[i]));
      int dup = 0;
      for (int k = 0; k < s->nv; k++)
        dup |= strcmp(s->v[k].label, v.label) == 0;
      if (!dup) {
        v.algo = i < na ? a[i] : RONDO_ALGO_AUTO;
        s->v[s->nv++] = v;
      }
    }
    int dup = 0;
    for (int k = 0; k < s->nv; k++)
      dup |= s->v[k].kind == V_FLOOR;
    if (with_floor && !dup && s->nv < MAX_VARIANTS)
      s->v[s->nv++] = (variant_t){BENCH_FLOOR_ROW, RONDO_ALGO_AUTO, 0, V_FLOOR};
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

/* NCCL's call of cmd, the device baseline's row name. */
static const char *nccl_name(bench_cmd_t cmd)
{
  return cmd == CMD_REDUCE_SCATTER ? "ncclReduceScatter"
         : cmd == CMD_ALLGATHER    ? "ncclAllGather"
                                   : "ncclAllReduce";
}

/* A trial of cmd by algo on device buffers: one float32 a rank (the
 * buffers hold -e bytes and 64 more; a reduce-scatter's input is the
 * comm's size of them, tried where it fits). */
static rondo_status_t trial(sweep_t *s, rondo_algo_t algo)
{
  float one[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  bdev_copy(s->dsend, one, sizeof one);
  switch (s->o->cmd) {
  case CMD_REDUCE_SCATTER:
    if ((size_t)s->size * sizeof one[0] > s->o->maxbytes + 64)
      return RONDO_SUCCESS; /* the sweep's own first call will say */
    return rondo_reduce_scatter_algo(s->comm, s->dsend, s->drecv, 1, RONDO_FLOAT32, RONDO_SUM,
                                     algo);
  case CMD_ALLGATHER:
    return rondo_allgather_algo(s->comm, s->dsend, s->drecv, 1, RONDO_FLOAT32, algo);
  default:
    return rondo_allreduce_algo(s->comm, s->dsend, s->drecv, 1, RONDO_FLOAT32, RONDO_SUM, algo);
  }
}

/* The rows of an allreduce, reduce_scatter or allgather on device
 * buffers: auto, nccl and staged (and hierarchical_nccl for allreduce)
 * where they run (a trial call, on every rank alike), then the baselines:
 * NCCL's own call where NCCL runs, host+copies always. why: a line for the
 * header. Returns the count, or -1 for a named row that cannot run. */
int sweep_rows_device(sweep_t *s, char *why, size_t len)
{
  static const rondo_algo_t algos[] = {RONDO_ALGO_AUTO, RONDO_ALGO_NCCL, RONDO_ALGO_STAGED,
                                       RONDO_ALGO_HIERARCHICAL_NCCL};
  size_t nalgos = s->o->cmd == CMD_ALLREDUCE ? 4 : 3;
  const char *list = s->o->algo_list, *base = nccl_name(s->o->cmd);
  char nccl_why[128] = "", skipped[256] = "";
  for (size_t i = 0; i < nalgos; i++) {
    const char *name = rondo_algo_name(algos[i]);
    if (!listed(list, name))
      continue;
    rondo_status_t st = trial(s, algos[i]);
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
  if (listed(list, base)) {
    have_nccl = bdev_nccl_start(s->mpi, nccl_why, sizeof nccl_why) == 0;
    if (have_nccl) {
      variant_t v = {{0}, RONDO_ALGO_AUTO, 1, V_NCCL};
      snprintf(v.label, sizeof v.label, "%s", base);
      s->v[s->nv++] = v;
    } else if (list != NULL && strstr(list, base) != NULL) {
      if (s->rank == 0)
        fprintf(stderr, "rondo-bench: -a %s: %s\n", base, nccl_why);
      return -1;
    }
  }
  if (listed(list, "host+copies"))
    s->v[s->nv++] = (variant_t){"host+copies", RONDO_ALGO_AUTO, !have_nccl, V_HOST_COPIES};
  snprintf(why, len, "%s%s%s%s%s%s", have_nccl ? "" : "no ", have_nccl ? "" : base,
           have_nccl ? "" : " row: ",
           have_nccl ? "" : nccl_why[0] ? nccl_why : "not asked for",
           skipped[0] ? "; not run: " : "", skipped);
  return s->nv;
}
