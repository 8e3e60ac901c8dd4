/*
 * Node-shared MPI windows whose segments rondo aligns itself. Internal
 * (prefix shwin_).
 *
 * MPI promises nothing about where the segments of MPI_Win_allocate_shared
 * start: Open MPI 4.1 hands out 8-byte aligned ones, MPICH page-aligned
 * ones. rondo's flags each need a cache line of their own and the argument
 * board publishes with one aligned 16-byte store, so every segment rondo
 * uses is aligned by construction: each rank allocates SHWIN_ALIGN bytes
 * more than it needs and every process uses the first SHWIN_ALIGN-aligned
 * address of each segment. The creation checks that every process sees
 * each segment at the same offset modulo SHWIN_ALIGN (so all of them round
 * to the same bytes); MPI maps shared memory page by page, so it always
 * does, and a library that did not would fail the creation on every rank
 * instead of corrupting data.
 */
#ifndef RONDO_SHARED_WINDOW_H
#define RONDO_SHARED_WINDOW_H

#include <stddef.h>

#include "base/base.h"

/* Every segment's start is a multiple of this (a cache line). */
#define SHWIN_ALIGN 64

typedef struct {
  MPI_Win win;
  int size, rank; /* the node comm's */
  char **seg;     /* [size]: each rank's aligned segment, in this process */
} shwin_t;

/* Collective over node: a window with `bytes` per rank, each segment
 * SHWIN_ALIGN-aligned in every process, this rank's first `zero` bytes
 * zeroed before any rank returns. `local` is this rank's own readiness
 * (e.g. memory for its bookkeeping): the creation agrees on it, so on any
 * rank's failure every rank returns an error (its own, or RONDO_ERR_PEER
 * "another rank could not get <what>") and no window. */
rondo_status_t shwin_create(MPI_Comm node, size_t bytes, size_t zero, rondo_status_t local,
                            const char *what, shwin_t *w);

/* Frees the window (collective over the node when mpi_usable) and the
 * segment list. */
void shwin_free(shwin_t *w, int mpi_usable);

#endif /* RONDO_SHARED_WINDOW_H */
