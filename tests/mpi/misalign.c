/*
 * Linked into a test program (test_allreduce_misaligned): hands librondo
 * shared-memory segments that start 8 bytes past a cache line, as Open MPI
 * 4.1's do, whatever the MPI underneath. MPI_Win_allocate_shared and
 * MPI_Win_shared_query are defined here and call PMPI_*: the program's
 * definitions win over the MPI library's for librondo's calls. Each window
 * gets MISALIGN bytes more, and every segment address is moved MISALIGN
 * bytes on, in every process alike.
 *
 * A check that cannot fail is no check: at exit, a run whose .mpi file
 * says MISALIGN_EXPECT=1 (more than one rank on a node) and in which no
 * window was misaligned fails.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MISALIGN 8

static int windows; /* windows handed out misaligned */

/* base moved to the next address that is MISALIGN past a cache line: the
 * same bytes in every process (MPI maps shared memory page by page). */
static char *misalign(char *base)
{
  return base + ((MISALIGN - ((uintptr_t)base & 63)) & 63);
}

/* (visible: the build hides symbols by default) */
#define MISALIGN_EXPORT __attribute__((visibility("default")))

MISALIGN_EXPORT int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win)
{
  char *base = NULL;
  int rc = PMPI_Win_allocate_shared(size + 64, disp_unit, info, comm, &base, win);
  if (rc != MPI_SUCCESS)
    return rc;
  *(char **)baseptr = misalign(base);
  windows++;
  return rc;
}

MISALIGN_EXPORT int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
  char *base = NULL;
  int rc = PMPI_Win_shared_query(win, rank, size, disp_unit, &base);
  if (rc != MPI_SUCCESS)
    return rc;
  if (base != NULL) {
    base = misalign(base);
    *size = *size >= 64 ? *size - 64 : 0;
  }
  *(char **)baseptr = base;
  return rc;
}

__attribute__((destructor)) static void misalign_check(void)
{
  const char *expect = getenv("MISALIGN_EXPECT");
  if (expect != NULL && expect[0] == '1' && windows == 0) {
    fprintf(stderr, "misalign: no shared window was allocated: the test checked nothing\n");
    _exit(1);
  }
}
