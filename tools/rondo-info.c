/*
 * rondo-info: what this build of rondo is and what it would do here.
 *
 *   rondo-info                     build, topology, knobs, selection table
 *   rondo-info --explain BYTES     why AUTO picks what it picks for BYTES
 *   mpiexec -n 4 rondo-info        the same, for a 4-rank comm
 *
 * Runs on one rank (singleton) or under mpiexec; rank 0 prints. BYTES takes
 * K/M/G suffixes. The selection table lists, for float32 sum at sizes 4 B to
 * 64 MiB, the algorithm rondo_allreduce() would run and why.
 */
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rondo.h"
#include "tools/parse_size.h"

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
  printf("  algorithms:");
  for (int a = RONDO_ALGO_MPI; a < RONDO_ALGO_NCCL; a++) {
    if (a == RONDO_ALGO_SHM && rondo_comm_node_count(rondo_world()) > 1) {
      printf(" shm (unavailable: the comm spans nodes)");
      continue;
    }
    /* Ask the library whether it can run each one on a single element
     * (shm is unavailable on a comm that spans nodes). */
    float x = 1, y;
    rondo_status_t st = rondo_allreduce_algo(rondo_world(), &x, &y, 1, RONDO_FLOAT32,
                                             RONDO_SUM, (rondo_algo_t)a);
    printf(" %s%s", rondo_algo_name((rondo_algo_t)a),
           st == RONDO_SUCCESS ? "" : st == RONDO_ERR_UNSUPPORTED ? " (unavailable here)"
                                                                   : " (failed)");
  }
  printf(" (nccl: the backend is not in this version)\n");
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

static void print_selection(rondo_comm_t comm)
{
  printf("\nselection for float32 sum (rondo-info --explain BYTES for the candidates)\n");
  printf("  %12s  %-20s %s\n", "bytes", "algorithm", "because");
  char buf[4096];
  for (size_t bytes = 4; bytes <= (64u << 20); bytes *= 4) {
    rondo_algo_t algo;
    if (rondo_allreduce_choice(comm, bytes / 4, RONDO_FLOAT32, RONDO_SUM, &algo) !=
        RONDO_SUCCESS) {
      printf("  %12zu  %s\n", bytes, rondo_last_error());
      continue;
    }
    const char *why = "";
    if (rondo_explain(comm, bytes / 4, RONDO_FLOAT32, RONDO_SUM, buf, sizeof buf) ==
        RONDO_SUCCESS) {
      char *line = strstr(buf, "choice: ");
      char *paren = line ? strchr(line, '(') : NULL;
      if (paren != NULL) {
        paren[strcspn(paren, "\n")] = '\0';
        why = paren;
      }
    }
    printf("  %12zu  %-20s %s\n", bytes, rondo_algo_name(algo), why);
  }
}

int main(int argc, char **argv)
{
  const char *explain = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--explain") == 0 && i + 1 < argc) {
      explain = argv[++i];
    } else {
      fprintf(stderr, "usage: rondo-info [--explain BYTES]\n");
      return 2;
    }
  }
  if (rondo_init(&argc, &argv) != RONDO_SUCCESS) {
    fprintf(stderr, "rondo-info: %s\n", rondo_last_error());
    return 1;
  }
  rondo_comm_t comm = rondo_world();
  int rank = rondo_comm_rank(comm);
  char buf[4096];
  int rc = 0;
  if (explain != NULL) {
    size_t bytes = parse_size(explain);
    if (rondo_explain(comm, bytes / 4, RONDO_FLOAT32, RONDO_SUM, buf, sizeof buf) !=
        RONDO_SUCCESS) {
      fprintf(stderr, "rondo-info: %s\n", rondo_last_error());
      rc = 1;
    } else if (rank == 0) {
      printf("%s", buf);
    }
  } else {
    /* print_build runs one collective per algorithm: every rank joins. */
    if (rank != 0) {
      FILE *devnull = freopen("/dev/null", "w", stdout);
      (void)devnull;
    }
    print_build();
    if (rondo_comm_topology(comm, buf, sizeof buf) == RONDO_SUCCESS)
      printf("\ntopology (rank 0)\n  %s\n", buf);
    print_knobs();
    print_selection(comm);
  }
  rondo_finalize();
  return rc;
}
