/*
 * Node-shared windows with aligned segments (shared_window.h). One
 * MPI_Allreduce at creation carries both the readiness of every rank and
 * the alignment check: each process hashes the offsets modulo SHWIN_ALIGN
 * at which it sees the segments, and the maximum and minimum of the hash
 * agree only when every process saw the same offsets.
 */
#include "algo/common/shared_window.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char *align_up(char *p)
{
  uintptr_t a = ((uintptr_t)p + SHWIN_ALIGN - 1) & ~(uintptr_t)(SHWIN_ALIGN - 1);
  return p + (a - (uintptr_t)p);
}

rondo_status_t shwin_create(MPI_Comm node, size_t bytes, size_t zero, rondo_status_t local,
                            const char *what, shwin_t *w)
{
  rondo_status_t st = RONDO_SUCCESS;
  memset(w, 0, sizeof *w);
  w->win = MPI_WIN_NULL;
  MPI_CHECK(MPI_Comm_size(node, &w->size));
  MPI_CHECK(MPI_Comm_rank(node, &w->rank));
  w->seg = calloc((size_t)w->size, sizeof *w->seg);
  if (w->seg == NULL && local == RONDO_SUCCESS)
    local = rondo__fail(RONDO_ERR_NO_MEMORY, "%s: %d segment addresses", what, w->size);

  /* Each rank's segment on its own pages where the library can: no false
   * sharing between ranks, and each rank's memory near its core. */
  MPI_Info info = MPI_INFO_NULL;
  char *raw = NULL;
  MPI_CHECK_GOTO(MPI_Info_create(&info), st, fail_info);
  MPI_CHECK_GOTO(MPI_Info_set(info, "alloc_shared_noncontig", "true"), st, fail_info);
  MPI_CHECK_GOTO(MPI_Win_allocate_shared((MPI_Aint)(bytes + SHWIN_ALIGN), 1, info, node, &raw,
                                         &w->win),
                 st, fail_info);
  MPI_CHECK_LOG(MPI_Info_free(&info));

  /* From here on every rank reaches the agreement, whatever fails. */
  int rc = MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
  if (rc != MPI_SUCCESS && local == RONDO_SUCCESS)
    local = rondo__fail(RONDO_ERR_MPI, "%s: MPI_Win_set_errhandler failed", what);
  uint64_t hash = 0x9e3779b97f4a7c15ull;
#ifdef RONDO_SMPI
  /* SimGrid 3.32's MPI_Win_shared_query answers rank 0's segment for every
   * rank. Its simulated ranks share one address space, so the base
   * pointers that each rank got, gathered, are the answer (w->seg is not
   * NULL here: SimGrid's malloc ends the simulation when it fails). */
  MPI_CHECK_GOTO(MPI_Allgather(&raw, sizeof raw, MPI_BYTE, w->seg, sizeof raw, MPI_BYTE, node),
                 st, fail);
  for (int q = 0; q < w->size; q++) {
    char *p = w->seg[q];
#else
  for (int q = 0; w->seg != NULL && q < w->size; q++) {
    MPI_Aint qbytes;
    int disp;
    char *p = NULL;
    if (MPI_Win_shared_query(w->win, q, &qbytes, &disp, &p) != MPI_SUCCESS || p == NULL) {
      if (local == RONDO_SUCCESS)
        local = rondo__fail(RONDO_ERR_MPI, "%s: MPI_Win_shared_query of rank %d failed", what, q);
      break;
    }
#endif
    w->seg[q] = align_up(p);
    hash = (hash ^ ((uintptr_t)p & (SHWIN_ALIGN - 1))) * 0xbf58476d1ce4e5b9ull;
    hash ^= hash >> 31;
  }
  if (local == RONDO_SUCCESS)
    memset(w->seg[w->rank], 0, zero);

  /* {failed, hash, ~hash} under MAX: any failure, and max(hash) ==
   * min(hash) when every process saw the same offsets. */
  uint64_t mine[3] = {local != RONDO_SUCCESS, hash, ~hash}, all[3];
  MPI_CHECK_GOTO(MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_MAX, node), st, fail);
  if (local != RONDO_SUCCESS) {
    st = local;
    goto fail;
  }
  if (all[0] != 0) {
    st = rondo__fail(RONDO_ERR_PEER, "another rank could not get %s", what);
    goto fail;
  }
  if (all[1] != ~all[2]) {
    st = rondo__fail(RONDO_ERR_MPI,
                     "%s: the processes of this node see the shared segments at different "
                     "offsets modulo %d; rondo cannot align them",
                     what, SHWIN_ALIGN);
    goto fail;
  }
  return RONDO_SUCCESS;

fail:
  MPI_CHECK_LOG(MPI_Win_free(&w->win));
  goto fail_segments;
fail_info:
  if (info != MPI_INFO_NULL)
    MPI_CHECK_LOG(MPI_Info_free(&info));
fail_segments:
  free(w->seg);
  w->seg = NULL;
  return st;
}

void shwin_free(shwin_t *w, int mpi_usable)
{
  if (mpi_usable && w->win != MPI_WIN_NULL)
    MPI_CHECK_LOG(MPI_Win_free(&w->win));
  free(w->seg);
  w->seg = NULL;
  w->win = MPI_WIN_NULL;
}
