/*
 * rondo-info: what this build of rondo is and what it would do here.
 *
 *   rondo-info                     build, topology, knobs, selection table
 *   rondo-info --explain BYTES [--collective C]
 *                                  why AUTO picks what it picks for BYTES
 *   mpiexec -n 4 rondo-info        the same, for a 4-rank comm
 *
 * Runs on one rank (singleton) or under mpiexec; rank 0 prints. BYTES takes
 * K/M/G suffixes and is the whole buffer (a reduce-scatter's input, an
 * all-gather's output); C is allreduce (the default), reduce_scatter,
 * allgather, a comma list of them, or all. The selection table lists, for float32 sum at sizes
 * 4 B to 64 MiB, what each collective would run, and why for all-reduce.
 */
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/numbers.h"
#include "rondo.h"
#include "tools/launch_env.h"
#include "tools/names.h"

static void print_build(void)
{
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len, mpi_major, mpi_minor;
  unsigned hw = hwloc_get_api_version();
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, "\n")] = '\0';
  MPI_Get_version(&mpi_major, &mpi_minor);
  printf("rondo %s\n", rondo_version_string());
  printf("  MPI      MPI-%d.%d, %s\n", mpi_major, mpi_minor, lib);
  printf("  hwloc    %u.%u.%u\n", hw >> 16, (hw >> 8) & 0xff, hw & 0xff);
  printf("  CUDA     %s\n", rondo_cuda_built() ? "found at configure time" : "no");
  printf("  NCCL     %s\n", rondo_nccl_built() ? "found at configure time" : "no");
}

/* Every algorithm of the library's table, and whether it can run a float32
 * sum of bytes / 4 elements on this comm. */
static int comm_size(rondo_comm_t comm)
{
  int size = 1;
  rondo_comm_size(comm, &size);
  return size;
}

/* A call's count argument for a float32 buffer of bytes (the whole
 * buffer): all-reduce's elements, or one rank's block. */
static size_t count_of(rondo_comm_t comm, rondo_coll_t coll, size_t bytes)
{
  return coll == RONDO_COLL_ALLREDUCE ? bytes / 4 : bytes / 4 / (size_t)comm_size(comm);
}

/* Every collective's family, each member with whether it can run a float32
 * sum of bytes (the whole buffer, for reduce-scatter and all-gather). */
static void print_algorithms(rondo_comm_t comm, size_t bytes)
{
  for (int c = 0; c < RONDO_COLL_COUNT; c++) {
    rondo_coll_t coll = (rondo_coll_t)c;
    size_t count = count_of(comm, coll, bytes);
    printf("\n%s algorithms (float32 sum of %zu bytes on this comm)\n", rondo_coll_name(coll),
           bytes);
    for (int a = RONDO_ALGO_AUTO + 1; a < RONDO_ALGO_COUNT; a++) {
      const char *why = NULL;
      rondo_status_t st = rondo_coll_algo_available(comm, coll, (rondo_algo_t)a, count,
                                                    RONDO_FLOAT32, RONDO_SUM, &why);
      if (st == RONDO_ERR_UNSUPPORTED && why != NULL && strstr(why, "it is not a") == why)
        continue; /* another family's member */
      printf("  %-20s ", rondo_algo_name((rondo_algo_t)a));
      if (st != RONDO_SUCCESS)
        printf("unavailable: %s\n", why ? why : rondo_status_name(st));
      else if (why != NULL)
        printf("available (auto passes it over: %s)\n", why);
      else
        printf("available\n");
    }
  }
}

static void print_knobs(void)
{
  printf("\nknobs (environment; see docs/knobs.md)\n");
  printf("  %-24s %-8s %-10s %-16s %s\n", "name", "type", "default", "current", "meaning");
  for (int i = 0; i < rondo_knob_count(); i++) {
    rondo_knob_info_t k;
    if (rondo_knob_get(i, &k) != RONDO_SUCCESS)
      continue;
    printf("  %-24s %-8s %-10s %-16s %s\n", k.name, k.type,
           k.default_value[0] ? k.default_value : "\"\"", k.current[0] ? k.current : "\"\"",
           k.doc);
  }
}

/* What AUTO would run for coll, or "-" (the size does not split into
 * blocks, or the question failed). */
static const char *choice_name(rondo_comm_t comm, rondo_coll_t coll, size_t bytes)
{
  rondo_algo_t algo;
  size_t count = count_of(comm, coll, bytes);
  if (count == 0 ||
      rondo_coll_choice(comm, coll, count, RONDO_FLOAT32, RONDO_SUM, &algo) != RONDO_SUCCESS)
    return "-";
  return rondo_algo_name(algo);
}

