/*
 * Whether a person sees what a rank writes to one of its standard streams:
 * the tools draw progress bars only then. Header-only, shared by rondo-train
 * and rondo-bench.
 *
 * A rank's stream is rarely its own terminal: the launcher carries it.
 * MPICH's Hydra hands each rank a pipe (rank -> hydra_pmi_proxy ->
 * mpiexec), so the terminal, if any, is what a parent process has on the
 * same descriptor. Open MPI hands each rank's stdout a pseudo-terminal of
 * its own whatever mpiexec's output is (a file, a pipe): under Open MPI the
 * rank's own isatty() says nothing, and mpiexec's descriptor decides.
 */
#ifndef RONDO_TOOLS_TERMINAL_H
#define RONDO_TOOLS_TERMINAL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The parent of pid, from /proc (0 if unknown). */
static inline long term_parent_of(long pid)
{
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* "pid (comm) state ppid ...": comm may hold spaces, so start after ')' */
  char *p = strrchr(buf, ')');
  long ppid = 0;
  if (p == NULL || sscanf(p + 1, " %*c %ld", &ppid) != 1)
    return 0;
  return ppid;
}

/* Whether process pid's descriptor fd is a terminal. */
static inline int term_fd_of_is_terminal(long pid, int fd)
{
  char path[64], target[256];
  snprintf(path, sizeof path, "/proc/%ld/fd/%d", pid, fd);
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n <= 0)
    return 0;
  target[n] = '\0';
  return strncmp(target, "/dev/pts/", 9) == 0 || strncmp(target, "/dev/tty", 8) == 0;
}

/* Whether a terminal shows what this process writes to fd (1 or 2). */
static inline int term_shows(int fd)
{
  int open_mpi = getenv("OMPI_COMM_WORLD_SIZE") != NULL; /* its own pty (above) */
  if (!open_mpi && isatty(fd))
    return 1;
  /* rank -> hydra_pmi_proxy -> mpiexec (two hops with MPICH, one with
   * others); three is enough and stops before a login shell's parent. */
  long pid = (long)getppid();
  for (int hop = 0; hop < 3 && pid > 1; hop++, pid = term_parent_of(pid))
    if (term_fd_of_is_terminal(pid, fd))
      return 1;
  return 0;
}

#endif /* RONDO_TOOLS_TERMINAL_H */
