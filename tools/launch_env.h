/*
 * How the tools (rondo-train, rondo-bench, rondo-info) start under a
 * launcher. Every rank reads its own command line, without printing, then
 * starts rondo, and the ranks agree on what they read: a flag that is bad on
 * one rank only (an MPMD launch, "-n 1 rondo-train --bogus : -n 1
 * rondo-train") stops every rank with a message, instead of one rank
 * exiting while the others wait for it forever. The lowest rank that failed
 * then prints its own message; in the usual case, where every rank has the
 * same bad flag, that is one message, not one per rank.
 */
#ifndef RONDO_TOOLS_LAUNCH_ENV_H
#define RONDO_TOOLS_LAUNCH_ENV_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rondo.h"

/* Writes head, the formatted message and tail to stderr in one write(): the
 * ranks share the launcher's stderr, and a message written piece by piece
 * interleaves with another rank's. */
static inline void tool_vsay(const char *head, const char *tail, const char *fmt, va_list ap)
{
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", head);
  size_t n = strlen(buf);
  vsnprintf(buf + n, sizeof buf - n, fmt, ap);
  n = strlen(buf);
  snprintf(buf + n, sizeof buf - n, "%s", tail);
  if (write(STDERR_FILENO, buf, strlen(buf)) < 0)
    return; /* nowhere left to say it */
}

/* rondo_init, or 1 after a message. A start that failed after MPI came up
 * still finalizes: a process that exits with MPI up makes the launcher
 * report a BAD TERMINATION on top of the real message. */
static inline int tool_init(const char *tool, int *argc, char ***argv)
{
  if (rondo_init(argc, argv) == RONDO_SUCCESS)
    return 0;
  fprintf(stderr, "%s: %s\n", tool, rondo_last_error());
  int up = 0, down = 0;
  if (MPI_Initialized(&up) == MPI_SUCCESS && up && MPI_Finalized(&down) == MPI_SUCCESS && !down)
    rondo_finalize(); /* MPI started before the failure */
  return 1;
}

/* A checksum (FNV-1a) of the arguments after the program's name, for the
 * tools whose ranks must all run the very same command. */
static inline uint32_t tool_args_key(int argc, char **argv)
{
  uint32_t h = 2166136261u;
  for (int i = 1; i < argc; i++)
    for (const char *p = argv[i];; p++) {
      h = (h ^ (unsigned char)*p) * 16777619u;
      if (*p == '\0')
        break;
    }
  return h;
}

/* After tool_init, on every rank of MPI_COMM_WORLD. status: how reading this
 * rank's command line ended, 0 or the exit status it failed with (its
 * message not printed yet). key: what must be the same on every rank
 * (tool_args_key, a mode, or 0). Returns 0 when every rank may go on;
 * otherwise the exit status for every rank, with *print set on the one rank
 * that must now print its own message (the lowest that failed). The ranks
 * that did not fail say which rank did. */
static inline int tool_agree(const char *tool, int status, uint32_t key, int *print)
{
  int rank = 0, size = 1;
  unsigned key0 = key;
  int v[3];
  *print = 0;
  if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS ||
      MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS ||
      MPI_Bcast(&key0, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    goto mpi_failed;
  /* The worst status, and size minus the lowest rank that failed or whose
   * key differs from rank 0's (MPI_MAX finds both). */
  v[0] = status;
  v[1] = status != 0 ? size - rank : 0;
  v[2] = key != key0 ? size - rank : 0;
  if (MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    goto mpi_failed;
  if (v[0] != 0) {
    if (rank == size - v[1])
      *print = 1;
    else if (status == 0)
      fprintf(stderr, "%s: rank %d: stopping: rank %d could not read its command line\n", tool,
              rank, size - v[1]);
    return v[0];
  }
  if (v[2] != 0) {
    fprintf(stderr,
            "%s: rank %d: stopping: rank %d's command line differs from rank 0's (every rank "
            "must be given the same command)\n",
            tool, rank, size - v[2]);
    return 2;
  }
  return 0;
mpi_failed:
  fprintf(stderr, "%s: rank %d: MPI failed while the ranks compared their command lines\n", tool,
          rank);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

#endif