static void print_selection(rondo_comm_t comm)
{
  printf("\nselection for float32 sum (rondo-info --explain BYTES [--collective C] for the "
         "candidates)\n");
  printf("  %12s  %-20s %-20s %-20s %s\n", "bytes", "allreduce", "reduce_scatter", "allgather",
         "because (allreduce)");
  char buf[4096];
  for (size_t bytes = 4; bytes <= (64u << 20); bytes *= 4) {
    rondo_algo_t algo;
    if (rondo_allreduce_choice(comm, bytes / 4, RONDO_FLOAT32, RONDO_SUM, &algo) !=
        RONDO_SUCCESS) {
      printf("  %12zu  %s\n", bytes, rondo_last_error());
      continue;
    }
    const char *why = "";
    if (rondo_explain(comm, bytes / 4, RONDO_FLOAT32, RONDO_SUM, buf, sizeof buf, NULL) ==
        RONDO_SUCCESS) {
      char *line = strstr(buf, "choice: ");
      char *paren = line ? strchr(line, '(') : NULL;
      if (paren != NULL) {
        paren[strcspn(paren, "\n")] = '\0';
        why = paren;
      }
    }
    printf("  %12zu  %-20s %-20s %-20s %s\n", bytes, rondo_algo_name(algo),
           choice_name(comm, RONDO_COLL_REDUCE_SCATTER, bytes),
           choice_name(comm, RONDO_COLL_ALLGATHER, bytes), why);
  }
}

/* coll's explanation for a float32 sum of bytes (the whole buffer),
 * printed by rank 0 (the call is local: only rank 0 makes it). 0, or 1
 * after a message. */
static int print_explain(rondo_comm_t comm, rondo_coll_t coll, size_t bytes)
{
  size_t need = 0, count = count_of(comm, coll, bytes);
  if (rondo_coll_explain(comm, coll, count, RONDO_FLOAT32, RONDO_SUM, NULL, 0, &need) !=
      RONDO_SUCCESS) {
    fprintf(stderr, "rondo-info: %s\n", rondo_last_error());
    return 1;
  }
  char *text = malloc(need);
  if (text == NULL) {
    fprintf(stderr, "rondo-info: out of memory for %zu bytes of explanation\n", need);
    return 1;
  }
  int rc = 0;
  if (rondo_coll_explain(comm, coll, count, RONDO_FLOAT32, RONDO_SUM, text, need, NULL) ==
      RONDO_SUCCESS)
    printf("%s", text);
  else {
    fprintf(stderr, "rondo-info: %s\n", rondo_last_error());
    rc = 1;
  }
  free(text);
  return rc;
}

#define USAGE "usage: rondo-info [--explain BYTES [--collective C[,C..]]]\n"

/* Reads the command line: 0, or 2 after a message (when print is set).
 * *colls: the collectives to explain, as bits 1 << rondo_coll_t. */
static int parse(int argc, char **argv, const char **explain, size_t *bytes, unsigned *colls,
                 int print)
{
  const char *named = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--explain") == 0 && i + 1 < argc) {
      *explain = argv[++i];
    } else if (strcmp(argv[i], "--collective") == 0 && i + 1 < argc) {
      named = argv[++i];
    } else {
      if (print)
        fprintf(stderr, "rondo-info: unexpected argument '%s'\n" USAGE, argv[i]);
      return 2;
    }
  }
  if (named != NULL) {
    char bad[64];
    if ((*colls = tool_parse_colls(named, bad, sizeof bad)) == 0) {
      if (print)
        fprintf(stderr, "rondo-info: --collective: %s is not allreduce, reduce_scatter, "
                        "allgather or all\n", bad);
      return 2;
    }
    if (*explain == NULL) {
      if (print)
        fprintf(stderr, "rondo-info: --collective %s goes with --explain BYTES\n", named);
      return 2;
    }
  }
  if (*explain != NULL && rondo__parse_size(*explain, bytes) != 0) {
    if (print)
      fprintf(stderr, "rondo-info: --explain: '%s' is not a byte count such as 4096, 64K or 16M\n",
              *explain);
    return 2;
  }
  return 0;
}

int main(int argc, char **argv)
{
  const char *explain = NULL;
  size_t bytes = 0;
  unsigned colls = 1u << RONDO_COLL_ALLREDUCE;
  /* Read quietly: only the lowest rank that failed prints why (below). */
  int rc = parse(argc, argv, &explain, &bytes, &colls, 0), print;
  if (tool_init("rondo-info", &argc, &argv) != 0)
    return 1;
  if ((rc = tool_agree("rondo-info", rc, 0, &print)) != 0) {
    if (print)
      parse(argc, argv, &explain, &bytes, &colls, 1);
    rondo_finalize();
    return rc;
  }
  rondo_comm_t comm = rondo_world();
  int rank = 0;
  char buf[4096];
  rondo_comm_rank(comm, &rank);
  /* Everything below is local: rank 0 alone prints. */
  if (rank == 0 && explain != NULL) {
    for (int c = 0, shown = 0; c < RONDO_COLL_COUNT && rc == 0; c++) {
      if (!(colls & (1u << c)))
        continue;
      if (shown++ > 0)
        printf("\n");
      rc = print_explain(comm, (rondo_coll_t)c, bytes);
    }
  } else if (rank == 0) {
    print_build();
    printf("\nlauncher (rank 0)\n  %s\n", rondo_launcher());
    if (rondo_comm_topology(comm, buf, sizeof buf, NULL) == RONDO_SUCCESS)
      printf("\ntopology (rank 0)\n  %s\n", buf);
    print_algorithms(comm, 4096);
    print_knobs();
    print_selection(comm);
  }
  fflush(stdout);
  rondo_finalize();
  return rc;
}
