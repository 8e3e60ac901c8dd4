/*
 * Memory that rondo_mem_alloc hands out: each allocation is a node-shared
 * window (shared_window.h) over the comm's node, so every rank of a node
 * has every peer's part mapped, and shm's reduce-scatter and all-gather
 * read a peer's input in place instead of through its slots (shm.c: one
 * copy where the slots take two). Internal (prefix shalloc_).
 *
 * A comm's allocations form a table of slots; an allocation's index is the
 * slot it took, the lowest free one. Allocating and freeing are collective
 * and agreed over the comm, so one index names the same allocation on
 * every rank; that index is what the argument check compares
 * (SHALLOC_SIG_FIELD).
 */
#ifndef RONDO_SHARED_ALLOC_H
#define RONDO_SHARED_ALLOC_H

#include <stddef.h>

#include "algo/agree/agree.h"

/* The signature field of a reduce-scatter or all-gather that would read
 * its peers' inputs in place: the index of the allocation every rank's
 * input lies in, or -1. */
#define SHALLOC_SIG_FIELD "input in rondo_mem_alloc memory (allocation, or -1)"

/* A call of fewer bytes (every block) runs through shm's slots even where
 * its input lies in rondo_mem_alloc memory: its copy in costs less than
 * the wait for every peer's done flag before returning. Measured at 2
 * ranks (docs/PERFORMANCE.md), reading in place took 1.1-1.3x the time
 * through the slots at 64-256 B, the same at 1 KiB, 0.6-0.75x at 4 KiB. */
#define SHALLOC_MIN_BYTES 2048

/* Collective over comm (agreed, with local: this rank's own checks):
 * bytes (may differ across ranks) of this rank's part of a new allocation;
 * *ptr its start, SHWIN_ALIGN-aligned. */
rondo_status_t shalloc_create(rondo_comm_t comm, rondo_status_t local, size_t bytes,
                              void **ptr);
/* Collective over comm (agreed: every rank frees the same allocation):
 * frees the allocation that starts at ptr; NULL on every rank does
 * nothing. */
rondo_status_t shalloc_destroy(rondo_comm_t comm, void *ptr);
/* Frees every allocation left (rondo_comm_destroy); collective over the
 * node when mpi_usable. */
void shalloc_destroy_all(rondo_comm_t comm, int mpi_usable);
/* The index of the allocation of comm whose part on this rank holds
 * [p, p + bytes), and p's offset in it; -1 when none does or bytes is 0. */
int shalloc_find(rondo_comm_t comm, const void *p, size_t bytes, size_t *offset);
/* For a call that would read in place (one node, the shm member, total
 * bytes in every block at least SHALLOC_MIN_BYTES: the same on every rank
 * of a valid call), adds SHALLOC_SIG_FIELD to sig: the allocation holding
 * [sendbuf, sendbuf + bytes), or -1; where it differs across ranks the
 * call fails with RONDO_ERR_MISMATCH. Other calls get no field. */
void shalloc_sig_add(rondo_comm_t comm, agree_sig_t *sig, rondo_algo_t algo,
                     const void *sendbuf, size_t bytes, size_t total);
/* Local rank q's part of allocation index, at offset, in this process. */
const char *shalloc_peer(rondo_comm_t comm, int index, int q, size_t offset);

#endif /* RONDO_SHARED_ALLOC_H */
